package cpu

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/attn-go/attn/backend"
)

// tilesOrSkip skips where the q8 tile kernel does not run, unless
// ATTN_REQUIRE_AMX=1 asks that it does.
func tilesOrSkip(t *testing.T) {
	t.Helper()
	if on, why := q8TilesOn(); !on {
		if os.Getenv("ATTN_REQUIRE_AMX") == "1" {
			t.Fatalf("ATTN_REQUIRE_AMX=1, but the q8 tile kernel does not run: %q", why)
		}
		t.Skipf("the q8 tile kernel does not run here (%q)", why)
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
				case err > m*math.Ldexp(1, -30):
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
	tilesOrSkip(t)
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
		var tl q8Tiles
		const alpha = 0.125
		got := dotTiles(&tl, 0, q, ldq, k, c.n, c.d, s, lds, alpha)
		if want := c.n &^ 15; c.n < tileMinKeys && got != 0 || c.n >= tileMinKeys && got != want {
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
				if err := math.Abs(float64(s[r*lds+j]) - want); err > bound {
					t.Fatalf("%+v row %d key %d: %g, want %g (error %g of Σ|q·k| %g)", c, r, j, s[r*lds+j], want, err, mag)
				}
			}
		}
	}
}
