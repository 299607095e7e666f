//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"
	"math"
	"sync"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
	"github.com/attn-go/attn/internal/lower"
)

// This file runs the fused kernel the plan chooses
// (internal/plan/kernel.go), and merge.wgsl, which only Fused uses
// (Backend.Fused); internal/plan/fusedplan.go plans its steps.

// kernelFor is the fused kernel Fused runs p (resolved) with on this
// backend: the plan's one choice for p's shape on the device's workgroup
// memory (plan.AdapterPlan.FusedFor), under the tuning file's sizes for
// p's class where it has some (planFor). The error, which FusedSupports returns
// too, wraps backend.ErrUnsupported when no kernel fits the device.
func (b *Backend) kernelFor(p backend.Problem) (plan.FusedKernel, error) {
	k := choiceKey{b.planFor(p), int(b.lim.MaxComputeWorkgroupStorageSize), plan.ShapeOf(p)}
	c := b.choices.get(k)
	if c == nil {
		return nil, b.unfit(p)
	}
	return c, nil
}

// choiceKey is everything of a problem and the device that FusedFor's
// choice depends on: the plan, the workgroup memory and the problem's
// shape.
type choiceKey struct {
	a   plan.AdapterPlan
	mem int
	s   plan.FusedShape
}

// choiceMemo remembers FusedFor's answers (Backend.choices): FusedFor
// weighs every tile it might run, a few µs, and a model's step asks the
// same question for every layer, through Fused and FusedSupports alike.
// It has a lock of its own because FusedSupports does not take the
// Backend's.
type choiceMemo struct {
	mu sync.Mutex
	m  map[choiceKey]plan.FusedKernel
}

// maxChoices bounds the choices a Backend remembers (b.choices): past
// it, they are forgotten and found again.
const maxChoices = 4096

// get is FusedFor's answer for k, remembered.
func (cs *choiceMemo) get(k choiceKey) plan.FusedKernel {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c, ok := cs.m[k]
	if !ok {
		c = k.a.FusedFor(k.mem, k.s)
		if cs.m == nil || len(cs.m) >= maxChoices {
			cs.m = map[choiceKey]plan.FusedKernel{}
		}
		cs.m[k] = c
	}
	return c
}

// unfit is the error for head dims no fused kernel fits.
func (b *Backend) unfit(p backend.Problem) error {
	return backend.Errorf(backend.ErrUnsupported, "gpu: fused: head dims D=%d Dv=%d do not fit the device's %d bytes of workgroup memory; use the staged strategy",
		p.D, p.Dv, b.lim.MaxComputeWorkgroupStorageSize)
}

// Fused runs flash attention: the key range is cut into steps, each a
// dispatch of the fused kernel (kernelFor) whose splits of the keys run
// side by side and whose normalised partial (O, LSE) merge.wgsl folds
// into the result, so that no invocation loops past a CPU-type adapter's
// cap, a decoding query's long cache is spread over workgroups, no
// submission runs long and no binding exceeds the device's limit. Packed
// sequences and paged caches are read where their rows are, through the
// per-call data in vars (plan.SeqsLayout).
func (b *Backend) Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	if p.NeedsLowering(k, v) {
		return b.fusedLowered(ctx, nil, p, q, k, v, o, lse)
	}
	return b.fused(ctx, nil, p, q, k, v, o, lse)
}

// fusedLowered runs Fused for a problem with an index list, or with q8
// head dims that are not whole blocks, through lower.Fused,
// recorded into st when st is not nil. The ops it runs name themselves
// and are noted in st; its own errors (the list's checks and refusals)
// are named and noted here, once.
func (b *Backend) fusedLowered(ctx context.Context, st *Step, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	ops := &indexedOps{b: b, st: st}
	err := lower.Fused(ctx, b, ops, st != nil, p, q, k, v, o, lse)
	if err != nil && !ops.ran {
		err = backend.Wrapf(err, "gpu: fused")
		st.note("fused", err)
	}
	return err
}

// indexedOps are the ops of lower.Fused on b (recorded into st when
// st is not nil); ran says whether one ran, and so named its error.
type indexedOps struct {
	b   *Backend
	st  *Step
	ran bool
}

func (o *indexedOps) Fused(ctx context.Context, p backend.FusedParams, q, k, v, out, lse backend.Buffer) error {
	o.ran = true
	return o.b.fused(ctx, o.st, p, q, k, v, out, lse)
}

func (o *indexedOps) Copy(ctx context.Context, dst, src backend.Buffer, ranges ...backend.CopyRange) error {
	o.ran = true
	return o.b.copy(ctx, o.st, dst, src, ranges...)
}

