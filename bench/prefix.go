package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/kernels"
)

// A prefix point (Config.Prefix) is a decoding step of B sequences of N
// keys each over a kernels.PagePool, the first P keys of every sequence
// one prompt: held once and shared (Shape.Shared: the prompt appended
// once, then forked B times, each fork appending its own N − P keys, and
// PagePool.Attend's cascade reading the shared pages once), or held by
// each sequence alone (the same keys appended B times). The two are the
// same attention over the same keys; what differs is the pages the pool
// holds (Point.PoolPages) and the bytes the step must read (Point.Bytes:
// Q and O, and K and V of P + B·(N − P) keys shared, B·N not).

// prefixPageSize is the pool's page size for a prefix of p keys: the
// largest power of two up to 256 that divides p, so that the prompt ends
// on a page's end and its pages are whole.
func prefixPageSize(p int) int {
	ps := 256
	for ps > 1 && p%ps != 0 {
		ps /= 2
	}
	return ps
}

// prefixBytes is the compulsory traffic of a prefix point of p (its
// prefix of prefix keys shared or not) with K and V stored as dt.
func prefixBytes(p backend.Problem, prefix int, shared bool, dt backend.DType) int64 {
	keys := int64(p.B) * int64(p.Nk)
	if shared {
		keys = int64(prefix) + int64(p.B)*int64(p.Nk-prefix)
	}
	qo := int64(p.QLen()) + int64(p.OLen()) // float32, as the point's queries and outputs are
	return 4*qo + dt.Bytes(int(keys)*p.KVHeads*(p.D+p.Dv))
}

// measurePrefix measures the prefix point of p (B sequences, Nq queries
// each at their ends, N keys) on be: the pool filled as shared says, the
// step timed, and the first sequence's output checked against the
// float64 reference.
func measurePrefix(ctx context.Context, be backend.Backend, p backend.Problem, prefix int, shared bool, dt backend.DType, seed uint64, cfg *Config) Point {
	pt := attnPoint(be, "fused", p)
	pt.DType = dtypeName(dt)
	pt.Prefix, pt.Shared = prefix, shared
	if prefix < 1 || prefix > p.Nk-p.Nq || p.Nq > 16 {
		pt.fail(backend.Errorf(backend.ErrShape, "bench: a prefix of %d keys in sequences of %d keys with %d queries each: want 1 … N − Nq keys and at most 16 queries", prefix, p.Nk, p.Nq))
		return pt
	}
	ps := prefixPageSize(prefix)
	own := (p.Nk - prefix + ps - 1) / ps
	pages := p.B * (prefix/ps + own)
	if shared {
		pages = prefix/ps + p.B*own
	}
	var need int64
	if inHostMemory(be.Info()) {
		need = dt.Bytes(pages * ps * p.KVHeads * (p.D + p.Dv))
	}
	if err := fits(need); err != nil {
		pt.fail(err)
		return pt
	}
	freshPeak()
	cacheDT := dt
	pool, err := kernels.NewPagePool(be, ps, pages, kernels.CacheConfig{KVHeads: p.KVHeads, D: p.D, Dv: p.Dv, DType: cacheDT, Layout: kernels.BNHD})
	if err != nil {
		pt.fail(err)
		return pt
	}
	defer pool.Release()
	rng := rand.New(rand.NewPCG(seed, uint64(prefix)))
	rowsOf := func(n, dim int) *kernels.Tensor {
		t, _ := kernels.NewTensor(kernels.BNHD, n, p.KVHeads, dim)
		for i := range t.Data {
			t.Data[i] = float32(rng.Float64()*2 - 1)
		}
		return t
	}
	pk, pv := rowsOf(prefix, p.D), rowsOf(prefix, p.Dv)
	seqs := make([]*kernels.Seq, p.B)
	var first [2]*kernels.Tensor // sequence 0's own keys and values, for the reference
	var root *kernels.Seq
	if shared {
		root = pool.NewSeq()
		if err := root.Append(pk, pv); err != nil {
			pt.fail(err)
			return pt
		}
	}
	for b := range seqs {
		if shared {
			seqs[b], err = root.Fork()
		} else {
			seqs[b] = pool.NewSeq()
			err = seqs[b].Append(pk, pv)
		}
		if err == nil {
			k, v := rowsOf(p.Nk-prefix, p.D), rowsOf(p.Nk-prefix, p.Dv)
			if b == 0 {
				first = [2]*kernels.Tensor{k, v}
			}
			err = seqs[b].Append(k, v)
		}
		if err != nil {
			pt.fail(err)
			return pt
		}
	}
	if shared {
		root.Release() // its pages stay, held by the forks
	}
	pt.PoolPages = pages - pool.Free()
	q, _ := kernels.NewTensor(kernels.BNHD, p.B, p.Nq, p.H, p.D)
	for i := range q.Data {
		q.Data[i] = float32(rng.Float64()*2 - 1)
	}
	out, _ := kernels.NewTensor(kernels.BNHD, p.B, p.Nq, p.H, p.Dv)
	opts := &kernels.AttendOptions{Causal: p.Causal, Scale: float64(p.Scale)}
	op := func(ctx context.Context) error { return pool.Attend(ctx, seqs, q, out, nil, opts) }
	warmup, times, err := timeRuns(ctx, op, cfg.Budget, cfg.MinRuns, nil)
	if err != nil {
		pt.fail(err)
		return pt
	}
	pt.setTimes(warmup, times, p, dt, false)
	pt.Bytes = prefixBytes(p, prefix, shared, dt)
	if pt.MedianS > 0 {
		pt.GBPS = float64(pt.Bytes) / pt.MedianS / 1e9
	}
	e := prefixError(p, dt, pk, pv, first, q, out)
	pt.MaxErr = &e
	if e > 1e-3 {
		pt.Status = StatusWrong
	}
	pt.PeakRSS = peakRSS()
	return pt
}

// prefixError is the largest relative error of sequence 0's output in
// out against the float64 reference of its keys (the prompt's, then its
// own, each rounded to the cache's dtype).
func prefixError(p backend.Problem, dt backend.DType, pk, pv *kernels.Tensor, own [2]*kernels.Tensor, q, out *kernels.Tensor) float64 {
	one := p
	one.B, one.KVLens, one.Paged = 1, nil, nil
	one.Layout = backend.BNHD
	round := func(ts ...*kernels.Tensor) []float32 {
		var r []float32
		for _, t := range ts {
			r = append(r, t.Data...)
		}
		// Rows [n, KVH, dim] in order: an 8-bit dtype's blocks lie within
		// a row, as the cache stores them.
		dt.RoundSlice(r, r)
		return r
	}
	c := backendtest.Case{Problem: one, Q: q.Data[:p.Nq*p.H*p.D], K: round(pk, own[0]), V: round(pv, own[1])}
	ref := backendtest.Reference(c).O
	got := out.Data[:len(ref)]
	worst, scale := 0.0, 0.0
	for _, r := range ref {
		scale = max(scale, math.Abs(r))
	}
	for i, r := range ref {
		worst = max(worst, math.Abs(float64(got[i])-r))
	}
	if scale == 0 {
		return worst
	}
	return worst / scale
}

// prefixLabel names a prefix point in the progress line.
func prefixLabel(prefix int, shared bool) string {
	if shared {
		return fmt.Sprintf(" prefix %d shared", prefix)
	}
	return fmt.Sprintf(" prefix %d unshared", prefix)
}
