//go:build cgo && !nogpu

package gpu

import (
	"context"
	"fmt"
	"math"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/shaders"
)

// This file runs the backward pass: backdelta.wgsl, backkv.wgsl and
// backq.wgsl (Backend.Backward); internal/plan/backward.go sizes them.

// Backward computes attention's gradients (backend.Backwarder) by
// FlashAttention-2's method, with the semantics of the CPU's Backward:
//
//	δ = rowsum(dO∘O)                         backdelta.wgsl, a row an invocation
//	dV += Pᵀ·dO,  dK += scale·dSᵀ·Q          backkv.wgsl, a key an invocation
//	dQ += scale·dS·K                         backq.wgsl, a query row an invocation
//	P = exp(s − LSE),  dS = P∘(dO·Vᵀ − δ)·softcap′
//
// each kernel recomputing the scores it needs from Q, K and the
// forward's LSE, so nothing of Nq×Nk size is ever stored. WebGPU has no
// float atomics: a workgroup of backkv.wgsl owns its keys' rows of dK
// and dV and loops over the query rows of its KV group's query heads,
// one dispatch for each query head of the group (and, under a loop cap,
// each chunk of rows), each adding to what the last left; dQ, dK and dV
// are zeroed first. The sinks' gradients are summed on the host, in
// float64, from each row's term (backdelta.wgsl).
//
// It takes what the CPU's does except that it refuses, before any work
// and with an error wrapping backend.ErrUnsupported that names it, a
// bias, a keep-mask or DBias, packed or paged sequences, strided views,
// index lists, block masks, V from K, K and V scales, and an operand
// that is not Float32 — whatever BackwardParams.Validate accepts.
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
		bp.Rows, bp.Keys = min(bp.Rows, n), min(bp.Keys, n)
	}
	bufs, err := b.begin(ctx, op, arg{"Q", q, false}, arg{"K", k, false}, arg{"V", v, false}, arg{"O", o, false},
		arg{"LSE", lse, false}, arg{"dO", dO, false}, arg{"dQ", dQ, true}, arg{"dK", dK, true}, arg{"dV", dV, true})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	clear(dSinks)
	// The kernels add to dQ, dK and dV: they start at zero. Recorded
	// work that uses them goes first (step.go).
	if err := b.flush(); err != nil {
		return fmt.Errorf("gpu: %s: %w", op, err)
	}
	for i, n := range []int{pr.QLen(), pr.KLen(), pr.VLen()} {
		if x := bufs[6+i]; n > 0 {
			if err := b.fill(x.buf, x.word(0), n, 0); err != nil {
				return fmt.Errorf("gpu: %s: %w", op, err)
			}
		}
	}
	if pr.OLen() == 0 || pr.KLen() == 0 {
		// No query row, or no key: every gradient is zero (a row that
		// sees no key has O = 0, so δ and its sink term are 0).
		return nil
	}
	bc := backwardCall{b: b, pr: pr, bufs: bufs, bp: bp}
	defer bc.release()
	ds, err := bc.dispatches()
	if err != nil {
		return err
	}
	if err := b.run(ctx, nil, op, ds); err != nil {
		return err
	}
	if pr.Sinks == nil {
		return nil
	}
	// dSinks[h] = −Σ exp(sink_h − LSE)·δ over head h's rows of every
	// batch, each row's term from backdelta.wgsl.
	terms := make([]uint32, pr.LSELen())
	if err := b.readWords(terms, bc.sink, 0); err != nil {
		return fmt.Errorf("gpu: %s: %w", op, err)
	}
	sums := make([]float64, pr.H)
	for x, w := range terms {
		sums[x/pr.Nq%pr.H] -= float64(math.Float32frombits(w))
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
		return fmt.Errorf("gpu: backward: %w", err)
	}
	if err := refuseBackward(p, q, k, v, o, lse, dO, dQ, dK, dV, dSinks); err != nil {
		return fmt.Errorf("gpu: backward: %w", err)
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
	case p.Bias != nil:
		return no("bias")
	case p.Keep != nil:
		return no("keep-mask")
	case p.DBias != nil:
		return no("bias gradient (DBias)")
	case p.Packed != nil:
		return no("packed sequences")
	case p.Paged != nil:
		return no("paged K and V")
	case p.Views != nil:
		return no("strided views")
	case p.Indices != nil:
		return no("index lists")
	case p.Blocks != nil:
		return no("block mask")
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
	}{{"Q", q}, {"K", k}, {"V", v}, {"O", o}, {"LSE", lse}, {"dO", dO}, {"dQ", dQ}, {"dK", dK}, {"dV", dV}} {
		if x.buf == nil {
			return backend.Errorf(backend.ErrShape, "%s buffer is nil", x.name)
		}
		if t := x.buf.DType(); t != backend.Float32 {
			return backend.Errorf(backend.ErrUnsupported, "%s is %v: the GPU's backward pass takes float32 operands only", x.name, t)
		}
	}
	return nil
}

// backwardCall is one call of Backward being planned: its operands (Q,
// K, V, O, LSE, dO, dQ, dK, dV, as begin resolved them), its plan and
// its scratch.
type backwardCall struct {
	b           *Backend
	pr          backend.Problem
	bufs        []*buffer
	bp          plan.BackwardPlan
	vars        *varsData
	delta, sink *buffer // each row's δ and sink term, [B, H, Nq]
}

