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
	lvpWF := gpu.WebGPUFeatures{ShaderF16: true, TimestampQuery: true, TimestampsInEncoders: true,
		SubgroupSizeUnreported: "not reported by wgpu-native 0.17"}
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
  for attn: ShaderF16 yes, Subgroups no, TimestampQuery yes (inside encoders yes, inside passes no)
  subgroup size: not reported by wgpu-native 0.17
  cooperative matrices: not offered by the adapter
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
  for attn: ShaderF16 no, Subgroups no, TimestampQuery no (inside encoders no, inside passes no)
  subgroup size: not reported
  cooperative matrices: not offered by the adapter
`
	// A GPU whose binding reports its subgroup sizes, one size or a range.
	sub := bare
	sub.Adapter.Name = "Subgroup GPU"
	subWF := gpu.WebGPUFeatures{Subgroups: true, TimestampQuery: true, TimestampsInEncoders: true, TimestampsInPasses: true,
		SubgroupMinSize: 32, SubgroupMaxSize: 64}
	subText := strings.NewReplacer("Some GPU", "Subgroup GPU",
		"Subgroups no, TimestampQuery no (inside encoders no, inside passes no)", "Subgroups yes, TimestampQuery yes (inside encoders yes, inside passes yes)",
		"subgroup size: not reported", "subgroup size: 32 to 64").Replace(bareText)
	sub32WF := subWF
	sub32WF.SubgroupMinSize = 32
	sub32WF.SubgroupMaxSize = 32
	sub32Text := strings.Replace(subText, "32 to 64", "32", 1)
	// One measured by running a kernel (wgpu-native 27 reports none).
	sub8WF := sub32WF
	sub8WF.SubgroupMinSize, sub8WF.SubgroupMaxSize, sub8WF.SubgroupSizeMeasured = 8, 8, true
	sub8Text := strings.Replace(subText, "32 to 64", "8 (measured: a kernel of 256 invocations ran in subgroups of this size)", 1)
	// Cooperative matrices offered and refused, in wgpu-native's words
	// on one line.
	coopWF := subWF
	coopWF.CoopMatrix = gpu.CoopMatrix{Offered: true, Requested: true, Refused: "Validation Error\nexperimental features are not enabled"}
	coopText := strings.Replace(subText, "cooperative matrices: not offered by the adapter",
		"cooperative matrices: offered, refused: Validation Error; experimental features are not enabled", 1)
	grantedWF := subWF
	grantedWF.CoopMatrix = gpu.CoopMatrix{Offered: true, Requested: true, Granted: true}
	grantedText := strings.Replace(subText, "not offered by the adapter", "offered and granted", 1)
	lvpD := gpu.AdapterDescription{Info: lvp, WebGPU: lvpWF}
	bareD := gpu.AdapterDescription{Info: bare}

	noAdapter := backend.Errorf(backend.ErrUnavailable, "no Vulkan adapter was found\n(install one)")
	for _, tc := range []struct {
		name   string
		infos  []gpu.AdapterDescription
		err    error
		opened map[gputypes.AdapterInfo]openedGPU
		want   string
	}{
		{"one", []gpu.AdapterDescription{lvpD}, nil, nil, lvpText},
		{"two", []gpu.AdapterDescription{bareD, lvpD}, nil, map[gputypes.AdapterInfo]openedGPU{}, bareText + lvpText},
		{"subgroup sizes", []gpu.AdapterDescription{{Info: sub, WebGPU: subWF}}, nil, nil, subText},
		{"one subgroup size", []gpu.AdapterDescription{{Info: sub, WebGPU: sub32WF}}, nil, nil, sub32Text},
		{"cooperative matrices refused", []gpu.AdapterDescription{{Info: sub, WebGPU: coopWF}}, nil, nil, coopText},
		{"cooperative matrices granted", []gpu.AdapterDescription{{Info: sub, WebGPU: grantedWF}}, nil, nil, grantedText},
		{"a measured subgroup size", []gpu.AdapterDescription{{Info: sub, WebGPU: sub8WF}}, nil, nil, sub8Text},
		{"opened", []gpu.AdapterDescription{bareD, lvpD}, nil, map[gputypes.AdapterInfo]openedGPU{lvp.Adapter: {"gpu", gpuText(lvp, lvpWF)}},
			bareText + "gpu adapter: llvmpipe (LLVM 15.0.6, 256 bits): opened by gpu, above\n"},
		{"opened with fewer features", []gpu.AdapterDescription{lvpD}, nil, map[gputypes.AdapterInfo]openedGPU{lvp.Adapter: {"gpu", gpuText(lvpDevice, gpu.WebGPUFeatures{})}},
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
	adapters, err := gpu.DescribeAdapters()
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
	for _, ad := range adapters {
		if want := "\ngpu adapter: " + ad.Info.Adapter.Name; !strings.Contains(stdout, want) {
			t.Errorf("devices output lacks %q:\n%s", want, stdout)
		}
	}
	// Every adapter's limits and features are shown, with the backend
	// that opened it or on their own, and the features that matter to
	// attn, which are the gputypes set's where it names them.
	for _, ad := range adapters {
		info, wf := ad.Info, ad.WebGPU
		if text := gpuText(info, wf); !strings.Contains(stdout, text) {
			t.Errorf("devices output lacks %s's limits and features\n%s\nin\n%s", info.Adapter.Name, text, stdout)
		}
		fs := info.Features
		if wf.ShaderF16 != fs.Contains(gputypes.FeatureShaderF16) || wf.Subgroups != fs.Contains(gputypes.FeatureSubgroupOperations) ||
			wf.TimestampQuery != fs.Contains(gputypes.FeatureTimestampQuery) {
			t.Errorf("%s: WebGPU features %+v disagree with the gputypes set %s", info.Adapter.Name, wf, featureList(fs))
		}
		if wf.SubgroupMaxSize == 0 && wf.SubgroupSizeUnreported == "" {
			t.Errorf("%s: no subgroup size and no reason", info.Adapter.Name)
		}
	}
	if !strings.Contains(stdout, "\n  for attn: ShaderF16 ") || !strings.Contains(stdout, "\n  subgroup size: ") {
		t.Errorf("devices output lacks the features for attn or the subgroup size:\n%s", stdout)
	}
	if strings.Contains(stdout, "gpu adapters: none") {
		t.Errorf("devices output says there are no adapters:\n%s", stdout)
	}
	if i, j := strings.Index(stdout, "\ngpu adapter: "), strings.Index(stdout, "\nauto"); i < 0 || j < i {
		t.Errorf("the adapters do not come before the auto line:\n%s", stdout)
	}
}

// reason drops the backend's name and ErrUnavailable's words, in either
// order, so that a line reads "gpu: unavailable: <why>" once each.
func TestReason(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{backend.Wrapf(backend.Errorf(backend.ErrUnavailable, "gpu: ATTN_GPU_PLAN=\"x\": want auto, cpu or hardware"), "gpu"), `ATTN_GPU_PLAN="x": want auto, cpu or hardware`},
		{backend.Errorf(backend.ErrUnavailable, "no adapter"), "no adapter"},
		{errors.New("gpu: broken"), "broken"},
		{errors.New("gpu: attn: backend unavailable: no adapter"), "no adapter"},
		{errors.New("cpu: gpu: odd"), "cpu: gpu: odd"},
	} {
		if got := reason("gpu", c.err); got != c.want {
			t.Errorf("reason(gpu, %q) = %q, want %q", c.err, got, c.want)
		}
	}
}
