//go:build !(amd64 || arm64) || purego

package cpu

import "math"

// hasAVX2 is false without vector loops (off amd64 and arm64, and under
// -tags purego): expShift is the scalar loop.
const hasAVX2 = false

func expShiftVec([]float32, float32) (int, float64) { return 0, 0 }

func rowMaxVec([]float32) (int, float32) { return 0, float32(math.Inf(-1)) }

func scaleVec([]float32, float32) int { return 0 }

func softcapVec([]float32, float32) int { return 0 }

func alibiVec([]float32, float32, int) int { return 0 }

func expShiftBF16Vec([]float32, float32, []uint16) (int, float64) { return 0, 0 }

func softmaxRowsFit(int, bool) bool { return false }

func softmaxRowsVec([]float32, int, int, int, []float64, []float64, []float64, []uint16) {}
