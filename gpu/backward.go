//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"
	"fmt"
	"math"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file runs the backward pass: backdelta.wgsl, backkv.wgsl and
// backq.wgsl (Backend.Backward), or under an index list backidxkv.wgsl
// and backidxq.wgsl (backward_indices.go); internal/plan/backward.go
// sizes them.

// Backward computes attention's gradients (backend.Backwarder) by
// FlashAttention-2's method, with the semantics of the CPU's Backward:
//
//	δ = rowsum(dO∘O)                         backdelta.wgsl, a row an invocation
//	dV += Pᵀ·dO,  dK += scale·dSᵀ·Q          backkv.wgsl, a key an invocation (or L: LanesKV)
//	dQ += scale·dS·K                         backq.wgsl, a query row an invocation (or L: LanesQ)
//	dBias += dS (over its broadcast dims)    backbias.wgsl, an element an invocation
//	P = exp(s − LSE),  dS = P∘(dO·Vᵀ − δ)·softcap′
//
// each kernel recomputing the scores it needs from Q, K (and the bias,
// keep-mask and block mask, as the forward applies them) and the
// forward's LSE, so nothing of Nq×Nk size is ever stored. An off block
// of a block mask has P = 0 (its keys get no gradient from its rows),
// and backkv.wgsl and backq.wgsl load no tile of rows or keys whose
// blocks with the workgroup's keys or rows are all off. WebGPU has no float atomics: a
// workgroup of backkv.wgsl owns its keys' rows of dK and dV and loops
// over the query rows of its KV group's query heads, one dispatch for
// each query head of the group (and, under a loop cap, each chunk of
// rows), each adding to what the last left; backbias.wgsl's invocation
// owns an element of dBias and sums its terms, a chunk of them a
// dispatch. dQ, dK, dV and dBias are zeroed first; a half dQ, dK or dV
// is summed in a float32 scratch of its size and rounded once at the
// end (pack.wgsl). The sinks' gradients are summed on the host, in
// float64, from each row's term (backdelta.wgsl).
//
// It takes what the CPU's does: dense or packed sequences, a bias (and
// DBias), a keep-mask, a block mask (Caps.BackwardBlocks), an index list
// (Caps.BackwardIndices: backidxkv.wgsl and backidxq.wgsl in place of
// backkv.wgsl and backq.wgsl, backward_indices.go), and Float32,
// Float16 or BFloat16 operands. It refuses, before any work and with an
// error wrapping backend.ErrUnsupported that names it, paged sequences,
// strided views, V from K, K and V scales and quantized operands —
// whatever BackwardParams.Validate accepts.
func (b *Backend) Backward(ctx context.Context, p backend.BackwardParams, q, k, v, o, lse, dO, dQ, dK, dV backend.Buffer, dSinks []float32) error {
	const op = "backward"
	if err := b.CheckBackward(p, q, k, v, o, lse, dO, dQ, dK, dV, dSinks); err != nil {
		return err
	}
	p.Problem = p.Problem.Resolved()
	pr := p.Problem
	if err := plan.CheckVars(op, pr); err != nil {
		return err
	}
	bp, ok := b.aplan.Backward(int(b.lim.MaxComputeWorkgroupStorageSize), pr.D, pr.Dv)
	if !ok {
		return backend.Errorf(backend.ErrUnsupported, "gpu: %s: head dims D=%d Dv=%d do not fit the backward kernels in the device's %d bytes of workgroup memory",
			op, pr.D, pr.Dv, b.lim.MaxComputeWorkgroupStorageSize)
	}
	if n := backwardChunks; n > 0 {
		bp.Rows, bp.Keys, bp.Terms = min(bp.Rows, n), min(bp.Keys, n), min(bp.Terms, n)
	}
	bufs, err := b.begin(ctx, op, arg{"Q", q, false}, arg{"K", k, false}, arg{"V", v, false}, arg{"O", o, false},
		arg{"LSE", lse, false}, arg{"dO", dO, false}, arg{"bias", p.Bias.Buffer(), false}, arg{"mask", p.Keep.Buffer(), false},
		arg{"dQ", dQ, true}, arg{"dK", dK, true}, arg{"dV", dV, true}, arg{"dBias", p.DBias.Buffer(), true})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	clear(dSinks)
	// The kernels add to dQ, dK, dV and dBias: they start at zero.
	// Recorded work that uses them goes first (step.go).
	if err := b.flush(); err != nil {
		return backend.Wrapf(err, "gpu: %s", op)
	}
	bc := backwardCall{b: b, p: p, pr: pr, bufs: bufs, bp: bp}
	defer bc.release()
	if err := bc.zero(); err != nil {
		return backend.Wrapf(err, "gpu: %s", op)
	}
	var ds []*dispatch
	// No query row, or no key: every gradient is zero (a row that sees
	// no key has O = 0, so δ and its sink term are 0).
	if pr.OLen() > 0 && pr.KLen() > 0 {
		if ds, err = bc.dispatches(); err != nil {
			return err
		}
	}
	// A half dQ, dK or dV is rounded from its float32 sums.
	for i, n := range []int{pr.QLen(), pr.KLen(), pr.VLen()} {
		if ds, err = b.packOut(ds, []*buffer{bc.dq, bc.dk, bc.dv}[i], bufs[8+i], n); err != nil {
			return err
		}
	}
	if len(ds) == 0 {
		return nil
	}
	if err := b.run(ctx, nil, op, ds); err != nil {
		return err
	}
	if pr.Sinks == nil || bc.sink == nil {
		return nil
	}
	// dSinks[h] = −Σ exp(sink_h − LSE)·δ over head h's rows of every
	// batch, each row's term from backdelta.wgsl, laid out as the LSE:
	// [B, H, Nq], or [H, total rows] when packed.
	terms := make([]uint32, pr.LSELen())
	if err := b.readWords(terms, bc.sink, 0); err != nil {
		return backend.Wrapf(err, "gpu: %s", op)
	}
	sums := make([]float64, pr.H)
	for x, w := range terms {
		h := x / pr.Nq % pr.H
		if pr.Packed != nil {
			h = x / pr.TotalQ()
		}
		sums[h] -= float64(math.Float32frombits(w))
	}
	for h, s := range sums {
		dSinks[h] = float32(s)
	}
	return nil
}

