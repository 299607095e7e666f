//go:build cgo && !nogpu && !gowebgpu

package wg

/*
#cgo CFLAGS: -I${SRCDIR}/v27include
#include <stdlib.h>
#include <string.h>
#include "wgpu.h"

// attn_err is what an error scope popped by attn reports: the error's
// type (0, NoError, when there was none) and its message.
typedef struct {
	uint32_t type;
	char msg[512];
} attn_err;

static void attn_err_cb(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message, void *u1, void *u2) {
	attn_err *e = u1;
	if (status != WGPUPopErrorScopeStatus_Success || type == WGPUErrorType_NoError) {
		return;
	}
	e->type = type;
	size_t n = message.length == WGPU_STRLEN ? (message.data ? strlen(message.data) : 0) : message.length;
	if (n > sizeof e->msg - 1) {
		n = sizeof e->msg - 1;
	}
	if (message.data != NULL) {
		memcpy(e->msg, message.data, n);
	}
	e->msg[n] = 0;
}

// attn_pop reports into e the validation error of what ran since the
// matching push. wgpu-native calls the callback before returning.
static void attn_pop(WGPUDevice dev, attn_err *e) {
	WGPUPopErrorScopeCallbackInfo info;
	memset(&info, 0, sizeof info);
	info.mode = WGPUCallbackMode_AllowSpontaneous;
	info.callback = attn_err_cb;
	info.userdata1 = e;
	wgpuDevicePopErrorScope(dev, info);
}

static void attn_write_timestamp(WGPUDevice dev, WGPUCommandEncoder enc, WGPUQuerySet qs, uint32_t i, attn_err *e) {
	wgpuDevicePushErrorScope(dev, WGPUErrorFilter_Validation);
	wgpuCommandEncoderWriteTimestamp(enc, qs, i);
	attn_pop(dev, e);
}

// attn_pass_write_timestamp writes query i of qs inside a compute pass
// (wgpu.h's extension, with the timestamp-query-inside-passes feature):
// an error is the pass's, reported when it ends.
static void attn_pass_write_timestamp(WGPUComputePassEncoder pass, WGPUQuerySet qs, uint32_t i) {
	wgpuComputePassEncoderWriteTimestamp(pass, qs, i);
}

// attn_submit submits cmd in an error scope of its own: wgpu-native 27
// reports a submission's validation error (a destroyed buffer, say) to
// the device, and without a scope or an uncaptured-error callback it
// aborts the process.
static void attn_submit(WGPUDevice dev, WGPUQueue q, WGPUCommandBuffer cmd, attn_err *e) {
	wgpuDevicePushErrorScope(dev, WGPUErrorFilter_Validation);
	wgpuQueueSubmit(q, 1, &cmd);
	attn_pop(dev, e);
}

// attn_features lists up to cap of an adapter's (dev NULL) or a device's
// features into out and returns how many there are. The list is
// wgpu-native's, freed here with wgpuSupportedFeaturesFreeMembers (the
// binding's GetFeatures frees it with free() and crashes on an empty one).
static size_t attn_features(WGPUAdapter a, WGPUDevice dev, WGPUFeatureName *out, size_t cap) {
	WGPUSupportedFeatures sf;
	memset(&sf, 0, sizeof sf);
	if (dev != NULL) {
		wgpuDeviceGetFeatures(dev, &sf);
	} else {
		wgpuAdapterGetFeatures(a, &sf);
	}
	size_t n = sf.featureCount;
	for (size_t i = 0; i < n && i < cap; i++) {
		out[i] = sf.features[i];
	}
	wgpuSupportedFeaturesFreeMembers(sf);
	return n;
}

// attn_limits reads an adapter's (dev NULL) or a device's limits, with
// no chained struct (the binding's Device.GetLimits frees a Go address).
static void attn_limits(WGPUAdapter a, WGPUDevice dev, WGPULimits *l) {
	memset(l, 0, sizeof *l);
	if (dev != NULL) {
		wgpuDeviceGetLimits(dev, l);
	} else {
		wgpuAdapterGetLimits(a, l);
	}
}

// attn_info copies an adapter's info out, its strings into C memory the
// caller frees, and frees wgpu-native's.
typedef struct {
	char *vendor, *architecture, *device, *description;
	uint32_t backend, type, vendor_id, device_id;
} attn_info;

static char *attn_strdup(WGPUStringView s) {
	size_t n = s.length == WGPU_STRLEN ? (s.data ? strlen(s.data) : 0) : s.length;
	char *p = malloc(n + 1);
	if (n > 0) {
		memcpy(p, s.data, n);
	}
	p[n] = 0;
	return p;
}

// attn_create_instance creates an instance on the Vulkan backend. The
// binding's CreateInstance leaves most of its malloc'd
// WGPUInstanceExtras unset (dxcPath, the budgets), which crashed inside
// wgpuCreateInstance here; every field is set here.
static WGPUInstance attn_create_instance(void) {
	WGPUInstanceExtras extras;
	memset(&extras, 0, sizeof extras);
	extras.chain.sType = (WGPUSType)WGPUSType_InstanceExtras;
	extras.backends = WGPUInstanceBackend_Vulkan;
	extras.dxcPath.length = 0;
	WGPUInstanceDescriptor desc;
	memset(&desc, 0, sizeof desc);
	desc.nextInChain = &extras.chain;
	return wgpuCreateInstance(&desc);
}

static void attn_adapter_info(WGPUAdapter a, attn_info *out) {
	WGPUAdapterInfo info;
	memset(&info, 0, sizeof info);
	wgpuAdapterGetInfo(a, &info);
	out->vendor = attn_strdup(info.vendor);
	out->architecture = attn_strdup(info.architecture);
	out->device = attn_strdup(info.device);
	out->description = attn_strdup(info.description);
	out->backend = info.backendType;
	out->type = info.adapterType;
	out->vendor_id = info.vendorID;
	out->device_id = info.deviceID;
	wgpuAdapterInfoFreeMembers(info);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/gogpu/gputypes"
	"github.com/oliverbestmann/webgpu/wgpu"
)

// The binding's types that the gpu package's public API takes and gives.
type (
	NativeAdapter = wgpu.Adapter
	NativeDevice  = wgpu.Device
	NativeBuffer  = wgpu.Buffer
)

// MaxQueries is the most queries one query set holds (wgpu-core 27's
// QUERY_SET_MAX_QUERIES).
const MaxQueries = 4096

// BindingModule is the binding's module path.
const BindingModule = "github.com/oliverbestmann/webgpu"

// bindingVersion is the binding's release in go.mod, for binaries built
// without module information (tests); a test keeps it in step with go.mod.
const bindingVersion = "v1.0.0"

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
	return "oliverbestmann/webgpu " + v + ", wgpu-native " + nativeVersion(uint32(wgpu.GetVersion()))
}

// nativeVersion decodes wgpuGetVersion's major<<24 | minor<<16 | patch<<8
// | build.
func nativeVersion(v uint32) string {
	if v == 0 {
		return "(version not recorded in the library)"
	}
	return fmt.Sprintf("%d.%d.%d.%d", v>>24, v>>16&0xff, v>>8&0xff, v&0xff)
}

// SetLogLevel sets wgpu-native's log level for the process.
func SetLogLevel(l LogLevel) {
	wgpu.SetLogLevel([...]wgpu.LogLevel{
		LogOff: wgpu.LogLevelOff, LogError: wgpu.LogLevelError, LogWarn: wgpu.LogLevelWarn,
		LogInfo: wgpu.LogLevelInfo, LogDebug: wgpu.LogLevelDebug, LogTrace: wgpu.LogLevelTrace,
	}[l])
}

// Mirrors of the binding's structs, whose C handles are unexported (the
// shims above need them):
//
//	type Instance       struct { ref C.WGPUInstance }
//	type Adapter        struct { ref C.WGPUAdapter }
//	type Device         struct { ref C.WGPUDevice }
//	type Buffer         struct { ref C.WGPUBuffer; device *Device }
//	type CommandEncoder struct { ref C.WGPUCommandEncoder; device *Device }
//	type Queue          struct { ref C.WGPUQueue; device *Device }
//	type CommandBuffer  struct { ref C.WGPUCommandBuffer }
//	type QuerySet       struct { ref C.WGPUQuerySet }
//	type ComputePassEncoder struct { ref C.WGPUComputePassEncoder; device *Device }
//
// A device field is a reference of its own to the device (the binding's
// GetQueue, CreateBuffer, CreateCommandEncoder and BeginComputePass call
// wgpuDeviceAddRef for it), which the object's Release leaves to a
// finalizer on that *Device. wgpu-native frees a device only when its last
// reference goes, and the collector, which sees a few bytes of Go memory
// and not the megabytes of C memory behind them, ran those finalizers too
// rarely: every closed backend kept its device, about 5 MiB on lavapipe,
// until a collection happened to come, and TestOpenCloseCycles saw the
// RSS climb 350 KB a cycle. So wg releases that reference with the object
// (releaseWithDevice).
type (
	instanceMirror struct{ ref unsafe.Pointer }
	adapterMirror  struct{ ref unsafe.Pointer }
	deviceMirror   struct{ ref unsafe.Pointer }
	bufferMirror   struct{ ref, device unsafe.Pointer }
	encoderMirror  struct{ ref, device unsafe.Pointer }
	queueMirror    struct{ ref, device unsafe.Pointer }
	cmdMirror      struct{ ref unsafe.Pointer }
	querySetMirror struct{ ref unsafe.Pointer }
	passMirror     struct{ ref, device unsafe.Pointer }
)

// Check reports whether this build's binding is one wg was written for:
// the binding's structs must still look like the mirrors above, so that
// reading them through unsafe is sound. Its error names the binding's
// and wgpu-native's versions and what disagreed; gpu.New and the others
// that open an instance refuse with it, rather than run with a shim
// that would leak every device (releaseWithDevice) or find no adapter.
func Check() error { return checkOverride() }

// checkOverride is Check's answer: checkLayout, or what SetCheck put.
var checkOverride = checkLayout

// SetCheck makes Check return err until the returned func restores it:
// for tests of the callers' refusal, as a binding of another layout would
// make them refuse. Not for use beside a running backend.
func SetCheck(err error) (restore func()) {
	checkOverride = func() error { return err }
	return func() { checkOverride = checkLayout }
}

// checkLayout reports, once, whether the binding's structs still look
// like the mirrors above (Check).
var checkLayout = sync.OnceValue(func() error { return layoutOf(mirrors) })

// mirrors pairs each binding struct wg reads through unsafe with its
// mirror.
var mirrors = []struct{ real, mirror reflect.Type }{
	{reflect.TypeFor[wgpu.Instance](), reflect.TypeFor[instanceMirror]()},
	{reflect.TypeFor[wgpu.Adapter](), reflect.TypeFor[adapterMirror]()},
	{reflect.TypeFor[wgpu.Device](), reflect.TypeFor[deviceMirror]()},
	{reflect.TypeFor[wgpu.Buffer](), reflect.TypeFor[bufferMirror]()},
	{reflect.TypeFor[wgpu.CommandEncoder](), reflect.TypeFor[encoderMirror]()},
	{reflect.TypeFor[wgpu.QuerySet](), reflect.TypeFor[querySetMirror]()},
	{reflect.TypeFor[wgpu.Queue](), reflect.TypeFor[queueMirror]()},
	{reflect.TypeFor[wgpu.CommandBuffer](), reflect.TypeFor[cmdMirror]()},
	{reflect.TypeFor[wgpu.ComputePassEncoder](), reflect.TypeFor[passMirror]()},
}

// layoutOf is nil when each pair's real struct has its mirror's layout,
// else an error naming the versions and the first that differs.
func layoutOf(pairs []struct{ real, mirror reflect.Type }) error {
	for _, c := range pairs {
		if err := sameLayout(c.real, c.mirror); err != nil {
			return fmt.Errorf("gpu: the WebGPU binding (%s) is not one attn was built for: its %v has another layout (%v) than gpu/internal/wg's mirror of it; build attn with the binding its go.mod names", Versions(), c.real, err)
		}
	}
	return nil
}

func sameLayout(real, mirror reflect.Type) error {
	if real.Size() != mirror.Size() || real.NumField() != mirror.NumField() {
		return fmt.Errorf("size %d with %d fields, want %d with %d",
			real.Size(), real.NumField(), mirror.Size(), mirror.NumField())
	}
	for i := range real.NumField() {
		r, m := real.Field(i), mirror.Field(i)
		if r.Name != m.Name || r.Offset != m.Offset || r.Type.Kind() != reflect.Pointer || r.Type.Size() != m.Type.Size() {
			return fmt.Errorf("field %d is %s %v at offset %d, want %s (a pointer) at %d",
				i, r.Name, r.Type, r.Offset, m.Name, m.Offset)
		}
	}
	return nil
}

func adapterRef(a *wgpu.Adapter) C.WGPUAdapter {
	return C.WGPUAdapter((*adapterMirror)(unsafe.Pointer(a)).ref)
}
func deviceRef(d *wgpu.Device) C.WGPUDevice {
	return C.WGPUDevice((*deviceMirror)(unsafe.Pointer(d)).ref)
}
func bufferRef(b *wgpu.Buffer) C.WGPUBuffer {
	return C.WGPUBuffer((*bufferMirror)(unsafe.Pointer(b)).ref)
}

// releaseWithDevice releases obj, a Buffer, Queue, CommandEncoder or
// ComputePassEncoder of the binding whose device field is at *device, and
// then that field's reference to the device (the mirrors say why). Both
// Releases are the binding's: each nils its handle atomically, so a second
// call, or the finalizer that comes later, does nothing.
func releaseWithDevice(obj interface{ Release() }, device *unsafe.Pointer) {
	obj.Release()
	if checkLayout() != nil {
		return
	}
	if d := (*wgpu.Device)(*device); d != nil {
		d.Release()
	}
}

func releaseBuffer(b *wgpu.Buffer) {
	releaseWithDevice(b, &(*bufferMirror)(unsafe.Pointer(b)).device)
}

// bufferDevice is the C handle of the device b was made on.
func bufferDevice(b *wgpu.Buffer) C.WGPUDevice {
	d := (*bufferMirror)(unsafe.Pointer(b)).device
	if d == nil {
		return nil
	}
	return C.WGPUDevice((*deviceMirror)(d).ref)
}

// Instance is a wgpu instance on the Vulkan backend.
type Instance struct{ raw *wgpu.Instance }

// NewInstance creates an instance on the Vulkan backend only: with the
// default backends wgpu may hand out a GL adapter without saying so. It
// succeeds on a host without any Vulkan driver too (the instance then has
// no adapters); an instance wgpu-native refuses, or a binding whose
// layout changed, gives one with no adapters.
func NewInstance() *Instance {
	inst := new(wgpu.Instance)
	if checkLayout() == nil {
		(*instanceMirror)(unsafe.Pointer(inst)).ref = unsafe.Pointer(C.attn_create_instance())
	}
	return &Instance{inst}
}

func (i *Instance) live() bool { return (*instanceMirror)(unsafe.Pointer(i.raw)).ref != nil }

// instanceVulkan is wgpu.h's WGPUInstanceBackend_Vulkan (1 << 0), which
// the binding does not name.
const instanceVulkan wgpu.InstanceBackend = 1

func (i *Instance) Release() { i.raw.Release() }

// Adapters lists the instance's Vulkan adapters; nil when there is none.
func (i *Instance) Adapters() []*Adapter {
	if !i.live() {
		return nil
	}
	var out []*Adapter
	for _, a := range i.raw.EnumerateAdapters(&wgpu.InstanceEnumerateAdapterOptons{Backends: instanceVulkan}) {
		out = append(out, &Adapter{raw: a})
	}
	return out
}

// HighPerformanceAdapter is the adapter wgpu ranks best for high
// performance (a discrete GPU before an integrated one before lavapipe).
func (i *Instance) HighPerformanceAdapter() (*Adapter, error) {
	if !i.live() {
		return nil, errors.New("no instance")
	}
	a, err := i.raw.RequestAdapter(&wgpu.RequestAdapterOptions{PowerPreference: wgpu.PowerPreferenceHighPerformance})
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

// Info is the adapter's properties in gputypes terms. wgpu-native 27
// fills vendor with wgpu's AdapterInfo.driver ("llvmpipe"), device with
// its name and description with its driver_info ("Mesa 22.3.6 (LLVM
// 15.0.6)"): they become Driver, Name and DriverInfo, as with
// wgpu-native 0.17's properties.
func (a *Adapter) Info() gputypes.AdapterInfo {
	if err := checkLayout(); err != nil {
		return gputypes.AdapterInfo{}
	}
	var ci C.attn_info
	C.attn_adapter_info(adapterRef(a.raw), &ci)
	runtime.KeepAlive(a.raw)
	take := func(p *C.char) string {
		s := C.GoString(p)
		C.free(unsafe.Pointer(p))
		return s
	}
	vendor, _, device, desc := take(ci.vendor), take(ci.architecture), take(ci.device), take(ci.description)
	return adapterInfo(device, vendor, desc, uint32(ci.vendor_id), uint32(ci.device_id),
		wgpu.AdapterType(ci._type), wgpu.BackendType(ci.backend))
}

func adapterInfo(name, driver, driverInfo string, vendorID, deviceID uint32, at wgpu.AdapterType, bt wgpu.BackendType) gputypes.AdapterInfo {
	info := gputypes.AdapterInfo{
		Name:       name,
		Vendor:     VendorName(vendorID),
		VendorID:   vendorID,
		DeviceID:   deviceID,
		Driver:     driver,
		DriverInfo: driverInfo,
	}
	switch at {
	case wgpu.AdapterTypeDiscreteGPU:
		info.DeviceType = gputypes.DeviceTypeDiscreteGPU
	case wgpu.AdapterTypeIntegratedGPU:
		info.DeviceType = gputypes.DeviceTypeIntegratedGPU
	case wgpu.AdapterTypeCPU:
		info.DeviceType = gputypes.DeviceTypeCPU
	default:
		info.DeviceType = gputypes.DeviceTypeOther
	}
	switch bt {
	case wgpu.BackendTypeVulkan:
		info.Backend = gputypes.BackendVulkan
	case wgpu.BackendTypeMetal:
		info.Backend = gputypes.BackendMetal
	case wgpu.BackendTypeD3D12:
		info.Backend = gputypes.BackendDX12
	case wgpu.BackendTypeOpenGL, wgpu.BackendTypeOpenGLES:
		info.Backend = gputypes.BackendGL
	case wgpu.BackendTypeWebGPU:
		info.Backend = gputypes.BackendBrowserWebGPU
	default:
		info.Backend = gputypes.BackendEmpty
	}
	return info
}

// Limits is the adapter's limits.
func (a *Adapter) Limits() gputypes.Limits {
	if checkLayout() != nil {
		return gputypes.Limits{}
	}
	var l C.WGPULimits
	C.attn_limits(adapterRef(a.raw), nil, &l)
	runtime.KeepAlive(a.raw)
	return convertLimits(&l)
}

// Features is the adapter's features that gputypes names.
func (a *Adapter) Features() gputypes.Features {
	if checkLayout() != nil {
		return 0
	}
	fs := features(adapterRef(a.raw), nil)
	runtime.KeepAlive(a.raw)
	return convertFeatures(fs)
}

// HasFeature reports whether the adapter offers f (TimestampQuery only
// with timestamps inside encoders, which attn writes them in).
func (a *Adapter) HasFeature(f gputypes.Feature) bool { return a.Features().Contains(f) }

// SubgroupSize is the adapter's subgroup size range; 0, 0 where the
// binding does not report it (wgpu-native 27's adapter info has none).
func (a *Adapter) SubgroupSize() (lo, hi uint32) { return 0, 0 }

// SubgroupSizeUnreported says why SubgroupSize is 0, 0: wgpu-core knows
// the range, but neither webgpu.h's WGPUAdapterInfo nor wgpu.h's
// WGPUNativeLimits in wgpu-native 27 carries it.
const SubgroupSizeUnreported = "not reported by wgpu-native 27"

// CompilesF16 says whether the binding compiles WGSL's f16 type: its naga compiles WGSL f16 on a device with ShaderF16.
const CompilesF16 = true

// TimestampsInside reports whether the adapter offers timestamps written
// inside command encoders and inside compute passes (wgpu-native's
// TimestampQueryInsideEncoders and TimestampQueryInsidePasses).
func (a *Adapter) TimestampsInside() (encoders, passes bool) {
	if checkLayout() != nil {
		return false, false
	}
	fs := features(adapterRef(a.raw), nil)
	runtime.KeepAlive(a.raw)
	return timestampsInside(fs)
}

func timestampsInside(fs []wgpu.FeatureName) (encoders, passes bool) {
	for _, f := range fs {
		switch f {
		case wgpu.NativeFeatureTimestampQueryInsideEncoders:
			encoders = true
		case wgpu.NativeFeatureTimestampQueryInsidePasses:
			passes = true
		}
	}
	return encoders, passes
}

// features lists an adapter's or a device's features.
func features(a C.WGPUAdapter, d C.WGPUDevice) []wgpu.FeatureName {
	var buf [128]C.WGPUFeatureName
	n := int(C.attn_features(a, d, &buf[0], C.size_t(len(buf))))
	out := make([]wgpu.FeatureName, min(n, len(buf)))
	for i := range out {
		out[i] = wgpu.FeatureName(buf[i])
	}
	return out
}

// DefaultLimits is WebGPU's default limits (wgpu's Limits::default; the
// binding's DefaultLimits is all "undefined").
func DefaultLimits() gputypes.Limits {
	return gputypes.Limits{
		MaxTextureDimension1D: 8192, MaxTextureDimension2D: 8192, MaxTextureDimension3D: 2048,
		MaxTextureArrayLayers: 256, MaxBindGroups: 4, MaxBindingsPerBindGroup: 1000,
		MaxDynamicUniformBuffersPerPipelineLayout: 8, MaxDynamicStorageBuffersPerPipelineLayout: 4,
		MaxSampledTexturesPerShaderStage: 16, MaxSamplersPerShaderStage: 16,
		MaxStorageBuffersPerShaderStage: 8, MaxStorageTexturesPerShaderStage: 4,
		MaxUniformBuffersPerShaderStage: 12, MaxUniformBufferBindingSize: 64 << 10,
		MaxStorageBufferBindingSize: 128 << 20, MinUniformBufferOffsetAlignment: 256,
		MinStorageBufferOffsetAlignment: 256, MaxVertexBuffers: 8, MaxBufferSize: 256 << 20,
		MaxVertexAttributes: 16, MaxVertexBufferArrayStride: 2048, MaxInterStageShaderVariables: 16,
		MaxColorAttachments: 8, MaxColorAttachmentBytesPerSample: 32,
		MaxComputeWorkgroupStorageSize: 16384, MaxComputeInvocationsPerWorkgroup: 256,
		MaxComputeWorkgroupSizeX: 256, MaxComputeWorkgroupSizeY: 256, MaxComputeWorkgroupSizeZ: 64,
		MaxComputeWorkgroupsPerDimension: 65535,
	}
}

// nativeLimits is l as the binding's device request takes it.
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
	if l.MaxPushConstantSize != 0 {
		n.MaxPushConstantSize = l.MaxPushConstantSize
	}
	return n
}

// RequestDevice asks the adapter for a device with the features fs
// (each of which the adapter must offer) and the limits l. TimestampQuery
// brings timestamps inside encoders with it, where attn writes them, and
// inside passes where the adapter offers those (ComputePassStamped).
func (a *Adapter) RequestDevice(label string, fs []gputypes.Feature, l gputypes.Limits) (*Device, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	var names []wgpu.FeatureName
	for _, f := range fs {
		for n, g := range featureMap {
			if g == f {
				names = append(names, n)
			}
		}
		if f == gputypes.FeatureTimestampQuery {
			names = append(names, wgpu.NativeFeatureTimestampQueryInsideEncoders)
			if _, passes := a.TimestampsInside(); passes {
				names = append(names, wgpu.NativeFeatureTimestampQueryInsidePasses)
			}
		}
	}
	dev, err := a.raw.RequestDevice(&wgpu.DeviceDescriptor{
		Label:            label,
		RequiredFeatures: names,
		RequiredLimits:   ptr(nativeLimits(l)),
	})
	if err != nil {
		return nil, err
	}
	if dev == nil {
		return nil, errors.New("no device")
	}
	return &Device{raw: dev, queue: dev.GetQueue()}, nil
}

func ptr[T any](v T) *T { return &v }

// Device is a device and attn's handle to its queue. Release releases
// both, or only the queue's handle on a caller's device (WrapDevice).
type Device struct {
	raw    *wgpu.Device
	queue  *wgpu.Queue
	shared bool
	probe  *wgpu.BindGroupLayout // Alive's, made on first use
}

// Alive returns an error when b, a buffer of the caller's, was destroyed:
// wgpu-native 27 finds that only when a submission uses it, and then
// aborts the process, so a copy that may use such a buffer asks first.
// Making a bind group of it is the check (wgpu-core validates a bound
// buffer's life there, and reports it in an error scope); size bytes from
// offset are bound, read-only, so b needs the Storage usage.
func (d *Device) Alive(b *Buffer, offset, size uint64) error {
	if d.probe == nil {
		bgl, err := d.raw.TryCreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{
			Label: "attn probe",
			Entries: []wgpu.BindGroupLayoutEntry{{Binding: 0, Visibility: wgpu.ShaderStageCompute,
				Buffer: wgpu.BufferBindingLayout{Type: wgpu.BufferBindingTypeReadOnlyStorage}}},
		})
		if err != nil {
			return err
		}
		d.probe = bgl
	}
	g, err := d.raw.TryCreateBindGroup(&wgpu.BindGroupDescriptor{Layout: d.probe,
		Entries: []wgpu.BindGroupEntry{{Binding: 0, Buffer: b.raw, Offset: offset, Size: size}}})
	if err != nil {
		return err
	}
	g.Release()
	return nil
}

// WrapDevice is a caller's device; its Release leaves the device alone.
func WrapDevice(d *NativeDevice) (*Device, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	return &Device{raw: d, queue: d.GetQueue(), shared: true}, nil
}

func (d *Device) Release() {
	if d.probe != nil {
		d.probe.Release()
	}
	// The device's own queue stays: this was attn's handle to it, and
	// the reference to the device that the binding's GetQueue added.
	releaseWithDevice(d.queue, &(*queueMirror)(unsafe.Pointer(d.queue)).device)
	if !d.shared {
		d.raw.Release()
	}
}

// Limits is the device's limits.
func (d *Device) Limits() gputypes.Limits {
	var l C.WGPULimits
	C.attn_limits(nil, deviceRef(d.raw), &l)
	runtime.KeepAlive(d.raw)
	return convertLimits(&l)
}

// Features is the device's features that gputypes names.
func (d *Device) Features() gputypes.Features {
	fs := features(nil, deviceRef(d.raw))
	runtime.KeepAlive(d.raw)
	return convertFeatures(fs)
}

// TimestampsInside reports whether the device has timestamps inside
// command encoders and inside compute passes (Adapter.TimestampsInside).
func (d *Device) TimestampsInside() (encoders, passes bool) {
	fs := features(nil, deviceRef(d.raw))
	runtime.KeepAlive(d.raw)
	return timestampsInside(fs)
}

// Buffer is a handle to a wgpu buffer. Two Buffers may be handles to one
// wgpu buffer (Reference): Same tells.
type Buffer struct{ raw *wgpu.Buffer }

// CreateBuffer makes a buffer of size bytes.
func (d *Device) CreateBuffer(label string, size uint64, usage Usage) (*Buffer, error) {
	b, err := d.raw.TryCreateBuffer(&wgpu.BufferDescriptor{Label: label, Usage: wgpu.BufferUsage(usage), Size: size})
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
func (b *Buffer) Release() { releaseBuffer(b.raw) }

// Destroy frees the buffer's memory (after the work submitted with it)
// and releases the handle.
func (b *Buffer) Destroy() {
	b.raw.Destroy()
	releaseBuffer(b.raw)
}

// DestroyOnly frees the buffer's memory and keeps the handle (tests:
// mapping a destroyed buffer).
func (b *Buffer) DestroyOnly() { b.raw.Destroy() }

// Mapped is size bytes of the mapped buffer from offset; valid until
// Unmap.
func (b *Buffer) Mapped(offset, size uint64) []byte {
	return b.raw.GetMappedRange(uint(offset), uint(size))
}

func (b *Buffer) Unmap() error { return b.raw.TryUnmap() }

// WriteBuffer writes data into b from byte offset, in queue order.
func (d *Device) WriteBuffer(b *Buffer, offset uint64, data []byte) error {
	return d.queue.TryWriteBuffer(b.raw, offset, data)
}

// Owns reports whether buf was created on d.
func (d *Device) Owns(buf *NativeBuffer) (bool, error) {
	if err := checkLayout(); err != nil {
		return false, err
	}
	return bufferDevice(buf) == deviceRef(d.raw), nil
}

// Same reports whether x and y are handles to one wgpu buffer
// (Reference makes a handle of its own).
func Same(x, y *Buffer) bool {
	return x == y || x.raw == y.raw || bufferRef(x.raw) == bufferRef(y.raw)
}

// Reference returns a new handle to buf that holds a reference of its
// own to the buffer, as a handle that CreateBuffer returns does: its
// Release leaves buf's handle working, and buf's Release leaves the
// buffer alive for this one.
func Reference(buf *NativeBuffer) (*Buffer, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	m := (*bufferMirror)(unsafe.Pointer(buf))
	C.wgpuBufferAddRef(C.WGPUBuffer(m.ref))
	h := new(wgpu.Buffer)
	hm := (*bufferMirror)(unsafe.Pointer(h))
	hm.ref = m.ref
	if m.device != nil {
		// A reference of h's own to the device too, as the binding's
		// buffers hold, which h's Release releases (releaseBuffer).
		dev := C.WGPUDevice((*deviceMirror)(m.device).ref)
		C.wgpuDeviceAddRef(dev)
		d := new(wgpu.Device)
		(*deviceMirror)(unsafe.Pointer(d)).ref = unsafe.Pointer(dev)
		hm.device = unsafe.Pointer(d)
	}
	runtime.KeepAlive(buf)
	return &Buffer{h}, nil
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
	if p.module, err = d.raw.TryCreateShaderModule(&wgpu.ShaderModuleDescriptor{
		Label:      label,
		WGSLSource: &wgpu.ShaderSourceWGSL{Code: src},
	}); err != nil {
		return fail("compiling WGSL", err)
	}
	entries := make([]wgpu.BindGroupLayoutEntry, len(binds))
	for i, bt := range binds {
		e := wgpu.BindGroupLayoutEntry{Binding: uint32(i), Visibility: wgpu.ShaderStageCompute}
		switch bt {
		case BindUniform:
			e.Buffer.Type = wgpu.BufferBindingTypeUniform
		case BindReadOnly:
			e.Buffer.Type = wgpu.BufferBindingTypeReadOnlyStorage
		case BindStorage:
			e.Buffer.Type = wgpu.BufferBindingTypeStorage
		}
		entries[i] = e
	}
	if p.bgl, err = d.raw.TryCreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{Label: label, Entries: entries}); err != nil {
		return fail("bind group layout", err)
	}
	if p.layout, err = d.raw.TryCreatePipelineLayout(&wgpu.PipelineLayoutDescriptor{
		Label: label, BindGroupLayouts: []*wgpu.BindGroupLayout{p.bgl},
	}); err != nil {
		return fail("pipeline layout", err)
	}
	if p.pipe, err = d.raw.TryCreateComputePipeline(&wgpu.ComputePipelineDescriptor{
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
	g, err := d.raw.TryCreateBindGroup(&wgpu.BindGroupDescriptor{Layout: p.bgl, Entries: es})
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
	qs, err := d.raw.TryCreateQuerySet(&wgpu.QuerySetDescriptor{Label: label, Type: wgpu.QueryTypeTimestamp, Count: count})
	if err != nil {
		return nil, err
	}
	return &QuerySet{qs}, nil
}

// Encoder records commands; Finish makes them a CommandBuffer, and
// Release frees what is left either way.
type Encoder struct {
	raw *wgpu.CommandEncoder
	dev *wgpu.Device
}

// CommandBuffer is recorded work for Submit.
type CommandBuffer struct{ raw *wgpu.CommandBuffer }

func (c *CommandBuffer) Release() { c.raw.Release() }

// CreateEncoder starts recording.
func (d *Device) CreateEncoder() (*Encoder, error) {
	e, err := d.raw.TryCreateCommandEncoder(nil)
	if err != nil {
		return nil, err
	}
	return &Encoder{e, d.raw}, nil
}

func (e *Encoder) Release() {
	releaseWithDevice(e.raw, &(*encoderMirror)(unsafe.Pointer(e.raw)).device)
}

func (e *Encoder) CopyBufferToBuffer(src *Buffer, srcOff uint64, dst *Buffer, dstOff, size uint64) error {
	return e.raw.TryCopyBufferToBuffer(src.raw, srcOff, dst.raw, dstOff, size)
}

// WriteTimestamp writes query i of qs between passes: a call the binding
// does not wrap (webgpu.h's wgpuCommandEncoderWriteTimestamp, which
// wgpu-native 27 allows with the timestamp-query-inside-encoders
// feature), in an error scope of its own.
func (e *Encoder) WriteTimestamp(qs *QuerySet, i uint32) error {
	if err := checkLayout(); err != nil {
		return err
	}
	ce := (*C.attn_err)(C.calloc(1, C.size_t(unsafe.Sizeof(C.attn_err{}))))
	defer C.free(unsafe.Pointer(ce))
	C.attn_write_timestamp(deviceRef(e.dev),
		C.WGPUCommandEncoder((*encoderMirror)(unsafe.Pointer(e.raw)).ref),
		C.WGPUQuerySet((*querySetMirror)(unsafe.Pointer(qs.raw)).ref), C.uint32_t(i), ce)
	runtime.KeepAlive(e)
	runtime.KeepAlive(qs)
	if ce._type != 0 {
		return fmt.Errorf("gpu: WriteTimestamp: %s", errorText("validation", C.GoString(&ce.msg[0])))
	}
	return nil
}

// ResolveQuerySet writes count queries of qs from first into dst at
// dstOff, 8 bytes each.
func (e *Encoder) ResolveQuerySet(qs *QuerySet, first, count uint32, dst *Buffer, dstOff uint64) error {
	return e.raw.TryResolveQuerySet(qs.raw, first, count, dst.raw, dstOff)
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
	err := pass.TryEnd()
	releaseWithDevice(pass, &(*passMirror)(unsafe.Pointer(pass)).device)
	return err
}

// ComputePassStamped records ds, in order, in one compute pass, with
// query first+i of qs written inside the pass before dispatch i and
// query first+len(ds) after the last: len(ds)+1 queries, of which
// consecutive ones bracket each dispatch. The device needs timestamps
// inside passes (Device.TimestampsInside).
func (e *Encoder) ComputePassStamped(ds []Dispatch, qs *QuerySet, first uint32) error {
	if err := checkLayout(); err != nil {
		return err
	}
	pass := e.raw.BeginComputePass(nil)
	ref := C.WGPUComputePassEncoder((*passMirror)(unsafe.Pointer(pass)).ref)
	q := C.WGPUQuerySet((*querySetMirror)(unsafe.Pointer(qs.raw)).ref)
	for i, d := range ds {
		C.attn_pass_write_timestamp(ref, q, C.uint32_t(first+uint32(i)))
		pass.SetPipeline(d.Pipeline.pipe)
		pass.SetBindGroup(0, d.Group.raw, nil)
		pass.DispatchWorkgroups(d.Grid[0], d.Grid[1], d.Grid[2])
	}
	C.attn_pass_write_timestamp(ref, q, C.uint32_t(first+uint32(len(ds))))
	runtime.KeepAlive(qs)
	err := pass.TryEnd()
	releaseWithDevice(pass, &(*passMirror)(unsafe.Pointer(pass)).device)
	return err
}

func (e *Encoder) Finish() (*CommandBuffer, error) {
	c, err := e.raw.TryFinish(nil)
	if err != nil {
		return nil, err
	}
	return &CommandBuffer{c}, nil
}

// Submit submits cmd to the device's queue. A validation error of the
// submission (a buffer destroyed since cmd was recorded) comes back here:
// wgpu-native 27 would abort the process on it outside an error scope.
func (d *Device) Submit(cmd *CommandBuffer) error {
	ce := (*C.attn_err)(C.calloc(1, C.size_t(unsafe.Sizeof(C.attn_err{}))))
	defer C.free(unsafe.Pointer(ce))
	C.attn_submit(deviceRef(d.raw), C.WGPUQueue((*queueMirror)(unsafe.Pointer(d.queue)).ref),
		C.WGPUCommandBuffer((*cmdMirror)(unsafe.Pointer(cmd.raw)).ref), ce)
	runtime.KeepAlive(d)
	runtime.KeepAlive(cmd)
	if ce._type != 0 {
		return fmt.Errorf("gpu: submit: %s", errorText("validation", C.GoString(&ce.msg[0])))
	}
	return nil
}

// poll runs the callbacks that are due without blocking.
func (d *Device) poll() { d.raw.Poll(false, nil) }

// convertLimits copies every limit gputypes has a field for; wgpu-native
// 27 reports MaxBindGroupsPlusVertexBuffers too, and not
// MaxNonSamplerBindings or MaxPushConstantSize (chained, not read).
func convertLimits(l *C.WGPULimits) gputypes.Limits {
	return gputypes.Limits{
		MaxTextureDimension1D:                     uint32(l.maxTextureDimension1D),
		MaxTextureDimension2D:                     uint32(l.maxTextureDimension2D),
		MaxTextureDimension3D:                     uint32(l.maxTextureDimension3D),
		MaxTextureArrayLayers:                     uint32(l.maxTextureArrayLayers),
		MaxBindGroups:                             uint32(l.maxBindGroups),
		MaxBindGroupsPlusVertexBuffers:            uint32(l.maxBindGroupsPlusVertexBuffers),
		MaxBindingsPerBindGroup:                   uint32(l.maxBindingsPerBindGroup),
		MaxDynamicUniformBuffersPerPipelineLayout: uint32(l.maxDynamicUniformBuffersPerPipelineLayout),
		MaxDynamicStorageBuffersPerPipelineLayout: uint32(l.maxDynamicStorageBuffersPerPipelineLayout),
		MaxSampledTexturesPerShaderStage:          uint32(l.maxSampledTexturesPerShaderStage),
		MaxSamplersPerShaderStage:                 uint32(l.maxSamplersPerShaderStage),
		MaxStorageBuffersPerShaderStage:           uint32(l.maxStorageBuffersPerShaderStage),
		MaxStorageTexturesPerShaderStage:          uint32(l.maxStorageTexturesPerShaderStage),
		MaxUniformBuffersPerShaderStage:           uint32(l.maxUniformBuffersPerShaderStage),
		MaxUniformBufferBindingSize:               uint64(l.maxUniformBufferBindingSize),
		MaxStorageBufferBindingSize:               uint64(l.maxStorageBufferBindingSize),
		MinUniformBufferOffsetAlignment:           uint32(l.minUniformBufferOffsetAlignment),
		MinStorageBufferOffsetAlignment:           uint32(l.minStorageBufferOffsetAlignment),
		MaxVertexBuffers:                          uint32(l.maxVertexBuffers),
		MaxBufferSize:                             uint64(l.maxBufferSize),
		MaxVertexAttributes:                       uint32(l.maxVertexAttributes),
		MaxVertexBufferArrayStride:                uint32(l.maxVertexBufferArrayStride),
		MaxInterStageShaderVariables:              uint32(l.maxInterStageShaderVariables),
		MaxColorAttachments:                       uint32(l.maxColorAttachments),
		MaxColorAttachmentBytesPerSample:          uint32(l.maxColorAttachmentBytesPerSample),
		MaxComputeWorkgroupStorageSize:            uint32(l.maxComputeWorkgroupStorageSize),
		MaxComputeInvocationsPerWorkgroup:         uint32(l.maxComputeInvocationsPerWorkgroup),
		MaxComputeWorkgroupSizeX:                  uint32(l.maxComputeWorkgroupSizeX),
		MaxComputeWorkgroupSizeY:                  uint32(l.maxComputeWorkgroupSizeY),
		MaxComputeWorkgroupSizeZ:                  uint32(l.maxComputeWorkgroupSizeZ),
		MaxComputeWorkgroupsPerDimension:          uint32(l.maxComputeWorkgroupsPerDimension),
	}
}

// featureMap pairs each wgpu feature with its gputypes flag; the others
// are dropped. TimestampQuery counts only with timestamps inside
// encoders (convertFeatures), where attn writes them.
var featureMap = map[wgpu.FeatureName]gputypes.Feature{
	wgpu.FeatureNameDepthClipControl:                       gputypes.FeatureDepthClipControl,
	wgpu.FeatureNameDepth32FloatStencil8:                   gputypes.FeatureDepth32FloatStencil8,
	wgpu.FeatureNameTimestampQuery:                         gputypes.FeatureTimestampQuery,
	wgpu.FeatureNameTextureCompressionBC:                   gputypes.FeatureTextureCompressionBC,
	wgpu.FeatureNameTextureCompressionETC2:                 gputypes.FeatureTextureCompressionETC2,
	wgpu.FeatureNameTextureCompressionASTC:                 gputypes.FeatureTextureCompressionASTC,
	wgpu.FeatureNameIndirectFirstInstance:                  gputypes.FeatureIndirectFirstInstance,
	wgpu.FeatureNameShaderF16:                              gputypes.FeatureShaderF16,
	wgpu.FeatureNameRG11B10UfloatRenderable:                gputypes.FeatureRG11B10UfloatRenderable,
	wgpu.FeatureNameBGRA8UnormStorage:                      gputypes.FeatureBGRA8UnormStorage,
	wgpu.FeatureNameFloat32Filterable:                      gputypes.FeatureFloat32Filterable,
	wgpu.NativeFeaturePipelineStatisticsQuery:              gputypes.FeaturePipelineStatisticsQuery,
	wgpu.NativeFeaturePushConstants:                        gputypes.FeaturePushConstants,
	wgpu.NativeFeatureTextureAdapterSpecificFormatFeatures: gputypes.FeatureTextureAdapterSpecificFormatFeatures,
	wgpu.NativeFeatureMultiDrawIndirectCount:               gputypes.FeatureMultiDrawIndirectCount,
	wgpu.NativeFeatureShaderF64:                            gputypes.FeatureShaderFloat64,
	wgpu.NativeFeatureVertexAttribute64bit:                 gputypes.FeatureVertexAttribute64bit,
	wgpu.NativeFeatureSubgroup:                             gputypes.FeatureSubgroupOperations,
	wgpu.NativeFeatureSubgroupBarrier:                      gputypes.FeatureSubgroupBarrier,
}

// convertFeatures converts a feature list to a gputypes set.
func convertFeatures(fs []wgpu.FeatureName) gputypes.Features {
	var set gputypes.Features
	inside := false
	for _, f := range fs {
		if f == wgpu.NativeFeatureTimestampQueryInsideEncoders {
			inside = true
		}
		if g, ok := featureMap[f]; ok {
			set.Insert(g)
		}
	}
	if !inside {
		set.Remove(gputypes.FeatureTimestampQuery)
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
