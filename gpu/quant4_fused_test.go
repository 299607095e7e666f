//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/gpu"
)

// q4Row is a problem of TestQ4Fused: its K and V (and Q, O) dtypes, and
// an edit of the random data before they are rounded to them.
type q4Row struct {
	p    backend.Problem
	dt   backendtest.DTypes
	note string
	edit func(*backendtest.Case)
	// short marks the rows the README's test command runs (hardwareRow):
	// one of each kernel and of each way q4 rows are read (decoding,
	// prefill, pages, the variants, a padded head dim, MLA's, q4 beside
	// q8, V from K, block masks); CI's hardware-plan step runs them all.
	short bool
}

// q4Rows are Fused's problems with a q4 K or V: every variant the 8-bit
// caches take (backendtest's quantSpecs and vFromKSpecs, in q4):
// decoding, a few queries, prefill, both layouts, GQA, paged and packed,
// the score variants, head dims not whole blocks (rows padded, through
// lower.Fused), V from K (V a view of K's q4 rows, at K's
// pitch), index lists, block masks, Problem.Scales, q4 beside q8, fp8
// and halves, and the values that test the format: zero blocks and
// outliers (a block's scale).
func q4Rows() []q4Row {
	q4 := backendtest.DTypes{K: backend.Q4, V: backend.Q4}
	v := func(p backend.Problem) backend.Problem { p.VFromK = true; return p }
	zeroBlocks := func(c *backendtest.Case) {
		for _, x := range [][]float32{c.K, c.V} {
			for lo := 0; lo+32 <= len(x); lo += 96 {
				clear(x[lo : lo+32])
			}
		}
	}
	outliers := func(c *backendtest.Case) {
		for lo := 0; lo+32 <= len(c.K); lo += 32 {
			c.K[lo+lo/32%32] = 40 * float32(1-2*(lo/32%2))
		}
	}
	variants := kvlens(sinks(alibi(softcap(window(causal(prob(2, 4, 2, 2, 130, 32, 32)), 40, 0), 5)), 0, 1, -1, 3), 130, 77)
	scales := causal(prob(1, 4, 2, 2, 150, 32, 32))
	scales.Scales = &backend.Scales{K: []float32{0.5, 3}, V: []float32{2, 0.25}}
	rng := newRand(79)
	return []q4Row{
		{p: prob(1, 8, 2, 1, 37, 32, 32), dt: q4},
		{p: causal(prob(1, 32, 8, 1, 700, 128, 128)), dt: q4, short: true},
		{p: causal(bnhd(prob(2, 4, 2, 3, 300, 64, 64))), dt: q4},
		{p: causal(prob(1, 4, 4, 67, 67, 32, 96)), dt: q4, short: true},
		{p: bnhd(prob(2, 2, 1, 70, 129, 64, 32)), dt: q4},
		{p: prob(1, 4, 2, 1, 200, 64, 64), note: "zeroblocks", edit: zeroBlocks, dt: q4},
		{p: prob(1, 4, 2, 5, 200, 64, 64), note: "outliers", edit: outliers, dt: q4},
		{p: backendtest.PagedProblem(causal(bnhd(prob(0, 8, 2, 1, 0, 64, 64))), 16, 2, []int{1, 33, 260}, true), dt: q4, short: true},
		{p: backendtest.PagedProblem(causal(prob(0, 4, 2, 2, 0, 32, 32)), 32, 1, []int{70, 40}, false), dt: q4},
		{p: causal(bnhd(prob(1, 8, 2, 1, 1100, 256, 64))), dt: q4},
		{p: variants, dt: q4, short: true},
		{p: scales, dt: q4},
		// Head dims not whole blocks: rows padded to the pitch.
		{p: causal(prob(1, 8, 2, 1, 300, 80, 80)), dt: q4, short: true},
		{p: causal(bnhd(prob(2, 4, 2, 3, 100, 40, 72))), dt: q4},
		{p: prob(1, 4, 4, 40, 70, 112, 40), dt: q4},
		{p: backendtest.PagedProblem(causal(bnhd(prob(0, 8, 2, 1, 0, 72, 112))), 16, 2, []int{1, 33, 100}, true), dt: q4},
		{p: backendtest.PackedProblem(causal(prob(3, 4, 2, 0, 0, 40, 80)), []int{1, 7, 30}, []int{20, 7, 45}), dt: q4},
		{p: causal(prob(1, 16, 1, 1, 70, 576, 512)), dt: q4, short: true},
		// Beside the other dtypes.
		{p: causal(bnhd(prob(1, 8, 2, 2, 90, 80, 72))), dt: backendtest.DTypes{Q: backend.Float16, K: backend.Q4, V: backend.Q8, O: backend.BFloat16}, short: true},
		{p: causal(prob(1, 8, 2, 1, 90, 64, 40)), dt: backendtest.DTypes{K: backend.Float16, V: backend.Q4}},
		{p: causal(prob(2, 4, 4, 40, 90, 32, 32)), dt: backendtest.DTypes{K: backend.FP8, V: backend.Q4}},
		// V from K: V's rows K's first Dv columns, read at K's pitch.
		{p: v(causal(prob(1, 16, 1, 1, 300, 96, 64))), dt: q4, short: true},
		{p: v(causal(bnhd(prob(2, 8, 2, 3, 70, 64, 32)))), dt: q4},
		{p: v(backendtest.PagedProblem(causal(prob(0, 16, 1, 1, 0, 96, 64)), 16, 2, []int{1, 40, 130}, true)), dt: q4},
		{p: v(causal(prob(1, 16, 1, 1, 100, 80, 40))), dt: q4},
		{p: v(backendtest.PagedProblem(causal(bnhd(prob(0, 8, 2, 2, 0, 72, 72))), 16, 2, []int{1, 50}, true)), dt: q4},
		// Index lists (lowered to one-key pages) and block masks.
		{p: backendtest.WithIndices(rng, backendtest.PagedProblem(causal(prob(0, 8, 2, 1, 0, 64, 64)), 16, 2, []int{40, 130}, false), 2, 24), dt: q4},
		{p: backendtest.WithIndices(rng, causal(prob(2, 4, 2, 3, 90, 80, 40)), 1, 16), dt: q4},
		{p: backendtest.WithBlocks(rng, causal(prob(1, 4, 2, 64, 128, 64, 64)), 16, 0.5, true), dt: q4, short: true},
	}
}

