package backend

import (
	"fmt"
	"math"
	"strings"

	"github.com/x448/float16"

	"github.com/attn-go/attn/internal/magnitude"
)

// DType is how a Buffer stores its elements. Every op computes in
// float32, with float32 (or wider) accumulation, whatever its operands'
// dtypes: a half operand is widened exactly as it is read, and an output
// is rounded to its buffer's dtype as it is written (Saturate).
type DType uint8

// The storage dtypes.
const (
	// Float32 is IEEE 754 binary32, the default.
	Float32 DType = iota
	// Float16 is IEEE 754 binary16: 5 exponent bits, 10 fraction bits;
	// largest finite 65504, smallest normal 2⁻¹⁴, subnormals down to
	// 2⁻²⁴, about 3.3 significant digits.
	Float16
	// BFloat16 is bfloat16: float32's upper 16 bits (8 exponent bits, 7
	// fraction bits); float32's range at about 2.4 significant digits.
	BFloat16
	// Q8 is llama.cpp's q8_0, for K and V only (quant.go): blocks of 32
	// consecutive values, each stored as int8 round(x/d) with one
	// float16 scale d = max|x|/127; 34 bytes for 32 values.
	Q8
	// FP8 is float8 E4M3 (OCP e4m3fn: 4 exponent bits, 3 fraction bits,
	// no infinities, largest finite ±448), for K and V only (quant.go).
	FP8
	// Q4 is llama.cpp's q4_0, for K and V only (quant4.go): blocks of 32
	// consecutive values, each stored as a 4-bit code (value/d + 8) with
	// one float16 scale d = −(the value of largest magnitude)/8; 18 bytes
	// for 32 values.
	Q4
)

// DTypes are the storage dtypes, Float32 first.
var DTypes = []DType{Float32, Float16, BFloat16}

// Size is the bytes one element takes, rounded up to whole bytes: 1 for
// the quantized dtypes (Bytes counts what they take exactly: a block's
// scale, and Q4's half bytes).
func (t DType) Size() int {
	switch t {
	case Float32:
		return 4
	case Q8, FP8, Q4:
		return 1
	}
	return 2
}

// Bytes is the storage n elements of t take: n·Size, for Q8 one float16
// scale a block of 32 (34 bytes for 32 values), and for Q4 half a byte a
// value and a scale a block (18 bytes for 32 values).
func (t DType) Bytes(n int) int64 {
	blocks := 2 * int64((n+Q8Block-1)/Q8Block)
	switch t {
	case Q8:
		return int64(n) + blocks
	case Q4:
		return (int64(n)+1)/2 + blocks
	}
	return int64(n) * int64(t.Size())
}

// Half says whether t is a 16-bit dtype (Float16 or BFloat16).
func (t DType) Half() bool { return t == Float16 || t == BFloat16 }

// Valid says whether t is one of DTypes: the dtypes of every operand.
// The 8-bit Quants are valid for a buffer (Storable) but only as the K
// and V of Fused.
func (t DType) Valid() bool { return t <= BFloat16 }

// Quantized says whether t is one of Quants.
func (t DType) Quantized() bool { return t == Q8 || t == FP8 || t == Q4 }

// Storable says whether a buffer may hold t: one of DTypes or Quants.
func (t DType) Storable() bool { return t <= Q4 }

func (t DType) String() string {
	switch t {
	case Float32:
		return "f32"
	case Float16:
		return "f16"
	case BFloat16:
		return "bf16"
	case Q8:
		return "q8"
	case FP8:
		return "fp8"
	case Q4:
		return "q4"
	}
	return fmt.Sprintf("DType(%d)", uint8(t))
}

// ParseDType reads f32, f16 or bf16 (float32, float16, bfloat16 too, in
// any case), the 8-bit q8 (q8_0) and fp8 (e4m3), and the 4-bit q4
// (q4_0).
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "f32", "float32":
		return Float32, nil
	case "f16", "float16", "half":
		return Float16, nil
	case "bf16", "bfloat16":
		return BFloat16, nil
	case "q8", "q8_0":
		return Q8, nil
	case "fp8", "e4m3", "fp8_e4m3", "float8_e4m3fn":
		return FP8, nil
	case "q4", "q4_0":
		return Q4, nil
	}
	return Float32, Errorf(ErrShape, "unknown dtype %q (want f32, f16, bf16, q8, fp8 or q4)", s)
}

