package cpu

import (
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// tilesOrSkip fails where the tile kernel does not run on a CPU that
// has AMX's 8-bit tiles (tilesCPU), and skips elsewhere, saying so in
// the test log: CI's machines have no AMX, so the tile tests run on the
// Intel host of a lent GPU (bench/gpu-hw.sh's cpu mode; docs/builds.md
// says when they last ran). ATTN_REQUIRE_AMX=1 makes the skip a failure
// on any CPU, ATTN_REQUIRE_AMX=0 lets an AMX CPU skip (a kernel that
// refuses the tiles to this process).
func tilesOrSkip(t *testing.T, on func() (bool, string)) {
	t.Helper()
	if ok, why := on(); !ok {
		if why == "" {
			why = "no AMX-INT8 or AMX-BF16 beside AVX512-BW, VBMI and BMI2"
		}
		switch req := os.Getenv("ATTN_REQUIRE_AMX"); {
		case req == "1":
			t.Fatalf("ATTN_REQUIRE_AMX=1, but the tile kernel does not run: %q", why)
		case tilesCPU() && req != "0":
			t.Fatalf("this CPU has AMX's tiles, but the tile kernel does not run: %q (ATTN_REQUIRE_AMX=0 skips)", why)
		}
		t.Skipf("SKIP: no AMX tiles on this CPU (%q): the tile kernels' tests run on an AMX host (bench/gpu-hw.sh cpu; docs/builds.md)", why)
	}
}

// TestTileDigits holds tileDigits to its promise without the tiles: the
// digits of every row add back (Σ_g 2⁸ᵍ·x_g times the row's weight) to
// within 2⁻³⁰ of the row's largest, exactly where the element is at least
// 2⁻⁶ of it, and a row that is not finite, or below 2⁻⁹⁶, is refused.
func TestTileDigits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, d := range []int{32, 64, 96, 128, 512} {
		const ldq = 520
		q := make([]float32, 4*ldq)
		for i := range q {
			q[i] = float32(rng.NormFloat64()) * float32(math.Pow(2, float64(rng.IntN(40)-20)))
		}
		for c := range d {
			q[2*ldq+c] = 0 // an all-zero row
		}
		q[3*ldq] = -math.MaxFloat32
		bt := make([]int8, d/backend.Q8Block*tileBlockBytes)
		var w [16]float32
		if !tileDigits(q, ldq, d, bt, &w) {
			t.Fatalf("d=%d: refused finite rows", d)
		}
		for r := range 4 {
			var m float64
			for c := range d {
				m = math.Max(m, math.Abs(float64(q[r*ldq+c])))
			}
			for c := range d {
				at := c/backend.Q8Block*tileBlockBytes + c%backend.Q8Block/4*64 + 16*r + c%4
				var got float64
				for g := range 4 {
					got += float64(bt[at+4*g]) * float64(w[4*r+g])
				}
				x := float64(q[r*ldq+c])
				switch err := math.Abs(got - x); {
				case math.Abs(x) >= m/64 && err != 0:
					t.Fatalf("d=%d row %d col %d: digits give %g for %g", d, r, c, got, x)
				case backendtest.Exceeds(err, m*math.Ldexp(1, -30)):
					t.Fatalf("d=%d row %d col %d: digits give %g for %g, past 2⁻³⁰ of %g", d, r, c, got, x, m)
				}
			}
		}
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
			q[ldq+1] = bad
			if tileDigits(q, ldq, d, bt, &w) {
				t.Fatalf("d=%d: took a row holding %g", d, bad)
			}
			q[ldq+1] = 1
		}
		tiny := make([]float32, 4*ldq)
		tiny[5] = float32(math.Ldexp(1, -100))
		if tileDigits(tiny, ldq, d, bt, &w) {
			t.Fatalf("d=%d: took a row whose largest is 2⁻¹⁰⁰", d)
		}
	}
}

