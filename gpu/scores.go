//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file runs scores.wgsl (Backend.Scores).

// Scores computes the scores up to p.Stage in tiles, splitting a head
// dimension longer than the plan's MmChunk across dispatches that accumulate; the
// last of them carries the sums through the stage's steps.
func (b *Backend) Scores(ctx context.Context, p backend.ScoresParams, q, k, s backend.Buffer) error {
	return b.scores(ctx, nil, p, q, k, s)
}

// scores is Scores, recorded into st when st is not nil.
func (b *Backend) scores(ctx context.Context, st *Step, p backend.ScoresParams, q, k, s backend.Buffer) (err error) {
	defer func() { st.note("scores", err) }()
	if err := p.Validate(q, k, s); err != nil {
		return backend.Wrapf(err, "gpu: scores")
	}
	if err := p.DenseOnly("gpu"); err != nil { // Caps.Strides is false
		return backend.Wrapf(err, "gpu: scores")
	}
	if err := plan.CheckVars("scores", p.Problem); err != nil {
		return err
	}
	bufs, err := b.begin(ctx, "scores", arg{"Q", q, false}, arg{"K", k, false}, arg{"bias", p.Bias.Buffer(), false},
		arg{"mask", p.Keep.Buffer(), false}, arg{"scores", s, true})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	pr := p.Problem
	if pr.ScoresLen() == 0 {
		return nil
	}
	var prm shaders.ScoresParams
	ops := []operand{
		{name: "q", x: bufs[0], t: qTensor(pr), at: &prm.Q},
		{name: "k", x: bufs[1], t: kTensor(pr), at: &prm.K},
		{name: "bias", x: bufs[2], mask: &prm.Bias},
		{name: "keep", x: bufs[3], mask: &prm.Keep},
		{name: "s", x: bufs[4], t: scoresTensor(pr), out: true, at: &prm.S},
	}
	if p.Bias != nil {
		ops[2].t = maskTensor(p.Bias)
	}
	if p.Keep != nil {
		ops[3].t = maskTensor(p.Keep)
	}
	flags := plan.KernelFlags(pr, p.Bias != nil, p.Keep != nil, false) & plan.ScoreStageFlags(p.Stage)
	vars, err := b.uploadVars(pr, flags&plan.VarsFlags != 0)
	if err != nil {
		return err
	}
	defer vars.free()
	pipe, err := b.pipeline(shaders.ScoresConsts{TM: plan.MmTile, TN: plan.MmTile, TD: plan.MmStep, RM: plan.MmReg, RN: plan.MmReg,
		Q: elem(bufs[0]), K: elem(bufs[1]), Bias: elem(bufs[2])}, "main")
	if err != nil {
		return err
	}
	grid := func(u plan.Unit) [3]int {
		return [3]int{plan.CeilDiv(u.J1-u.J0, plan.MmTile), plan.CeilDiv(u.I1-u.I0, plan.MmTile), u.Bh1 - u.Bh0}
	}
	var ds []*dispatch
	dcs := plan.Chunks(pr.D, b.aplan.MmChunk())
	for ci, dc := range dcs {
		cost := func(u plan.Unit) float64 {
			return 2 * float64(u.Bh1-u.Bh0) * float64(u.I1-u.I0) * float64(u.J1-u.J0) * float64(dc[1]-dc[0])
		}
		units, err := b.plan("scores", pr, plan.Unit{Bh0: 0, Bh1: pr.B * pr.H, I0: 0, I1: pr.Nq, J0: 0, J1: pr.Nk},
			plan.Splitter{RowAlign: plan.MmTile, KeyAlign: plan.MmTile, SplitKeys: true}, ops, grid, cost)
		if err != nil {
			return err
		}
		for _, u := range units {
			d := b.unitDispatch(pipe, pr, u, &prm.Unit, ops)
			prm.D0, prm.D1 = uint32(dc[0]), uint32(dc[1])
			prm.First, prm.Last = btoi(ci == 0), btoi(ci == len(dcs)-1)
			prm.Scale, prm.Softcap, prm.Flags = pr.Scale, pr.Softcap, flags
			d.setParams(prm)
			b.bindVars(d, vars)
			d.grid, d.cost = grid(u), cost(u)
			ds = append(ds, d)
		}
	}
	return b.run(ctx, st, "scores", ds)
}
