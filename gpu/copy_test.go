//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/gpu"
)

// rowRanges are rows ranges of n elements: destination row i at
// i·dstPitch, source row perm(i) at its multiple of srcPitch (plus
// srcOff), perm a fixed shuffle where shuffle is set (a gather reading
// its rows out of order) and i otherwise.
func rowRanges(rows, n, dstPitch, srcPitch, srcOff int, shuffle bool) []backend.CopyRange {
	perm := rand.New(rand.NewPCG(7, uint64(rows))).Perm(rows)
	r := make([]backend.CopyRange, rows)
	for i := range r {
		from := i
		if shuffle {
			from = perm[i]
		}
		r[i] = backend.CopyRange{Dst: i * dstPitch, Src: from*srcPitch + srcOff, N: n}
	}
	return r
}

// scatterRanges are shuffled rowRanges with the roles swapped: source
// rows in order, destination rows shuffled.
func scatterRanges(rows, n, dstPitch, srcPitch int) []backend.CopyRange {
	r := rowRanges(rows, n, srcPitch, dstPitch, 0, true)
	for i := range r {
		r[i].Dst, r[i].Src = r[i].Src, r[i].Dst
	}
	return r
}

// randomRanges are count ranges of 0 to most elements anywhere in
// buffers of dstLen and srcLen elements: their destinations overlap.
func randomRanges(seed uint64, count, most, dstLen, srcLen int) []backend.CopyRange {
	rng := rand.New(rand.NewPCG(seed, 3))
	r := make([]backend.CopyRange, count)
	for i := range r {
		n := rng.IntN(most + 1)
		r[i] = backend.CopyRange{Dst: rng.IntN(dstLen - n + 1), Src: rng.IntN(srcLen - n + 1), N: n}
	}
	return r
}

// overlapF32 and overlapF16 are ranges whose destinations overlap, some
// of no elements.
var (
	overlapF32 = randomRanges(1, 300, 16, 1000, 1000)
	overlapF16 = randomRanges(2, 200, 21, 501, 333)
)

// nonEmpty is how many of ranges have elements: the dispatches of a
// call that runs each in its own.
func nonEmpty(ranges []backend.CopyRange) int {
	n := 0
	for _, r := range ranges {
		if r.N > 0 {
			n++
		}
	}
	return n
}

