//go:build arm64 && !purego

package cpu

import (
	"encoding/binary"
	"os"

	"github.com/attn-go/attn/backend"
)

// hasBF16 says whether bfloat16 narrowing may use FEAT_BF16's BFCVTN
// (narrowBF16CVT). golang.org/x/sys/cpu does not report BF16 (as of
// v0.30), so it is read from the kernel's HWCAP2 in /proc/self/auxv,
// which qemu-user emulates too; where that cannot be read (not Linux) it
// is false and the integer loop runs, which any ASIMD core has. Float16's
// conversions (FCVTL, FCVTN) are base ASIMD: they need no FEAT_FP16,
// which attn does not use (it does no float16 arithmetic).
var hasBF16 = hasNEON && hwcap2()&hwcap2BF16 != 0

// hwcap2BF16 is HWCAP2_BF16 (Linux's arch/arm64/include/uapi/asm/hwcap.h).
const hwcap2BF16 = 1 << 14

// hwcap2 is the AT_HWCAP2 entry (26) of /proc/self/auxv, 0 where there is
// none.
func hwcap2() uint64 {
	const atHWCAP2 = 26
	auxv, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 0
	}
	for ; len(auxv) >= 16; auxv = auxv[16:] {
		if binary.LittleEndian.Uint64(auxv) == atHWCAP2 {
			return binary.LittleEndian.Uint64(auxv[8:])
		}
	}
	return 0
}

// The conversion loops (half_arm64.s), for lengths that are positive
// multiples of 8.

//go:noescape
func widenF16NEON(dst []float32, src []uint16)

//go:noescape
func widenBF16NEON(dst []float32, src []uint16)

//go:noescape
func narrowF16NEON(dst []uint16, src []float32)

//go:noescape
func narrowBF16NEON(dst []uint16, src []float32)

//go:noescape
func narrowBF16CVT(dst []uint16, src []float32)

// widenVec widens as much of src as the NEON loops take and returns how
// much that is.
func widenVec(t backend.DType, dst []float32, src []uint16) int {
	n := len(src) &^ 7
	if !hasNEON || n == 0 {
		return 0
	}
	if t == backend.BFloat16 {
		widenBF16NEON(dst[:n], src[:n])
	} else {
		widenF16NEON(dst[:n], src[:n])
	}
	return n
}

// narrowVec is widenVec's converse for narrow: BFCVTN for bfloat16 where
// the CPU has it.
func narrowVec(t backend.DType, dst []uint16, src []float32) int {
	n := len(dst) &^ 7
	if !hasNEON || n == 0 {
		return 0
	}
	switch {
	case t != backend.BFloat16:
		narrowF16NEON(dst[:n], src[:n])
	case hasBF16:
		narrowBF16CVT(dst[:n], src[:n])
	default:
		narrowBF16NEON(dst[:n], src[:n])
	}
	return n
}
