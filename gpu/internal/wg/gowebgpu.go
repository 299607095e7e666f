//go:build cgo && !nogpu && gowebgpu

package wg

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/gogpu/gputypes"
	"github.com/rajveermalviya/go-webgpu/wgpu"
)

// The binding's types that the gpu package's public API takes and gives.
type (
	NativeAdapter = wgpu.Adapter
	NativeDevice  = wgpu.Device
	NativeBuffer  = wgpu.Buffer
)

// MaxQueries is the most queries one query set holds (wgpu-core 0.17's
// QUERY_SET_MAX_QUERIES).
const MaxQueries = 8192

// BindingModule is the binding's module path.
const BindingModule = "github.com/rajveermalviya/go-webgpu/wgpu"

// bindingVersion is the binding's release in go.mod, for binaries built
// without module information (tests); a test keeps it in step with go.mod.
const bindingVersion = "v0.17.1"

// Versions names the binding's module version (from the build
// information where there is some) and wgpu-native's.
func Versions() string {
	v := bindingVersion
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == BindingModule {
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

// SetLogLevel sets wgpu-native's log level for the process.
func SetLogLevel(l LogLevel) {
	wgpu.SetLogLevel([...]wgpu.LogLevel{
		LogOff: wgpu.LogLevel_Off, LogError: wgpu.LogLevel_Error, LogWarn: wgpu.LogLevel_Warn,
		LogInfo: wgpu.LogLevel_Info, LogDebug: wgpu.LogLevel_Debug, LogTrace: wgpu.LogLevel_Trace,
	}[l])
}

// Instance is a wgpu instance on the Vulkan backend.
type Instance struct{ raw *wgpu.Instance }

// Check is nil (unless SetCheck says otherwise): this binding's handles
// are read through its own exported API, with no mirror of its structs
// to go stale.
func Check() error { return checkOverride() }

// SetCheck makes Check return err until the returned func restores it
// (tests).
func SetCheck(err error) (restore func()) {
	checkOverride = func() error { return err }
	return func() { checkOverride = func() error { return nil } }
}

var checkOverride = func() error { return nil }

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

// Adapter is one adapter; Release releases the handle unless it wraps a
// caller's (WrapAdapter).
type Adapter struct {
	raw    *wgpu.Adapter
	shared bool
}

// WrapAdapter is a caller's adapter; its Release leaves it alone.
func WrapAdapter(a *NativeAdapter) *Adapter { return &Adapter{raw: a, shared: true} }

func (a *Adapter) Release() {
	if !a.shared {
		a.raw.Release()
	}
}

// Info is the adapter's properties in gputypes terms.
func (a *Adapter) Info() gputypes.AdapterInfo { return adapterInfo(a.raw.GetProperties()) }

// Limits is the adapter's limits.
func (a *Adapter) Limits() gputypes.Limits { return convertLimits(a.raw.GetLimits().Limits) }

// Features is the adapter's features that gputypes names.
func (a *Adapter) Features() gputypes.Features { return convertFeatures(a.raw.EnumerateFeatures()) }

// HasFeature reports whether the adapter offers f.
func (a *Adapter) HasFeature(f gputypes.Feature) bool {
	for n, g := range features {
		if g == f {
			return a.raw.HasFeature(n)
		}
	}
	return false
}

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
	n.MaxTextureDimension1D = l.MaxTextureDimension1D
	n.MaxTextureDimension2D = l.MaxTextureDimension2D
	n.MaxTextureDimension3D = l.MaxTextureDimension3D
	n.MaxTextureArrayLayers = l.MaxTextureArrayLayers
	n.MaxBindGroups = l.MaxBindGroups
	n.MaxBindingsPerBindGroup = l.MaxBindingsPerBindGroup
	n.MaxDynamicUniformBuffersPerPipelineLayout = l.MaxDynamicUniformBuffersPerPipelineLayout
	n.MaxDynamicStorageBuffersPerPipelineLayout = l.MaxDynamicStorageBuffersPerPipelineLayout
	n.MaxSampledTexturesPerShaderStage = l.MaxSampledTexturesPerShaderStage
	n.MaxSamplersPerShaderStage = l.MaxSamplersPerShaderStage
	n.MaxStorageBuffersPerShaderStage = l.MaxStorageBuffersPerShaderStage
	n.MaxStorageTexturesPerShaderStage = l.MaxStorageTexturesPerShaderStage
	n.MaxUniformBuffersPerShaderStage = l.MaxUniformBuffersPerShaderStage
	n.MaxUniformBufferBindingSize = l.MaxUniformBufferBindingSize
	n.MaxStorageBufferBindingSize = l.MaxStorageBufferBindingSize
	n.MinUniformBufferOffsetAlignment = l.MinUniformBufferOffsetAlignment
	n.MinStorageBufferOffsetAlignment = l.MinStorageBufferOffsetAlignment
	n.MaxVertexBuffers = l.MaxVertexBuffers
	n.MaxBufferSize = l.MaxBufferSize
	n.MaxVertexAttributes = l.MaxVertexAttributes
	n.MaxVertexBufferArrayStride = l.MaxVertexBufferArrayStride
	n.MaxInterStageShaderVariables = l.MaxInterStageShaderVariables
	n.MaxColorAttachments = l.MaxColorAttachments
	n.MaxColorAttachmentBytesPerSample = l.MaxColorAttachmentBytesPerSample
	n.MaxComputeWorkgroupStorageSize = l.MaxComputeWorkgroupStorageSize
	n.MaxComputeInvocationsPerWorkgroup = l.MaxComputeInvocationsPerWorkgroup
	n.MaxComputeWorkgroupSizeX = l.MaxComputeWorkgroupSizeX
	n.MaxComputeWorkgroupSizeY = l.MaxComputeWorkgroupSizeY
	n.MaxComputeWorkgroupSizeZ = l.MaxComputeWorkgroupSizeZ
	n.MaxComputeWorkgroupsPerDimension = l.MaxComputeWorkgroupsPerDimension
	n.MaxPushConstantSize = l.MaxPushConstantSize
	return n
}

// RequestDevice asks the adapter for a device with the features fs
// (each of which the adapter must offer) and the limits l.
func (a *Adapter) RequestDevice(label string, fs []gputypes.Feature, l gputypes.Limits) (*Device, error) {
	var names []wgpu.FeatureName
	for _, f := range fs {
		for n, g := range features {
			if g == f {
				names = append(names, n)
			}
		}
	}
	dev, err := a.raw.RequestDevice(&wgpu.DeviceDescriptor{
		Label:            label,
		RequiredFeatures: names,
		RequiredLimits:   &wgpu.RequiredLimits{Limits: nativeLimits(l)},
	})
	if err != nil {
		return nil, err
	}
	if dev == nil {
		return nil, errors.New("no device")
	}
	return &Device{raw: dev, queue: dev.GetQueue()}, nil
}

// Device is a device and attn's handle to its queue. Release releases
// both, or only the queue's handle on a caller's device (WrapDevice).
type Device struct {
	raw    *wgpu.Device
	queue  *wgpu.Queue
	shared bool
}

// WrapDevice is a caller's device; its Release leaves the device alone.
func WrapDevice(d *NativeDevice) (*Device, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	return &Device{raw: d, queue: d.GetQueue(), shared: true}, nil
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

// Buffer is a handle to a wgpu buffer. Two Buffers may be handles to one
// wgpu buffer (Reference): Same tells.
type Buffer struct{ raw *wgpu.Buffer }

// CreateBuffer makes a buffer of size bytes.
func (d *Device) CreateBuffer(label string, size uint64, usage Usage) (*Buffer, error) {
	b, err := d.raw.CreateBuffer(&wgpu.BufferDescriptor{Label: label, Usage: wgpu.BufferUsage(usage), Size: size})
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fmt.Errorf("no buffer of %d bytes", size)
	}
	return &Buffer{b}, nil
}

func (b *Buffer) Native() *NativeBuffer { return b.raw }
func (b *Buffer) Size() uint64          { return b.raw.GetSize() }
func (b *Buffer) Usage() Usage          { return Usage(b.raw.GetUsage()) }

// Release drops this handle; the buffer lives on while another handle or
// the device's work holds it.
func (b *Buffer) Release() { b.raw.Release() }

// Destroy frees the buffer's memory (after the work submitted with it)
// and releases the handle.
func (b *Buffer) Destroy() {
	b.raw.Destroy()
	b.raw.Release()
}

// DestroyOnly frees the buffer's memory and keeps the handle (tests:
// mapping a destroyed buffer).
func (b *Buffer) DestroyOnly() { b.raw.Destroy() }

// Mapped is size bytes of the mapped buffer from offset; valid until
// Unmap.
func (b *Buffer) Mapped(offset, size uint64) []byte {
	return b.raw.GetMappedRange(uint(offset), uint(size))
}

func (b *Buffer) Unmap() error { return b.raw.Unmap() }

// Alive returns nil: wgpu-native 0.17 reports a destroyed buffer where a
// copy or a bind group uses it, in the error scope go-webgpu pushes.
func (d *Device) Alive(b *Buffer, offset, size uint64) error { return nil }

// WriteBuffer writes data into b from byte offset, in queue order.
func (d *Device) WriteBuffer(b *Buffer, offset uint64, data []byte) error {
	return d.queue.WriteBuffer(b.raw, offset, data)
}

// Pipeline is one compiled entry point with its explicit bind group
// layout.
type Pipeline struct {
	module *wgpu.ShaderModule
	bgl    *wgpu.BindGroupLayout
	layout *wgpu.PipelineLayout
	pipe   *wgpu.ComputePipeline
}

func (p *Pipeline) Release() {
	if p.pipe != nil {
		p.pipe.Release()
	}
	if p.layout != nil {
		p.layout.Release()
	}
	if p.bgl != nil {
		p.bgl.Release()
	}
	if p.module != nil {
		p.module.Release()
	}
}

// CreatePipeline compiles entry of the WGSL src into a compute pipeline
// whose one bind group binds a buffer of each type in binds, at slots 0,
// 1, …. The error is a *StageError.
func (d *Device) CreatePipeline(label, src, entry string, binds []BindingType) (*Pipeline, error) {
	p := &Pipeline{}
	fail := func(what string, err error) (*Pipeline, error) {
		p.Release()
		return nil, &StageError{what, err}
	}
	var err error
	if p.module, err = d.raw.CreateShaderModule(&wgpu.ShaderModuleDescriptor{
		Label:          label,
		WGSLDescriptor: &wgpu.ShaderModuleWGSLDescriptor{Code: src},
	}); err != nil {
		return fail("compiling WGSL", err)
	}
	entries := make([]wgpu.BindGroupLayoutEntry, len(binds))
	for i, bt := range binds {
		e := wgpu.BindGroupLayoutEntry{Binding: uint32(i), Visibility: wgpu.ShaderStage_Compute}
		switch bt {
		case BindUniform:
			e.Buffer.Type = wgpu.BufferBindingType_Uniform
		case BindReadOnly:
			e.Buffer.Type = wgpu.BufferBindingType_ReadOnlyStorage
		case BindStorage:
			e.Buffer.Type = wgpu.BufferBindingType_Storage
		}
		entries[i] = e
	}
	if p.bgl, err = d.raw.CreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{Label: label, Entries: entries}); err != nil {
		return fail("bind group layout", err)
	}
	if p.layout, err = d.raw.CreatePipelineLayout(&wgpu.PipelineLayoutDescriptor{
		Label: label, BindGroupLayouts: []*wgpu.BindGroupLayout{p.bgl},
	}); err != nil {
		return fail("pipeline layout", err)
	}
	if p.pipe, err = d.raw.CreateComputePipeline(&wgpu.ComputePipelineDescriptor{
		Label:   label,
		Layout:  p.layout,
		Compute: wgpu.ProgrammableStageDescriptor{Module: p.module, EntryPoint: entry},
	}); err != nil {
		return fail("compute pipeline", err)
	}
	return p, nil
}

