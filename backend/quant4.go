package backend

import (
	"math"

	"github.com/x448/float16"
)

// Q4 is llama.cpp's q4_0, bit for bit. Its values go in blocks of
// Q8Block = 32 consecutive elements, as q8's do (the same rules for a
// buffer's length, a write's range and a row's pitch: Block, Pitch). A
// block x is stored as
//
//	m = the element of largest magnitude (the first, if several)
//	d = m / −8                        (float32, then stored as float16)
//	c = min(15, trunc(x·(1/d) + 8.5)) (each product and sum in float32; 8 when d is 0)
//
// 32 four-bit codes in 16 bytes — byte i holds element i's code in its
// low nibble and element i+16's in its high one — and the float16 scale:
// 18 bytes for 32 values, 0.5625 a value, half of q8's. It is read back
// as (c − 8)·float16(d), exactly in float32: m itself exactly (code 0)
// when d is, and every value within half a step, |d|/2, of its own, but
// for those more than 7.5 steps from 0 on the side opposite m, which
// code 15 caps, within a step |d|; float16's rounding of d adds up to 8
// times its own error (|d|·2⁻⁸ for a normal float16 d). The same input gives the same bytes as
// llama.cpp's quantize_row_q4_0_ref. A block whose largest magnitude is
// Q4Max or more would need an infinite scale and is refused
// (ErrNonFinite), as q8 refuses Q8Max.
//
// A q4 code minus 8 is a q8 value of the same scale: the kernels that
// read q4 may widen its codes into q8's int8 values and go on as for q8.
const (
	// Q4Max is the smallest magnitude whose block a q4 scale cannot
	// hold: 8 times float16's rounding bound 65520.
	Q4Max = 8 * 65520
)

// q4MaxBits is Q4Max's float32 bits.
var q4MaxBits = math.Float32bits(Q4Max)

// QuantizeQ4 stores src (a multiple of Q8Block values) as q4 blocks: two
// codes a byte into codes (len(src)/2, ggml's order in each block) and
// one float16 scale a block into scales (len(src)/Q8Block). It returns
// the index of the first block whose largest magnitude is Q4Max or more
// (or NaN), or −1; that block and those after it are not written.
func QuantizeQ4(codes []uint8, scales []uint16, src []float32) int {
	const half = Q8Block / 2
	for blk := 0; blk*Q8Block < len(src); blk++ {
		x := src[blk*Q8Block : (blk+1)*Q8Block]
		q := codes[blk*half : (blk+1)*half]
		var top uint32 // the largest magnitude's bits (a NaN's are above)
		var m float32
		for _, v := range x {
			if a := math.Float32bits(v) &^ (1 << 31); a > top {
				top, m = a, v
			}
		}
		if top >= q4MaxBits {
			return blk
		}
		d := m / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		scales[blk] = float16.Fromfloat32(d).Bits()
		for i := range half {
			q[i] = q4Code(x[i], id) | q4Code(x[i+half], id)<<4
		}
	}
	return -1
}

// q4Code is ggml's MIN(15, (int8_t)(x*id + 8.5f)): the product rounded
// to float32 (the conversion keeps the compiler from fusing it with the
// sum), then the sum, then truncated toward zero. |x·id| ≤ 8 (within
// float32's rounding), so the sum is in [0.5, 16.5] and its integer
// part in [0, 16]. Only where 1/d overflowed (|d| < 2⁻¹²⁸, whose
// float16 scale is 0, so that every code reads as 0) is the sum NaN or
// infinite: its code is 0 there, the low byte of x86's integer
// indefinite, which ggml's conversion gives on x86 (C leaves it
// undefined).
func q4Code(x, id float32) uint8 {
	r := float32(x*id) + 8.5
	if !(r >= 0 && r <= 17) {
		return 0
	}
	return uint8(min(15, int32(r)))
}

// DequantizeQ4 widens q4 blocks (codes, two a byte, and their scales)
// into dst (2·len(codes) values), exactly.
func DequantizeQ4(dst []float32, codes []uint8, scales []uint16) {
	const half = Q8Block / 2
	for blk := 0; blk*half < len(codes); blk++ {
		d := float16.Frombits(scales[blk]).Float32()
		q := codes[blk*half : (blk+1)*half]
		out := dst[blk*Q8Block : (blk+1)*Q8Block]
		for i, c := range q {
			out[i] = d * float32(int32(c&15)-8)
			out[i+half] = d * float32(int32(c>>4)-8)
		}
	}
}

// Q4ToQ8 widens q4 codes (two a byte, len(dst)/2) into the q8 values of
// the same blocks: code − 8, whose scale is the q4 block's. The values
// DequantizeQ8 reads from them and the scales are DequantizeQ4's, bit
// for bit.
func Q4ToQ8(dst []int8, codes []uint8) {
	const half = Q8Block / 2
	for blk := 0; blk*half < len(codes); blk++ {
		q := codes[blk*half : (blk+1)*half]
		out := dst[blk*Q8Block : (blk+1)*Q8Block]
		for i, c := range q {
			out[i] = int8(c&15) - 8
			out[i+half] = int8(c>>4) - 8
		}
	}
}
