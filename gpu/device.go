//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"fmt"
	"strings"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/wg"
	"github.com/gogpu/gputypes"
)

// NewWithDevice opens the backend on a device of the caller's, dev,
// requested from adapter: attn's kernels run on dev's queue, between the
// caller's own work, and buffers pass both ways without copies (Import,
// Export). The adapter is read once, for what New reads of its own: its
// type picks the plan (a CPU-type adapter like lavapipe caps each
// invocation's loops; a GPU does not; ATTN_GPU_PLAN overrides, as for
// New) and its properties fill Info. webgpu.h gives no way from
// a device back to its adapter, hence the argument; it must be the
// adapter dev was requested from.
//
// Close releases only what attn created (its buffers and pipelines, its
// handle to the queue); dev and adapter stay the caller's, to release
// after Close.
//
// The device must have the limits attn's kernels need (DeviceNeeds;
// WebGPU's defaults are enough): otherwise the error wraps
// backend.ErrUnavailable and names each limit missing, what dev has and
// what attn needs. attn needs no optional feature; with TimestampQuery
// it can time its ops on the device (TimeDevice). The larger the
// device's limits the larger the problems that run (New asks for all the
// adapter has): maxStorageBufferBindingSize bounds every binding's
// window, maxComputeWorkgroupStorageSize the fused kernels' tiles
// (FusedSupports), maxBufferSize every buffer.
func NewWithDevice(adapter *NativeAdapter, dev *NativeDevice) (*Backend, error) {
	if adapter == nil || dev == nil {
		return nil, backend.Errorf(backend.ErrUnavailable, "gpu: NewWithDevice needs the device and the adapter it was requested from (adapter %v, device %v)", adapter != nil, dev != nil)
	}
	if err := wg.Check(); err != nil {
		return nil, backend.Errorf(backend.ErrUnavailable, "%v", err)
	}
	d, err := wg.WrapDevice(dev)
	if err != nil {
		return nil, backend.Errorf(backend.ErrUnavailable, "%v", err)
	}
	info := describeAdapter(wg.WrapAdapter(adapter))
	aplan, err := plan.FromEnv(info.Adapter.DeviceType)
	if err != nil {
		d.Release()
		return nil, backend.Errorf(backend.ErrUnavailable, "gpu: %v", err)
	}
	if err := checkLimits(d.Limits()); err != nil {
		d.Release()
		return nil, err
	}
	b := open(d, info, aplan)
	b.shared = true
	b.noTiming = timingSupport(info.Features.Contains(gputypes.FeatureTimestampQuery), b.info.Features.Contains(gputypes.FeatureTimestampQuery), true)
	b.info.Detail += "; the caller's device"
	if err := b.aim(); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.init(); err != nil {
		b.Close()
		return nil, err
	}
	b.applyTuning(true)
	return b, nil
}

// limitValue is l's value of the limit WebGPU names name.
func limitValue(l gputypes.Limits, name string) uint64 {
	switch name {
	case "maxBindGroups":
		return uint64(l.MaxBindGroups)
	case "maxBindingsPerBindGroup":
		return uint64(l.MaxBindingsPerBindGroup)
	case "maxStorageBuffersPerShaderStage":
		return uint64(l.MaxStorageBuffersPerShaderStage)
	case "maxUniformBuffersPerShaderStage":
		return uint64(l.MaxUniformBuffersPerShaderStage)
	case "maxComputeInvocationsPerWorkgroup":
		return uint64(l.MaxComputeInvocationsPerWorkgroup)
	case "maxComputeWorkgroupSizeX":
		return uint64(l.MaxComputeWorkgroupSizeX)
	case "maxComputeWorkgroupSizeY":
		return uint64(l.MaxComputeWorkgroupSizeY)
	case "maxComputeWorkgroupSizeZ":
		return uint64(l.MaxComputeWorkgroupSizeZ)
	case "maxComputeWorkgroupStorageSize":
		return uint64(l.MaxComputeWorkgroupStorageSize)
	case "maxComputeWorkgroupsPerDimension":
		return uint64(l.MaxComputeWorkgroupsPerDimension)
	case "maxStorageBufferBindingSize":
		return l.MaxStorageBufferBindingSize
	case "maxUniformBufferBindingSize":
		return l.MaxUniformBufferBindingSize
	case "maxBufferSize":
		return l.MaxBufferSize
	}
	panic("gpu: limitValue: unknown limit " + name) // DeviceNeeds and this switch are kept together
}

// checkLimits returns nil when l meets every need of DeviceNeeds, and
// otherwise an error wrapping backend.ErrUnavailable that names each one
// it misses.
func checkLimits(l gputypes.Limits) error {
	var missing []string
	for _, n := range DeviceNeeds() {
		if have := limitValue(l, n.Limit); have < n.Min {
			missing = append(missing, fmt.Sprintf("%s %d < %d", n.Limit, have, n.Min))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return backend.Errorf(backend.ErrUnavailable, "gpu: the device lacks limits attn needs (has < needs): %s; request at least WebGPU's default limits (wgpu.DefaultLimits)",
		strings.Join(missing, ", "))
}

// NativeAdapter, NativeDevice and NativeBuffer are the WebGPU binding's
// own types that NewWithDevice, Import and Export take and give: the
// *wgpu.Adapter, *wgpu.Device and *wgpu.Buffer of
// github.com/oliverbestmann/webgpu/wgpu v1.36.0 (wgpu-native 29) by default, of
// github.com/rajveermalviya/go-webgpu/wgpu v0.17.1 with -tags gowebgpu, of
// github.com/gogpu/wgpu v0.31.5 with -tags gogpu.
type (
	NativeAdapter = wg.NativeAdapter
	NativeDevice  = wg.NativeDevice
	NativeBuffer  = wg.NativeBuffer
)
