//go:build cgo && !nogpu && gowebgpu && !gogpu

package wg

import (
	"errors"
	"fmt"

	"github.com/gogpu/gputypes"
	"github.com/rajveermalviya/go-webgpu/wgpu"
)

// The binding's types that the gpu package's public API takes and gives.
type (
	NativeAdapter = wgpu.Adapter
	NativeDevice  = wgpu.Device
	NativeBuffer  = wgpu.Buffer
)

// The binding's handle types that only wg holds.
type (
	nativeModule         = wgpu.ShaderModule
	nativeGroupLayout    = wgpu.BindGroupLayout
	nativePipelineLayout = wgpu.PipelineLayout
	nativePipeline       = wgpu.ComputePipeline
	nativeGroup          = wgpu.BindGroup
	nativeQuerySet       = wgpu.QuerySet
	nativeEncoder        = wgpu.CommandEncoder
	nativePass           = wgpu.ComputePassEncoder
	nativeCommands       = wgpu.CommandBuffer
)

// MaxQueries is the most queries one query set holds (wgpu-core 0.17's
// QUERY_SET_MAX_QUERIES).
const MaxQueries = 8192

// BindingModule is the binding's module path.
const BindingModule = "github.com/rajveermalviya/go-webgpu/wgpu"

// bindingVersion is the binding's release in go.mod, for binaries built
// without module information (tests); a test keeps it in step with go.mod.
const bindingVersion = "v0.17.1"

// bindingName names the binding in Versions.
const bindingName = "go-webgpu"

// linked names the wgpu-native release the binding links, for Versions.
// The library go-webgpu v0.17.1 ships was built without its version and
// reports 0 (and go-webgpu's Version.String prints octal).
func linked() string { return linkedName + " " + nativeVersion(uint32(wgpu.GetVersion())) }

// linkedName begins what linked reports: the native library linked.
const linkedName = "wgpu-native"

// SetLogLevel sets wgpu-native's log level for the process.
func SetLogLevel(l LogLevel) {
	wgpu.SetLogLevel([...]wgpu.LogLevel{
		LogOff: wgpu.LogLevel_Off, LogError: wgpu.LogLevel_Error, LogWarn: wgpu.LogLevel_Warn,
		LogInfo: wgpu.LogLevel_Info, LogDebug: wgpu.LogLevel_Debug, LogTrace: wgpu.LogLevel_Trace,
	}[l])
}

// Instance is a wgpu instance on the Vulkan backend.
type Instance struct{ raw *wgpu.Instance }

// bindingCheck is Check's answer for this binding: nil, as the binding's
// handles are read through its own exported API but for the waits'
// (wait_gowebgpu.go), which check their mirrors themselves.
func bindingCheck() error { return nil }

// NewInstance creates an instance on the Vulkan backend only: with the
// default backends wgpu may hand out a GL adapter without saying so. It
// succeeds on a host without any Vulkan driver too (the instance then has
// no adapters), so wgpu.CreateInstance's panic on a null instance is not
// reached in practice.
func NewInstance() *Instance {
	return &Instance{wgpu.CreateInstance(&wgpu.InstanceDescriptor{Backends: wgpu.InstanceBackend_Vulkan})}
}

func (i *Instance) Release() { i.raw.Release() }

// Adapters lists the instance's Vulkan adapters; nil when there is none.
func (i *Instance) Adapters() []*Adapter {
	var out []*Adapter
	for _, a := range i.raw.EnumerateAdapters(&wgpu.InstanceEnumerateAdapterOptons{Backends: wgpu.InstanceBackend_Vulkan}) {
		out = append(out, &Adapter{raw: a})
	}
	return out
}

// HighPerformanceAdapter is the adapter wgpu ranks best for high
// performance (a discrete GPU before an integrated one before lavapipe).
// go-webgpu returns a nil adapter with an error ("failed to request
// adapter") when wgpu-native reports none; it does not panic.
func (i *Instance) HighPerformanceAdapter() (*Adapter, error) {
	a, err := i.raw.RequestAdapter(&wgpu.RequestAdapterOptions{PowerPreference: wgpu.PowerPreference_HighPerformance})
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, errors.New("no adapter")
	}
	return &Adapter{raw: a}, nil
}

// Info is the adapter's properties in gputypes terms.
func (a *Adapter) Info() gputypes.AdapterInfo { return adapterInfo(a.raw.GetProperties()) }

// Limits is the adapter's limits.
func (a *Adapter) Limits() gputypes.Limits { return convertLimits(a.raw.GetLimits().Limits) }