// BindGroup is a bind group of a Pipeline's layout.
type BindGroup struct{ raw *wgpu.BindGroup }

func (g *BindGroup) Release() { g.raw.Release() }

// CreateBindGroup binds entries[i] at slot i of p's layout.
func (d *Device) CreateBindGroup(p *Pipeline, entries []Entry) (*BindGroup, error) {
	es := make([]wgpu.BindGroupEntry, len(entries))
	for i, e := range entries {
		es[i] = wgpu.BindGroupEntry{Binding: uint32(i), Buffer: e.Buffer.raw, Offset: e.Offset, Size: e.Size}
	}
	g, err := d.raw.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: p.bgl, Entries: es})
	if err != nil {
		return nil, err
	}
	return &BindGroup{g}, nil
}

// QuerySet is a set of timestamp queries.
type QuerySet struct{ raw *wgpu.QuerySet }

func (q *QuerySet) Release() { q.raw.Release() }

// CreateTimestamps makes a query set of count timestamps.
func (d *Device) CreateTimestamps(label string, count uint32) (*QuerySet, error) {
	qs, err := d.raw.CreateQuerySet(&wgpu.QuerySetDescriptor{Label: label, Type: wgpu.QueryType_Timestamp, Count: count})
	if err != nil {
		return nil, err
	}
	return &QuerySet{qs}, nil
}

