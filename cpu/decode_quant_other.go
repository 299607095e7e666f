//go:build !amd64 || purego

package cpu

// quantDot and quantAxpy: no 8-bit decoding kernels here yet; decodeTile
// widens each key row in Go.
func quantDot([]float32, int, rawRows, int, int, []float32, int, float32) int { return 0 }

func quantAxpy([]float32, int, rawRows, int, int, []float32, int) bool { return false }

// quantWidth, quantDotW and quantAxpyW as on amd64 (decode_quant_amd64.go),
// for the tests: no kernels.
func quantWidth() int { return -1 }

func quantDotW(int, []float32, int, rawRows, int, int, []float32, int, float32) int { return 0 }

func quantAxpyW(int, []float32, int, rawRows, int, int, []float32, int) bool { return false }
