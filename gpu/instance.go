//go:build cgo && !nogpu

package gpu

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/attn-go/attn/backend"
	"github.com/gogpu/gputypes"
	"github.com/rajveermalviya/go-webgpu/wgpu"
)

// Environment variables read by the adapter layer. They are unexported
// because the build without cgo has no adapters to pick or logs to see.
const (
	// envAdapter, when not empty, picks the first Vulkan adapter whose name
	// contains it (case-insensitively) instead of the high-performance one.
	envAdapter = "ATTN_ADAPTER"
	// envLog, when not empty, lets wgpu-native log to stderr: at the level it
	// names (error, warn, info, debug, trace, off), at warn for any other
	// value.
	envLog = "ATTN_GPU_LOG"
)

// noAdapterHint ends the error for a host without a Vulkan adapter.
const noAdapterHint = "no Vulkan adapter was found (without a GPU, Mesa's software adapter lavapipe provides one: apt-get install mesa-vulkan-drivers)"

var setupOnce sync.Once

// setupLogging quiets the libraries below the backend, once per process,
// before the first instance is created:
//
//   - wgpu-native logs at warn to stderr by default (for example
//     "create_instance: ERROR_INCOMPATIBLE_DRIVER" on a host without a
//     driver, which attn reports as an error anyway); it is turned off
//     unless $ATTN_GPU_LOG asks for a level.
//   - NODEVICE_SELECT=1, unless NODEVICE_SELECT is already set or
//     MESA_VK_DEVICE_SELECT says the user is steering Mesa's
//     VK_LAYER_MESA_device_select. That implicit layer reorders adapters
//     (attn picks its own) and is the source of the lines
//     "error: XDG_RUNTIME_DIR is invalid or not set in the environment."
//     on a host without a desktop session: on every
//     vkEnumeratePhysicalDevices it calls libwayland-client's
//     wl_display_connect to find the compositor's GPU, and libwayland
//     prints that line when $XDG_RUNTIME_DIR is unset (measured with Mesa
//     22.3 and lavapipe: two lines per enumeration, none with
//     NODEVICE_SELECT=1). Disabling the layer through its own manifest
//     switch ("disable_environment") silences them at the source; pointing
//     XDG_RUNTIME_DIR at a private directory would silence them too, but
//     would change the environment of every child process and library for
//     a log line, so it is not done. NODEVICE_SELECT is kept even under
//     $ATTN_GPU_LOG so that adapters come in the same order either way.
//
// The variable is set with os.Setenv, which under cgo also sets the C
// environment the Vulkan loader reads when the instance is created.
func setupLogging() {
	setupOnce.Do(func() {
		if level := os.Getenv(envLog); level != "" {
			wgpu.SetLogLevel(logLevel(level))
		} else {
			wgpu.SetLogLevel(wgpu.LogLevel_Off)
		}
		_, nds := os.LookupEnv("NODEVICE_SELECT")
		_, mds := os.LookupEnv("MESA_VK_DEVICE_SELECT")
		if !nds && !mds {
			os.Setenv("NODEVICE_SELECT", "1")
		}
	})
}

// logLevel reads a wgpu log level name; a value it does not know (say
// "1") asks for wgpu-native's default, warn.
func logLevel(s string) wgpu.LogLevel {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off", "none":
		return wgpu.LogLevel_Off
	case "error":
		return wgpu.LogLevel_Error
	case "info":
		return wgpu.LogLevel_Info
	case "debug":
		return wgpu.LogLevel_Debug
	case "trace":
		return wgpu.LogLevel_Trace
	}
	return wgpu.LogLevel_Warn
}

// newInstance creates a wgpu instance on the Vulkan backend only: with
// the default backends wgpu may hand out a GL adapter without saying so.
// It succeeds on a host without any Vulkan driver too (the instance then
// has no adapters), so wgpu.CreateInstance's panic on a null instance is
// not reached in practice.
//
// Each Backend has an instance of its own and releases it on Close:
// wgpu-native 0.17 frees a released device and adapter only with their
// instance (wgpuInstanceProcessEvents, which would collect them, is
// unimplemented there), so a shared instance would keep every closed
// device, about 6 MiB each on lavapipe. Releasing the last instance,
// though, lets the Vulkan loader unload the driver, and NVIDIA's (580.159,
// measured on an H100) does not load again after some 30 such cycles:
// create_instance fails with ERROR_INCOMPATIBLE_DRIVER and no adapter is
// found. So the first call also creates one more instance, anchor, that
// is never released and holds nothing but the loaded driver; measured
// there, 200 open/close cycles then all succeed with the RSS flat.
func newInstance() *wgpu.Instance {
	setupLogging()
	anchor.Do(func() { anchor.inst = createInstance() })
	return createInstance()
}

