package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"

	"github.com/attn-go/attn/backend"
)

// The strategies of the backward pass's points (Config.Backward): the
// backward alone, from the forward's O and LSE, and the training step's
// whole attention, the fused forward with its LSE then the backward.
const (
	StrategyBackward = "backward"
	StrategyFwdBwd   = "fused+backward"
)

// The backward's work and traffic, in forwards': five matrix products to
// the forward's two; Q, K, V, O and dO read and dQ, dK and dV written,
// about twice the forward's bytes.
const (
	backwardWork  = 2.5
	backwardBytes = 2
)

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
// backward, each run ended by Sync. The gradients are not compared here
// (the conformance suite's Backward section compares them with the
// float64 reference); a backend without a backward pass, or a dtype it
// does not take, makes the point unavailable.
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
	qo := qoType(in.dt)
	q := alloc(qo, p.QLen(), in.q)
	consumed(&in.q)
	k := alloc(in.dt, p.KLen(), in.k)
	consumed(&in.k)
	v := alloc(in.dt, p.VLen(), in.v)
	consumed(&in.v)
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(p.OLen())))
	dOut := make([]float32, p.OLen())
	for i := range dOut {
		dOut[i] = qo.Round(float32(rng.Float64()*2 - 1))
	}
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
	bytes := int64(backwardBytes)
	if withForward {
		bytes++ // the forward's
	}
	pt.Bytes *= bytes
	pt.GBPS *= float64(bytes)
	dt.set(&pt)
	peaks(&pt)
	return pt
}
