//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/gpu/internal/shaders"
	"github.com/attn-go/attn/kernels"
)

// This file tests what the half dtypes add to the GPU backend, beside the
// conformance suite's half cases (backendtest: buffers, dtype covers,
// saturation, exact cases): the half matrix over the GPU's own paths
// (fused.wgsl's vec4 loaders, odd head dims, fusedloop.wgsl, merged key
// chunks, both plans); every half bit pattern through every loader;
// pack.wgsl's rounding on every boundary; saturation bit for bit; and
// buffers at every odd offset and length.
//
// The matrix is judged by backendtest's runners against the float64
// reference on the operands rounded to their dtypes (Case.WithDTypes):
// scores, weights and LSE within Tol, O within backendtest.Allowed for
// its dtype (Tol plus half an ulp of O's dtype at O's magnitude: O's own
// rounding after float32 arithmetic).

// Dtype mixes beside all-f16 and all-bf16: each dtype on each operand
// among them.
var (
	allF16  = backendtest.Same(backend.Float16)
	allBF16 = backendtest.Same(backend.BFloat16)
	mixA    = backendtest.DTypes{Q: backend.Float16, K: backend.BFloat16, V: backend.Float32, O: backend.Float16, Bias: backend.BFloat16}
	mixB    = backendtest.DTypes{Q: backend.BFloat16, K: backend.Float16, V: backend.BFloat16, O: backend.Float32, Bias: backend.Float16}
	mixC    = backendtest.DTypes{Q: backend.Float32, K: backend.Float32, V: backend.Float16, O: backend.BFloat16, Bias: backend.Float32}
	mixD    = backendtest.DTypes{Q: backend.Float16, K: backend.Float32, V: backend.BFloat16, O: backend.BFloat16, Bias: backend.Float16}
)

// halfRow is one problem of the half parity matrix and the dtype mixes it
// runs with.
type halfRow struct {
	p          backend.Problem
	bias, keep *[4]int
	mixes      []backendtest.DTypes
	short      bool
}

var halfRows = []halfRow{
	// fused.wgsl's vec4 loaders (k_at4, v_at4: four halves a load).
	{p: causal(prob(1, 2, 2, 65, 129, 64, 64)), mixes: []backendtest.DTypes{allF16, allBF16}, short: true},
	// Odd head dims (scalar loaders), GQA, BNHD, a bias with −Inf
	// broadcast over heads; odd Dv, so rows of a half O share words.
	{p: bnhd(prob(1, 4, 2, 33, 47, 5, 7)), bias: shape(1, 1, 33, 47), mixes: []backendtest.DTypes{mixA, mixB}, short: true},
	// An odd number of O elements in all (3·3·1 = 9), and Nq ≠ Nk.
	{p: prob(1, 1, 1, 3, 5, 3, 3), mixes: []backendtest.DTypes{allF16, mixD}},
	// Fused key chunks that merge in the float32 scratch before the pack.
	{p: prob(1, 2, 1, 3, 5000, 16, 16), mixes: []backendtest.DTypes{mixC, allBF16}},
	// fusedloop.wgsl (heads too wide to unroll), Dv ≠ D, a bias.
	{p: causal(prob(1, 2, 2, 64, 100, 256, 200)), bias: shape(1, 2, 64, 100), mixes: []backendtest.DTypes{allF16, mixA}},
	// Every variant at once, with a bias, a keep-mask, GQA and BNHD.
	{p: kvlens(sinks(alibi(softcap(window(causal(bnhd(prob(2, 4, 2, 67, 130, 24, 40))), 40, 0), 5)), 0, 1, -1, 3), 130, 90),
		bias: shape(2, 1, 67, 130), keep: shape(1, 4, 1, 130), mixes: []backendtest.DTypes{mixB, mixD}, short: true},
}

