//go:build arm64 && !purego

package cpu

import (
	"math"

	"golang.org/x/sys/cpu"
)

// hasNEON says whether the softmax's NEON loops (expf_arm64.s) may run:
// ASIMD, which every ARMv8-A core has and x/sys/cpu reports;
// GODEBUG=cpu.asimd=off turns them off. The softcap, ALiBi, bfloat16
// exponential and whole-row softmax loops have no NEON version: they are
// the Go loops here.
var hasNEON = cpu.ARM64.HasASIMD

// expShiftNEON is expShift for len(row) a positive multiple of 8
// (expf_arm64.s).
//
//go:noescape
func expShiftNEON(row []float32, m float32) float64

// rowMaxNEON is the largest value of row, len(row) a positive multiple
// of 8 (expf_arm64.s).
//
//go:noescape
func rowMaxNEON(row []float32) float32

// scaleNEON multiplies x by a, len(x) a positive multiple of 8
// (expf_arm64.s).
//
//go:noescape
func scaleNEON(x []float32, a float32)

// expShiftVec runs the NEON loop over as much of row as it takes and
// returns how many values it did and their sum.
func expShiftVec(row []float32, m float32) (int, float64) {
	n := len(row) &^ 7
	if !hasNEON || n == 0 {
		return 0, 0
	}
	return n, expShiftNEON(row[:n], m)
}

// rowMaxVec is the largest value of as much of row as the NEON loop
// takes, and how much that is.
func rowMaxVec(row []float32) (int, float32) {
	n := len(row) &^ 7
	if !hasNEON || n == 0 {
		return 0, float32(math.Inf(-1))
	}
	return n, rowMaxNEON(row[:n])
}

// scaleVec scales as much of x as the NEON loop takes and returns how
// much that is.
func scaleVec(x []float32, a float32) int {
	n := len(x) &^ 7
	if !hasNEON || n == 0 {
		return 0
	}
	scaleNEON(x[:n], a)
	return n
}

func softcapVec([]float32, float32) int { return 0 }

func alibiVec([]float32, float32, int) int { return 0 }

func expShiftBF16Vec([]float32, float32, []uint16) (int, float64) { return 0, 0 }

func softmaxRowsFit(int, bool) bool { return false }

func softmaxRowsVec([]float32, int, int, int, []float64, []float64, []float64, []uint16) {}
