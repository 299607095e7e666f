package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/kernels"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

const benchSynopsis = "attn bench [-n 256,...,16384] [-nq Q,...] [-batch B,...] [-heads H,...] [-kvheads HKV,...] [-d D,...] [-dv DV | -v-from-k DV] [-topk K] [-block-size S [-block-density F]] [-tree T] [-backward] [-causal[=false,true]] [-window L,R] [-softcap C] [-alibi] [-sinks] [-dtype f32,f16,bf16,q8,fp8,q4] [-strategy fused,staged] [-layers L,...] [-backend auto|cpu|gpu|none,...] [-peers all|NAME,...] [-budget 1s] [-min-runs 2] [-out DIR]"

const benchHelp = `Sweeps attention over sequence lengths N (N keys, and N queries unless
-nq says) and every combination of the other lists, on each backend with each strategy and,
with -peers, on other implementations (ONNX Runtime, llama.cpp's ggml, PyTorch, NumPy) run
on the same inputs, one point after the other.

Each point gets one warm-up run, then timed runs until the budget is spent
(at least -min-runs): median, range (max − min over the median) and IQR
(interquartile range over the median, the charts' error bars). Only the
device work is timed; inputs are uploaded once. GFLOP/s counts
(2·D + 2·Dv) per attended query-key pair, so causal sweeps count only the
pairs a query sees, for attn and peers alike. Also reported: the bytes the
strategy must move, the peak RSS of the process that ran the point, the
device memory attn allocated (GPU), and the largest relative error of
-check-rows sampled output rows against a float64 reference (for a
-backward point, of the gradients of the last batch's last KV group:
whole where that is cheap, else dQ of its last -check-rows rows). A point that
cannot run (too large, out of memory, no adapter) is reported as such.

-nq Q,... measures Q query rows at each N instead of N: the last Q
positions of N (bottom-right causal alignment), so -nq 1 is one decoding
step over a cache of N keys. Every point records its Nq and its tokens/s
(B·Nq over the median time). Before the sweep attn bench measures the
machine's read bandwidth (every thread summing a buffer of 8× the last
cache, at least 512 MiB; the best of 5 passes), records it in
results.json (machine.read_gbps), and gives each point's GB/s as a
fraction of it ("of BW"): what a decoding step, which reads all of K and
V for a few rows, can hope to approach (on the host's memory only: a
discrete GPU's points get no fraction). Peers without a cache of past
keys (all but ort-cpu-gqa, ggml-cpu and ggml-vulkan) report points with
Nq < N unavailable.

It measures the compute ceiling too: the CPU backend's float32 Sgemm on
every thread at once (square products of orders 512, 1024 and 2048, the
fastest of 5 passes at each, about 1.5 s in all: a staged point's long
products outran order 512 alone), recorded as machine.sgemm_gflops. With the read
bandwidth it makes a roofline, min(Sgemm rate, intensity × bandwidth):
every point gets its intensity, its flops over its compulsory bytes,
and each on the host's CPU (the CPU backend, lavapipe, the CPU peers;
not a GPU) its fraction of the roofline and the ceiling that bounds it
("of roof": 86% C for compute, 42% M for memory). The ceiling is
float32's for every dtype, so a bf16 point may pass 100%. Beside it, the
FMA peak: independent chains of the widest vector FMA the CPU has
(AVX-512 zmm, else AVX2 ymm; NEON on arm64) on every thread, the best of
5 passes in about 0.5 s, recorded as machine.fma_gflops; each point on
the host's CPU gets its fraction of it ("of FMA"). A -tags purego build
has no FMA loop and records none. Each ceiling is measured only where a
point is read against it: a sweep whose points all run on a discrete
GPU measures none (it says so), one with a GPU peer only the bandwidth.

Another process only ever slows a probe down, so the ceilings are
probed at least twice before the sweep and once after it (more while a
probe raises one by 5%), each the best of its probes
(machine.ceiling_probes lists them all), and every point is read against
them once the sweep is done. A point above the roofline or the FMA peak
is measured again; one that stays above is flagged ("flag" in the table,
results.json, results.csv and results.md, ringed in red on
roofline.png) with by how much and what may explain it: data in cache,
a kernel faster than Sgemm, half arithmetic, or probe noise.

-layers L,... times each attn point as a model's step instead of one
call: L calls over L separate copies of Q, K, V and O (a layer's
cache each), recorded as one step with one wait on the GPU (gpu.Step)
and synced once on the CPU. Each L is a point of its own carrying
"layers" in results.json, with the step's time and all L calls' bytes
and flops; -layers 1,32 says what a 32-layer step costs beside one.
Peers are measured once a shape.

-tree T measures each shape as speculative decoding: B sequences of N
keys in a KV cache, the last T of them a random draft tree (fixed
seed), verified in one Attend ("tree T"), beside the same T rows as a
causal chunk ("chunk T"); -nq is T, causal; each point's output is
checked against the reference under the tree's mask.

-prefix P measures each shape (with -batch B and -nq 1: B sequences of
N keys, one query each) as two decoding steps over a page pool whose
sequences' first P keys are one prompt: "shared" (the prompt held once
and forked into every sequence, the cascade reading its pages once) and
"own" (the same keys held by every sequence), with the pages the pool
holds and the bytes each must read (P + B·(N − P) keys, or B·N). -dtype
is the cache's; Q and O are float32. No peers or strategies apply.
-prefix P,G -groups n makes the prefixes a tree: the batch in n groups,
each group's sequences sharing G more keys after the prompt (a system
prompt, then each user's history), measured three ways: "tree" (the
pool shares both levels, the cascade reading each shared page once),
"one level" (the prompt shared, each sequence holding its group's keys:
what a cascade of one level reads) and "unshared".

Variants apply to every point: -window L,R (a sliding window around each
query's position, −1 an unbounded side; with -causal, 127,0 is a causal
window of 128 keys), -softcap C (C·tanh(s/C)), -alibi (the standard
slopes of H heads: 2^(−8(h+1)/H) for H a power of two, BLOOM's
interleaving otherwise) and -sinks (one sink logit per head, 0 for each:
exp(0) = 1 joins each row's denominator). GFLOP/s counts only the pairs a
query may see, so a window of W keys counts about 4·B·H·N·W·D. Every
output names the variant of each point. Peers run plain and causal
attention only: with a variant their points are reported unavailable,
not measured without it.

-dtype f32,f16,bf16,q8,fp8,q4 sweeps the storage dtype of Q, K, V and O, each a
curve of its own: inputs are rounded to the dtype, the reference is
computed on the rounded values, and a half output is allowed its own
rounding (2⁻¹¹ relative for f16, 2⁻⁸ for bf16) on top of the usual
error; GB/s counts the stored bytes. A backend that stores no halves,
and every peer but ort-cpu-gqa, ggml-cpu and ggml-vulkan (f16 too),
reports half points unavailable. q8, fp8 and q4 store K and V alone as
a quantized cache does (Q and O float32; ggml's peers take q8 and q4 as
q8_0 and q4_0): MaxErr reads the stored values, and quant_rel_err in
results.json is the error against the inputs before they were rounded.

Every output names the kernel the CPU backend ran on (AVX-512 8×32,
AVX2+FMA 6×16, NEON 8×12 on arm64, gonum pure Go, or OpenBLAS), which
sets its speed:
GODEBUG=cpu.avx512f=off measures the AVX2 kernel on an AVX-512 CPU.

Prints a table, and writes results.json, results.csv, results.md (tables
for a README), gflops.png, memory.png and roofline.png (GFLOP/s against
intensity, log-log, under the two ceilings; only when a point has a
fraction of them) to -out (a chart of each per causal setting when both
are swept). The defaults finish in about a minute on the CPU
backend of a 2-core machine. Peers need bench/peers/install.sh once; see
bench/peers/README.md.
`