// fused is Fused, recorded into st when st is not nil.
func (b *Backend) fused(ctx context.Context, st *Step, p backend.FusedParams, q, k, v, o, lse backend.Buffer) (err error) {
	defer func() { st.note("fused", err) }()
	if err := p.Validate(b.Caps(), q, k, v, o, lse); err != nil {
		return backend.Wrapf(err, "gpu: fused")
	}
	if err := p.DenseOnly("gpu"); err != nil { // Caps.Strides is false
		return backend.Wrapf(err, "gpu: fused")
	}
	if err := plan.CheckVars("fused", p.Problem); err != nil {
		return err
	}
	bufs, err := b.begin(ctx, "fused", arg{"Q", q, false}, arg{"K", k, false}, arg{"V", v, false},
		arg{"bias", p.Bias.Buffer(), false}, arg{"mask", p.Keep.Buffer(), false}, arg{"O", o, true}, arg{"LSE", lse, true})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	pr := p.Problem
	if pr.OLen() == 0 {
		return nil
	}
	fc, err := b.kernelFor(pr)
	if err != nil {
		return err
	}
	sp, err := b.stepPlanFor(pr, fc, bufs[1], bufs[2])
	if err != nil {
		return err
	}
	// Only the keys some row may see are visited, in steps; a step that
	// writes its rows directly is one split of their first keys, the
	// others' partial results merge in (plan.FusedSteps).
	steps := plan.FusedSteps(pr, sp)
	// The backend's last call's, its slices' room kept: a model's step
	// records many, one at a time under b.mu.
	c := b.spareCall
	if c == nil {
		c = new(fusedCall)
	}
	b.spareCall = nil
	*c = fusedCall{b: b, p: p, pr: pr, bufs: bufs, fc: fc, olen: pr.OLen(), lselen: pr.LSELen(),
		frees: c.frees[:0], ops: c.ops[:0], fo: c.fo[:0], mo: c.mo[:0]}
	defer func() {
		c.release()
		clear(c.frees) // the room is kept, not what it held
		clear(c.ops)
		clear(c.fo)
		clear(c.mo)
		b.spareCall = c
	}()
	if err := c.prepare(steps); err != nil {
		return err
	}
	ds := c.qCopy
	for _, st := range steps {
		if ds, err = c.step(ds, st); err != nil {
			return err
		}
	}
	if ds, err = b.packOut(ds, c.oOut, bufs[5], c.olen); err != nil {
		return err
	}
	return b.run(ctx, st, "fused", ds)
}

// fusedCall is one call of Fused being recorded: its operands, its
// kernels, the scratch its steps write and the Params its dispatches
// share.
type fusedCall struct {
	b      *Backend
	p      backend.FusedParams
	pr     backend.Problem
	bufs   []*buffer // Q, K, V, bias, keep, O and LSE, as begin resolved them
	fc     plan.FusedKernel
	olen   int
	lselen int

	flags          shaders.Flag // every bit of the call (plan.KernelFlags)
	vars           *varsData
	seqAt, tableAt int    // where the per-sequence data and the block table start in vars
	sclAt          int    // where the KV heads' scales start in vars (under FlagScales)
	blkAt          int    // where the block mask starts in vars (under FlagBlocks)
	blkStrides     [4]int // its strides (plan.BlockWords)
	fused, merge   *pipeline
	// q is the query the fused kernel reads: Q, or under key lanes a
	// half Q widened into float32 scratch by qCopy first.
	q            *buffer
	qCopy        []*dispatch
	mergeRows    int     // query rows a merge.wgsl workgroup folds
	oOut, lseOut *buffer // where the result goes: O or its float32 scratch, the LSE or its scratch
	po, plse     *buffer // the partial results of a step's splits
	// The operands point into these, where unitDispatch writes each
	// dispatch's windows before its Params are encoded.
	prm   shaders.FusedParams
	mprm  shaders.MergeParams
	frees []func()
	// The operands of a step's fused kernel and merge, and both for the
	// plan: rebuilt every step, their room kept from call to call.
	fo, mo, ops []operand
}

// release frees the call's scratch in the order it was allocated, so
// that the pool, which hands out the longest-kept buffer of a size
// first, gives the same call the same buffers in the same roles next
// time (and the same bind groups: groups.go).
func (c *fusedCall) release() {
	for _, f := range c.frees {
		f()
	}
}

