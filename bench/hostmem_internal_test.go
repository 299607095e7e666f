package bench

import (
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/gogpu/gputypes"
)

// TestInHostMemory: the CPU backend, lavapipe and an integrated GPU read
// the host's memory, whose bandwidth a run measures; a discrete or
// virtual GPU does not, and its points get no fraction of it.
func TestInHostMemory(t *testing.T) {
	gpu := func(dt gputypes.DeviceType) backend.Info {
		return backend.Info{Kind: backend.KindGPU, Adapter: gputypes.AdapterInfo{DeviceType: dt}}
	}
	for _, c := range []struct {
		name string
		info backend.Info
		want bool
	}{
		{"cpu backend", backend.Info{Kind: backend.KindCPU}, true},
		{"lavapipe", gpu(gputypes.DeviceTypeCPU), true},
		{"integrated", gpu(gputypes.DeviceTypeIntegratedGPU), true},
		{"discrete", gpu(gputypes.DeviceTypeDiscreteGPU), false},
		{"virtual", gpu(gputypes.DeviceTypeVirtualGPU), false},
	} {
		if got := inHostMemory(c.info); got != c.want {
			t.Errorf("%s: inHostMemory = %v, want %v", c.name, got, c.want)
		}
	}
}
