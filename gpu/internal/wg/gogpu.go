//go:build gogpu && !nogpu

package wg

// The gogpu/wgpu binding (-tags gogpu): WebGPU in Go, with Vulkan called
// through goffi, so that a build needs no cgo; wg compiles attn's WGSL
// with gogpu/naga itself and hands the binding SPIR-V (createModule).
// Its own types are gputypes' (limits, features, adapter info), so the
// conversions are copies; what it lacks beside wgpu-native is
// said where wg answers for it: no adapter list, no timestamp queries,
// no cooperative matrices, no subgroup sizes, and no Destroy on a
// buffer (gogpu_layout.go).

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/gogpu/gputypes"
	"github.com/gogpu/wgpu"
	_ "github.com/gogpu/wgpu/hal/vulkan" // the Vulkan backend, the only one attn opens
)

// The binding's types that the gpu package's public API takes and gives.
type (
	NativeAdapter = wgpu.Adapter
	NativeDevice  = wgpu.Device
	NativeBuffer  = wgpu.Buffer
)

// MaxQueries bounds a query set (WebGPU's 4096); gogpu/wgpu makes none
// (CreateTimestamps), so no set is ever that large.
const MaxQueries = 4096

// BindingModule is the binding's module path.
const BindingModule = "github.com/gogpu/wgpu"

// bindingVersion is the binding's release in go.mod, for binaries built
// without module information (tests); a test keeps it in step with go.mod.
const bindingVersion = "v0.31.5"

// bindingName names the binding in Versions.
const bindingName = "gogpu/wgpu"

// linkedName begins what linked reports: the binding links no native
// library; its shader compiler is gogpu/naga.
const linkedName = "naga"

// nagaModule and nagaVersion are the shader compiler's module and the
// release go.mod requires, for binaries built without module information.
const (
	nagaModule  = "github.com/gogpu/naga"
	nagaVersion = "v0.18.0"
)

// linked names the shader compiler the binding compiles WGSL with, for
// Versions: in place of a native library, as the build has none.
func linked() string {
	v := nagaVersion
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == nagaModule && m.Version != "" {
				v = m.Version
				if m.Replace != nil && m.Replace.Version != "" {
					v = m.Replace.Version
				}
			}
		}
	}
	return linkedName + " " + v + " (pure Go, no cgo)"
}

// SetLogLevel sets the binding's log level for the process: its logger
// is log/slog's, to standard error; LogOff discards it, and LogTrace is
// slog's debug.
func SetLogLevel(l LogLevel) {
	traceModules.Store(l == LogTrace)
	if l == LogOff {
		wgpu.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
		return
	}
	level := [...]slog.Level{LogError: slog.LevelError, LogWarn: slog.LevelWarn,
		LogInfo: slog.LevelInfo, LogDebug: slog.LevelDebug, LogTrace: slog.LevelDebug}[l]
	wgpu.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
}

// traceModules says whether the log level is LogTrace, at which
// createModule names each shader module it creates.
var traceModules atomic.Bool

// bindingCheck is Check's answer for this binding: nil, as every call but
// Reference, Owns, Same, Alive and DestroyOnly goes through the binding's
// exported API, and those check the mirror they read (gogpu_layout.go)
// themselves.
func bindingCheck() error { return nil }

// Instance is a gogpu/wgpu instance on the Vulkan backend.
type Instance struct{ raw *wgpu.Instance }

// NewInstance creates an instance on the Vulkan backend only, as the
// other bindings do. It succeeds on a host without any Vulkan driver too
// (the instance then has no adapter); one the binding refuses gives an
// instance with no adapter.
func NewInstance() *Instance {
	inst, err := wgpu.CreateInstance(&wgpu.InstanceDescriptor{Backends: gputypes.BackendsVulkan})
	if err != nil {
		return &Instance{}
	}
	return &Instance{inst}
}

func (i *Instance) Release() {
	if i.raw != nil {
		i.raw.Release()
	}
}

// Adapters lists the adapter HighPerformanceAdapter gives: the binding
// has no list of its adapters (only RequestAdapter); nil when there is
// none.
func (i *Instance) Adapters() []*Adapter {
	a, err := i.HighPerformanceAdapter()
	if err != nil {
		return nil
	}
	return []*Adapter{a}
}

