package bench

import (
	"context"
	"fmt"
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

// prefixSpec is a prefix point's sharing (Shape's Prefix, Shared,
// GroupPrefix, Groups and Levels).
type prefixSpec struct {
	prefix, groupPrefix, groups int
	shared                      bool
	levels                      int // of a tree: 2, 1, or 0 unshared
	buffers                     bool
	bhnd                        bool // the pool's pages BHND, not BNHD
}

// prefixSpecs are a prefix sweep's points for each shape: shared and not,
// or of a tree, shared to two levels, to one, and not.
func (cfg *Config) prefixSpecs() []prefixSpec {
	if cfg.GroupPrefix == 0 {
		return []prefixSpec{{prefix: cfg.Prefix, shared: true, buffers: cfg.Buffers, bhnd: cfg.PrefixBHND}, {prefix: cfg.Prefix, buffers: cfg.Buffers, bhnd: cfg.PrefixBHND}}
	}
	var out []prefixSpec
	for _, l := range []int{2, 1, 0} {
		out = append(out, prefixSpec{prefix: cfg.Prefix, groupPrefix: cfg.GroupPrefix, groups: cfg.Groups, shared: l > 0, levels: l, buffers: cfg.Buffers, bhnd: cfg.PrefixBHND})
	}
	return out
}

// prefixSpec is s's sharing.
func (s Shape) prefixSpec() prefixSpec {
	return prefixSpec{prefix: s.Prefix, groupPrefix: s.GroupPrefix, groups: s.Groups, shared: s.Shared, levels: s.Levels, buffers: s.Buffers, bhnd: s.PoolLayout == "bhnd"}
}

// set records ps in s.
func (ps prefixSpec) set(s *Shape) {
	s.Prefix, s.Shared, s.GroupPrefix, s.Groups, s.Levels, s.Buffers = ps.prefix, ps.shared, ps.groupPrefix, ps.groups, ps.levels, ps.buffers
	s.PoolLayout = ""
	if ps.bhnd {
		s.PoolLayout = "bhnd"
	}
}

// label names a prefix point in the progress line.
func (ps prefixSpec) label() string {
	if ps.buffers {
		b := ps
		b.buffers = false
		return b.label() + " (buffers)"
	}
	switch {
	case ps.groupPrefix == 0:
		return prefixLabel(ps.prefix, ps.shared)
	case ps.levels == 2:
		return fmt.Sprintf(" prefix %d+%d×%d tree", ps.prefix, ps.groupPrefix, ps.groups)
	case ps.levels == 1:
		return fmt.Sprintf(" prefix %d+%d×%d one level", ps.prefix, ps.groupPrefix, ps.groups)
	}
	return fmt.Sprintf(" prefix %d+%d×%d unshared", ps.prefix, ps.groupPrefix, ps.groups)
}

// prefixPageSize is the pool's page size for prefixes of p and q keys
// (q 0 for none): the largest power of two up to 256 that divides both,
// so that each prefix ends on a page's end and its pages are whole.
func prefixPageSize(p, q int) int {
	ps := 256
	for ps > 1 && (p%ps != 0 || q%ps != 0) {
		ps /= 2
	}
	return ps
}

// keys is how many keys' K and V a step over ps's pool reads, B
// sequences of n keys each: every shared run once, the rest once a
// sequence.
func (ps prefixSpec) keys(b, n int) int64 {
	own := int64(n - ps.prefix - ps.groupPrefix)
	switch {
	case !ps.shared:
		return int64(b) * int64(n)
	case ps.levels == 2:
		return int64(ps.prefix) + int64(ps.groups)*int64(ps.groupPrefix) + int64(b)*own
	}
	return int64(ps.prefix) + int64(b)*(int64(ps.groupPrefix)+own)
}

// prefixBytes is the compulsory traffic of a prefix point of p shared as
// ps says, with K and V stored as dt.
func prefixBytes(p backend.Problem, ps prefixSpec, dt backend.DType) int64 {
	qo := int64(p.QLen()) + int64(p.OLen()) // float32, as the point's queries and outputs are
	// K and V at their pitch (q8 rows: whole blocks).
	return 4*qo + dt.Bytes(int(ps.keys(p.B, p.Nk))*p.KVHeads*(dt.Pitch(p.D)+dt.Pitch(p.Dv)))
}

// measurePrefix measures the prefix point of p (B sequences, Nq queries
// each at their ends, N keys) on be: the pool filled as shared says, the
// step timed, and the first sequence's output checked against the
// float64 reference.
func measurePrefix(ctx context.Context, be backend.Backend, p backend.Problem, sp prefixSpec, dt backend.DType, seed uint64, cfg *Config) Point {
	pt := attnPoint(be, "fused", p)
	pt.DType = dtypeName(dt)
	sp.set(&pt.Shape)
	prefix, gp := sp.prefix, sp.groupPrefix
	groups := max(sp.groups, 1)
	if prefix < 1 || prefix+gp > p.Nk-p.Nq || p.Nq > 16 || gp < 0 || p.B%groups != 0 {
		pt.fail(backend.Errorf(backend.ErrShape, "bench: a prefix of %d keys (then %d in %d groups) in %d sequences of %d keys with %d queries each: want 1 … N − Nq keys, at most 16 queries and whole groups",
			prefix, gp, groups, p.B, p.Nk, p.Nq))
		return pt
	}
	ps := prefixPageSize(prefix, gp)
	own := (p.Nk - prefix - gp + ps - 1) / ps
	// Pages: each shared run once, the rest once a sequence; a tree's
	// one-level point holds its group pages once a sequence.
	pages := p.B * (prefix/ps + gp/ps + own)
	if sp.shared {
		pages = prefix/ps + p.B*own
		if sp.levels == 2 {
			pages += groups * gp / ps
		} else {
			pages += p.B * gp / ps
		}
	}
	var need int64
	if inHostMemory(be.Info()) {
		need = dt.Bytes(pages * ps * p.KVHeads * (dt.Pitch(p.D) + dt.Pitch(p.Dv)))
	}
	if err := fits(need); err != nil {
		pt.fail(err)
		return pt
	}
	freshPeak()
	cacheDT := dt
	layout := backend.BNHD
	if sp.bhnd {
		layout = backend.BHND
	}
	pool, err := kernels.NewPagePool(be, ps, pages, kernels.CacheConfig{KVHeads: p.KVHeads, D: p.D, Dv: p.Dv, DType: cacheDT, Layout: layout})
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
	gk, gv := make([]*kernels.Tensor, groups), make([]*kernels.Tensor, groups)
	for g := range groups {
		gk[g], gv[g] = rowsOf(gp, p.D), rowsOf(gp, p.Dv)
	}
	seqs := make([]*kernels.Seq, p.B)
	var first [2]*kernels.Tensor // sequence 0's keys and values after the prompt, for the reference
	var root *kernels.Seq
	mids := make([]*kernels.Seq, groups)
	if sp.shared {
		if root, err = pool.NewSeq(); err == nil {
			err = root.Append(pk, pv)
		}
		for g := range mids {
			if err == nil && sp.levels == 2 && gp > 0 {
				if mids[g], err = root.Fork(); err == nil {
					err = mids[g].Append(gk[g], gv[g])
				}
			}
		}
		if err != nil {
			pt.fail(err)
			return pt
		}
	}
	per := p.B / groups
	for b := range seqs {
		g := b / per
		switch {
		case mids[g] != nil:
			seqs[b], err = mids[g].Fork()
		case sp.shared:
			if seqs[b], err = root.Fork(); err == nil && gp > 0 {
				err = seqs[b].Append(gk[g], gv[g])
			}
		default:
			if seqs[b], err = pool.NewSeq(); err == nil {
				err = seqs[b].Append(pk, pv)
			}
			if err == nil && gp > 0 {
				err = seqs[b].Append(gk[g], gv[g])
			}
		}
		if err == nil {
			k, v := rowsOf(p.Nk-prefix-gp, p.D), rowsOf(p.Nk-prefix-gp, p.Dv)
			if b == 0 {
				first = [2]*kernels.Tensor{k, v}
				if gp > 0 {
					first = [2]*kernels.Tensor{concatRows(gk[0], k), concatRows(gv[0], v)}
				}
			}
			err = seqs[b].Append(k, v)
		}
		if err != nil {
			pt.fail(err)
			return pt
		}
	}
	if sp.shared {
		root.Release() // its pages stay, held by the forks
		for _, m := range mids {
			if m != nil {
				m.Release()
			}
		}
	}
	pt.PoolPages = pages - pool.Free()
	// Queries and outputs in the pool's layout.
	qs, os := []int{p.B, p.Nq, p.H, p.D}, []int{p.B, p.Nq, p.H, p.Dv}
	if sp.bhnd {
		qs, os = []int{p.B, p.H, p.Nq, p.D}, []int{p.B, p.H, p.Nq, p.Dv}
	}
	q, _ := kernels.NewTensor(layout, qs...)
	for i := range q.Data {
		q.Data[i] = float32(rng.Float64()*2 - 1)
	}
	out, _ := kernels.NewTensor(layout, os...)
	opts := &kernels.AttendOptions{Causal: p.Causal, Scale: float64(p.Scale)}
	op := func(ctx context.Context) error { return pool.Attend(ctx, seqs, q, out, nil, opts) }
	var ob backend.Buffer
	if sp.buffers {
		// Q and O on the device: AttendBuffers, the cascade's merge
		// there too.
		qb, err := be.Alloc(backend.Float32, len(q.Data))
		if err == nil {
			defer qb.Release()
			err = be.Write(qb, 0, q.Data)
		}
		if err == nil {
			ob, err = be.Alloc(backend.Float32, len(out.Data))
		}
		if err != nil {
			pt.fail(err)
			return pt
		}
		defer ob.Release()
		op = func(ctx context.Context) error {
			return pool.AttendBuffers(ctx, nil, seqs, qb, ob, nil, p.H, p.Nq, opts)
		}
	}
	warmup, times, err := timeRuns(ctx, op, cfg.Budget, cfg.MinRuns, nil)
	if err != nil {
		pt.fail(err)
		return pt
	}
	if ob != nil {
		if err := be.Read(out.Data, ob, 0); err != nil {
			pt.fail(err)
			return pt
		}
	}
	pt.setTimes(warmup, times, p, dt, false)
	pt.Bytes = prefixBytes(p, sp, dt)
	if pt.MedianS > 0 {
		pt.GBPS = float64(pt.Bytes) / pt.MedianS / 1e9
	}
	pt.setErr(prefixError(p, dt, pk, pv, first, firstBNHD(q, layout), firstBNHD(out, layout)), 1e-3, "sequence 0's output")
	pt.PeakRSS = peakRSS()
	return pt
}

// concatRows is a's rows then b's ([n, KVH, dim] each).
func concatRows(a, b *kernels.Tensor) *kernels.Tensor {
	t := &kernels.Tensor{Shape: []int{a.Shape[0] + b.Shape[0], a.Shape[1], a.Shape[2]}, Layout: kernels.BNHD}
	t.Data = append(append(t.Data, a.Data...), b.Data...)
	return t
}

// firstBNHD is the first sequence of x ([B, Nq, H, dim] or, with layout
// BHND, [B, H, Nq, dim]) as [Nq, H, dim], prefixError's order.
func firstBNHD(x *kernels.Tensor, layout backend.Layout) *kernels.Tensor {
	if layout != backend.BHND {
		return x
	}
	h, nq, dim := x.Shape[1], x.Shape[2], x.Shape[3]
	t, _ := kernels.NewTensor(kernels.BNHD, 1, nq, h, dim)
	for hh := range h {
		for i := range nq {
			copy(t.Data[(i*h+hh)*dim:(i*h+hh+1)*dim], x.Data[(hh*nq+i)*dim:])
		}
	}
	return t
}

// prefixError is the relative error of sequence 0's output in out
// against the float64 reference of its keys (the prompt's, then its own,
// each rounded to the cache's dtype): backendtest.RowError over the
// sequence's rows, NaN or infinite where the output holds NaN or an
// infinity.
func prefixError(p backend.Problem, dt backend.DType, pk, pv *kernels.Tensor, own [2]*kernels.Tensor, q, out *kernels.Tensor) float64 {
	one := p
	one.B, one.KVLens, one.Paged = 1, nil, nil
	one.Layout = backend.BNHD
	round := func(dim int, ts ...*kernels.Tensor) []float32 {
		var r []float32
		for _, t := range ts {
			r = append(r, t.Data...)
		}
		// Rows [n, KVH, dim] in order: an 8-bit dtype's blocks lie within
		// a row (padded to whole blocks), as the cache stores them.
		dt.RoundRows(r, r, dim)
		return r
	}
	c := backendtest.Case{Problem: one, Q: q.Data[:p.Nq*p.H*p.D], K: round(p.D, pk, own[0]), V: round(p.Resolved().Dv, pv, own[1])}
	ref := backendtest.Reference(c).O
	return backendtest.RowError(out.Data[:len(ref)], ref)
}

// prefixLabel names a prefix point in the progress line.
func prefixLabel(prefix int, shared bool) string {
	if shared {
		return fmt.Sprintf(" prefix %d shared", prefix)
	}
	return fmt.Sprintf(" prefix %d unshared", prefix)
}
