//go:build (cgo || gogpu) && !nogpu

package kernels_test

import (
	"testing"

	"github.com/attn-go/attn/backend"
)

// The GPU joins stridesBackends where the build has it: it takes no
// strides (Caps.Strides is false), so kernels gathers its views into
// dense buffers. Without an adapter its cases skip, failing instead
// under ATTN_REQUIRE_GPU=1.
func init() {
	stridesBackends = append(stridesBackends, struct {
		name string
		open func(testing.TB) backend.Backend
	}{"gpu", openGPU})
}
