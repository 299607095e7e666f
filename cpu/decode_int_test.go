package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend/backendtest"
)

// digitsTestQ is the digits tests' four rows of Q (d columns, row
// stride ldq): blocks spanning 2⁶⁰, a zero block, the largest float32,
// and a block whose largest sits just above 2⁻¹²⁶·per, the floor of a
// unit m/per.
func digitsTestQ(d, ldq int, per float32) []float32 {
	rng := rand.New(rand.NewPCG(3, 9))
	q := make([]float32, 4*ldq)
	for r := range 4 {
		for c := range d {
			q[r*ldq+c] = float32(math.Ldexp(rng.NormFloat64(), (c/32*23+r*11)%61-30))
		}
	}
	clear(q[ldq+32 : ldq+64]) // row 1's block 1
	q[2*ldq+5] = math.MaxFloat32
	q[3*ldq+70] = 0x1p-126 * per * 1.0001 // a block at the floor
	for c := 64; c < 96; c++ {
		if c != 70 {
			q[3*ldq+c] = 0
		}
	}
	return q
}

// qDigitsInt's digits stand for Q within half a unit of each block's
// 1/f (x = 256h + l, |x| ≤ 32512, l the low byte read signed), the
// corrections are −128·Σx and the factors 1/f (0 for a zero block), on
// every CPU: blocks spanning 2⁶⁰, a zero block, the largest float32, a
// block whose largest sits at the floor of float32's normals times
// 32512; it refuses NaN, ±Inf and a block below that floor.
func TestQDigitsInt(t *testing.T) {
	const d, ldq = 96, 100
	q := digitsTestQ(d, ldq, qDigitsMax)
	x := make([]int8, d/32*intDotBlockBytes)
	hb := make([]int32, d/32*8)
	if !qDigitsInt(q, ldq, d, x, hb) {
		t.Fatal("qDigitsInt refused finite Q")
	}
	for r := range 4 {
		for b := range d / 32 {
			g := float64(math.Float32frombits(uint32(hb[8*b+4+r])))
			var m float64
			for c := 32 * b; c < 32*(b+1); c++ {
				m = max(m, math.Abs(float64(q[r*ldq+c])))
			}
			if want := float64(float32(m / qDigitsMax)); g != want {
				t.Fatalf("row %d block %d: 1/f = %g, want %g", r, b, g, want)
			}
			var sum int32
			for c := 32 * b; c < 32*(b+1); c++ {
				at := b*intDotBlockBytes + (c%32)/4*32 + 8*r + c%4
				xi := 256*int32(x[at]) + int32(x[at+4])
				if xi > qDigitsMax || xi < -qDigitsMax || x[at] < -127 {
					t.Fatalf("row %d element %d: digits %d, %d out of range", r, c, x[at], x[at+4])
				}
				sum += xi
				if e := math.Abs(float64(xi)*m/qDigitsMax - float64(q[r*ldq+c])); backendtest.Exceeds(e, m/qDigitsMax/2*(1+1e-9)) {
					t.Fatalf("row %d element %d: x = %d stands for %g, q is %g", r, c, xi, float64(xi)*m/qDigitsMax, q[r*ldq+c])
				}
			}
			if hb[8*b+r] != -128*sum {
				t.Fatalf("row %d block %d: correction %d, want %d", r, b, hb[8*b+r], -128*sum)
			}
		}
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), 0x1p-126 * qDigitsMax / 2} {
		qb := make([]float32, 4*ldq)
		qb[2*ldq+40] = bad
		if qDigitsInt(qb, ldq, d, x, hb) {
			t.Errorf("qDigitsInt took %g", bad)
		}
	}
}

// qDigitsAVX2's digits stand for Q within half a unit of each block's
// 1/f (|x| ≤ 16383, each element at the place the AVX2 kernel's unpacks
// put K's code of the same column), the factors are 1/(f·2⁸) (0 for a
// zero block), on every CPU: blocks spanning 2⁶⁰, a zero block, the
// largest float32, a block whose largest sits at the floor of float32's
// normals times 16383·2⁸; it refuses NaN, ±Inf and a block below that
// floor.
func TestQDigitsAVX2(t *testing.T) {
	const d, ldq = 96, 100
	q := digitsTestQ(d, ldq, qDigitsAVX2Max*256)
	x := make([]int8, d/32*intDotBlockBytes)
	hb := make([]int32, d/32*8)
	if !qDigitsAVX2(q, ldq, d, x, hb) {
		t.Fatal("qDigitsAVX2 refused finite Q")
	}
	// The word of block b at which the kernel's unpacks put column c%32:
	// 0-7 | 16-23 in the first 16 words, 8-15 | 24-31 in the next.
	place := func(c int) int { return [4]int{0, 16, 8, 24}[c/8] + c%8 }
	for r := range 4 {
		for b := range d / 32 {
			g := float64(math.Float32frombits(uint32(hb[8*b+4+r])))
			var m float64
			for c := 32 * b; c < 32*(b+1); c++ {
				m = max(m, math.Abs(float64(q[r*ldq+c])))
			}
			if want := float64(float32(m / qDigitsAVX2Max / 256)); g != want {
				t.Fatalf("row %d block %d: 1/(f·2⁸) = %g, want %g", r, b, g, want)
			}
			for c := 32 * b; c < 32*(b+1); c++ {
				at := 2 * (r*d + 32*b + place(c%32))
				xi := int16(uint16(uint8(x[at])) | uint16(uint8(x[at+1]))<<8)
				if xi > qDigitsAVX2Max || xi < -qDigitsAVX2Max {
					t.Fatalf("row %d element %d: digit %d out of range", r, c, xi)
				}
				if e := math.Abs(float64(xi)*m/qDigitsAVX2Max - float64(q[r*ldq+c])); backendtest.Exceeds(e, m/qDigitsAVX2Max/2*(1+1e-9)) {
					t.Fatalf("row %d element %d: x = %d stands for %g, q is %g", r, c, xi, float64(xi)*m/qDigitsAVX2Max, q[r*ldq+c])
				}
			}
		}
	}
	// An item's digits made for one kernel are made again for the other.
	var it ints8
	for _, avx2 := range []bool{false, true, false} {
		got, _ := it.digits(0, q, ldq, d, avx2)
		want := make([]int8, len(x))
		if avx2 {
			qDigitsAVX2(q, ldq, d, want, hb)
		} else {
			qDigitsInt(q, ldq, d, want, hb)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ints8.digits(avx2=%v) gave the other kernel's digits", avx2)
		}
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), 0x1p-126 * qDigitsAVX2Max * 256 / 2} {
		qb := make([]float32, 4*ldq)
		qb[2*ldq+40] = bad
		if qDigitsAVX2(qb, ldq, d, x, hb) {
			t.Errorf("qDigitsAVX2 took %g", bad)
		}
	}
}
