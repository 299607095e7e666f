//go:build cgo && !nogpu

package gpu

import (
	"context"
	"fmt"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/shaders"
	"github.com/rajveermalviya/go-webgpu/wgpu"
)

// binding is the window of a buffer bound at one binding slot, in bytes.
type binding struct {
	buf       *wgpu.Buffer
	off, size int
}

// dispatch is one recorded kernel launch: its pipeline, its Params
// encoded (shaders.Kernel.Encode), its bound windows (slot 0, the uniform,
// is filled at submission) and its grid.
type dispatch struct {
	p      *pipeline
	params []byte
	err    error // from setParams: a Params value of another kernel's type
	binds  []binding
	grid   [3]int
	cost   float64 // floating-point operations, for the submission budget
}

func newDispatch(p *pipeline) *dispatch {
	return &dispatch{p: p, binds: make([]binding, len(p.kernel.Bindings))}
}

// setParams encodes v, a value of the pipeline's kernel's Params type
// (shaders.ScoresParams …), as the dispatch's uniform. A value of another
// type is a bug in this package; run reports it before submitting
// anything.
func (d *dispatch) setParams(v any) { d.params, d.err = d.p.kernel.Encode(v) }

// bind binds size bytes of buf from byte off at the binding name.
func (d *dispatch) bind(name string, buf *wgpu.Buffer, off, size int) {
	for i, bd := range d.p.kernel.Bindings {
		if bd.Name == name {
			d.binds[i] = binding{buf, off, size}
			return
		}
	}
	panic("gpu: kernel " + d.p.kernel.Name + " has no binding " + name)
}

// operand is one tensor argument of a dispatch: the buffer (nil binds a
// dummy in its place, with zero strides), how the kernel addresses it and
// where that addressing goes in the op's Params value: at for a tensor,
// mask for a mask (which has the extra key stride).
type operand struct {
	name string // the binding
	x    *buffer
	t    tensor
	at   *shaders.Tensor
	mask *shaders.Mask
	out  bool
	vec4 bool // bound as vectors of four elements: the window starts and ends on a multiple of four elements
}

// elem is how the kernel reads the operand's buffer x: its dtype as the
// shaders' Elem (F32 for an absent operand, which a dummy replaces).
func elem(x *buffer) shaders.Elem {
	if x == nil {
		return shaders.F32
	}
	switch x.dtype {
	case backend.Float16:
		return shaders.F16
	case backend.BFloat16:
		return shaders.BF16
	}
	return shaders.F32
}

// address writes the operand's strides and window start into its Params
// field.
func (o operand) address(t tensor, start int) {
	if o.at != nil {
		*o.at = shaders.Tensor{B: uint32(t.sb), H: uint32(t.sh), R: uint32(t.sr), Base: uint32(start)}
	}
	if o.mask != nil {
		*o.mask = shaders.Mask{B: uint32(t.sb), H: uint32(t.sh), R: uint32(t.sr), C: uint32(t.sc), Base: uint32(start)}
	}
}

// bindOperands binds the window each operand needs for unit u and writes
// its strides and window start into the Params field the operand points
// to (all modulo 2³², as the kernels compute). Windows are cut in
// elements and bound in bytes, each element its dtype's size: a window
// starts on the device's offset alignment (for a half operand an even
// element, so the kernel's element index i is in word i/2 of the
// window) and its size is rounded up to whole words. It reports false
// when a window is larger than the device's biggest storage binding.
func (b *Backend) bindOperands(d *dispatch, u unit, H, G int, ops []operand) bool {
	alignBytes := max(int(b.lim.MinStorageBufferOffsetAlignment), 4)
	maxBind := int(b.lim.MaxStorageBufferBindingSize)
	for _, o := range ops {
		if o.x == nil {
			dummy := b.dummyR
			if o.out {
				dummy = b.dummyW
			}
			if d != nil {
				d.bind(o.name, dummy, 0, 256)
				o.address(tensor{}, 0)
			}
			continue
		}
		size := o.x.dtype.Size()
		capacity := int(o.x.bytes) / size // elements the buffer's bytes hold, ≥ Len
		lo, hi := o.t.span(u, H, G)
		a := alignBytes / size
		if o.vec4 {
			a = max(a, 4)
		}
		w := windowFor(lo, hi, a, capacity)
		if least := 16 / size; w.n < least {
			w.n = min(least, capacity-w.start)
		}
		if o.vec4 {
			w.n = (w.n + 3) &^ 3 // within the buffer, whose length is a multiple of 16 bytes
		}
		bytes := (w.n*size + 3) &^ 3
		if bytes > maxBind {
			return false
		}
		if d != nil {
			d.bind(o.name, o.x.buf, o.x.off+w.start*size, bytes)
			o.address(o.t, w.start)
		}
	}
	return true
}

// maxBindRows is the most rows of t (a K or V operand stored in x's
// dtype) whose window fits one storage binding, less the alignment of
// its start and of its end when bound as vec4s: bindings count the
// stored bytes, so a half operand's windows hold twice the rows.
func (b *Backend) maxBindRows(t tensor, x *buffer) int {
	size := 4
	if x != nil {
		size = x.dtype.Size()
	}
	maxBind := int(b.lim.MaxStorageBufferBindingSize)/size - int(b.lim.MinStorageBufferOffsetAlignment)/size - 4
	if t.sr <= 0 {
		return unbounded
	}
	return (maxBind - t.ncols) / t.sr
}

// gridOK reports whether every grid dimension is within the device's
// limit.
func (b *Backend) gridOK(g [3]int) bool {
	m := int(b.lim.MaxComputeWorkgroupsPerDimension)
	return g[0] <= m && g[1] <= m && g[2] <= m
}

