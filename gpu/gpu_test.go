//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/internal/gputest"
)

// openGPU is the one way the external GPU tests get a device
// (gputest.Open): it skips with the reason when no adapter can be opened,
// or fails under ATTN_REQUIRE_GPU=1 (as in CI), and closes the backend
// when the test ends.
func openGPU(t testing.TB) *gpu.Backend {
	t.Helper()
	return gputest.Open(t, gpu.New)
}

// Memory counts the bytes of live buffers and their peak, and ResetPeak
// starts a new peak at what is live.
func TestMemoryPeak(t *testing.T) {
	g := openGPU(t)
	live0, _ := g.Memory()
	a, err := g.Alloc(backend.Float32, 1<<18)
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.Alloc(backend.Float32, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	if live, peak := g.Memory(); live != live0+(1<<20)+(1<<18) || peak < live {
		t.Errorf("with 1 MiB + 256 KiB allocated: live %d, peak %d (live before %d)", live, peak, live0)
	}
	a.Release()
	if live, peak := g.Memory(); live != live0+(1<<18) || peak < live0+(1<<20)+(1<<18) {
		t.Errorf("after releasing 1 MiB: live %d, peak %d", live, peak)
	}
	g.ResetPeak()
	if live, peak := g.Memory(); peak != live {
		t.Errorf("after ResetPeak: live %d, peak %d", live, peak)
	}
	b.Release()
}