// anchor keeps the Vulkan drivers loaded for the life of the process
// (newInstance).
var anchor struct {
	sync.Once
	inst *wgpu.Instance
}

func createInstance() *wgpu.Instance {
	return wgpu.CreateInstance(&wgpu.InstanceDescriptor{Backends: wgpu.InstanceBackend_Vulkan})
}

// enumerate lists the instance's Vulkan adapters; nil when there is none.
func enumerate(inst *wgpu.Instance) []*wgpu.Adapter {
	return inst.EnumerateAdapters(&wgpu.InstanceEnumerateAdapterOptons{Backends: wgpu.InstanceBackend_Vulkan})
}

// chooseAdapter picks the adapter the backend runs on: the first one whose
// name contains $ATTN_ADAPTER (ignoring case) when that is set, else the
// one wgpu ranks best for high performance (a discrete GPU before an
// integrated one before lavapipe). The caller releases it. When there is
// none, or none matches, the error wraps backend.ErrUnavailable and says
// why.
func chooseAdapter(inst *wgpu.Instance) (*wgpu.Adapter, error) {
	if want := strings.TrimSpace(os.Getenv(envAdapter)); want != "" {
		var chosen *wgpu.Adapter
		var names []string
		for _, a := range enumerate(inst) {
			name := a.GetProperties().Name
			if chosen == nil && strings.Contains(strings.ToLower(name), strings.ToLower(want)) {
				chosen = a
				continue
			}
			names = append(names, fmt.Sprintf("%q", name))
			a.Release()
		}
		if chosen != nil {
			return chosen, nil
		}
		if len(names) == 0 {
			return nil, backend.Errorf(backend.ErrUnavailable, "%s=%q: %s", envAdapter, want, noAdapterHint)
		}
		return nil, backend.Errorf(backend.ErrUnavailable, "no Vulkan adapter's name contains %s=%q; the adapters here are %s",
			envAdapter, want, strings.Join(names, ", "))
	}
	// go-webgpu returns a nil adapter with an error ("failed to request
	// adapter") when wgpu-native reports none; it does not panic.
	a, err := inst.RequestAdapter(&wgpu.RequestAdapterOptions{PowerPreference: wgpu.PowerPreference_HighPerformance})
	if err != nil || a == nil {
		return nil, backend.Errorf(backend.ErrUnavailable, "%s", noAdapterHint)
	}
	return a, nil
}

// Adapters describes every Vulkan adapter on this host, in the order the
// Vulkan loader lists them, whether or not the gpu backend would choose
// it. When there is none it returns no Info and an error wrapping
// backend.ErrUnavailable that says why.
func Adapters() ([]backend.Info, error) {
	inst := newInstance()
	defer inst.Release()
	var infos []backend.Info
	for _, a := range enumerate(inst) {
		infos = append(infos, describeAdapter(a))
		a.Release()
	}
	if len(infos) == 0 {
		return nil, backend.Errorf(backend.ErrUnavailable, "%s", noAdapterHint)
	}
	return infos, nil
}

// describeAdapter is what Backend.Info reports about an adapter: its
// properties, limits and features in gputypes terms.
func describeAdapter(a *wgpu.Adapter) backend.Info {
	return backend.Info{
		Kind:     backend.KindGPU,
		Adapter:  adapterInfo(a.GetProperties()),
		Limits:   convertLimits(a.GetLimits().Limits),
		Features: convertFeatures(a.EnumerateFeatures()),
		Detail:   libraryVersions(),
	}
}

// goWebGPUVersion is the go-webgpu release in go.mod, for binaries built
// without module information (tests); a test keeps it in step with go.mod.
const goWebGPUVersion = "v0.17.1"

// libraryVersions names go-webgpu's module version (from the build
// information where there is some) and wgpu-native's.
func libraryVersions() string {
	v := goWebGPUVersion
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/rajveermalviya/go-webgpu/wgpu" {
				if m.Replace != nil {
					m = m.Replace
				}
				if m.Version != "" {
					v = m.Version
				}
				break
			}
		}
	}
	return "go-webgpu " + v + ", wgpu-native " + nativeVersion(uint32(wgpu.GetVersion()))
}