func runBench(c *cmdEnv, args []string) error {
	cfg := bench.DefaultConfig()
	backends := []string{"auto"}
	var peerNames []string
	peersDir, outDir := filepath.Join("bench", "peers"), "attn-bench"
	fs := flag.NewFlagSet("attn bench", flag.ContinueOnError)
	intList := func(name, what string, dst *[]int, zeroOK bool) {
		fs.Func(name, fmt.Sprintf("comma-separated %s (default %s)", what, joinInts(*dst)), func(s string) error {
			v, err := parseInts(s, zeroOK)
			*dst = v
			return err
		})
	}
	intList("n", "sequence `lengths`: keys, and queries unless -nq says", &cfg.Ns, false)
	fs.Func("nq", "comma-separated query `rows` Q ≤ N: the last Q positions of N, decoding over a cache of N keys (default N)", func(s string) error {
		v, err := parseInts(s, false)
		cfg.Nqs = v
		return err
	})
	intList("batch", "batch sizes `B`", &cfg.Batches, false)
	intList("heads", "query heads `H`", &cfg.Heads, false)
	intList("kvheads", "key/value heads `HKV`, 0 meaning H", &cfg.KVHeads, true)
	intList("d", "head dims `D`", &cfg.Dims, false)
	fs.IntVar(&cfg.Dv, "dv", 0, "V's head dim `DV` (0: D)")
	fs.Float64Var(&cfg.BlockDensity, "block-density", 0.1, "with -block-size: the fraction `F` of blocks a random block mask keeps (fixed seed; each query block keeps its diagonal block)")
	fs.IntVar(&cfg.BlockSize, "block-size", 0, "block-sparse attention: a random block mask of `S`×S blocks (see -block-density); peers do not run it")
	fs.BoolVar(&cfg.Backward, "backward", false, "also measure each shape's backward pass, alone and after the fused forward (the training step's attention), on every backend that has one; their FLOPs count as 2.5 and 3.5 forwards, their bytes what the backward reads and writes, and their gradients are checked against the float64 reference")
	fs.IntVar(&cfg.Tree, "tree", 0, "speculative decoding: the last `T` keys of each sequence are a random draft tree verified in one Attend, beside the same T rows as a causal chunk (Nq is T)")
	fs.Func("topk", "sparse attention: each query row attends `K` of the keys it may see, drawn at random (fixed seed), sorted; a list (0,2048) measures each shape at each, 0 the dense problem, side by side; peers do not run it", func(s string) error {
		v, err := parseInts(s, true)
		cfg.TopKs = v
		return err
	})
	fs.IntVar(&cfg.VFromK, "v-from-k", 0, "V is K's first `DV` columns (MLA's latent cache: -d 576 -v-from-k 512), none stored, as in attn run and attn grad; -dv then 0 or the same; of the peers only ggml's run it")
	fs.Var(&causalFlag{&cfg.Causal}, "causal", "causal masking; -causal=false,true measures both")
	fs.Func("window", "sliding window `L,R` around each query's position, -1 an unbounded side (127,0 with -causal: a causal window of 128 keys)", func(s string) error {
		w, err := parseWindow(s)
		if w != nil {
			cfg.Variant.Window = &[2]int{w.Left, w.Right}
		}
		return err
	})
	fs.Func("softcap", "cap the scaled scores at ±`C` with C·tanh(s/C) (C > 0)", func(s string) error {
		c, err := parseSoftcap(s)
		cfg.Variant.Softcap = float64(c)
		return err
	})
	fs.BoolVar(&cfg.Variant.ALiBi, "alibi", false, "ALiBi with the standard slopes of H heads (2^(-8(h+1)/H) for H a power of two)")
	fs.BoolVar(&cfg.Variant.Sinks, "sinks", false, "one attention sink logit per head, 0 for each")
	fs.Func("dtype", "comma-separated storage `dtypes`: f32, f16, bf16 (Q, K, V and O), q8, fp8, q4 (K and V as a quantized cache stores them; Q and O float32) (default f32)", func(s string) error {
		cfg.DTypes = nil
		for _, part := range strings.Split(s, ",") {
			dt, err := backend.ParseDType(part)
			if err != nil {
				return err
			}
			cfg.DTypes = append(cfg.DTypes, dt)
		}
		return nil
	})
	fs.Func("strategy", "comma-separated `strategies`: fused, staged (default fused,staged)", func(s string) error {
		cfg.Strategies = nil
		for _, part := range strings.Split(s, ",") {
			st, err := kernels.ParseStrategy(part)
			if err != nil {
				return err
			}
			if st == kernels.Auto {
				return errors.New("name fused or staged, not auto")
			}
			cfg.Strategies = append(cfg.Strategies, st)
		}
		return nil
	})
	fs.Func("prefix", "measure each shape as a decoding step of B sequences of N keys whose first `P` keys are one shared prompt, beside the same batch unshared; P,G: a tree, each of -groups groups sharing G more keys after the prompt (points: the tree shared, the prompt alone shared, nothing shared)", func(s string) error {
		v, err := parseInts(s, false)
		switch {
		case err != nil:
			return err
		case len(v) > 2:
			return fmt.Errorf("%q: want P or P,G", s)
		}
		cfg.Prefix = v[0]
		if len(v) == 2 {
			cfg.GroupPrefix = v[1]
		}
		return nil
	})
	fs.Func("prefix-layout", "with -prefix: the page pool's `layout`, bnhd (a key's KV heads side by side, vLLM's pages; the default) or bhnd (each KV head's rows of a page together)", func(s string) error {
		switch s {
		case "bnhd":
			cfg.PrefixBHND = false
		case "bhnd":
			cfg.PrefixBHND = true
		default:
			return fmt.Errorf("%q: want bnhd or bhnd", s)
		}
		return nil
	})
	fs.BoolVar(&cfg.Buffers, "buffers", false, "with -prefix: attend with the queries and outputs in device buffers (PagePool.AttendBuffers: the cascade merges on the device), not host tensors")
	fs.IntVar(&cfg.Groups, "groups", 0, "with -prefix P,G: the `number` of groups the batch's sequences form, each sharing G keys after the prompt")
	fs.Func("layers", "comma-separated layer `counts` L: time each attn point as a model's step of L calls over L separate caches, recorded with one wait on the GPU (points carry layers)", func(s string) error {
		v, err := parseInts(s, false)
		cfg.Layers = v
		return err
	})
	fs.Func("backend", "comma-separated backend `names`: auto, cpu, gpu, or none (peers only) (default auto)", func(s string) error {
		backends = strings.Split(s, ",")
		return nil
	})
	fs.Func("peers", "comma-separated `peers` to run beside attn on the same inputs, or all: "+strings.Join(bench.PeerNames(), ", "), func(s string) error {
		peerNames = strings.Split(s, ",")
		return nil
	})
	fs.StringVar(&peersDir, "peers-dir", peersDir, "`directory` of the peer runners (bench/peers of a clone)")
	fs.DurationVar(&cfg.Budget, "budget", cfg.Budget, "time to spend measuring each point after its warm-up")
	fs.IntVar(&cfg.MinRuns, "min-runs", cfg.MinRuns, "timed runs per point at least")
	fs.IntVar(&cfg.CheckRows, "check-rows", cfg.CheckRows, "output rows per point compared with the float64 reference")
	fs.IntVar(&cfg.Threads, "threads", 0, "threads for the peers (default GOMAXPROCS, the threads attn's CPU backend uses)")
	var from, point string
	isolate := true
	fs.BoolVar(&isolate, "isolate", isolate, "measure each attn point in a process of its own, so that its peak RSS is its own, as for the peers")
	fs.StringVar(&point, "point", "", "measure the one point `SPEC` (JSON) in this process and print it as JSON: what -isolate runs")
	fs.StringVar(&from, "report", "", "redraw the table, CSV, Markdown and charts of an earlier `results.json` into -out, measuring nothing")
	fs.StringVar(&outDir, "out", outDir, "`directory` for results.json, results.csv, results.md and the charts; empty for none")
	fs.Func("seed", "random `seed` for the inputs", func(s string) error {
		v, err := strconv.ParseUint(s, 10, 64)
		cfg.Seed = v
		return err
	})
	if err := c.parseFlags(fs, benchSynopsis, benchHelp+glossaryHelp(), args); err != nil {
		return err
	}
	if from != "" {
		return redraw(c, from, outDir)
	}
	if point != "" {
		return measurePoint(c, point)
	}
	switch {
	case cfg.MinRuns < 1:
		return usagef("-min-runs must be at least 1")
	case cfg.CheckRows < 0:
		return usagef("-check-rows must not be negative")
	case cfg.Budget < 0:
		return usagef("-budget must not be negative")
	}
	for _, h := range cfg.Heads {
		for _, kvh := range cfg.KVHeads {
			if kvh > 0 && h%kvh != 0 {
				return usagef("-kvheads %d must divide -heads %d", kvh, h)
			}
		}
	}
	if err := cfg.Check(); err != nil {
		return usagef("%v", err)
	}
	if cfg.Variant.Any() && len(peerNames) > 0 {
		fmt.Fprintf(c.stderr, "attn bench: the peers run no %s: their points will be reported unavailable\n", cfg.Variant)
	}
	var names []string
	for _, b := range backends {
		b = strings.TrimSpace(strings.ToLower(b))
		if b == "none" {
			continue
		}
		if err := checkBackendName(b); err != nil {
			return err
		}
		names = append(names, b)
	}
	if len(names) == 0 && len(peerNames) == 0 {
		return usagef("-backend none needs -peers: there is nothing to measure")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var bes []backend.Backend
	defer func() {
		for _, be := range bes {
			be.Close()
		}
	}()
	for _, name := range names {
		be, err := c.openBackend(name)
		if err != nil {
			return err
		}
		if dup := indexBackend(bes, be.Name()); dup >= 0 {
			be.Close() // "auto" and a name that open the same backend
			continue
		}
		bes = append(bes, be)
	}
	var peers []bench.Peer
	if len(peerNames) > 0 {
		var err error
		if peers, err = bench.Peers(ctx, peersDir, peerNames); err != nil {
			return err
		}
		for _, p := range peers {
			if p.Unavailable != "" {
				fmt.Fprintf(c.stderr, "attn bench: peer %s unavailable: %s\n", p.Name, p.Unavailable)
			}
		}
	}

	if isolate && len(bes) > 0 {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("-isolate: finding this program: %v", err)
		}
		cfg.Spawn = bench.Subprocess(exe, "bench", "-point")
	}
	// The host's ceilings that apply to some point (none for a discrete
	// GPU's alone), and the GPU backend's device's, are probed before
	// the sweep, with nothing else of ours running, and again after it:
	// each is the best of the probes, so that another process busy
	// during one cannot lower the roof the points are read against.
	memory, compute := bench.HostCeilings(bes, peers)
	dev := gpuOf(bes)
	if !memory && !compute {
		fmt.Fprintf(c.stderr, "attn bench: the host's ceilings not measured: every point runs on a discrete GPU\n")
	}
	if memory || compute || dev != nil {
		cfg.Roof = &bench.Roof{Probe: newCeilingProbe(c.stderr, memory, compute, dev)}
	}
	prog := newProgress(c.stderr)
	cfg.Progress = prog.update
	points, runErr := bench.Run(ctx, cfg, bes, peers)
	prog.finish()
	if cfg.Roof != nil {
		reportRoof(c.stderr, cfg.Roof, points)
	}
	if runErr != nil && len(points) == 0 {
		return runErr
	}
	if err := bench.WriteTable(c.stdout, points); err != nil {
		return err
	}
	if outDir != "" {
		report := bench.NewReport(cfg, bes, peers, points)
		files, err := writeReport(outDir, report)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "attn bench: wrote %s\n", strings.Join(files, ", "))
	}
	if runErr == nil {
		runErr = noneRan(points)
	}
	return runErr
}

