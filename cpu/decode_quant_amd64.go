//go:build amd64 && !purego

package cpu

import "unsafe"

// The 8-bit decoding kernels in AVX-512 and AVX2 (decode_quant.go says
// what they compute).
//
//go:noescape
func dotRows4Q8AVX512(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32, sc unsafe.Pointer)

//go:noescape
func dotRows4FP8AVX512(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32)

//go:noescape
func axpyRows4Q8AVX512(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, sc unsafe.Pointer)

//go:noescape
func axpyRows4FP8AVX512(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int)

// The 8-bit kernels' L2 twins (prefetchL2).
//
//go:noescape
func dotRows4Q8AVX512L2(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32, sc unsafe.Pointer)

//go:noescape
func dotRows4FP8AVX512L2(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32)

//go:noescape
func axpyRows4Q8AVX512L2(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, sc unsafe.Pointer)

//go:noescape
func axpyRows4FP8AVX512L2(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int)

//go:noescape
func dotRows4Q8AVX2(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32, sc unsafe.Pointer)

//go:noescape
func dotRows4FP8AVX2(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32)

//go:noescape
func axpyRows4Q8AVX2(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, sc unsafe.Pointer)

//go:noescape
func axpyRows4FP8AVX2(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int)

//go:noescape
func dotRows4Q8AVX2L2(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32, sc unsafe.Pointer)

//go:noescape
func dotRows4FP8AVX2L2(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32)

//go:noescape
func axpyRows4Q8AVX2L2(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, sc unsafe.Pointer)

//go:noescape
func axpyRows4FP8AVX2L2(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int)

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

// quantKernelSets are the kernels by width: eight lanes two keys at a
// time, sixteen four (filled by usePrefetch).
var quantKernelSets [2]quantKernelSet

func quantKernels(w int) *quantKernelSet { return &quantKernelSets[w] }
