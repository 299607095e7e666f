package backend

import (
	"errors"
	"math"
	"testing"

	"github.com/x448/float16"
)

// TestEncodeFP8 checks E4M3 against its definition: every pattern but
// NaN decodes to a value that encodes back to it; values between two
// neighbours round to the nearer (ties to the even pattern); beyond 448
// saturates and says so; tiny values reach the subnormals and zero.
func TestEncodeFP8(t *testing.T) {
	for b := range 256 {
		v := DecodeFP8(uint8(b))
		if b&0x7f == 0x7f {
			if v == v {
				t.Errorf("pattern %#02x decodes to %g, want NaN", b, v)
			}
			continue
		}
		got, sat := EncodeFP8(v)
		if got != uint8(b) && !(v == 0 && got&0x7f == 0) || sat {
			t.Errorf("EncodeFP8(%g) = %#02x, %v; want %#02x, false", v, got, sat, b)
		}
	}
	for _, c := range []struct {
		x    float32
		want uint8
		sat  bool
	}{
		{448, 0x7e, false}, {449, 0x7e, true}, {1e9, 0x7e, true}, {float32(math.Inf(-1)), 0xfe, true},
		{-500, 0xfe, true},
		{1.0625, 0x38, false},      // half-way between 1 (0x38) and 1.125 (0x39): to the even 1
		{1.1875, 0x3a, false},      // half-way between 1.125 and 1.25: to the even 1.25
		{1.05, 0x38, false},        // nearer 1
		{0x1p-9, 0x01, false},      // the smallest subnormal
		{0x1p-10, 0x00, false},     // half of it: a tie, to the even zero
		{0x1.8p-10, 0x01, false},   // past the tie
		{3 * 0x1p-10, 0x02, false}, // 1.5 units: a tie, to the even 2 units
		{0x1.fp-7, 0x08, false},    // rounds up to the smallest normal 2⁻⁶
		{240, 0x77, false},         // 1.875 · 2⁷
		{float32(math.Copysign(0, -1)), 0x80, false},
	} {
		got, sat := EncodeFP8(c.x)
		if got != c.want || sat != c.sat {
			t.Errorf("EncodeFP8(%g) = %#02x, %v; want %#02x, %v", c.x, got, sat, c.want, c.sat)
		}
	}
	if b, _ := EncodeFP8(float32(math.NaN())); b&0x7f != 0x7f {
		t.Errorf("EncodeFP8(NaN) = %#02x, want a NaN pattern", b)
	}
}