// CheckBackward checks a Backward call (backend.Backwarder):
// p.Validate, then what the GPU's Backward refuses (refuseBackward).
func (b *Backend) CheckBackward(p backend.BackwardParams, q, k, v, o, lse, dO, dQ, dK, dV backend.Buffer, dSinks []float32) error {
	if err := p.Validate(q, k, v, o, lse, dO, dQ, dK, dV, dSinks); err != nil {
		return backend.Wrapf(err, "gpu: backward")
	}
	if err := refuseBackward(p, q, k, v, o, lse, dO, dQ, dK, dV, dSinks); err != nil {
		return backend.Wrapf(err, "gpu: backward")
	}
	return nil
}

// backwardChunks, when above 0, bounds the query rows of a backkv.wgsl
// dispatch and the keys of a backq.wgsl one (tests: export_test.go), so
// that small problems run the many dispatches whose sums a loop cap
// makes of large ones.
var backwardChunks int

// refuseBackward refuses, naming it, what Backward does not compute,
// whatever p.Validate accepted.
func refuseBackward(p backend.BackwardParams, q, k, v, o, lse, dO, dQ, dK, dV backend.Buffer, dSinks []float32) error {
	no := func(what string) error {
		return backend.Errorf(backend.ErrUnsupported, "the GPU's backward pass takes no %s (B=%d H=%d Nq=%d Nk=%d D=%d Dv=%d)",
			what, p.B, p.H, p.Nq, p.Nk, p.D, p.Dv)
	}
	switch {
	case p.Paged != nil:
		return no("paged K and V")
	case p.Views != nil:
		return no("strided views")
	case p.VFromK:
		return no("V from K")
	case p.Scales != nil:
		return no("K and V scales")
	case p.Sinks != nil && len(dSinks) != p.H:
		return backend.Errorf(backend.ErrShape, "dSinks has %d values for H=%d sinks", len(dSinks), p.H)
	}
	for _, x := range []struct {
		name string
		buf  backend.Buffer
	}{{"Q", q}, {"K", k}, {"V", v}, {"O", o}, {"LSE", lse}, {"dO", dO}, {"dQ", dQ}, {"dK", dK}, {"dV", dV}, {"bias", p.Bias.Buffer()}} {
		if x.buf == nil {
			if x.name == "bias" {
				continue
			}
			return backend.Errorf(backend.ErrShape, "%s buffer is nil", x.name)
		}
		if t := x.buf.DType(); t.Quantized() || (x.name == "LSE" && t != backend.Float32) {
			return backend.Errorf(backend.ErrUnsupported, "%s is %v: the GPU's backward pass takes Float32, Float16 and BFloat16 operands (a Float32 LSE)", x.name, t)
		}
	}
	for _, m := range []struct {
		name string
		m    *backend.Mask
	}{{"keep-mask", p.Keep}, {"DBias", p.DBias}} {
		if m.m != nil && m.m.Buf != nil && m.m.Buf.DType() != backend.Float32 {
			return backend.Errorf(backend.ErrUnsupported, "%s is %v: the GPU's backward pass takes a Float32 %s", m.name, m.m.Buf.DType(), m.name)
		}
	}
	return nil
}