// newCeilingProbe is ceilingProbe; tests of what a sweep does, not of
// its roof, swap it for fixed ceilings (the probes take seconds each).
var newCeilingProbe = ceilingProbe

// wgslDevice is a backend that measures what WGSL reaches on its device
// (gpu.Backend.Ceilings).
type wgslDevice interface {
	Ceilings(context.Context) (gpu.Ceilings, error)
}

// gpuOf is the first of bes that measures its device's ceilings, nil
// where none does.
func gpuOf(bes []backend.Backend) wgslDevice {
	for _, be := range bes {
		if d, ok := be.(wgslDevice); ok {
			return d
		}
	}
	return nil
}

// ceilingProbe measures the host's ceilings once, those memory and
// compute ask for (bench.HostCeilings), and dev's where it is not nil,
// and prints them as probe n on w; a ceiling that cannot be measured
// says why, once.
func ceilingProbe(w io.Writer, memory, compute bool, dev wgslDevice) func() bench.Ceilings {
	n := 0
	said := map[string]bool{}
	failed := func(what string, err error) {
		if !said[what] {
			said[what] = true
			fmt.Fprintf(w, "attn bench: %s not measured: %v\n", what, err)
		}
	}
	return func() bench.Ceilings {
		n++
		var c bench.Ceilings
		var got []string
		if memory {
			if bw, err := bench.MeasureReadBandwidth(); err != nil {
				failed("read bandwidth", err)
			} else {
				c.ReadGBPS = bw
				got = append(got, fmt.Sprintf("read bandwidth %.1f GB/s", bw))
			}
		}
		if compute {
			if rate, err := bench.MeasureSgemm(); err != nil {
				failed("Sgemm rate", err)
			} else {
				c.SgemmGFLOPS = rate
				got = append(got, fmt.Sprintf("Sgemm %.1f GFLOP/s", rate))
			}
			if rate, kernel, err := bench.MeasureFMA(); err != nil {
				failed("FMA peak", err)
			} else {
				c.FMAGFLOPS, c.FMAKernel = rate, kernel
				got = append(got, fmt.Sprintf("FMA peak %.1f GFLOP/s (%s)", rate, kernel))
			}
			// A CPU without tiles has no AMX peak to say it lacks.
			if rate, kernel, err := bench.MeasureAMX(); err != nil {
				if !errors.Is(err, cpu.ErrNoAMX) {
					failed("AMX peak", err)
				}
			} else {
				c.AMXGFLOPS, c.AMXKernel = rate, kernel
				got = append(got, fmt.Sprintf("AMX peak %.1f GFLOP/s (%s)", rate, kernel))
			}
		}
		if len(got) > 0 {
			fmt.Fprintf(w, "attn bench: probe %d of the ceilings on %d threads: %s\n", n, runtime.GOMAXPROCS(0), strings.Join(got, ", "))
		}
		if dev != nil {
			if g, err := dev.Ceilings(context.Background()); err != nil {
				failed("GPU's ceilings", err)
			} else {
				c.GPUReadGBPS, c.GPUFMAGFLOPS, c.GPUF16GFLOPS, c.GPUNote = g.ReadGBPS, g.FMAGFLOPS, g.F16GFLOPS, g.Note
				fmt.Fprintf(w, "attn bench: probe %d of the GPU's ceilings: %s\n", n, strings.TrimPrefix(bench.GPUCeilingsLine(c, 1), "GPU ceilings measured in the run: "))
			}
		}
		return c
	}
}

