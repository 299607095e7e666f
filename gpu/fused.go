//go:build cgo && !nogpu

package gpu

import (
	"context"
	"fmt"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/shaders"
)

// This file runs fused.wgsl, fusedloop.wgsl or fuseddecode.wgsl, and
// merge.wgsl, which only Fused uses (Backend.Fused); fusedplan.go plans
// its steps.

// fusedKernel is how Fused runs p (resolved) on this backend (see
// adapterPlan.fusedFor): fuseddecode.wgsl for a decoding step under the
// hardware plan, else fused.wgsl with rows query rows an invocation or
// fusedloop.wgsl with tiles of tk keys, in chunks of at most chunk keys.
// The error wraps backend.ErrUnsupported when no kernel fits the device.
func (b *Backend) fusedKernel(p backend.Problem) (fusedChoice, error) {
	c := b.aplan.fusedFor(int(b.lim.MaxComputeWorkgroupStorageSize), p)
	if !c.fits() {
		return c, b.unfit(p)
	}
	return c, nil
}

// unfit is the error for head dims no fused kernel fits.
func (b *Backend) unfit(p backend.Problem) error {
	return backend.Errorf(backend.ErrUnsupported, "gpu: fused: head dims D=%d Dv=%d do not fit the device's %d bytes of workgroup memory; use the staged strategy",
		p.D, p.Dv, b.lim.MaxComputeWorkgroupStorageSize)
}