// backwardCall is one call of Backward being planned: its operands (Q,
// K, V, O, LSE, dO, bias, keep, dQ, dK, dV, dBias, as begin resolved
// them), its plan and its scratch.
type backwardCall struct {
	b    *Backend
	p    backend.BackwardParams
	pr   backend.Problem
	bufs []*buffer
	bp   plan.BackwardPlan
	// vars is what the call makes for its kernels, in one buffer that
	// they bind as vars (lib/backvars.wgsl), so that none binds more
	// than WebGPU's default of 8 storage buffers: the variant data (the
	// sequences, the block mask) from word 0, each query row's LSE and
	// δ (backdelta.wgsl writes them) from word ld, and under a keep-mask
	// its copy from word keep.
	vars       *buffer
	ld, keep   int
	seqAt      int     // where the per-sequence data start in vars (plan.SeqsLayout)
	blkAt      int     // where the block mask starts in vars (under FlagBlocks)
	blkStrides [4]int  // its strides (plan.BlockWords)
	sink       *buffer // each row's sink term, as the LSE
	// rowList and colList are an index list's lists for backidxq.wgsl
	// and backidxkv.wgsl (plan.BackwardIndexLists).
	rowList, colList *buffer
	// dq, dk and dv are where the kernels sum dQ, dK and dV: the
	// outputs, or float32 scratch that pack.wgsl rounds into a half one
	// at the end (gpu/half.go).
	dq, dk, dv *buffer
	frees      []func()
}

// release frees the call's scratch. The caller holds b.mu.
func (c *backwardCall) release() {
	c.vars.free()
	c.sink.free()
	c.rowList.free()
	c.colList.free()
	for _, f := range c.frees {
		f()
	}
}

// zero sets where the kernels sum dQ, dK, dV and dBias to zero. The
// caller holds b.mu.
func (c *backwardCall) zero() error {
	b, pr := c.b, c.pr
	for i, x := range []**buffer{&c.dq, &c.dk, &c.dv} {
		n := []int{pr.QLen(), pr.KLen(), pr.VLen()}[i]
		out, release, err := b.float32Out(c.bufs[8+i], n)
		if err != nil {
			return err
		}
		*x = out
		c.frees = append(c.frees, release)
		if n > 0 {
			if err := b.fill(out.buf, out.word(0), n, 0); err != nil {
				return err
			}
		}
	}
	if db := c.bufs[11]; db != nil {
		if n := c.p.DBias.Len(); n > 0 {
			return b.fill(db.buf, db.word(0), n, 0)
		}
	}
	return nil
}

