//go:build (cgo || gogpu) && !nogpu

package kernels_test

import (
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/internal/gputest"
)

// The GPU joins onnxBackends where the build has it. Without an adapter
// its cases skip with the reason, and fail instead under
// ATTN_REQUIRE_GPU=1, as CI runs them.
func init() {
	onnxBackends = append(onnxBackends, struct {
		name string
		open func(testing.TB) backend.Backend
	}{"gpu", openGPU})
}

func openGPU(t testing.TB) backend.Backend {
	t.Helper()
	return gputest.Open(t, gpu.New)
}
