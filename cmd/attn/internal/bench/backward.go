package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// The strategies of the backward pass's points (Config.Backward): the
// backward alone, from the forward's O and LSE, and the training step's
// whole attention, the fused forward with its LSE then the backward.
const (
	StrategyBackward = "backward"
	StrategyFwdBwd   = "fused+backward"
)

// backwardWork is the backward's work in forwards': five matrix
// products to the forward's two.
const backwardWork = 2.5

// backwardBytes is the compulsory traffic of a backward point: Q, K, V,
// O, dO and the LSE read and dQ, dK and dV written, each in its dtype
// (Q, O, dO and dQ in qoType(dt), K, V, dK and dV in dt, the LSE
// float32), and with the forward (withForward) the forward's too: Q, K
// and V read again, O and the LSE written.
func backwardBytes(p backend.Problem, dt backend.DType, withForward bool) int64 {
	qo := qoType(dt)
	q, o := qo.Bytes(p.QLen()), qo.Bytes(p.OLen())
	kv := dt.Bytes(p.KLen()) + dt.Bytes(p.VLen())
	lse := backend.Float32.Bytes(p.LSELen())
	n := 2*q + 2*kv + 2*o + lse
	if withForward {
		n += q + kv + o + lse
	}
	return n
}

// Work is how many forwards' FLOPs a point of strategy s does: 2.5 for
// the backward pass (Q·Kᵀ again, dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K and
// dK = dSᵀ·Q: five products to the forward's two), 3.5 for the forward
// and backward, else 1. A point's GFLOPS and roofline count them.
func Work(strategy string) float64 {
	switch strategy {
	case StrategyBackward:
		return backwardWork
	case StrategyFwdBwd:
		return 1 + backwardWork
	}
	return 1
}

// backwardStrategy reports whether s names a backward point.
func backwardStrategy(s string) bool { return s == StrategyBackward || s == StrategyFwdBwd }

// measureBackward times be's backward pass (backend.Backwarder) on in's
// problem: O and the LSE computed once by Fused, dO random (fixed seed),
// then the backward alone, or with withForward the forward and the
// backward, each run ended by Sync. With cfg.CheckRows > 0 the gradients
// of the last run are then compared with the float64 reference
// (gradCheck); a backend without a backward pass, or a dtype it does not
// take, makes the point unavailable.
func measureBackward(ctx context.Context, be backend.Backend, withForward bool, in *inputs, cfg *Config) Point {
	p := in.p
	strategy := StrategyBackward
	if withForward {
		strategy = StrategyFwdBwd
	}
	pt := attnPoint(be, strategy, p)
	pt.DType = dtypeName(in.dt)
	bw, ok := be.(backend.Backwarder)
	if !ok {
		pt.fail(backend.Errorf(backend.ErrUnsupported, "the %s backend has no backward pass", be.Name()))
		return pt
	}
	var need int64
	if inHostMemory(be.Info()) {
		need = BytesOf(p, in.dt, false) * 2
	}
	if err := fits(need); err != nil {
		pt.fail(err)
		return pt
	}
	// dO, and the reference of the gradient a check compares, before the
	// inputs are uploaded (and, with in.consume, dropped) and before the
	// point's peak memory starts.
	qo := qoType(in.dt)
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(p.OLen())))
	dOut := make([]float32, p.OLen())
	for i := range dOut {
		dOut[i] = qo.Round(float32(rng.Float64()*2 - 1))
	}
	budget := gradCheckBudget
	if cfg.gradBudget > 0 {
		budget = cfg.gradBudget
	}
	check := newGradCheck(in, dOut, cfg.CheckRows, budget)
	peaks := startPeaks(be)
	var bufs []backend.Buffer
	defer func() {
		for _, b := range bufs {
			b.Release()
		}
	}()
	var err error
	alloc := func(dt backend.DType, n int, data []float32) backend.Buffer {
		if err != nil {
			return nil
		}
		var b backend.Buffer
		if b, err = be.Alloc(dt, n); err != nil {
			return nil
		}
		bufs = append(bufs, b)
		if data != nil {
			err = be.Write(b, 0, data)
		}
		return b
	}
	// An input's host copy goes as soon as it is uploaded when the point
	// is the process's only one (in.consume), so that the peak RSS is the
	// backward's: its nine buffers and its scratch.
	consumed := func(x *[]float32) {
		if in.consume {
			*x = nil
			runtime.GC()
			debug.FreeOSMemory()
		}
	}
	q := alloc(qo, p.QLen(), in.q)
	consumed(&in.q)
	k := alloc(in.dt, p.KLen(), in.k)
	consumed(&in.k)
	v := alloc(in.dt, p.VLen(), in.v)
	consumed(&in.v)
	do := alloc(qo, p.OLen(), dOut)
	dOut = nil
	runtime.GC()
	debug.FreeOSMemory()
	o, lse := alloc(qo, p.OLen(), nil), alloc(backend.Float32, p.LSELen(), nil)
	dq, dk, dv := alloc(qo, p.QLen(), nil), alloc(in.dt, p.KLen(), nil), alloc(in.dt, p.VLen(), nil)
	if err != nil {
		pt.fail(err)
		return pt
	}
	var dSinks []float32
	if p.Sinks != nil {
		dSinks = make([]float32, p.H)
	}
	fp, bp := backend.FusedParams{Problem: p}, backend.BackwardParams{Problem: p}
	// What the backward pass does not take (an 8-bit K or V) is
	// refused before the forward runs.
	if err := bw.CheckBackward(bp, q, k, v, o, lse, do, dq, dk, dv, dSinks); err != nil {
		pt.fail(err)
		return pt
	}
	if err := be.Fused(ctx, fp, q, k, v, o, lse); err != nil {
		pt.fail(err)
		return pt
	}
	op := func(ctx context.Context) error {
		if withForward {
			if err := be.Fused(ctx, fp, q, k, v, o, lse); err != nil {
				return err
			}
		}
		if err := bw.Backward(ctx, bp, q, k, v, o, lse, do, dq, dk, dv, dSinks); err != nil {
			return err
		}
		return be.Sync()
	}
	dt := startDeviceTime(be)
	if dt != nil {
		defer dt.stop()
	}
	warmup, times, err := timeRuns(ctx, op, cfg.Budget, cfg.MinRuns, dt.read)
	if err != nil {
		pt.fail(fmt.Errorf("%s: %w", strategy, err))
		return pt
	}
	pt.setTimes(warmup, times, p, in.dt, false)
	pt.GFLOPS *= Work(strategy)
	pt.Bytes = backwardBytes(p, in.dt, withForward)
	pt.GBPS = float64(pt.Bytes) / pt.MedianS / 1e9
	dt.set(&pt)
	if err := check.check(&pt, be, dq, dk, dv); err != nil {
		pt.fail(fmt.Errorf("reading the gradients back: %w", err))
		return pt
	}
	peaks(&pt)
	return pt
}