// TestTileKeys holds the decision of which keys go to the tile kernels
// to its rule on every CPU, tiles or not (the kernels' tests run only
// where AMX does): a run of fewer than tileMinKeys keys, or one whose
// head dim or row stride does not fit, goes to the kernels without
// tiles whole; else the tiles take its first whole groups (scores: 16
// keys; P·V: q8's 64, at most axpyTileMaxKeys, fp8's 32).
func TestTileKeys(t *testing.T) {
	for _, c := range []struct {
		dt              backend.DType
		n, d, stride    int
		wantDot, wantPV int
	}{
		{backend.Q8, 0, 128, 128, 0, 0},
		{backend.Q8, 1, 128, 128, 0, 0},
		{backend.Q8, tileMinKeys - 1, 128, 128, 0, 0},
		{backend.Q8, tileMinKeys, 128, 128, 512, 512},
		{backend.Q8, tileMinKeys + 1, 128, 128, 512, 512},
		{backend.Q8, 527, 64, 64, 512, 512},
		{backend.Q8, 528, 96, 96, 528, 0}, // P·V: 96 is not whole 64s
		{backend.Q8, 575, 64, 96, 560, 512},
		{backend.Q8, 576, 128, 128, 576, 576},
		{backend.Q8, 1000, 32, 32, 992, 0},
		{backend.Q8, 1000, 48, 48, 0, 0},   // not whole blocks
		{backend.Q8, 1000, 128, 144, 0, 0}, // rows off a block
		{backend.Q8, 1000, tileMaxD, 512, 992, 960},
		{backend.Q8, 1000, tileMaxD + 32, 544, 0, 0},
		{backend.Q8, 1000, 0, 0, 0, 0},
		{backend.Q8, axpyTileMaxKeys + 100, 64, 64, axpyTileMaxKeys + 96, axpyTileMaxKeys},
		{backend.FP8, tileMinKeys - 1, 128, 128, 0, 0},
		{backend.FP8, 543, 64, 96, 528, 512},
		{backend.FP8, 1000, 128, 130, 992, 992}, // fp8 rows need no block start
		{backend.FP8, 1000, 96, 96, 0, 0},
		{backend.FP8, axpyTileMaxKeys + 100, 64, 64, axpyTileMaxKeys + 96, axpyTileMaxKeys + 96},
		{backend.Q4, 1000, 128, 128, 0, 0}, // q4 has no tile kernel
		{backend.Float16, 1000, 128, 128, 0, 0},
		{backend.Float32, 1000, 128, 128, 0, 0},
	} {
		if got := tileDotKeys(c.dt, c.n, c.d, c.stride); got != c.wantDot {
			t.Errorf("%v n=%d d=%d stride=%d: the scores tiles take %d keys, want %d", c.dt, c.n, c.d, c.stride, got, c.wantDot)
		}
		if got := tileAxpyKeys(c.dt, c.n, c.d, c.stride); got != c.wantPV {
			t.Errorf("%v n=%d dv=%d stride=%d: the P·V tiles take %d keys, want %d", c.dt, c.n, c.d, c.stride, got, c.wantPV)
		}
	}
}

