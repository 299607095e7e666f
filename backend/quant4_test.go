package backend

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// TestQuantizeQ4Layout checks q4_0's documented layout with literal
// bytes: block 0 holds x_i = i − 16, whose first largest magnitude is
// −16, so d = 2 (float16 0x4000), 1/d = 0.5, and code(x) = trunc(x/2 +
// 8.5) capped at 15; byte i holds element i's code low and element
// i+16's high.
func TestQuantizeQ4Layout(t *testing.T) {
	x := make([]float32, 3*Q8Block)
	for i := range Q8Block {
		x[i] = float32(i - 16)
	}
	// Block 1 is zero: scale 0, every code 8. Block 2's largest magnitude
	// is positive and last: d is negative.
	x[2*Q8Block+31], x[2*Q8Block] = 4, -4
	codes := make([]uint8, len(x)/2)
	scales := make([]uint16, 3)
	if bad := QuantizeQ4(codes, scales, x); bad != -1 {
		t.Fatalf("QuantizeQ4 refused block %d", bad)
	}
	want := []uint8{
		0x80, 0x91, 0x91, 0xa2, 0xa2, 0xb3, 0xb3, 0xc4,
		0xc4, 0xd5, 0xd5, 0xe6, 0xe6, 0xf7, 0xf7, 0xf8,
	}
	for i, w := range want {
		if codes[i] != w {
			t.Errorf("block 0 byte %d = %#02x, want %#02x", i, codes[i], w)
		}
	}
	for i := 16; i < 32; i++ {
		if codes[i] != 0x88 {
			t.Errorf("zero block byte %d = %#02x, want 0x88", i-16, codes[i])
		}
	}
	// Block 1: d = 0/−8 = −0 (0x8000). Block 2: m = −4 (the first of
	// ±4), d = 0.5 (0x3800); −4 → code 0, 4 → trunc(8 + 8.5) = 16,
	// capped at 15; zeros → 8.
	if scales[0] != 0x4000 || scales[1] != 0x8000 || scales[2] != 0x3800 {
		t.Errorf("scales %#04x, want [0x4000 0x8000 0x3800]", scales)
	}
	if codes[32] != 0x80 || codes[47] != 0xf8 || codes[33] != 0x88 {
		t.Errorf("block 2 bytes 0, 1, 15 = %#02x %#02x %#02x, want 0x80 0x88 0xf8", codes[32], codes[33], codes[47])
	}
	back := make([]float32, len(x))
	DequantizeQ4(back, codes, scales)
	for i, w := range map[int]float32{0: -16, 1: -14, 2: -14, 16: 0, 17: 2, 31: 14, 64: -4, 95: 3.5, 40: 0} {
		if back[i] != w {
			t.Errorf("value %d read back as %g, want %g", i, back[i], w)
		}
	}
	q8 := make([]int8, len(x))
	Q4ToQ8(q8, codes)
	viaQ8 := make([]float32, len(x))
	DequantizeQ8(viaQ8, q8, scales)
	for i := range back {
		if math.Float32bits(viaQ8[i]) != math.Float32bits(back[i]) {
			t.Fatalf("value %d: q4 reads %g, its q8 widening %g", i, back[i], viaQ8[i])
		}
	}
}