// reportRoof says on w what the probes of roof made of the ceilings
// (each the best of them, with their spread where they differ) and how
// many points stand flagged above one.
func reportRoof(w io.Writer, roof *bench.Roof, points []bench.Point) {
	best := roof.Best()
	spread := func(f func(bench.Ceilings) float64) string {
		lo := f(best)
		for _, p := range roof.Probes {
			if v := f(p); v > 0 {
				lo = min(lo, v)
			}
		}
		if lo < f(best)*(1-bench.ProbeGain) {
			return fmt.Sprintf(" (probes %.1f … %.1f)", lo, f(best))
		}
		return ""
	}
	var got []string
	if best.ReadGBPS > 0 {
		got = append(got, fmt.Sprintf("read bandwidth %.1f GB/s%s", best.ReadGBPS, spread(func(c bench.Ceilings) float64 { return c.ReadGBPS })))
	}
	if best.SgemmGFLOPS > 0 {
		got = append(got, fmt.Sprintf("Sgemm %.1f GFLOP/s%s", best.SgemmGFLOPS, spread(func(c bench.Ceilings) float64 { return c.SgemmGFLOPS })))
	}
	if best.FMAGFLOPS > 0 {
		got = append(got, fmt.Sprintf("FMA peak %.1f GFLOP/s%s", best.FMAGFLOPS, spread(func(c bench.Ceilings) float64 { return c.FMAGFLOPS })))
	}
	if best.AMXGFLOPS > 0 {
		got = append(got, fmt.Sprintf("AMX peak %.1f GFLOP/s%s", best.AMXGFLOPS, spread(func(c bench.Ceilings) float64 { return c.AMXGFLOPS })))
	}
	if len(got) > 0 {
		fmt.Fprintf(w, "attn bench: ceilings, the best of %d probes: %s\n", len(roof.Probes), strings.Join(got, ", "))
	}
	if line := bench.GPUCeilingsLine(best, len(roof.Probes)); line != "" {
		fmt.Fprintf(w, "attn bench: %s\n", line)
	}
	flagged := 0
	for _, pt := range points {
		if pt.Flag != "" {
			flagged++
		}
	}
	if flagged > 0 {
		fmt.Fprintf(w, "attn bench: %d points above a ceiling once measured again, flagged (the flag column and field)\n", flagged)
	}
}

