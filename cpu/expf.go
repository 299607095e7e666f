package cpu

import (
	"math"

	"github.com/attn-go/attn/backend"
)

// expf is e^x in float32 without going through float64's math.Exp: the
// softmax takes one exponential per score, as many as the two Gemms take
// multiply-adds per head dim, so its cost shows.
//
// x = k·ln 2 + r with k = round(x·log₂e) and |r| ≤ ln 2 / 2, r found in
// two steps (Cody and Waite) so that it stays exact to float32; e^r is a
// degree-7 polynomial (Taylor's coefficients, Horner's rule, its
// truncation error under 3e-9 on that range); 2^k goes into the exponent
// bits (expParts). TestExpf compares it with math.Exp at every 64th float32 in
// [−87.3, 88.7]: the largest relative error is 1.0e-7, about one unit in
// the last place (the test allows 2.4e-7).
// Outside, the result is what float32 gives: 0 below −87.34 (e^x is
// subnormal there; the flush costs under 1.2e-38 absolute), +Inf above
// 88.72, NaN for NaN.
func expf(x float32) float32 {
	switch {
	case x != x:
		return x
	case x < expLo:
		return 0
	case x > expHi:
		return float32(math.Inf(1))
	}
	p, k := expParts(x)
	if k > 127 { // x near expHi: 2^128 is not a float32, 2·2^127 times p is
		return p * 2 * math.Float32frombits(uint32(k-1+127)<<23)
	}
	return p * math.Float32frombits(uint32(k+127)<<23)
}

// The arguments expf takes: below expLo, e^x is under the least normal
// float32; above expHi, over the greatest.
const (
	expLo = -87.33654
	expHi = 88.72283
)

// expParts splits e^x, x in [expLo, expHi], into p·2^k: k = round(x·log₂e)
// and p = e^r for the rest r = x − k·ln 2, |r| ≤ ln 2 / 2, found in two
// steps (ln 2 = ln2hi + ln2lo, ln2hi exact in 9 bits) so that r is exact
// to float32. The constants, the polynomial and its order are those of
// the vector loop in expf_amd64.s.
func expParts(x float32) (p float32, k int32) {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
		// Adding 1.5·2²³ rounds to an integer (|x·log₂e| < 2²²);
		// subtracting it again leaves that integer exactly.
		round = 12582912
	)
	n := x*log2e + round
	n -= round
	r := x - n*ln2hi
	r -= n * ln2lo
	p = float32(1.0 / 5040)
	p = p*r + 1.0/720
	p = p*r + 1.0/120
	p = p*r + 1.0/24
	p = p*r + 1.0/6
	p = p*r + 0.5
	p = p*r + 1
	p = p*r + 1
	return p, int32(n)
}

// expShift replaces each x of row with e^(x − m) and returns their sum:
// the softmax's exponentials, for m at least every x (the row's running
// max), so that no argument is positive. −Inf (a hidden key) gives 0. The
// sum is within 16 float32 units in its last place (the vector loops add
// blocks of at most 16 values a lane in float32, then in float64). On
// amd64 it runs sixteen lanes at a time with AVX-512F and eight with AVX2
// and FMA (expf_amd64.s: the same reduction and coefficients, the
// polynomial by Estrin's scheme with fused multiply-adds;
// TestExpShiftVector finds both within 9.8e-8 of math.Exp), on arm64
// eight at a time in NEON (expf_arm64.s, the same reduction, coefficients
// and scheme, the sum in float64; TestExpShiftNEON, 9.8e-8 too); the rest
// of the row, or all of it elsewhere, goes through expShiftGo.
func expShift(row []float32, m float32) float64 {
	n, sum := expShiftVec(row, m)
	return sum + expShiftGo(row[n:], m)
}

// expShiftBF16 is expShift for the bfloat16 arithmetic path (bf16Tile):
// each e^(x − m) goes to out rounded to bfloat16 (to nearest, ties to
// even), and the sum is of the float32 values; row's values are not
// kept. On amd64 with AVX-512F, AVX512DQ and AVX512_BF16 sixteen lanes
// at a time, in base 2 with the rounding in the exponential's loop
// (expShiftBF16AVX512, with softmaxRowsAVX512's bfloat16 exponential,
// EXP2B16: its polynomial as short as bfloat16's 8 bits allow, within
// expBF16Err relative of e before the rounding, beside bfloat16's 2⁻⁸,
// and the sum of those values within it too); the rest through expShift
// and narrow.
// expBF16Err bounds the bfloat16 path's exponential (EXP2B16, a
// degree-3 polynomial for 2^f) relative to e^(x − m), and with it the
// float32 sum of a row's weights: 8.6e-5, 1/23 of bfloat16's half unit,
// and a few float32 roundings more.
const expBF16Err = 9e-5

func expShiftBF16(row []float32, m float32, out []uint16) float64 {
	n, sum := expShiftBF16Vec(row, m, out)
	sum += expShift(row[n:], m)
	narrow(backend.BFloat16, out[n:len(row)], row[n:])
	return sum
}

// expShiftGo is expShift in Go: expf without the branches that cannot
// arise for x − m ≤ 0.
func expShiftGo(row []float32, m float32) float64 {
	var sum float64
	for j, v := range row {
		x := v - m
		if !(x >= expLo) { // also −Inf − m and NaN, which the inputs exclude
			row[j] = 0
			continue
		}
		p, k := expParts(x)
		e := p * math.Float32frombits(uint32(k+127)<<23)
		row[j] = e
		sum += float64(e)
	}
	return sum
}

// rowMax is the largest value of row, −Inf for an empty row; the values
// are finite or −Inf (a hidden key). The vector loop takes what it can
// (expf_amd64.s), Go the rest.
func rowMax(row []float32) float32 {
	n, m := rowMaxVec(row)
	for _, v := range row[n:] {
		if v > m {
			m = v
		}
	}
	return m
}

// scale multiplies x by a: the online softmax's rescaling of a row's
// accumulator when its running max grows. The vector loop takes what it
// can (expf_amd64.s), Go the rest.
func scale(x []float32, a float32) {
	for i := scaleVec(x, a); i < len(x); i++ {
		x[i] *= a
	}
}
