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

// TestHostCeilings: a sweep measures the host's bandwidth where a point
// runs in the host's memory and its compute ceilings where one runs on
// its CPU; a discrete GPU's sweep neither, a GPU peer beside it only the
// bandwidth, and a peer that cannot run does not count.
func TestHostCeilings(t *testing.T) {
	be := func(info backend.Info) backend.Backend { return infoBackend{info: info} }
	gpu := func(dt gputypes.DeviceType) backend.Backend {
		return be(backend.Info{Kind: backend.KindGPU, Adapter: gputypes.AdapterInfo{DeviceType: dt}})
	}
	cpuPeer, gpuPeer := Peer{Name: "ort-cpu-mha"}, Peer{Name: "ggml-vulkan", GPU: true}
	gone := Peer{Name: "ort-cpu-mha", Unavailable: "not installed"}
	for _, c := range []struct {
		name            string
		bes             []backend.Backend
		peers           []Peer
		memory, compute bool
	}{
		{"nothing", nil, nil, false, false},
		{"discrete", []backend.Backend{gpu(gputypes.DeviceTypeDiscreteGPU)}, nil, false, false},
		{"discrete and an unavailable CPU peer", []backend.Backend{gpu(gputypes.DeviceTypeDiscreteGPU)}, []Peer{gone}, false, false},
		{"discrete and a GPU peer", []backend.Backend{gpu(gputypes.DeviceTypeDiscreteGPU)}, []Peer{gpuPeer}, true, false},
		{"integrated", []backend.Backend{gpu(gputypes.DeviceTypeIntegratedGPU)}, nil, true, false},
		{"lavapipe", []backend.Backend{gpu(gputypes.DeviceTypeCPU)}, nil, true, true},
		{"cpu backend", []backend.Backend{be(backend.Info{Kind: backend.KindCPU})}, nil, true, true},
		{"discrete and a CPU peer", []backend.Backend{gpu(gputypes.DeviceTypeDiscreteGPU)}, []Peer{cpuPeer}, true, true},
	} {
		if memory, compute := HostCeilings(c.bes, c.peers); memory != c.memory || compute != c.compute {
			t.Errorf("%s: HostCeilings = %v, %v; want %v, %v", c.name, memory, compute, c.memory, c.compute)
		}
	}
}

// infoBackend is a backend that only answers Info (HostCeilings asks
// nothing else).
type infoBackend struct {
	backend.Backend
	info backend.Info
}

func (b infoBackend) Info() backend.Info { return b.info }