// prepare sets the call's flags, uploads its vars, compiles its kernels
// and allocates the scratch its steps write.
func (c *fusedCall) prepare(steps []plan.FusedStep) error {
	b, pr, bufs := c.b, c.pr, c.bufs
	parts := 0 // the most partial results a step writes
	for _, st := range steps {
		if !st.Direct() {
			parts = max(parts, st.Splits())
		}
	}
	// A step that merges needs its rows' LSE, asked for or not.
	c.flags = plan.KernelFlags(pr, c.p.Bias != nil, c.p.Keep != nil, bufs[6] != nil || parts > 0)
	var words []uint32
	words, c.seqAt, c.tableAt = plan.SeqsLayout(pr)
	if pr.Scales != nil {
		// KV head g's scales of K and V at sclAt + 2g (lib/pages.wgsl).
		c.sclAt = len(words)
		for g := range pr.KVHeads {
			words = append(words, math.Float32bits(pr.Scales.KScale(g)), math.Float32bits(pr.Scales.VScale(g)))
		}
	}
	if pr.Blocks != nil {
		c.blkAt = len(words)
		var bw []uint32
		bw, c.blkStrides = plan.BlockWords(pr, pr.Blocks)
		words = append(words, bw...)
	}
	var err error
	if c.flags&plan.VarsFlags != 0 {
		if c.vars, err = b.uploadWords(pr, words); err != nil {
			return err
		}
		c.frees = append(c.frees, c.vars.free)
	}
	c.q = bufs[0]
	if c.fc.WidensQ() && c.q.dtype.Half() {
		// From the pool: the copy writes all of it.
		if c.q, err = b.pooledScratch(pr.QLen()); err != nil {
			return err
		}
		c.frees = append(c.frees, c.q.free)
		if c.qCopy, err = b.copyDispatches(c.q, 0, bufs[0], 0, pr.QLen()); err != nil {
			return err
		}
	}
	spec := c.fc.Spec(elem(c.q), elem(bufs[1]), elem(bufs[2]), elem(bufs[3]))
	if pr.VFromK {
		// V's rows are K's, each starting on a multiple of D.
		spec = shaders.WithVRow(spec, pr.D)
	}
	if c.fused, err = b.pipeline(spec, "main"); err != nil {
		return err
	}
	// A half O is computed in a float32 scratch and packed at the end
	// (pack.wgsl says why).
	oOut, release, err := b.float32Out(bufs[5], c.olen)
	if err != nil {
		return err
	}
	c.oOut = oOut
	c.frees = append(c.frees, release)
	c.lseOut = bufs[6]
	if parts > 0 {
		// From the pool: a step's kernel writes every split's O and LSE
		// for every row it has (a split that sees no key of a row too:
		// zeros and −Inf), and merge reads only those rows' parts; the
		// first merge of a call writes lseOut's rows (init), and later
		// ones read only those.
		if c.po, err = b.pooledScratch(parts * c.olen); err != nil {
			return err
		}
		c.frees = append(c.frees, c.po.free)
		if c.plse, err = b.pooledScratch(parts * c.lselen); err != nil {
			return err
		}
		c.frees = append(c.frees, c.plse.free)
		if c.lseOut == nil {
			if c.lseOut, err = b.pooledScratch(c.lselen); err != nil {
				return err
			}
			c.frees = append(c.frees, c.lseOut.free)
		}
	}
	a := b.planFor(pr)
	var ms shaders.MergeConsts
	ms, c.mergeRows = a.Merge()
	c.merge, err = b.pipeline(ms, "main")
	return err
}