// HighPerformanceAdapter is the adapter the binding ranks best for high
// performance.
func (i *Instance) HighPerformanceAdapter() (*Adapter, error) {
	if i.raw == nil {
		return nil, errors.New("no instance")
	}
	a, err := i.raw.RequestAdapter(&wgpu.RequestAdapterOptions{PowerPreference: gputypes.PowerPreferenceHighPerformance})
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, errors.New("no adapter")
	}
	return &Adapter{raw: a}, nil
}

// Info is the adapter's info, with the vendor named after its id
// (describeAdapter): the binding puts the id in hex where the name goes.
func (a *Adapter) Info() gputypes.AdapterInfo { return adapterInfo(a.raw.Info()) }

func adapterInfo(i gputypes.AdapterInfo) gputypes.AdapterInfo {
	return describeAdapter(i.Name, i.Driver, i.DriverInfo, i.VendorID, i.DeviceID, i.DeviceType, i.Backend)
}

// Limits is the adapter's limits.
func (a *Adapter) Limits() gputypes.Limits { return convertLimits(a.raw.Limits()) }

// Features is the adapter's features.
func (a *Adapter) Features() gputypes.Features { return convertFeatures(a.raw.Features()) }

// SubgroupSize is 0, 0: the binding reports no subgroup sizes.
func (a *Adapter) SubgroupSize() (lo, hi uint32) { return 0, 0 }

// SubgroupSizeUnreported says why SubgroupSize is 0, 0.
const SubgroupSizeUnreported = "not reported by gogpu/wgpu"

// CompilesF16 says whether the binding compiles WGSL's f16 type: its
// Vulkan device never enables shaderFloat16, so naga refuses `enable
// f16;` for want of the capability, and its f16 code has never run.
const CompilesF16 = false

// ConcurrentPipelines says whether CreatePipeline may run on several
// goroutines at once: the binding's device is safe for concurrent use,
// and its errors are each call's own return, not an error scope's.
const ConcurrentPipelines = true

// TimestampsInside is false, false: the binding has no timestamp
// queries.
func (a *Adapter) TimestampsInside() (encoders, passes bool) { return false, false }

// OffersCoopMatrix is false: the binding enables no cooperative-matrix
// extension.
func (a *Adapter) OffersCoopMatrix() bool { return false }

// ProbeCoopMatrix reports cooperative matrices not offered.
func (a *Adapter) ProbeCoopMatrix() CoopMatrix { return CoopMatrix{} }

// CoopMatrix is the zero CoopMatrix: none were asked for.
func (d *Device) CoopMatrix() CoopMatrix { return CoopMatrix{} }

// DefaultLimits is WebGPU's default limits, as gputypes has them.
func DefaultLimits() gputypes.Limits { return convertLimits(gputypes.DefaultLimits()) }

// nativeLimits is l as a device request asks for it: WebGPU's defaults,
// overwritten by limitNames' and push constants, as with the other
// bindings, so that a limit gputypes has and attn leaves 0 is not asked
// for as 0.
func nativeLimits(l gputypes.Limits) gputypes.Limits {
	n := gputypes.DefaultLimits()
	copyLimits(&n, &l)
	n.MaxPushConstantSize = l.MaxPushConstantSize
	return n
}

// convertLimits copies limitNames' limits and push constants, as the
// other bindings do (MaxBindGroupsPlusVertexBuffers and
// MaxNonSamplerBindings, which they do not carry, stay 0).
func convertLimits(n gputypes.Limits) gputypes.Limits {
	var l gputypes.Limits
	copyLimits(&l, &n)
	l.MaxPushConstantSize = n.MaxPushConstantSize
	return l
}

// featureMap pairs each feature the binding names (gputypes') with
// itself: the table featureSet and featureNames read.
var featureMap = func() map[gputypes.Feature]gputypes.Feature {
	m := map[gputypes.Feature]gputypes.Feature{}
	for f := gputypes.FeatureDepthClipControl; f <= gputypes.FeatureSubgroupBarrier; f <<= 1 {
		m[f] = f
	}
	return m
}()

