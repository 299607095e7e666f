package cpu

import (
	"math"

	"github.com/attn-go/attn/backend"
)

// ints8 is what the integer q8 kernels keep for a decoding item in
// tiles8 (decode_int_amd64.go): the P·V kernel's digits and factors for a
// chunk, and the scores kernel's Q digits for each group of four query
// rows, made at the first key tile that needs them and kept for the
// item's others (tiles8.reset forgets them).
type ints8 struct {
	wd []int32   // the P·V digits: a group of blocks' intGroupDigits each
	gs []float32 // their factors, 8r + b a group's 32

	qx    []int8  // the scores' digits: groups × blocks × intDotBlockBytes
	qhb   []int32 // each group's corrections and factors: blocks × 8
	state []int8  // each group's: 0 not made, 1 made, −1 not fit
	avx2  bool    // whether qx holds qDigitsAVX2's digits, not qDigitsInt's
	hb    []int32 // a call's corrections and factors times α
}

// intDotBlockBytes is one block's Q digits for the integer scores
// kernels: 8 quads of 4 rows of 2 digits of 4 bytes (VNNI), or 4 rows of
// 32 int16 (AVX2).
const intDotBlockBytes = 256

// qDigitsMax is the largest |x| of Q's int16 digits: 127·256, so that
// the high byte h of x = 256h + l (l the low byte read signed) stays
// within ±127.
const qDigitsMax = 127 * 256

// reset forgets Q's digits: the item's Q changed.
func (i *ints8) reset() { clear(i.state) }

// digits is group grp's Q digits for the scores kernel (qDigitsAVX2's
// for the AVX2 one where avx2 is set, else qDigitsInt's) and its
// corrections and factors, made if not yet: nil where they cannot stand
// for Q.
func (i *ints8) digits(grp int, q []float32, ldq, d int, avx2 bool) ([]int8, []int32) {
	if avx2 != i.avx2 {
		i.reset() // digits of the other kernel's (tests run both)
		i.avx2 = avx2
	}
	nb := d / backend.Q8Block
	i.qhb = extend(i.qhb, (grp+1)*nb*8)
	hb := i.qhb[grp*nb*8 : (grp+1)*nb*8]
	x := groupSlot(&i.state, &i.qx, grp, nb*intDotBlockBytes, func(x []int8) bool {
		if avx2 {
			return qDigitsAVX2(q, ldq, d, x, hb)
		}
		return qDigitsInt(q, ldq, d, x, hb)
	})
	if x == nil {
		return nil, nil
	}
	return x, hb
}

// qDigitsInt writes the four rows of q (row stride ldq, d columns, whole
// blocks of 32) as the integer scores kernel's digits: for row r and
// block b, x = round(q·f) with f = qDigitsMax/max_{c∈b}|q[r][c]| (x = 0
// for an all-zero block), as two signed bytes x = 256·h + l at byte
// 256b + 32i + 8r + 4·digit + u of x for element c = 32b + 4i + u (h the
// digit 0, l the digit 1); and into hb[8b + r] the block's correction
// −128·Σ_c x, into hb[8b + 4 + r] the bits of 1/f as float32 (0 for an
// all-zero block). It reports false where an element is not finite or a
// block's 1/f is below float32's smallest normal.
func qDigitsInt(q []float32, ldq, d int, x []int8, hb []int32) bool {
	for r := range 4 {
		row := q[r*ldq : r*ldq+d]
		for b := range d / backend.Q8Block {
			blk := row[b*backend.Q8Block : (b+1)*backend.Q8Block]
			m, g, ok := blockUnit(blk, qDigitsMax)
			if !ok {
				return false
			}
			var sum int32
			for c, v := range blk {
				var xi int32
				if m > 0 {
					xi = int32(math.RoundToEven(float64(v) / m * qDigitsMax))
				}
				sum += xi
				l := int8(xi)
				h := int8((xi - int32(l)) >> 8)
				at := b*intDotBlockBytes + c/4*32 + 8*r + c%4
				x[at], x[at+4] = h, l
			}
			hb[8*b+r] = -128 * sum
			hb[8*b+4+r] = int32(math.Float32bits(g))
		}
	}
	return true
}

// blockUnit is a block's largest |q| (m) and the float32 unit its digits
// stand for, m/per (0 for an all-zero block); not ok where an element is
// not finite or the unit is below float32's smallest normal.
func blockUnit(blk []float32, per float64) (m float64, g float32, ok bool) {
	for _, v := range blk {
		a := math.Abs(float64(v))
		if !(a <= math.MaxFloat32) {
			return 0, 0, false // NaN or ±Inf
		}
		m = max(m, a)
	}
	if m > 0 {
		if g = float32(m / per); g < 0x1p-126 {
			return 0, 0, false
		}
	}
	return m, g, true
}

// qDigitsAVX2Max is the largest |x| of the AVX2 scores kernel's Q
// digits: four products with K's codes times 2⁸ (its words' high bytes)
// stay below 2³¹.
const qDigitsAVX2Max = 16383

// qDigitsAVX2 writes the four rows of q (row stride ldq, d columns, whole
// blocks of 32) as the AVX2 integer scores kernel's digits: for row r and
// block b, x = round(q·f) with f = qDigitsAVX2Max/max_{c∈b}|q[r][c]| (x =
// 0 for an all-zero block), as int16 (little-endian) at byte 2(r·d + 32b
// + i) of x for element c of the block, i in the order the kernel's
// unpacks leave K's codes (i < 8: c = i; then c = i + 8, i − 8, i); and
// into hb[8b + 4 + r] the bits of 1/(f·2⁸) as float32 (0 for an all-zero
// block), hb[8b + r] 0. The same room as qDigitsInt's, and the same
// refusals: false where an element is not finite or a block's 1/f is
// below float32's smallest normal.
func qDigitsAVX2(q []float32, ldq, d int, x []int8, hb []int32) bool {
	for r := range 4 {
		row := q[r*ldq : r*ldq+d]
		for b := range d / backend.Q8Block {
			blk := row[b*backend.Q8Block : (b+1)*backend.Q8Block]
			m, g, ok := blockUnit(blk, qDigitsAVX2Max*256)
			if !ok {
				return false
			}
			out := x[2*(r*d+b*backend.Q8Block):]
			for i := range backend.Q8Block {
				c := i + [4]int{0, 8, -8, 0}[i/8]
				var xi int16
				if m > 0 {
					xi = int16(math.RoundToEven(float64(blk[c]) / m * qDigitsAVX2Max))
				}
				out[2*i], out[2*i+1] = int8(xi), int8(xi>>8)
			}
			hb[8*b+r] = 0
			hb[8*b+4+r] = int32(math.Float32bits(g))
		}
	}
	return true
}