// run submits ds in order, several per submission up to the work budget,
// waiting for each submission before the next and checking ctx between
// them. Under a Step (ctx carries one of b's, step.go) it records them
// instead, to be submitted with the step's other work and waited for
// once. The caller holds b.mu.
func (b *Backend) run(ctx context.Context, op string, ds []*dispatch) error {
	for _, d := range ds {
		if d.err != nil {
			return fmt.Errorf("gpu: %s: %w", op, d.err)
		}
	}
	st := b.stepOf(ctx)
	for i := 0; i < len(ds); {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("gpu: %s: %w", op, err)
		}
		j, cost := i+1, ds[i].cost
		for j < len(ds) && j-i < maxPerSubmit && cost+ds[j].cost <= b.budget {
			cost += ds[j].cost
			j++
		}
		var err error
		if st != nil {
			err = b.record(ds[i:j], cost)
		} else {
			err = b.submit(ds[i:j])
		}
		if err != nil {
			return fmt.Errorf("gpu: %s: %w", op, err)
		}
		i = j
	}
	return nil
}

// maxPerSubmit bounds the bind groups alive at once.
const maxPerSubmit = 1024

// submit encodes ds and submits them after any recorded work, then waits
// for the queue.
func (b *Backend) submit(ds []*dispatch) error {
	cmd, done, err := b.encode(ds)
	if err != nil {
		return err
	}
	defer done()
	b.flush()
	b.queue.Submit(cmd)
	return b.waitIdle()
}

// record encodes ds, which carry cost operations, into a command buffer
// that waits in b.pending for the next flush; it flushes when the
// recorded work reaches a submission's budget or bind groups. The caller
// holds b.mu.
func (b *Backend) record(ds []*dispatch, cost float64) error {
	cmd, done, err := b.encode(ds)
	if err != nil {
		return err
	}
	p := &b.pending
	p.cmds = append(p.cmds, cmd)
	p.after = append(p.after, done)
	p.groups += len(ds)
	p.cost += cost
	if p.cost >= b.budget || p.groups >= maxPerSubmit {
		b.flush()
	}
	return nil
}

// encode records ds into a command buffer: one compute pass, the Params
// of every dispatch in one uniform buffer made for it. done releases what
// the command buffer uses; call it once the command buffer is submitted
// (or never will be). The caller holds b.mu.
func (b *Backend) encode(ds []*dispatch) (cmd *wgpu.CommandBuffer, done func(), err error) {
	var rel []func()
	release := func() {
		for i := len(rel) - 1; i >= 0; i-- {
			rel[i]()
		}
	}
	defer func() {
		if err != nil {
			release() // the returns have set done to nil
		}
	}()
	align := max(int(b.lim.MinUniformBufferOffsetAlignment), 16)
	slot := 0
	for _, d := range ds {
		slot = max(slot, paramBytes(d))
	}
	slot = (slot + align - 1) / align * align
	data := make([]byte, slot*len(ds))
	for k, d := range ds {
		copy(data[k*slot:], d.params)
	}
	ubuf, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{
		Label: "attn params",
		Usage: wgpu.BufferUsage_Uniform | wgpu.BufferUsage_CopyDst,
		Size:  uint64(len(data)),
	})
	if err != nil {
		return nil, nil, err
	}
	rel = append(rel, func() {
		ubuf.Destroy()
		ubuf.Release()
	})
	if err := b.queue.WriteBuffer(ubuf, 0, data); err != nil {
		return nil, nil, err
	}
	enc, err := b.dev.CreateCommandEncoder(nil)
	if err != nil {
		return nil, nil, err
	}
	rel = append(rel, enc.Release)
	if err := b.stampBefore(enc); err != nil { // timing.go
		return nil, nil, err
	}
	pass := enc.BeginComputePass(nil)
	for k, d := range ds {
		entries := make([]wgpu.BindGroupEntry, len(d.binds))
		for i, bd := range d.binds {
			if i == 0 {
				entries[0] = wgpu.BindGroupEntry{Binding: 0, Buffer: ubuf, Offset: uint64(k * slot), Size: uint64(paramBytes(d))}
				continue
			}
			entries[i] = wgpu.BindGroupEntry{Binding: uint32(i), Buffer: bd.buf, Offset: uint64(bd.off), Size: uint64(bd.size)}
		}
		g, err := b.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: d.p.bgl, Entries: entries})
		if err != nil {
			pass.End()
			pass.Release()
			return nil, nil, err
		}
		rel = append(rel, g.Release)
		pass.SetPipeline(d.p.pipe)
		pass.SetBindGroup(0, g, nil)
		pass.DispatchWorkgroups(uint32(d.grid[0]), uint32(d.grid[1]), uint32(d.grid[2]))
	}
	if err := pass.End(); err != nil {
		pass.Release()
		return nil, nil, err
	}
	pass.Release()
	cmd, err = b.finish(enc) // enc.Finish, with the closing timestamp (timing.go)
	if err != nil {
		return nil, nil, err
	}
	rel = append(rel, cmd.Release)
	return cmd, release, nil
}

// paramBytes is the size of d's Params struct rounded up to 16 bytes, as
// a uniform binding's size must be.
func paramBytes(d *dispatch) int { return (len(d.params) + 15) &^ 15 }

// tooLarge is the error for a problem no split brings within the device's
// limits.
func tooLarge(op string, p backend.Problem, why string) error {
	return backend.Errorf(backend.ErrTooLarge, "gpu: %s: B=%d H=%d Nq=%d Nk=%d D=%d Dv=%d: %s", op, p.B, p.H, p.Nq, p.Nk, p.D, p.Dv, why)
}
