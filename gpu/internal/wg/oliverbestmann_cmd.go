//go:build cgo && !nogpu && !gowebgpu

package wg

// Buffers, pipelines, bind groups, query sets and encoders on the
// binding's own calls (the shim's are in oliverbestmann.go).

import (
	"fmt"

	"github.com/oliverbestmann/webgpu/wgpu"
)

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

// Release drops this handle (and its reference to the device); the
// buffer lives on while another handle or the device's work holds it.
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

func (e *Encoder) Release() { e.raw.Release() }

func (e *Encoder) CopyBufferToBuffer(src *Buffer, srcOff uint64, dst *Buffer, dstOff, size uint64) error {
	return e.raw.TryCopyBufferToBuffer(src.raw, srcOff, dst.raw, dstOff, size)
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
	pass.Release()
	return err
}

func (e *Encoder) Finish() (*CommandBuffer, error) {
	c, err := e.raw.TryFinish(nil)
	if err != nil {
		return nil, err
	}
	return &CommandBuffer{c}, nil
}

// poll runs the callbacks that are due without blocking.
func (d *Device) poll() { d.raw.Poll(false, nil) }
