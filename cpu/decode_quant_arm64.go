//go:build arm64 && !purego

package cpu

import "unsafe"

//go:generate python3 _gen/decode_quant_arm64.py

// The 8-bit decoding kernels in NEON (decode_quant.go says what they
// compute).
//
//go:noescape
func dotRows4Q8NEON(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32, sc unsafe.Pointer)

//go:noescape
func dotRows4FP8NEON(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, alpha float32)

//go:noescape
func axpyRows4Q8NEON(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, sc unsafe.Pointer)

//go:noescape
func axpyRows4FP8NEON(p *float32, ldp int, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int)

// quantWidth is the width of the 8-bit kernels the CPU runs: 0 for NEON's
// (ASIMD, with the other decoding kernels), −1 for none.
func quantWidth() int {
	if hasDecode() {
		return 0
	}
	return -1
}

var quantNEON = quantKernelSet{4, dotRows4Q8NEON, dotRows4FP8NEON, axpyRows4Q8NEON, axpyRows4FP8NEON}

func quantKernels(int) *quantKernelSet { return &quantNEON }
