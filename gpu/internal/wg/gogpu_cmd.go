//go:build gogpu && !nogpu

package wg

// The calls cmd.go builds on (binding.go) over gogpu/wgpu, whose calls
// return their validation error, and the wrappers of its encoder and
// pass, which lack the Release and DispatchWorkgroups that cmd.go calls.

import (
	"errors"
	"fmt"

	"github.com/gogpu/gputypes"
	"github.com/gogpu/wgpu"
)

// The binding's handle types that only wg holds.
type (
	nativeModule         = wgpu.ShaderModule
	nativeGroupLayout    = wgpu.BindGroupLayout
	nativePipelineLayout = wgpu.PipelineLayout
	nativePipeline       = wgpu.ComputePipeline
	nativeGroup          = wgpu.BindGroup
	nativeQuerySet       = noQuerySet
	nativeEncoder        = encoder
	nativePass           = pass
	nativeCommands       = wgpu.CommandBuffer
)

// errNoTimestamps is the answer of every timestamp call.
var errNoTimestamps = errors.New("gpu: gogpu/wgpu has no timestamp queries")

// noQuerySet stands for a query set, which the binding cannot make.
type noQuerySet struct{}

func (noQuerySet) Release() {}

// encoder is the binding's command encoder with a Release, which
// discards what was recorded unless Finish took it (the binding's
// DiscardEncoding does nothing after Finish).
type encoder struct{ raw *wgpu.CommandEncoder }

func (e *encoder) Release() { e.raw.DiscardEncoding() }

// pass is the binding's compute pass, or the error that beginning it
// gave, which End reports; its calls do nothing on a pass that did not
// begin.
type pass struct {
	raw *wgpu.ComputePassEncoder
	err error
}

func (p *pass) SetPipeline(pipeline *wgpu.ComputePipeline) {
	if p.raw != nil {
		p.raw.SetPipeline(pipeline)
	}
}

func (p *pass) SetBindGroup(index uint32, group *wgpu.BindGroup, dynamicOffsets []uint32) {
	if p.raw != nil {
		p.raw.SetBindGroup(index, group, dynamicOffsets)
	}
}

func (p *pass) DispatchWorkgroups(x, y, z uint32) {
	if p.raw != nil {
		p.raw.Dispatch(x, y, z)
	}
}

// Release does nothing: the binding's pass ends with End and holds
// nothing after it.
func (p *pass) Release() {}

func (d *Device) createBuffer(label string, size uint64, usage Usage) (*wgpu.Buffer, error) {
	return d.raw.CreateBuffer(&wgpu.BufferDescriptor{Label: label, Size: size, Usage: gputypes.BufferUsage(usage)})
}

// WriteBuffer writes data into b from byte offset, in queue order: the
// binding records the write and makes it before the next submission's
// work.
func (d *Device) WriteBuffer(b *Buffer, offset uint64, data []byte) error {
	return d.queue.WriteBuffer(b.raw, offset, data)
}

func (d *Device) createModule(label, wgsl string) (*wgpu.ShaderModule, error) {
	return d.raw.CreateShaderModule(&wgpu.ShaderModuleDescriptor{Label: label, WGSL: wgsl})
}

// bindingTypes is each BindingType as gputypes names it.
var bindingTypes = [...]gputypes.BufferBindingType{
	BindUniform:  gputypes.BufferBindingTypeUniform,
	BindReadOnly: gputypes.BufferBindingTypeReadOnlyStorage,
	BindStorage:  gputypes.BufferBindingTypeStorage,
}

func (d *Device) createGroupLayout(label string, binds []BindingType) (*wgpu.BindGroupLayout, error) {
	es := bySlot(binds, func(slot uint32, bt BindingType) wgpu.BindGroupLayoutEntry {
		return wgpu.BindGroupLayoutEntry{Binding: slot, Visibility: gputypes.ShaderStageCompute,
			Buffer: &gputypes.BufferBindingLayout{Type: bindingTypes[bt]}}
	})
	return d.raw.CreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{Label: label, Entries: es})
}

func (d *Device) createPipelineLayout(label string, bgl *wgpu.BindGroupLayout) (*wgpu.PipelineLayout, error) {
	return d.raw.CreatePipelineLayout(&wgpu.PipelineLayoutDescriptor{Label: label, BindGroupLayouts: []*wgpu.BindGroupLayout{bgl}})
}

