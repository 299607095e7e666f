package backend

import (
	"math"

	"github.com/x448/float16"
)

// The 8-bit dtypes (Quants) store a KV cache's keys and values in half
// an f16 cache's bytes. A buffer of either holds n values like any other
// (Len, Write, Read), but only Fused reads one, as K or V: the staged ops
// and every other operand refuse them.
//
// Q8 is llama.cpp's q8_0. The buffer's values go in blocks of Q8Block
// consecutive elements (so n, and every write's offset and length, are
// multiples of Q8Block; a K or V row of any head dim takes whole blocks,
// its last padded with zeros: DType.Pitch, padded.go). A block
// x is stored as
//
//	d = max|x| / 127               (float32, then stored as float16)
//	q = round(x · (1/d))           (to nearest, halves away from zero; 0 when d is 0)
//
// 32 int8 values and one float16 scale: 34 bytes for 32 values, 1.0625 a
// value. It is read back as float16(d)·q, exactly in float32. The same
// input gives the same bytes as llama.cpp's quantize_row_q8_0 (which
// computes it in the same float32 steps). A block whose largest
// magnitude is Q8Max or more would need an infinite scale and is refused
// (ErrNonFinite), as a half refuses a value beyond its range.
//
// FP8 is float8 E4M3 in the OCP's e4m3fn form (vLLM's and
// FlashAttention 3's KV cache): a sign, 4 exponent bits with bias 7 and 3
// fraction bits; normals 2⁻⁶ … 448, subnormals down to 2⁻⁹; no
// infinities, and one NaN pattern (S.1111.111). A value is rounded to
// nearest, ties to even, and a magnitude beyond FP8Max saturates to
// ±FP8Max (never an infinity). A cache scales its values per KV head
// before it stores them (Scales), so that a model's keys fit the range.
const (
	// Q8Block is the values a q8 block holds.
	Q8Block = 32
	// Q8Max is the smallest magnitude whose block a q8 scale cannot
	// hold: 127 times float16's rounding bound 65520.
	Q8Max = 127 * 65520
	// FP8Max is E4M3's largest finite magnitude.
	FP8Max = 448
)

// Quants are the quantized storage dtypes of a KV cache: the 8-bit Q8
// and FP8, and the 4-bit Q4 (quant4.go).
var Quants = []DType{Q8, FP8, Q4}

// Block is the elements that go together in t's storage: Q8Block for
// Q8 and Q4, 1 for every other dtype. A buffer's length, and the offset
// and length of a write into it or a copy range of it, are multiples of
// it.
func (t DType) Block() int {
	if t == Q8 || t == Q4 {
		return Q8Block
	}
	return 1
}

// QuantizeQ8 stores src (a multiple of Q8Block values) as q8 blocks: its
// int8 values into codes (len(src)) and one float16 scale a block into
// scales (len(src)/Q8Block). It returns the index of the first block
// whose largest magnitude is Q8Max or more (whose scale would overflow
// float16), or −1; that block and those after it are not written.
func QuantizeQ8(codes []int8, scales []uint16, src []float32) int {
	for blk := 0; blk*Q8Block < len(src); blk++ {
		x := src[blk*Q8Block : (blk+1)*Q8Block]
		q := codes[blk*Q8Block : (blk+1)*Q8Block]
		// The largest magnitude by the bits (a NaN's are above any
		// number's, so it is refused with the overflows).
		var top uint32
		for _, v := range x {
			top = max(top, math.Float32bits(v)&^(1<<31))
		}
		if top >= q8MaxBits {
			return blk
		}
		d := math.Float32frombits(top) / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		scales[blk] = float16.Fromfloat32(d).Bits()
		for i, v := range x {
			// C's roundf of the float32 product: r ± ½, exact in
			// float64 (|r| < 128), truncated toward zero.
			r := float64(v * id)
			q[i] = int8(int32(r + math.Copysign(0.5, r)))
		}
	}
	return -1
}