// dispatches plans the call's kernels: δ (and the sink terms) for every
// row, then dK and dV a query head of each group and a chunk of rows at
// a time, then dQ a chunk of keys at a time, then dBias.
func (c *backwardCall) dispatches() ([]*dispatch, error) {
	b, pr := c.b, c.pr
	flags := plan.KernelFlags(pr, c.p.Bias != nil, c.p.Keep != nil, false)
	ds, err := c.makeVars(flags)
	if err != nil {
		return nil, err
	}
	// From the pool: backdelta.wgsl writes every row before the host
	// reads them.
	if pr.Sinks != nil {
		if c.sink, err = b.pooledScratch(pr.LSELen()); err != nil {
			return nil, err
		}
	}
	if ds, err = c.deltaDispatches(ds, flags&(shaders.FlagSink|shaders.FlagPackQ)); err != nil {
		return nil, err
	}
	if pr.Indices != nil {
		// The index kernels' flags: each batch's key count, the
		// softcap and the sequences.
		return c.indexDispatches(ds, flags&(shaders.FlagRange|shaders.FlagSoftcap|shaders.FlagPackQ|shaders.FlagPackK))
	}
	// The scores' flags: the key range, the softcap, ALiBi, the masks
	// (the block mask's too) and the sequences.
	flags &= shaders.FlagRange | shaders.FlagSoftcap | shaders.FlagALiBi | shaders.FlagBias | shaders.FlagKeep |
		shaders.FlagPackQ | shaders.FlagPackK | shaders.FlagBlocks
	if ds, err = c.kvDispatches(ds, flags); err != nil {
		return nil, err
	}
	if ds, err = c.qDispatches(ds, flags); err != nil {
		return nil, err
	}
	if c.p.DBias != nil {
		return c.biasDispatches(ds, flags)
	}
	return ds, nil
}

// elems sets a backward kernel's Spec to the dtypes of Q, K, V, dO and
// the bias as stored, and its F16 mode as the plan says (UsesF16).
func (c *backwardCall) elems(q, k, v, dout, bias *shaders.Elem, f16 *bool) {
	b := c.bufs
	*q, *k, *v, *dout, *bias = elem(b[0]), elem(b[1]), elem(b[2]), elem(b[5]), elem(b[6])
	*f16 = c.bp.UsesF16(*q, *k, *v, *dout, *bias)
}

// makeVars lays out and fills the call's vars buffer (backwardCall.vars):
// the variant data written from the host, the rows' pairs left to
// backdelta.wgsl, and the keep-mask copied by the dispatches it returns,
// which go first. The whole must fit one storage binding.
func (c *backwardCall) makeVars(flags shaders.Flag) ([]*dispatch, error) {
	b, pr := c.b, c.pr
	var words []uint32
	if flags&plan.VarsFlags != 0 {
		words, c.seqAt, _ = plan.SeqsLayout(pr)
		if pr.Blocks != nil {
			c.blkAt = len(words)
			var bw []uint32
			bw, c.blkStrides = plan.BlockWords(pr, pr.Blocks)
			words = append(words, bw...)
		}
	}
	keep := 0
	if c.p.Keep != nil {
		keep = c.p.Keep.Len()
	}
	c.ld = len(words)
	c.keep = c.ld + 2*pr.LSELen()
	n := c.keep + keep
	if uint64(n)*4 > b.lim.MaxStorageBufferBindingSize {
		return nil, tooLarge("backward", pr, fmt.Sprintf("the backward's vars, %d words of variant data, 2 for each of %d query rows and %d of the keep-mask (%d bytes), exceed the device's %d-byte storage binding",
			len(words), pr.LSELen(), keep, uint64(n)*4, b.lim.MaxStorageBufferBindingSize))
	}
	var err error
	if c.vars, err = b.pooledScratch(n); err != nil {
		return nil, err
	}
	if len(words) > 0 {
		if err := b.writeWords(c.vars.buf, 0, words); err != nil {
			return nil, err
		}
	}
	if keep == 0 {
		return nil, nil
	}
	ds, err := b.copyRanges(c.vars, c.bufs[7], []backend.CopyRange{{Dst: c.keep, Src: 0, N: keep}})
	if err != nil {
		return nil, backend.Wrapf(err, "gpu: backward: the keep-mask's copy")
	}
	return ds, nil
}

// bindVars binds the call's vars buffer for d, the words it holds.
func (c *backwardCall) bindVars(d *dispatch) {
	d.bind("vars", c.vars.buf, 0, c.vars.wordBytes())
}