// Features is the adapter's features that gputypes names.
func (a *Adapter) Features() gputypes.Features { return convertFeatures(a.raw.EnumerateFeatures()) }

// SubgroupSize is the adapter's subgroup size range; 0, 0 where the
// binding does not report it (wgpu-native 0.17 has no subgroups).
func (a *Adapter) SubgroupSize() (lo, hi uint32) { return 0, 0 }

// SubgroupSizeUnreported says why SubgroupSize is 0, 0.
const SubgroupSizeUnreported = "not reported by wgpu-native 0.17"

// CompilesF16 says whether the binding compiles WGSL's f16 type: its naga (0.17) cannot compile WGSL f16, though lavapipe reports ShaderF16.
const CompilesF16 = false

// ConcurrentPipelines says whether CreatePipeline may run on several
// goroutines at once: not on go-webgpu's wgpu-native, whose error scopes
// are the device's, so one call's could catch another's error.
const ConcurrentPipelines = false

// TimestampsInside reports whether the adapter offers timestamps inside
// command encoders and inside compute passes. In wgpu-native 0.17 the
// first come with TimestampQuery (Encoder.WriteTimestamp) and the second
// cannot be asked for (its wgpu.h names no such feature).
func (a *Adapter) TimestampsInside() (encoders, passes bool) {
	return a.HasFeature(gputypes.FeatureTimestampQuery), false
}

// OffersCoopMatrix is false: wgpu-native 0.17 has no cooperative
// matrices (wgpu added them, experimental, in 29).
func (a *Adapter) OffersCoopMatrix() bool { return false }

// ProbeCoopMatrix reports cooperative matrices not offered
// (OffersCoopMatrix).
func (a *Adapter) ProbeCoopMatrix() CoopMatrix { return CoopMatrix{} }

// CoopMatrix is the zero CoopMatrix: none were asked for.
func (d *Device) CoopMatrix() CoopMatrix { return CoopMatrix{} }

// DefaultLimits is WebGPU's default limits, as wgpu has them.
func DefaultLimits() gputypes.Limits { return convertLimits(wgpu.DefaultLimits()) }

// nativeLimits is l as a device request of this binding asks for it:
// wgpu's defaults, overwritten by every limit gputypes has a field for
// (those of l that come from DefaultLimits round-trip unchanged).
func nativeLimits(l gputypes.Limits) wgpu.Limits {
	n := wgpu.DefaultLimits()
	copyLimits(&n, &l)
	n.MaxPushConstantSize = l.MaxPushConstantSize
	return n
}

// convertLimits copies every limit gputypes has a field for.
// MaxInterStageShaderComponents has none and is dropped;
// gputypes' MaxBindGroupsPlusVertexBuffers and MaxNonSamplerBindings,
// which wgpu-native 0.17 does not report, stay 0. wgpu-native 0.17 leaves
// some render limits (MaxInterStageShaderVariables, MaxColorAttachments,
// MaxColorAttachmentBytesPerSample) at 0 in an adapter's limits; they are
// copied as reported.
func convertLimits(n wgpu.Limits) gputypes.Limits {
	var l gputypes.Limits
	copyLimits(&l, &n)
	l.MaxPushConstantSize = n.MaxPushConstantSize
	return l
}

// RequestDevice asks the adapter for a device with the features fs
// (each of which the adapter must offer) and the limits l.
func (a *Adapter) RequestDevice(label string, fs []gputypes.Feature, l gputypes.Limits) (*Device, error) {
	dev, err := a.raw.RequestDevice(&wgpu.DeviceDescriptor{
		Label:            label,
		RequiredFeatures: featureNames(featureMap, fs),
		RequiredLimits:   &wgpu.RequiredLimits{Limits: nativeLimits(l)},
	})
	if err != nil {
		return nil, err
	}
	if dev == nil {
		return nil, errors.New("no device")
	}
	return &Device{raw: dev, queue: dev.GetQueue(), checks: defaultChecks}, nil
}

// Device is a device and attn's handle to its queue. Release releases
// both, or only the queue's handle on a caller's device (WrapDevice).
type Device struct {
	raw    *wgpu.Device
	queue  *wgpu.Queue
	shared bool
	checks RuntimeChecks
}

// WrapDevice is a caller's device; its Release leaves the device alone.
func WrapDevice(d *NativeDevice) (*Device, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	return &Device{raw: d, queue: d.GetQueue(), shared: true, checks: defaultChecks}, nil
}

