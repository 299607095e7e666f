//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/internal/workload"
)

// idxCase is a backward case under an index list: p with lists of k
// entries a row drawn by backendtest.WithIndices, heads of them (1 or
// KVHeads), or the lists edit writes.
type idxCase struct {
	p        backend.Problem
	heads, k int
	dt       backendtest.DTypes
	edit     func(p backend.Problem)
	chunks   int  // gpu.SetBackwardChunks: entries (and rows, keys) a dispatch
	empty    bool // some row sees no key: its dQ must be exactly 0
}

func (c idxCase) name(n int) string {
	s := fmt.Sprintf("%d_%s_idx%dx%d", n, caseName(c.p, nil, nil), c.heads, c.k)
	if c.dt.Half() {
		s += "_" + strings.NewReplacer(":", "", ",", "_").Replace(c.dt.String())
	}
	if c.chunks > 0 {
		s += fmt.Sprintf("_chunks%d", c.chunks)
	}
	return s
}

// build draws c's case: operands, lists and dO.
func (c idxCase) build(seed uint64) (backendtest.Case, []float32) {
	rng := newRand(seed)
	p := backendtest.WithIndices(rng, c.p, c.heads, c.k)
	if c.edit != nil {
		c.edit(p)
	}
	cs := backendtest.RandomCase(rng, p, nil, nil).WithDTypes(c.dt)
	return cs, rounded(c.dt.O, randomDO(rng, p))
}

// allKeys makes every list name the same keys, 0 … k−1 in an order of
// its own (a rotation): each key's list holds every row, as a sink-like
// key an indexer always picks does.
func allKeys(p backend.Problem) {
	ix := p.Indices
	for x := range len(ix.Idx) / ix.PerRow {
		row := ix.Idx[x*ix.PerRow:][:ix.PerRow]
		for t := range row {
			row[t] = int32((t + x) % ix.PerRow)
		}
	}
}

// TestBackwardIndices compares the GPU's Backward under index lists
// (backidxkv.wgsl, backidxq.wgsl) with backendtest.ReferenceGrad and the
// CPU's: decoding and prefill, lists shared by the heads and one a KV
// head, GQA groups of 1, 4 and 8, head dims that are multiples of 4 (a
// vec4 a load) and odd ones, causal masking and its offset, a window,
// key lengths (a batch with none), softcap and sinks, packed sequences
// with packed and dense keys (an empty one among them), half operands,
// no entries, rows that name no key (whose dQ must be exactly 0), and
// keys every row names (long key lists), each kind once more with
// dispatches of a few entries (gpu.SetBackwardChunks). Keys no row
// names must keep a dK and dV of exactly 0.
func TestBackwardIndices(t *testing.T) {
	g := openGPU(t)
	c := openCPU(t)
	f16, bf16 := backend.Float16, backend.BFloat16
	packed := backendtest.PackedProblem
	vars := func(p backend.Problem, f func(*backend.Variants)) backend.Problem { f(&p.Variants); return p }
	for n, r := range []idxCase{
		{p: prob(2, 8, 2, 1, 300, 64, 64), heads: 2, k: 64},
		{p: bnhd(prob(2, 8, 2, 1, 300, 64, 64)), heads: 1, k: 64, chunks: 5},
		{p: causal(prob(1, 4, 1, 70, 150, 17, 5)), heads: 1, k: 40, empty: true},
		{p: causal(prob(1, 4, 1, 70, 150, 17, 5)), heads: 1, k: 40, chunks: 3, empty: true},
		{p: prob(1, 4, 2, 200, 64, 16, 16), heads: 1, k: 64, edit: allKeys},
		{p: prob(1, 4, 2, 200, 64, 16, 16), heads: 2, k: 64, edit: allKeys, chunks: 7},
		{p: prob(1, 4, 4, 9, 20, 8, 8), heads: 4, k: 0},
		{p: vars(causal(prob(2, 4, 2, 20, 70, 16, 16)), func(v *backend.Variants) {
			v.KVLens = []int{70, 0}
			v.Window = &backend.Window{Left: 30, Right: 0}
			v.Softcap = 3
			v.Sinks = []float32{0, 1, -1, 0.5}
		}), heads: 2, k: 16, empty: true},
		{p: offset(bnhd(prob(2, 8, 1, 12, 90, 24, 40)), -5), heads: 1, k: 30, empty: true, chunks: 4},
		{p: causal(packed(prob(0, 4, 2, 0, 0, 16, 8), []int{5, 0, 30, 2}, []int{9, 3, 40, 0})), heads: 2, k: 10, empty: true},
		{p: causal(packed(prob(0, 4, 2, 0, 0, 16, 8), []int{5, 0, 30, 2}, []int{9, 3, 40, 0})), heads: 1, k: 10, empty: true, chunks: 3},
		{p: sinks(packed(prob(0, 4, 2, 0, 90, 32, 32), []int{7, 1, 12}, nil), 0.5, -1, 2, 0), heads: 2, k: 20},
		{p: causal(prob(1, 4, 2, 70, 130, 32, 32)), heads: 2, k: 24, dt: backendtest.Same(f16)},
		{p: bnhd(prob(1, 4, 2, 40, 50, 17, 16)), heads: 1, k: 12, dt: backendtest.Same(bf16), chunks: 3},
		{p: prob(2, 2, 1, 9, 40, 20, 6), heads: 1, k: 9, dt: backendtest.DTypes{Q: bf16, K: backend.Float32, V: f16, O: f16}},
	} {
		t.Run(r.name(n), func(t *testing.T) {
			defer gpu.SetBackwardChunks(gpu.SetBackwardChunks(r.chunks))
			cs, dO := r.build(uint64(1100 + n))
			ref := backendtest.ReferenceGrad(cs, dO)
			gg := backwardOn(t, g, cs, dO)
			checkGrads(t, gg, backwardOn(t, c, cs, dO), &ref, backendtest.GradTol(r.dt))
			if r.empty {
				zeroWhereEmpty(t, cs, gg)
			}
			zeroWhereUnnamed(t, cs, gg)
		})
	}
}

