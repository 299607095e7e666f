//go:build openblas

package openblas

/*
#cgo LDFLAGS: -lopenblas
void openblas_set_num_threads(int num_threads);
char *openblas_get_config(void);
*/
import "C"

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"
)

// Single sets OpenBLAS to one thread per call and returns it as a
// blas.Float32, with a name that gives its build (version, kernels).
func Single() (blas.Float32, string) {
	C.openblas_set_num_threads(1)
	return netlib.Implementation{}, "OpenBLAS " + C.GoString(C.openblas_get_config()) + " via gonum/netlib"
}
