//go:build !amd64 || purego

package cpu

// quantDot and quantAxpy: no 8-bit decoding kernels here yet; decodeTile
// widens each key row in Go.
func quantDot([]float32, int, rawRows, int, int, []float32, int, float32) int { return 0 }

func quantAxpy([]float32, int, rawRows, int, int, []float32, int) bool { return false }
