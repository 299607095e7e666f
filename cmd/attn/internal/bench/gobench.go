package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// The Go benchmarks every backend runs: backends_bench_test.go (the
// CPU's) and backends_gpu_bench_test.go (the GPU's) are rows of
// one-liners calling these with each backend's own shapes,
//
//	func BenchmarkCPUFused(b *testing.B) { bench.Fused(b, openCPU(b), cpuShapes) }
//
// and benchstat compares commits:
//
//	go test -run '^$' -bench '^BenchmarkCPU' -count 6 ./cmd/attn/internal/bench > old.txt
//
// Every benchmark runs each Shape without and with causal masking, as a
// sub-benchmark named by key=value pairs that benchstat can group on:
//
//	BenchmarkCPUFused/N=1024/H=8/KVH=2/D=64/causal=true
//	BenchmarkCPUAttention/strategy=fused/N=1024/H=8/KVH=8/D=64/causal=false
//
// A shape or strategy the backend's Caps do not claim is skipped with the
// reason.
//
// Scores, Softmax, Context, Staged and Fused time the ops alone on buffers
// already on the device: inputs are uploaded, and an untimed warm-up run
// made (compiling a GPU backend's pipelines), before the timed loop. Every
// timed iteration ends with Sync, so the device work has finished when the
// clock stops. (The gpu backend's ops already wait for their own
// submissions; the Sync costs one empty queue wait there and nothing on
// the CPU.) Attention times kernels.Attention end to end from host slices:
// the finiteness check, uploads, the ops, reading O back and the Go
// allocations of the result.
//
// Each reports, besides ns/op and allocs/op (b.ReportAllocs):
//
//	Scores     GFLOP/s  2·D per computed score: B·H·Nq·Nk of them, causal
//	                    or not (Scores does not mask)
//	Softmax    Gelem/s  elements of the [B, H, Nq, Nk] score matrix
//	Context    GFLOP/s  2·Dv per attended (query, key) pair
//	Staged     GFLOP/s  Flops: 2·(D+Dv) per attended pair
//	Fused      GFLOP/s  Flops
//	Attention  GFLOP/s  Flops
//
// so that a causal run reports the rate of the work that has to be done.
// Bytes (b.SetBytes, shown as MB/s) are the compulsory traffic of the op
// as specified: 4 bytes per float32, every input read once and every
// output written once, whole operands as stored:
//
//	Scores     Q + K + S
//	Softmax    S read + S written
//	Context    P + V + O
//	Staged     the sum of the three: the scores' round trips through
//	           memory are what staging costs
//	Fused      Q + K + V + O
//	Attention  Q + K + V + O: the host data through the call
//
// The shapes are given at B = 1 (their names leave B out); each runs
// with Causal false and true whatever it says.
func benchName(s Shape) string {
	n := fmt.Sprintf("N=%d", s.N)
	if s.Decode() {
		n += fmt.Sprintf("/Nq=%d", s.Nq)
	}
	return fmt.Sprintf("%s/H=%d/KVH=%d/D=%d/causal=%t", n, s.H, s.KVHeads, s.D, s.Causal)
}

// Scores benchmarks be.Scores alone: S = scale·Q·Kᵀ.
func Scores(b *testing.B, be backend.Backend, shapes []Shape) { ops(b, be, shapes, opScores) }

// Softmax benchmarks be.Softmax alone, in place on scores already computed.
func Softmax(b *testing.B, be backend.Backend, shapes []Shape) { ops(b, be, shapes, opSoftmax) }

// Context benchmarks be.Context alone: O = P·V from weights already
// computed.
func Context(b *testing.B, be backend.Backend, shapes []Shape) { ops(b, be, shapes, opContext) }

// Staged benchmarks Scores, Softmax and Context in sequence, the staged
// path without its transfers.
func Staged(b *testing.B, be backend.Backend, shapes []Shape) { ops(b, be, shapes, opStaged) }

// Fused benchmarks be.Fused alone.
func Fused(b *testing.B, be backend.Backend, shapes []Shape) { ops(b, be, shapes, opFused) }

// Attention benchmarks kernels.Attention from host slices, transfers
// included, under each strategy: strategy=auto, staged and fused.
func Attention(b *testing.B, be backend.Backend, shapes []Shape) {
	for _, s := range []kernels.Strategy{kernels.Auto, kernels.Staged, kernels.Fused} {
		b.Run("strategy="+s.String(), func(b *testing.B) {
			eachShape(b, shapes, func(b *testing.B, p backend.Problem) { attention(b, be, s, p) })
		})
	}
}

func ops(b *testing.B, be backend.Backend, shapes []Shape, o op) {
	eachShape(b, shapes, func(b *testing.B, p backend.Problem) { opBench(b, be, o, p) })
}

func eachShape(b *testing.B, shapes []Shape, f func(*testing.B, backend.Problem)) {
	for _, s := range shapes {
		for _, causal := range []bool{false, true} {
			s.Causal = causal
			b.Run(benchName(s), func(b *testing.B) { f(b, s.Problem()) })
		}
	}
}

// op is one of the device-resident benchmarks.
type op int

const (
	opScores op = iota
	opSoftmax
	opContext
	opStaged
	opFused
)

func (o op) String() string {
	return [...]string{"scores", "softmax", "context", "staged", "fused"}[o]
}

