package bench

import (
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/gogpu/gputypes"
)

// TestInHostMemory: the CPU backend, lavapipe and an integrated GPU read
// the host's memory, whose bandwidth a run measures; a discrete or
// virtual GPU does not, and its points get no fraction of it. Only the
// CPU backend and lavapipe compute on the host's cores, whose Sgemm rate
// the run measures: only their points get a roofline.
func TestInHostMemory(t *testing.T) {
	gpu := func(dt gputypes.DeviceType) backend.Info {
		return backend.Info{Kind: backend.KindGPU, Adapter: gputypes.AdapterInfo{DeviceType: dt}}
	}
	for _, c := range []struct {
		name  string
		info  backend.Info
		want  bool
		place placement
	}{
		{"cpu backend", backend.Info{Kind: backend.KindCPU}, true, hostCPU},
		{"lavapipe", gpu(gputypes.DeviceTypeCPU), true, hostCPU},
		{"integrated", gpu(gputypes.DeviceTypeIntegratedGPU), true, hostMemory},
		{"discrete", gpu(gputypes.DeviceTypeDiscreteGPU), false, offHost},
		{"virtual", gpu(gputypes.DeviceTypeVirtualGPU), false, offHost},
	} {
		if got := inHostMemory(c.info); got != c.want {
			t.Errorf("%s: inHostMemory = %v, want %v", c.name, got, c.want)
		}
		if got := placeOf(c.info); got != c.place {
			t.Errorf("%s: placeOf = %v, want %v", c.name, got, c.place)
		}
	}
	if got := placeOfPeer(Peer{Name: "ort-cpu-mha"}); got != hostCPU {
		t.Errorf("a CPU peer: placeOfPeer = %v, want hostCPU", got)
	}
	if got := placeOfPeer(Peer{Name: "ort-webgpu-mha", GPU: true}); got != hostMemory {
		t.Errorf("a GPU peer: placeOfPeer = %v, want hostMemory", got)
	}
	// The peers that run on a GPU (WebGPU, Vulkan) say so, and only they.
	for _, p := range peerTable {
		if gpu := strings.Contains(p.Name, "gpu") || strings.Contains(p.Name, "vulkan"); p.GPU != gpu {
			t.Errorf("peer %s: GPU %v, want %v", p.Name, p.GPU, gpu)
		}
	}
}