func (d *Device) createPipeline(label string, layout *wgpu.PipelineLayout, module *wgpu.ShaderModule, entry string) (*wgpu.ComputePipeline, error) {
	return d.raw.CreateComputePipeline(&wgpu.ComputePipelineDescriptor{Label: label, Layout: layout, Module: module, EntryPoint: entry})
}

func (d *Device) createGroup(bgl *wgpu.BindGroupLayout, entries []Entry) (*wgpu.BindGroup, error) {
	es := bySlot(entries, func(slot uint32, e Entry) wgpu.BindGroupEntry {
		return wgpu.BindGroupEntry{Binding: slot, Buffer: e.Buffer.raw, Offset: e.Offset, Size: e.Size}
	})
	return d.raw.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: bgl, Entries: es})
}

func (d *Device) createTimestamps(label string, count uint32) (*noQuerySet, error) {
	return nil, errNoTimestamps
}

// WriteTimestamp fails: the binding has no timestamp queries.
func (e *Encoder) WriteTimestamp(qs *QuerySet, i uint32) error { return errNoTimestamps }

// ComputePassStamped fails: the binding has no timestamp queries.
func (e *Encoder) ComputePassStamped(ds []Dispatch, qs *QuerySet, first uint32) error {
	return errNoTimestamps
}

// ResolveQuerySet fails: the binding has no timestamp queries.
func (e *Encoder) ResolveQuerySet(qs *QuerySet, first, count uint32, dst *Buffer, dstOff uint64) error {
	return errNoTimestamps
}

func (d *Device) createEncoder() (*encoder, error) {
	e, err := d.raw.CreateCommandEncoder(nil)
	if err != nil {
		return nil, err
	}
	return &encoder{e}, nil
}

// CopyBufferToBuffer records a copy of size bytes. The binding records
// it unchecked, so WebGPU's rules are checked here, where wgpu-native
// checks them: the usages, 4-byte alignment, the ranges within the
// buffers, and two buffers.
func (e *Encoder) CopyBufferToBuffer(src *Buffer, srcOff uint64, dst *Buffer, dstOff, size uint64) error {
	if err := checkCopy(src.raw.Usage(), src.raw.Size(), srcOff, dst.raw.Usage(), dst.raw.Size(), dstOff, size); err != nil {
		return err
	}
	if Same(src, dst) {
		return errors.New("gpu: copy: the source and the destination are one buffer")
	}
	e.raw.raw.CopyBufferToBuffer(src.raw, srcOff, dst.raw, dstOff, size)
	return nil
}

// checkCopy is WebGPU's validation of copyBufferToBuffer but for the
// buffers' identity and state.
func checkCopy(srcUsage gputypes.BufferUsage, srcSize, srcOff uint64, dstUsage gputypes.BufferUsage, dstSize, dstOff, size uint64) error {
	switch {
	case srcUsage&gputypes.BufferUsageCopySrc == 0:
		return errors.New("gpu: copy: the source lacks BufferUsage CopySrc")
	case dstUsage&gputypes.BufferUsageCopyDst == 0:
		return errors.New("gpu: copy: the destination lacks BufferUsage CopyDst")
	case srcOff%4 != 0 || dstOff%4 != 0 || size%4 != 0:
		return fmt.Errorf("gpu: copy of %d bytes from %d to %d: not multiples of 4", size, srcOff, dstOff)
	case srcOff > srcSize || size > srcSize-srcOff:
		return fmt.Errorf("gpu: copy of %d bytes from %d overruns the %d-byte source", size, srcOff, srcSize)
	case dstOff > dstSize || size > dstSize-dstOff:
		return fmt.Errorf("gpu: copy of %d bytes to %d overruns the %d-byte destination", size, dstOff, dstSize)
	}
	return nil
}

func (e *Encoder) beginPass() *pass {
	p, err := e.raw.raw.BeginComputePass(nil)
	return &pass{raw: p, err: err}
}

func (e *Encoder) endPass(p *pass) error {
	if p.err != nil {
		return p.err
	}
	return p.raw.End()
}

func (e *Encoder) finish() (*wgpu.CommandBuffer, error) { return e.raw.raw.Finish() }

// Submit submits cmd to the device's queue; the binding checks it first
// (a destroyed buffer, a second submission) and says why it refuses.
func (d *Device) Submit(cmd *CommandBuffer) error {
	_, err := d.queue.Submit(cmd.raw)
	return err
}
