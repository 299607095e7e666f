//go:build cgo && !nogpu && !gowebgpu && !gogpu

package wg

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include <stdlib.h>
#include <string.h>
#include "wgpu.h"

// attn_err is what an error scope popped by attn reports: the error's
// type (0, NoError, when there was none) and its message.
typedef struct {
	uint32_t type;
	char msg[512];
} attn_err;

static void attn_copy(char *dst, size_t cap, WGPUStringView s) {
	size_t n = s.length == WGPU_STRLEN ? (s.data ? strlen(s.data) : 0) : s.length;
	if (n > cap - 1) {
		n = cap - 1;
	}
	if (s.data != NULL) {
		memcpy(dst, s.data, n);
	}
	dst[n] = 0;
}

static void attn_err_cb(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message, void *u1, void *u2) {
	attn_err *e = u1;
	if (status != WGPUPopErrorScopeStatus_Success || type == WGPUErrorType_NoError) {
		return;
	}
	e->type = type;
	attn_copy(e->msg, sizeof e->msg, message);
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

// attn_submit submits cmd in an error scope of its own: wgpu-native
// reports a submission's validation error (a destroyed buffer, say) to
// the device, and without a scope or an uncaptured-error callback it
// aborts the process. The binding's Queue.Submit opens no scope.
// attn_checks is wg.RuntimeChecks c (0 all, 1 bounds, 2 none) as
// wgpu.h's flags, which are static consts cgo cannot reference.
static WGPUShaderRuntimeChecks attn_checks(int c) {
	switch (c) {
	case 0:
		return WGPUShaderRuntimeChecks_BoundsChecks | WGPUShaderRuntimeChecks_ForceLoopBounding;
	case 1:
		return WGPUShaderRuntimeChecks_BoundsChecks;
	}
	return WGPUShaderRuntimeChecks_None;
}

// attn_trusted_module compiles WGSL code through wgpu-native's trusted
// entry point, keeping only the runtime checks in checks, in an error
// scope of its own (a WGSL error is a validation error).
static WGPUShaderModule attn_trusted_module(WGPUDevice dev, const char *label, const char *code, WGPUShaderRuntimeChecks checks, attn_err *e) {
	WGPUShaderSourceWGSL src;
	memset(&src, 0, sizeof src);
	src.chain.sType = WGPUSType_ShaderSourceWGSL;
	src.code.data = code;
	src.code.length = WGPU_STRLEN;
	WGPUShaderModuleDescriptor desc;
	memset(&desc, 0, sizeof desc);
	desc.nextInChain = &src.chain;
	desc.label.data = label;
	desc.label.length = WGPU_STRLEN;
	wgpuDevicePushErrorScope(dev, WGPUErrorFilter_Validation);
	WGPUShaderModule m = wgpuDeviceCreateShaderModuleTrusted(dev, &desc, checks);
	attn_pop(dev, e);
	return m;
}

static void attn_submit(WGPUDevice dev, WGPUQueue q, WGPUCommandBuffer cmd, attn_err *e) {
	wgpuDevicePushErrorScope(dev, WGPUErrorFilter_Validation);
	wgpuQueueSubmit(q, 1, &cmd);
	attn_pop(dev, e);
}

// attn_info copies an adapter's info out, its strings into C memory the
// caller frees, and frees wgpu-native's (the binding's GetInfo keeps
// them, and has no subgroup sizes).
typedef struct {
	char *vendor, *architecture, *device, *description;
	uint32_t backend, type, vendor_id, device_id, subgroup_min, subgroup_max;
} attn_info;

static char *attn_strdup(WGPUStringView s) {
	size_t n = s.length == WGPU_STRLEN ? (s.data ? strlen(s.data) : 0) : s.length;
	char *p = malloc(n + 1);
	if (p == NULL) {
		return NULL;
	}
	if (n > 0) {
		memcpy(p, s.data, n);
	}
	p[n] = 0;
	return p;
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
	out->subgroup_min = info.subgroupMinSize;
	out->subgroup_max = info.subgroupMaxSize;
	wgpuAdapterInfoFreeMembers(info);
}

// attn_refusal is a device request's outcome: its status and
// wgpu-native's message.
typedef struct {
	uint32_t status;
	WGPUDevice device;
	char msg[1024];
} attn_refusal;

static void attn_request_cb(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void *u1, void *u2) {
	attn_refusal *r = u1;
	r->status = status;
	r->device = device;
	attn_copy(r->msg, sizeof r->msg, message);
}

// attn_request_words asks adapter a for a device of the n features fs and
// the limits l, as the binding's RequestDevice does, and reports
// wgpu-native's words in r: the binding's request drops them ("failed to
// request device"). A device granted is released at once.
static void attn_request_words(WGPUAdapter a, const WGPUFeatureName *fs, size_t n, const WGPULimits *l, attn_refusal *r) {
	WGPUDeviceDescriptor desc;
	memset(&desc, 0, sizeof desc);
	desc.requiredFeatureCount = n;
	desc.requiredFeatures = fs;
	desc.requiredLimits = l;
	WGPURequestDeviceCallbackInfo info;
	memset(&info, 0, sizeof info);
	info.mode = WGPUCallbackMode_AllowSpontaneous;
	info.callback = attn_request_cb;
	info.userdata1 = r;
	wgpuAdapterRequestDevice(a, &desc, info);
	if (r->device != NULL) {
		wgpuDeviceRelease(r->device);
		r->device = NULL;
	}
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
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

// MaxQueries is the most queries one query set holds (wgpu-core's
// QUERY_SET_MAX_QUERIES, 4096 since 0.19; the binding's
// QuerySetMaxQueries, 8192, is wgpu-core 0.17's).
const MaxQueries = 4096

// BindingModule is the binding's module path.
const BindingModule = "github.com/oliverbestmann/webgpu"

// bindingVersion is the binding's release in go.mod, for binaries built
// without module information (tests); a test keeps it in step with go.mod.
const bindingVersion = "v1.36.0"

// nativeMajor is the wgpu-native release bindingVersion links (29.0.1.1).
const nativeMajor = 29

// bindingName names the binding in Versions.
const bindingName = "oliverbestmann/webgpu"

// linked names the wgpu-native release the binding links, for Versions.
func linked() string { return linkedName + " " + nativeVersion(uint32(wgpu.GetVersion())) }

// linkedName begins what linked reports: the native library linked.
const linkedName = "wgpu-native"

// SetLogLevel sets wgpu-native's log level for the process.
func SetLogLevel(l LogLevel) {
	wgpu.SetLogLevel([...]wgpu.LogLevel{
		LogOff: wgpu.LogLevelOff, LogError: wgpu.LogLevelError, LogWarn: wgpu.LogLevelWarn,
		LogInfo: wgpu.LogLevelInfo, LogDebug: wgpu.LogLevelDebug, LogTrace: wgpu.LogLevelTrace,
	}[l])
}

func adapterRef(a *wgpu.Adapter) C.WGPUAdapter { return C.WGPUAdapter(handleOf(a)) }
func deviceRef(d *wgpu.Device) C.WGPUDevice    { return C.WGPUDevice(handleOf(d)) }
func bufferRef(b *wgpu.Buffer) C.WGPUBuffer    { return C.WGPUBuffer(handleOf(b)) }

// bufferDevice is the C handle of the device b was made on.
func bufferDevice(b *wgpu.Buffer) C.WGPUDevice {
	return C.WGPUDevice((*childMirror)(unsafe.Pointer(b)).device)
}

// Instance is a wgpu instance on the Vulkan backend.
type Instance struct{ raw *wgpu.Instance }

// instanceVulkan is wgpu.h's WGPUInstanceBackend_Vulkan (1 << 0), which
// the binding does not name.
const instanceVulkan wgpu.InstanceBackend = 1

// NewInstance creates an instance on the Vulkan backend only: with the
// default backends wgpu may hand out a GL adapter without saying so. It
// succeeds on a host without any Vulkan driver too (the instance then has
// no adapters); an instance wgpu-native refuses (the binding panics), or
// a binding whose layout changed, gives one with no adapters.
func NewInstance() *Instance {
	if checkLayout() != nil {
		return &Instance{}
	}
	return &Instance{createInstance()}
}

func createInstance() (inst *wgpu.Instance) {
	defer func() {
		if recover() != nil {
			inst = nil
		}
	}()
	return wgpu.CreateInstance(&wgpu.InstanceDescriptor{Backends: instanceVulkan})
}

func (i *Instance) live() bool { return i.raw.IsValid() }

func (i *Instance) Release() {
	if i.raw != nil {
		i.raw.Release()
	}
}

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

// info is the adapter's webgpu.h info, read through the shim for the
// subgroup sizes, which the binding's GetInfo leaves out.
func (a *Adapter) info() (gputypes.AdapterInfo, [2]uint32) {
	if checkLayout() != nil {
		return gputypes.AdapterInfo{}, [2]uint32{}
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
	return describeAdapter(device, vendor, desc, uint32(ci.vendor_id), uint32(ci.device_id),
			deviceTypes[wgpu.AdapterType(ci._type)], backends[wgpu.BackendType(ci.backend)]),
		[2]uint32{uint32(ci.subgroup_min), uint32(ci.subgroup_max)}
}

// Info is the adapter's properties in gputypes terms. wgpu-native fills
// vendor with wgpu's AdapterInfo.driver ("llvmpipe"), device with its
// name and description with its driver_info ("Mesa 22.3.6 (LLVM
// 15.0.6)"): they become Driver, Name and DriverInfo, as with
// wgpu-native 0.17's properties.
func (a *Adapter) Info() gputypes.AdapterInfo {
	info, _ := a.info()
	return info
}

// deviceTypes and backends are the binding's adapter and backend types
// in gputypes terms; the others (D3D11, Null, undefined) are missing, and
// so the zero values, DeviceTypeOther and BackendEmpty.
var (
	deviceTypes = map[wgpu.AdapterType]gputypes.DeviceType{
		wgpu.AdapterTypeDiscreteGPU:   gputypes.DeviceTypeDiscreteGPU,
		wgpu.AdapterTypeIntegratedGPU: gputypes.DeviceTypeIntegratedGPU,
		wgpu.AdapterTypeCPU:           gputypes.DeviceTypeCPU,
	}
	backends = map[wgpu.BackendType]gputypes.Backend{
		wgpu.BackendTypeVulkan: gputypes.BackendVulkan, wgpu.BackendTypeMetal: gputypes.BackendMetal,
		wgpu.BackendTypeD3D12: gputypes.BackendDX12, wgpu.BackendTypeWebGPU: gputypes.BackendBrowserWebGPU,
		wgpu.BackendTypeOpenGL: gputypes.BackendGL, wgpu.BackendTypeOpenGLES: gputypes.BackendGL,
	}
)

// Limits is the adapter's limits.
func (a *Adapter) Limits() gputypes.Limits { return convertLimits(a.raw.GetLimits()) }

// Features is the adapter's features that gputypes names.
func (a *Adapter) Features() gputypes.Features { return convertFeatures(featuresOf(a.raw.HasFeature)) }

// SubgroupSize is the adapter's subgroup size range (webgpu.h's
// WGPUAdapterInfo has it since wgpu-native 29); 0, 0 where it is not
// reported.
func (a *Adapter) SubgroupSize() (lo, hi uint32) {
	_, sg := a.info()
	return sg[0], sg[1]
}

// SubgroupSizeUnreported says why SubgroupSize is 0, 0.
const SubgroupSizeUnreported = "not reported by the adapter (wgpu-native's adapter info has 0)"

// CompilesF16 says whether the binding compiles WGSL's f16 type: its naga compiles WGSL f16 on a device with ShaderF16.
const CompilesF16 = true

// ConcurrentPipelines says whether CreatePipeline may run on several
// goroutines at once: wgpu-native 29's error scopes, which catch each
// call's errors, are a thread's own (wgpu's since 28), and a cgo call
// keeps its thread.
const ConcurrentPipelines = true

// TimestampsInside reports whether the adapter offers timestamps written
// inside command encoders and inside compute passes (wgpu-native's
// TimestampQueryInsideEncoders and TimestampQueryInsidePasses).
func (a *Adapter) TimestampsInside() (encoders, passes bool) {
	return timestampsInside(featuresOf(a.raw.HasFeature))
}

// cLimits is n as the binding's RequestDevice writes it into webgpu.h's
// struct (attn_request_words asks again with it).
func cLimits(n wgpu.Limits) C.WGPULimits {
	var l C.WGPULimits
	l.maxTextureDimension1D = C.uint32_t(n.MaxTextureDimension1D)
	l.maxTextureDimension2D = C.uint32_t(n.MaxTextureDimension2D)
	l.maxTextureDimension3D = C.uint32_t(n.MaxTextureDimension3D)
	l.maxTextureArrayLayers = C.uint32_t(n.MaxTextureArrayLayers)
	l.maxBindGroups = C.uint32_t(n.MaxBindGroups)
	l.maxBindingsPerBindGroup = C.uint32_t(n.MaxBindingsPerBindGroup)
	l.maxDynamicUniformBuffersPerPipelineLayout = C.uint32_t(n.MaxDynamicUniformBuffersPerPipelineLayout)
	l.maxDynamicStorageBuffersPerPipelineLayout = C.uint32_t(n.MaxDynamicStorageBuffersPerPipelineLayout)
	l.maxSampledTexturesPerShaderStage = C.uint32_t(n.MaxSampledTexturesPerShaderStage)
	l.maxSamplersPerShaderStage = C.uint32_t(n.MaxSamplersPerShaderStage)
	l.maxStorageBuffersPerShaderStage = C.uint32_t(n.MaxStorageBuffersPerShaderStage)
	l.maxStorageTexturesPerShaderStage = C.uint32_t(n.MaxStorageTexturesPerShaderStage)
	l.maxUniformBuffersPerShaderStage = C.uint32_t(n.MaxUniformBuffersPerShaderStage)
	l.maxUniformBufferBindingSize = C.uint64_t(n.MaxUniformBufferBindingSize)
	l.maxStorageBufferBindingSize = C.uint64_t(n.MaxStorageBufferBindingSize)
	l.minUniformBufferOffsetAlignment = C.uint32_t(n.MinUniformBufferOffsetAlignment)
	l.minStorageBufferOffsetAlignment = C.uint32_t(n.MinStorageBufferOffsetAlignment)
	l.maxVertexBuffers = C.uint32_t(n.MaxVertexBuffers)
	l.maxBufferSize = C.uint64_t(n.MaxBufferSize)
	l.maxVertexAttributes = C.uint32_t(n.MaxVertexAttributes)
	l.maxVertexBufferArrayStride = C.uint32_t(n.MaxVertexBufferArrayStride)
	l.maxInterStageShaderVariables = C.uint32_t(n.MaxInterStageShaderVariables)
	l.maxColorAttachments = C.uint32_t(n.MaxColorAttachments)
	l.maxColorAttachmentBytesPerSample = C.uint32_t(n.MaxColorAttachmentBytesPerSample)
	l.maxComputeWorkgroupStorageSize = C.uint32_t(n.MaxComputeWorkgroupStorageSize)
	l.maxComputeInvocationsPerWorkgroup = C.uint32_t(n.MaxComputeInvocationsPerWorkgroup)
	l.maxComputeWorkgroupSizeX = C.uint32_t(n.MaxComputeWorkgroupSizeX)
	l.maxComputeWorkgroupSizeY = C.uint32_t(n.MaxComputeWorkgroupSizeY)
	l.maxComputeWorkgroupSizeZ = C.uint32_t(n.MaxComputeWorkgroupSizeZ)
	l.maxComputeWorkgroupsPerDimension = C.uint32_t(n.MaxComputeWorkgroupsPerDimension)
	l.maxImmediateSize = C.uint32_t(n.MaxImmediateSize)
	return l
}

// OffersCoopMatrix reports whether the adapter offers wgpu-native's
// experimental cooperative-matrix feature (tensor cores; 8×8 f32 tiles
// on Vulkan in wgpu 29).
func (a *Adapter) OffersCoopMatrix() bool {
	return a.raw.HasFeature(wgpu.NativeFeatureCooperativeMatrix)
}

// ProbeCoopMatrix asks the adapter for a device with cooperative
// matrices alone, where it offers them, and releases it: whether a
// device gets them, or wgpu-native's words for refusing.
func (a *Adapter) ProbeCoopMatrix() CoopMatrix {
	c := CoopMatrix{Offered: a.OffersCoopMatrix()}
	if !c.Offered || checkLayout() != nil {
		return c
	}
	c.Requested = true
	dev, err := a.requestDevice(&wgpu.DeviceDescriptor{
		Label:            "attn cooperative-matrix probe",
		RequiredFeatures: []wgpu.FeatureName{wgpu.NativeFeatureCooperativeMatrix},
		RequiredLimits:   ptr(nativeLimits(DefaultLimits())),
	})
	if err != nil {
		c.Refused = err.Error()
		return c
	}
	c.Granted = dev.HasFeature(wgpu.NativeFeatureCooperativeMatrix)
	dev.Release()
	return c
}

// RequestDevice asks the adapter for a device with the features fs
// (each of which the adapter must offer) and the limits l. TimestampQuery
// brings timestamps inside encoders with it, where attn writes them, and
// inside passes where the adapter offers those (ComputePassStamped).
// Where the adapter offers cooperative matrices the request asks for
// them too, as asking costs nothing until a kernel uses them, and asks
// again without them when that is refused (Device.CoopMatrix says what
// happened). An error carries wgpu-native's words.
func (a *Adapter) RequestDevice(label string, fs []gputypes.Feature, l gputypes.Limits) (*Device, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	names := featureNames(featureMap, fs)
	if slices.Contains(fs, gputypes.FeatureTimestampQuery) {
		names = append(names, wgpu.NativeFeatureTimestampQueryInsideEncoders)
		if _, passes := a.TimestampsInside(); passes {
			names = append(names, wgpu.NativeFeatureTimestampQueryInsidePasses)
		}
	}
	desc := wgpu.DeviceDescriptor{Label: label, RequiredFeatures: names, RequiredLimits: ptr(nativeLimits(l))}
	var coop CoopMatrix
	if a.OffersCoopMatrix() {
		coop.Offered, coop.Requested = true, true
		with := desc
		with.RequiredFeatures = append(slices.Clip(names), wgpu.NativeFeatureCooperativeMatrix)
		dev, err := a.requestDevice(&with)
		if err == nil {
			coop.Granted = dev.HasFeature(wgpu.NativeFeatureCooperativeMatrix)
			return &Device{raw: dev, queue: dev.GetQueue(), coop: coop, checks: defaultChecks}, nil
		}
		coop.Refused = err.Error()
	}
	dev, err := a.requestDevice(&desc)
	if err != nil {
		return nil, err
	}
	return &Device{raw: dev, queue: dev.GetQueue(), coop: coop, checks: defaultChecks}, nil
}

// requestDevice is the binding's RequestDevice, whose error on a refusal
// says only "failed to request device": then the shim asks wgpu-native
// again, as the binding did, for its words.
func (a *Adapter) requestDevice(desc *wgpu.DeviceDescriptor) (*wgpu.Device, error) {
	dev, err := a.raw.RequestDevice(desc)
	if err == nil && dev != nil {
		return dev, nil
	}
	fs := make([]C.WGPUFeatureName, max(len(desc.RequiredFeatures), 1))
	for i, f := range desc.RequiredFeatures {
		fs[i] = C.WGPUFeatureName(f)
	}
	l := cLimits(*desc.RequiredLimits)
	r := (*C.attn_refusal)(C.calloc(1, C.size_t(unsafe.Sizeof(C.attn_refusal{}))))
	defer C.free(unsafe.Pointer(r))
	C.attn_request_words(adapterRef(a.raw), &fs[0], C.size_t(len(desc.RequiredFeatures)), &l, r)
	runtime.KeepAlive(a.raw)
	if r.status == C.WGPURequestDeviceStatus_Success {
		return nil, fmt.Errorf("the binding's device request failed (%v), and the same request through wgpu.h succeeds", err)
	}
	return nil, errors.New(errorText("device request", C.GoString(&r.msg[0])))
}

func ptr[T any](v T) *T { return &v }

// Device is a device and attn's handle to its queue. Release releases
// both, or only the queue's handle on a caller's device (WrapDevice).
type Device struct {
	raw    *wgpu.Device
	queue  *wgpu.Queue
	shared bool
	probe  *wgpu.BindGroupLayout // Alive's, made on first use
	coop   CoopMatrix
	checks RuntimeChecks
}

// CoopMatrix is what became of cooperative matrices on d: asked for,
// granted or refused (RequestDevice); on a caller's device, whether it
// has them.
func (d *Device) CoopMatrix() CoopMatrix { return d.coop }

// Alive returns an error when b, a buffer of the caller's, was destroyed:
// wgpu-native finds that only when a submission uses it, so a copy that
// may use such a buffer asks first. Making a bind group of it is the
// check (wgpu-core validates a bound buffer's life there, and reports it
// in an error scope); size bytes from offset are bound, read-only, so b
// needs the Storage usage.
func (d *Device) Alive(b *Buffer, offset, size uint64) error {
	if d.probe == nil {
		bgl, err := d.createGroupLayout("attn probe", []BindingType{BindReadOnly})
		if err != nil {
			return err
		}
		d.probe = bgl
	}
	g, err := d.createGroup(d.probe, []Entry{{b, offset, size}})
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
	has := d.HasFeature(wgpu.NativeFeatureCooperativeMatrix)
	return &Device{raw: d, queue: d.GetQueue(), shared: true, coop: CoopMatrix{Offered: has, Granted: has}, checks: defaultChecks}, nil
}

// Release releases attn's handle to the device's queue (and with it the
// binding's reference to the device the handle holds), and the device
// unless it is the caller's.
func (d *Device) Release() {
	if d.probe != nil {
		d.probe.Release()
	}
	d.queue.Release()
	if !d.shared {
		d.raw.Release()
	}
}

// Limits is the device's limits.
func (d *Device) Limits() gputypes.Limits { return convertLimits(d.raw.GetLimits()) }

// Features is the device's features that gputypes names.
func (d *Device) Features() gputypes.Features { return convertFeatures(featuresOf(d.raw.HasFeature)) }

// TimestampsInside reports whether the device has timestamps inside
// command encoders and inside compute passes (Adapter.TimestampsInside).
func (d *Device) TimestampsInside() (encoders, passes bool) {
	return timestampsInside(featuresOf(d.raw.HasFeature))
}

// Reference returns a new handle to buf that holds a reference of its
// own to the buffer and to its device, as a handle that CreateBuffer
// returns does: its Release leaves buf's handle working, and buf's
// Release leaves the buffer alive for this one. The binding has no
// AddRef, so the handle is made here, field by field of the mirror.
func Reference(buf *NativeBuffer) (*Buffer, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	m := (*childMirror)(unsafe.Pointer(buf))
	if m.ref == nil {
		return nil, errors.New("gpu: the buffer was released")
	}
	C.wgpuBufferAddRef(C.WGPUBuffer(m.ref))
	if m.device != nil {
		C.wgpuDeviceAddRef(C.WGPUDevice(m.device))
	}
	h := new(wgpu.Buffer)
	*(*childMirror)(unsafe.Pointer(h)) = childMirror{ref: m.ref, device: m.device}
	runtime.KeepAlive(buf)
	return &Buffer{h}, nil
}

// WriteTimestamp writes query i of qs between passes: a call the binding
// does not wrap (webgpu.h's wgpuCommandEncoderWriteTimestamp, which
// wgpu-native allows with the timestamp-query-inside-encoders feature),
// in an error scope of its own.
func (e *Encoder) WriteTimestamp(qs *QuerySet, i uint32) error {
	if err := checkLayout(); err != nil {
		return err
	}
	ce := (*C.attn_err)(C.calloc(1, C.size_t(unsafe.Sizeof(C.attn_err{}))))
	defer C.free(unsafe.Pointer(ce))
	C.attn_write_timestamp(deviceRef(e.dev.raw), C.WGPUCommandEncoder(handleOf(e.raw)),
		C.WGPUQuerySet(handleOf(qs.raw)), C.uint32_t(i), ce)
	runtime.KeepAlive(e)
	runtime.KeepAlive(qs)
	if ce._type != 0 {
		return fmt.Errorf("gpu: WriteTimestamp: %s", errorText("validation", C.GoString(&ce.msg[0])))
	}
	return nil
}

// ComputePassStamped records ds, in order, in one compute pass, with
// query first+i of qs written inside the pass before dispatch i and
// query first+len(ds) after the last: len(ds)+1 queries, of which
// consecutive ones bracket each dispatch. The device needs timestamps
// inside passes (Device.TimestampsInside); the binding's pass-level
// TimestampWrites bracket only a whole pass.
func (e *Encoder) ComputePassStamped(ds []Dispatch, qs *QuerySet, first uint32) error {
	if err := checkLayout(); err != nil {
		return err
	}
	q := C.WGPUQuerySet(handleOf(qs.raw))
	err := e.record(ds, func(pass *wgpu.ComputePassEncoder, i uint32) {
		C.attn_pass_write_timestamp(C.WGPUComputePassEncoder(handleOf(pass)), q, C.uint32_t(first+i))
	})
	runtime.KeepAlive(qs)
	return err
}

// Submit submits cmd to the device's queue. A validation error of the
// submission (a buffer destroyed since cmd was recorded) comes back here:
// wgpu-native would abort the process on it outside an error scope, and
// the binding's Queue.Submit opens none.
func (d *Device) Submit(cmd *CommandBuffer) error {
	if err := checkLayout(); err != nil {
		return err
	}
	ce := (*C.attn_err)(C.calloc(1, C.size_t(unsafe.Sizeof(C.attn_err{}))))
	defer C.free(unsafe.Pointer(ce))
	C.attn_submit(deviceRef(d.raw), C.WGPUQueue(handleOf(d.queue)), C.WGPUCommandBuffer(handleOf(cmd.raw)), ce)
	runtime.KeepAlive(d)
	runtime.KeepAlive(cmd)
	if ce._type != 0 {
		return fmt.Errorf("gpu: submit: %s", errorText("validation", C.GoString(&ce.msg[0])))
	}
	return nil
}

// Native is the binding's own device.
func (d *Device) Native() *NativeDevice { return d.raw }

// defaultChecks is the default build's: the bounds checks kept, the
// loop counters dropped (RuntimeChecks says why).
const defaultChecks = ChecksBounds

// supportsChecks: wgpu-native 29 compiles with any of them.
func supportsChecks(RuntimeChecks) error { return nil }

// trustedModule compiles wgsl through wgpuDeviceCreateShaderModuleTrusted
// with d's runtime checks, which the binding does not wrap, and hands
// the module to the binding as its own (a ShaderModule's struct is a
// handleMirror), released as the binding's are.
func (d *Device) trustedModule(label, wgsl string) (*wgpu.ShaderModule, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	cl, cs := C.CString(label), C.CString(wgsl)
	defer C.free(unsafe.Pointer(cl))
	defer C.free(unsafe.Pointer(cs))
	ce := (*C.attn_err)(C.calloc(1, C.size_t(unsafe.Sizeof(C.attn_err{}))))
	defer C.free(unsafe.Pointer(ce))
	ref := C.attn_trusted_module(deviceRef(d.raw), cl, cs, C.attn_checks(C.int(d.checks)), ce)
	runtime.KeepAlive(d)
	if ce._type != 0 || ref == nil {
		if ref != nil {
			C.wgpuShaderModuleRelease(ref)
		}
		return nil, fmt.Errorf("gpu: shader module %q: %s", label, errorText("validation", C.GoString(&ce.msg[0])))
	}
	m := new(wgpu.ShaderModule)
	*(*handleMirror)(unsafe.Pointer(m)) = handleMirror{ref: unsafe.Pointer(ref)}
	return m, nil
}
