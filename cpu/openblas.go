//go:build openblas

package cpu

import (
	"gonum.org/v1/gonum/blas"

	"github.com/attn-go/attn/cpu/internal/openblas"
)

// With -tags openblas the ops multiply with OpenBLAS (Debian's
// libopenblas-dev) through gonum's netlib bindings. OpenBLAS runs one
// thread per call: the backend already runs one gemm per worker, as many
// workers as WithThreads says, and OpenBLAS threads of its own under each
// would oversubscribe the cores.
func openBLAS() (blas.Float32, string, bool) {
	impl, name := openblas.Single()
	return impl, name, true
}
