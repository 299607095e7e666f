//go:build cgo && !nogpu && !gowebgpu && !gogpu

package wg

// The binding's calls that cmd.go builds on (binding.go) and the
// exported ones that are one binding call each, made with the binding's
// Try* calls, which return the validation error that its plain calls
// panic with. The calls through the shim are in oliverbestmann.go.

import "github.com/oliverbestmann/webgpu/wgpu"

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

func (d *Device) createBuffer(label string, size uint64, usage Usage) (*wgpu.Buffer, error) {
	return d.raw.TryCreateBuffer(&wgpu.BufferDescriptor{Label: label, Usage: wgpu.BufferUsage(usage), Size: size})
}

func (b *Buffer) Unmap() error { return b.raw.TryUnmap() }

// WriteBuffer writes data into b from byte offset, in queue order.
func (d *Device) WriteBuffer(b *Buffer, offset uint64, data []byte) error {
	return d.queue.TryWriteBuffer(b.raw, offset, data)
}

// Owns reports whether buf was created on d: the binding keeps a
// buffer's device in an unexported field, and webgpu.h has no getter.
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

func (d *Device) createModule(label, wgsl string) (*wgpu.ShaderModule, error) {
	if d.checks == ChecksAll {
		return d.raw.TryCreateShaderModule(&wgpu.ShaderModuleDescriptor{Label: label, WGSLSource: &wgpu.ShaderSourceWGSL{Code: wgsl}})
	}
	return d.trustedModule(label, wgsl)
}

func (d *Device) createGroupLayout(label string, binds []BindingType) (*wgpu.BindGroupLayout, error) {
	es := bySlot(binds, func(slot uint32, bt BindingType) wgpu.BindGroupLayoutEntry {
		return wgpu.BindGroupLayoutEntry{Binding: slot, Visibility: wgpu.ShaderStageCompute, Buffer: wgpu.BufferBindingLayout{Type: bindingTypes[bt]}}
	})
	return d.raw.TryCreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{Label: label, Entries: es})
}

func (d *Device) createPipelineLayout(label string, bgl *wgpu.BindGroupLayout) (*wgpu.PipelineLayout, error) {
	return d.raw.TryCreatePipelineLayout(&wgpu.PipelineLayoutDescriptor{Label: label, BindGroupLayouts: []*wgpu.BindGroupLayout{bgl}})
}

func (d *Device) createPipeline(label string, layout *wgpu.PipelineLayout, module *wgpu.ShaderModule, entry string) (*wgpu.ComputePipeline, error) {
	return d.raw.TryCreateComputePipeline(&wgpu.ComputePipelineDescriptor{Label: label, Layout: layout,
		Compute: wgpu.ProgrammableStageDescriptor{Module: module, EntryPoint: entry}})
}

func (d *Device) createGroup(bgl *wgpu.BindGroupLayout, entries []Entry) (*wgpu.BindGroup, error) {
	es := bySlot(entries, func(slot uint32, e Entry) wgpu.BindGroupEntry {
		return wgpu.BindGroupEntry{Binding: slot, Buffer: e.Buffer.raw, Offset: e.Offset, Size: e.Size}
	})
	return d.raw.TryCreateBindGroup(&wgpu.BindGroupDescriptor{Layout: bgl, Entries: es})
}

func (d *Device) createTimestamps(label string, count uint32) (*wgpu.QuerySet, error) {
	return d.raw.TryCreateQuerySet(&wgpu.QuerySetDescriptor{Label: label, Type: wgpu.QueryTypeTimestamp, Count: count})
}

// ResolveQuerySet writes count queries of qs from first into dst at
// dstOff, 8 bytes each.
func (e *Encoder) ResolveQuerySet(qs *QuerySet, first, count uint32, dst *Buffer, dstOff uint64) error {
	return e.raw.TryResolveQuerySet(qs.raw, first, count, dst.raw, dstOff)
}

func (d *Device) createEncoder() (*wgpu.CommandEncoder, error) {
	return d.raw.TryCreateCommandEncoder(nil)
}

func (e *Encoder) CopyBufferToBuffer(src *Buffer, srcOff uint64, dst *Buffer, dstOff, size uint64) error {
	return e.raw.TryCopyBufferToBuffer(src.raw, srcOff, dst.raw, dstOff, size)
}

func (e *Encoder) beginPass() *wgpu.ComputePassEncoder { return e.raw.BeginComputePass(nil) }

func (e *Encoder) endPass(pass *wgpu.ComputePassEncoder) error { return pass.TryEnd() }

func (e *Encoder) finish() (*wgpu.CommandBuffer, error) { return e.raw.TryFinish(nil) }

// poll runs the callbacks that are due without blocking.
func (d *Device) poll() { d.raw.Poll(false, nil) }

// bindingTypes is each BindingType as the binding names it.
var bindingTypes = [...]wgpu.BufferBindingType{
	BindUniform:  wgpu.BufferBindingTypeUniform,
	BindReadOnly: wgpu.BufferBindingTypeReadOnlyStorage,
	BindStorage:  wgpu.BufferBindingTypeStorage,
}