// q8MaxBits is Q8Max's float32 bits.
var q8MaxBits = math.Float32bits(Q8Max)

// DequantizeQ8 widens q8 blocks (codes and their scales) into dst
// (len(codes) values), exactly.
func DequantizeQ8(dst []float32, codes []int8, scales []uint16) {
	for blk := 0; blk*Q8Block < len(codes); blk++ {
		d := float16.Frombits(scales[blk]).Float32()
		q := codes[blk*Q8Block : (blk+1)*Q8Block]
		out := dst[blk*Q8Block : (blk+1)*Q8Block]
		for i, c := range q {
			out[i] = d * float32(c)
		}
	}
}

// EncodeFP8 rounds x to E4M3 (to nearest, ties to even) and returns its
// bits: a magnitude beyond FP8Max saturates to ±FP8Max, NaN becomes the
// NaN pattern, and saturated says whether |x| was beyond FP8Max (an
// infinity is, and saturates).
func EncodeFP8(x float32) (bits uint8, saturated bool) {
	b := math.Float32bits(x)
	sign := uint8(b>>24) & 0x80
	a := b &^ (1 << 31)
	switch {
	case a > 0x7f800000: // NaN
		return sign | 0x7f, false
	case a >= math.Float32bits(FP8Max):
		return sign | 0x7e, a > math.Float32bits(FP8Max)
	case a < 0x3c800000: // below 2⁻⁶: a subnormal, in units of 2⁻⁹
		m := math.RoundToEven(float64(math.Float32frombits(a)) * 512)
		return sign | uint8(m), false // m = 8 is 2⁻⁶, the first normal's bits
	}
	// A normal: keep 3 of the 23 fraction bits, rounding the 20 dropped
	// ones to nearest, ties to even (a carry moves into the exponent), and
	// rebias the exponent from 127 to 7.
	// Below 448 the nearest value is at most 448 (0x7e).
	a += 0x7ffff + (a>>20)&1
	return sign | uint8(a>>20-(127-7)<<3), false
}

// fp8Values is every E4M3 pattern's value.
var fp8Values = func() (t [256]float32) {
	for i := range t {
		e, m := i>>3&0xf, float64(i&7)
		var v float64
		switch {
		case i&0x7f == 0x7f:
			v = math.NaN()
		case e == 0:
			v = m / 8 * math.Ldexp(1, -6)
		default:
			v = (1 + m/8) * math.Ldexp(1, e-7)
		}
		if i&0x80 != 0 {
			v = -v
		}
		t[i] = float32(v)
	}
	return t
}()

// DecodeFP8 is the value of E4M3 bits b, exactly.
func DecodeFP8(b uint8) float32 { return fp8Values[b] }

// EncodeFP8s stores src as E4M3 into dst (len(src)), saturating, and
// returns how many values saturated.
func EncodeFP8s(dst []uint8, src []float32) int {
	n := 0
	for i, x := range src {
		b, sat := EncodeFP8(x)
		dst[i] = b
		if sat {
			n++
		}
	}
	return n
}

// DecodeFP8s widens E4M3 src into dst (len(src)), exactly.
func DecodeFP8s(dst []float32, src []uint8) {
	for i, b := range src {
		dst[i] = fp8Values[b]
	}
}