// convertFeatures is fs less what attn cannot use through the binding:
// timestamp queries, which it does not expose.
func convertFeatures(fs gputypes.Features) gputypes.Features {
	var set gputypes.Features
	for f := range featureMap {
		if fs.Contains(f) {
			set.Insert(f)
		}
	}
	set.Remove(gputypes.FeatureTimestampQuery)
	return set
}

// RequestDevice asks the adapter for a device with the features fs and
// the limits l. The binding grants what it is asked for without checking
// it against the adapter, so the request is checked here: a feature the
// adapter does not offer, or a limit beyond the adapter's, is refused.
func (a *Adapter) RequestDevice(label string, fs []gputypes.Feature, l gputypes.Limits) (*Device, error) {
	offered := a.Features()
	var want gputypes.Features
	for _, f := range fs {
		if !offered.Contains(f) {
			return nil, fmt.Errorf("device request: the adapter does not offer %v", f)
		}
		want.Insert(f)
	}
	n := nativeLimits(l)
	if err := withinLimits(n, a.raw.Limits()); err != nil {
		return nil, fmt.Errorf("device request: %w", err)
	}
	dev, err := a.raw.RequestDevice(&wgpu.DeviceDescriptor{Label: label, RequiredFeatures: want, RequiredLimits: n})
	if err != nil {
		return nil, err
	}
	return &Device{raw: dev, queue: dev.Queue(), checks: defaultChecks}, nil
}

// withinLimits reports the first of limitNames and push constants where
// req asks for more than have offers: a larger maximum, or a smaller
// alignment (the Min… limits).
func withinLimits(req, have gputypes.Limits) error {
	r, h := reflect.ValueOf(req), reflect.ValueOf(have)
	for _, name := range append(limitNames[:], "MaxPushConstantSize") {
		rv, hv := r.FieldByName(name).Uint(), h.FieldByName(name).Uint()
		if name[:3] == "Min" && rv < hv || name[:3] == "Max" && rv > hv {
			return fmt.Errorf("limit %s %d is beyond the adapter's %d", name, rv, hv)
		}
	}
	return nil
}

// Device is a device and its queue. Release releases the device unless
// it is a caller's (WrapDevice); the queue is the device's own.
type Device struct {
	raw    *wgpu.Device
	queue  *wgpu.Queue
	shared bool
	checks RuntimeChecks
	// zeros is the source of the copies that zero a new buffer
	// (createBuffer), made on first use.
	zeroOnce sync.Once
	zeros    *wgpu.Buffer
	zeroErr  error
	// wmu orders writes and submissions for held, the references
	// WriteBuffer takes until the writes have run.
	wmu  sync.Mutex
	held []held
}

// WrapDevice is a caller's device; its Release leaves the device alone.
func WrapDevice(d *NativeDevice) (*Device, error) {
	if d == nil || d.Queue() == nil {
		return nil, errors.New("gpu: the device is released")
	}
	return &Device{raw: d, queue: d.Queue(), shared: true, checks: defaultChecks}, nil
}

func (d *Device) Release() {
	d.dropHeld()
	if d.zeros != nil {
		d.zeros.Release()
	}
	if !d.shared {
		d.raw.Release()
	}
}

// Native is the binding's own device.
func (d *Device) Native() *NativeDevice { return d.raw }

// Limits is the device's limits.
func (d *Device) Limits() gputypes.Limits { return convertLimits(d.raw.Limits()) }

// Features is the device's features.
func (d *Device) Features() gputypes.Features { return convertFeatures(d.raw.Features()) }

// TimestampsInside is false, false: the binding has no timestamp
// queries.
func (d *Device) TimestampsInside() (encoders, passes bool) { return false, false }

// defaultChecks is the gogpu build's: attn compiles its SPIR-V with
// gogpu/naga itself, with neither loop counters nor index clamps
// (nagaSPIRV).
const defaultChecks = ChecksNone

// supportsChecks: gogpu/naga's SPIR-V writer is called without either
// check, and this build asks for nothing else.
func supportsChecks(c RuntimeChecks) error {
	if c != ChecksNone {
		return fmt.Errorf("runtime checks %v: the gogpu build compiles its kernels without naga's runtime checks (off); the default build keeps them at will", c)
	}
	return nil
}
