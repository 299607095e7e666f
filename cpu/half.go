package cpu

import (
	"math"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/attn-go/attn/backend"
)

// widen sets dst[i] to the value of src[i], bits of half dtype t, exactly
// (backend.DType.Decode). len(dst) must be at least len(src). On amd64
// the vector loops take what they can (widenVec: VCVTPH2PS for float16,
// a 16-bit shift for bfloat16, sixteen lanes with AVX-512F, eight with
// AVX2 and F16C), on arm64 the NEON loops (FCVTL, or zeros zipped in
// below a bfloat16); widenGo does the rest, or all of it elsewhere.
func widen(t backend.DType, dst []float32, src []uint16) {
	n := widenVec(t, dst, src)
	widenGo(t, dst[n:], src[n:])
}

// widenGo is widen in Go.
func widenGo(t backend.DType, dst []float32, src []uint16) {
	dst = dst[:len(src)]
	if t == backend.BFloat16 {
		for i, h := range src {
			dst[i] = math.Float32frombits(uint32(h) << 16)
		}
		return
	}
	for i, h := range src {
		dst[i] = t.Decode(h)
	}
}

// narrow sets dst[i] to the bits of src[i] stored as half dtype t: rounded
// to nearest, ties to even, a finite value beyond t's range saturated to
// ±MaxFinite, infinities and NaN kept (backend.DType.Saturate, bit for bit
// backend.DType.Encode wherever that is finite or src[i] is not).
// len(src) must be at least len(dst). On amd64 the vector loops take
// what they can (narrowVec: VCVTPS2PH, or bfloat16's rounding in integer
// operations, sixteen lanes with AVX-512F, eight with AVX2 and F16C),
// on arm64 the NEON loops (FCVTN; BFCVTN or the integer rounding);
// narrowGo does the rest, or all of it elsewhere.
func narrow(t backend.DType, dst []uint16, src []float32) {
	n := narrowVec(t, dst, src)
	narrowGo(t, dst[n:], src[n:])
}

// narrowGo is narrow in Go.
func narrowGo(t backend.DType, dst []uint16, src []float32) {
	src = src[:len(dst)]
	for i, x := range src {
		dst[i] = narrow1(t, x)
	}
}

// narrow1 is narrow for one value.
func narrow1(t backend.DType, x float32) uint16 {
	h := t.Encode(x)
	if h&0x7fff == infBits(t) && !math.IsInf(float64(x), 0) {
		return h&0x8000 | (infBits(t) - 1) // the largest finite value
	}
	return h
}

// infBits is +Inf's bits in half dtype t.
func infBits(t backend.DType) uint16 {
	if t == backend.BFloat16 {
		return 0x7f80
	}
	return 0x7c00
}

// halfScratch is a worker's float32 scratch for n elements of tiles of
// operand s when s is half, nil when it is Float32 (read in place).
func halfScratch(s store, n int) []float32 {
	if !s.t.Half() {
		return nil
	}
	return make([]float32, n)
}

// matOf is the rows×cols matrix of s at element off with the given row
// stride (in elements, whatever the dtype): s's own memory when s is
// Float32, and otherwise its rows widened into scratch (which holds at
// least rows·cols values), dense. This is the one place the ops read a
// half Q, K or V: a tile at a time, as they take it, never the tensor.
func matOf(s store, off, rows, cols, stride int, scratch []float32) blas32.General {
	if !s.wide() {
		return mat(s.f32, off, rows, cols, stride)
	}
	g := blas32.General{Rows: rows, Cols: cols, Stride: max(cols, 1)}
	if rows == 0 || cols == 0 {
		return g
	}
	g.Data = scratch[:rows*cols]
	if stride == cols {
		s.widenAt(g.Data, off)
		return g
	}
	for i := range rows {
		s.widenAt(g.Data[i*cols:(i+1)*cols], off+i*stride)
	}
	return g
}

// putRow stores row into s from element off: a copy for Float32, and
// rounded to nearest even with saturation for a half s (narrow).
func putRow(s store, off int, row []float32) {
	if !s.t.Half() {
		copy(s.f32[off:off+len(row)], row)
		return
	}
	narrow(s.t, s.h[off:off+len(row)], row)
}

// halfChunk is how many keys of a half K or V the staged ops widen at a
// time: the Sgemm driver's block of the inner dimension, so that the
// chunks cost one more pass over C's rows per 256 keys, which it makes
// anyway.
const halfChunk = 256
