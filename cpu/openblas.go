//go:build openblas

package cpu

/*
#cgo LDFLAGS: -lopenblas
void openblas_set_num_threads(int num_threads);
char *openblas_get_config(void);
*/
import "C"

import "gonum.org/v1/netlib/blas/netlib"

// With -tags openblas the ops multiply with OpenBLAS (Debian's
// libopenblas-dev) through gonum's netlib bindings. OpenBLAS runs one
// thread per call: the backend already runs one gemm per worker, as many
// workers as WithThreads says, and OpenBLAS threads of its own under each
// would oversubscribe the cores.
func init() {
	C.openblas_set_num_threads(1)
	sgemm = netlib.Implementation{}
	blasName = "OpenBLAS " + C.GoString(C.openblas_get_config()) + " via gonum/netlib"
}