// rows is where the rows' LSE and δ lie in vars: pairs of words laid out
// as the LSE's elements are.
func (c *backwardCall) rows() shaders.VarsRows {
	t := lseTensor(c.pr)
	return shaders.VarsRows{At: uint32(c.ld), B: uint32(2 * t.Sb), H: uint32(2 * t.Sh), R: uint32(2 * t.Sr)}
}

// keepMask is where the keep-mask's copy lies in vars (zero without
// one: the kernels read it only under FlagKeep).
func (c *backwardCall) keepMask() shaders.VarsMask {
	if c.p.Keep == nil {
		return shaders.VarsMask{}
	}
	s := c.p.Keep.Strides()
	return shaders.VarsMask{At: uint32(c.keep), B: uint32(s[0]), H: uint32(s[1]), R: uint32(s[2]), C: uint32(s[3])}
}

// inputOps are the operands backkv.wgsl, backq.wgsl and backbias.wgsl
// all read from the caller's buffers, Q, K, V and dO, each bound at its
// Params tensor.
func (c *backwardCall) inputOps(q, k, v, dout *shaders.Tensor) []operand {
	pr, b := c.pr, c.bufs
	return []operand{
		{name: "q", x: b[0], t: qTensor(pr), at: q},
		{name: "k", x: b[1], t: kTensor(pr), at: k},
		{name: "v", x: b[2], t: vTensor(pr), at: v},
		{name: "dout", x: b[5], t: oTensor(pr), at: dout},
	}
}

// biasOp is the bias operand of a kernel whose Params holds it at bias.
func (c *backwardCall) biasOp(bias *shaders.Mask) operand {
	op := operand{name: "bias", x: c.bufs[6], mask: bias}
	if c.p.Bias != nil {
		op.t = maskTensor(c.p.Bias)
	}
	return op
}

// deltaDispatches appends backdelta.wgsl's to ds.
func (c *backwardCall) deltaDispatches(ds []*dispatch, flags shaders.Flag) ([]*dispatch, error) {
	b, pr, bufs := c.b, c.pr, c.bufs
	o, dout := elem(bufs[3]), elem(bufs[5])
	pipe, err := b.pipeline(shaders.BackDeltaConsts{WG: plan.BackWG, DV: pr.Dv, O: o, Dout: dout, F16: c.bp.UsesF16(o, dout)}, "main")
	if err != nil {
		return nil, err
	}
	var prm shaders.BackDeltaParams
	ops := []operand{
		{name: "o", x: bufs[3], t: oTensor(pr), at: &prm.O},
		{name: "dout", x: bufs[5], t: oTensor(pr), at: &prm.Dout},
		{name: "lse", x: bufs[4], t: lseTensor(pr), at: &prm.LSE},
		{name: "sink", x: c.sink, t: lseTensor(pr), out: true, at: &prm.Sink},
	}
	prm.LD = c.rows()
	grid := func(u plan.Unit) [3]int {
		return [3]int{plan.CeilDiv(u.I1-u.I0, plan.BackWG), u.Bh1 - u.Bh0, 1}
	}
	cost := func(u plan.Unit) float64 {
		return 2 * float64(u.Bh1-u.Bh0) * float64(u.I1-u.I0) * float64(pr.Dv)
	}
	units, err := b.plan("backward", pr, plan.Unit{Bh0: 0, Bh1: pr.B * pr.H, I0: 0, I1: pr.Nq},
		plan.Splitter{RowAlign: plan.BackWG}, ops, grid, cost)
	if err != nil {
		return nil, err
	}
	for _, u := range units {
		d := b.unitDispatch(pipe, pr, u, &prm.Unit, ops)
		prm.Flags, prm.Seq = flags, uint32(c.seqAt)
		d.setParams(prm)
		c.bindVars(d)
		d.grid, d.cost = grid(u), cost(u)
		ds = append(ds, d)
	}
	return ds, nil
}