// TestParityHalf runs the half matrix through both strategies, under the
// adapter's plan and the hardware plan, against the float64 reference
// (backendtest.RunFused and RunStaged).
func TestParityHalf(t *testing.T) {
	ctx := context.Background()
	for _, plan := range runPlans("auto", "hardware") {
		t.Run("plan="+plan, func(t *testing.T) {
			t.Setenv("ATTN_GPU_PLAN", plan)
			g := openGPU(t)
			for n, row := range halfRows {
				if gpu.PlanLoops(g, row.p) > gpu.LoopBudget {
					continue // past lavapipe's loop cap under the hardware plan
				}
				t.Run(caseName(row.p, row.bias, row.keep), func(t *testing.T) {
					if testing.Short() && !row.short {
						t.Skip("-short runs only the rows marked short")
					}
					raw := backendtest.RandomCase(newRand(uint64(1000+n)), row.p, row.bias, row.keep)
					for _, dt := range row.mixes {
						c := raw.WithDTypes(dt)
						t.Run(dt.String(), func(t *testing.T) {
							if err := backendtest.RunFused(ctx, g, c, true); err != nil {
								t.Error(err)
							}
							if err := backendtest.RunStaged(ctx, g, c, true); err != nil {
								t.Error(err)
							}
						})
					}
				})
			}
		})
	}
}

// TestHalfSaturate checks that an O stored as float16 holds ±65504, not
// an infinity, where the float32 result is beyond float16's range: V's
// float32 values of 10⁵ and −7·10⁴ (every key alike, so each output is
// that value). And bfloat16's largest finite value for a float32 beyond
// it, with one key (more would overflow float32 itself).
func TestHalfSaturate(t *testing.T) {
	g := openGPU(t)
	for _, tc := range []struct {
		ot     backend.DType
		nk     int
		v0, v1 float32
	}{
		{backend.Float16, 70, 1e5, -7e4},
		{backend.BFloat16, 1, 3.4e38, -3.4e38},
	} {
		p := prob(1, 2, 2, 5, tc.nk, 8, 9)
		c := backendtest.RandomCase(newRand(7), p, nil, nil)
		for x := range c.V {
			c.V[x] = tc.v0
			if x%9%2 == 1 { // V's column x%9
				c.V[x] = tc.v1
			}
		}
		c.DTypes = backendtest.DTypes{O: tc.ot}
		for _, s := range []kernels.Strategy{kernels.Fused, kernels.Staged} {
			got, err := run(context.Background(), g, c, s, false)
			if err != nil {
				t.Fatal(err)
			}
			m := tc.ot.MaxFinite()
			for x, v := range got.O {
				// O's rows are Dv = 9 long, V's too: element x of O has
				// V's column x%9, whose parity picks the sign.
				want := m
				if x%9%2 == 1 {
					want = -m
				}
				if v != want {
					t.Errorf("%v, O %v: element %d is %g, want %g", s, tc.ot, x, v, want)
					break
				}
			}
		}
	}
}

// tally counts a test's wrong values, reporting the first few of them and
// then how many there were in all.
type tally struct {
	t    *testing.T
	what string
	bad  int
}

func (c *tally) wrong(format string, args ...any) {
	c.t.Helper()
	if c.bad++; c.bad <= 3 {
		c.t.Errorf(c.what+": "+format, args...)
	}
}

func (c *tally) done(n int) {
	c.t.Helper()
	if c.bad > 3 {
		c.t.Errorf("%s: %d of %d values wrong", c.what, c.bad, n)
	}
}

// finiteHalves lists every finite value of half dtype t, as bits.
func finiteHalves(t backend.DType) []uint16 {
	var out []uint16
	for h := range 1 << 16 {
		if x := t.Decode(uint16(h)); !math.IsInf(float64(x), 0) && x == x {
			out = append(out, uint16(h))
		}
	}
	return out
}

// ftzOK says whether got may stand for want on a device that flushes
// float32 subnormals in arithmetic: want is a float32 subnormal (or
// zero) and got is zero.
func ftzOK(got, want float32) bool {
	return got == 0 && math.Abs(float64(want)) < 0x1p-126
}

// halfBuf allocates a half buffer of be and writes bits into it.
func halfBuf(t *testing.T, be backend.Backend, dt backend.DType, bits []uint16) backend.Buffer {
	t.Helper()
	b, err := be.Alloc(dt, len(bits))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Release)
	if err := be.WriteBits(b, 0, bits); err != nil {
		t.Fatal(err)
	}
	return b
}