// noneRan is an error when not one of points ran (each failed, was
// unavailable or too large): a sweep that measured nothing must not
// exit 0. The table and results.json still say why each did not.
func noneRan(points []bench.Point) error {
	counts := map[bench.Status]int{}
	for _, pt := range points {
		if pt.Status == bench.StatusOK || pt.Status == bench.StatusWrong {
			return nil
		}
		counts[pt.Status]++
	}
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
	}
	return fmt.Errorf("no point ran (%s): see each point's error above", strings.Join(parts, ", "))
}

// measurePoint measures the point spec describes, on the backend it
// names, and prints it as one line of JSON.
func measurePoint(c *cmdEnv, spec string) error {
	var ps bench.PointSpec
	dec := json.NewDecoder(strings.NewReader(spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ps); err != nil {
		return usagef("-point: %v", err)
	}
	if err := checkBackendName(ps.Backend); err != nil {
		return err
	}
	be, err := backend.Open(ps.Backend)
	if err != nil {
		return err
	}
	defer be.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return json.NewEncoder(c.stdout).Encode(bench.MeasurePoint(ctx, be, ps))
}

// redraw writes the outputs of the report in path again, into outDir.
func redraw(c *cmdEnv, path, outDir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := bench.ReadReport(f)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if err := bench.WriteTable(c.stdout, r.Points); err != nil {
		return err
	}
	if outDir == "" {
		return nil
	}
	files, err := writeReport(outDir, r)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "attn bench: wrote %s\n", strings.Join(files, ", "))
	return nil
}

