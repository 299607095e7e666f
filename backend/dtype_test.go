package backend

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// nearestBF16 is the bfloat16 value nearest to x, found by brute force
// between the two neighbours of its truncation in float64, ties to the
// even bit pattern: the rule Encode must follow, found another way.
func nearestBF16(x float32) float32 {
	lo := uint16(math.Float32bits(x) >> 16)
	hi := lo + 1
	a, b := float64(BFloat16.Decode(lo)), float64(BFloat16.Decode(hi))
	if math.IsInf(b, 0) {
		// Past the largest finite value, as if the exponent were
		// unbounded (IEEE 754): the next value is ±2¹²⁸, stored as ±Inf.
		b = math.Copysign(0x1p128, b)
	}
	da, db := math.Abs(float64(x)-a), math.Abs(b-float64(x))
	switch {
	case da < db, da == db && lo&1 == 0:
		return float32(a)
	}
	return float32(b) // ±2¹²⁸ becomes ±Inf
}

// BFloat16's Encode against the brute-force nearest value for random
// float32 bit patterns (ties and all, both signs, subnormals, values that
// round up to infinity), and every bfloat16 pattern through Decode and
// Encode unchanged (NaN stays NaN).
func TestBFloat16(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1 << 20 {
		bits := rng.Uint32()
		if i%7 == 0 {
			bits = bits&^0xffff | 0x8000 // a tie
		}
		x := math.Float32frombits(bits)
		if x != x {
			continue
		}
		got := BFloat16.Decode(BFloat16.Encode(x))
		want := nearestBF16(x)
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("Encode(%g = %#08x) = %g (%#08x), want %g (%#08x)", x, bits, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	roundTripEvery(t, BFloat16)
}

// roundTripEvery checks that every bit pattern of half dtype dt comes
// back from Decode and Encode as it was, NaN as some NaN.
func roundTripEvery(t *testing.T, dt DType) {
	t.Helper()
	for b := range 1 << 16 {
		x := dt.Decode(uint16(b))
		got := dt.Encode(x)
		if x != x {
			if y := dt.Decode(got); y == y {
				t.Fatalf("%v NaN %#04x encoded as %#04x, not a NaN", dt, b, got)
			}
			continue
		}
		if got != uint16(b) {
			t.Fatalf("%v %#04x = %g came back as %#04x", dt, b, x, got)
		}
	}
}

// Float16's Encode and Decode round-trip every pattern, subnormals
// exactly, and round to nearest even at the edges this package leans on.
func TestFloat16(t *testing.T) {
	roundTripEvery(t, Float16)
	for _, c := range []struct{ x, want float32 }{
		{65504, 65504}, {65519, 65504}, {65520, float32(math.Inf(1))},
		{0x1p-24, 0x1p-24}, {0x1p-25, 0}, {0x1.8p-25, 0x1p-24}, // the least subnormal, a tie to even (0), above it
		{1 + 0x1p-11, 1}, {1 + 0x3p-11, 1 + 0x1p-9}, // ties to even
		{-2.5, -2.5},
	} {
		if got := Float16.Round(c.x); got != c.want {
			t.Errorf("Float16.Round(%g) = %g, want %g", c.x, got, c.want)
		}
	}
}

// Saturate stores a finite value beyond the dtype's range as its largest
// finite value, keeps infinities and NaN, and otherwise rounds.
func TestSaturate(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		t       DType
		x, want float32
	}{
		{Float16, 1e5, 65504}, {Float16, -1e5, -65504}, {Float16, 65519, 65504}, {Float16, 1.0001, 1},
		{Float16, inf, inf}, {Float16, -inf, -inf},
		{BFloat16, math.MaxFloat32, BFloat16.MaxFinite()}, {BFloat16, -math.MaxFloat32, -BFloat16.MaxFinite()},
		{BFloat16, 3, 3}, {Float32, math.MaxFloat32, math.MaxFloat32},
	} {
		if got := c.t.Saturate(c.x); got != c.want {
			t.Errorf("%v.Saturate(%g) = %g, want %g", c.t, c.x, got, c.want)
		}
	}
	if got := Float16.Saturate(float32(math.NaN())); got == got {
		t.Errorf("Float16.Saturate(NaN) = %g", got)
	}
	if BFloat16.MaxFinite() != BFloat16.Decode(0x7f7f) || Float16.MaxFinite() != Float16.Decode(0x7bff) {
		t.Errorf("MaxFinite is not the largest finite pattern")
	}
}

// CheckFits refuses exactly the finite values that would round to an
// infinity, naming the element.
func TestCheckFits(t *testing.T) {
	inf := float32(math.Inf(1))
	if err := Float16.CheckFits("Q", 10, []float32{1, -65504, 65519, inf, float32(math.NaN())}); err != nil {
		t.Errorf("CheckFits refused values that fit (or are not finite): %v", err)
	}
	err := Float16.CheckFits("Q", 10, []float32{1, 2, -65520})
	if !errors.Is(err, ErrNonFinite) {
		t.Fatalf("CheckFits(-65520) = %v, want ErrNonFinite", err)
	}
	if want := "Q element 12 is -65520"; !strings.Contains(err.Error(), want) {
		t.Errorf("CheckFits error %q does not say %q", err, want)
	}
	if err := Float32.CheckFits("Q", 0, []float32{math.MaxFloat32}); err != nil {
		t.Errorf("Float32.CheckFits: %v", err)
	}
	if err := BFloat16.CheckFits("K", 0, []float32{math.MaxFloat32}); !errors.Is(err, ErrNonFinite) {
		t.Errorf("BFloat16.CheckFits(MaxFloat32) = %v: it rounds up to Inf", err)
	}
}

// overflows is CheckFits' rule the slow way: x is finite and rounds to
// an infinity.
func overflows(t DType, x float32) bool {
	return !math.IsInf(float64(x), 0) && math.IsInf(float64(t.Round(x)), 0)
}

// CheckFits, which compares magnitudes' bits with a bound a block at a
// time, refuses what rounding each value would (overflows): at the
// bound and its neighbours, both signs, at every position of slices
// around the block size, with infinities and NaN beside them, and in
// slices of random bit patterns; the error names the first such element.
func TestCheckFitsBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dt := range []DType{Float16, BFloat16} {
		lim := dt.overflowBits()
		if !overflows(dt, math.Float32frombits(lim)) || overflows(dt, math.Float32frombits(lim-1)) {
			t.Fatalf("%v: overflowBits %#08x is not the least magnitude that rounds to Inf", dt, lim)
		}
		var vals []float32
		for _, b := range []uint32{lim - 2, lim - 1, lim, lim + 1, lim + 2, math.Float32bits(dt.MaxFinite()), 0x7f7fffff, 0x7f800000, 0x7fc00000, 0} {
			vals = append(vals, math.Float32frombits(b), math.Float32frombits(b|1<<31))
		}
		for _, n := range []int{1, 2, 5, fitsBlock - 1, fitsBlock, fitsBlock + 1, 2*fitsBlock + 3} {
			for _, x := range vals {
				for _, at := range []int{0, n / 2, n - 1} {
					src := make([]float32, n)
					for i := range src {
						src[i] = float32(rng.NormFloat64()) * 100
					}
					src[(at+1)%n] = float32(math.Inf(-1)) // beside it, never refused
					src[at] = x
					err := dt.CheckFits("V", 7, src)
					if want := overflows(dt, x); want != (err != nil) || err != nil && !errors.Is(err, ErrNonFinite) {
						t.Fatalf("%v: CheckFits of %g (%#08x) at %d of %d = %v, want refused %v", dt, x, math.Float32bits(x), at, n, err, want)
					}
					if name := fmt.Sprintf("V element %d is", 7+at); err != nil && !strings.Contains(err.Error(), name) {
						t.Errorf("%v: %q does not say %q", dt, err, name)
					}
				}
			}
		}
		for range 2000 {
			src := make([]float32, 1+rng.IntN(3*fitsBlock))
			first := -1
			for i := range src {
				b := rng.Uint32()
				if rng.IntN(4) > 0 {
					b = b&0x807fffff | uint32(100+rng.IntN(50))<<23 // mostly in range
				}
				src[i] = math.Float32frombits(b)
				if first < 0 && overflows(dt, src[i]) {
					first = i
				}
			}
			err := dt.CheckFits("K", 0, src)
			if first < 0 && err != nil || first >= 0 && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("K element %d is", first))) {
				t.Fatalf("%v: CheckFits(%v) = %v, want element %d (-1: none) refused", dt, src, err, first)
			}
		}
	}
}

// ParseDType takes the names String gives and the long ones, and refuses
// others with ErrShape; Size and Half follow the dtype.
func TestParseDType(t *testing.T) {
	for _, dt := range DTypes {
		got, err := ParseDType(dt.String())
		if err != nil || got != dt {
			t.Errorf("ParseDType(%q) = %v, %v", dt.String(), got, err)
		}
	}
	for s, want := range map[string]DType{"float32": Float32, "FLOAT16": Float16, " bfloat16 ": BFloat16} {
		if got, err := ParseDType(s); err != nil || got != want {
			t.Errorf("ParseDType(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := ParseDType("f64"); !errors.Is(err, ErrShape) {
		t.Errorf("ParseDType(f64) = %v, want ErrShape", err)
	}
	if Float32.Size() != 4 || Float16.Size() != 2 || BFloat16.Size() != 2 || Float32.Half() || !BFloat16.Half() || DType(7).Valid() {
		t.Errorf("Size, Half or Valid is wrong")
	}
}
