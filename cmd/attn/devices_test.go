package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu"
	"github.com/gogpu/gputypes"
)

func TestListAdapters(t *testing.T) {
	lvp := backend.Info{
		Kind: backend.KindGPU,
		Adapter: gputypes.AdapterInfo{
			Name: "llvmpipe (LLVM 15.0.6, 256 bits)", Vendor: "Mesa", VendorID: 0x10005,
			DeviceType: gputypes.DeviceTypeCPU, Driver: "llvmpipe", DriverInfo: "Mesa 22.3.6 (LLVM 15.0.6)",
			Backend: gputypes.BackendVulkan,
		},
		Limits: gputypes.Limits{
			MaxStorageBufferBindingSize: 128 << 20, MaxBufferSize: 1<<31 - 1, MaxStorageBuffersPerShaderStage: 32,
			MaxComputeWorkgroupStorageSize: 32 << 10, MaxComputeInvocationsPerWorkgroup: 1024,
			MaxComputeWorkgroupSizeX: 1024, MaxComputeWorkgroupSizeY: 1024, MaxComputeWorkgroupSizeZ: 1024,
			MaxComputeWorkgroupsPerDimension: 65535,
		},
		Features: gputypes.Features(gputypes.FeatureTimestampQuery | gputypes.FeatureShaderF16),
		Detail:   "go-webgpu v0.17.1, wgpu-native (version not recorded in the library)",
	}
	const lvpText = `gpu adapter: llvmpipe (LLVM 15.0.6, 256 bits)
  vendor: Mesa (vendor id 0x10005, device id 0x0000)
  driver: llvmpipe (Mesa 22.3.6 (LLVM 15.0.6))
  device type: CPU
  graphics backend: Vulkan
  limits:
    MaxStorageBufferBindingSize: 134217728 (128 MiB)
    MaxBufferSize: 2147483647 (2 GiB)
    MaxStorageBuffersPerShaderStage: 32
    MaxComputeWorkgroupStorageSize: 32768 (32 KiB)
    MaxComputeInvocationsPerWorkgroup: 1024
    MaxComputeWorkgroupSize: 1024 × 1024 × 1024
    MaxComputeWorkgroupsPerDimension: 65535
  features: ShaderF16, TimestampQuery
  detail: go-webgpu v0.17.1, wgpu-native (version not recorded in the library)
`
	lvpDevice := lvp
	lvpDevice.Features = 0
	bare := backend.Info{Kind: backend.KindGPU, Adapter: gputypes.AdapterInfo{Name: "Some GPU", Backend: gputypes.BackendVulkan}}
	const bareText = `gpu adapter: Some GPU
  vendor: (none)
  driver: (none)
  device type: Other
  graphics backend: Vulkan
  limits:
    MaxStorageBufferBindingSize: 0 (0 bytes)
    MaxBufferSize: 0 (0 bytes)
    MaxStorageBuffersPerShaderStage: 0
    MaxComputeWorkgroupStorageSize: 0 (0 bytes)
    MaxComputeInvocationsPerWorkgroup: 0
    MaxComputeWorkgroupSize: 0 × 0 × 0
    MaxComputeWorkgroupsPerDimension: 0
  features: (none)
`
	noAdapter := backend.Errorf(backend.ErrUnavailable, "no Vulkan adapter was found\n(install one)")
	for _, tc := range []struct {
		name   string
		infos  []backend.Info
		err    error
		opened map[gputypes.AdapterInfo]openedGPU
		want   string
	}{
		{"one", []backend.Info{lvp}, nil, nil, lvpText},
		{"two", []backend.Info{bare, lvp}, nil, map[gputypes.AdapterInfo]openedGPU{}, bareText + lvpText},
		{"opened", []backend.Info{bare, lvp}, nil, map[gputypes.AdapterInfo]openedGPU{lvp.Adapter: {"gpu", gpuText(lvp)}},
			bareText + "gpu adapter: llvmpipe (LLVM 15.0.6, 256 bits): opened by gpu, above\n"},
		{"opened with fewer features", []backend.Info{lvp}, nil, map[gputypes.AdapterInfo]openedGPU{lvp.Adapter: {"gpu", gpuText(lvpDevice)}},
			strings.Replace(lvpText, "\n", " (opened by gpu, above, as a device with other limits or features)\n", 1)},
		{"none", nil, noAdapter, nil, "gpu adapters: none: no Vulkan adapter was found; (install one)\n"},
		{"none, plain error", nil, errors.New("gpu: broken"), nil, "gpu adapters: none: broken\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			p := &printer{w: &out}
			listAdapters(p, tc.infos, tc.err, tc.opened)
			if p.err != nil {
				t.Fatal(p.err)
			}
			if got := out.String(); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestDevicesListsAdapters runs "attn devices" and checks it lists what
// gpu.Adapters finds here, or why it finds nothing, and exits 0 either
// way (the CPU backend always opens).
func TestDevicesListsAdapters(t *testing.T) {
	t.Setenv(backend.EnvBackend, "")
	code, stdout, stderr := runCmd(t, "devices")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	infos, err := gpu.Adapters()
	if err != nil {
		if !errors.Is(err, backend.ErrUnavailable) {
			t.Errorf("gpu.Adapters() = %v, want an error wrapping ErrUnavailable", err)
		}
		if want := "\ngpu adapters: none: " + reason("gpu", err) + "\n"; !strings.Contains(stdout, want) {
			t.Errorf("devices output lacks %q:\n%s", want, stdout)
		}
		t.Logf("no GPU adapter here: %v", err)
		return
	}
	for _, info := range infos {
		if want := "\ngpu adapter: " + info.Adapter.Name; !strings.Contains(stdout, want) {
			t.Errorf("devices output lacks %q:\n%s", want, stdout)
		}
	}
	// Every adapter's limits and features are shown, with the backend
	// that opened it or on their own.
	for _, info := range infos {
		if text := gpuText(info); !strings.Contains(stdout, text) {
			t.Errorf("devices output lacks %s's limits and features\n%s\nin\n%s", info.Adapter.Name, text, stdout)
		}
	}
	if strings.Contains(stdout, "gpu adapters: none") {
		t.Errorf("devices output says there are no adapters:\n%s", stdout)
	}
	if i, j := strings.Index(stdout, "\ngpu adapter: "), strings.Index(stdout, "\nauto"); i < 0 || j < i {
		t.Errorf("the adapters do not come before the auto line:\n%s", stdout)
	}
}
