//go:build cgo && !nogpu

package gpu

import (
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/gputest"
	"github.com/gogpu/gputypes"
	"github.com/rajveermalviya/go-webgpu/wgpu"
)

// requireAdapter skips the test, with the reason, when this host has no
// adapter the backend would choose ($ATTN_ADAPTER included), and fails it
// instead when $ATTN_REQUIRE_GPU is 1.
func requireAdapter(t testing.TB) {
	t.Helper()
	testAdapter(t)
}

// testAdapter returns the instance and the adapter chooseAdapter picks,
// released when the test ends; it skips or fails as requireAdapter does
// when there is none.
func testAdapter(t testing.TB) (*wgpu.Instance, *wgpu.Adapter) {
	t.Helper()
	inst := newInstance()
	a, err := chooseAdapter(inst)
	if err != nil {
		inst.Release()
		gputest.Unavailable(t, err)
	}
	t.Cleanup(func() {
		a.Release()
		inst.Release()
	})
	return inst, a
}

func TestAdapterInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   wgpu.AdapterProperties
		want gputypes.AdapterInfo
	}{
		{"lavapipe", wgpu.AdapterProperties{
			VendorId: 0x10005, VendorName: "llvmpipe", DeviceId: 0,
			Name: "llvmpipe (LLVM 15.0.6, 256 bits)", DriverDescription: "Mesa 22.3.6 (LLVM 15.0.6)",
			AdapterType: wgpu.AdapterType_CPU, BackendType: wgpu.BackendType_Vulkan,
		}, gputypes.AdapterInfo{
			Name: "llvmpipe (LLVM 15.0.6, 256 bits)", Vendor: "Mesa", VendorID: 0x10005,
			DeviceType: gputypes.DeviceTypeCPU, Driver: "llvmpipe", DriverInfo: "Mesa 22.3.6 (LLVM 15.0.6)",
			Backend: gputypes.BackendVulkan,
		}},
		{"discrete", wgpu.AdapterProperties{
			VendorId: 0x10de, VendorName: "NVIDIA", Architecture: "ignored", DeviceId: 0x2684,
			Name: "NVIDIA GeForce RTX 4090", DriverDescription: "550.54.14",
			AdapterType: wgpu.AdapterType_DiscreteGPU, BackendType: wgpu.BackendType_Vulkan,
		}, gputypes.AdapterInfo{
			Name: "NVIDIA GeForce RTX 4090", Vendor: "NVIDIA", VendorID: 0x10de, DeviceID: 0x2684,
			DeviceType: gputypes.DeviceTypeDiscreteGPU, Driver: "NVIDIA", DriverInfo: "550.54.14",
			Backend: gputypes.BackendVulkan,
		}},
		{"integrated metal", wgpu.AdapterProperties{
			VendorId: 0x106b, Name: "Apple M2", AdapterType: wgpu.AdapterType_IntegratedGPU, BackendType: wgpu.BackendType_Metal,
		}, gputypes.AdapterInfo{
			Name: "Apple M2", Vendor: "Apple", VendorID: 0x106b,
			DeviceType: gputypes.DeviceTypeIntegratedGPU, Backend: gputypes.BackendMetal,
		}},
		{"unknown vendor and type, d3d12", wgpu.AdapterProperties{
			VendorId: 0x1234, AdapterType: wgpu.AdapterType_Unknown, BackendType: wgpu.BackendType_D3D12,
		}, gputypes.AdapterInfo{
			VendorID: 0x1234, DeviceType: gputypes.DeviceTypeOther, Backend: gputypes.BackendDX12,
		}},
		{"gles", wgpu.AdapterProperties{AdapterType: wgpu.AdapterType(99), BackendType: wgpu.BackendType_OpenGLES},
			gputypes.AdapterInfo{DeviceType: gputypes.DeviceTypeOther, Backend: gputypes.BackendGL}},
		{"gl", wgpu.AdapterProperties{BackendType: wgpu.BackendType_OpenGL},
			gputypes.AdapterInfo{DeviceType: gputypes.DeviceTypeDiscreteGPU, Backend: gputypes.BackendGL}},
		{"browser", wgpu.AdapterProperties{BackendType: wgpu.BackendType_WebGPU},
			gputypes.AdapterInfo{DeviceType: gputypes.DeviceTypeDiscreteGPU, Backend: gputypes.BackendBrowserWebGPU}},
		{"d3d11 has no counterpart", wgpu.AdapterProperties{BackendType: wgpu.BackendType_D3D11},
			gputypes.AdapterInfo{DeviceType: gputypes.DeviceTypeDiscreteGPU, Backend: gputypes.BackendEmpty}},
		{"null", wgpu.AdapterProperties{BackendType: wgpu.BackendType_Null},
			gputypes.AdapterInfo{DeviceType: gputypes.DeviceTypeDiscreteGPU, Backend: gputypes.BackendEmpty}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := adapterInfo(tc.in); got != tc.want {
				t.Errorf("adapterInfo(%+v)\n got %+v\nwant %+v", tc.in, got, tc.want)
			}
		})
	}
}