// nativeVersion decodes wgpuGetVersion's major<<24 | minor<<16 | patch<<8
// | build. The library go-webgpu v0.17.1 ships was built without its
// version and reports 0. (go-webgpu's Version.String prints octal.)
func nativeVersion(v uint32) string {
	if v == 0 {
		return "(version not recorded in the library)"
	}
	return fmt.Sprintf("%d.%d.%d.%d", v>>24, v>>16&0xff, v>>8&0xff, v&0xff)
}

// adapterInfo converts wgpu-native's adapter properties.
//
// wgpu-native 0.17 fills vendorName with wgpu's AdapterInfo.driver (the
// driver's name, "llvmpipe") and driverDescription with its driver_info
// ("Mesa 22.3.6 (LLVM 15.0.6)"), so they become Driver and DriverInfo.
// It gives no vendor name; Vendor is named after VendorID where that is a
// well-known PCI or Khronos vendor id, and left empty otherwise.
// Architecture (empty in this wgpu-native) has no counterpart. D3D11, Null
// and Undefined backends have no gputypes Backend and map to BackendEmpty;
// OpenGL and OpenGL ES are both BackendGL.
func adapterInfo(p wgpu.AdapterProperties) gputypes.AdapterInfo {
	info := gputypes.AdapterInfo{
		Name:       p.Name,
		Vendor:     vendorName(p.VendorId),
		VendorID:   p.VendorId,
		DeviceID:   p.DeviceId,
		Driver:     p.VendorName,
		DriverInfo: p.DriverDescription,
	}
	switch p.AdapterType {
	case wgpu.AdapterType_DiscreteGPU:
		info.DeviceType = gputypes.DeviceTypeDiscreteGPU
	case wgpu.AdapterType_IntegratedGPU:
		info.DeviceType = gputypes.DeviceTypeIntegratedGPU
	case wgpu.AdapterType_CPU:
		info.DeviceType = gputypes.DeviceTypeCPU
	default:
		info.DeviceType = gputypes.DeviceTypeOther
	}
	switch p.BackendType {
	case wgpu.BackendType_Vulkan:
		info.Backend = gputypes.BackendVulkan
	case wgpu.BackendType_Metal:
		info.Backend = gputypes.BackendMetal
	case wgpu.BackendType_D3D12:
		info.Backend = gputypes.BackendDX12
	case wgpu.BackendType_OpenGL, wgpu.BackendType_OpenGLES:
		info.Backend = gputypes.BackendGL
	case wgpu.BackendType_WebGPU:
		info.Backend = gputypes.BackendBrowserWebGPU
	default:
		info.Backend = gputypes.BackendEmpty
	}
	return info
}

// vendorName names the vendor of a PCI vendor id or of a Khronos
// VkVendorId (the ids above 0xFFFF, given to vendors without a PCI id).
func vendorName(id uint32) string {
	switch id {
	case 0x1002:
		return "AMD"
	case 0x1010:
		return "Imagination"
	case 0x106B:
		return "Apple"
	case 0x10DE:
		return "NVIDIA"
	case 0x13B5:
		return "ARM"
	case 0x14E4:
		return "Broadcom"
	case 0x5143:
		return "Qualcomm"
	case 0x8086:
		return "Intel"
	case 0x10001:
		return "Vivante"
	case 0x10002:
		return "VeriSilicon"
	case 0x10003:
		return "Kazan"
	case 0x10004:
		return "Codeplay"
	case 0x10005:
		return "Mesa"
	case 0x10006:
		return "PoCL"
	case 0x10007:
		return "Mobileye"
	}
	return ""
}

