package cpu

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// allDTypes is every combination of dtypes over Q, K, V, O and the bias.
func allDTypes() []backendtest.DTypes {
	var all []backendtest.DTypes
	for i := range 243 {
		pick := func(n int) backend.DType { return backend.DTypes[(i/n)%3] }
		all = append(all, backendtest.DTypes{Q: pick(1), K: pick(3), V: pick(9), O: pick(27), Bias: pick(81)})
	}
	return all
}

// runHalf runs c stored as dt through Fused, or the staged ops, with the
// suite's runners: Reference of the rounded inputs, O within
// backendtest.Allowed for its dtype (Tol plus half an ulp of it).
func runHalf(be backend.Backend, c backendtest.Case, dt backendtest.DTypes, staged bool) error {
	ctx := context.Background()
	if staged {
		return backendtest.RunStaged(ctx, be, c.WithDTypes(dt), true)
	}
	return backendtest.RunFused(ctx, be, c.WithDTypes(dt), true)
}

// TestHalfOps runs Fused and the staged ops with every combination of
// dtypes over Q, K, V, O and the bias on problems with odd head dims,
// GQA, BNHD, causal masks, a window, softcap and ALiBi, and tiles one
// either side of the problem's sizes.
func TestHalfOps(t *testing.T) {
	left, right := 3, 0
	shapes := []struct {
		p          backend.Problem
		bias, keep *[4]int
		tq, tk     int
	}{
		{backend.Problem{B: 1, H: 2, KVHeads: 1, Nq: 17, Nk: 23, D: 5, Dv: 3, Causal: true}, &[4]int{1, 2, 17, 23}, nil, 16, 24},
		{backend.Problem{B: 2, H: 2, KVHeads: 2, Nq: 9, Nk: 11, D: 33, Dv: 7, Layout: backend.BNHD}, &[4]int{1, 2, 1, 11}, &[4]int{2, 1, 9, 11}, 8, 10},
		{backend.Problem{B: 1, H: 4, KVHeads: 2, Nq: 31, Nk: 31, D: 16, Dv: 17, Causal: true,
			Variants: backend.Variants{Window: &backend.Window{Left: left, Right: right}, Softcap: 5, ALiBi: []float32{0.5, 0.25, 0.125, 0.0625}}},
			&[4]int{1, 1, 31, 31}, nil, 32, 30},
		{backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 40, D: 64, Dv: 64}, &[4]int{1, 1, 1, 1}, nil, 4, 16},
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for _, sh := range shapes {
		be := newBackend(t, WithTile(sh.tq, sh.tk), WithThreads(2))
		sh.p.Scale = float32(1 / math.Sqrt(float64(sh.p.D)))
		c := backendtest.RandomCase(rng, sh.p, sh.bias, sh.keep)
		for _, dt := range allDTypes() {
			for _, staged := range []bool{false, true} {
				if err := runHalf(be, c, dt, staged); err != nil {
					t.Fatalf("%v, %v, staged %v: %v", c, dt, staged, err)
				}
			}
		}
	}
}

// TestHalfDefaultTiles: half operands at the default tiles' edges (fused;
// one of them causal), D = 64, the staged ops' chunks of halfChunk keys one
// either side (both),
// and bfloat16 operands at DefaultBF16Tiles' edges.
func TestHalfDefaultTiles(t *testing.T) {
	be := newBackend(t)
	tq, tk := DefaultTiles()
	rng := rand.New(rand.NewPCG(15, 16))
	mixes := []backendtest.DTypes{
		backendtest.Same(backend.Float16), backendtest.Same(backend.BFloat16),
		{Q: backend.Float16, K: backend.BFloat16, V: backend.Float32, O: backend.BFloat16, Bias: backend.Float16},
	}
	for i, n := range [][2]int{{tq - 1, tk + 1}, {tq + 1, tk - 1}, {3, halfChunk + 1}} {
		for _, causal := range []bool{i == 1, i == 2} {
			p := backend.Problem{B: 1, H: 2, KVHeads: 1, Nq: n[0], Nk: n[1], D: 64, Dv: 64, Causal: causal}
			c := backendtest.RandomCase(rng, p, &[4]int{1, 1, n[0], n[1]}, nil)
			for j, dt := range mixes {
				if i < 2 && j != i && j != 2 {
					continue // at the tiles' edges, each pair takes two mixes
				}
				// The staged ops' edges are their chunks', not the tiles'.
				for _, staged := range []bool{false, n[0] == 3} {
					if err := runHalf(be, c, dt, staged); err != nil {
						t.Fatalf("%v, %v, staged %v: %v", c, dt, staged, err)
					}
				}
			}
		}
	}
	// The bfloat16 arithmetic path's own tiles (where the CPU has it; the
	// conversion path runs these sizes elsewhere).
	bq, bk := DefaultBF16Tiles()
	for _, n := range [][2]int{{bq - 1, bk + 1}, {bq + 1, bk - 1}} {
		for _, causal := range []bool{false, true} {
			p := backend.Problem{B: 1, H: 2, KVHeads: 1, Nq: n[0], Nk: n[1], D: 64, Dv: 64, Causal: causal}
			c := backendtest.RandomCase(rng, p, nil, nil)
			if err := runHalf(be, c, backendtest.Same(backend.BFloat16), false); err != nil {
				t.Fatalf("%v, bfloat16 tiles %d×%d: %v", c, bq, bk, err)
			}
		}
	}
}

// TestHalfSaturate: a float16 O of float32 V beyond 65504 holds ±65504
// (0x7bff, 0xfbff), never ±Inf, on both paths.
func TestHalfSaturate(t *testing.T) {
	be := newBackend(t)
	p := backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 2, Nk: 3, D: 2, Dv: 2, Scale: 1}
	q, _ := upload(be, []float32{1, 0, 0, 1})
	k, _ := upload(be, []float32{1, 0, 0, 1, 1, 1})
	v, _ := upload(be, []float32{1e5, -7e4, 1e5, -7e4, 1e5, -7e4})
	for _, staged := range []bool{false, true} {
		o, err := be.Alloc(backend.Float16, 4)
		if err != nil {
			t.Fatal(err)
		}
		if staged {
			s, _ := be.Alloc(backend.Float32, p.ScoresLen())
			ctx := context.Background()
			if err := be.Scores(ctx, backend.ScoresParams{Problem: p}, q, k, s); err != nil {
				t.Fatal(err)
			}
			if err := be.Softmax(ctx, backend.SoftmaxParams{Problem: p}, s); err != nil {
				t.Fatal(err)
			}
			if err := be.Context(ctx, backend.ContextParams{Problem: p}, s, v, o); err != nil {
				t.Fatal(err)
			}
		} else if err := be.Fused(context.Background(), backend.FusedParams{Problem: p}, q, k, v, o, nil); err != nil {
			t.Fatal(err)
		}
		bits := make([]uint16, 4)
		be.ReadBits(bits, o, 0)
		for i, want := range []uint16{0x7bff, 0xfbff, 0x7bff, 0xfbff} {
			if bits[i] != want {
				t.Errorf("staged %v: O[%d] = %#04x (%v), want %#04x", staged, i, bits[i], backend.Float16.Decode(bits[i]), want)
			}
		}
	}
}