// TestQuantizeQ8 follows llama.cpp's quantize_row_q8_0 by hand on a block
// with a known largest magnitude, checks the round trip of every value
// within half a step, an all-zero block, a block at Q8Max, and that a
// block's bytes do not depend on the blocks beside it.
func TestQuantizeQ8(t *testing.T) {
	x := make([]float32, 3*Q8Block)
	for i := range Q8Block {
		x[i] = float32(i-16) * 0.37
	}
	x[5] = -12.7 // the block's largest magnitude: d = 0.1, stored as float16
	// block 1 stays zero; block 2 has values whose q is a tie.
	for i := range Q8Block {
		x[2*Q8Block+i] = float32(i) - 15.5
	}
	codes := make([]int8, len(x))
	scales := make([]uint16, 3)
	if bad := QuantizeQ8(codes, scales, x); bad != -1 {
		t.Fatalf("QuantizeQ8 refused block %d", bad)
	}
	d := float32(12.7) / 127
	if want := float16.Fromfloat32(d).Bits(); scales[0] != want {
		t.Errorf("block 0's scale %#04x, want %#04x (float16 of %g)", scales[0], want, d)
	}
	if codes[5] != -127 {
		t.Errorf("block 0's largest value stored as %d, want −127", codes[5])
	}
	for i := range Q8Block {
		if want := int8(math.Round(float64(x[i] * (1 / d)))); codes[i] != want {
			t.Errorf("value %d (%g) stored as %d, want %d", i, x[i], codes[i], want)
		}
	}
	if scales[1] != 0 || codes[Q8Block] != 0 {
		t.Errorf("an all-zero block stored scale %#04x, code %d; want 0, 0", scales[1], codes[Q8Block])
	}
	// Block 2: d = 15.5/127, x·(1/d) = ±127 at the ends; round half away
	// from zero as C's roundf (±0.5 steps appear nowhere exactly here,
	// but the sign of each code must follow x's).
	for i := range Q8Block {
		if c := codes[2*Q8Block+i]; (c < 0) != (x[2*Q8Block+i] < 0) {
			t.Errorf("value %g stored as %d", x[2*Q8Block+i], c)
		}
	}
	back := make([]float32, len(x))
	DequantizeQ8(back, codes, scales)
	for i := range x {
		step := float64(float16.Frombits(scales[i/Q8Block]).Float32())
		if e := math.Abs(float64(back[i] - x[i])); !(e <= step/2*(1+1e-3)) {
			t.Errorf("value %d: %g came back as %g, off by %g > half a step %g", i, x[i], back[i], e, step/2)
		}
	}
	// Requantizing what came back gives the same bytes (a copy-on-write
	// through float32 keeps them).
	codes2 := make([]int8, len(x))
	scales2 := make([]uint16, 3)
	QuantizeQ8(codes2, scales2, back)
	for i := range codes {
		if codes[i] != codes2[i] || scales[i/Q8Block] != scales2[i/Q8Block] {
			t.Fatalf("requantized value %d: %d (scale %#04x), first %d (%#04x)", i, codes2[i], scales2[i/Q8Block], codes[i], scales[i/Q8Block])
		}
	}
	big := make([]float32, 2*Q8Block)
	big[Q8Block+3] = Q8Max
	if bad := QuantizeQ8(make([]int8, 2*Q8Block), make([]uint16, 2), big); bad != 1 {
		t.Errorf("a block at Q8Max: QuantizeQ8 returned %d, want 1", bad)
	}
	big[Q8Block+3] = math.Nextafter32(Q8Max, 0)
	if bad := QuantizeQ8(make([]int8, 2*Q8Block), make([]uint16, 2), big); bad != -1 {
		t.Errorf("a block just below Q8Max: QuantizeQ8 returned %d, want −1", bad)
	}
}

func TestRoundSlice(t *testing.T) {
	x := []float32{1, 2, 3}
	if err := Q8.RoundSlice(make([]float32, 3), x); !errors.Is(err, ErrShape) {
		t.Errorf("Q8.RoundSlice of 3 values: %v, want ErrShape", err)
	}
	y := make([]float32, Q8Block)
	y[0] = 2 * Q8Max
	if err := Q8.RoundSlice(y, y); !errors.Is(err, ErrNonFinite) {
		t.Errorf("Q8.RoundSlice beyond Q8Max: %v, want ErrNonFinite", err)
	}
	z := []float32{1000, -0.3, 0.0001}
	if err := FP8.RoundSlice(z, z); err != nil || z[0] != 448 || z[1] != -0.3125 || z[2] != 0 {
		t.Errorf("FP8.RoundSlice = %v, %v; want [448 −0.3125 0]", z, err)
	}
	for _, s := range []string{"q8", "Q8_0", "fp8", "e4m3"} {
		if dt, err := ParseDType(s); err != nil || !dt.Quantized() {
			t.Errorf("ParseDType(%q) = %v, %v", s, dt, err)
		}
	}
	if Q8.Bytes(64) != 68 || FP8.Bytes(64) != 64 || Float16.Bytes(3) != 6 {
		t.Errorf("Bytes: q8 %d, fp8 %d, f16 %d", Q8.Bytes(64), FP8.Bytes(64), Float16.Bytes(3))
	}
}