// f32Buf allocates a float32 buffer of be holding x.
func f32Buf(t testing.TB, be backend.Backend, x []float32) backend.Buffer {
	t.Helper()
	b, err := be.Alloc(backend.Float32, len(x))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Release)
	if err := be.Write(b, 0, x); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHalfWiden checks the kernels' loaders on every finite value of
// both half dtypes, each read where an op passes it through exactly:
// q_at, k_at and bias_at by Scores with D = 1 (S = 1·q·k, or 0 + bias),
// v_at by Context with one key of weight 1, and fused.wgsl's k_at4 and
// v_at4 by Fused with D = Dv = 4 and one key a head (O = V, and
// LSE = q·k with q a unit vector). Each must equal DType.Decode (a
// bfloat16 subnormal may read as 0 where the device flushes float32
// subnormals; a float16 subnormal is a normal float32 and may not).
func TestHalfWiden(t *testing.T) {
	g := openGPU(t)
	ctx := context.Background()
	for _, dt := range []backend.DType{backend.Float16, backend.BFloat16} {
		bits := finiteHalves(dt)
		for len(bits)%4 != 0 {
			bits = append(bits, 0)
		}
		n := len(bits)
		hb := halfBuf(t, g, dt, bits)
		check := func(what string, got []float32) {
			t.Helper()
			c := tally{t: t, what: dt.String() + " " + what}
			for i, h := range bits {
				if want := dt.Decode(h); got[i] != want && !ftzOK(got[i], want) {
					c.wrong("%#04x reads as %g, want %g", h, got[i], want)
				}
			}
			c.done(n)
		}
		one, zero, zeros := f32Buf(t, g, []float32{1}), f32Buf(t, g, []float32{0}), f32Buf(t, g, make([]float32, n))
		s := f32Buf(t, g, make([]float32, n))
		read := func(b backend.Buffer, n int) []float32 {
			x := make([]float32, n)
			if err := g.Read(x, b, 0); err != nil {
				t.Fatal(err)
			}
			return x
		}
		// q_at: Nq = n queries of one element against K = [1].
		p := backend.Problem{B: 1, H: 1, Nq: n, Nk: 1, D: 1, Dv: 1, Scale: 1}
		if err := g.Scores(ctx, backend.ScoresParams{Problem: p}, hb, one, s); err != nil {
			t.Fatal(err)
		}
		check("q_at", read(s, n))
		// k_at: Q = [1] against Nk = n keys.
		p = backend.Problem{B: 1, H: 1, Nq: 1, Nk: n, D: 1, Dv: 1, Scale: 1}
		if err := g.Scores(ctx, backend.ScoresParams{Problem: p}, one, hb, s); err != nil {
			t.Fatal(err)
		}
		check("k_at", read(s, n))
		// bias_at: 0·0 + bias.
		bias := &backend.Mask{Buf: hb, Shape: [4]int{1, 1, 1, n}}
		if err := g.Scores(ctx, backend.ScoresParams{Problem: p, Bias: bias}, zero, zeros, s); err != nil {
			t.Fatal(err)
		}
		check("bias_at", read(s, n))
		// v_at: one key of weight 1, Dv = n.
		p = backend.Problem{B: 1, H: 1, Nq: 1, Nk: 1, D: 1, Dv: n}
		o := f32Buf(t, g, make([]float32, n))
		if err := g.Context(ctx, backend.ContextParams{Problem: p}, one, hb, o); err != nil {
			t.Fatal(err)
		}
		check("v_at", read(o, n))
		// k_at4, v_at4: n/4 heads of one query and one key, D = Dv = 4.
		p = backend.Problem{B: 1, H: n / 4, Nq: 1, Nk: 1, D: 4, Dv: 4, Scale: 1}
		lse := f32Buf(t, g, make([]float32, n/4))
		for c := range 4 {
			q := make([]float32, n)
			for h := range n / 4 {
				q[4*h+c] = 1
			}
			if err := g.Fused(ctx, backend.FusedParams{Problem: p}, f32Buf(t, g, q), hb, hb, o, lse); err != nil {
				t.Fatal(err)
			}
			if c == 0 {
				check("v_at4", read(o, n))
			}
			l := read(lse, n/4)
			ct := tally{t: t, what: fmt.Sprintf("%v k_at4 component %d", dt, c)}
			for h, v := range l {
				if want := dt.Decode(bits[4*h+c]); v != want && !ftzOK(v, want) {
					ct.wrong("%#04x reads as %g, want %g", bits[4*h+c], v, want)
				}
			}
			ct.done(n / 4)
		}
	}
}