// sameBits says whether a and b hold the same float32 bits.
func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// TestDotTiles compares the q8 tile kernel with float64 scores over the
// dequantized K, within 2⁻²² of Σ_c |q·k| (float32's sums; the f32
// kernels' are within about d·2⁻²⁴ of it) and 2⁻³⁰ of max|q|·Σ_c |k|
// (the digits') a score, for head dims of one block to
// sixteen, odd block counts (the kernel's single block), strides past
// the row, key counts around the group of 16, extreme codes and scales,
// all-zero blocks and rows, and Q spanning 2⁴⁰; keys past the last whole
// group are left to the vector kernels (dotTiles reports how many it
// took), and a run shorter than tileMinKeys is left to them whole.
func TestDotTiles(t *testing.T) {
	tilesOrSkip(t, q8TilesOn)
	if err := checkQ8Tiles(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct{ n, d, stride int }{
		{512, 32, 32}, {513, 32, 64}, {527, 64, 64}, {528, 96, 96}, {544, 128, 128},
		{529, 128, 160}, {576, 160, 160}, {1024, 128, 128}, {520, 256, 288}, {512, 512, 512}, {511, 128, 128},
	} {
		ldq, lds := c.d+3, c.n+5
		q := make([]float32, 4*ldq)
		for i := range q {
			q[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-20)))
		}
		for i := range c.d {
			q[ldq+i] = 0 // row 1 all zero
		}
		x := make([]float32, c.n*c.stride)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		x[0], x[1] = 1e4, -1e4 // one large outlier a block
		for i := range backend.Q8Block {
			x[c.stride+i] = 0 // key 1's first block all zero (scale 0)
		}
		codes := make([]int8, len(x))
		scales := make([]uint16, len(x)/backend.Q8Block)
		backend.QuantizeQ8(codes, scales, x)
		if c.n > 2 {
			scales[2*c.stride/backend.Q8Block] = 0x7bff // 65504
		}
		k := rawRows{store: store{t: backend.Q8, q8: codes, sc: scales}, stride: c.stride}
		s := make([]float32, 4*lds)
		var tl tiles8
		const alpha = 0.125
		got := dotTiles(&tl, 0, q, ldq, k, c.n, c.d, s, lds, alpha)
		if tileDotKeys(k.t, c.n, c.d, c.stride) == 0 {
			// Left whole to the kernels without tiles: their keys and
			// bits (intQ8 keeps q8 off the tiles).
			off := tiles8{intQ8: true}
			sOff := make([]float32, len(s))
			if n := dotTiles(&off, 0, q, ldq, k, c.n, c.d, sOff, lds, alpha); got != n || !sameBits(s, sOff) {
				t.Fatalf("%+v: below the tiles' keys took %d keys, the kernels without tiles %d (the same scores: %v)", c, got, n, sameBits(s, sOff))
			}
			continue
		}
		if want := tileDotKeys(k.t, c.n, c.d, c.stride); got != want {
			t.Fatalf("%+v: took %d keys, want %d", c, got, want)
		}
		for r := range 4 {
			for j := range got {
				var want, mag, qmax, ksum float64
				for i := range c.d {
					kv := float64(codes[j*c.stride+i]) * float64(backend.Float16.Decode(scales[(j*c.stride+i)/backend.Q8Block]))
					want += float64(q[r*ldq+i]) * kv
					mag += math.Abs(float64(q[r*ldq+i]) * kv)
					qmax, ksum = math.Max(qmax, math.Abs(float64(q[r*ldq+i]))), ksum+math.Abs(kv)
				}
				want *= alpha
				bound := alpha * (mag*math.Ldexp(1, -22) + qmax*ksum*math.Ldexp(1, -30))
				if err := math.Abs(float64(s[r*lds+j]) - want); backendtest.Exceeds(err, bound) {
					t.Fatalf("%+v row %d key %d: %g, want %g (error %g of Σ|q·k| %g)", c, r, j, s[r*lds+j], want, err, mag)
				}
			}
		}
	}
}

// TestAxpyTiles compares the q8 P·V tile kernel with float64 sums over
// the dequantized V, within 2⁻²² of Σ_j |p·v| (float32's) and
// 2⁻³⁰·max_j p·max_j d·Σ_j|v codes| (the digits') an output, added to
// what acc held: head dims of one pass to eight, strides past the row,
// key counts around the chunk of 64 and the threshold, weights spanning
// 2⁴⁰ with zeros among them (a masked key's), all-zero blocks, extreme
// codes and scales, and a row of zero weights. A NaN weight leaves the
// call to the vector kernels, unwritten.
func TestAxpyTiles(t *testing.T) {
	tilesOrSkip(t, q8TilesOn)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ n, dv, stride int }{
		{512, 64, 64}, {575, 64, 96}, {576, 128, 128}, {1024, 128, 128}, {640, 192, 224},
		{511, 128, 128}, {512, 512, 512}, {700, 256, 256},
	} {
		ldp, ldacc := c.n+5, c.dv+3
		p := make([]float32, 4*ldp)
		for i := range p {
			if rng.IntN(8) > 0 {
				p[i] = float32(rng.Float64() * math.Pow(2, -float64(rng.IntN(40))))
			}
		}
		for j := range c.n {
			p[2*ldp+j] = 0 // row 2: no weight at all
		}
		x := make([]float32, c.n*c.stride)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		x[0], x[1] = 1e4, -1e4
		for i := range backend.Q8Block {
			x[c.stride+i] = 0
		}
		codes := make([]int8, len(x))
		scales := make([]uint16, len(x)/backend.Q8Block)
		backend.QuantizeQ8(codes, scales, x)
		scales[2*c.stride/backend.Q8Block] = 0x7bff // 65504
		v := rawRows{store: store{t: backend.Q8, q8: codes, sc: scales}, stride: c.stride}
		acc := make([]float32, 4*ldacc)
		for i := range acc {
			acc[i] = float32(rng.NormFloat64())
		}
		before := append([]float32(nil), acc...)
		var tl tiles8
		got := axpyTiles(&tl, p, ldp, v, c.n, c.dv, acc, ldacc)
		if tileAxpyKeys(v.t, c.n, c.dv, c.stride) == 0 {
			off := tiles8{intQ8: true}
			accOff := slices.Clone(before)
			if n := axpyTiles(&off, p, ldp, v, c.n, c.dv, accOff, ldacc); got != n || !sameBits(acc, accOff) {
				t.Fatalf("%+v: below the tiles' keys took %d keys, the kernels without tiles %d (the same sums: %v)", c, got, n, sameBits(acc, accOff))
			}
			continue
		}
		if want := tileAxpyKeys(v.t, c.n, c.dv, c.stride); got != want {
			t.Fatalf("%+v: took %d keys, want %d", c, got, want)
		}
		var dmax float64
		for j := range got {
			for b := range c.dv / backend.Q8Block {
				dmax = math.Max(dmax, float64(backend.Float16.Decode(scales[j*c.stride/backend.Q8Block+b])))
			}
		}
		for r := range 4 {
			var pmax float64
			for j := range got {
				pmax = math.Max(pmax, float64(p[r*ldp+j]))
			}
			for col := range c.dv {
				want, mag, csum := float64(before[r*ldacc+col]), math.Abs(float64(before[r*ldacc+col])), 0.0
				for j := range got {
					code := float64(codes[j*c.stride+col])
					pv := float64(p[r*ldp+j]) * code * float64(backend.Float16.Decode(scales[(j*c.stride+col)/backend.Q8Block]))
					want += pv
					mag += math.Abs(pv)
					csum += math.Abs(code)
				}
				bound := mag*math.Ldexp(1, -22) + pmax*dmax*csum*math.Ldexp(1, -30)
				if err := math.Abs(float64(acc[r*ldacc+col]) - want); backendtest.Exceeds(err, bound) {
					t.Fatalf("%+v row %d col %d: %g, want %g (error %g, bound %g)", c, r, col, acc[r*ldacc+col], want, err, bound)
				}
			}
		}
		if got == 0 {
			continue
		}
		p[ldp+3] = float32(math.NaN())
		copy(acc, before)
		if n := axpyTiles(&tl, p, ldp, v, c.n, c.dv, acc, ldacc); n != 0 {
			t.Fatalf("%+v: took %d keys with a NaN weight", c, n)
		}
		for i := range acc {
			if acc[i] != before[i] {
				t.Fatalf("%+v: wrote acc[%d] with a NaN weight", c, i)
			}
		}
	}
}