// TestConvertLimits gives every wgpu limit a distinct value and checks
// that each lands in the gputypes field of the same name, and that only
// the fields known to lack a counterpart are left out.
func TestConvertLimits(t *testing.T) {
	noCounterpart := map[string]bool{"MaxInterStageShaderComponents": true}
	notReported := map[string]bool{"MaxBindGroupsPlusVertexBuffers": true, "MaxNonSamplerBindings": true}

	var in wgpu.Limits
	iv := reflect.ValueOf(&in).Elem()
	for i := range iv.NumField() {
		f := iv.Field(i)
		v := uint64(1000 + i)
		if f.Kind() == reflect.Uint64 {
			v = 1<<40 + uint64(i) // beyond 32 bits: no truncation
		}
		f.SetUint(v)
	}
	got := convertLimits(in)
	gv := reflect.ValueOf(got)
	for i := range iv.NumField() {
		name := iv.Type().Field(i).Name
		g := gv.FieldByName(name)
		switch {
		case noCounterpart[name]:
			if g.IsValid() {
				t.Errorf("%s is listed as having no gputypes counterpart, but gputypes.Limits has it", name)
			}
		case !g.IsValid():
			t.Errorf("wgpu.Limits.%s has no gputypes.Limits field and is not listed as such", name)
		case g.Uint() != iv.Field(i).Uint():
			t.Errorf("%s = %d, want %d", name, g.Uint(), iv.Field(i).Uint())
		}
	}
	for i := range gv.NumField() {
		name := gv.Type().Field(i).Name
		if _, ok := iv.Type().FieldByName(name); ok {
			continue
		}
		if !notReported[name] {
			t.Errorf("gputypes.Limits.%s has no wgpu counterpart and is not listed as such", name)
		}
		if v := gv.Field(i).Uint(); v != 0 {
			t.Errorf("%s = %d, want 0 (wgpu-native does not report it)", name, v)
		}
	}

	// The lavapipe values the backend sizes its dispatches by.
	lvp := wgpu.Limits{
		MaxStorageBufferBindingSize: 134217728, MaxBufferSize: 2147483647,
		MaxComputeWorkgroupStorageSize: 32768, MaxComputeInvocationsPerWorkgroup: 1024,
		MaxComputeWorkgroupSizeX: 1024, MaxComputeWorkgroupSizeY: 1024, MaxComputeWorkgroupSizeZ: 1024,
		MaxComputeWorkgroupsPerDimension: 65535, MaxStorageBuffersPerShaderStage: 32, MaxPushConstantSize: 128,
	}
	want := gputypes.Limits{
		MaxStorageBufferBindingSize: 134217728, MaxBufferSize: 2147483647,
		MaxComputeWorkgroupStorageSize: 32768, MaxComputeInvocationsPerWorkgroup: 1024,
		MaxComputeWorkgroupSizeX: 1024, MaxComputeWorkgroupSizeY: 1024, MaxComputeWorkgroupSizeZ: 1024,
		MaxComputeWorkgroupsPerDimension: 65535, MaxStorageBuffersPerShaderStage: 32, MaxPushConstantSize: 128,
	}
	if got := convertLimits(lvp); got != want {
		t.Errorf("convertLimits(lavapipe's)\n got %+v\nwant %+v", got, want)
	}
}

