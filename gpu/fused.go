//go:build cgo && !nogpu

package gpu

import (
	"context"
	"fmt"
	"slices"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/shaders"
)

// This file runs fused.wgsl or fusedloop.wgsl, and merge.wgsl, which
// only Fused uses (Backend.Fused); fusedplan.go plans its steps.

// fusedKernel is how Fused runs head dims d, dv on this backend (see
// adapterPlan.fusedKernel): fused.wgsl with rows query rows an
// invocation, or fusedloop.wgsl (rows = 0) with tiles of tk keys, in
// chunks of at most chunk keys. The error wraps backend.ErrUnsupported
// when neither fits the device.
func (b *Backend) fusedKernel(d, dv int) (rows, tk, chunk int, err error) {
	rows, tk, chunk = b.aplan.fusedKernel(int(b.lim.MaxComputeWorkgroupStorageSize), d, dv)
	if rows == 0 && tk == 0 {
		return 0, 0, 0, backend.Errorf(backend.ErrUnsupported, "gpu: fused: head dims D=%d Dv=%d do not fit the device's %d bytes of workgroup memory; use the staged strategy",
			d, dv, b.lim.MaxComputeWorkgroupStorageSize)
	}
	return rows, tk, chunk, nil
}

// Fused runs flash attention: the key range is cut into chunks, each a
// dispatch of fused.wgsl or fusedloop.wgsl whose normalised partial (O,
// LSE) merge.wgsl folds into the result, so that no invocation loops past
// a CPU-type adapter's cap, no submission runs long and no binding
// exceeds the device's limit.
func (b *Backend) Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	if err := p.Validate(q, k, v, o, lse); err != nil {
		return fmt.Errorf("gpu: fused: %w", err)
	}
	if err := checkVars("fused", p.Problem); err != nil {
		return err
	}
	if p.Packed != nil || p.Paged != nil {
		// Caps.Seqs is false: the kernels read dense operands only.
		return backend.Errorf(backend.ErrUnsupported, "gpu: fused: packed sequences and paged caches are not yet in the GPU kernels (B=%d Nq=%d Nk=%d)", p.B, p.Nq, p.Nk)
	}
	bufs, err := b.begin(ctx, "fused", arg{"Q", q, false}, arg{"K", k, false}, arg{"V", v, false},
		arg{"bias", maskBuf(p.Bias), false}, arg{"mask", maskBuf(p.Keep), false}, arg{"O", o, true}, arg{"LSE", lse, true})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	pr := p.Problem
	if pr.OLen() == 0 {
		return nil
	}
	// fused.wgsl, one key per loop iteration, or fusedloop.wgsl, in tiles
	// of tk keys, as the adapter's plan says.
	rows, tk, chunk, err := b.fusedKernel(pr.D, pr.Dv)
	if err != nil {
		return err
	}
	// A K or V window of one head must fit one binding (less the
	// alignment of its start, and of its end when bound as vec4s),
	// counted in its stored bytes.
	for i, t := range []tensor{kTensor(pr), vTensor(pr)} {
		if fit := b.maxBindRows(t, bufs[1+i]); fit < chunk {
			chunk = fit / tk * tk
		}
	}
	if chunk < tk {
		return tooLarge("fused", pr, "one tile of keys exceeds the device's storage binding")
	}

	var flags shaders.Flag
	if rangeVariants(pr) {
		flags |= shaders.FlagRange
	}
	if p.Bias != nil {
		flags |= shaders.FlagBias
	}
	if p.Keep != nil {
		flags |= shaders.FlagKeep
	}
	if pr.Softcap > 0 {
		flags |= shaders.FlagSoftcap
	}
	if pr.ALiBi != nil {
		flags |= shaders.FlagALiBi
	}
	vars, err := b.uploadVars(pr, rangeVariants(pr) || pr.ALiBi != nil || pr.Sinks != nil)
	if err != nil {
		return err
	}
	defer vars.free()
	var fused *pipeline
	tileRows := fusedWG // query rows per workgroup
	if rows > 0 {
		fused, err = b.pipeline(shaders.FusedConsts{WG: fusedWG, R: rows, D: pr.D, DV: pr.Dv,
			Q: elem(bufs[0]), K: elem(bufs[1]), V: elem(bufs[2]), Bias: elem(bufs[3])}, "main")
		tileRows = fusedWG * rows
	} else {
		fused, err = b.pipeline(shaders.FusedLoopConsts{WG: fusedWG, TK: tk, D: pr.D, DV: pr.Dv,
			Q: elem(bufs[0]), K: elem(bufs[1]), V: elem(bufs[2]), Bias: elem(bufs[3])}, "main")
	}
	if err != nil {
		return err
	}
	// Only the keys some row may see are visited, in chunks; a row's
	// first step writes O and LSE, its later ones merge (fusedSteps).
	steps := fusedSteps(pr, chunk, tileRows)
	merges := slices.ContainsFunc(steps, func(st fusedStep) bool { return !st.first })
	lseOut := bufs[6]
	// A half O is computed in a float32 scratch and packed at the end
	// (pack.wgsl says why).
	oOut, release, err := b.float32Out(bufs[5], pr.OLen())
	if err != nil {
		return err
	}
	defer release()
	var po, plse *buffer
	if merges {
		if po, err = b.scratch(pr.OLen()); err != nil {
			return err
		}
		defer po.free()
		if plse, err = b.scratch(pr.LSELen()); err != nil {
			return err
		}
		defer plse.free()
		if lseOut == nil {
			if lseOut, err = b.scratch(pr.LSELen()); err != nil {
				return err
			}
			defer lseOut.free()
		}
	}
	if lseOut != nil {
		flags |= shaders.FlagLSE
	}

	merge, err := b.pipeline(shaders.MergeConsts{WG: mergeWG}, "main")
	if err != nil {
		return err
	}
	var prm shaders.FusedParams
	var mprm shaders.MergeParams
	ops := func(out, outLSE *buffer) []operand {
		r := []operand{
			{name: "q", x: bufs[0], t: qTensor(pr), at: &prm.Q},
			{name: "k", x: bufs[1], t: kTensor(pr), vec4: rows > 0 && pr.D%4 == 0, at: &prm.K},
			{name: "v", x: bufs[2], t: vTensor(pr), vec4: rows > 0 && pr.Dv%4 == 0, at: &prm.V},
			{name: "bias", x: bufs[3], mask: &prm.Bias},
			{name: "keep", x: bufs[4], mask: &prm.Keep},
			{name: "o", x: out, t: oTensor(pr), out: true, at: &prm.O},
			{name: "lse", x: outLSE, t: lseTensor(pr), out: true, at: &prm.LSE},
		}
		if p.Bias != nil {
			r[3].t = maskTensor(p.Bias)
		}
		if p.Keep != nil {
			r[4].t = maskTensor(p.Keep)
		}
		return r
	}
	mergeOps := []operand{
		{name: "po", x: po, t: oTensor(pr), at: &mprm.PO},
		{name: "plse", x: plse, t: lseTensor(pr), at: &mprm.PLSE},
		{name: "o", x: oOut, t: oTensor(pr), out: true, at: &mprm.O},
		{name: "lse", x: lseOut, t: lseTensor(pr), out: true, at: &mprm.LSE},
	}
	grid := func(u unit) [3]int { return [3]int{ceilDiv(u.i1-u.i0, tileRows), u.bh1 - u.bh0, 1} }
	cost := func(u unit) float64 {
		return float64(2*pr.D+2*pr.Dv) * float64(u.bh1-u.bh0) * float64(u.i1-u.i0) * float64(max(u.j1-u.j0, 1))
	}
	var ds []*dispatch
	for _, st := range steps {
		out, outLSE, fl := oOut, lseOut, flags
		if st.first && pr.Sinks != nil {
			fl |= shaders.FlagSink
		}
		if !st.first {
			out, outLSE = po, plse
		}
		fo := ops(out, outLSE)
		units, err := b.plan("fused", pr, unit{0, pr.B * pr.H, st.i0, st.i1, st.j0, st.j1},
			splitter{rowAlign: tileRows}, append(fo, mergeOps...), grid, cost)
		if err != nil {
			return err
		}
		for _, u := range units {
			d := b.unitDispatch(fused, pr, u, &prm.Unit, fo)
			prm.Scale, prm.Softcap, prm.Flags = pr.Scale, pr.Softcap, fl
			d.setParams(prm)
			b.bindVars(d, vars)
			d.grid, d.cost = grid(u), cost(u)
			ds = append(ds, d)
		}
		if st.first {
			continue
		}
		for _, u := range units {
			d := b.unitDispatch(merge, pr, u, &mprm.Unit, mergeOps)
			mprm.Dv = uint32(pr.Dv)
			d.setParams(mprm)
			d.grid = [3]int{ceilDiv(u.i1-u.i0, mergeWG), u.bh1 - u.bh0, 1}
			d.cost = float64(u.bh1-u.bh0) * float64(u.i1-u.i0) * float64(pr.Dv)
			ds = append(ds, d)
		}
	}
	if ds, err = b.packOut(ds, oOut, bufs[5], pr.OLen()); err != nil {
		return err
	}
	return b.run(ctx, "fused", ds)
}