// convertLimits copies every limit gputypes has a field for.
// MaxInterStageShaderComponents has none and is dropped;
// gputypes' MaxBindGroupsPlusVertexBuffers and MaxNonSamplerBindings,
// which wgpu-native 0.17 does not report, stay 0. wgpu-native 0.17 leaves
// some render limits (MaxInterStageShaderVariables, MaxColorAttachments,
// MaxColorAttachmentBytesPerSample) at 0 in an adapter's limits; they are
// copied as reported.
func convertLimits(l wgpu.Limits) gputypes.Limits {
	return gputypes.Limits{
		MaxTextureDimension1D:                     l.MaxTextureDimension1D,
		MaxTextureDimension2D:                     l.MaxTextureDimension2D,
		MaxTextureDimension3D:                     l.MaxTextureDimension3D,
		MaxTextureArrayLayers:                     l.MaxTextureArrayLayers,
		MaxBindGroups:                             l.MaxBindGroups,
		MaxBindingsPerBindGroup:                   l.MaxBindingsPerBindGroup,
		MaxDynamicUniformBuffersPerPipelineLayout: l.MaxDynamicUniformBuffersPerPipelineLayout,
		MaxDynamicStorageBuffersPerPipelineLayout: l.MaxDynamicStorageBuffersPerPipelineLayout,
		MaxSampledTexturesPerShaderStage:          l.MaxSampledTexturesPerShaderStage,
		MaxSamplersPerShaderStage:                 l.MaxSamplersPerShaderStage,
		MaxStorageBuffersPerShaderStage:           l.MaxStorageBuffersPerShaderStage,
		MaxStorageTexturesPerShaderStage:          l.MaxStorageTexturesPerShaderStage,
		MaxUniformBuffersPerShaderStage:           l.MaxUniformBuffersPerShaderStage,
		MaxUniformBufferBindingSize:               l.MaxUniformBufferBindingSize,
		MaxStorageBufferBindingSize:               l.MaxStorageBufferBindingSize,
		MinUniformBufferOffsetAlignment:           l.MinUniformBufferOffsetAlignment,
		MinStorageBufferOffsetAlignment:           l.MinStorageBufferOffsetAlignment,
		MaxVertexBuffers:                          l.MaxVertexBuffers,
		MaxBufferSize:                             l.MaxBufferSize,
		MaxVertexAttributes:                       l.MaxVertexAttributes,
		MaxVertexBufferArrayStride:                l.MaxVertexBufferArrayStride,
		MaxInterStageShaderVariables:              l.MaxInterStageShaderVariables,
		MaxColorAttachments:                       l.MaxColorAttachments,
		MaxColorAttachmentBytesPerSample:          l.MaxColorAttachmentBytesPerSample,
		MaxComputeWorkgroupStorageSize:            l.MaxComputeWorkgroupStorageSize,
		MaxComputeInvocationsPerWorkgroup:         l.MaxComputeInvocationsPerWorkgroup,
		MaxComputeWorkgroupSizeX:                  l.MaxComputeWorkgroupSizeX,
		MaxComputeWorkgroupSizeY:                  l.MaxComputeWorkgroupSizeY,
		MaxComputeWorkgroupSizeZ:                  l.MaxComputeWorkgroupSizeZ,
		MaxComputeWorkgroupsPerDimension:          l.MaxComputeWorkgroupsPerDimension,
		MaxPushConstantSize:                       l.MaxPushConstantSize,
	}
}

// features pairs each wgpu feature with its gputypes flag.
// NativeFeature_VertexWritableStorage has no gputypes flag and is dropped,
// as are values go-webgpu does not name.
var features = map[wgpu.FeatureName]gputypes.Feature{
	wgpu.FeatureName_DepthClipControl:                       gputypes.FeatureDepthClipControl,
	wgpu.FeatureName_Depth32FloatStencil8:                   gputypes.FeatureDepth32FloatStencil8,
	wgpu.FeatureName_TimestampQuery:                         gputypes.FeatureTimestampQuery,
	wgpu.FeatureName_PipelineStatisticsQuery:                gputypes.FeaturePipelineStatisticsQuery,
	wgpu.FeatureName_TextureCompressionBC:                   gputypes.FeatureTextureCompressionBC,
	wgpu.FeatureName_TextureCompressionETC2:                 gputypes.FeatureTextureCompressionETC2,
	wgpu.FeatureName_TextureCompressionASTC:                 gputypes.FeatureTextureCompressionASTC,
	wgpu.FeatureName_IndirectFirstInstance:                  gputypes.FeatureIndirectFirstInstance,
	wgpu.FeatureName_ShaderF16:                              gputypes.FeatureShaderF16,
	wgpu.FeatureName_RG11B10UfloatRenderable:                gputypes.FeatureRG11B10UfloatRenderable,
	wgpu.FeatureName_BGRA8UnormStorage:                      gputypes.FeatureBGRA8UnormStorage,
	wgpu.FeatureName_Float32Filterable:                      gputypes.FeatureFloat32Filterable,
	wgpu.NativeFeature_PushConstants:                        gputypes.FeaturePushConstants,
	wgpu.NativeFeature_TextureAdapterSpecificFormatFeatures: gputypes.FeatureTextureAdapterSpecificFormatFeatures,
	wgpu.NativeFeature_MultiDrawIndirect:                    gputypes.FeatureMultiDrawIndirect,
	wgpu.NativeFeature_MultiDrawIndirectCount:               gputypes.FeatureMultiDrawIndirectCount,
}

