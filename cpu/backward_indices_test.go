package cpu

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// The index-list backward (indexedHead) against ReferenceGrad on the
// shapes the conformance suite's small cases do not reach: several key
// blocks (idxBlockKeys) and chunks of rows (idxRowBytes: D = 128 with
// 8 heads a group holds 42 rows), groups of 1, 3 and 8 heads (padded to
// quads, two quads), head dims the kernels do not take (24, 40) and Dv
// ≠ D, one list a KV head and one shared, causal masking and a window,
// key lengths, packed rows (a sequence of no queries, one of no keys), no queries, no
// entries, a softcap and sinks, halves; each on the
// offset kernels where the CPU has them and on the gathers.
func TestBackwardIndices(t *testing.T) {
	off := 300
	cases := []struct {
		p     backend.Problem
		heads int
		k     int
		dt    backendtest.DTypes
	}{
		{p: backend.Problem{B: 1, H: 8, KVHeads: 1, Nq: 100, Nk: 700, D: 128}, heads: 1, k: 300},
		{p: backend.Problem{B: 2, H: 3, KVHeads: 1, Nq: 9, Nk: 600, D: 64, Dv: 32, Causal: true, Variants: backend.Variants{CausalOffset: &off}}, heads: 1, k: 200},
		{p: backend.Problem{B: 1, H: 4, KVHeads: 4, Nq: 20, Nk: 530, D: 16, Dv: 48, Variants: backend.Variants{Softcap: 4, Sinks: []float32{0, 1, -1, 2}}}, heads: 4, k: 257},
		{p: backend.Problem{B: 2, H: 6, KVHeads: 2, Nq: 12, Nk: 520, D: 24, Dv: 40, Layout: backend.BNHD, Variants: backend.Variants{KVLens: []int{520, 300}, Window: &backend.Window{Left: 200, Right: 10}}}, heads: 2, k: 150},
		{p: backend.Problem{B: 1, H: 4, KVHeads: 2, Nq: 30, Nk: 600, D: 32, Causal: true}, heads: 2, k: 100, dt: backendtest.Same(backend.Float16)},
		{p: backend.Problem{B: 1, H: 8, KVHeads: 4, Nq: 15, Nk: 513, D: 64, Layout: backend.BNHD}, heads: 1, k: 128, dt: backendtest.Same(backend.BFloat16)},
		{p: backendtest.PackedProblem(backend.Problem{H: 4, KVHeads: 1, D: 32}, []int{40, 0, 3, 9}, []int{600, 300, 20, 280}), heads: 1, k: 90},
		// A sequence of queries and no keys: no block of keys to count in.
		{p: backendtest.PackedProblem(backend.Problem{H: 4, KVHeads: 2, D: 16, Causal: true}, []int{5, 2}, []int{9, 0}), heads: 2, k: 10},
		{p: backend.Problem{B: 1, H: 2, KVHeads: 1, Nq: 0, Nk: 300, D: 16}, heads: 1, k: 10},
		{p: backend.Problem{B: 1, H: 2, KVHeads: 2, Nq: 5, Nk: 300, D: 16}, heads: 2, k: 0},
	}
	be := open(t)
	ctx := context.Background()
	for i, c := range cases {
		for _, direct := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d/direct=%t", i, direct), func(t *testing.T) {
				if direct && !hasBackIdx() {
					t.Skip("the offset kernels need AVX-512F: an x86 CPU with it (Zen 4 and 5, the Xeons) runs this test")
				}
				defer func(was bool) { backIdx = was }(backIdx)
				backIdx = direct
				rng := rand.New(rand.NewPCG(uint64(i), 80))
				bc := backendtest.RandomCase(rng, c.p, nil, nil)
				bc.Problem = backendtest.WithIndices(rng, bc.Problem, c.heads, c.k)
				if c.dt != (backendtest.DTypes{}) {
					bc = bc.WithDTypes(c.dt)
				}
				p := bc.Problem.Resolved()
				dO := make([]float32, p.OLen())
				for j := range dO {
					dO[j] = float32(2*rng.Float64() - 1)
				}
				if err := backendtest.RunBackward(ctx, be, bc, dO); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// The index-list backward gives the same bits whatever the thread count
// (1, 2 and 5 workers over 4 items): dQ, dK, dV and the sinks'
// gradients.
func TestBackwardIndicesThreads(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(80, 3))
	p := backend.Problem{B: 2, H: 8, KVHeads: 2, Nq: 20, Nk: 600, D: 32, Causal: true,
		Variants: backend.Variants{Sinks: []float32{0, 1, -1, 0.5, 2, 0, -2, 1}}}.Resolved()
	p = backendtest.WithIndices(rng, p, 2, 150)
	var in [6][]float32 // Q, K, V, dO, and room for O and the LSE
	for i, n := range []int{p.QLen(), p.KLen(), p.VLen(), p.OLen()} {
		in[i] = make([]float32, n)
		for j := range in[i] {
			in[i][j] = float32(2*rng.Float64() - 1)
		}
	}
	var first [][]float32
	for _, threads := range []int{1, 2, 5} {
		be, err := New(WithThreads(threads))
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close()
		var bufs [9]backend.Buffer
		for i, n := range []int{p.QLen(), p.KLen(), p.VLen(), p.OLen(), p.LSELen(), p.OLen(), p.QLen(), p.KLen(), p.VLen()} {
			if bufs[i], err = be.Alloc(backend.Float32, n); err != nil {
				t.Fatal(err)
			}
			defer bufs[i].Release()
		}
		for i, x := range map[int][]float32{0: in[0], 1: in[1], 2: in[2], 5: in[3]} {
			if err := be.Write(bufs[i], 0, x); err != nil {
				t.Fatal(err)
			}
		}
		if err := be.Fused(ctx, backend.FusedParams{Problem: p}, bufs[0], bufs[1], bufs[2], bufs[3], bufs[4]); err != nil {
			t.Fatal(err)
		}
		dSinks := make([]float32, p.H)
		if err := be.Backward(ctx, backend.BackwardParams{Problem: p}, bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], bufs[7], bufs[8], dSinks); err != nil {
			t.Fatal(err)
		}
		got := [][]float32{make([]float32, p.QLen()), make([]float32, p.KLen()), make([]float32, p.VLen()), dSinks}
		for i := range 3 {
			if err := be.Read(got[i], bufs[6+i], 0); err != nil {
				t.Fatal(err)
			}
		}
		if first == nil {
			first = got
			continue
		}
		for i, name := range []string{"dQ", "dK", "dV", "dSinks"} {
			for j, x := range got[i] {
				if math.Float32bits(x) != math.Float32bits(first[i][j]) {
					t.Fatalf("%d threads: %s[%d] = %v, %v with 1", threads, name, j, x, first[i][j])
				}
			}
		}
	}
}
