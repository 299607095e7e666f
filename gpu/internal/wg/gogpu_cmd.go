//go:build gogpu && !nogpu

package wg

// The calls cmd.go builds on (binding.go) over gogpu/wgpu, whose calls
// return their validation error, and the wrappers of its encoder and
// pass, which lack the Release and DispatchWorkgroups that cmd.go calls.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/attn-go/attn/backend"
	"github.com/gogpu/gputypes"
	"github.com/gogpu/naga"
	"github.com/gogpu/naga/ir"
	"github.com/gogpu/naga/spirv"
	nagawgsl "github.com/gogpu/naga/wgsl"
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

// createBuffer makes a buffer and zeroes it, as WebGPU has every new
// buffer read: the binding hands out its memory as it finds it (a
// buffer made after another was freed reads the old one's values). A
// buffer that may be copied into gets copies of the device's zero
// buffer, submitted ahead of any work that uses it: copies, unlike the
// binding's ClearBuffer, hold the buffer until they have run (a buffer
// released at once would otherwise be freed under the fill) and order
// the work after them. Another buffer is mapped at creation (into
// host-visible memory) and zeroed there.
func (d *Device) createBuffer(label string, size uint64, usage Usage) (*wgpu.Buffer, error) {
	atCreation := usage&UsageCopyDst == 0
	b, err := d.raw.CreateBuffer(&wgpu.BufferDescriptor{Label: label, Size: size, Usage: gputypes.BufferUsage(usage), MappedAtCreation: atCreation})
	if err != nil || size == 0 {
		return b, err
	}
	if atCreation {
		err = zeroMapped(b, size)
	} else {
		err = d.zero(b, size&^3) // copies move whole words; no binding reaches the rest
	}
	if err != nil {
		b.Release()
		return nil, fmt.Errorf("zeroing a new buffer: %w", err)
	}
	return b, nil
}

// zeroMapped zeroes b, mapped at creation, and unmaps it.
func zeroMapped(b *wgpu.Buffer, size uint64) error {
	r, err := b.MappedRange(0, size)
	if err != nil {
		return err
	}
	clear(r.Bytes())
	r.Release()
	return b.Unmap()
}

// zeroBytes is the size of a device's zero buffer, the source of zero
// copies.
const zeroBytes = 1 << 20

// zero submits copies of the device's zero buffer over size bytes of b.
func (d *Device) zero(b *wgpu.Buffer, size uint64) error {
	d.zeroOnce.Do(func() {
		z, err := d.raw.CreateBuffer(&wgpu.BufferDescriptor{Label: "attn zeros", Size: zeroBytes,
			Usage: gputypes.BufferUsageCopySrc | gputypes.BufferUsageCopyDst})
		if err == nil {
			// The queue writes it ahead of the first submission's work.
			if err = d.queue.WriteBuffer(z, 0, make([]byte, zeroBytes)); err != nil {
				z.Release()
			}
		}
		d.zeros, d.zeroErr = z, err
	})
	if d.zeroErr != nil {
		return d.zeroErr
	}
	e, err := d.raw.CreateCommandEncoder(nil)
	if err != nil {
		return err
	}
	for off := uint64(0); off < size; off += zeroBytes {
		e.CopyBufferToBuffer(d.zeros, 0, b, off, min(zeroBytes, size-off))
	}
	cmd, err := e.Finish()
	if err != nil {
		return err
	}
	defer cmd.Release()
	return d.submit(cmd)
}

// WriteBuffer writes data into b from byte offset, in queue order: the
// binding records the write and makes it before the next submission's
// work. It takes no reference to b for the write, so a buffer released
// before that submission has run would be freed under it (the process
// dies in the driver): wg holds a reference of its own (hold) until
// then.
func (d *Device) WriteBuffer(b *Buffer, offset uint64, data []byte) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if err := d.queue.WriteBuffer(b.raw, offset, data); err != nil {
		return err
	}
	r, err := Reference(b.raw)
	if err != nil {
		return err
	}
	d.held = append(d.held, held{buf: r.raw})
	return nil
}

// held is a reference WriteBuffer took, dropped once the submission that
// carried the write (sub, 0 until there is one) has run.
type held struct {
	buf *wgpu.Buffer
	sub uint64
}