// convertFeatures converts an adapter's feature list to a gputypes set.
// A feature listed is only advertised: ShaderF16, for one, is reported by
// lavapipe but this naga cannot compile WGSL f16.
func convertFeatures(fs []wgpu.FeatureName) gputypes.Features {
	var set gputypes.Features
	for _, f := range fs {
		if g, ok := features[f]; ok {
			set.Insert(g)
		}
	}
	return set
}

// requiredFeatures is the optional features New asks a device of
// adapter a for: TimestampQuery where a offers it, for device time
// (timing.go). Asking costs nothing until timestamps are written.
func requiredFeatures(a *wgpu.Adapter) []wgpu.FeatureName {
	if a.HasFeature(wgpu.FeatureName_TimestampQuery) {
		return []wgpu.FeatureName{wgpu.FeatureName_TimestampQuery}
	}
	return nil
}

// definedU64 is a 64-bit limit v as a device request can ask for it.
// webgpu.h reads a requested UINT64_MAX as WGPU_LIMIT_U64_UNDEFINED, the
// default (256 MiB for maxBufferSize), and an adapter without a limit of
// its own reports exactly that value: NVIDIA's Vulkan driver reports
// maxBufferSize = 2⁶⁴ − 1, and asking for it gave a device of 256 MiB
// buffers. One less is as unbounded and is granted as asked.
func definedU64(v uint64) uint64 {
	if v == math.MaxUint64 {
		return v - 1
	}
	return v
}

// requiredLimits is what the backend asks a device of adapter a for:
// wgpu's defaults (WebGPU's minimums: 256 invocations, 16 KiB of
// workgroup memory, 8 storage buffers, 128 MiB bindings) except for the
// limits that bound compute, which take the adapter's own values (all it
// supports). Render limits stay at the defaults, so a device request does
// not fail on the render limits wgpu-native 0.17 reports as 0.
func requiredLimits(a *wgpu.Adapter) wgpu.Limits {
	have := a.GetLimits().Limits
	l := wgpu.DefaultLimits()
	use32 := func(dst *uint32, v uint32) {
		if v != 0 {
			*dst = v
		}
	}
	use64 := func(dst *uint64, v uint64) {
		if v != 0 {
			*dst = definedU64(v)
		}
	}
	use64(&l.MaxStorageBufferBindingSize, have.MaxStorageBufferBindingSize)
	use64(&l.MaxBufferSize, have.MaxBufferSize)
	use64(&l.MaxUniformBufferBindingSize, have.MaxUniformBufferBindingSize)
	use32(&l.MaxComputeWorkgroupStorageSize, have.MaxComputeWorkgroupStorageSize)
	use32(&l.MaxComputeInvocationsPerWorkgroup, have.MaxComputeInvocationsPerWorkgroup)
	use32(&l.MaxComputeWorkgroupSizeX, have.MaxComputeWorkgroupSizeX)
	use32(&l.MaxComputeWorkgroupSizeY, have.MaxComputeWorkgroupSizeY)
	use32(&l.MaxComputeWorkgroupSizeZ, have.MaxComputeWorkgroupSizeZ)
	use32(&l.MaxComputeWorkgroupsPerDimension, have.MaxComputeWorkgroupsPerDimension)
	use32(&l.MaxStorageBuffersPerShaderStage, have.MaxStorageBuffersPerShaderStage)
	use32(&l.MaxUniformBuffersPerShaderStage, have.MaxUniformBuffersPerShaderStage)
	use32(&l.MaxBindGroups, have.MaxBindGroups)
	use32(&l.MaxBindingsPerBindGroup, have.MaxBindingsPerBindGroup)
	use32(&l.MaxDynamicUniformBuffersPerPipelineLayout, have.MaxDynamicUniformBuffersPerPipelineLayout)
	use32(&l.MaxDynamicStorageBuffersPerPipelineLayout, have.MaxDynamicStorageBuffersPerPipelineLayout)
	// Alignments are minimums: the adapter's is the finest it allows.
	use32(&l.MinStorageBufferOffsetAlignment, have.MinStorageBufferOffsetAlignment)
	use32(&l.MinUniformBufferOffsetAlignment, have.MinUniformBufferOffsetAlignment)
	return l
}