// narrowInputs are the float32 values pack.wgsl is checked on for half
// dtype t: every finite value of t, the midpoints between neighbours
// (ties, both ways to even) and the float32s either side of them, both
// signs; the overflow thresholds; infinities; float32 subnormals; and
// random patterns.
func narrowInputs(t backend.DType) []float32 {
	var out []float32
	add := func(x float32) { out = append(out, x, -x) }
	for _, h := range finiteHalves(t) {
		if h&0x8000 != 0 {
			continue
		}
		x := t.Decode(h)
		add(x)
		if next := t.Decode(h + 1); !math.IsInf(float64(next), 0) || t == backend.Float16 {
			mid := float32((float64(x) + float64(next)) / 2)
			if math.IsInf(float64(next), 0) {
				mid = x + (x-t.Decode(h-1))/2
			}
			add(mid)
			add(math.Nextafter32(mid, 0))
			add(math.Nextafter32(mid, float32(math.Inf(1))))
		}
	}
	for _, x := range []float32{65504, 65519, 65519.996, 65520, 65536, 1e5, 3.3895314e38, 3.396e38, math.Float32frombits(0x7f7f7fff),
		math.Float32frombits(0x7f7f8000), math.MaxFloat32, float32(math.Inf(1)), 0x1p-149, 0x1p-130, 0x1.fffffcp-127, 0x1p-25, 0x1p-24, 0x1.8p-25} {
		add(x)
	}
	rng := newRand(99)
	for range 1 << 18 {
		x := math.Float32frombits(rng.Uint32())
		if x == x {
			out = append(out, x)
		}
	}
	return out
}

// TestHalfNarrow checks pack.wgsl, which stores every half O: Context
// with one key of weight 1 and V the float32 inputs (so O's float32
// value is each input) into a half O, whose bits must be those of
// DType.Saturate (Encode to nearest even, a finite value beyond the
// range ±MaxFinite); a float32 subnormal or a zero may come out as ±0
// (the device may flush it, and 0 + −0 is +0). The O buffer is an odd
// number of elements longer than the op's output, and its elements past
// the output must keep their bits.
func TestHalfNarrow(t *testing.T) {
	g := openGPU(t)
	ctx := context.Background()
	for _, dt := range []backend.DType{backend.Float16, backend.BFloat16} {
		in := narrowInputs(dt)
		if len(in)%2 == 0 {
			in = in[:len(in)-1] // an odd count: the last word is shared with the padding
		}
		n := len(in)
		pad := []uint16{0x1234, 0x5678, 0x9abc}
		o, err := g.Alloc(dt, n+len(pad))
		if err != nil {
			t.Fatal(err)
		}
		defer o.Release()
		if err := g.WriteBits(o, n, pad); err != nil {
			t.Fatal(err)
		}
		p := backend.Problem{B: 1, H: 1, Nq: 1, Nk: 1, D: 1, Dv: n}
		if err := g.Context(ctx, backend.ContextParams{Problem: p}, f32Buf(t, g, []float32{1}), f32Buf(t, g, in), o); err != nil {
			t.Fatal(err)
		}
		got := make([]uint16, n+len(pad))
		if err := g.ReadBits(got, o, 0); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[n:], pad) {
			t.Errorf("%v: the elements past O are %#04x, want %#04x", dt, got[n:], pad)
		}
		c := tally{t: t, what: dt.String()}
		for i, x := range in {
			want := dt.Encode(dt.Saturate(x))
			if h := got[i]; h != want && !(h&0x7fff == 0 && math.Abs(float64(x)) < 0x1p-126) {
				c.wrong("%g (%#08x) stored as %#04x, want %#04x", x, math.Float32bits(x), h, want)
			}
		}
		c.done(n)
	}
}

