//go:build !openblas

package cpu

import "gonum.org/v1/gonum/blas"

// openBLAS says that this build has no OpenBLAS (see openblas.go).
func openBLAS() (blas.Float32, string, bool) { return nil, "", false }