// gradCheckBudget bounds the float64 work of a backward point's check,
// in attended (query, key) pairs times D + Dv: about half a second of
// backendtest.ReferenceGrad's plain loops.
const gradCheckBudget = 1 << 27

// A gradCheck compares a backward point's gradients with the float64
// reference (backendtest.ReferenceGrad) on one KV group of one batch,
// the last (its last query row, which sees every key of a causal
// problem, included): a problem of that batch alone, with that group's
// query heads and its KV head, whose gradients are the point's. dK and
// dV sum over every query row, so they are checked where the group's
// reference fits gradCheckBudget; past it, as the forward's check
// samples rows, dQ alone of the group's last rows (at most CheckRows of
// them), whose positions a problem of those rows keeps (bottom-right
// alignment, or CausalOffset moved by the rows left out) and whose
// gradient depends on no other row.
type gradCheck struct {
	p      backend.Problem // the whole point's
	b, g   int             // the batch and KV group checked
	rows   int             // the group's last rows checked
	whole  bool            // rows are all of them: dK and dV are checked too
	want   backendtest.Grads
	limit  float64 // the relative error past which the point is wrong
	checks int     // query rows checked, over the group's heads
}

// newGradCheck is the check of a backward point on in's problem with
// gradient dO within budget (gradCheckBudget's unit), its reference
// computed now from in's inputs (which measureBackward may drop once
// uploaded); nil when checkRows is 0, and for a problem the backward
// pass refuses (8-bit K and V, an index list, a block mask, V from K).
func newGradCheck(in *inputs, dO []float32, checkRows, budget int) *gradCheck {
	p := in.p.Resolved()
	// What ReferenceGrad does not cover the backward pass refuses.
	covered := p.Paged == nil && p.Packed == nil && p.Indices == nil && p.Blocks == nil && !p.VFromK && !in.dt.Quantized()
	if checkRows <= 0 || !covered || p.B == 0 || p.Nq == 0 || p.Nk == 0 {
		return nil
	}
	gh := p.H / p.KVHeads
	c := &gradCheck{p: p, b: p.B - 1, g: p.KVHeads - 1, rows: p.Nq, whole: true}
	if cost := gh * p.Nq * p.Nk * (p.D + p.Dv); cost > budget {
		c.rows = min(checkRows, max(1, budget/(gh*p.Nk*(p.D+p.Dv))), p.Nq)
		c.whole = false
	}
	qo := qoType(in.dt)
	c.limit = max(wrongErr(in.dt), backendtest.GradTol(backendtest.DTypes{Q: qo, K: in.dt, V: in.dt, O: qo}))
	sub := c.problem()
	first := p.Nq - c.rows
	gather := func(src []float32, rows backend.Rows, heads []int, from, n, dim int) []float32 {
		out := make([]float32, 0, len(heads)*n*dim)
		for _, h := range heads {
			for i := from; i < from+n; i++ {
				out = append(out, src[rows.Offset(c.b, h, i):][:dim]...)
			}
		}
		return out
	}
	qh := make([]int, gh)
	for j := range qh {
		qh[j] = c.g*gh + j
	}
	sc := backendtest.Case{Problem: sub,
		Q: gather(in.q, p.QRowsOf(), qh, first, c.rows, p.D),
		K: gather(in.k, p.KRowsOf(), []int{c.g}, 0, p.Nk, p.D),
		V: gather(in.v, p.VRowsOf(), []int{c.g}, 0, p.Nk, p.Dv)}
	c.want = backendtest.ReferenceGrad(sc, gather(dO, p.ORowsOf(), qh, first, c.rows, p.Dv))
	c.checks = gh * c.rows
	return c
}

