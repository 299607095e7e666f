package cpu

import (
	"fmt"
	"math"
	"sync"

	"github.com/attn-go/attn/backend"
)

// loopChecks runs, once a process (the first New), the known-answer
// check of each vector loop that CI's machines may never run and that
// this CPU would otherwise take on CPUID's word alone (checkArchLoops:
// VCVTNEPS2BF16 in the softmax's bfloat16 loop on amd64, BFCVTN on
// arm64), turns off any that answers wrong, and returns a note for each
// of those saying why. The bfloat16 products have their own checks
// (sgemm.ChooseBF16).
var loopChecks = sync.OnceValue(checkArchLoops)

// checkExpBF16 is the known-answer check of an expShiftBF16 loop: 16
// values whose exponentials lie a quarter of a bfloat16 step from the
// nearest bfloat16 (far beyond the loop's exp error), so that rounding
// to nearest gives one answer, bit for bit, and truncation or a wrong
// lane another; and the sum of the float32 exponentials within
// expBF16Err (the bfloat16 exponential's bound) and 1e-6.
func checkExpBF16(name string, loop func(row []float32, m float32, out []uint16) float64) error {
	const n, m = 16, 3
	row := make([]float32, n)
	want := make([]float32, n)
	var sum float64
	for j := range row {
		// 1 + (c + 0.75)·2⁻⁷ times 2^−e: c + 0.75 steps of bfloat16's 7
		// stored bits above a power of two, rounding up to c + 1.
		c, e := (j*37)%127, j%5
		t := math.Ldexp(1+(float64(c)+0.75)/128, -e)
		row[j] = float32(m + math.Log(t))
		want[j] = float32(math.Ldexp(1+float64(c+1)/128, -e))
		sum += t
	}
	out := make([]uint16, n)
	got := loop(row, m, out)
	for j, w := range want {
		if g := backend.BFloat16.Decode(out[j]); g != w {
			return fmt.Errorf("%s: e^(x−m) of %g rounded to bfloat16 is %g, want %g", name, float64(row[j])-m, g, w)
		}
	}
	if !(math.Abs(got-sum) <= (expBF16Err+1e-6)*sum) { // NaN too
		return fmt.Errorf("%s: the sum of 16 exponentials is %g, want %g", name, got, sum)
	}
	return nil
}

// checkNarrowBF16 is the known-answer check of a bfloat16 narrowing
// loop: values at, beside and between ties, the overflow threshold and
// beyond, zeros and subnormals, against backend.DType.Saturate's
// rounding, bit for bit.
func checkNarrowBF16(name string, loop func(dst []uint16, src []float32)) error {
	bits := []uint32{
		0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff, // ties to even, either side, and beside
		0xbf808000, 0xbf818000, 0x7f7f7fff, 0x7f7f8000, // negative ties, the largest finite below and at overflow
		0xff7fffff, 0x00000000, 0x80000000, 0x00008000, // −max, ±0, a subnormal tie
		0x00018000, 0x3f800000, 0x41200000, 0xc2c80001, // a subnormal tie up, 1, 10, −100 and a bit
	}
	src := make([]float32, len(bits))
	for i, b := range bits {
		src[i] = math.Float32frombits(b)
	}
	dst := make([]uint16, len(src))
	loop(dst, src)
	for i, x := range src {
		if w := backend.BFloat16.Encode(backend.BFloat16.Saturate(x)); dst[i] != w {
			return fmt.Errorf("%s: %g (%#08x) narrowed to bfloat16 is %#04x, want %#04x", name, x, bits[i], dst[i], w)
		}
	}
	return nil
}