func indexBackend(bes []backend.Backend, name string) int {
	for i, be := range bes {
		if be.Name() == name {
			return i
		}
	}
	return -1
}

// writeReport writes the JSON, the CSV and the PNG charts of r into dir,
// each file replaced atomically, and returns their paths.
func writeReport(dir string, r *bench.Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := []string{"results.json", "results.csv", "results.md"}
	writers := []func(io.Writer) error{r.WriteJSON, r.WriteCSV, r.WriteMarkdown}
	for _, cf := range r.ChartFiles("png") {
		files = append(files, cf.Name)
		writers = append(writers, func(w io.Writer) error { return r.WriteChartFile(w, cf) })
	}
	for i, write := range writers {
		files[i] = filepath.Join(dir, files[i])
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			return nil, fmt.Errorf("%s: %v", files[i], err)
		}
		if err := replaceFile(files[i], buf.Bytes()); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// causalFlag is -causal: a boolean flag that also takes a list,
// -causal=false,true, to measure both.
type causalFlag struct{ v *[]bool }

func (f *causalFlag) IsBoolFlag() bool { return true }

func (f *causalFlag) String() string {
	if f.v == nil {
		return "false"
	}
	s := make([]string, len(*f.v))
	for i, b := range *f.v {
		s[i] = strconv.FormatBool(b)
	}
	return strings.Join(s, ",")
}

func (f *causalFlag) Set(s string) error {
	var v []bool
	for _, part := range strings.Split(s, ",") {
		b, err := strconv.ParseBool(strings.TrimSpace(part))
		if err != nil {
			return fmt.Errorf("%q is not true or false", part)
		}
		v = append(v, b)
	}
	*f.v = v
	return nil
}

// progress shows a sweep's progress on w: a bar weighted by FLOPs with the
// current point and an estimate of the time left when w is a terminal, a
// line per finished point otherwise (logs, CI).
type progress struct {
	w       io.Writer
	bar     *progressbar.ProgressBar
	mu      sync.Mutex
	current string
	since   time.Time
	start   time.Time
	stop    chan struct{}
	done    sync.WaitGroup
	count   int
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, start: time.Now()}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions64(1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetWidth(24),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionShowDescriptionAtLineEnd())
		p.stop = make(chan struct{})
		p.done.Add(1)
		go p.tick()
	}
	return p
}

