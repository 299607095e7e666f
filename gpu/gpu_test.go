//go:build cgo && !nogpu

package gpu_test

import (
	"os"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/gpu"
)

// openGPU is the one way GPU tests get a device: it skips with the reason
// when no adapter can be opened, unless ATTN_REQUIRE_GPU=1 (as in CI),
// where a missing adapter fails the test instead. The backend is closed
// when the test ends.
func openGPU(t testing.TB) *gpu.Backend {
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

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t testing.TB) backend.Backend { return openGPU(t) })
}
