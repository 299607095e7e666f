//go:build (amd64 || arm64) && !purego

package cpu

import (
	"unsafe"

	"github.com/attn-go/attn/backend"
)

// The decoding kernels for 8-bit K and V (decode_quant_amd64.s, generated
// by _gen/decode_quant.py; decode_quant_arm64.s, by
// _gen/decode_quant_arm64.py): dotRows4's and axpyRows4's kernels reading
// q8's codes (k or v, with their float16 scales at sc) or E4M3's bits and
// widening them in registers. The FP8 forms read E4M3 as float16 bits of
// the value times 2⁻⁸: their dot kernels take 256α for α, their axpy
// kernels add 256 times their sums. E4M3's NaN pattern reads as ±480
// there (no cache stores it: KVCache.Append refuses a NaN).
type quantKernelSet struct {
	step    int // keys the dot kernels take at a time
	dotQ8   func(q *float32, ldq int, k unsafe.Pointer, ldk, n, d int, s *float32, lds int, alpha float32, sc unsafe.Pointer)
	dotFP8  func(q *float32, ldq int, k unsafe.Pointer, ldk, n, d int, s *float32, lds int, alpha float32)
	axpyQ8  func(p *float32, ldp int, v unsafe.Pointer, ldv, n, dv int, acc *float32, ldacc int, sc unsafe.Pointer)
	axpyFP8 func(p *float32, ldp int, v unsafe.Pointer, ldv, n, dv int, acc *float32, ldacc int)
}

// fp8Bias is the factor the FP8 kernels' widening leaves out: E4M3's
// value is 2⁸ times the float16 its bits become.
const fp8Bias = 256

// dotRows4Quant and axpyRows4Quant are dotRows4 and axpyRows4 for an
// 8-bit K or V (q8 or fp8): the vector kernels where the CPU has them
// (quantWidth), else none (0 keys, false), and decodeTile's loop in
// Go takes every key.
func dotRows4Quant(q []float32, ldq int, k rawRows, n, d int, s []float32, lds int, alpha float32) int {
	return quantDotW(quantWidth(), q, ldq, k, n, d, s, lds, alpha)
}

func axpyRows4Quant(p []float32, ldp int, v rawRows, n, dv int, acc []float32, ldacc int) bool {
	return quantAxpyW(quantWidth(), p, ldp, v, n, dv, acc, ldacc)
}

// quantStep is how many keys the dot kernels of width w take at a time.
func quantStep(w int) int { return quantKernels(w).step }

// quantDotW is dotRows4Quant on the kernels of width w (quantWidth's): it
// returns the keys they took, a multiple of their step, and 0 where there
// are none or d is not whole vectors of 16 (q8: whole blocks). Every
// element the kernel reads is checked first.
func quantDotW(w int, q []float32, ldq int, k rawRows, n, d int, s []float32, lds int, alpha float32) int {
	if w < 0 || d <= 0 || d%16 != 0 || k.t == backend.Q8 && (d%backend.Q8Block != 0 || k.stride%backend.Q8Block != 0) {
		return 0
	}
	ks := quantKernels(w)
	m := n / ks.step * ks.step
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
		ks.dotQ8(&q[0], ldq, unsafe.Pointer(&k.q8[0]), k.stride, m, d, &s[0], lds, alpha, unsafe.Pointer(&k.sc[0]))
	case backend.FP8:
		_ = k.f8[last]
		ks.dotFP8(&q[0], ldq, unsafe.Pointer(&k.f8[0]), k.stride, m, d, &s[0], lds, alpha*fp8Bias)
	default:
		return 0
	}
	return m
}

// quantAxpyW is axpyRows4Quant on the kernels of width w: whether they
// ran (n = 0 needs none). dv must be whole vectors of 16 (q8: whole
// blocks).
func quantAxpyW(w int, p []float32, ldp int, v rawRows, n, dv int, acc []float32, ldacc int) bool {
	if w < 0 || dv <= 0 || dv%16 != 0 || v.t == backend.Q8 && (dv%backend.Q8Block != 0 || v.stride%backend.Q8Block != 0) {
		return false
	}
	if n == 0 {
		return true
	}
	ks := quantKernels(w)
	_ = p[3*ldp+n-1]
	_ = acc[3*ldacc+dv-1]
	last := (n-1)*v.stride + dv - 1
	switch v.t {
	case backend.Q8:
		_ = v.q8[last]
		_ = v.sc[last/backend.Q8Block]
		ks.axpyQ8(&p[0], ldp, unsafe.Pointer(&v.q8[0]), v.stride, n, dv, &acc[0], ldacc, unsafe.Pointer(&v.sc[0]))
	case backend.FP8:
		_ = v.f8[last]
		ks.axpyFP8(&p[0], ldp, unsafe.Pointer(&v.f8[0]), v.stride, n, dv, &acc[0], ldacc)
	default:
		return false
	}
	return true
}