// RoundSlice sets dst to src stored as t and read back, the rounding a
// write into a buffer of t makes: element by element for the float
// dtypes and FP8 (which saturates), block by block for Q8 and Q4, whose
// len(src) must then be a multiple of Q8Block. A half's value beyond its
// range becomes an infinity (Round); a Q8 block beyond Q8Max, a Q4 one
// beyond Q4Max, is ErrNonFinite. dst and src may be one slice.
func (t DType) RoundSlice(dst, src []float32) error {
	switch t {
	case Q4:
		if len(src)%Q8Block != 0 {
			return Errorf(ErrShape, "%d values are not whole q4 blocks of %d", len(src), Q8Block)
		}
		var codes [Q8Block / 2]uint8
		var scale [1]uint16
		for lo := 0; lo < len(src); lo += Q8Block {
			if QuantizeQ4(codes[:], scale[:], src[lo:lo+Q8Block]) >= 0 {
				return Errorf(ErrNonFinite, "q4 block at element %d holds a magnitude of %g or more, beyond a float16 scale", lo, float64(Q4Max))
			}
			DequantizeQ4(dst[lo:lo+Q8Block], codes[:], scale[:])
		}
	case Q8:
		if len(src)%Q8Block != 0 {
			return Errorf(ErrShape, "%d values are not whole q8 blocks of %d", len(src), Q8Block)
		}
		var codes [Q8Block]int8
		var scale [1]uint16
		for lo := 0; lo < len(src); lo += Q8Block {
			if QuantizeQ8(codes[:], scale[:], src[lo:lo+Q8Block]) >= 0 {
				return Errorf(ErrNonFinite, "q8 block at element %d holds a magnitude of %g or more, beyond a float16 scale", lo, float64(Q8Max))
			}
			DequantizeQ8(dst[lo:lo+Q8Block], codes[:], scale[:])
		}
	case FP8:
		for i, x := range src {
			b, _ := EncodeFP8(x)
			dst[i] = fp8Values[b]
		}
	default:
		for i, x := range src {
			dst[i] = t.Round(x)
		}
	}
	return nil
}

// RoundRows is RoundSlice for rows of dim values (len(src) a multiple
// of dim), each rounded as a K or V buffer of t stores it: a q8 row by
// the blocks of its pitch (Pitch: the last block padded with zeros), so
// that any head dim rounds. dst and src may be one slice.
func (t DType) RoundRows(dst, src []float32, dim int) error {
	pitch := t.Pitch(dim)
	if pitch == dim || dim <= 0 {
		return t.RoundSlice(dst, src)
	}
	var row [16 * Q8Block]float32
	buf := row[:0]
	if pitch > len(row) {
		buf = make([]float32, 0, pitch)
	}
	buf = buf[:pitch]
	for lo := 0; lo+dim <= len(src); lo += dim {
		copy(buf, src[lo:lo+dim])
		clear(buf[dim:])
		if err := t.RoundSlice(buf, buf); err != nil {
			return Errorf(ErrNonFinite, "%v row at element %d holds a magnitude of %g or more, beyond a float16 scale", t, lo, float64(t.MaxFinite()))
		}
		copy(dst[lo:lo+dim], buf)
	}
	return nil
}

// Scales multiply the values a K or V buffer stores, per KV head: key
// row j of KV head g is read as K[j, g, :]·K[g] (and V likewise), so
// that an 8-bit cache (FP8) holds values its range would not. nil, or a
// nil slice, means 1 for every head.
type Scales struct {
	K, V []float32
}

// KScale is KV head g's scale of K: 1 when s or s.K is nil.
func (s *Scales) KScale(g int) float32 {
	if s == nil || s.K == nil {
		return 1
	}
	return s.K[g]
}

// VScale is KV head g's scale of V: 1 when s or s.V is nil.
func (s *Scales) VScale(g int) float32 {
	if s == nil || s.V == nil {
		return 1
	}
	return s.V[g]
}

// validate checks that each slice has one finite, positive value a KV
// head.
func (s *Scales) validate(kvHeads int) error {
	if s == nil {
		return nil
	}
	for _, x := range []struct {
		name string
		v    []float32
	}{{"K", s.K}, {"V", s.V}} {
		if x.v == nil {
			continue
		}
		if len(x.v) != kvHeads {
			return Errorf(ErrShape, "%d %s scales for %d KV heads", len(x.v), x.name, kvHeads)
		}
		for g, f := range x.v {
			if !(f > 0) || math.IsInf(float64(f), 0) {
				return Errorf(ErrShape, "%s scale of KV head %d is %g: want finite and > 0", x.name, g, f)
			}
		}
	}
	return nil
}