// step appends to ds the dispatches of step st: the fused kernel's, and
// merge.wgsl's unless the step writes its rows directly.
func (c *fusedCall) step(ds []*dispatch, st plan.FusedStep) ([]*dispatch, error) {
	b, pr := c.b, c.pr
	ns := st.Splits()
	out, outLSE := c.oOut, c.lseOut
	if !st.Direct() {
		out, outLSE = c.po, c.plse
	}
	fl := c.flags
	if !st.First {
		fl &^= shaders.FlagSink // a row's denominator takes the sink once
	}
	fo, mo := c.fusedOps(out, outLSE, ns), c.mergeOps(ns)
	tileRows, heads := c.fc.TileRows(), c.fc.Heads() // query rows of each of heads query heads a workgroup
	grid := func(u plan.Unit) [3]int {
		return [3]int{plan.CeilDiv(u.I1-u.I0, tileRows), (u.Bh1 - u.Bh0) / heads, ns}
	}
	cost := func(u plan.Unit) float64 {
		return float64(2*pr.D+2*pr.Dv) * float64(u.Bh1-u.Bh0) * float64(u.I1-u.I0) * float64(max(u.J1-u.J0, 1))
	}
	c.ops = append(append(c.ops[:0], fo...), mo...)
	units, err := b.plan("fused", pr, plan.Unit{Bh0: st.B0 * pr.H, Bh1: st.B1 * pr.H, I0: st.I0, I1: st.I1, J0: st.J0, J1: st.J1},
		plan.Splitter{HeadAlign: heads, RowAlign: tileRows}, c.ops, grid, cost)
	if err != nil {
		return ds, err
	}
	prm := &c.prm
	for _, u := range units {
		d := b.unitDispatch(c.fused, pr, u, &prm.Unit, fo)
		prm.Scale, prm.Softcap, prm.Flags = pr.Scale, pr.Softcap, fl
		prm.SK = uint32(max(st.Sk, 1))
		prm.OZ, prm.LSEZ = 0, 0
		if out == c.po {
			prm.OZ, prm.LSEZ = uint32(c.olen), uint32(c.lselen)
		}
		prm.Seq, prm.Table, prm.Page, prm.PerSeq = uint32(c.seqAt), uint32(c.tableAt), 1, 0
		prm.Scl = uint32(c.sclAt)
		prm.BlockMaskParams = blockParams(pr.Blocks, c.blkAt, c.blkStrides)
		if pg := pr.Paged; pg != nil {
			prm.Page, prm.PerSeq = uint32(pg.PageSize), uint32(pg.PerSeq)
		}
		d.setParams(*prm)
		b.bindVars(d, c.vars)
		d.grid, d.cost = grid(u), cost(u)
		ds = append(ds, d)
	}
	if st.Direct() {
		return ds, nil
	}
	mprm := &c.mprm
	for _, u := range units {
		d := b.unitDispatch(c.merge, pr, u, &mprm.Unit, mo)
		mprm.Dv, mprm.Flags, mprm.Seq = uint32(pr.Dv), c.flags&shaders.FlagPackQ, uint32(c.seqAt)
		mprm.Parts, mprm.Init = uint32(ns), btoi(st.First)
		mprm.PZ, mprm.PLSEZ = uint32(c.olen), uint32(c.lselen)
		d.setParams(*mprm)
		b.bindVars(d, c.vars)
		d.grid = [3]int{plan.CeilDiv(u.I1-u.I0, c.mergeRows), u.Bh1 - u.Bh0, 1}
		d.cost = float64(u.Bh1-u.Bh0) * float64(u.I1-u.I0) * float64(pr.Dv*ns)
		ds = append(ds, d)
	}
	return ds, nil
}

// fusedOps are the fused kernel's operands for a step of ns splits
// writing out and outLSE: O and the LSE, or the splits' partial results.
func (c *fusedCall) fusedOps(out, outLSE *buffer, ns int) []operand {
	pr, bufs, prm := c.pr, c.bufs, &c.prm
	// The kernels that bind K and V as vec4s (shaders.Kernel.Vec4) do so
	// where the head dims allow; the windows must agree.
	// A half K or V that the kernel reads a unit (8 or 16 halves) a load
	// (shaders.Kernel.Units) starts and ends its window on a unit.
	_, k4 := c.fused.kernel.Vec4["k"]
	_, v4 := c.fused.kernel.Vec4["v"]
	_, k8 := c.fused.kernel.Units["k"]
	_, v8 := c.fused.kernel.Units["v"]
	// V's rows (of Dv) start on multiples of Dv, or of D where V is K's
	// first Dv columns: va divides both (shaders.VAlign).
	kx, vx := bufs[1], bufs[2]
	va := pr.Dv
	if pr.VFromK {
		va = shaders.VAlign(pr.Dv, pr.D)
	}
	c.fo = append(c.fo[:0],
		operand{name: "q", x: c.q, t: qTensor(pr), at: &prm.Q},
		operand{name: "k", x: kx, t: kTensor(pr), vec4: k4 && pr.D%4 == 0, wide: int(btoi(k8)) * wideHalf(kx, pr.D), at: &prm.K},
		operand{name: "v", x: vx, t: vTensor(pr), vec4: v4 && va%4 == 0, wide: int(btoi(v8)) * wideHalf(vx, va), at: &prm.V},
		operand{name: "bias", x: bufs[3], mask: &prm.Bias},
		operand{name: "keep", x: bufs[4], mask: &prm.Keep},
		operand{name: "o", x: out, t: oTensor(pr), out: true, at: &prm.O},
		operand{name: "lse", x: outLSE, t: lseTensor(pr), out: true, at: &prm.LSE},
	)
	r := c.fo
	if c.p.Bias != nil {
		r[3].t = maskTensor(c.p.Bias)
	}
	if c.p.Keep != nil {
		r[4].t = maskTensor(c.p.Keep)
	}
	if out == c.po {
		r[5].t.Sz, r[5].t.Nz = c.olen, ns
		r[6].t.Sz, r[6].t.Nz = c.lselen, ns
	}
	return r
}