func TestConvertFeatures(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []wgpu.FeatureName
		want gputypes.Features
	}{
		{"none", nil, 0},
		{"undefined", []wgpu.FeatureName{wgpu.FeatureName_Undefined}, 0},
		{"timestamps", []wgpu.FeatureName{wgpu.FeatureName_TimestampQuery}, gputypes.Features(gputypes.FeatureTimestampQuery)},
		{"duplicates", []wgpu.FeatureName{wgpu.FeatureName_ShaderF16, wgpu.FeatureName_ShaderF16},
			gputypes.Features(gputypes.FeatureShaderF16)},
		{"no counterpart", []wgpu.FeatureName{wgpu.NativeFeature_VertexWritableStorage, wgpu.FeatureName(0x7fff)}, 0},
		{"lavapipe", []wgpu.FeatureName{
			wgpu.FeatureName_DepthClipControl, wgpu.FeatureName_Depth32FloatStencil8, wgpu.FeatureName_TimestampQuery,
			wgpu.FeatureName_PipelineStatisticsQuery, wgpu.FeatureName_TextureCompressionBC, wgpu.FeatureName_IndirectFirstInstance,
			wgpu.FeatureName_ShaderF16, wgpu.FeatureName_RG11B10UfloatRenderable, wgpu.NativeFeature_PushConstants,
			wgpu.NativeFeature_TextureAdapterSpecificFormatFeatures, wgpu.NativeFeature_MultiDrawIndirect,
			wgpu.NativeFeature_MultiDrawIndirectCount, wgpu.NativeFeature_VertexWritableStorage,
		}, gputypes.Features(gputypes.FeatureDepthClipControl | gputypes.FeatureDepth32FloatStencil8 | gputypes.FeatureTimestampQuery |
			gputypes.FeaturePipelineStatisticsQuery | gputypes.FeatureTextureCompressionBC | gputypes.FeatureIndirectFirstInstance |
			gputypes.FeatureShaderF16 | gputypes.FeatureRG11B10UfloatRenderable | gputypes.FeaturePushConstants |
			gputypes.FeatureTextureAdapterSpecificFormatFeatures | gputypes.FeatureMultiDrawIndirect |
			gputypes.FeatureMultiDrawIndirectCount)},
		{"the rest", []wgpu.FeatureName{
			wgpu.FeatureName_TextureCompressionETC2, wgpu.FeatureName_TextureCompressionASTC,
			wgpu.FeatureName_BGRA8UnormStorage, wgpu.FeatureName_Float32Filterable,
		}, gputypes.Features(gputypes.FeatureTextureCompressionETC2 | gputypes.FeatureTextureCompressionASTC |
			gputypes.FeatureBGRA8UnormStorage | gputypes.FeatureFloat32Filterable)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := convertFeatures(tc.in); got != tc.want {
				t.Errorf("convertFeatures(%v) = %s, want %s", tc.in, featureNames(got), featureNames(tc.want))
			}
		})
	}
	// Every flag in the table is distinct, so no two features merge.
	seen := map[gputypes.Feature]wgpu.FeatureName{}
	for w, g := range features {
		if prev, ok := seen[g]; ok {
			t.Errorf("%v and %v both map to %v", prev, w, g)
		}
		seen[g] = w
	}
}

func featureNames(fs gputypes.Features) string {
	var names []string
	for bit := range 64 {
		if f := gputypes.Feature(1) << bit; fs.Contains(f) {
			names = append(names, f.String())
		}
	}
	return "[" + strings.Join(names, " ") + "]"
}

func TestLogLevel(t *testing.T) {
	for in, want := range map[string]wgpu.LogLevel{
		"off": wgpu.LogLevel_Off, "error": wgpu.LogLevel_Error, "warn": wgpu.LogLevel_Warn,
		"info": wgpu.LogLevel_Info, "debug": wgpu.LogLevel_Debug, "trace": wgpu.LogLevel_Trace,
		" Trace ": wgpu.LogLevel_Trace, "INFO": wgpu.LogLevel_Info, "1": wgpu.LogLevel_Warn, "yes": wgpu.LogLevel_Warn,
	} {
		if got := logLevel(in); got != want {
			t.Errorf("logLevel(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestNativeVersion(t *testing.T) {
	for v, want := range map[uint32]string{
		0:          "(version not recorded in the library)",
		0x00110002: "0.17.0.2",
		0x01020304: "1.2.3.4",
	} {
		if got := nativeVersion(v); got != want {
			t.Errorf("nativeVersion(%#x) = %q, want %q", v, got, want)
		}
	}
}

func TestGoWebGPUVersion(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Skipf("go.mod: %v", err)
	}
	const path = "github.com/rajveermalviya/go-webgpu/wgpu "
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require ")); len(f) >= 2 && f[0]+" " == path {
			if f[1] != goWebGPUVersion {
				t.Errorf("goWebGPUVersion = %s, but go.mod requires %s", goWebGPUVersion, f[1])
			}
			if want := "go-webgpu " + f[1] + ", wgpu-native "; !strings.HasPrefix(libraryVersions(), want) {
				t.Errorf("libraryVersions() = %q, want it to begin %q", libraryVersions(), want)
			}
			return
		}
	}
	t.Errorf("go.mod does not require %s", path)
}

