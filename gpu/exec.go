//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"
	"encoding/binary"
	"unsafe"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
	"github.com/attn-go/attn/gpu/internal/wg"
)

// binding is the window of a buffer bound at one binding slot, in bytes.
type binding struct {
	buf       *wg.Buffer
	off, size int
}

// dispatch is one kernel launch being planned: its pipeline, its Params
// encoded (shaders.Kernel.Encode), its bound windows (slot 0, the
// uniform, and the vars slot when vars is set are placed by record, in
// the submission's arena) and its grid.
type dispatch struct {
	p      *pipeline
	params []byte
	err    error    // from setParams: a Params value of another kernel's type
	vars   []uint32 // vars data to place beside the Params (bindVars)
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
func (d *dispatch) bind(name string, buf *wg.Buffer, off, size int) {
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
	t    plan.Tensor
	at   *shaders.Tensor
	mask *shaders.Mask
	out  bool
	vec4 bool // bound as vectors of four elements: the window starts and ends on a multiple of four elements
	wide int  // a half operand bound as vectors of wide elements (8 or 16: shaders.LoadUnit): its window starts and ends on a multiple of wide; 0 otherwise
}

// wideHalf is the halves a load of a kernel with unit loaders
// (shaders.Kernel.Units) reads of x, a half operand of head dim d: 8 or
// 16, or 0 where it reads it as any other kernel does.
func wideHalf(x *buffer, d int) int {
	if x == nil || !x.dtype.Half() {
		return 0
	}
	if u := shaders.LoadUnit(elem(x), d); u > 1 {
		return 4 * u
	}
	return 0
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
	case backend.Q8:
		return shaders.Q8
	case backend.FP8:
		return shaders.FP8
	case backend.Q4:
		return shaders.Q4
	}
	return shaders.F32
}

// address writes the operand's strides and window start into its Params
// field.
func (o operand) address(t plan.Tensor, start int) {
	if o.at != nil {
		*o.at = shaders.Tensor{B: uint32(t.Sb), H: uint32(t.Sh), R: uint32(t.Sr), Base: uint32(start)}
	}
	if o.mask != nil {
		*o.mask = shaders.Mask{B: uint32(t.Sb), H: uint32(t.Sh), R: uint32(t.Sr), C: uint32(t.Sc), Base: uint32(start)}
	}
}

// bindOperands binds the window each operand needs for unit u and writes
// its strides and window start into the Params field the operand points
// to (all modulo 2³², as the kernels compute). Windows are cut in
// elements and bound in bytes, each element its dtype's size: a window
// starts on the device's offset alignment (for a half operand an even
// element, so the kernel's element index i is in word i/2 of the
// window) and its size is rounded up to whole words, or runs to the
// buffer's end where one binding holds that. It reports false
// when a window is larger than the device's biggest storage binding.
func (b *Backend) bindOperands(d *dispatch, u plan.Unit, H, G int, ops []operand) bool {
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
				o.address(plan.Tensor{}, 0)
			}
			continue
		}
		if o.x.dtype.Quantized() {
			// A quantized K or V: a window from a superblock (q8, q4) or
			// 16 elements (fp8) on the alignment, in whole 16 bytes
			// (plan.QuantWindow), the kernels' element indices counted from
			// its start.
			lo, hi := o.t.Span(u, H, G)
			w := plan.QuantWindow(o.x.dtype, lo, hi, alignBytes, int(o.x.bytes))
			if w.Bytes > maxBind {
				return false
			}
			bytes := w.Bytes
			if whole := int(o.x.bytes) - w.StartByte; whole <= maxBind {
				bytes = whole
			}
			if d != nil {
				d.bind(o.name, o.x.buf, o.x.off+w.StartByte, bytes)
				o.address(o.t, w.Start)
			}
			continue
		}
		size := o.x.dtype.Size()
		capacity := int(o.x.bytes) / size // elements the buffer's bytes hold, ≥ Len
		lo, hi := o.t.Span(u, H, G)
		a := alignBytes / size
		vec := 1
		switch {
		case o.wide > 0:
			vec = o.wide
		case o.vec4:
			vec = 4
		}
		a = max(a, vec)
		w := plan.WindowFor(lo, hi, a, capacity)
		if least := 16 / size; w.N < least {
			w.N = min(least, capacity-w.Start)
		}
		// Whole vectors, within the buffer: its length is a multiple of
		// 16 bytes (four halves or floats, eight halves), and a half
		// operand read sixteen halves a load is whole rows of a head dim
		// that is a multiple of 16 (shaders.LoadUnit; the GPU takes dense
		// layouts only).
		w.N = (w.N + vec - 1) / vec * vec
		bytes := (w.N*size + 3) &^ 3
		if bytes > maxBind {
			return false
		}
		// The window runs on to the buffer's end where a binding holds
		// that, so that a dispatch binds the same as a cache grows and
		// its bind group is found again (groups.go).
		if whole := int(o.x.bytes) - w.Start*size; whole <= maxBind {
			bytes = whole
		}
		if need := vec * size; bytes < need && !o.out {
			// A buffer smaller than one of the kernel's loads (a
			// caller's imported operand with no rows: sixteen halves
			// are 32 bytes) is one the kernel reads none of: the dummy
			// takes its place, as for an absent operand.
			if d != nil {
				d.bind(o.name, b.dummyR, 0, 256)
				o.address(o.t, 0)
			}
			continue
		}
		if d != nil {
			d.bind(o.name, o.x.buf, o.x.off+w.Start*size, bytes)
			o.address(o.t, w.Start)
		}
	}
	return true
}

