//go:build cgo && !nogpu

package gpu

import (
	"context"
	"fmt"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/shaders"
)

// This file runs context.wgsl (Backend.Context).

// Context computes O = P·V in tiles, over chunks of keys that accumulate
// into O: of the plan's mmChunk keys, and no more than one V window of a
// head can bind.
func (b *Backend) Context(ctx context.Context, p backend.ContextParams, pm, v, o backend.Buffer) error {
	if err := p.Validate(pm, v, o); err != nil {
		return fmt.Errorf("gpu: context: %w", err)
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
	var prm shaders.ContextParams
	ops := []operand{
		{name: "p", x: bufs[0], t: scoresTensor(pr), at: &prm.P},
		{name: "v", x: bufs[1], t: vTensor(pr), at: &prm.V},
		{name: "o", x: bufs[2], t: oTensor(pr), out: true, at: &prm.O},
	}
	pipe, err := b.pipeline(shaders.ContextConsts{TM: mmTile, TN: mmTile, TJ: mmStep, RM: mmReg, RN: mmReg}, "main")
	if err != nil {
		return err
	}
	grid := func(u unit) [3]int {
		return [3]int{ceilDiv(pr.Dv, mmTile), ceilDiv(u.i1-u.i0, mmTile), u.bh1 - u.bh0}
	}
	cost := func(u unit) float64 {
		return 2 * float64(u.bh1-u.bh0) * float64(u.i1-u.i0) * float64(max(u.j1-u.j0, 1)) * float64(pr.Dv)
	}
	chunk := b.aplan.mmChunk()
	maxBind := int(b.lim.MaxStorageBufferBindingSize/4) - int(b.lim.MinStorageBufferOffsetAlignment/4)
	if vt := vTensor(pr); vt.sr > 0 {
		chunk = min(chunk, max((maxBind-vt.ncols)/vt.sr, mmStep)/mmStep*mmStep)
	}
	keyChunks := chunks(pr.Nk, chunk)
	if pr.Nk == 0 {
		keyChunks = [][2]int{{0, 0}} // one pass that writes zeros
	}
	var ds []*dispatch
	for ci, kc := range keyChunks {
		units, err := b.plan("context", pr, unit{0, pr.B * pr.H, 0, pr.Nq, kc[0], kc[1]},
			splitter{rowAlign: mmTile}, ops, grid, cost)
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
	return b.run(ctx, "context", ds)
}