// TestHalfBuffers checks half buffers on their own: Len, Alloc's sizes,
// Write rounding to nearest even (DType.Encode) and Read widening
// exactly, WriteBits and ReadBits at every offset and length within
// buffers of odd and even lengths with the neighbours of the range kept,
// CheckFits refusing an overflow without writing anything, and the bits
// calls refusing a Float32 buffer.
func TestHalfBuffers(t *testing.T) {
	g := openGPU(t)
	rng := newRand(5)
	for _, dt := range []backend.DType{backend.Float16, backend.BFloat16} {
		for _, n := range []int{0, 1, 2, 3, 5, 8, 17} {
			b, err := g.Alloc(dt, n)
			if err != nil {
				t.Fatal(err)
			}
			if b.Len() != n || b.DType() != dt {
				t.Errorf("Alloc(%v, %d): Len %d, DType %v", dt, n, b.Len(), b.DType())
			}
			model := make([]uint16, n)
			for off := 0; off <= n; off++ {
				for m := 0; off+m <= n; m++ {
					bits := make([]uint16, m)
					for i := range bits {
						bits[i] = uint16(rng.Uint32())
					}
					if err := g.WriteBits(b, off, bits); err != nil {
						t.Fatalf("%v n=%d: WriteBits(off %d, %d): %v", dt, n, off, m, err)
					}
					copy(model[off:], bits)
					got := make([]uint16, n)
					if err := g.ReadBits(got, b, 0); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, model) {
						t.Fatalf("%v n=%d: after WriteBits(off %d, %d): %#04x, want %#04x", dt, n, off, m, got, model)
					}
					part := make([]uint16, m)
					if err := g.ReadBits(part, b, off); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(part, bits) {
						t.Fatalf("%v n=%d: ReadBits(off %d, %d) = %#04x, want %#04x", dt, n, off, m, part, bits)
					}
				}
			}
			// Write rounds, Read widens; at an odd offset and length.
			if n >= 5 {
				vals := []float32{1.0009766, -3.1415927, 0x1p-20, 65504}
				if dt == backend.BFloat16 {
					vals[3] = 3e38
				}
				if err := g.Write(b, 1, vals[:3]); err != nil {
					t.Fatal(err)
				}
				if err := g.Write(b, 4, vals[3:]); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, 4)
				if err := g.Read(got[:3], b, 1); err != nil {
					t.Fatal(err)
				}
				if err := g.Read(got[3:], b, 4); err != nil {
					t.Fatal(err)
				}
				bits := make([]uint16, 4)
				if err := g.ReadBits(bits, b, 1); err != nil {
					t.Fatal(err)
				}
				for i, v := range vals {
					if want := dt.Round(v); got[i] != want || bits[i] != dt.Encode(v) {
						t.Errorf("%v: Write %g then Read: %g (bits %#04x), want %g (%#04x)", dt, v, got[i], bits[i], want, dt.Encode(v))
					}
				}
				// An overflow is refused and writes nothing.
				before := make([]uint16, n)
				if err := g.ReadBits(before, b, 0); err != nil {
					t.Fatal(err)
				}
				big := []float32{1, float32(dt.MaxFinite()) * 1.01}
				if dt == backend.BFloat16 {
					big[1] = math.MaxFloat32
				}
				if err := g.Write(b, 1, big); !errors.Is(err, backend.ErrNonFinite) {
					t.Errorf("%v: Write of %g: %v, want ErrNonFinite", dt, big[1], err)
				}
				after := make([]uint16, n)
				if err := g.ReadBits(after, b, 0); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(before, after) {
					t.Errorf("%v: a refused Write changed the buffer: %#04x, then %#04x", dt, before, after)
				}
			}
			// Out of range.
			if err := g.WriteBits(b, n, []uint16{1}); !errors.Is(err, backend.ErrShape) {
				t.Errorf("%v n=%d: WriteBits past the end: %v, want ErrShape", dt, n, err)
			}
			if err := g.ReadBits(make([]uint16, 1), b, n); !errors.Is(err, backend.ErrShape) {
				t.Errorf("%v n=%d: ReadBits past the end: %v, want ErrShape", dt, n, err)
			}
			b.Release()
		}
	}
	f, err := g.Alloc(backend.Float32, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	if err := g.WriteBits(f, 0, []uint16{1}); !errors.Is(err, backend.ErrShape) {
		t.Errorf("WriteBits into Float32: %v, want ErrShape", err)
	}
	if err := g.ReadBits(make([]uint16, 1), f, 0); !errors.Is(err, backend.ErrShape) {
		t.Errorf("ReadBits from Float32: %v, want ErrShape", err)
	}
	// Memory counts the stored bytes: 1000 halves take 2000.
	live0, _ := g.Memory()
	h, err := g.Alloc(backend.Float16, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if live, _ := g.Memory(); live-live0 != 2000 {
		t.Errorf("Alloc(Float16, 1000) holds %d bytes, want 2000", live-live0)
	}
	h.Release()
}

// TestParityDecodeWide runs decoding steps over a half K and V read a
// unit a load by fuseddecode.wgsl (decode.lanes=1; the hardware plan's
// decode.wide: a
// vec4, 8 or 16 halves a load; an 8-bit one's units are checked here and
// run by the conformance suite's Quant section) against the float64
// reference: head dims of
// sixteen-half units (128), of eight-half ones only (40, 24: the unit
// capped below the knob), a last tile's units past the split's keys
// (300, 97 and 130 keys: whole tiles of neither 32 nor 64), BNHD rows,
// GQA, f16 and bfloat16.
func TestParityDecodeWide(t *testing.T) {
	ctx := context.Background()
	rows := []struct {
		p    backend.Problem
		dt   backendtest.DTypes
		unit int // LoadUnit's vec4s for K's dtype and head dim
	}{
		{causal(prob(1, 8, 2, 1, 300, 128, 128)), allF16, 4},
		{prob(2, 4, 4, 3, 97, 40, 24), allBF16, 2},
		{bnhd(causal(prob(1, 4, 2, 2, 130, 24, 24))), mixB, 2},
	}
	for _, w := range []struct{ wide, vwide int }{{1, 1}, {2, 2}, {4, 4}, {4, 1}} {
		wide := w.wide
		tune := fmt.Sprintf("decode.wide=%d,decode.vwide=%d,decode.lanes=1", wide, w.vwide)
		t.Run(tune, func(t *testing.T) {
			t.Setenv("ATTN_GPU_PLAN", "hardware")
			t.Setenv("ATTN_GPU_TUNE", tune)
			g := openGPU(t)
			for n, row := range rows {
				name := caseName(row.p, nil, nil)
				s, ok := gpu.FusedSpec(g, row.p).(shaders.FusedDecodeConsts)
				if !ok {
					t.Fatalf("%s runs %T; want fuseddecode.wgsl", name, gpu.FusedSpec(g, row.p))
				}
				s.K = shaders.F16
				if row.dt.K == backend.BFloat16 {
					s.K = shaders.BF16
				}
				if want := min(wide, row.unit); s.KW != wide || s.KUnit() != want {
					t.Errorf("%s: KW %d, a unit of %d vec4s; want %d and %d", name, s.KW, s.KUnit(), wide, want)
				}
				s.V = s.K
				if want := min(w.vwide, shaders.LoadUnit(s.V, row.p.Dv)); s.VUnit() != want {
					t.Errorf("%s: V's unit %d vec4s; want %d", name, s.VUnit(), want)
				}
				// An 8-bit or 4-bit K and V are read a whole unit a load
				// wherever the knob allows more than a vec4.
				for _, e := range []shaders.Elem{shaders.Q8, shaders.Q4, shaders.FP8} {
					q := s
					q.K, q.V = e, e
					want := 1
					if wide > 1 {
						want = shaders.LoadUnit(e, row.p.D)
					}
					if q.KUnit() != want {
						t.Errorf("%s: a %v K's unit %d vec4s; want %d", name, e, q.KUnit(), want)
					}
				}
				c := backendtest.RandomCase(newRand(uint64(2000+n)), row.p, nil, nil).WithDTypes(row.dt)
				t.Run(name, func(t *testing.T) {
					if err := backendtest.RunFused(ctx, g, c, true); err != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}
