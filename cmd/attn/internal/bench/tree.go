package bench

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/internal/workload"
	"github.com/attn-go/attn/kernels"
)

// A tree point (Config.Tree) is one step of speculative decoding over a
// kernels.KVCache: B sequences of N keys whose last T are a draft of T
// tokens, verified in one Attend under AttendOptions.Tree
// (workload.RandomTree's tree, fixed seed: Shape.Tree = T); its
// baseline, Shape.TreeChunk, attends the same T rows as a causal chunk. Both read the cache once
// for the T rows of a KV head; the tree's draft rows are read again for
// its own pass (kernels' attendTree), which is all that costs more.

// treeLabel names a tree point in the progress line and the sparse
// column.
func treeLabel(t int, chunk bool) string {
	if chunk {
		return fmt.Sprintf("chunk %d", t)
	}
	return fmt.Sprintf("tree %d", t)
}

// measureTree measures the tree point of p (B sequences of p.Nk keys,
// the last p.Nq of them the draft) on be, or with chunk its causal
// baseline, its keys and values stored as dt: the cache filled, the step
// timed, and the first KV head group of sequence 0 checked against the
// float64 reference with the tree's mask.
func measureTree(ctx context.Context, be backend.Backend, p backend.Problem, chunk bool, dt backend.DType, seed uint64, cfg *Config) Point {
	pt := attnPoint(be, "fused", p)
	pt.DType = dtypeName(dt)
	pt.Tree, pt.TreeChunk = p.Nq, chunk
	p = p.Resolved()
	if p.Nq < 1 || p.Nq > p.Nk || !p.Causal || p.Packed != nil || p.Paged != nil || p.Indices != nil || p.Blocks != nil || p.Variants.Window != nil || p.KVLens != nil || p.ALiBi != nil || p.VFromK {
		pt.fail(backend.Errorf(backend.ErrShape, "bench: a tree of %d tokens over %d keys: want 1 … N tokens, causal, and none of window, ALiBi, key lengths, V from K, sparse lists or blocks", p.Nq, p.Nk))
		return pt
	}
	var need int64
	if inHostMemory(be.Info()) {
		need = dt.Bytes(p.B * p.Nk * p.KVHeads * (dt.Pitch(p.D) + dt.Pitch(p.Dv)))
	}
	if err := fits(need); err != nil {
		pt.fail(err)
		return pt
	}
	freshPeak()
	cache, err := kernels.NewKVCache(be, p.B, p.Nk, kernels.CacheConfig{KVHeads: p.KVHeads, D: p.D, Dv: p.Dv, DType: dt, Layout: backend.BNHD})
	if err != nil {
		pt.fail(err)
		return pt
	}
	defer cache.Release()
	rng := rand.New(rand.NewPCG(seed, uint64(p.Nk)))
	rowsOf := func(n, dim int) *kernels.Tensor {
		t, _ := kernels.NewTensor(kernels.BNHD, n, p.KVHeads, dim)
		for i := range t.Data {
			t.Data[i] = float32(rng.Float64()*2 - 1)
		}
		return t
	}
	// Appended a run at a time, so that the host holds one run, not the
	// cache twice; sequence 0's keys and values of KV head 0 kept for the
	// reference.
	const run = 4096
	var k0, v0 []float32
	head0 := func(dst, x []float32, dim int) []float32 {
		for at := 0; at < len(x); at += p.KVHeads * dim {
			dst = append(dst, x[at:at+dim]...)
		}
		return dst
	}
	for b := range p.B {
		for lo := 0; lo < p.Nk; lo += run {
			n := min(run, p.Nk-lo)
			k, v := rowsOf(n, p.D), rowsOf(n, p.Dv)
			if err := cache.Append(b, k, v); err != nil {
				pt.fail(err)
				return pt
			}
			if b == 0 {
				k0, v0 = head0(k0, k.Data, p.D), head0(v0, v.Data, p.Dv)
			}
		}
	}
	q, _ := kernels.NewTensor(kernels.BNHD, p.B, p.Nq, p.H, p.D)
	for i := range q.Data {
		q.Data[i] = float32(rng.Float64()*2 - 1)
	}
	out, _ := kernels.NewTensor(kernels.BNHD, p.B, p.Nq, p.H, p.Dv)
	opts := &kernels.AttendOptions{Causal: true, Scale: float64(p.Scale), Softcap: float64(p.Softcap), Sinks: p.Sinks}
	tree := workload.RandomTree(seed, 1, p.Nq)
	if !chunk {
		opts.Tree = tree
	}
	op := func(ctx context.Context) error { return cache.Attend(ctx, q, out, nil, opts) }
	warmup, times, err := timeRuns(ctx, op, cfg.Budget, cfg.MinRuns, nil)
	if err != nil {
		pt.fail(err)
		return pt
	}
	pt.setTimes(warmup, times, p, dt, false)
	pt.Bytes = 4*int64(p.QLen()+p.OLen()) + dt.Bytes(p.B*p.Nk*p.KVHeads*(dt.Pitch(p.D)+dt.Pitch(p.Dv)))
	if pt.MedianS > 0 {
		pt.GBPS = float64(pt.Bytes) / pt.MedianS / 1e9
	}
	pt.setErr(treeError(p, dt, tree, chunk, k0, v0, q, out), 1e-3, "sequence 0's output")
	pt.PeakRSS = peakRSS()
	return pt
}

// treeError is the relative error (backendtest.RowError, NaN or
// infinite where the output holds NaN or an infinity) of sequence 0's
// output rows of the heads of KV head 0 against the float64 reference
// over its keys and values k0, v0 ([N, dim] each) as stored (rounded to
// dt), under the tree's mask (or causal masking for the chunk) written
// out element by element.
func treeError(p backend.Problem, dt backend.DType, tree *kernels.Tree, chunk bool, k0, v0 []float32, q, out *kernels.Tensor) float64 {
	g, nq, nk := p.Group(), p.Nq, p.Nk
	one := p
	one.B, one.H, one.KVHeads = 1, g, 1
	one.Layout, one.Causal = backend.BNHD, false
	one.Sinks = nil
	if p.Sinks != nil {
		one.Sinks = p.Sinks[:g]
	}
	k, v := k0, v0
	dt.RoundRows(k, k, p.D)
	dt.RoundRows(v, v, p.Dv)
	qs := make([]float32, 0, nq*g*p.D)
	for i := range nq {
		qs = append(qs, q.Data[i*p.H*p.D:][:g*p.D]...)
	}
	keep := &backendtest.HostMask{Shape: [4]int{1, 1, nq, nk}, Data: make([]float32, nq*nk)}
	past := nk - nq
	for i := range nq {
		for j := range nk {
			on := j <= past+i
			if !chunk && j >= past {
				on = tree.Keep[i*nq+j-past]
			}
			if on {
				keep.Data[i*nk+j] = 1
			}
		}
	}
	ref := backendtest.Reference(backendtest.Case{Problem: one, Q: qs, K: k, V: v, Keep: keep}).O
	got := make([]float32, 0, len(ref))
	for i := range nq {
		got = append(got, out.Data[i*p.H*p.Dv:][:g*p.Dv]...)
	}
	return backendtest.RowError(got, ref)
}
