//go:build amd64 && !purego

package cpu

import (
	"golang.org/x/sys/cpu"

	"github.com/attn-go/attn/backend"
)

// hasF16C says whether the eight-lane float16 loops may run: AVX2 (which
// golang.org/x/sys/cpu reports only where the OS saves ymm registers)
// and F16C's conversions. The bfloat16 loops need AVX2 alone; the
// sixteen-lane loops of both need AVX-512F (hasAVX512), which
// GODEBUG=cpu.avx512f=off turns off.
var (
	hasHalfAVX2 = cpu.X86.HasAVX2
	hasF16C     = cpu.X86.HasAVX2 && cpuidF16C()
)

// cpuidF16C reports CPUID's F16C bit (half_amd64.s).
func cpuidF16C() bool

// The conversion loops (half_amd64.s): the AVX2 ones take lengths that
// are multiples of 8, the AVX-512 ones multiples of 16.

//go:noescape
func widenF16AVX2(dst []float32, src []uint16)

//go:noescape
func widenF16AVX512(dst []float32, src []uint16)

//go:noescape
func widenBF16AVX2(dst []float32, src []uint16)

//go:noescape
func widenBF16AVX512(dst []float32, src []uint16)

//go:noescape
func narrowF16AVX2(dst []uint16, src []float32)

//go:noescape
func narrowF16AVX512(dst []uint16, src []float32)

//go:noescape
func narrowBF16AVX2(dst []uint16, src []float32)

//go:noescape
func narrowBF16AVX512(dst []uint16, src []float32)

// halfLoops are the vector loops for one half dtype: 16 and 8 lanes, and
// whether this CPU has each.
type halfLoops struct {
	widen16, widen8   func([]float32, []uint16)
	narrow16, narrow8 func([]uint16, []float32)
	has16, has8       bool
}

func loopsFor(t backend.DType) halfLoops {
	if t == backend.BFloat16 {
		return halfLoops{widenBF16AVX512, widenBF16AVX2, narrowBF16AVX512, narrowBF16AVX2, hasAVX512, hasHalfAVX2}
	}
	return halfLoops{widenF16AVX512, widenF16AVX2, narrowF16AVX512, narrowF16AVX2, hasAVX512, hasF16C}
}

var halfVec = [...]halfLoops{backend.Float16: loopsFor(backend.Float16), backend.BFloat16: loopsFor(backend.BFloat16)}

// widenVec widens as much of src as the vector loops take, sixteen lanes
// and then eight, and returns how much that is.
func widenVec(t backend.DType, dst []float32, src []uint16) int {
	l := &halfVec[t]
	return vecLoops(dst, src, len(src), l.widen16, l.widen8, l.has16, l.has8)
}

// narrowVec is widenVec's converse for narrow.
func narrowVec(t backend.DType, dst []uint16, src []float32) int {
	l := &halfVec[t]
	return vecLoops(dst, src, len(dst), l.narrow16, l.narrow8, l.has16, l.has8)
}

// vecLoops runs the sixteen-lane loop over the first n values that are a
// multiple of 16 and the eight-lane loop over a multiple of 8 of the
// rest, each where the CPU has it, and returns how many values they did.
func vecLoops[D, S any](dst []D, src []S, n int, f16, f8 func([]D, []S), has16, has8 bool) int {
	done := 0
	if wide := n &^ 15; has16 && wide > 0 {
		f16(dst[:wide], src[:wide])
		done = wide
	}
	if rest := (n - done) &^ 7; has8 && rest > 0 {
		f8(dst[done:done+rest], src[done:done+rest])
		done += rest
	}
	return done
}