func (d *Device) Release() {
	d.queue.Release() // the device's own queue stays: this was attn's handle to it
	if !d.shared {
		d.raw.Release()
	}
}

// Limits is the device's limits.
func (d *Device) Limits() gputypes.Limits { return convertLimits(d.raw.GetLimits().Limits) }

// Features is the device's features that gputypes names.
func (d *Device) Features() gputypes.Features { return convertFeatures(d.raw.EnumerateFeatures()) }

// TimestampsInside reports whether the device has timestamps inside
// command encoders and inside compute passes (Adapter.TimestampsInside).
func (d *Device) TimestampsInside() (encoders, passes bool) {
	return d.Features().Contains(gputypes.FeatureTimestampQuery), false
}

// The calls cmd.go builds on (binding.go) and those that are one binding
// call each. go-webgpu's calls return the validation error of the error
// scope each pushes.

func (d *Device) createBuffer(label string, size uint64, usage Usage) (*wgpu.Buffer, error) {
	return d.raw.CreateBuffer(&wgpu.BufferDescriptor{Label: label, Usage: wgpu.BufferUsage(usage), Size: size})
}

func (b *Buffer) Unmap() error { return b.raw.Unmap() }

// WriteBuffer writes data into b from byte offset, in queue order.
func (d *Device) WriteBuffer(b *Buffer, offset uint64, data []byte) error {
	return d.queue.WriteBuffer(b.raw, offset, data)
}

func (d *Device) createModule(label, wgsl string) (*wgpu.ShaderModule, error) {
	return d.raw.CreateShaderModule(&wgpu.ShaderModuleDescriptor{Label: label, WGSLDescriptor: &wgpu.ShaderModuleWGSLDescriptor{Code: wgsl}})
}

func (d *Device) createGroupLayout(label string, binds []BindingType) (*wgpu.BindGroupLayout, error) {
	es := bySlot(binds, func(slot uint32, bt BindingType) wgpu.BindGroupLayoutEntry {
		return wgpu.BindGroupLayoutEntry{Binding: slot, Visibility: wgpu.ShaderStage_Compute, Buffer: wgpu.BufferBindingLayout{Type: bindingTypes[bt]}}
	})
	return d.raw.CreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{Label: label, Entries: es})
}

func (d *Device) createPipelineLayout(label string, bgl *wgpu.BindGroupLayout) (*wgpu.PipelineLayout, error) {
	return d.raw.CreatePipelineLayout(&wgpu.PipelineLayoutDescriptor{Label: label, BindGroupLayouts: []*wgpu.BindGroupLayout{bgl}})
}

func (d *Device) createPipeline(label string, layout *wgpu.PipelineLayout, module *wgpu.ShaderModule, entry string) (*wgpu.ComputePipeline, error) {
	return d.raw.CreateComputePipeline(&wgpu.ComputePipelineDescriptor{Label: label, Layout: layout,
		Compute: wgpu.ProgrammableStageDescriptor{Module: module, EntryPoint: entry}})
}

// Alive returns nil: wgpu-native 0.17 reports a destroyed buffer where a
// copy or a bind group uses it, in the error scope go-webgpu pushes.
func (d *Device) Alive(b *Buffer, offset, size uint64) error { return nil }

func (d *Device) createGroup(bgl *wgpu.BindGroupLayout, entries []Entry) (*wgpu.BindGroup, error) {
	es := bySlot(entries, func(slot uint32, e Entry) wgpu.BindGroupEntry {
		return wgpu.BindGroupEntry{Binding: slot, Buffer: e.Buffer.raw, Offset: e.Offset, Size: e.Size}
	})
	return d.raw.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: bgl, Entries: es})
}

// Timestamps: wgpu-native 0.17 writes them between passes only, with
// TimestampQuery.

func (d *Device) createTimestamps(label string, count uint32) (*wgpu.QuerySet, error) {
	return d.raw.CreateQuerySet(&wgpu.QuerySetDescriptor{Label: label, Type: wgpu.QueryType_Timestamp, Count: count})
}

// WriteTimestamp writes query i of qs between passes.
func (e *Encoder) WriteTimestamp(qs *QuerySet, i uint32) error {
	return e.raw.WriteTimestamp(qs.raw, i)
}

// ComputePassStamped would write timestamps inside the pass
// (oliverbestmann.go's); wgpu-native 0.17 has none there.
func (e *Encoder) ComputePassStamped(ds []Dispatch, qs *QuerySet, first uint32) error {
	return errors.New("gpu: wgpu-native 0.17 writes no timestamps inside compute passes")
}

