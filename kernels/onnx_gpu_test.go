//go:build cgo && !nogpu

package kernels_test

import (
	"os"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu"
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
	b, err := gpu.New()
	if err != nil {
		if os.Getenv("ATTN_REQUIRE_GPU") == "1" {
			t.Fatalf("ATTN_REQUIRE_GPU=1 but the gpu backend is unavailable: %v", err)
		}
		t.Skipf("no WebGPU adapter: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