// copyManyCases are Copy's calls of many ranges: the rows of a gather
// and a scatter in every dtype pair (thousands of them, tables split at
// copyTable entries), rows of odd lengths packed into a half buffer (each
// pair sharing a word, in two dispatches), overlapping destinations (a
// dispatch a range, the later winning), ranges of no elements, ranges at
// both ends of both buffers, large ranges beside small ones, and tables
// cut by a storage binding shrunk to bind bytes. least and most bound the
// dispatches the call records: a dispatch a range would be len(ranges).
var copyManyCases = []struct {
	name           string
	dst, src       backend.DType
	dstLen, srcLen int
	ranges         []backend.CopyRange
	bind           uint64 // ShrinkBinding's bytes, where not 0
	least, most    int
}{
	{"gather f32 from f32", backend.Float32, backend.Float32, 2048 * 80, 2048 * 64, rowRanges(2048, 64, 80, 64, 0, true), 0, 2, 2},
	{"scatter f32 from f16", backend.Float32, backend.Float16, 1024 * 136, 1024 * 128, scatterRanges(1024, 128, 136, 128), 0, 1, 1},
	{"gather f16 from f32, odd rows packed", backend.Float16, backend.Float32, 1024 * 127, 1024*131 + 3, rowRanges(1024, 127, 127, 131, 3, true), 0, 2, 2},
	{"gather bf16 from bf16, rows of 5", backend.BFloat16, backend.BFloat16, 3000 * 5, 3000*7 + 1, rowRanges(3000, 5, 5, 7, 1, true), 0, 4, 4},
	{"odd boundaries f16 from bf16", backend.Float16, backend.BFloat16, 64, 64, []backend.CopyRange{
		{Dst: 8, Src: 40, N: 4}, {Dst: 1, Src: 3, N: 1}, {Dst: 2, Src: 9, N: 3}, {Dst: 0, Src: 62, N: 1},
		{Dst: 5, Src: 20, N: 2}, {Dst: 13, Src: 0, N: 1}, {Dst: 7, Src: 33, N: 1}, {Dst: 14, Src: 1, N: 1},
		{Dst: 15, Src: 40, N: 17}, {Dst: 32, Src: 17, N: 2}, {Dst: 35, Src: 11, N: 2}, {Dst: 63, Src: 63, N: 1},
	}, 0, 2, 2},
	{"overlapping f32 from f32", backend.Float32, backend.Float32, 1000, 1000, overlapF32, 0, nonEmpty(overlapF32), nonEmpty(overlapF32)},
	{"overlapping f16 from f16", backend.Float16, backend.Float16, 501, 333, overlapF16, 0, nonEmpty(overlapF16), nonEmpty(overlapF16)},
	{"overlapping once bf16 from f32", backend.BFloat16, backend.Float32, 4096, 4096,
		append(rowRanges(60, 33, 65, 64, 0, true), backend.CopyRange{Dst: 70, Src: 7, N: 9}), 0, 61, 61},
	{"zero-length and ends f32 from bf16", backend.Float32, backend.BFloat16, 1000, 777, []backend.CopyRange{
		{Dst: 0, Src: 777 - 7, N: 7}, {Dst: 1000, Src: 777, N: 0}, {Dst: 3, Src: 3, N: 0}, {Dst: 1000 - 9, Src: 0, N: 9},
		{Dst: 0, Src: 0, N: 0}, {Dst: 100, Src: 50, N: 64}, {Dst: 164, Src: 777, N: 0},
	}, 0, 1, 1},
	{"zero-length and ends f16 from f32", backend.Float16, backend.Float32, 1001, 999, []backend.CopyRange{
		{Dst: 1000, Src: 998, N: 1}, {Dst: 0, Src: 998, N: 1}, {Dst: 1, Src: 0, N: 5}, {Dst: 1001, Src: 999, N: 0},
		{Dst: 500, Src: 0, N: 0}, {Dst: 990, Src: 900, N: 10}, {Dst: 6, Src: 999, N: 0},
	}, 0, 2, 2},
	{"large and small f16 from f32", backend.Float16, backend.Float32, 9000, 9000, []backend.CopyRange{
		{Dst: 1, Src: 17, N: 5000}, {Dst: 5001, Src: 3, N: 3}, {Dst: 0, Src: 8000, N: 1},
		{Dst: 6000, Src: 5100, N: 2500}, {Dst: 5004, Src: 8100, N: 200}, {Dst: 8500, Src: 8200, N: 499},
	}, 0, 3, 3},
	{"large and small f32 from f16", backend.Float32, backend.Float16, 9000, 9000, []backend.CopyRange{
		{Dst: 0, Src: 0, N: 2000}, {Dst: 2000, Src: 4001, N: 3}, {Dst: 3000, Src: 5000, N: 1024}, {Dst: 4100, Src: 7000, N: 1025},
	}, 0, 3, 3},
	{"bind-limited f32 from f32", backend.Float32, backend.Float32, 64 * 40, 64 * 200, rowRanges(64, 32, 40, 200, 0, false), 4096, 4, 32},
}