func TestSetupLoggingDisablesDeviceSelect(t *testing.T) {
	inst := newInstance()
	inst.Release()
	_, nds := os.LookupEnv("NODEVICE_SELECT")
	_, mds := os.LookupEnv("MESA_VK_DEVICE_SELECT")
	if !nds && !mds {
		t.Error("NODEVICE_SELECT is still unset after newInstance")
	}
}

func TestChooseAdapterNoMatch(t *testing.T) {
	const want = "no-such-adapter-Zq9"
	t.Setenv(envAdapter, want)
	inst := newInstance()
	defer inst.Release()
	a, err := chooseAdapter(inst)
	if err == nil {
		a.Release()
		t.Fatalf("chooseAdapter with %s=%q succeeded", envAdapter, want)
	}
	if a != nil {
		t.Errorf("chooseAdapter returned an adapter with its error %v", err)
	}
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("error %v does not wrap ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), envAdapter) || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s=%q", err, envAdapter, want)
	}
	// The names on offer are listed, when there are any.
	if infos, _ := Adapters(); len(infos) > 0 && !strings.Contains(err.Error(), infos[0].Adapter.Name) {
		t.Errorf("error %q does not list the adapter %q", err, infos[0].Adapter.Name)
	}
}

func TestChooseAdapterMatch(t *testing.T) {
	t.Setenv(envAdapter, "")
	requireAdapter(t)
	infos, err := Adapters()
	if err != nil {
		t.Fatalf("chooseAdapter found an adapter but Adapters() = %v", err)
	}
	for _, info := range infos {
		name := info.Adapter.Name
		// A piece of the name in another case still picks an adapter
		// whose name holds it.
		want := strings.ToUpper(name[:min(len(name), 8)])
		t.Run(want, func(t *testing.T) {
			t.Setenv(envAdapter, want)
			_, a := testAdapter(t)
			if got := a.GetProperties().Name; !strings.Contains(strings.ToUpper(got), want) {
				t.Errorf("%s=%q chose %q", envAdapter, want, got)
			}
		})
	}
	if strings.Contains(strings.ToLower(infos[0].Adapter.Name), "llvmpipe") {
		t.Setenv(envAdapter, "llvmpipe")
		_, a := testAdapter(t)
		if got := a.GetProperties().Name; !strings.Contains(got, "llvmpipe") {
			t.Errorf("%s=llvmpipe chose %q", envAdapter, got)
		}
	}
}

func TestAdapters(t *testing.T) {
	requireAdapter(t)
	infos, err := Adapters()
	if err != nil || len(infos) == 0 {
		t.Fatalf("Adapters() = %d adapters, %v; want at least one", len(infos), err)
	}
	for _, info := range infos {
		a, l := info.Adapter, info.Limits
		if info.Kind != backend.KindGPU || a.Backend != gputypes.BackendVulkan || a.Name == "" || info.Threads != 0 {
			t.Errorf("Adapters() gave %+v; want a named Vulkan GPU", info)
		}
		if l.MaxStorageBufferBindingSize < 128<<20 || l.MaxBufferSize < l.MaxStorageBufferBindingSize/2 ||
			l.MaxComputeInvocationsPerWorkgroup < 256 || l.MaxComputeWorkgroupStorageSize < 16<<10 ||
			l.MaxComputeWorkgroupsPerDimension < 65535 || l.MaxStorageBuffersPerShaderStage < 8 {
			t.Errorf("%s: limits below WebGPU's minimums: %+v", a.Name, l)
		}
		if info.Detail != libraryVersions() {
			t.Errorf("%s: Detail = %q, want the library versions %q", a.Name, info.Detail, libraryVersions())
		}
		if a.DeviceType == gputypes.DeviceTypeCPU && !strings.Contains(a.Name, "llvmpipe") {
			t.Logf("%s: a CPU adapter other than lavapipe", a.Name)
		}
	}
}