// zeroWhereUnnamed checks that every key of c that no row's list names
// (among the keys the row may see) has a dK and dV of exactly 0 in g,
// and that some key is named.
func zeroWhereUnnamed(t testing.TB, c backendtest.Case, g grads) {
	t.Helper()
	p := c.Problem.Resolved()
	ix := p.Indices
	named := map[[3]int]bool{} // (b, KV head, key)
	for b := range p.B {
		for kh := range p.KVHeads {
			for i := range p.QRows(b) {
				lo, hi := p.KeyRange(b, i)
				for _, j := range ix.Idx[p.IndexOffset(b, kh, i):][:ix.PerRow] {
					if j >= 0 && int(j) >= lo && int(j) < hi {
						named[[3]int{b, kh, int(j)}] = true
					}
				}
			}
		}
	}
	ks, vs := p.KRowsOf(), p.VRowsOf()
	for b := range p.B {
		for kh := range p.KVHeads {
			for j := range p.KVLen(b) {
				if named[[3]int{b, kh, j}] {
					continue
				}
				for _, x := range []struct {
					name string
					row  []float32
				}{{"dK", g.dk[ks.Offset(b, kh, j):][:p.D]}, {"dV", g.dv[vs.Offset(b, kh, j):][:p.Dv]}} {
					for d, v := range x.row {
						if v != 0 || math.Signbit(float64(v)) {
							t.Fatalf("key (%d, %d, %d) is named by no row, but %s[%d] = %v", b, kh, j, x.name, d, v)
						}
					}
				}
			}
		}
	}
}