// TestQuantizeQ4 checks random blocks against q4_0's definition written
// out in float64 (where each float32 step is exact or rounded as the
// definition says), the error bound the package doc states, and the
// refusals at Q4Max.
func TestQuantizeQ4(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 0))
	for _, scale := range []float64{1e-6, 1, 300, 3e4, 1e5} {
		x := make([]float32, 8*Q8Block)
		for i := range x {
			x[i] = float32(r.NormFloat64() * scale)
		}
		codes := make([]uint8, len(x)/2)
		scales := make([]uint16, len(x)/Q8Block)
		if bad := QuantizeQ4(codes, scales, x); bad != -1 {
			t.Fatalf("scale %g: QuantizeQ4 refused block %d", scale, bad)
		}
		back := make([]float32, len(x))
		DequantizeQ4(back, codes, scales)
		for blk := range len(x) / Q8Block {
			xb := x[blk*Q8Block : (blk+1)*Q8Block]
			var m float32
			for _, v := range xb {
				if math.Abs(float64(v)) > math.Abs(float64(m)) {
					m = v
				}
			}
			d := m / -8
			if s := float16.Fromfloat32(d).Bits(); scales[blk] != s {
				t.Fatalf("scale %g block %d: scale %#04x, want %#04x", scale, blk, scales[blk], s)
			}
			id := 1 / d
			for i, v := range xb {
				p := float32(float64(v) * float64(id)) // float32's rounding of the product
				c := min(15, int(math.Trunc(float64(p+8.5))))
				b := codes[blk*16+i%16]
				got := int(b & 15)
				if i >= 16 {
					got = int(b >> 4)
				}
				if got != c {
					t.Fatalf("scale %g block %d value %d (%g): code %d, want %d", scale, blk, i, v, got, c)
				}
				// The package doc's bound: half a step, a whole one for a
				// value capped at code 15, plus 8 times float16's
				// rounding of d.
				ad := math.Abs(float64(d))
				bound := ad / 2
				if float64(v)/float64(d) > 7.5 {
					bound = ad
				}
				bound += 8*math.Abs(float64(float16.Frombits(scales[blk]).Float32())-float64(d)) + ad*1e-6
				if e := math.Abs(float64(back[blk*Q8Block+i] - v)); !(e <= bound) {
					t.Fatalf("scale %g: value %g read back as %g, off by %g > %g", scale, v, back[blk*Q8Block+i], e, bound)
				}
			}
		}
	}
	big := make([]float32, 2*Q8Block)
	for _, c := range []struct {
		v    float32
		want int
	}{{Q4Max, 1}, {-Q4Max, 1}, {float32(math.NaN()), 1}, {float32(math.Inf(-1)), 1}, {math.Nextafter32(Q4Max, 0), -1}} {
		big[Q8Block+3] = c.v
		if bad := QuantizeQ4(make([]uint8, Q8Block), make([]uint16, 2), big); bad != c.want {
			t.Errorf("a block holding %g: QuantizeQ4 returned %d, want %d", c.v, bad, c.want)
		}
	}
	// A block whose 1/d overflows float32 (d below 2⁻¹²⁸) stores scale 0
	// and codes 0 where the product is not finite.
	tiny := make([]float32, Q8Block)
	tiny[0], tiny[1] = 1e-39, 5e-40
	codes := make([]uint8, 16)
	sc := make([]uint16, 1)
	QuantizeQ4(codes, sc, tiny)
	if sc[0] != 0x8000 || codes[0] != 0 || codes[2] != 0 {
		t.Errorf("tiny block: scale %#04x bytes %#02x, want −0 and codes 0", sc[0], codes[:3])
	}
}

func TestRoundSliceQ4(t *testing.T) {
	if err := Q4.RoundSlice(make([]float32, 3), []float32{1, 2, 3}); !errors.Is(err, ErrShape) {
		t.Errorf("Q4.RoundSlice of 3 values: %v, want ErrShape", err)
	}
	y := make([]float32, Q8Block)
	y[0] = Q4Max
	if err := Q4.RoundSlice(y, y); !errors.Is(err, ErrNonFinite) {
		t.Errorf("Q4.RoundSlice at Q4Max: %v, want ErrNonFinite", err)
	}
	z := make([]float32, 40)
	for i := range z {
		z[i] = float32(i - 16)
	}
	// The second block is 16 … 23 and 24 zeros of padding: d = −2.875.
	if err := Q4.RoundRows(z, z, 40); err != nil || z[0] != -16 || z[1] != -14 || z[31] != 14 || z[32] != 17.25 || z[39] != 23 {
		t.Errorf("Q4.RoundRows of a 40-wide row = %v, %v", z, err)
	}
	if Q4.Bytes(64) != 36 || Q4.Bytes(32) != 18 || Q4.Block() != 32 || Q4.Pitch(40) != 64 || !Q4.Quantized() || Q4.Valid() || !Q4.Storable() {
		t.Errorf("Q4: Bytes(64) %d, Block %d, Pitch(40) %d", Q4.Bytes(64), Q4.Block(), Q4.Pitch(40))
	}
	for _, s := range []string{"q4", "Q4_0"} {
		if dt, err := ParseDType(s); err != nil || dt != Q4 {
			t.Errorf("ParseDType(%q) = %v, %v", s, dt, err)
		}
	}
}

func FuzzQuantizeQ4(f *testing.F) {
	f.Add(float32(1), float32(-3), float32(0.5), uint8(7))
	f.Fuzz(func(t *testing.T, a, b, c float32, at uint8) {
		x := make([]float32, Q8Block)
		for i := range x {
			x[i] = c * float32(i%5-2)
		}
		x[at%Q8Block], x[(at+9)%Q8Block] = a, b
		codes := make([]uint8, 16)
		sc := make([]uint16, 1)
		if QuantizeQ4(codes, sc, x) >= 0 {
			return
		}
		back := make([]float32, Q8Block)
		DequantizeQ4(back, codes, sc)
		var m float32
		for _, v := range x {
			if math.Abs(float64(v)) > math.Abs(float64(m)) {
				m = v
			}
		}
		d := float64(m) / -8
		bound := math.Abs(d) + 8*math.Abs(float64(float16.Frombits(sc[0]).Float32())-d) + math.Abs(d)*1e-6
		for i := range x {
			if e := math.Abs(float64(back[i]) - float64(x[i])); !(e <= bound) {
				t.Fatalf("%v: value %d %g read back as %g (d %g)", x, i, x[i], back[i], d)
			}
		}
	})
}
