//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"
	"fmt"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file runs softmax.wgsl (Backend.Softmax).

// Softmax normalises each row of s in place, in two passes (stats, then
// normalize) over chunks of plan.SmWG·plan.SmPer columns.
func (b *Backend) Softmax(ctx context.Context, p backend.SoftmaxParams, s backend.Buffer) error {
	return b.softmax(ctx, nil, p, s)
}

// softmax is Softmax, recorded into st when st is not nil.
func (b *Backend) softmax(ctx context.Context, st *Step, p backend.SoftmaxParams, s backend.Buffer) (err error) {
	defer func() { st.note("softmax", err) }()
	if err := p.Validate(s); err != nil {
		return backend.Wrapf(err, "gpu: softmax")
	}
	if err := p.DenseOnly("gpu"); err != nil { // Caps.Strides is false
		return backend.Wrapf(err, "gpu: softmax")
	}
	if err := plan.CheckVars("softmax", p.Problem); err != nil {
		return err
	}
	bufs, err := b.begin(ctx, "softmax", arg{"scores", s, true}, arg{"mask", p.Keep.Buffer(), false}, arg{"LSE", p.LSE, true})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	pr := p.Problem
	if pr.LSELen() == 0 {
		return nil
	}
	if pr.Nk == 0 {
		if bufs[2] != nil {
			// Recorded work that uses the LSE goes first (step.go).
			if err := b.flush(); err != nil {
				return backend.Wrapf(err, "gpu: softmax")
			}
			return b.write(bufs[2].buf, bufs[2].word(0), emptyLSE(pr))
		}
		return nil
	}
	cw := plan.SmWG * plan.SmPer
	nc := plan.CeilDiv(pr.Nk, cw)
	if most := b.aplan.SoftmaxChunks(); nc > most {
		return tooLarge("softmax", pr, fmt.Sprintf("a row of %d keys needs %d chunks, more than %d", pr.Nk, nc, most))
	}
	stLen := pr.LSELen() * 2 * nc
	if uint64(stLen)*4 > b.lim.MaxBufferSize {
		return tooLarge("softmax", pr, "the row statistics exceed the device's largest buffer")
	}
	stats, err := b.scratch(stLen)
	if err != nil {
		return err
	}
	defer stats.free()

	var prm shaders.SoftmaxParams
	ops := []operand{
		{name: "s", x: bufs[0], t: scoresTensor(pr), out: true, at: &prm.S},
		{name: "keep", x: bufs[1], mask: &prm.Keep},
		{name: "st", x: stats, t: plan.Tensor{Sb: pr.H * pr.Nq * 2 * nc, Sh: pr.Nq * 2 * nc, Sr: 2 * nc, Sc: 1, Rows: plan.ByQuery, Ncols: 2 * nc}, out: true, at: &prm.St},
		{name: "lse", x: bufs[2], t: lseTensor(pr), out: true, at: &prm.LSE},
	}
	if p.Keep != nil {
		ops[1].t = maskTensor(p.Keep)
	}
	flags := plan.KernelFlags(pr, false, p.Keep != nil, p.LSE != nil) & plan.SoftmaxFlags
	vars, err := b.uploadVars(pr, flags&plan.VarsFlags != 0)
	if err != nil {
		return err
	}
	defer vars.free()
	spec := shaders.SoftmaxConsts{WG: plan.SmWG, PER: plan.SmPer}
	statsPipe, err := b.pipeline(spec, "stats")
	if err != nil {
		return err
	}
	norm, err := b.pipeline(spec, "normalize")
	if err != nil {
		return err
	}
	grid := func(u plan.Unit) [3]int {
		return [3]int{plan.CeilDiv(u.J1-u.J0, cw), u.I1 - u.I0, u.Bh1 - u.Bh0}
	}
	cost := func(u plan.Unit) float64 {
		return 8 * float64(u.Bh1-u.Bh0) * float64(u.I1-u.I0) * float64(plan.CeilDiv(u.J1-u.J0, cw)*cw)
	}
	units, err := b.plan("softmax", pr, plan.Unit{Bh0: 0, Bh1: pr.B * pr.H, I0: 0, I1: pr.Nq, J0: 0, J1: pr.Nk},
		plan.Splitter{RowAlign: 1, KeyAlign: cw, SplitKeys: true}, ops, grid, cost)
	if err != nil {
		return err
	}
	var ds []*dispatch
	for _, pipe := range []*pipeline{statsPipe, norm} {
		for _, u := range units {
			d := b.unitDispatch(pipe, pr, u, &prm.Unit, ops)
			prm.NC, prm.Flags = uint32(nc), flags
			d.setParams(prm)
			b.bindVars(d, vars)
			d.grid, d.cost = grid(u), cost(u)
			ds = append(ds, d)
		}
	}
	return b.run(ctx, st, "softmax", ds)
}

// emptyLSE is the LSE of a problem whose rows see no key: −Inf, or the
// row's head's sink logit.
func emptyLSE(p backend.Problem) []float32 {
	out := make([]float32, p.LSELen())
	for x := range out {
		out[x] = negInf
		if p.Sinks != nil {
			out[x] = p.Sinks[x/p.Nq%p.H]
		}
	}
	return out
}