// Fused runs flash attention: the key range is cut into steps, each a
// dispatch of fused.wgsl or fusedloop.wgsl whose splits of the keys run
// side by side and whose normalised partial (O, LSE) merge.wgsl folds
// into the result, so that no invocation loops past a CPU-type adapter's
// cap, a decoding query's long cache is spread over workgroups, no
// submission runs long and no binding exceeds the device's limit. Packed
// sequences and paged caches are read where their rows are, through the
// per-call data in vars (seqsLayout).
func (b *Backend) Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	if err := p.Validate(q, k, v, o, lse); err != nil {
		return fmt.Errorf("gpu: fused: %w", err)
	}
	if err := p.DenseOnly("gpu"); err != nil { // Caps.Strides is false
		return fmt.Errorf("gpu: fused: %w", err)
	}
	if err := checkVars("fused", p.Problem); err != nil {
		return err
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
	// fused.wgsl, one key per loop iteration, fusedloop.wgsl, in tiles
	// of tk keys, or fuseddecode.wgsl, a KV head's group of query heads
	// a workgroup, as the adapter's plan and the step's queries say.
	fc, err := b.fusedKernel(pr)
	if err != nil {
		return err
	}
	rows := fc.rows
	tileRows, heads := fc.tileRows(), fc.heads() // query rows of each of heads query heads a workgroup
	sp, err := b.stepPlanFor(pr, fc, bufs[1], bufs[2])
	if err != nil {
		return err
	}
	kt, vt := kTensor(pr), vTensor(pr)
	olen, lselen := pr.OLen(), pr.LSELen()

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
	var seqFlags shaders.Flag
	if pr.Packed != nil {
		seqFlags |= shaders.FlagPackQ
		if pr.Packed.CuK != nil {
			seqFlags |= shaders.FlagPackK
		}
	}
	if pr.Paged != nil {
		seqFlags |= shaders.FlagPaged
	}
	flags |= seqFlags
	var vars *buffer
	words, seqAt, tableAt := seqsLayout(pr)
	if rangeVariants(pr) || pr.ALiBi != nil || pr.Sinks != nil || seqFlags != 0 {
		if vars, err = b.uploadWords(pr, words); err != nil {
			return err
		}
		defer vars.free()
	}
	var fused *pipeline
	switch {
	case fc.decode():
		dc := fc.dec.consts(pr.D, pr.Dv)
		dc.Q, dc.K, dc.V, dc.Bias = elem(bufs[0]), elem(bufs[1]), elem(bufs[2]), elem(bufs[3])
		fused, err = b.pipeline(dc, "main")
	case rows > 0:
		fused, err = b.pipeline(shaders.FusedConsts{WG: fusedWG, R: rows, D: pr.D, DV: pr.Dv,
			Q: elem(bufs[0]), K: elem(bufs[1]), V: elem(bufs[2]), Bias: elem(bufs[3])}, "main")
	default:
		fused, err = b.pipeline(shaders.FusedLoopConsts{WG: fusedWG, TK: fc.tk, D: pr.D, DV: pr.Dv,
			Q: elem(bufs[0]), K: elem(bufs[1]), V: elem(bufs[2]), Bias: elem(bufs[3])}, "main")
	}
	if err != nil {
		return err
	}
	// Only the keys some row may see are visited, in steps; a step that
	// writes its rows directly is one split of their first keys, the
	// others' partial results merge in (fusedSteps).
	steps := fusedSteps(pr, sp)
	parts := 0 // the most partial results a step writes
	for _, st := range steps {
		if !st.direct() {
			parts = max(parts, st.splits())
		}
	}
	lseOut := bufs[6]
	// A half O is computed in a float32 scratch and packed at the end
	// (pack.wgsl says why).
	oOut, release, err := b.float32Out(bufs[5], olen)
	if err != nil {
		return err
	}
	defer release()
	var po, plse *buffer
	if parts > 0 {
		if po, err = b.scratch(parts * olen); err != nil {
			return err
		}
		defer po.free()
		if plse, err = b.scratch(parts * lselen); err != nil {
			return err
		}
		defer plse.free()
		if lseOut == nil {
			if lseOut, err = b.scratch(lselen); err != nil {
				return err
			}
			defer lseOut.free()
		}
	}
	if lseOut != nil {
		flags |= shaders.FlagLSE
	}

	lanes := b.aplan.mergeRowLanes()
	merge, err := b.pipeline(shaders.MergeConsts{WG: mergeWG, L: lanes}, "main")
	if err != nil {
		return err
	}
	var prm shaders.FusedParams
	var mprm shaders.MergeParams
	// fused.wgsl and fuseddecode.wgsl bind K and V as vec4s where the
	// head dims allow.
	vec4 := rows > 0 || fc.decode()
	ops := func(out, outLSE *buffer, ns int) []operand {
		r := []operand{
			{name: "q", x: bufs[0], t: qTensor(pr), at: &prm.Q},
			{name: "k", x: bufs[1], t: kt, vec4: vec4 && pr.D%4 == 0, at: &prm.K},
			{name: "v", x: bufs[2], t: vt, vec4: vec4 && pr.Dv%4 == 0, at: &prm.V},
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
		if out == po {
			r[5].t.sz, r[5].t.nz = olen, ns
			r[6].t.sz, r[6].t.nz = lselen, ns
		}
		return r
	}
	mergeOps := func(ns int) []operand {
		r := []operand{
			{name: "po", x: po, t: oTensor(pr), at: &mprm.PO},
			{name: "plse", x: plse, t: lseTensor(pr), at: &mprm.PLSE},
			{name: "o", x: oOut, t: oTensor(pr), out: true, at: &mprm.O},
			{name: "lse", x: lseOut, t: lseTensor(pr), out: true, at: &mprm.LSE},
		}
		r[0].t.sz, r[0].t.nz = olen, ns
		r[1].t.sz, r[1].t.nz = lselen, ns
		return r
	}
	var ds []*dispatch
	for _, st := range steps {
		ns := st.splits()
		out, outLSE, fl := oOut, lseOut, flags
		if st.first && pr.Sinks != nil {
			fl |= shaders.FlagSink
		}
		if !st.direct() {
			out, outLSE = po, plse
		}
		fo := ops(out, outLSE, ns)
		mo := mergeOps(ns)
		grid := func(u unit) [3]int { return [3]int{ceilDiv(u.i1-u.i0, tileRows), (u.bh1 - u.bh0) / heads, ns} }
		cost := func(u unit) float64 {
			return float64(2*pr.D+2*pr.Dv) * float64(u.bh1-u.bh0) * float64(u.i1-u.i0) * float64(max(u.j1-u.j0, 1))
		}
		units, err := b.plan("fused", pr, unit{st.b0 * pr.H, st.b1 * pr.H, st.i0, st.i1, st.j0, st.j1},
			splitter{headAlign: heads, rowAlign: tileRows}, append(fo, mo...), grid, cost)
		if err != nil {
			return err
		}
		for _, u := range units {
			d := b.unitDispatch(fused, pr, u, &prm.Unit, fo)
			prm.Scale, prm.Softcap, prm.Flags = pr.Scale, pr.Softcap, fl
			prm.SK = uint32(max(st.sk, 1))
			prm.OZ, prm.LSEZ = 0, 0
			if out == po {
				prm.OZ, prm.LSEZ = uint32(olen), uint32(lselen)
			}
			prm.Seq, prm.Table, prm.Page, prm.PerSeq = uint32(seqAt), uint32(tableAt), 1, 0
			if pg := pr.Paged; pg != nil {
				prm.Page, prm.PerSeq = uint32(pg.PageSize), uint32(pg.PerSeq)
			}
			d.setParams(prm)
			b.bindVars(d, vars)
			d.grid, d.cost = grid(u), cost(u)
			ds = append(ds, d)
		}
		if st.direct() {
			continue
		}
		for _, u := range units {
			d := b.unitDispatch(merge, pr, u, &mprm.Unit, mo)
			mprm.Dv, mprm.Flags, mprm.Seq = uint32(pr.Dv), seqFlags&shaders.FlagPackQ, uint32(seqAt)
			mprm.Parts, mprm.Init = uint32(ns), btoi(st.first)
			mprm.PZ, mprm.PLSEZ = uint32(olen), uint32(lselen)
			d.setParams(mprm)
			b.bindVars(d, vars)
			d.grid = [3]int{ceilDiv(u.i1-u.i0, mergeWG/lanes), u.bh1 - u.bh0, 1}
			d.cost = float64(u.bh1-u.bh0) * float64(u.i1-u.i0) * float64(pr.Dv*ns)
			ds = append(ds, d)
		}
	}
	if ds, err = b.packOut(ds, oOut, bufs[5], olen); err != nil {
		return err
	}
	return b.run(ctx, "fused", ds)
}

// stepPlanFor bounds Fused's steps for pr (fusedSteps) through kernel fc
// on this device: splits of at most fc.chunk keys (the kernel's loop
// cap), steps whose K and V windows fit a binding (kx and vx are K and
// V, whose dtypes size the windows; nil is float32) — or, for a paged
// pool larger than one binding, each sequence's steps cut so that their
// pages lie within one window — as many splits side by side as
// merge.wgsl's loop and splitScratch allow, and keys split further when a
// step has fewer workgroups than the adapter wants (the decoding kernel
// wants more of them, and smaller, than the others: decodeTarget).
func (b *Backend) stepPlanFor(pr backend.Problem, fc fusedChoice, kx, vx *buffer) (stepPlan, error) {
	tk := max(fc.tk, 1)
	sp := stepPlan{chunk: fc.chunk, span: unbounded, tileRows: fc.tileRows(), heads: fc.heads(),
		target: b.aplan.splitTarget(), minSplit: fusedMinSplit, work: b.budget / float64(2*pr.D+2*pr.Dv)}
	parts := b.aplan.mergeParts(pr.Dv)
	if fc.decode() {
		sp.target, sp.minSplit, parts = decodeTarget, decodeMinSplit, decodeMaxParts
	}
	kt, vt := kTensor(pr), vTensor(pr)
	if pg := pr.Paged; pg == nil {
		// A K or V window of one head must fit one binding (less the
		// alignment of its start, and of its end when bound as vec4s),
		// counted in its stored bytes.
		for i, t := range []tensor{kt, vt} {
			if fit := b.maxBindRows(t, []*buffer{kx, vx}[i]); fit < sp.span {
				sp.span = fit / tk * tk
			}
		}
		if sp.span < tk {
			return sp, tooLarge("fused", pr, "one tile of keys exceeds the device's storage binding")
		}
		sp.chunk = min(sp.chunk, sp.span)
	} else if pages := min(b.bindPages(kt, kx), b.bindPages(vt, vx)); pages < pg.Pages {
		// A pool larger than one binding: each sequence's steps find
		// their pages within one window.
		if pages < 1 {
			return sp, backend.Errorf(backend.ErrTooLarge, "gpu: fused: a page of %d keys × %d KV heads × D=%d (Dv=%d) exceeds the device's %d-byte storage binding; use smaller pages",
				pg.PageSize, pr.KVHeads, pr.D, pr.Dv, b.lim.MaxStorageBufferBindingSize)
		}
		sp.cut = pageCuts(pg, 1, pages)
	}
	sp.parts = max(1, min(parts, splitScratch/max(pr.OLen(), 1)))
	return sp, nil
}

// bindPages is how many consecutive pages of a paged K or V (t, stored in
// x's dtype) one storage binding holds, less the alignment of the
// window's start and end.
func (b *Backend) bindPages(t tensor, x *buffer) int {
	size := 4
	if x != nil {
		size = x.dtype.Size()
	}
	maxBind := int(b.lim.MaxStorageBufferBindingSize)/size - int(b.lim.MinStorageBufferOffsetAlignment)/size - 4
	return maxBind / max(t.sb, 1)
}