// TestDotTilesFP8 compares the fp8 scores kernel on bfloat16 tiles with
// float64 scores over K's E4M3 values, within 2⁻²⁰ of Σ_c |q·k| a score
// (float32's sums on the tile, in an order of its own; without Q's third
// part the error is about 2⁻¹⁷): head dims of one
// to eight 64s, strides past the row, key counts around the group of 16
// and the threshold, every E4M3 byte, Q spanning 2⁴⁰ with a zero row. Q
// not finite, or past bfloat16's range, leaves the call to the vector
// kernels.
func TestDotTilesFP8(t *testing.T) {
	tilesOrSkip(t, fp8TilesOn)
	if err := checkFP8Tiles(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct{ n, d, stride int }{
		{512, 64, 64}, {527, 64, 96}, {544, 128, 128}, {1024, 128, 160}, {520, 256, 256}, {512, 512, 512}, {511, 128, 128},
	} {
		ldq, lds := c.d+3, c.n+5
		q := make([]float32, 4*ldq)
		for i := range q {
			q[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-20)))
		}
		for i := range c.d {
			q[2*ldq+i] = 0
		}
		codes := make([]uint8, c.n*c.stride)
		for i := range codes {
			codes[i] = uint8(rng.IntN(256))
		}
		k := rawRows{store: store{t: backend.FP8, f8: codes}, stride: c.stride}
		s := make([]float32, 4*lds)
		var tl tiles8
		const alpha = 0.125
		got := dotTilesFP8(&tl, 0, q, ldq, k, c.n, c.d, s, lds, alpha)
		if want := tileDotKeys(k.t, c.n, c.d, c.stride); got != want {
			t.Fatalf("%+v: took %d keys, want %d", c, got, want)
		}
		for r := range 4 {
			for j := range got {
				var want, mag float64
				for i := range c.d {
					v := fp8Read(codes[j*c.stride+i])
					want += float64(q[r*ldq+i]) * v
					mag += math.Abs(float64(q[r*ldq+i]) * v)
				}
				want *= alpha
				if err := math.Abs(float64(s[r*lds+j]) - want); backendtest.Exceeds(err, alpha*mag*math.Ldexp(1, -20)) {
					t.Fatalf("%+v row %d key %d: %g, want %g (error %g of Σ|q·k| %g)", c, r, j, s[r*lds+j], want, err, alpha*mag)
				}
			}
		}
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), math.MaxFloat32} {
			q[ldq+1] = bad
			var fresh tiles8
			if n := dotTilesFP8(&fresh, 0, q, ldq, k, c.n, c.d, s, lds, alpha); n != 0 {
				t.Fatalf("%+v: took %d keys with %g in Q", c, n, bad)
			}
		}
	}
}

