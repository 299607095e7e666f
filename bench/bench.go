package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// Config is a sweep: every N in Ns times every strategy, on one backend.
type Config struct {
	Ns         []int
	B, H       int
	KVHeads    int // 0 means H
	D          int
	Causal     bool
	Strategies []kernels.Strategy // Staged and/or Fused
	// Budget is the time spent measuring one point after its warm-up run;
	// at least MinRuns runs are timed whatever the budget.
	Budget  time.Duration
	MinRuns int
	Seed    uint64
}

// DefaultConfig is the sweep `attn bench` runs without flags: sized to
// finish in about a minute on the CPU backend of a 2-core machine.
func DefaultConfig() Config {
	return Config{
		Ns: []int{256, 512, 1024, 2048, 4096}, B: 1, H: 8, D: 64,
		Strategies: []kernels.Strategy{kernels.Fused, kernels.Staged},
		Budget:     time.Second, MinRuns: 3, Seed: 1,
	}
}

// Point is one measured configuration. Err is set, and the timings zero,
// for a point that could not run (ErrTooLarge, out of memory); such points
// are reported, not dropped.
type Point struct {
	Backend  string
	Strategy kernels.Strategy
	Problem  backend.Problem
	Runs     int
	Median   time.Duration
	Min, Max time.Duration
	// GFLOPS is Flops(Problem)/Median.
	GFLOPS float64
	Err    error
}

// Flops counts the multiply-adds of attention as 2 flops each:
// 2·D per attended (query, key) pair for Q·Kᵀ and 2·Dv for P·V. Only
// pairs a query may see are counted, so a causal problem with Nq = Nk
// counts about half of 4·B·H·N²·D — the convention FlashAttention uses.
func Flops(p backend.Problem) float64 {
	pairs := 0.0
	for i := 0; i < p.Nq; i++ {
		pairs += float64(p.KeyLimit(i))
	}
	return pairs * float64(p.B*p.H) * 2 * float64(p.D+p.Dv)
}

// Run measures every point of cfg on be, calling report (if not nil) as
// each finishes, and returns them all.
func Run(ctx context.Context, be backend.Backend, cfg Config, report func(Point)) ([]Point, error) {
	if cfg.B < 1 || cfg.H < 1 || cfg.D < 1 || len(cfg.Ns) == 0 || len(cfg.Strategies) == 0 {
		return nil, fmt.Errorf("bench: empty sweep: B=%d H=%d D=%d, %d sizes, %d strategies", cfg.B, cfg.H, cfg.D, len(cfg.Ns), len(cfg.Strategies))
	}
	kvh := cfg.KVHeads
	if kvh == 0 {
		kvh = cfg.H
	}
	var points []Point
	for _, n := range cfg.Ns {
		for _, s := range cfg.Strategies {
			p := backend.Problem{B: cfg.B, H: cfg.H, KVHeads: kvh, Nq: n, Nk: n, D: cfg.D, Dv: cfg.D, Scale: float32(1 / math.Sqrt(float64(cfg.D))), Causal: cfg.Causal}
			pt := measure(ctx, be, p, s, cfg)
			if ctx.Err() != nil {
				return points, ctx.Err()
			}
			points = append(points, pt)
			if report != nil {
				report(pt)
			}
		}
	}
	return points, nil
}

func measure(ctx context.Context, be backend.Backend, p backend.Problem, s kernels.Strategy, cfg Config) Point {
	pt := Point{Backend: be.Name(), Strategy: s, Problem: p}
	if err := p.Validate(); err != nil {
		pt.Err = err
		return pt
	}
	op, release, err := prepare(be, p, s, cfg.Seed)
	if err != nil {
		pt.Err = err
		return pt
	}
	defer release()
	if err := op(ctx); err != nil { // warm-up
		pt.Err = err
		return pt
	}
	var times []time.Duration
	start := time.Now()
	for len(times) < max(cfg.MinRuns, 1) || time.Since(start) < cfg.Budget {
		t0 := time.Now()
		if err := op(ctx); err != nil {
			pt.Err = err
			return pt
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	pt.Runs = len(times)
	pt.Min, pt.Max = times[0], times[len(times)-1]
	pt.Median = times[len(times)/2]
	if len(times)%2 == 0 {
		pt.Median = (times[len(times)/2-1] + times[len(times)/2]) / 2
	}
	pt.GFLOPS = Flops(p) / pt.Median.Seconds() / 1e9
	return pt
}

// prepare uploads random inputs once and returns the op to time: the
// device work only, with Sync, not the transfers.
func prepare(be backend.Backend, p backend.Problem, s kernels.Strategy, seed uint64) (op func(context.Context) error, release func(), err error) {
	var bufs []backend.Buffer
	release = func() {
		for _, b := range bufs {
			b.Release()
		}
	}
	rng := rand.New(rand.NewPCG(seed, uint64(p.Nq)))
	upload := func(n int, random bool) backend.Buffer {
		if err != nil {
			return nil
		}
		var b backend.Buffer
		if b, err = be.Alloc(n); err != nil {
			return nil
		}
		bufs = append(bufs, b)
		if random {
			data := make([]float32, n)
			for i := range data {
				data[i] = float32(rng.Float64()*2 - 1)
			}
			err = be.Write(b, 0, data)
		}
		return b
	}
	q := upload(p.QLen(), true)
	k := upload(p.KLen(), true)
	v := upload(p.VLen(), true)
	o := upload(p.OLen(), false)
	var sc backend.Buffer
	if s == kernels.Staged {
		sc = upload(p.ScoresLen(), false)
	}
	if err != nil {
		release()
		return nil, nil, err
	}
	if s == kernels.Staged {
		op = func(ctx context.Context) error {
			if err := be.Scores(ctx, backend.ScoresParams{Problem: p}, q, k, sc); err != nil {
				return err
			}
			if err := be.Softmax(ctx, backend.SoftmaxParams{Problem: p}, sc); err != nil {
				return err
			}
			if err := be.Context(ctx, backend.ContextParams{Problem: p}, sc, v, o); err != nil {
				return err
			}
			return be.Sync()
		}
	} else {
		op = func(ctx context.Context) error {
			if err := be.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, nil); err != nil {
				return err
			}
			return be.Sync()
		}
	}
	return op, release, nil
}

// WriteTable prints points as an aligned table, one row per point, with
// the FLOP convention stated under it.
func WriteTable(w io.Writer, points []Point) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backend\tstrategy\tB\tH\tKVH\tN\tD\tcausal\truns\tmedian\tmin\tmax\tGFLOP/s\t")
	for _, pt := range points {
		p := pt.Problem
		row := fmt.Sprintf("%s\t%s\t%d\t%d\t%d\t%d\t%d\t%v\t", pt.Backend, pt.Strategy, p.B, p.H, p.KVHeads, p.Nq, p.D, p.Causal)
		if pt.Err != nil {
			fmt.Fprintf(tw, "%s-\t-\t-\t-\t%s\t\n", row, shortErr(pt.Err))
			continue
		}
		fmt.Fprintf(tw, "%s%d\t%s\t%s\t%s\t%.2f\t\n", row, pt.Runs, round(pt.Median), round(pt.Min), round(pt.Max), pt.GFLOPS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "GFLOP/s = (2·D + 2·Dv) per attended query-key pair / median time; causal counts only attended pairs.")
	return err
}

func round(d time.Duration) time.Duration {
	switch {
	case d > 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d > time.Second:
		return d.Round(10 * time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(100 * time.Nanosecond)
}

func shortErr(err error) string {
	switch {
	case errors.Is(err, backend.ErrTooLarge):
		return "too large"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