// MaxFinite is t's largest finite value.
func (t DType) MaxFinite() float32 {
	switch t {
	case Float16:
		return 65504
	case BFloat16:
		return math.Float32frombits(0x7f7f0000) // (2 − 2⁻⁷)·2¹²⁷
	case FP8:
		return FP8Max
	case Q8:
		return Q8Max
	case Q4:
		return Q4Max
	}
	return math.MaxFloat32
}

// Encode rounds x to half dtype t, to nearest with ties to even, and
// returns its bits: IEEE 754's conversion, so a finite x beyond t's range
// becomes ±Inf, and NaN stays NaN (quiet). Subnormal halves are produced
// and kept exactly. t must be Float16 or BFloat16.
func (t DType) Encode(x float32) uint16 {
	if t == Float16 {
		return float16.Fromfloat32(x).Bits()
	}
	b := math.Float32bits(x)
	if x != x {
		return uint16(b>>16) | 0x40 // quiet, whatever payload survives
	}
	// Round the low 16 bits away, ties to even: adding 0x7fff plus the
	// kept part's last bit carries into it exactly when the dropped part
	// is over half, or half with an odd last bit (an overflow carries
	// into the exponent, giving ±Inf, as it should).
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// Decode widens bits of half dtype t to float32, exactly.
func (t DType) Decode(bits uint16) float32 {
	if t == Float16 {
		return float16.Frombits(bits).Float32()
	}
	return math.Float32frombits(uint32(bits) << 16)
}

// Round is x stored as t and read back: x itself for Float32.
func (t DType) Round(x float32) float32 {
	if !t.Half() {
		return x
	}
	return t.Decode(t.Encode(x))
}

// Saturate is how every op stores an output value x as t: rounded to
// nearest, ties to even, with a finite x beyond t's range stored as
// ±MaxFinite (saturated, never a silent infinity). An output of attention
// is a weighted mean of V's rows, so it overflows only a dtype narrower
// than V's (float16 output of float32 values beyond 65504). NaN stays NaN.
func (t DType) Saturate(x float32) float32 {
	r := t.Round(x)
	if math.IsInf(float64(r), 0) && !math.IsInf(float64(x), 0) {
		return float32(math.Copysign(float64(t.MaxFinite()), float64(x)))
	}
	return r
}

// CheckFits returns an error wrapping ErrNonFinite when a finite value of
// src (to be stored from element off on) is beyond t's range: Write's
// rule, so that a value never becomes an infinity on its way in. name
// goes into the message.
//
// A finite x overflows t exactly when t.Round(x) is infinite, that is
// when |x| is at least the bound overflowBits gives. CheckFits compares
// magnitudes' bits with it a block at a time (magnitude.Below) rather
// than rounding each value (a prompt's keys and values are millions of
// them), and looks value by value only in a block that holds a magnitude
// at the bound or above: an overflow, or an infinity or a NaN, which it
// leaves be.
func (t DType) CheckFits(name string, off int, src []float32) error {
	if !t.Half() {
		return nil
	}
	lim := t.overflowBits()
	for lo := 0; lo < len(src); lo += fitsBlock {
		blk := src[lo:min(lo+fitsBlock, len(src))]
		if magnitude.Below(blk, lim) {
			continue
		}
		for i, x := range blk {
			if a := math.Float32bits(x) &^ (1 << 31); a >= lim && a < 0x7f800000 {
				return Errorf(ErrNonFinite, "%s element %d is %g, beyond %v's largest finite value %g", name, off+lo+i, x, t, t.MaxFinite())
			}
		}
	}
	return nil
}

// fitsBlock is how many values CheckFits tests at once: enough to make
// the call cheap, few enough that a block with an infinity in it (a
// bias's −Inf) costs little to go through value by value.
const fitsBlock = 256

// overflowBits is the float32 bits of the smallest magnitude that half
// dtype t rounds to infinity: MaxFinite plus half its ulp, a tie that
// rounds to even, which is away from MaxFinite's odd last bit (Encode).
// Every smaller magnitude rounds to at most MaxFinite. +Inf's bits for
// Float32.
func (t DType) overflowBits() uint32 {
	switch t {
	case Float16:
		return 0x477ff000 // 65520 = 65504 + 32/2
	case BFloat16:
		return 0x7f7f8000 // (2 − 2⁻⁸)·2¹²⁷
	}
	return 0x7f800000
}

// CheckDType returns an error wrapping ErrShape when buf's dtype is not
// one of want; name goes into the message.
func CheckDType(name string, buf Buffer, want ...DType) error {
	if buf == nil {
		return nil
	}
	t := buf.DType()
	for _, w := range want {
		if t == w {
			return nil
		}
	}
	return Errorf(ErrShape, "%s is %v, want %v", name, t, want)
}