// TestAxpyTilesFP8 compares the fp8 P·V kernel on bfloat16 tiles with
// float64 sums over V's E4M3 values, within 2⁻²⁰ of Σ_j |p·v| an output
// (float32's sums on the tile; without P's third part the error is
// about 2⁻¹⁷), added to what acc held: head dims of one pass to eight,
// strides past the row, key counts around the chunk of 32 and the
// threshold, every E4M3 byte, weights spanning 2⁴⁰ with zeros among
// them, and a row of zero weights. A NaN or an infinite weight leaves
// the call to the vector kernels, acc unwritten.
func TestAxpyTilesFP8(t *testing.T) {
	tilesOrSkip(t, fp8TilesOn)
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct{ n, dv, stride int }{
		{512, 64, 64}, {543, 64, 96}, {544, 128, 128}, {1024, 128, 160}, {640, 192, 192},
		{511, 128, 128}, {512, 512, 512},
	} {
		ldp, ldacc := c.n+5, c.dv+3
		p := make([]float32, 4*ldp)
		for i := range p {
			if rng.IntN(8) > 0 {
				p[i] = float32(rng.Float64() * math.Pow(2, -float64(rng.IntN(40))))
			}
		}
		for j := range c.n {
			p[2*ldp+j] = 0
		}
		codes := make([]uint8, c.n*c.stride)
		for i := range codes {
			codes[i] = uint8(rng.IntN(256))
		}
		v := rawRows{store: store{t: backend.FP8, f8: codes}, stride: c.stride}
		acc := make([]float32, 4*ldacc)
		for i := range acc {
			acc[i] = float32(rng.NormFloat64())
		}
		before := append([]float32(nil), acc...)
		var tl tiles8
		got := axpyTiles(&tl, p, ldp, v, c.n, c.dv, acc, ldacc)
		if want := tileAxpyKeys(v.t, c.n, c.dv, c.stride); got != want {
			t.Fatalf("%+v: took %d keys, want %d", c, got, want)
		}
		for r := range 4 {
			for col := range c.dv {
				want, mag := float64(before[r*ldacc+col]), math.Abs(float64(before[r*ldacc+col]))
				for j := range got {
					pv := float64(p[r*ldp+j]) * fp8Read(codes[j*c.stride+col])
					want += pv
					mag += math.Abs(pv)
				}
				if err := math.Abs(float64(acc[r*ldacc+col]) - want); backendtest.Exceeds(err, mag*math.Ldexp(1, -20)) {
					t.Fatalf("%+v row %d col %d: %g, want %g (error %g of %g)", c, r, col, acc[r*ldacc+col], want, err, mag)
				}
			}
		}
		if got == 0 {
			continue
		}
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
			p[ldp+3] = bad
			copy(acc, before)
			if n := axpyTiles(&tl, p, ldp, v, c.n, c.dv, acc, ldacc); n != 0 {
				t.Fatalf("%+v: took %d keys with a weight of %g", c, n, bad)
			}
			for i := range acc {
				if acc[i] != before[i] {
					t.Fatalf("%+v: wrote acc[%d] with a weight of %g", c, i, bad)
				}
			}
		}
		p[ldp+3] = 0
	}
}

// TestRawRowsSlice: slice follows the rows' dtype, not which of their
// slices is set: a gathered tile's rawRows carries every dtype's
// scratch (the race detector's run of TestCacheAppendRange once met a
// float32 tile whose halves' scratch was shorter than its rows).
func TestRawRowsSlice(t *testing.T) {
	f := make([]float32, 10*8)
	for i := range f {
		f[i] = float32(i)
	}
	r := rawRows{store: store{t: backend.Float32, f32: f, h: make([]uint16, 4)}, stride: 8}
	s := r.slice(3, 5, 6)
	if len(s.f32) != 4*8+6 || s.f32[0] != 24 || len(s.h) != 4 {
		t.Fatalf("slice(3, 5, 6) of float32 rows: %d values from %g, halves %d", len(s.f32), s.f32[0], len(s.h))
	}
	if e := r.slice(10, 0, 6); len(e.f32) != 0 {
		t.Fatalf("slice(10, 0, 6): %d values, want none", len(e.f32))
	}
}