// kvDispatches appends backkv.wgsl's to ds: for each query head hg of a
// group and each chunk of at most bp.Rows query rows, one pass over
// every key, adding to dK and dV.
func (c *backwardCall) kvDispatches(ds []*dispatch, flags shaders.Flag) ([]*dispatch, error) {
	b, pr := c.b, c.pr
	spec := c.bp.KV(pr.D, pr.Dv)
	c.elems(&spec.Q, &spec.K, &spec.V, &spec.Dout, &spec.Bias, &spec.F16)
	pipe, err := b.pipeline(spec, "main")
	if err != nil {
		return nil, err
	}
	var prm shaders.BackKVParams
	prm.BlockMaskParams = blockParams(c.pr.Blocks, c.blkAt, c.blkStrides)
	prm.LD, prm.Keep = c.rows(), c.keepMask()
	ops := append(c.inputOps(&prm.Q, &prm.K, &prm.V, &prm.Dout),
		operand{name: "dk", x: c.dk, t: kTensor(pr), out: true, at: &prm.DK},
		operand{name: "dv", x: c.dv, t: vTensor(pr), out: true, at: &prm.DV},
		c.biasOp(&prm.Bias))
	g := pr.Group()
	grid := func(u plan.Unit) [3]int {
		return [3]int{plan.CeilDiv(u.J1-u.J0, plan.BackWG), (u.Bh1 - u.Bh0) / g, 1}
	}
	cost := func(u plan.Unit) float64 {
		return 4 * float64(pr.D+pr.Dv) * float64((u.Bh1-u.Bh0)/g) * float64(u.I1-u.I0) * float64(u.J1-u.J0)
	}
	for hg := range g {
		for _, rc := range plan.Chunks(pr.Nq, c.bp.Rows) {
			units, err := b.plan("backward", pr, plan.Unit{Bh0: 0, Bh1: pr.B * pr.H, I0: rc[0], I1: rc[1], J0: 0, J1: pr.Nk},
				plan.Splitter{HeadAlign: g, RowAlign: c.bp.TQ, KeyAlign: plan.BackWG, SplitKeys: true}, ops, grid, cost)
			if err != nil {
				return nil, err
			}
			for _, u := range units {
				d := b.unitDispatch(pipe, pr, u, &prm.Unit, ops)
				prm.Scale, prm.Softcap, prm.Flags, prm.HG, prm.Seq = pr.Scale, pr.Softcap, flags, uint32(hg), uint32(c.seqAt)
				d.setParams(prm)
				c.bindVars(d)
				d.grid, d.cost = grid(u), cost(u)
				ds = append(ds, d)
			}
		}
	}
	return ds, nil
}

// qDispatches appends backq.wgsl's to ds: for each chunk of at most
// bp.Keys keys, one pass over every query row, adding to dQ.
func (c *backwardCall) qDispatches(ds []*dispatch, flags shaders.Flag) ([]*dispatch, error) {
	b, pr := c.b, c.pr
	spec := c.bp.Q(pr.D, pr.Dv)
	c.elems(&spec.Q, &spec.K, &spec.V, &spec.Dout, &spec.Bias, &spec.F16)
	pipe, err := b.pipeline(spec, "main")
	if err != nil {
		return nil, err
	}
	var prm shaders.BackQParams
	prm.BlockMaskParams = blockParams(c.pr.Blocks, c.blkAt, c.blkStrides)
	prm.LD, prm.Keep = c.rows(), c.keepMask()
	ops := append(c.inputOps(&prm.Q, &prm.K, &prm.V, &prm.Dout),
		operand{name: "dq", x: c.dq, t: qTensor(pr), out: true, at: &prm.DQ},
		c.biasOp(&prm.Bias))
	grid := func(u plan.Unit) [3]int {
		return [3]int{plan.CeilDiv(u.I1-u.I0, plan.BackWG), u.Bh1 - u.Bh0, 1}
	}
	cost := func(u plan.Unit) float64 {
		return 2 * float64(2*pr.D+pr.Dv) * float64(u.Bh1-u.Bh0) * float64(u.I1-u.I0) * float64(u.J1-u.J0)
	}
	for _, kc := range plan.Chunks(pr.Nk, c.bp.Keys) {
		units, err := b.plan("backward", pr, plan.Unit{Bh0: 0, Bh1: pr.B * pr.H, I0: 0, I1: pr.Nq, J0: kc[0], J1: kc[1]},
			plan.Splitter{RowAlign: plan.BackWG, KeyAlign: c.bp.TK, SplitKeys: true}, ops, grid, cost)
		if err != nil {
			return nil, err
		}
		for _, u := range units {
			d := b.unitDispatch(pipe, pr, u, &prm.Unit, ops)
			prm.Scale, prm.Softcap, prm.Flags, prm.Seq = pr.Scale, pr.Softcap, flags, uint32(c.seqAt)
			d.setParams(prm)
			c.bindVars(d)
			d.grid, d.cost = grid(u), cost(u)
			ds = append(ds, d)
		}
	}
	return ds, nil
}

