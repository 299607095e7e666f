//go:build !amd64 || purego

package cpu

// hasAVX2 is false off amd64 and under -tags purego: expShift is the
// scalar loop.
const hasAVX2 = false

func expShiftVec([]float32, float32) (int, float64) { return 0, 0 }