// The 8-bit kernels' Q, kept by group (groupSlot), on every CPU: each
// of tiles8's digits, parts and the integer scores' digits is made at a
// group's first ask and kept (Q changed since is not read again), a
// group far on extends the buffers and keeps the made ones, a Q that
// cannot stand is nil until reset, and reset makes them again from Q.
func TestGroupSlots(t *testing.T) {
	const d, ldq = 64, 64
	rng := rand.New(rand.NewPCG(2, 5))
	q := make([]float32, 4*ldq)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	var tt tiles8
	type made struct{ digits, parts, ints []byte }
	ask := func(grp int) (m made, ok [3]bool) {
		if bt, w := tt.digits(grp, q, ldq, d); bt != nil && w != nil {
			m.digits, ok[0] = append(m.digits, unsafe.Slice((*byte)(unsafe.Pointer(&bt[0])), len(bt))...), true
		}
		if bf := tt.parts(grp, q, ldq, d); bf != nil {
			m.parts, ok[1] = append(m.parts, unsafe.Slice((*byte)(unsafe.Pointer(&bf[0])), 2*len(bf))...), true
		}
		if x, hb := tt.i8.digits(grp, q, ldq, d, false); x != nil && hb != nil {
			m.ints, ok[2] = append(m.ints, unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), len(x))...), true
		}
		return m, ok
	}
	first, ok := ask(0)
	if ok != [3]bool{true, true, true} {
		t.Fatalf("finite Q: made %v", ok)
	}
	orig := slices.Clone(q)
	for i := range q {
		q[i] *= 3
	}
	if again, _ := ask(0); !reflect.DeepEqual(again, first) {
		t.Error("group 0 was made again from a changed Q without a reset")
	}
	ask(5) // extends every buffer past group 0
	if again, _ := ask(0); !reflect.DeepEqual(again, first) {
		t.Error("extending the buffers for group 5 lost group 0")
	}
	q[3] = float32(math.NaN())
	if _, ok := ask(7); ok != [3]bool{} {
		t.Errorf("Q holding NaN: made %v", ok)
	}
	copy(q, orig)
	if _, ok := ask(7); ok != [3]bool{} {
		t.Errorf("a group that could not be made was made before a reset: %v", ok)
	}
	tt.reset()
	if again, ok := ask(7); ok != [3]bool{true, true, true} || !reflect.DeepEqual(again, first) {
		t.Errorf("after reset group 7 from the first Q: made %v, the same as group 0's first: %v", ok, reflect.DeepEqual(again, first))
	}
}

// Under WithDecode8("integer") (tiles8.intQ8) q8 stays off the tiles
// (dotTiles and axpyTiles leave its runs to the integer kernels), and an
// item over q8 K and V in BNHD rows takes every head again
// (Backend.tiled); fp8 stays on them. Under vector neither is on them.
func TestIntegerOffTiles(t *testing.T) {
	tilesOrSkip(t, q8TilesOn)
	for _, c := range []struct {
		t8   tiles8
		want bool
	}{{tiles8{}, true}, {tiles8{intQ8: true}, false}, {tiles8{vector: true}, false}} {
		if got := c.t8.q8Tiles(); got != c.want {
			t.Errorf("%+v: q8 on the tiles %v, want %v", c.t8, got, c.want)
		}
	}
	fp8, _ := fp8TilesOn()
	for _, c := range []struct {
		setting string
		q8, fp8 bool
	}{{"auto", true, fp8}, {"integer", false, fp8}, {"vector", false, false}} {
		if c.setting == "integer" && !q8IntNow().ok {
			continue
		}
		t.Setenv(EnvDecode8, c.setting)
		b, err := New()
		if err != nil {
			t.Fatal(err)
		}
		if b.tiled(backend.Q8) != c.q8 || b.tiled(backend.FP8) != c.fp8 {
			t.Errorf("%s: q8 and fp8 on the tiles %v, %v; want %v, %v", c.setting, b.tiled(backend.Q8), b.tiled(backend.FP8), c.q8, c.fp8)
		}
		if sc := b.scratchPool.Get().(*fusedScratch); sc.t8.q8Tiles() != c.q8 {
			t.Errorf("%s: the decoding scratch takes q8 to the tiles: %v", c.setting, !c.q8)
		}
		b.Close()
	}
}
