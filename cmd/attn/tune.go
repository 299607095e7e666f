package main

import (
	"context"
	"errors"
	"flag"
	"strconv"
	"strings"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu"
)

const tuneSynopsis = "attn tune [-budget 3m] [-set decode,prefill] [-heads H,...] [-kvheads HKV,...] [-d D,...] [-dv DV,...] [-n N,...] [-nq Q,...] [-dtype f32,f16,bf16,q8,fp8,q4]"

const tuneHelp = `Tunes the GPU backend's kernels on this host's adapter (the one the gpu
backend opens; $ATTN_ADAPTER picks one by name) and writes the sizes
that won to a tuning file, keyed by the adapter, driver, binding and
kernels (not attn's version), which every later gpu backend with that
key reads, in attn's commands or in a program that requires attn
(gpu.Tune does the same from Go).

It sweeps the hardware plan's knobs (ATTN_GPU_TUNE's: docs/gpu.md) at
the shapes named: -set's default sets (decode: one query over 4096 and
32768 keys, 32 query heads over 8 KV heads of 128, f32, f16 and q8;
prefill: 4096 queries and keys, 8 heads of 64 and of 128, f32 and f16),
or every combination of the shape flags, those left out at heads 32,
kvheads as heads, d 128, dv as d, n 4096, nq 1, dtype f32 (-set too adds
its sets); q8 and q4 take any head dim, their rows in whole blocks of 32
as a cache stores them. The shapes fall into classes by the kernel the
defaults run them with and their sizes; each class's knobs are swept one
at a time from the defaults, over the powers of two within a factor of
four of each value. Every candidate's output at every shape of its class
is checked against the CPU backend's first: a wrong or failing candidate
is dropped and reported, never chosen. Candidates are timed in
interleaved rounds, by the device's timestamps where it has them, else
by the host's clock; a winner is written only where a last race finds it
2% faster than the defaults over its class and no more than 2% slower at
any shape.

It prints its progress and, for each class, the winner against the
defaults or why the defaults stay. It stops within -budget, writing what
it confirmed by then. The file is $ATTN_GPU_TUNE_FILE, or under the
user's cache directory a file named for its key; attn devices then lists
the settings it applies, and any the device cannot run, refused with
why. Only the hardware plan has knobs: on a CPU-type adapter (lavapipe)
run it under ATTN_GPU_PLAN=hardware. Exit status 2 for a bad flag or
shape, 1 when it cannot tune (no adapter, the CPU plan, ATTN_GPU_TUNE
set, the file off).
`

func runTune(c *cmdEnv, args []string) error {
	fs := flag.NewFlagSet("attn tune", flag.ContinueOnError)
	budget := fs.Duration("budget", 3*time.Minute, "stop within this `duration`, writing what was confirmed by then")
	sets := fs.String("set", "decode,prefill", "the default shape `sets` tuned when no shape flag is given: decode, prefill or both")
	lists := map[string]*string{}
	for _, f := range []struct{ name, usage string }{
		{"heads", "comma-separated query heads `H`"},
		{"kvheads", "comma-separated key/value heads `HKV` (default: as heads)"},
		{"d", "comma-separated head dims `D` of Q and K"},
		{"dv", "comma-separated head dims `DV` of V (default: as d)"},
		{"n", "comma-separated key counts `N`"},
		{"nq", "comma-separated query counts `Q` (1: decoding)"},
		{"dtype", "comma-separated storage `dtypes` of Q, K and V (f32, f16, bf16), or of K and V (q8, fp8, q4; Q float32)"},
	} {
		lists[f.name] = fs.String(f.name, "", f.usage)
	}
	if err := c.parseFlags(fs, tuneSynopsis, tuneHelp, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	specs, err := tuneSpecs(lists, set)
	if err != nil {
		return err
	}
	if set["set"] || len(specs) == 0 {
		for _, s := range strings.Split(*sets, ",") {
			switch s = strings.TrimSpace(s); s {
			case "decode", "prefill":
				specs = append(specs, s)
			default:
				return usagef("-set %q: want decode, prefill or decode,prefill", *sets)
			}
		}
	}
	if *budget <= 0 {
		return usagef("-budget %v: want a positive duration", *budget)
	}
	err = interruptible(func(ctx context.Context) error {
		_, err := gpu.Tune(ctx, *budget, c.stdout, specs...)
		return err
	})
	if errors.Is(err, backend.ErrShape) && !errors.Is(err, context.Canceled) {
		return usagef("%s", oneLine(err.Error()))
	}
	return err
}

// tuneSpecs is every combination of the shape lists given (set names
// the flags given), as gpu.Tune's name=value specs; none when no list
// was given.
func tuneSpecs(lists map[string]*string, set map[string]bool) ([]string, error) {
	specs := []string{""}
	for _, name := range []string{"heads", "kvheads", "d", "dv", "n", "nq", "dtype"} {
		if !set[name] {
			continue
		}
		var vals []string
		for _, v := range strings.Split(*lists[name], ",") {
			v = strings.TrimSpace(v)
			if name == "dtype" {
				if _, err := backend.ParseDType(v); err != nil {
					return nil, usagef("-dtype %q: want f32, f16, bf16, q8, fp8 or q4", v)
				}
			} else if x, err := strconv.Atoi(v); err != nil || x < 1 {
				return nil, usagef("-%s %q: want positive integers", name, *lists[name])
			}
			vals = append(vals, v)
		}
		var next []string
		for _, s := range specs {
			for _, v := range vals {
				next = append(next, strings.TrimPrefix(s+","+name+"="+v, ","))
			}
		}
		specs = next
	}
	if len(specs) == 1 && specs[0] == "" {
		return nil, nil
	}
	return specs, nil
}