// TestNoDriver hides every Vulkan driver from the loader: Adapters and
// chooseAdapter must then fail with ErrUnavailable and the hint, not
// panic.
func TestNoDriver(t *testing.T) {
	nowhere := t.TempDir() + "/none.json"
	t.Setenv("VK_ICD_FILENAMES", nowhere)
	t.Setenv("VK_DRIVER_FILES", nowhere)
	t.Setenv(envAdapter, "")
	infos, err := Adapters()
	if len(infos) != 0 || !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), "mesa-vulkan-drivers") {
		t.Errorf("Adapters() without a driver = %v, %v; want none and ErrUnavailable with the hint", infos, err)
	}
	inst := newInstance()
	defer inst.Release()
	a, err := chooseAdapter(inst)
	if a != nil || !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), "no Vulkan adapter") {
		t.Errorf("chooseAdapter without a driver = %v, %v; want ErrUnavailable", a, err)
	}
	t.Setenv(envAdapter, "llvmpipe")
	a, err = chooseAdapter(inst)
	if a != nil || !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), `"llvmpipe"`) {
		t.Errorf("chooseAdapter(%s=llvmpipe) without a driver = %v, %v; want ErrUnavailable naming it", envAdapter, a, err)
	}
}

// TestRequiredLimits checks that a device asked for requiredLimits gets
// the adapter's compute limits rather than WebGPU's minimums.
func TestRequiredLimits(t *testing.T) {
	_, a := testAdapter(t)
	have := a.GetLimits().Limits
	req := requiredLimits(a)
	def := wgpu.DefaultLimits()

	compute := []string{
		"MaxStorageBufferBindingSize", "MaxBufferSize", "MaxUniformBufferBindingSize",
		"MaxComputeWorkgroupStorageSize", "MaxComputeInvocationsPerWorkgroup",
		"MaxComputeWorkgroupSizeX", "MaxComputeWorkgroupSizeY", "MaxComputeWorkgroupSizeZ",
		"MaxComputeWorkgroupsPerDimension", "MaxStorageBuffersPerShaderStage", "MaxUniformBuffersPerShaderStage",
		"MaxBindGroups", "MaxBindingsPerBindGroup",
		"MaxDynamicUniformBuffersPerPipelineLayout", "MaxDynamicStorageBuffersPerPipelineLayout",
		"MinStorageBufferOffsetAlignment", "MinUniformBufferOffsetAlignment",
	}
	isCompute := map[string]bool{}
	hv, rv, dv := reflect.ValueOf(have), reflect.ValueOf(req), reflect.ValueOf(def)
	for _, name := range compute {
		isCompute[name] = true
		if h, r := hv.FieldByName(name).Uint(), rv.FieldByName(name).Uint(); h != 0 && r != definedU64(h) {
			t.Errorf("requiredLimits.%s = %d, want the adapter's %d", name, r, h)
		}
	}
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		if !isCompute[name] && rv.Field(i).Uint() != dv.Field(i).Uint() {
			t.Errorf("requiredLimits.%s = %d, want the default %d", name, rv.Field(i).Uint(), dv.Field(i).Uint())
		}
	}

	dev, err := a.RequestDevice(&wgpu.DeviceDescriptor{Label: "attn requiredLimits test", RequiredLimits: &wgpu.RequiredLimits{Limits: req}})
	if err != nil {
		t.Fatalf("RequestDevice with requiredLimits: %v", err)
	}
	defer dev.Release()
	got := dev.GetLimits().Limits
	gv := reflect.ValueOf(got)
	for _, name := range compute {
		if g, h := gv.FieldByName(name).Uint(), hv.FieldByName(name).Uint(); g != definedU64(h) {
			t.Errorf("device %s = %d, want the adapter's %d", name, g, h)
		}
	}
}

// TestDefinedU64 checks that a limit the adapter leaves unbounded
// (webgpu.h's undefined value) is asked for as one less, and every other
// as it is.
func TestDefinedU64(t *testing.T) {
	for _, c := range [][2]uint64{{0, 0}, {1, 1}, {256 << 20, 256 << 20}, {math.MaxUint64 - 1, math.MaxUint64 - 1}, {math.MaxUint64, math.MaxUint64 - 1}} {
		if got := definedU64(c[0]); got != c[1] {
			t.Errorf("definedU64(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}