// mergeOps are merge.wgsl's operands folding ns partial results into
// the result.
func (c *fusedCall) mergeOps(ns int) []operand {
	pr, mprm := c.pr, &c.mprm
	c.mo = append(c.mo[:0],
		operand{name: "po", x: c.po, t: oTensor(pr), at: &mprm.PO},
		operand{name: "plse", x: c.plse, t: lseTensor(pr), at: &mprm.PLSE},
		operand{name: "o", x: c.oOut, t: oTensor(pr), out: true, at: &mprm.O},
		operand{name: "lse", x: c.lseOut, t: lseTensor(pr), out: true, at: &mprm.LSE},
	)
	r := c.mo
	r[0].t.Sz, r[0].t.Nz = c.olen, ns
	r[1].t.Sz, r[1].t.Nz = c.lselen, ns
	return r
}

// stepPlanFor bounds Fused's steps for pr (plan.FusedSteps) through kernel
// fc on this device: splits of at most fc.Keys' chunk (the kernel's loop
// cap), steps whose K and V windows fit a binding (kx and vx are K and
// V, whose dtypes size the windows; nil is float32) — or, for a paged
// pool larger than one binding, each sequence's steps cut so that their
// pages lie within one window — as many splits side by side as
// merge.wgsl's loop and plan.SplitScratch allow, and keys split further when a
// step has fewer workgroups than the adapter wants (the decoding kernel
// wants more of them, and smaller, than the others: decodeTarget).
func (b *Backend) stepPlanFor(pr backend.Problem, fc plan.FusedKernel, kx, vx *buffer) (plan.StepPlan, error) {
	tk, chunk := fc.Keys()
	tk = max(tk, 1)
	sp := plan.StepPlan{Chunk: chunk, Span: plan.Unbounded, TileRows: fc.TileRows(), Heads: fc.Heads(),
		Work: b.budget / float64(2*pr.D+2*pr.Dv)}
	var parts int
	sp.Target, sp.MinSplit, parts = fc.Splitting(b.planFor(pr))
	kt, vt := kTensor(pr), vTensor(pr)
	if pg := pr.Paged; pg == nil {
		// A K or V window of one head must fit one binding (less the
		// alignment of its start, and of its end when bound as vec4s),
		// counted in its stored bytes.
		for i, t := range []plan.Tensor{kt, vt} {
			if fit := b.maxBindRows(t, []*buffer{kx, vx}[i]); fit < sp.Span {
				sp.Span = fit / tk * tk
			}
		}
		if sp.Span < tk {
			return sp, tooLarge("fused", pr, "one tile of keys exceeds the device's storage binding")
		}
		sp.Chunk = min(sp.Chunk, sp.Span)
	} else if pages := min(b.bindPages(kt, kx), b.bindPages(vt, vx)); pages < pg.Pages {
		// A pool larger than one binding: each sequence's steps find
		// their pages within one window.
		if pages < 1 {
			return sp, backend.Errorf(backend.ErrTooLarge, "gpu: fused: a page of %d keys × %d KV heads × D=%d (Dv=%d) exceeds the device's %d-byte storage binding; use smaller pages",
				pg.PageSize, pr.KVHeads, pr.D, pr.Dv, b.lim.MaxStorageBufferBindingSize)
		}
		sp.Cut = plan.PageCuts(pg, 1, pages)
	}
	sp.Parts = max(1, min(parts, plan.SplitScratch/max(pr.OLen(), 1)))
	return sp, nil
}

// bindPages is how many consecutive pages of a paged K or V (t, stored in
// x's dtype) one storage binding holds, less the alignment of the
// window's start and end.
func (b *Backend) bindPages(t plan.Tensor, x *buffer) int {
	return b.bindElems(x) / max(t.Sb, 1)
}

// blockParams are the Params fields of block mask bm, whose entries
// start at word at of the dispatch's vars with strides (plan.BlockWords);
// without a mask they are 0, unread. Fused's and Backward's kernels take
// them alike.
func blockParams(bm *backend.BlockMask, at int, strides [4]int) shaders.BlockMaskParams {
	if bm == nil {
		return shaders.BlockMaskParams{}
	}
	return shaders.BlockMaskParams{Blk: uint32(at), BlkSize: uint32(bm.Size),
		BlkB: uint32(strides[0]), BlkH: uint32(strides[1]), BlkR: uint32(strides[2]), BlkC: uint32(strides[3])}
}
