//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/attn-go/attn/backend"
)

// The decoding kernels for 8-bit K and V (decode_quant_amd64.s, generated
// by _gen/decode_quant.py): dotRows4's and axpyRows4's kernels reading
// q8's codes (k or v, with their float16 scales at sc) or E4M3's bits and
// widening them in registers. The FP8 forms read E4M3 as float16 bits of
// the value times 2⁻⁸: their dot kernels take 256α for α, their axpy
// kernels add 256 times their sums. E4M3's NaN pattern reads as ±480
// there (no cache stores it: KVCache.Append refuses a NaN).
//
//go:noescape
func dotRows4Q8AVX512(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32, sc unsafe.Pointer)

//go:noescape
func dotRows4FP8AVX512(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32)

//go:noescape
func axpyRows4Q8AVX512(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, sc unsafe.Pointer)

//go:noescape
func axpyRows4FP8AVX512(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int)

//go:noescape
func dotRows4Q8AVX2(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32, sc unsafe.Pointer)

//go:noescape
func dotRows4FP8AVX2(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32)

//go:noescape
func axpyRows4Q8AVX2(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, sc unsafe.Pointer)

//go:noescape
func axpyRows4FP8AVX2(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int)

// quantWidth is the width of the 8-bit kernels the CPU runs: 1 for the
// sixteen-lane ones (AVX-512F; they use AVX2's byte and word forms too),
// 0 for the eight-lane ones (AVX2, FMA and F16C), −1 for none.
func quantWidth() int {
	switch {
	case hasAVX512 && hasAVX2:
		return 1
	case hasAVX2 && hasF16C:
		return 0
	}
	return -1
}

// fp8Bias is the factor the FP8 kernels' widening leaves out: E4M3's
// value is 2⁸ times the float16 its bits become.
const fp8Bias = 256

func quantDot(q []float32, ldq int, k rawRows, n, d int, s []float32, lds int, alpha float32) int {
	return quantDotW(quantWidth(), q, ldq, k, n, d, s, lds, alpha)
}

func quantAxpy(p []float32, ldp int, v rawRows, n, dv int, acc []float32, ldacc int) bool {
	return quantAxpyW(quantWidth(), p, ldp, v, n, dv, acc, ldacc)
}

// quantDotW is quantDot on the kernels of width w (quantWidth's): it
// returns the keys they took, a multiple of their step (4 keys, or 2),
// and 0 where there are none or d is not whole vectors (q8: whole
// blocks). Every element the kernel reads is checked first.
func quantDotW(w int, q []float32, ldq int, k rawRows, n, d int, s []float32, lds int, alpha float32) int {
	if w < 0 || d <= 0 || d%16 != 0 || k.t == backend.Q8 && (d%backend.Q8Block != 0 || k.stride%backend.Q8Block != 0) {
		return 0
	}
	step := 2 + 2*w
	m := n / step * step
	if m == 0 {
		return 0
	}
	_ = q[3*ldq+d-1]
	_ = s[3*lds+m-1]
	last := (m-1)*k.stride + d - 1
	switch k.t {
	case backend.Q8:
		_ = k.q8[last]
		_ = k.sc[last/backend.Q8Block]
		f := dotRows4Q8AVX2
		if w == 1 {
			f = dotRows4Q8AVX512
		}
		f(&q[0], ldq, unsafe.Pointer(&k.q8[0]), k.stride, m, d, &s[0], lds, alpha, unsafe.Pointer(&k.sc[0]))
	case backend.FP8:
		_ = k.f8[last]
		f := dotRows4FP8AVX2
		if w == 1 {
			f = dotRows4FP8AVX512
		}
		f(&q[0], ldq, unsafe.Pointer(&k.f8[0]), k.stride, m, d, &s[0], lds, alpha*fp8Bias)
	default:
		return 0
	}
	return m
}

// quantAxpyW is quantAxpy on the kernels of width w: whether they ran
// (n = 0 needs none). dv must be whole vectors (q8: whole blocks).
func quantAxpyW(w int, p []float32, ldp int, v rawRows, n, dv int, acc []float32, ldacc int) bool {
	if w < 0 || dv <= 0 || dv%16 != 0 || v.t == backend.Q8 && (dv%backend.Q8Block != 0 || v.stride%backend.Q8Block != 0) {
		return false
	}
	if n == 0 {
		return true
	}
	_ = p[3*ldp+n-1]
	_ = acc[3*ldacc+dv-1]
	last := (n-1)*v.stride + dv - 1
	switch v.t {
	case backend.Q8:
		_ = v.q8[last]
		_ = v.sc[last/backend.Q8Block]
		f := axpyRows4Q8AVX2
		if w == 1 {
			f = axpyRows4Q8AVX512
		}
		f(&p[0], ldp, unsafe.Pointer(&v.q8[0]), v.stride, n, dv, &acc[0], ldacc, unsafe.Pointer(&v.sc[0]))
	case backend.FP8:
		_ = v.f8[last]
		f := axpyRows4FP8AVX2
		if w == 1 {
			f = axpyRows4FP8AVX512
		}
		f(&p[0], ldp, unsafe.Pointer(&v.f8[0]), v.stride, n, dv, &acc[0], ldacc)
	default:
		return false
	}
	return true
}