// tick redraws the bar every half second, so the time of a long point
// keeps moving.
func (p *progress) tick() {
	defer p.done.Done()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.current != "" {
				p.bar.Describe(fmt.Sprintf("%s (%s)", p.current, time.Since(p.since).Round(time.Second)))
			}
			p.mu.Unlock()
		}
	}
}

func (p *progress) update(ev bench.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.Point == nil {
		p.current, p.since = ev.Current, time.Now()
		if p.bar != nil {
			p.bar.ChangeMax64(max(int64(ev.Total/1e6), 1))
			p.bar.Describe(p.current)
		}
		return
	}
	p.count++
	pt := ev.Point
	status := fmt.Sprintf("%.2f GFLOP/s", pt.GFLOPS)
	if pt.Status != bench.StatusOK {
		status = fmt.Sprintf("%s: %s", pt.Status, pt.Error)
	}
	shape := fmt.Sprintf("N=%d", pt.N)
	if pt.Decode() {
		shape += fmt.Sprintf(" Nq=%d", pt.Nq)
	}
	if v := pt.Variant.String(); v != "" {
		shape += " " + v
	}
	line := fmt.Sprintf("[%d %3.0f%% %s] %s %s %s %s\n", p.count, 100*ev.Done/ev.Total,
		time.Since(p.start).Round(time.Second), pt.Impl, pt.Strategy, shape, status)
	if p.bar != nil {
		p.bar.Clear()
		fmt.Fprint(p.w, line)
		p.bar.Set64(int64(ev.Done / 1e6))
		return
	}
	fmt.Fprint(p.w, line)
}

func (p *progress) finish() {
	if p.bar == nil {
		return
	}
	close(p.stop)
	p.done.Wait()
	p.bar.Finish()
}

func parseInts(s string, zeroOK bool) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || v < 0 || (v == 0 && !zeroOK) {
			return nil, fmt.Errorf("%q is not a positive integer", part)
		}
		out = append(out, v)
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// glossaryHelp is the definition of every column and field a report
// holds (bench.Conventions), for attn bench -h: the table points there
// and to results.md instead of printing them under every run.
func glossaryHelp() string {
	var b strings.Builder
	b.WriteString("\nWhat the columns and results.json's fields mean:\n\n")
	bench.WriteGlossary(&b, bench.AllGlossaryKeys(), false)
	return b.String()
}
