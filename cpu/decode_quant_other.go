//go:build !(amd64 || arm64) || purego

package cpu

// No 8-bit decoding kernels here: decodeTile widens each key row in Go.
// quantWidth, quantStep, quantDotW and quantAxpyW are as on amd64 and
// arm64 (decode_quant.go), for the tests.
func quantWidth() int { return -1 }

func quantStep(int) int { return 0 }

func quantDotW(int, []float32, int, rawRows, int, int, []float32, int, float32) int { return 0 }

func quantAxpyW(int, []float32, int, rawRows, int, int, []float32, int) bool { return false }
