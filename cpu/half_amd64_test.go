//go:build amd64 && !purego

package cpu

import "github.com/attn-go/attn/backend"

// halfImpls are the Go loops, the dispatch and each vector loop, which
// the CPU may lack (GODEBUG=cpu.avx512f=off takes the sixteen-lane ones
// away).
func halfImpls() []halfImpl {
	loop := func(has func(halfLoops) bool, w func(halfLoops) func([]float32, []uint16), n func(halfLoops) func([]uint16, []float32)) (func(backend.DType) bool, func(backend.DType, []float32, []uint16), func(backend.DType, []uint16, []float32)) {
		return func(t backend.DType) bool { return has(loopsFor(t)) },
			func(t backend.DType, dst []float32, src []uint16) { w(loopsFor(t))(dst, src) },
			func(t backend.DType, dst []uint16, src []float32) { n(loopsFor(t))(dst, src) }
	}
	h8, w8, n8 := loop(func(l halfLoops) bool { return l.has8 },
		func(l halfLoops) func([]float32, []uint16) { return l.widen8 },
		func(l halfLoops) func([]uint16, []float32) { return l.narrow8 })
	h16, w16, n16 := loop(func(l halfLoops) bool { return l.has16 },
		func(l halfLoops) func([]float32, []uint16) { return l.widen16 },
		func(l halfLoops) func([]uint16, []float32) { return l.narrow16 })
	return []halfImpl{goImpl, dispatch,
		{"AVX2 (F16C for float16)", 8, h8, w8, n8},
		{"AVX-512F", 16, h16, w16, n16},
	}
}