// TestQ4Fused runs q4Rows through Fused under the hardware plan
// (fuseddecode.wgsl, fusedtile.wgsl, fusedloop.wgsl), against the
// float64 reference over the values the q4 buffers hold
// (backendtest.RunFused: within backendtest.Tol). The CPU plan's q4
// kernels (fused.wgsl, fusedloop.wgsl) are the conformance suite's
// (its Quant4 section, gpu/conformance): running q4Rows under it too
// would add as much again of lavapipe's compiling from a cold shader
// cache. The README's test command runs the rows marked short, CI's
// hardware-plan step all of them.
func TestQ4Fused(t *testing.T) {
	ctx := context.Background()
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	g := openGPU(t)
	for n, row := range q4Rows() {
		name := caseName(row.p, nil, nil) + "_" + row.dt.String()
		if row.note != "" {
			name += "_" + row.note
		}
		t.Run(name, func(t *testing.T) {
			hardwareRow(t, row.short)
			if gpu.PlanLoops(g, row.p) > gpu.LoopBudget {
				t.Skip("past lavapipe's loop cap under the hardware plan")
			}
			c := backendtest.RandomCase(newRand(uint64(7900+n)), row.p, nil, nil)
			if row.edit != nil {
				row.edit(&c)
			}
			c = c.WithDTypes(row.dt)
			if err := backendtest.RunFused(ctx, g, c, n%2 == 0); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestQ4DecodeAccuracy holds the GPU's q4 decoding to the bound of the
// GPU's 8-bit one (kernels' quantBoundWide, 10⁻⁵ of an output row's
// largest magnitude) against the float64 reference over the values the
// cache stores (the dequantized q4), in kernels' TestQuantDecodeAccuracy
// shapes: two sequences of a page pool (1500 and 777 keys, pages of
// 16), 8 query heads over 2 KV heads, D = 64 and 128, K with two
// outlier channels (×8), queries at three scales (1, 4 and 10 times a
// unit normal). Under the adapter's plan, and under the hardware plan
// (lanedecode.wgsl where the device has subgroups, which reads a lane's
// part of a block), in q8, fp8 and q4.
func TestQ4DecodeAccuracy(t *testing.T) {
	for _, pl := range []string{"", "hardware"} {
		for _, dt := range []backend.DType{backend.Q8, backend.FP8, backend.Q4} {
			if pl == "" && dt != backend.Q4 {
				continue // kernels' TestQuantDecodeAccuracy holds the 8-bit ones there
			}
			t.Run(fmt.Sprintf("plan=%s/%v", pl, dt), func(t *testing.T) {
				t.Setenv("ATTN_GPU_PLAN", pl)
				quantDecodeAccuracy(t, dt)
			})
		}
	}
}

func quantDecodeAccuracy(t *testing.T, dt backend.DType) {
	const bound = 1e-5
	g := openGPU(t)
	ctx := context.Background()
	for _, d := range []int{64, 128} {
		p := backendtest.PagedProblem(bnhd(prob(0, 8, 2, 1, 0, d, d)), 16, 2, []int{1500, 777}, false)
		rng := newRand(uint64(101 + d))
		c := backendtest.RandomCase(rng, p, nil, nil)
		for i := range c.K {
			c.K[i] = float32(rng.NormFloat64())
			if ch := i % d; ch == 3 || ch == d/2+1 {
				c.K[i] *= 8 // outlier channels
			}
			c.V[i] = float32(rng.NormFloat64())
		}
		var worsts string
		for _, qs := range []float64{1, 4, 10} {
			for i := range c.Q {
				c.Q[i] = float32(qs * rng.NormFloat64())
			}
			cs := c.WithDTypes(backendtest.DTypes{K: dt, V: dt})
			want := backendtest.Reference(cs).O
			q, o := f32Buf(t, g, cs.Q), f32Buf(t, g, make([]float32, len(want)))
			k, v := alloc(t, g, dt, len(cs.K)), alloc(t, g, dt, len(cs.V))
			if err := g.Write(k, 0, cs.K); err != nil {
				t.Fatal(err)
			}
			if err := g.Write(v, 0, cs.V); err != nil {
				t.Fatal(err)
			}
			if err := g.Fused(ctx, backend.FusedParams{Problem: cs.Problem}, q, k, v, o, nil); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(want))
			if err := g.Read(got, o, 0); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for r := 0; r < len(want); r += d {
				// Go's max carries a row's NaN into worst.
				worst = max(worst, backendtest.RowError(got[r:r+d], want[r:r+d]))
			}
			if backendtest.Exceeds(worst, bound) {
				t.Errorf("%v D=%d query scale %g: an output off by %.3g of its row's largest, past the bound %g", dt, d, qs, worst, bound)
			}
			worsts += fmt.Sprintf(" %.2g", worst)
		}
		t.Logf("%v D=%d, %s: worst error at query scales 1, 4, 10:%s of a row's largest (bound %g)", dt, d, gpu.FusedKernel(g, c.Problem), worsts, bound)
	}
}