// maxBindRows is the most rows of t (a K or V operand stored in x's
// dtype) whose window fits one storage binding, less the alignment of
// its start and of its end when bound as vec4s: bindings count the
// stored bytes, so a half operand's windows hold twice the rows.
func (b *Backend) maxBindRows(t plan.Tensor, x *buffer) int {
	if t.Sr <= 0 {
		return plan.Unbounded
	}
	return (b.bindElems(x) - t.Ncols) / t.Sr
}

// bindElems is how many elements of x's dtype (float32 for nil) one
// storage binding holds, less the alignment of a window's start and end.
func (b *Backend) bindElems(x *buffer) int {
	maxBind, align := int(b.lim.MaxStorageBufferBindingSize), int(b.lim.MinStorageBufferOffsetAlignment)
	if x != nil && x.dtype.Quantized() {
		return plan.QuantElems(x.dtype, maxBind-plan.QuantSlack(x.dtype, align))
	}
	size := 4
	if x != nil {
		size = x.dtype.Size()
	}
	return maxBind/size - align/size - 16
}

// gridOK reports whether every grid dimension is within the device's
// limit.
func (b *Backend) gridOK(g [3]int) bool {
	m := int(b.lim.MaxComputeWorkgroupsPerDimension)
	return g[0] <= m && g[1] <= m && g[2] <= m
}

// run submits ds in order, several per submission up to the work budget,
// waiting for each submission before the next and checking ctx between
// them; it waits without the device lock (waitIdle), so other
// goroutines record and submit meanwhile. Recorded into step st (not
// nil) it records them instead, to be submitted with the step's other
// work and waited for by the step's caller, and returns at once. The
// caller holds b.mu, and holds it again on return.
func (b *Backend) run(ctx context.Context, st *Step, op string, ds []*dispatch) error {
	for _, d := range ds {
		if d.err != nil {
			return backend.Wrapf(d.err, "gpu: %s", op)
		}
	}
	for i := 0; i < len(ds); {
		if err := ctx.Err(); err != nil {
			return backend.Wrapf(err, "gpu: %s", op)
		}
		if b.closed { // by Close while this op waited
			return backend.Errorf(backend.ErrReleased, "gpu: %s: the backend was closed while the call waited", op)
		}
		j, cost := i+1, ds[i].cost
		for j < len(ds) && j-i < plan.MaxPerSubmit && cost+ds[j].cost <= b.budget {
			cost += ds[j].cost
			j++
		}
		err := b.record(st, ds[i:j], cost)
		if err == nil && st == nil {
			// An op outside a step waits for its work, submitted with
			// what steps recorded before it.
			if err = b.flush(); err == nil {
				err = b.waitIdle()
			}
		}
		if err != nil {
			return backend.Wrapf(err, "gpu: %s", op)
		}
		i = j
	}
	return nil
}

// arenaBytes is the size of a submission's arena (record) unless one op
// needs more.
const arenaBytes = 64 << 10

// arena is the buffer in which a submission's dispatches find their
// Params (bound as uniforms) and inline vars data (as storage), written
// once, at submission, from data.
type arena struct {
	buf  *wg.Buffer
	size int
	data []byte
}

// place appends x, zero-padded to size bytes, at the next multiple of
// align (a power of two) and returns where it starts. record has made
// room for it (arenaNeed).
func (a *arena) place(x []byte, size, align int) int {
	at := (len(a.data) + align - 1) &^ (align - 1)
	a.data = append(a.data, make([]byte, at-len(a.data))...)
	a.data = append(a.data, x...)
	a.data = append(a.data, make([]byte, size-len(x))...)
	return at
}

// arenaNeed bounds the arena bytes ds take: each dispatch's Params slot
// and each distinct vars slice, aligned.
func (b *Backend) arenaNeed(ds []*dispatch) int {
	ua, sa := b.uniformAlign(), b.storageAlign()
	n := 0
	var last *uint32
	for _, d := range ds {
		n += paramBytes(d) + ua
		if len(d.vars) > 0 && unsafe.SliceData(d.vars) != last {
			last = unsafe.SliceData(d.vars)
			n += varsBytes(d.vars) + sa
		}
	}
	return n
}