// work is what one run of o on p does, in the unit it reports.
func (o op) work(p backend.Problem) (n float64, unit string) {
	switch o {
	case opScores:
		return scoresFlops(p), "GFLOP/s"
	case opSoftmax:
		return float64(p.ScoresLen()), "Gelem/s"
	case opContext:
		return contextFlops(p), "GFLOP/s"
	}
	return Flops(p), "GFLOP/s"
}

// bytes is the compulsory traffic of one run of o on p.
func (o op) bytes(p backend.Problem) int64 {
	var n int
	switch o {
	case opScores:
		n = p.QLen() + p.KLen() + p.ScoresLen()
	case opSoftmax:
		n = 2 * p.ScoresLen()
	case opContext:
		n = p.ScoresLen() + p.VLen() + p.OLen()
	case opStaged:
		return Bytes(p, true) // the three ops above together
	case opFused:
		return Bytes(p, false)
	}
	return 4 * int64(n)
}

// scoresFlops counts 2·D per score; Scores computes all B·H·Nq·Nk of
// them whatever the masking.
func scoresFlops(p backend.Problem) float64 { return float64(p.ScoresLen()) * 2 * float64(p.D) }

// contextFlops counts 2·Dv per attended pair.
func contextFlops(p backend.Problem) float64 {
	return pairs(p) * float64(p.H) * 2 * float64(p.Dv)
}

// unsupported says why be cannot run p, or "" when it can.
func unsupported(c backend.Caps, staged bool, p backend.Problem) string {
	switch {
	case staged && !c.Staged:
		return "backend has no staged ops"
	case !staged && !c.Fused:
		return "backend has no fused op"
	case p.Causal && !c.Causal:
		return "backend has no causal masking"
	case p.KVHeads != p.H && !c.GQA:
		return "backend has no GQA"
	}
	return ""
}

// report sets the rate of n units of work per op over the timed loop.
func report(b *testing.B, n float64, unit string) {
	b.ReportMetric(n*float64(b.N)/b.Elapsed().Seconds()/1e9, unit)
}

func randoms(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(2*rng.Float64() - 1)
	}
	return x
}

// opBench times o on p with its inputs on the device. Softmax's input is
// the scores of random Q and K, and Context's the weights they give, so
// that each runs on the data it sees in the staged path.
func opBench(b *testing.B, be backend.Backend, o op, p backend.Problem) {
	if why := unsupported(be.Caps(), o != opFused, p); why != "" {
		b.Skip(why)
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, uint64(p.Nq)))
	buf := func(n int, random bool) backend.Buffer {
		x, err := be.Alloc(backend.Float32, n)
		if err == nil && random {
			err = be.Write(x, 0, randoms(rng, n))
		}
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(x.Release)
		return x
	}
	q, k := buf(p.QLen(), true), buf(p.KLen(), true)
	v, out := buf(p.VLen(), true), buf(p.OLen(), false)
	var s backend.Buffer
	if o != opFused {
		s = buf(p.ScoresLen(), false)
	}
	scores := func() error { return be.Scores(ctx, backend.ScoresParams{Problem: p}, q, k, s) }
	softmax := func() error { return be.Softmax(ctx, backend.SoftmaxParams{Problem: p}, s) }
	weigh := func() error { return be.Context(ctx, backend.ContextParams{Problem: p}, s, v, out) }
	var setup, run []func() error
	switch o {
	case opScores:
		run = []func() error{scores}
	case opSoftmax:
		setup, run = []func() error{scores}, []func() error{softmax}
	case opContext:
		setup, run = []func() error{scores, softmax}, []func() error{weigh}
	case opStaged:
		run = []func() error{scores, softmax, weigh}
	case opFused:
		run = []func() error{func() error { return be.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, out, nil) }}
	}
	step := func(fs []func() error) {
		for _, f := range fs {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
		if err := be.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	step(setup)
	step(run) // warm-up, untimed: b.Loop starts the clock afresh
	b.ReportAllocs()
	b.SetBytes(o.bytes(p))
	for b.Loop() {
		step(run)
	}
	n, unit := o.work(p)
	report(b, n, unit)
}

// attention times kernels.Attention with strategy s on host tensors.
func attention(b *testing.B, be backend.Backend, s kernels.Strategy, p backend.Problem) {
	c := be.Caps()
	why := ""
	switch s {
	case kernels.Staged:
		why = unsupported(c, true, p)
	case kernels.Fused:
		why = unsupported(c, false, p)
	default:
		if why = unsupported(c, true, p); why != "" {
			why = unsupported(c, false, p)
		}
	}
	if why != "" {
		b.Skip(why)
	}
	rng := rand.New(rand.NewPCG(1, uint64(p.Nq)))
	tensor := func(heads, n, dim int) *kernels.Tensor {
		return &kernels.Tensor{Shape: []int{p.B, heads, n, dim}, Layout: kernels.BHND, Data: randoms(rng, p.B*heads*n*dim)}
	}
	q, k, v := tensor(p.H, p.Nq, p.D), tensor(p.KVHeads, p.Nk, p.D), tensor(p.KVHeads, p.Nk, p.Dv)
	opts := &kernels.Options{Scale: float64(p.Scale), Causal: p.Causal, Strategy: s}
	ctx := context.Background()
	step := func() {
		if _, err := kernels.Attention(ctx, be, q, k, v, opts); err != nil {
			b.Fatal(err)
		}
		if err := be.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	step() // warm-up, untimed
	b.ReportAllocs()
	b.SetBytes(opFused.bytes(p))
	for b.Loop() {
		step()
	}
	report(b, Flops(p), "GFLOP/s")
}
