package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/attn-go/attn/bench"
	"github.com/attn-go/attn/kernels"
)

const benchSynopsis = "attn bench [-n 256,512,...] [-batch B] [-heads H] [-kvheads HKV] [-d D] [-causal] [-strategy fused,staged] [-backend auto|cpu|gpu] [-budget 1s] [-min-runs 3]"

const benchHelp = `Sweeps attention over sequence lengths N (Nq = Nk = N) and strategies on
one backend and prints a table: runs, median, min and max time, GFLOP/s.
Each point gets one warm-up run, then timed runs until the budget is spent
(at least -min-runs). Only the device work is timed; inputs are uploaded
once. GFLOP/s counts (2·D + 2·Dv) per attended query-key pair, so causal
sweeps count only the pairs a query sees. A point that cannot run (too
large, out of memory) is reported as such, not dropped.

The defaults finish in about a minute on the CPU backend of a 2-core
machine.
`

func runBench(c *cmdEnv, args []string) error {
	cfg := bench.DefaultConfig()
	backendName := "auto"
	fs := flag.NewFlagSet("attn bench", flag.ContinueOnError)
	fs.Func("n", "comma-separated sequence `lengths` (default 256,512,1024,2048,4096)", func(s string) error {
		ns, err := parseInts(s)
		cfg.Ns = ns
		return err
	})
	fs.IntVar(&cfg.B, "batch", cfg.B, "batch size `B`")
	fs.IntVar(&cfg.H, "heads", cfg.H, "query heads `H`")
	fs.IntVar(&cfg.KVHeads, "kvheads", 0, "key/value heads `HKV` (0 means H)")
	fs.IntVar(&cfg.D, "d", cfg.D, "head dim `D`")
	fs.BoolVar(&cfg.Causal, "causal", false, "causal masking")
	fs.Func("strategy", "comma-separated `strategies`: fused, staged (default fused,staged)", func(s string) error {
		cfg.Strategies = nil
		for _, part := range strings.Split(s, ",") {
			st, err := kernels.ParseStrategy(part)
			if err != nil {
				return err
			}
			if st == kernels.Auto {
				return fmt.Errorf("name fused or staged, not auto")
			}
			cfg.Strategies = append(cfg.Strategies, st)
		}
		return nil
	})
	fs.StringVar(&backendName, "backend", backendName, "`name` of the backend: auto, cpu or gpu")
	fs.DurationVar(&cfg.Budget, "budget", cfg.Budget, "time to spend measuring each point")
	fs.IntVar(&cfg.MinRuns, "min-runs", cfg.MinRuns, "timed runs per point at least")
	fs.Func("seed", "random `seed` for the inputs", func(s string) error {
		v, err := strconv.ParseUint(s, 10, 64)
		cfg.Seed = v
		return err
	})
	if err := c.parseFlags(fs, benchSynopsis, benchHelp, args); err != nil {
		return err
	}
	if err := checkBackendName(backendName); err != nil {
		return err
	}
	switch {
	case cfg.B < 1 || cfg.H < 1 || cfg.D < 1:
		return usagef("-batch, -heads and -d must be at least 1 (got %d, %d, %d)", cfg.B, cfg.H, cfg.D)
	case cfg.KVHeads < 0 || (cfg.KVHeads > 0 && cfg.H%cfg.KVHeads != 0):
		return usagef("-kvheads %d must divide -heads %d", cfg.KVHeads, cfg.H)
	case cfg.MinRuns < 1:
		return usagef("-min-runs must be at least 1")
	}
	be, err := c.openBackend(backendName)
	if err != nil {
		return err
	}
	defer be.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	total := len(cfg.Ns) * len(cfg.Strategies)
	done := 0
	start := time.Now()
	points, err := bench.Run(ctx, be, cfg, func(pt bench.Point) {
		done++
		status := fmt.Sprintf("%.2f GFLOP/s", pt.GFLOPS)
		if pt.Err != nil {
			status = "failed: " + oneLine(pt.Err.Error())
		}
		fmt.Fprintf(c.stderr, "[%d/%d %s] %s N=%d %s\n", done, total, time.Since(start).Round(time.Second), pt.Strategy, pt.Problem.Nq, status)
	})
	if werr := bench.WriteTable(c.stdout, points); werr != nil && err == nil {
		err = werr
	}
	return err
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", part)
		}
		out = append(out, v)
	}
	return out, nil
}