// release frees the call's scratch. The caller holds b.mu.
func (c *backwardCall) release() {
	c.vars.free()
	c.delta.free()
	c.sink.free()
}

// dispatches plans the call: δ (and the sink terms) for every row, then
// dK and dV a query head of each group and a chunk of rows at a time,
// then dQ a chunk of keys at a time.
func (c *backwardCall) dispatches() ([]*dispatch, error) {
	b, pr := c.b, c.pr
	flags := plan.KernelFlags(pr, false, false, false)
	var err error
	if c.vars, err = b.uploadVars(pr, flags&plan.VarsFlags != 0); err != nil {
		return nil, err
	}
	// From the pool: backdelta.wgsl writes every row of both before
	// the other kernels (and the host) read them.
	if c.delta, err = b.pooledScratch(pr.LSELen()); err != nil {
		return nil, err
	}
	if pr.Sinks != nil {
		if c.sink, err = b.pooledScratch(pr.LSELen()); err != nil {
			return nil, err
		}
	}
	ds, err := c.deltaDispatches(flags & shaders.FlagSink)
	if err != nil {
		return nil, err
	}
	// The scores' flags: the key range, the softcap and ALiBi.
	flags &= shaders.FlagRange | shaders.FlagSoftcap | shaders.FlagALiBi
	if ds, err = c.kvDispatches(ds, flags); err != nil {
		return nil, err
	}
	return c.qDispatches(ds, flags)
}

// deltaDispatches are backdelta.wgsl's.
func (c *backwardCall) deltaDispatches(flags shaders.Flag) ([]*dispatch, error) {
	b, pr, bufs := c.b, c.pr, c.bufs
	pipe, err := b.pipeline(shaders.BackDeltaConsts{WG: plan.BackWG, DV: pr.Dv}, "main")
	if err != nil {
		return nil, err
	}
	var prm shaders.BackDeltaParams
	ops := []operand{
		{name: "o", x: bufs[3], t: oTensor(pr), at: &prm.O},
		{name: "dout", x: bufs[5], t: oTensor(pr), at: &prm.Dout},
		{name: "lse", x: bufs[4], t: lseTensor(pr), at: &prm.LSE},
		{name: "delta", x: c.delta, t: lseTensor(pr), out: true, at: &prm.Delta},
		{name: "sink", x: c.sink, t: lseTensor(pr), out: true, at: &prm.Sink},
	}
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
	var ds []*dispatch
	for _, u := range units {
		d := b.unitDispatch(pipe, pr, u, &prm.Unit, ops)
		prm.Flags = flags
		d.setParams(prm)
		b.bindVars(d, c.vars)
		d.grid, d.cost = grid(u), cost(u)
		ds = append(ds, d)
	}
	return ds, nil
}

// kvDispatches appends backkv.wgsl's to ds: for each query head hg of a
// group and each chunk of at most bp.Rows query rows, one pass over
// every key, adding to dK and dV.
func (c *backwardCall) kvDispatches(ds []*dispatch, flags shaders.Flag) ([]*dispatch, error) {
	b, pr, bufs := c.b, c.pr, c.bufs
	pipe, err := b.pipeline(c.bp.KV(pr.D, pr.Dv), "main")
	if err != nil {
		return nil, err
	}
	var prm shaders.BackKVParams
	ops := []operand{
		{name: "q", x: bufs[0], t: qTensor(pr), at: &prm.Q},
		{name: "k", x: bufs[1], t: kTensor(pr), at: &prm.K},
		{name: "v", x: bufs[2], t: vTensor(pr), at: &prm.V},
		{name: "dout", x: bufs[5], t: oTensor(pr), at: &prm.Dout},
		{name: "lse", x: bufs[4], t: lseTensor(pr), at: &prm.LSE},
		{name: "delta", x: c.delta, t: lseTensor(pr), at: &prm.Delta},
		{name: "dk", x: bufs[7], t: kTensor(pr), out: true, at: &prm.DK},
		{name: "dv", x: bufs[8], t: vTensor(pr), out: true, at: &prm.DV},
	}
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
				prm.Scale, prm.Softcap, prm.Flags, prm.HG = pr.Scale, pr.Softcap, flags, uint32(hg)
				d.setParams(prm)
				b.bindVars(d, c.vars)
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
	b, pr, bufs := c.b, c.pr, c.bufs
	pipe, err := b.pipeline(c.bp.Q(pr.D, pr.Dv), "main")
	if err != nil {
		return nil, err
	}
	var prm shaders.BackQParams
	ops := []operand{
		{name: "q", x: bufs[0], t: qTensor(pr), at: &prm.Q},
		{name: "k", x: bufs[1], t: kTensor(pr), at: &prm.K},
		{name: "v", x: bufs[2], t: vTensor(pr), at: &prm.V},
		{name: "dout", x: bufs[5], t: oTensor(pr), at: &prm.Dout},
		{name: "lse", x: bufs[4], t: lseTensor(pr), at: &prm.LSE},
		{name: "delta", x: c.delta, t: lseTensor(pr), at: &prm.Delta},
		{name: "dq", x: bufs[6], t: qTensor(pr), out: true, at: &prm.DQ},
	}
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
			prm.Scale, prm.Softcap, prm.Flags = pr.Scale, pr.Softcap, flags
			d.setParams(prm)
			b.bindVars(d, c.vars)
			d.grid, d.cost = grid(u), cost(u)
			ds = append(ds, d)
		}
	}
	return ds, nil
}

var _ backend.Backwarder = (*Backend)(nil)