// Encoder records commands; Finish makes them a CommandBuffer, and
// Release frees what is left either way.
type Encoder struct{ raw *wgpu.CommandEncoder }

// CommandBuffer is recorded work for Submit.
type CommandBuffer struct{ raw *wgpu.CommandBuffer }

func (c *CommandBuffer) Release() { c.raw.Release() }

// CreateEncoder starts recording.
func (d *Device) CreateEncoder() (*Encoder, error) {
	e, err := d.raw.CreateCommandEncoder(nil)
	if err != nil {
		return nil, err
	}
	return &Encoder{e}, nil
}

func (e *Encoder) Release() { e.raw.Release() }

func (e *Encoder) CopyBufferToBuffer(src *Buffer, srcOff uint64, dst *Buffer, dstOff, size uint64) error {
	return e.raw.CopyBufferToBuffer(src.raw, srcOff, dst.raw, dstOff, size)
}

// WriteTimestamp writes query i of qs between passes.
func (e *Encoder) WriteTimestamp(qs *QuerySet, i uint32) error {
	return e.raw.WriteTimestamp(qs.raw, i)
}

// ResolveQuerySet writes count queries of qs from first into dst at
// dstOff, 8 bytes each.
func (e *Encoder) ResolveQuerySet(qs *QuerySet, first, count uint32, dst *Buffer, dstOff uint64) error {
	return e.raw.ResolveQuerySet(qs.raw, first, count, dst.raw, dstOff)
}