// problem is the problem of the group's checked rows alone: batch b, the
// group's query heads and its KV head, the last rows query rows, in the
// BHND layout the gathered operands take.
func (c *gradCheck) problem() backend.Problem {
	p := c.p
	gh := p.H / p.KVHeads
	sub := p
	sub.B, sub.H, sub.KVHeads, sub.Nq, sub.Layout = 1, gh, 1, c.rows, backend.BHND
	sub.Views = nil
	if p.ALiBi != nil {
		sub.ALiBi = p.ALiBi[c.g*gh:][:gh]
	}
	if p.Sinks != nil {
		sub.Sinks = p.Sinks[c.g*gh:][:gh]
	}
	if p.KVLens != nil {
		sub.KVLens = p.KVLens[c.b:][:1]
	}
	if o := p.CausalOffset; o != nil {
		at := *o + p.Nq - c.rows
		sub.CausalOffset = &at
	}
	return sub
}

// check reads the checked gradients back from dq, dk and dv and records
// on pt the largest relative error of dQ, dK and dV (max|g − ref| /
// max|ref| of each tensor, as the forward's rows are), marking it wrong
// past the larger of WrongErr and the conformance suite's GradTol for
// the dtypes, or where a gradient is not finite. It returns be's read
// error. A nil check records nothing.
func (c *gradCheck) check(pt *Point, be backend.Backend, dq, dk, dv backend.Buffer) error {
	if c == nil {
		return nil
	}
	p := c.p
	gh := p.H / p.KVHeads
	read := func(buf backend.Buffer, rows backend.Rows, heads []int, from, n, dim int) ([]float32, error) {
		out := make([]float32, len(heads)*n*dim)
		for x, h := range heads {
			for i := from; i < from+n; {
				// A run of rows that lie end to end is one read.
				run := 1
				for i+run < from+n && rows.Offset(c.b, h, i+run) == rows.Offset(c.b, h, i)+run*dim {
					run++
				}
				dst := out[(x*n+i-from)*dim:][:run*dim]
				if err := be.Read(dst, buf, rows.Offset(c.b, h, i)); err != nil {
					return nil, err
				}
				i += run
			}
		}
		return out, nil
	}
	qh := make([]int, gh)
	for j := range qh {
		qh[j] = c.g*gh + j
	}
	type grad struct {
		name string
		got  []float32
		want []float64
	}
	got, err := read(dq, p.QRowsOf(), qh, p.Nq-c.rows, c.rows, p.D)
	if err != nil {
		return err
	}
	grads := []grad{{"dQ", got, c.want.DQ}}
	if c.whole {
		gk, err := read(dk, p.KRowsOf(), []int{c.g}, 0, p.Nk, p.D)
		if err != nil {
			return err
		}
		gv, err := read(dv, p.VRowsOf(), []int{c.g}, 0, p.Nk, p.Dv)
		if err != nil {
			return err
		}
		grads = append(grads, grad{"dK", gk, c.want.DK}, grad{"dV", gv, c.want.DV})
	}
	worst, wrong := 0.0, ""
	for _, g := range grads {
		e := backendtest.RowError(g.got, g.want)
		if !finite(e) {
			pt.Status = StatusWrong
			pt.Error = fmt.Sprintf("%s of batch %d, KV group %d holds %s", g.name, c.b, c.g, unlike(e))
			pt.CheckedRows = c.checks
			return nil
		}
		worst = max(worst, e)
		if wrong == "" && backendtest.Exceeds(e, c.limit) {
			wrong = g.name
		}
	}
	pt.MaxErr, pt.CheckedRows = &worst, c.checks
	if wrong != "" {
		pt.Status = StatusWrong
		pt.Error = fmt.Sprintf("max relative error %.2g of %s over batch %d, KV group %d, past %g", worst, wrong, c.b, c.g, c.limit)
	}
	return nil
}