// CopyMany runs many ranges in few dispatches with Copy's semantics: each
// case of copyManyCases, recorded in a step and run by Backend.Copy,
// leaves its destination as the CPU's Copy leaves it, and records between
// least and most dispatches.
func TestCopyMany(t *testing.T) {
	c, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	g := openGPU(t)
	for ci, tc := range copyManyCases {
		t.Run(tc.name, func(t *testing.T) {
			be := g
			if tc.bind != 0 {
				be = openGPU(t)
				gpu.ShrinkBinding(be, tc.bind)
			}
			if !be.Caps().Half && (tc.dst.Half() || tc.src.Half()) {
				t.Skip("the device stores no half buffers")
			}
			rng := rand.New(rand.NewPCG(11, uint64(ci)))
			srcVals := make([]float32, tc.srcLen)
			for i := range srcVals {
				v := float32((rng.Float64()*2 - 1) * math.Exp2(float64(rng.IntN(20)-10)))
				switch rng.IntN(64) {
				case 0:
					v = 70000 // beyond float16
				case 1:
					v = float32(math.Inf(1 - 2*rng.IntN(2)))
				case 2:
					v = float32(math.NaN())
				}
				srcVals[i] = tc.src.Saturate(v)
			}
			before := make([]float32, tc.dstLen)
			for i := range before {
				before[i] = tc.dst.Saturate(-float32(i%1999) - 0.25)
			}
			// want: the CPU's Copy.
			cdst, csrc := alloc(t, c, tc.dst, tc.dstLen), alloc(t, c, tc.src, tc.srcLen)
			writeVals(t, c, csrc, srcVals)
			writeVals(t, c, cdst, before)
			if err := c.Copy(ctx, cdst, csrc, tc.ranges...); err != nil {
				t.Fatalf("CPU: %v", err)
			}
			want := readVals(t, c, cdst)

			src := alloc(t, be, tc.src, tc.srcLen)
			writeVals(t, be, src, srcVals)
			// Recorded in a step, counting the dispatches.
			dst := alloc(t, be, tc.dst, tc.dstLen)
			writeVals(t, be, dst, before)
			st := be.Record()
			if err := st.Copy(ctx, dst, src, tc.ranges...); err != nil {
				t.Fatalf("Step.Copy: %v", err)
			}
			n := gpu.PendingDispatches(be)
			if err := st.Wait(); err != nil {
				t.Fatalf("Wait: %v", err)
			}
			if n < tc.least || n > tc.most {
				t.Errorf("%d ranges in %d dispatches, want %d to %d", len(tc.ranges), n, tc.least, tc.most)
			}
			checkCopied(t, "Step.Copy", be, readVals(t, be, dst), want)
			// By the backend, waiting.
			dst = alloc(t, be, tc.dst, tc.dstLen)
			writeVals(t, be, dst, before)
			if err := be.Copy(ctx, dst, src, tc.ranges...); err != nil {
				t.Fatalf("Copy: %v", err)
			}
			checkCopied(t, "Copy", be, readVals(t, be, dst), want)
		})
	}
}

// checkCopied compares got, a destination after a Copy on the GPU, with
// want, the CPU's: bit for bit, but NaN for NaN (its payload may change)
// and a float32 subnormal flushed to zero where the device does that.
func checkCopied(t *testing.T, how string, g *gpu.Backend, got, want []float32) {
	t.Helper()
	bad := 0
	for i := range got {
		gv, wv := got[i], want[i]
		switch {
		case math.IsNaN(float64(gv)) && math.IsNaN(float64(wv)):
		case math.Float32bits(gv) == math.Float32bits(wv):
		case g.Caps().FlushesSubnormals && gv == 0 && wv != 0 && math.Abs(float64(wv)) < 0x1p-126:
		default:
			if bad++; bad <= 5 {
				t.Errorf("%s: element %d is %g, the CPU's %g", how, i, gv, wv)
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d elements differ in all", how, bad)
	}
}

func writeVals(t *testing.T, be backend.Backend, b backend.Buffer, x []float32) {
	t.Helper()
	if err := be.Write(b, 0, x); err != nil {
		t.Fatalf("%s: Write(%v): %v", be.Name(), b.DType(), err)
	}
}

func readVals(t *testing.T, be backend.Backend, b backend.Buffer) []float32 {
	t.Helper()
	x := make([]float32, b.Len())
	if err := be.Read(x, b, 0); err != nil {
		t.Fatalf("%s: Read(%v): %v", be.Name(), b.DType(), err)
	}
	return x
}