// Dispatch is one kernel launch of a compute pass.
type Dispatch struct {
	Pipeline *Pipeline
	Group    *BindGroup
	Grid     [3]uint32
}

// ComputePass records ds, in order, in one compute pass.
func (e *Encoder) ComputePass(ds []Dispatch) error {
	pass := e.raw.BeginComputePass(nil)
	for _, d := range ds {
		pass.SetPipeline(d.Pipeline.pipe)
		pass.SetBindGroup(0, d.Group.raw, nil)
		pass.DispatchWorkgroups(d.Grid[0], d.Grid[1], d.Grid[2])
	}
	err := pass.End()
	pass.Release()
	return err
}

// ComputePassStamped would write timestamps inside the pass
// (oliverbestmann.go's); wgpu-native 0.17 has none there.
func (e *Encoder) ComputePassStamped(ds []Dispatch, qs *QuerySet, first uint32) error {
	return errors.New("gpu: wgpu-native 0.17 writes no timestamps inside compute passes")
}

func (e *Encoder) Finish() (*CommandBuffer, error) {
	c, err := e.raw.Finish(nil)
	if err != nil {
		return nil, err
	}
	return &CommandBuffer{c}, nil
}

// Submit submits cmd to the device's queue. wgpu-native 0.17 reports no
// error here (it aborts on some misuse instead: the gpu package
// validates before it submits), so the error is always nil.
func (d *Device) Submit(cmd *CommandBuffer) error {
	d.queue.Submit(cmd.raw)
	return nil
}

// poll runs the callbacks that are due without blocking.
func (d *Device) poll() { d.raw.Poll(false, nil) }

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
		Vendor:     VendorName(p.VendorId),
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

// Native is the binding's own adapter.
func (a *Adapter) Native() *NativeAdapter { return a.raw }

// Native is the binding's own device.
func (d *Device) Native() *NativeDevice { return d.raw }

// WrapBuffer is a Buffer of the handle b, which stays the caller's: no
// reference of its own, so Release releases b.
func WrapBuffer(b *NativeBuffer) *Buffer { return &Buffer{b} }
