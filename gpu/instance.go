//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"fmt"
	"math"
	"os"
	"strings"
	"sync"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/wg"
	"github.com/gogpu/gputypes"
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
	// envLimits, set to default, makes New ask for a device of WebGPU's
	// default limits, as a Go GPU program's own device usually has,
	// rather than the adapter's (adapter, or unset).
	envLimits = "ATTN_GPU_LIMITS"
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
//     prints that line when $XDG_RUNTIME_DIR is unset (with Mesa 22.3's
//     lavapipe, two lines per enumeration, none with
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
			wg.SetLogLevel(wg.ParseLogLevel(level))
		} else {
			wg.SetLogLevel(wg.LogOff)
		}
		_, nds := os.LookupEnv("NODEVICE_SELECT")
		_, mds := os.LookupEnv("MESA_VK_DEVICE_SELECT")
		if !nds && !mds {
			os.Setenv("NODEVICE_SELECT", "1")
		}
	})
}

// newInstance creates a wgpu instance on the Vulkan backend only
// (wg.NewInstance says why).
//
// Each Backend has an instance of its own and releases it on Close:
// wgpu-native 0.17 frees a released device and adapter only with their
// instance (wgpuInstanceProcessEvents, which would collect them, is
// unimplemented there), so a shared instance would keep every closed
// device, about 6 MiB each on lavapipe. Releasing the last instance,
// though, lets the Vulkan loader unload the driver, and NVIDIA's (580.159,
// on an H100) does not load again after some 30 such cycles:
// create_instance fails with ERROR_INCOMPATIBLE_DRIVER and no adapter is
// found. So the first call also creates one more instance, anchor, that
// is never released and holds nothing but the loaded driver; with it,
// 200 open/close cycles there all succeed with the RSS flat.
//
// A binding this build's shim was not written for (wg.Check) is an error
// wrapping backend.ErrUnavailable that names its version and what
// disagreed, and no instance.
func newInstance() (*wg.Instance, error) {
	if err := wg.Check(); err != nil {
		return nil, backend.Errorf(backend.ErrUnavailable, "%v", err)
	}
	setupLogging()
	anchor.Do(func() { anchor.inst = wg.NewInstance() })
	return wg.NewInstance(), nil
}

// anchor keeps the Vulkan drivers loaded for the life of the process
// (newInstance).
var anchor struct {
	sync.Once
	inst *wg.Instance
}

// chooseAdapter picks the adapter the backend runs on: the first one whose
// name contains $ATTN_ADAPTER (ignoring case) when that is set, else the
// one wgpu ranks best for high performance (a discrete GPU before an
// integrated one before lavapipe). The caller releases it. When there is
// none, or none matches, the error wraps backend.ErrUnavailable and says
// why.
func chooseAdapter(inst *wg.Instance) (*wg.Adapter, error) {
	if want := strings.TrimSpace(os.Getenv(envAdapter)); want != "" {
		var chosen *wg.Adapter
		var names []string
		for _, a := range inst.Adapters() {
			name := a.Info().Name
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
	a, err := inst.HighPerformanceAdapter()
	if err != nil {
		return nil, backend.Errorf(backend.ErrUnavailable, "%s", noAdapterHint)
	}
	return a, nil
}

// Adapters describes every Vulkan adapter on this host, in the order the
// Vulkan loader lists them, whether or not the gpu backend would choose
// it. When there is none it returns no Info and an error wrapping
// backend.ErrUnavailable that says why.
func Adapters() ([]backend.Info, error) {
	inst, err := newInstance()
	if err != nil {
		return nil, err
	}
	defer inst.Release()
	var infos []backend.Info
	for _, a := range inst.Adapters() {
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
func describeAdapter(a *wg.Adapter) backend.Info {
	return backend.Info{
		Kind:     backend.KindGPU,
		Adapter:  a.Info(),
		Limits:   a.Limits(),
		Features: a.Features(),
		Detail:   wg.Versions(),
	}
}

// requiredFeatures is the optional features New asks a device of
// adapter a for, each where a offers it: TimestampQuery, for device time
// (timing.go), ShaderF16 where the binding's compiler takes WGSL's f16
// (wg.CompilesF16) and subgroup operations, for the kernels that use them
// (internal/plan/features.go). Asking costs nothing until a kernel uses one.
func requiredFeatures(a *wg.Adapter) []gputypes.Feature {
	var fs []gputypes.Feature
	for _, f := range []gputypes.Feature{gputypes.FeatureTimestampQuery, gputypes.FeatureShaderF16, gputypes.FeatureSubgroupOperations} {
		if f == gputypes.FeatureShaderF16 && !wg.CompilesF16 {
			continue
		}
		if a.HasFeature(f) {
			fs = append(fs, f)
		}
	}
	return fs
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

// askLimits is the limits New asks a device of adapter a for:
// requiredLimits, or WebGPU's defaults under ATTN_GPU_LIMITS=default;
// an error naming any other value.
func askLimits(a *wg.Adapter) (gputypes.Limits, bool, error) {
	switch v := strings.TrimSpace(os.Getenv(envLimits)); v {
	case "", "adapter":
		return requiredLimits(a), false, nil
	case "default":
		return wg.DefaultLimits(), true, nil
	default:
		return gputypes.Limits{}, false, fmt.Errorf("%s=%q: want adapter or default", envLimits, v)
	}
}

// requiredLimits is what the backend asks a device of adapter a for:
// wgpu's defaults (WebGPU's minimums: 256 invocations, 16 KiB of
// workgroup memory, 8 storage buffers, 128 MiB bindings) except for the
// limits that bound compute, which take the adapter's own values (all it
// supports). Render limits stay at the defaults, so a device request does
// not fail on the render limits wgpu-native 0.17 reports as 0.
func requiredLimits(a *wg.Adapter) gputypes.Limits {
	have := a.Limits()
	l := wg.DefaultLimits()
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