// submit submits cmd, gives the references held for the writes it
// carries its index, and drops those whose submission has run.
func (d *Device) submit(cmd *wgpu.CommandBuffer) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	sub, err := d.queue.Submit(cmd)
	if err != nil {
		return err
	}
	done := d.queue.Poll()
	kept := d.held[:0]
	for _, h := range d.held {
		if h.sub == 0 {
			h.sub = sub
		}
		if h.sub <= done {
			h.buf.Release()
			continue
		}
		kept = append(kept, h)
	}
	clear(d.held[len(kept):])
	d.held = kept
	return nil
}

// dropHeld drops every reference WriteBuffer holds, once the device is
// idle.
func (d *Device) dropHeld() {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if len(d.held) == 0 {
		return
	}
	_ = d.raw.WaitIdle() // an error is a lost device, whose buffers go with it
	for _, h := range d.held {
		h.buf.Release()
	}
	d.held = nil
}

// createModule compiles wgsl to SPIR-V with gogpu/naga, as the binding
// would, and hands the binding the SPIR-V. Compiling here, not in the
// binding, sets the SPIR-V writer's options (compileSPIRV) and compiles
// each kernel once: given WGSL, the binding's Vulkan layer compiles it
// and its core parses it again for a layout check that attn's explicit
// layouts do not need (the default build's wgpu-native checks them). A
// kernel of attn's that gogpu/naga refuses is one that the default
// build's compiler (Rust naga) takes, so the refusal is the compiler's
// gap: it wraps backend.ErrUnsupported, and the op that needs the kernel
// is refused, saying so, in this build.
//
// At LogTrace it says so on standard error, "[wg] shader module" and the
// label, after the driver has the module: gogpu/wgpu logs no label, and
// internal/cmd/spirvmix pairs the modules it captures with these lines,
// in order, as it pairs wgpu-native's with that binding's trace log.
func (d *Device) createModule(label, wgsl string) (*wgpu.ShaderModule, error) {
	words, err := compileSPIRV(wgsl)
	if err != nil {
		return nil, fmt.Errorf("%w: this build's compiler (%s) refuses the kernel: %w", backend.ErrUnsupported, linked(), err)
	}
	m, err := d.raw.CreateShaderModule(&wgpu.ShaderModuleDescriptor{Label: label, SPIRV: words})
	if err != nil {
		return nil, err
	}
	if traceModules.Load() {
		fmt.Fprintf(os.Stderr, "[wg] shader module %q\n", label)
	}
	return m, nil
}

// compileSPIRV compiles src with gogpu/naga (nagaSPIRV), less the
// workgroup zeroing (dropZeroing).
func compileSPIRV(src string) ([]uint32, error) {
	w, err := nagaSPIRV(src)
	if err != nil {
		return nil, err
	}
	w, _, err = dropZeroing(w)
	return w, err
}

// nagaSPIRV compiles src with gogpu/naga: parsed, validated without
// optional capabilities (the binding's Vulkan device enables neither f16
// nor subgroups), and written as SPIR-V 1.3 without loop-bounding
// counters, which would keep a driver from unrolling attn's loops
// (docs/gpu.md), and without index checks, as the binding's own call
// writes it: attn's kernels bound their indices themselves.
func nagaSPIRV(src string) ([]uint32, error) {
	ast, err := naga.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("parse error: %w", err)
	}
	mod, err := nagawgsl.LowerWithSource(ast, src)
	if err != nil {
		return nil, fmt.Errorf("lowering error: %w", err)
	}
	errs, err := ir.ValidateWithCapabilities(mod, 0)
	if err != nil {
		return nil, fmt.Errorf("validation error: %w", err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("validation failed: %w", &errs[0])
	}
	b, err := naga.GenerateSPIRV(mod, spirv.Options{Version: spirv.Version1_3, ForceLoopBounding: false})
	if err != nil {
		return nil, fmt.Errorf("SPIR-V generation error: %w", err)
	}
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w, nil
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

// createGroup binds entries; a destroyed buffer among them is refused
// here, in words, where the binding's Vulkan layer would report a nil
// resource.
func (d *Device) createGroup(bgl *wgpu.BindGroupLayout, entries []Entry) (*wgpu.BindGroup, error) {
	for i, e := range entries {
		if destroyed(e.Buffer.raw) {
			return nil, fmt.Errorf("gpu: bind group slot %d: the buffer is destroyed", i)
		}
	}
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
func (d *Device) Submit(cmd *CommandBuffer) error { return d.submit(cmd.raw) }
