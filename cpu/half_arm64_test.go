//go:build arm64 && !purego

package cpu

import "github.com/attn-go/attn/backend"

// halfImpls are the Go loops, the dispatch and each NEON loop: the
// float16 and integer bfloat16 ones (any ASIMD core) and BFCVTN's, which
// needs FEAT_BF16 (qemu's -cpu cortex-a72 takes it away).
func halfImpls() []halfImpl {
	neon := func(backend.DType) bool { return hasNEON }
	widen := func(t backend.DType, dst []float32, src []uint16) {
		if t == backend.BFloat16 {
			widenBF16NEON(dst, src)
		} else {
			widenF16NEON(dst, src)
		}
	}
	narrow := func(t backend.DType, dst []uint16, src []float32) {
		if t == backend.BFloat16 {
			narrowBF16NEON(dst, src)
		} else {
			narrowF16NEON(dst, src)
		}
	}
	return []halfImpl{goImpl, dispatch,
		{"NEON", 8, neon, widen, narrow},
		{"NEON BFCVTN", 8, func(t backend.DType) bool { return t == backend.BFloat16 && hasBF16 }, widen,
			func(_ backend.DType, dst []uint16, src []float32) { narrowBF16CVT(dst, src) }},
	}
}