// TestBackwardIndicesDeterministic: the GPU's gradients under index
// lists are the same bits on every run, with other work between (a
// dense backward of other sizes), whatever the dispatches' chunks: lists one
// a KV head over GQA groups of 4, many rows naming each key, sinks.
func TestBackwardIndicesDeterministic(t *testing.T) {
	g := openGPU(t)
	for _, chunks := range []int{0, 5} {
		t.Run(fmt.Sprintf("chunks%d", chunks), func(t *testing.T) {
			defer gpu.SetBackwardChunks(gpu.SetBackwardChunks(chunks))
			r := idxCase{p: sinks(causal(prob(2, 8, 2, 96, 128, 32, 32)), 0, 1, -1, 2, 0.5, 0, 1, -2), heads: 2, k: 48}
			cs, dO := r.build(1200)
			first := backwardOn(t, g, cs, dO)
			// Other work between: a dense backward of other sizes.
			other := backendtest.RandomCase(newRand(1201), causal(prob(1, 4, 2, 40, 77, 16, 16)), nil, nil)
			backwardOn(t, g, other, randomDO(newRand(1202), other.Problem))
			second := backwardOn(t, g, cs, dO)
			for _, x := range []struct {
				name string
				a, b []float32
			}{{"dQ", first.dq, second.dq}, {"dK", first.dk, second.dk}, {"dV", first.dv, second.dv}, {"dSinks", first.dSinks, second.dSinks}} {
				for i := range x.a {
					if math.Float32bits(x.a[i]) != math.Float32bits(x.b[i]) {
						t.Fatalf("%s[%d] is %#x, %#x the first time", x.name, i, math.Float32bits(x.b[i]), math.Float32bits(x.a[i]))
					}
				}
			}
		})
	}
}

// BenchmarkBackwardIndices times the backward alone under an index list
// of 256 keys a row (workload.TopK: random keys each row may see, one list
// shared by the heads) against the dense backward of the same chunk: 64
// query rows over 4096 keys, 8 heads over 2 KV heads, D = 64, causal,
// f32. The two run interleaved, one after the other each iteration, on
// the same inputs (each after its own forward made O and the LSE), and
// report their times and the ratio sparse/dense.
//
//	go test -run '^$' -bench BackwardIndices -benchtime 5x -count 3 ./gpu
func BenchmarkBackwardIndices(b *testing.B) {
	g := openGPU(b)
	ctx := context.Background()
	dense := backend.Problem{B: 1, H: 8, KVHeads: 2, Nq: 64, Nk: 4096, D: 64, Causal: true}.Resolved()
	sparse := dense
	sparse.Indices = workload.TopK(dense, 256)
	buf := func(n int) backend.Buffer {
		x, err := g.Alloc(backend.Float32, n)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(x.Release)
		vals := make([]float32, n)
		for j := range vals {
			vals[j] = float32(j%97)/97 - 0.5
		}
		if err := g.Write(x, 0, vals); err != nil {
			b.Fatal(err)
		}
		return x
	}
	p := dense
	q, k, v, do := buf(p.QLen()), buf(p.KLen()), buf(p.VLen()), buf(p.OLen())
	dq, dk, dv := buf(p.QLen()), buf(p.KLen()), buf(p.VLen())
	type run struct {
		p      backend.Problem
		o, lse backend.Buffer
		took   time.Duration
	}
	runs := []*run{{p: dense}, {p: sparse}}
	for _, r := range runs {
		r.o, r.lse = buf(p.OLen()), buf(p.LSELen())
		if err := g.Fused(ctx, backend.FusedParams{Problem: r.p}, q, k, v, r.o, r.lse); err != nil {
			b.Fatal(err)
		}
		// One untimed run: the kernels compiled, the pool filled.
		if err := g.Backward(ctx, backend.BackwardParams{Problem: r.p}, q, k, v, r.o, r.lse, do, dq, dk, dv, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		for _, r := range runs {
			start := time.Now()
			if err := g.Backward(ctx, backend.BackwardParams{Problem: r.p}, q, k, v, r.o, r.lse, do, dq, dk, dv, nil); err != nil {
				b.Fatal(err)
			}
			r.took += time.Since(start)
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
	b.ReportMetric(ms(runs[0].took), "dense-ms")
	b.ReportMetric(ms(runs[1].took), "sparse-ms")
	b.ReportMetric(float64(runs[1].took)/float64(runs[0].took), "sparse/dense")
}
