//go:build (amd64 || arm64) && !purego

package cpu

// dotRows4Quant and axpyRows4Quant are dotRows4 and axpyRows4 for an
// 8-bit K or V (q8 or fp8): the vector kernels where the CPU has them
// (quantKernels), else none (0 keys, false), and decodeTile's loop in
// Go takes every key.
func dotRows4Quant(q []float32, ldq int, k rawRows, n, d int, s []float32, lds int, alpha float32) int {
	return quantDot(q, ldq, k, n, d, s, lds, alpha)
}

func axpyRows4Quant(p []float32, ldp int, v rawRows, n, dv int, acc []float32, ldacc int) bool {
	return quantAxpy(p, ldp, v, n, dv, acc, ldacc)
}