func (b *Backend) uniformAlign() int { return max(int(b.lim.MinUniformBufferOffsetAlignment), 16) }
func (b *Backend) storageAlign() int { return max(int(b.lim.MinStorageBufferOffsetAlignment), 16) }

// varsBytes is the binding size of inline vars words: at least 16 bytes,
// a multiple of 16.
func varsBytes(w []uint32) int { return (max(4*len(w), 16) + 15) &^ 15 }

// recordedDispatch is a dispatch ready to encode: its pipeline, its bind
// group and its grid.
type recordedDispatch struct {
	p    *pipeline
	g    *wg.BindGroup
	grid [3]int
	kept bool // g is kept for reuse (groups.go), not the dispatch's own
}

// release releases the dispatch's own bind group once it is submitted
// (or not recorded after all).
func (r recordedDispatch) release() {
	if !r.kept {
		r.g.Release()
	}
}

// newArena starts the pending record's arena, of size bytes: the last
// submission's when that has the size (its buffer is written again
// after the work that read it, in queue order), else a new one. The
// caller holds b.mu.
func (b *Backend) newArena(size int) error {
	if a := b.spare; a != nil && a.size == size {
		b.spare = nil
		b.pending.arena = a
		return nil
	}
	buf, err := b.dev.CreateBuffer("attn params", uint64(size), wg.UsageUniform|wg.UsageStorage|wg.UsageCopyDst)
	if err != nil {
		return err
	}
	b.pending.arena = &arena{buf: buf, size: size, data: make([]byte, 0, min(size, arenaBytes))}
	return nil
}

// record adds ds, which carry cost operations, to the work waiting for
// the next flush (b.pending), recorded into step st (nil for an op that
// waits): it places their Params and inline vars data in the pending
// arena (a new one, after flushing, when they do not fit) and finds or
// creates their bind groups now (groups.go), so that a bad binding (a
// destroyed buffer of the caller's) fails the op that made it. It
// flushes when the work reaches a submission's budget or bind groups. On
// an error nothing of ds is recorded. The caller holds b.mu.
func (b *Backend) record(st *Step, ds []*dispatch, cost float64) error {
	p := &b.pending
	need := b.arenaNeed(ds)
	if p.arena == nil || len(p.arena.data)+need > p.arena.size {
		if err := b.flush(); err != nil {
			return err
		}
		if err := b.newArena(max(need, arenaBytes)); err != nil {
			return err
		}
	}
	a := p.arena
	mark, n := len(a.data), len(p.ds)
	ua, sa := b.uniformAlign(), b.storageAlign()
	var lastVars *uint32
	varsAt := 0
	for _, d := range ds {
		d.binds[0] = binding{a.buf, a.place(d.params, paramBytes(d), ua), paramBytes(d)}
		if len(d.vars) > 0 {
			if unsafe.SliceData(d.vars) != lastVars {
				lastVars = unsafe.SliceData(d.vars)
				w := make([]byte, 4*len(d.vars))
				for i, v := range d.vars {
					binary.LittleEndian.PutUint32(w[4*i:], v)
				}
				varsAt = a.place(w, varsBytes(d.vars), sa)
			}
			d.bind("vars", a.buf, varsAt, varsBytes(d.vars))
		}
		g, kept, err := b.bindGroup(d) // groups.go
		if err != nil {
			for _, r := range p.ds[n:] {
				r.release()
			}
			p.ds, a.data = p.ds[:n], a.data[:mark]
			return err
		}
		p.ds = append(p.ds, recordedDispatch{d.p, g, d.grid, kept})
	}
	if st != nil {
		if p.steps == nil {
			p.steps = map[*Step]struct{}{}
		}
		p.steps[st] = struct{}{}
	}
	p.cost += cost
	// A step submits early past step.flush dispatches (ATTN_GPU_TUNE;
	// by default plan.MaxPerSubmit, so only the budget and the bind groups
	// alive submit a step's work before Submit or Wait).
	if p.cost >= b.budget || len(p.ds) >= plan.MaxPerSubmit || st != nil && len(p.ds) >= b.aplan.Tune.StepFlush {
		return b.flush()
	}
	return nil
}

// paramBytes is the size of d's Params struct rounded up to 16 bytes, as
// a uniform binding's size must be.
func paramBytes(d *dispatch) int { return (len(d.params) + 15) &^ 15 }

// tooLarge is the error for a problem no split brings within the device's
// limits.
func tooLarge(op string, p backend.Problem, why string) error {
	return backend.Errorf(backend.ErrTooLarge, "gpu: %s: B=%d H=%d Nq=%d Nk=%d D=%d Dv=%d: %s", op, p.B, p.H, p.Nq, p.Nk, p.D, p.Dv, why)
}
