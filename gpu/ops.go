//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"
	"fmt"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
	"github.com/attn-go/attn/gpu/internal/wg"
)

// The operands' tensors follow backend.Rows: packed rows (Cu) and paged
// pools (Pages) keep their sequences' row starts and block table for the
// windows' spans, which the kernels read from vars.
func rowsTensor(r backend.Rows, p backend.Problem, kv bool, rows plan.RowSel, ncols int) plan.Tensor {
	t := plan.Tensor{Sb: r.Batch, Sh: r.Head, Sr: r.Row, Sc: 1, KV: kv, Rows: rows, Ncols: ncols, Cu: r.Cu, Pg: r.Pages}
	if r.Pages != nil {
		t.Lens = make([]int, p.B)
		for b := range p.B {
			t.Lens[b] = p.KVLen(b)
		}
	}
	return t
}

func qTensor(p backend.Problem) plan.Tensor {
	return rowsTensor(p.QRowsOf(), p, false, plan.ByQuery, p.D)
}

func kTensor(p backend.Problem) plan.Tensor { return rowsTensor(p.KRowsOf(), p, true, plan.ByKey, p.D) }

func vTensor(p backend.Problem) plan.Tensor {
	return rowsTensor(p.VRowsOf(), p, true, plan.ByKey, p.Dv)
}

func oTensor(p backend.Problem) plan.Tensor {
	return rowsTensor(p.ORowsOf(), p, false, plan.ByQuery, p.Dv)
}

// lseTensor is [B, H, Nq], or [H, CuQ[B]] when packed.
func lseTensor(p backend.Problem) plan.Tensor {
	if p.Packed != nil {
		return plan.Tensor{Sh: p.TotalQ(), Sr: 1, Sc: 1, Rows: plan.ByQuery, Ncols: 1, Cu: p.Packed.CuQ}
	}
	return plan.Tensor{Sb: p.H * p.Nq, Sh: p.Nq, Sr: 1, Sc: 1, Rows: plan.ByQuery, Ncols: 1}
}

func scoresTensor(p backend.Problem) plan.Tensor {
	return plan.Tensor{Sb: p.H * p.Nq * p.Nk, Sh: p.Nq * p.Nk, Sr: p.Nk, Sc: 1, Rows: plan.ByQuery, Cols: plan.ColsKeys}
}

func maskTensor(m *backend.Mask) plan.Tensor {
	s := m.Strides()
	return plan.Tensor{Sb: s[0], Sh: s[1], Sr: s[2], Sc: s[3], Rows: plan.ByQuery, Cols: plan.ColsKeys}
}

// arg is one buffer argument of an op, for ownership and aliasing checks.
type arg struct {
	name string
	buf  backend.Buffer
	out  bool
}

// begin takes the device lock for op and resolves its arguments. On
// success the caller holds b.mu and must unlock it.
func (b *Backend) begin(ctx context.Context, op string, args ...arg) ([]*buffer, error) {
	if err := b.lock(ctx, op); err != nil {
		return nil, err
	}
	bufs, err := b.resolveArgs(op, args...)
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	return bufs, nil
}