// ResolveQuerySet writes count queries of qs from first into dst at
// dstOff, 8 bytes each.
func (e *Encoder) ResolveQuerySet(qs *QuerySet, first, count uint32, dst *Buffer, dstOff uint64) error {
	return e.raw.ResolveQuerySet(qs.raw, first, count, dst.raw, dstOff)
}

func (d *Device) createEncoder() (*wgpu.CommandEncoder, error) {
	return d.raw.CreateCommandEncoder(nil)
}

func (e *Encoder) CopyBufferToBuffer(src *Buffer, srcOff uint64, dst *Buffer, dstOff, size uint64) error {
	return e.raw.CopyBufferToBuffer(src.raw, srcOff, dst.raw, dstOff, size)
}

func (e *Encoder) beginPass() *wgpu.ComputePassEncoder { return e.raw.BeginComputePass(nil) }

func (e *Encoder) endPass(pass *wgpu.ComputePassEncoder) error { return pass.End() }

func (e *Encoder) finish() (*wgpu.CommandBuffer, error) { return e.raw.Finish(nil) }

// Submit submits cmd to the device's queue. wgpu-native 0.17 reports no
// error here (it aborts on some misuse instead: the gpu package
// validates before it submits), so the error is always nil.
func (d *Device) Submit(cmd *CommandBuffer) error {
	d.queue.Submit(cmd.raw)
	return nil
}

// poll runs the callbacks that are due without blocking.
func (d *Device) poll() { d.raw.Poll(false, nil) }

// adapterInfo converts wgpu-native's adapter properties
// (describeAdapter). wgpu-native 0.17 fills vendorName with wgpu's
// AdapterInfo.driver and driverDescription with its driver_info.
// Architecture (empty in this wgpu-native) has no counterpart.
func adapterInfo(p wgpu.AdapterProperties) gputypes.AdapterInfo {
	return describeAdapter(p.Name, p.VendorName, p.DriverDescription, p.VendorId, p.DeviceId,
		deviceTypes[p.AdapterType], backends[p.BackendType])
}

// deviceTypes and backends are wgpu-native 0.17's adapter and backend
// types in gputypes terms; the others (D3D11, Null, Undefined) are
// missing, and so the zero values, DeviceTypeOther and BackendEmpty.
var (
	deviceTypes = map[wgpu.AdapterType]gputypes.DeviceType{
		wgpu.AdapterType_DiscreteGPU:   gputypes.DeviceTypeDiscreteGPU,
		wgpu.AdapterType_IntegratedGPU: gputypes.DeviceTypeIntegratedGPU,
		wgpu.AdapterType_CPU:           gputypes.DeviceTypeCPU,
	}
	backends = map[wgpu.BackendType]gputypes.Backend{
		wgpu.BackendType_Vulkan: gputypes.BackendVulkan, wgpu.BackendType_Metal: gputypes.BackendMetal,
		wgpu.BackendType_D3D12: gputypes.BackendDX12, wgpu.BackendType_WebGPU: gputypes.BackendBrowserWebGPU,
		wgpu.BackendType_OpenGL: gputypes.BackendGL, wgpu.BackendType_OpenGLES: gputypes.BackendGL,
	}
)

// bindingTypes is each BindingType as the binding names it.
var bindingTypes = [...]wgpu.BufferBindingType{
	BindUniform:  wgpu.BufferBindingType_Uniform,
	BindReadOnly: wgpu.BufferBindingType_ReadOnlyStorage,
	BindStorage:  wgpu.BufferBindingType_Storage,
}

// featureMap pairs each wgpu feature with its gputypes flag.
// NativeFeature_VertexWritableStorage has no gputypes flag and is dropped,
// as are values go-webgpu does not name.
var featureMap = map[wgpu.FeatureName]gputypes.Feature{
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
func convertFeatures(fs []wgpu.FeatureName) gputypes.Features { return featureSet(featureMap, fs) }

// Native is the binding's own device.
func (d *Device) Native() *NativeDevice { return d.raw }

// defaultChecks is go-webgpu's: its wgpu-native compiles every kernel
// with both checks.
const defaultChecks = ChecksAll

// supportsChecks: go-webgpu's wgpu-native has no trusted modules.
func supportsChecks(c RuntimeChecks) error {
	if c != ChecksAll {
		return fmt.Errorf("runtime checks %v: the go-webgpu build's wgpu-native has no trusted shader modules (on only); the default build has them", c)
	}
	return nil
}