// biasDispatches appends backbias.wgsl's to ds: for each run of dBias's
// elements that one grid holds and each chunk of at most bp.Terms of
// their terms (the (b, h, i, j) its broadcast dimensions sum over), one
// dispatch adding them. Its operands are bound whole: a problem whose
// Q, K, V, dO or masks exceed one binding is refused (ErrTooLarge).
func (c *backwardCall) biasDispatches(ds []*dispatch, flags shaders.Flag) ([]*dispatch, error) {
	b, pr, bufs := c.b, c.pr, c.bufs
	spec := c.bp.Bias(pr.D, pr.Dv)
	c.elems(&spec.Q, &spec.K, &spec.V, &spec.Dout, &spec.Bias, &spec.F16)
	pipe, err := b.pipeline(spec, "main")
	if err != nil {
		return nil, err
	}
	var prm shaders.BackBiasParams
	prm.BlockMaskParams = blockParams(c.pr.Blocks, c.blkAt, c.blkStrides)
	prm.LD, prm.Keep = c.rows(), c.keepMask()
	ops := append(c.inputOps(&prm.Q, &prm.K, &prm.V, &prm.Dout),
		operand{name: "dbias", x: bufs[11], t: maskTensor(c.p.DBias), out: true, mask: &prm.DBias},
		c.biasOp(&prm.Bias))
	all := plan.Unit{Bh0: 0, Bh1: pr.B * pr.H, I0: 0, I1: pr.Nq, J0: 0, J1: pr.Nk}
	if !b.bindOperands(nil, all, pr.H, pr.Group(), ops) {
		return nil, tooLarge("backward", pr, fmt.Sprintf("dBias needs Q, K, V, dO and the masks each within one %d-byte storage binding", b.lim.MaxStorageBufferBindingSize))
	}
	shape := c.p.DBias.Shape
	full := [4]int{pr.B, pr.H, pr.Nq, pr.Nk}
	elems, terms := 1, 1
	for d, n := range shape {
		elems *= n
		if n == 1 {
			terms *= full[d]
		}
	}
	if elems >= math.MaxUint32 || terms >= math.MaxUint32 {
		return nil, tooLarge("backward", pr, fmt.Sprintf("dBias of shape %v sums %d terms into each of %d elements, past the kernel's 32-bit counts", shape, terms, elems))
	}
	// A dispatch's elements fill at most one grid dimension, and its
	// work stays within a submission's budget.
	perE := min(elems, plan.BackWG*int(b.lim.MaxComputeWorkgroupsPerDimension))
	perU := max(1, min(terms, c.bp.Terms, int(b.budget/(float64(perE)*float64(2*pr.D+2*pr.Dv)))))
	for _, ec := range plan.Chunks(elems, perE) {
		for _, uc := range plan.Chunks(terms, perU) {
			d := b.unitDispatch(pipe, pr, all, &prm.Unit, ops)
			prm.Scale, prm.Softcap, prm.Flags, prm.Seq = pr.Scale, pr.Softcap, flags, uint32(c.seqAt)
			prm.E0, prm.E1, prm.U0, prm.U1 = uint32(ec[0]), uint32(ec[1]), uint32(uc[0]), uint32(uc[1])
			prm.SB, prm.SH, prm.SQ, prm.SK = uint32(shape[0]), uint32(shape[1]), uint32(shape[2]), uint32(shape[3])
			d.setParams(prm)
			c.bindVars(d)
			d.grid = [3]int{plan.CeilDiv(ec[1]-ec[0], plan.BackWG), 1, 1}
			d.cost = float64(ec[1]-ec[0]) * float64(uc[1]-uc[0]) * float64(2*pr.D+2*pr.Dv)
			ds = append(ds, d)
		}
	}
	return ds, nil
}

var _ backend.Backwarder = (*Backend)(nil)
