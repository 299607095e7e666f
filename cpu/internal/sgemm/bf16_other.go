//go:build !amd64 || purego

package sgemm

import "gonum.org/v1/gonum/blas"

// bf16Kernels is empty off amd64 and under -tags purego: BF16Gemm widens
// to float32.
var bf16Kernels []*bf16Kernel

// bf16Slow is never asked without kernels.
func bf16Slow() bool { return false }

// packPanel packs nothing here (no AVX-512 packers): packB packs in Go.
func packPanel(tB blas.Transpose, kp int, b []uint16, ldb, p0, j int, dst []uint32, nr int) bool {
	return false
}
