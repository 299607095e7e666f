//go:build cgo && !nogpu && gowebgpu && !gogpu

package wg

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gogpu/gputypes"
	"github.com/rajveermalviya/go-webgpu/wgpu"
)

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
				t.Errorf("convertFeatures(%v) = %s, want %s", tc.in, flagNames(got), flagNames(tc.want))
			}
		})
	}
	// Every flag in the table is distinct, so no two features merge.
	seen := map[gputypes.Feature]wgpu.FeatureName{}
	for w, g := range featureMap {
		if prev, ok := seen[g]; ok {
			t.Errorf("%v and %v both map to %v", prev, w, g)
		}
		seen[g] = w
	}
}

func flagNames(fs gputypes.Features) string {
	var names []string
	for bit := range 64 {
		if f := gputypes.Feature(1) << bit; fs.Contains(f) {
			names = append(names, f.String())
		}
	}
	return "[" + strings.Join(names, " ") + "]"
}
