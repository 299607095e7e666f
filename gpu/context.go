//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file runs context.wgsl (Backend.Context).

// Context computes O = P·V in tiles, over chunks of keys that accumulate
// into O: of the plan's MmChunk keys, and no more than one V window of a
// head can bind.
func (b *Backend) Context(ctx context.Context, p backend.ContextParams, pm, v, o backend.Buffer) error {
	return b.context(ctx, nil, p, pm, v, o)
}

// context is Context, recorded into st when st is not nil.
func (b *Backend) context(ctx context.Context, st *Step, p backend.ContextParams, pm, v, o backend.Buffer) (err error) {
	defer func() { st.note("context", err) }()
	if err := p.Validate(pm, v, o); err != nil {
		return backend.Wrapf(err, "gpu: context")
	}
	if err := p.DenseOnly("gpu"); err != nil { // Caps.Strides is false
		return backend.Wrapf(err, "gpu: context")
	}
	bufs, err := b.begin(ctx, "context", arg{"weights", pm, false}, arg{"V", v, false}, arg{"O", o, true})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	pr := p.Problem
	if pr.OLen() == 0 {
		return nil
	}
	// A half O accumulates in a float32 scratch and is packed at the end
	// (pack.wgsl says why).
	oOut, release, err := b.float32Out(bufs[2], pr.OLen())
	if err != nil {
		return err
	}
	defer release()
	var prm shaders.ContextParams
	ops := []operand{
		{name: "p", x: bufs[0], t: scoresTensor(pr), at: &prm.P},
		{name: "v", x: bufs[1], t: vTensor(pr), at: &prm.V},
		{name: "o", x: oOut, t: oTensor(pr), out: true, at: &prm.O},
	}
	pipe, err := b.pipeline(shaders.ContextConsts{TM: plan.MmTile, TN: plan.MmTile, TJ: plan.MmStep, RM: plan.MmReg, RN: plan.MmReg, V: elem(bufs[1])}, "main")
	if err != nil {
		return err
	}
	grid := func(u plan.Unit) [3]int {
		return [3]int{plan.CeilDiv(pr.Dv, plan.MmTile), plan.CeilDiv(u.I1-u.I0, plan.MmTile), u.Bh1 - u.Bh0}
	}
	cost := func(u plan.Unit) float64 {
		return 2 * float64(u.Bh1-u.Bh0) * float64(u.I1-u.I0) * float64(max(u.J1-u.J0, 1)) * float64(pr.Dv)
	}
	// A V window of one head must fit one binding, in its stored bytes.
	chunk := min(b.aplan.MmChunk(), max(b.maxBindRows(vTensor(pr), bufs[1]), plan.MmStep)/plan.MmStep*plan.MmStep)
	keyChunks := plan.Chunks(pr.Nk, chunk)
	if pr.Nk == 0 {
		keyChunks = [][2]int{{0, 0}} // one pass that writes zeros
	}
	var ds []*dispatch
	for ci, kc := range keyChunks {
		units, err := b.plan("context", pr, plan.Unit{Bh0: 0, Bh1: pr.B * pr.H, I0: 0, I1: pr.Nq, J0: kc[0], J1: kc[1]},
			plan.Splitter{RowAlign: plan.MmTile}, ops, grid, cost)
		if err != nil {
			return err
		}
		for _, u := range units {
			d := b.unitDispatch(pipe, pr, u, &prm.Unit, ops)
			prm.Dv, prm.First = uint32(pr.Dv), btoi(ci == 0)
			d.setParams(prm)
			d.grid, d.cost = grid(u), cost(u)
			ds = append(ds, d)
		}
	}
	if ds, err = b.packOut(ds, oOut, bufs[2], pr.OLen()); err != nil {
		return err
	}
	return b.run(ctx, st, "context", ds)
}