// resolveArgs resolves every non-nil argument and refuses an output that
// shares its wgpu buffer with another argument (WebGPU forbids a
// writable binding aliasing any other of the same buffer in a dispatch,
// whatever their ranges: two imports of one buffer count as one). The
// caller holds b.mu.
func (b *Backend) resolveArgs(op string, args ...arg) ([]*buffer, error) {
	out := make([]*buffer, len(args))
	for i, a := range args {
		if a.buf == nil {
			continue
		}
		x, err := b.resolve(op, a.name, a.buf)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	for i, a := range args {
		if !a.out || out[i] == nil {
			continue
		}
		for j := range args {
			if j == i || out[j] == nil {
				continue
			}
			if out[j] == out[i] {
				return nil, backend.Errorf(backend.ErrShape, "gpu: %s: %s and %s share one buffer", op, a.name, args[j].name)
			}
			if wg.Same(out[j].buf, out[i].buf) {
				return nil, backend.Errorf(backend.ErrShape, "gpu: %s: %s (bytes %d…%d) and %s (bytes %d…%d) lie in one wgpu buffer, which WebGPU forbids for an output",
					op, a.name, out[i].off, int64(out[i].off)+out[i].bytes, args[j].name, out[j].off, int64(out[j].off)+out[j].bytes)
			}
		}
	}
	return out, nil
}

// plan cuts the unit into dispatches no larger than the device allows:
// windows within the binding limit, grids within the dimension limit and
// work within the submission budget.
func (b *Backend) plan(op string, p backend.Problem, u plan.Unit, sp plan.Splitter, ops []operand,
	grid func(plan.Unit) [3]int, cost func(plan.Unit) float64) ([]plan.Unit, error) {
	sp.OK = func(u plan.Unit) bool {
		return b.gridOK(grid(u)) && cost(u) <= b.budget && b.bindOperands(nil, u, p.H, p.Group(), ops)
	}
	units, ok := sp.Split(u, nil)
	if !ok {
		return nil, tooLarge(op, p, fmt.Sprintf("one tile's operands exceed the device's %d-byte storage binding", b.lim.MaxStorageBufferBindingSize))
	}
	return units, nil
}

// unitDispatch starts a dispatch of pipe for unit u of problem p: it
// writes the unit's fields into at (the Unit of the op's Params value),
// and binds ops, writing their addressing where each points. The caller
// sets the kernel's own fields, calls setParams, and sets the grid and
// the cost.
func (b *Backend) unitDispatch(pipe *pipeline, p backend.Problem, u plan.Unit, at *shaders.Unit, ops []operand) *dispatch {
	d := newDispatch(pipe)
	*at = shaders.Unit{
		H: uint32(p.H), G: uint32(p.Group()), Nq: uint32(p.Nq), Nk: uint32(p.Nk),
		BH0: uint32(u.Bh0), I0: uint32(u.I0), I1: uint32(u.I1), J0: uint32(u.J0), J1: uint32(u.J1),
	}
	b.bindOperands(d, u, p.H, p.Group(), ops)
	return d
}

// varsData is an op's data for the kernels' vars binding: its variant
// data (plan.VarsLayout) and, for Fused, its per-sequence data
// (plan.SeqsLayout).
// Up to inlineVars bytes travel beside the dispatches' Params, in the
// arena of the submission that runs them (record); more, a block table
// say, in a scratch buffer of their own.
type varsData struct {
	words []uint32
	buf   *buffer // when the words do not fit inline
}

// inlineVars is the most bytes of vars data placed in a submission's
// arena rather than a buffer of their own.
const inlineVars = 16 << 10

// free releases the scratch buffer behind v; nil is a no-op. The caller
// holds b.mu.
func (v *varsData) free() {
	if v != nil {
		v.buf.free()
	}
}

// uploadVars returns p's variant data (plan.VarsLayout) when need is set, for
// the kernels' vars binding, and nil otherwise (free and bindVars take
// nil). The caller holds b.mu and frees it.
func (b *Backend) uploadVars(p backend.Problem, need bool) (*varsData, error) {
	if !need {
		return nil, nil
	}
	return b.uploadWords(p, plan.VarsLayout(p))
}

// uploadWords returns data, the variant data of p (and the per-sequence
// data of Fused, plan.SeqsLayout), for the kernels' vars binding: inline up to
// inlineVars bytes, else written to a scratch buffer. The caller holds
// b.mu and frees it.
func (b *Backend) uploadWords(p backend.Problem, data []uint32) (*varsData, error) {
	if uint64(len(data))*4 > b.lim.MaxStorageBufferBindingSize {
		return nil, tooLarge("variants", p, fmt.Sprintf("the per-call variant and sequence data, %d words (block table included), exceed the device's %d-byte storage binding", len(data), b.lim.MaxStorageBufferBindingSize))
	}
	if len(data)*4 <= inlineVars {
		return &varsData{words: data}, nil
	}
	x, err := b.pooledScratch(len(data)) // written here, before any kernel reads it
	if err != nil {
		return nil, err
	}
	if err := b.writeWords(x.buf, 0, data); err != nil {
		x.free()
		return nil, err
	}
	return &varsData{buf: x}, nil
}

// bindVars binds the vars data v: its scratch buffer, its words (placed
// by record), or a dummy when v is nil (the kernel then reads none of
// it: no flag that needs it is set).
func (b *Backend) bindVars(d *dispatch, v *varsData) {
	switch {
	case v == nil:
		d.bind("vars", b.dummyR, 0, 256)
	case v.buf != nil:
		d.bind("vars", v.buf.buf, 0, int(v.buf.bytes))
	default:
		d.vars = v.words
	}
}

// scratch allocates a temporary device buffer of n elements, not visible
// to the caller; free it under b.mu. The caller holds b.mu.
func (b *Backend) scratch(n int) (*buffer, error) {
	if uint64(n)*4 > b.lim.MaxBufferSize {
		return nil, backend.Errorf(backend.ErrTooLarge, "gpu: scratch of %d elements exceeds the device's largest buffer, %d bytes", n, b.lim.MaxBufferSize)
	}
	size := (max(uint64(n)*4, 16) + 15) &^ 15
	wb, err := b.dev.CreateBuffer("attn scratch", size, wg.UsageStorage|wg.UsageCopyDst|wg.UsageCopySrc)
	if err != nil {
		return nil, backend.Errorf(backend.ErrTooLarge, "gpu: scratch of %d elements: %v", n, err)
	}
	x := &buffer{owner: b, n: n, bytes: int64(size), buf: wb}
	b.allocated += x.bytes
	b.peak = max(b.peak, b.allocated)
	return x, nil
}

func btoi(v bool) uint32 {
	if v {
		return 1
	}
	return 0
}
