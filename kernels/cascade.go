package kernels

import (
	"context"
	"sync/atomic"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/softmax"
)

// Cascade attention (FlashInfer's name for it): when sequences of one
// PagePool.Attend share leading pages (Seq.Fork), each shared page is
// read once for all of them instead of once each. A decoding step is
// bound by the bytes it reads, so B sequences behind one long prompt
// read it once, not B times.
//
// The pool finds the sharing from the pages themselves, as a tree
// (cascadeGroups). A root is the sequences of the call whose first page
// is the same page; its prefix is the longest run of leading pages all
// its members hold, counting only pages every member has filled and
// whose keys lie before each member's first query (so that causal
// masking shows every prefix key to every query). Below a node, those of
// its members that go on to hold one same page form a child, whose run
// begins where its parent's ends, and so on: a prompt shared by all,
// then histories shared by some. Each node's queries attend its run as
// one problem, the members' query rows stacked (a prefix pass: one
// sequence of G·Nq rows, its K and V read once), every sequence attends
// the rest of its own keys, past its deepest node, as before (the
// suffix pass), and the partial results are merged exactly by their
// log-sum-exps:
//
//	m = max(l₁, l₂),  O = (e^(l₁−m)·O₁ + e^(l₂−m)·O₂) / (e^(l₁−m) + e^(l₂−m)),
//	LSE = m + log(e^(l₁−m) + e^(l₂−m))
//
// Attend merges on the host, where it reads O back anyway. AttendBuffers
// merges on the device (cascadeBuffers), with the backend's own Fused:
// each output row is a sequence whose keys are its partial results
// (one-row pages of two pools, K their LSEs at D = 1, V their outputs)
// and whose query is 1 at scale 1, so that each partial scores its LSE
// and softmax·V is the formula above, the LSE the merged one; the
// passes' rows reach the pools by Copy, and the merge, like the passes,
// is recorded where the call is.
//
// The sinks join the suffix pass alone. Variants that place each query
// by its position inside the prefix (a sliding window, ALiBi, a causal
// offset, key lengths) run without the cascade, as do prefixes shorter
// than cascadeMinKeys, where the second pass would cost more than it
// saves.

// cascadeMinKeys is the shortest shared prefix the cascade runs for;
// cascades counts the calls that ran it, and cascadeNodes their prefix
// passes (for tests).
var (
	cascadeMinKeys = 256
	cascades       atomic.Int64
	cascadeNodes   atomic.Int64
)

// cascadeGroup is one node of the tree of shared prefixes: the indexes
// of its members in the call's batch, and the run of pages they all hold
// from page start of their tables on (start 0 for a root; a child's run
// begins where its parent's ends).
type cascadeGroup struct {
	members []int
	pages   []int
	start   int
}

// cascadeGroups finds the tree of prefixes the call's sequences (pages,
// lengths lens, nq queries each) share in pages of ps keys, each node a
// run of at least cascadeMinKeys keys, or none when opts asks for a
// variant the cascade does not run. Sequences whose tables begin with
// the same page form a root, its run the pages all of them hold from
// there; below it, those of its members that go on to share the next
// page form a child, and so on (a system prompt shared by all, then a
// history shared by some): each shared page is read once, by the
// deepest node whose members all hold it.
func (a *attender) cascadeGroups(pages [][]int, lens []int, nq, ps int, opts *AttendOptions) []cascadeGroup {
	if len(pages) < 2 || nq < 1 || opts.Window != nil || opts.ALiBi != nil || opts.CausalOffset != nil || opts.KVLens != nil || opts.Indices != nil || opts.Blocks != nil {
		return nil
	}
	// The attender's scratch: a call without sharing allocates nothing.
	// limit[b] is the pages of b that may be shared: full, and before its
	// first query (so that causal masking shows every prefix key to
	// every query); mark[b] the depth of the deepest node b has joined so
	// far.
	a.limit, a.mark, a.all = grow(a.limit, len(pages)), grow(a.mark, len(pages)), grow(a.all, len(pages))
	for b := range pages {
		a.limit[b] = max(0, min(len(pages[b]), (lens[b]-nq)/ps))
		a.mark[b], a.all[b] = 0, b
	}
	var groups []cascadeGroup
	a.splitGroups(&groups, pages, ps, a.all, 0, 1)
	return groups
}

// splitGroups adds to groups the nodes of members, which share their
// tables' first start pages: those of them holding the same page start
// (two or more) form a node whose run is every page they all hold from
// there, kept when it is cascadeMinKeys keys or more and split again
// below it. depth is 1 for the roots: a member whose mark is depth or
// more has joined a node of this call already (or one below it).
func (a *attender) splitGroups(groups *[]cascadeGroup, pages [][]int, ps int, members []int, start, depth int) {
	for i, b := range members {
		if a.mark[b] >= depth || a.limit[b] <= start {
			continue
		}
		n := 0
		for _, c := range members[i:] {
			if a.limit[c] > start && pages[c][start] == pages[b][start] {
				n++
			}
		}
		if n < 2 {
			continue
		}
		g := make([]int, 0, n)
		for _, c := range members[i:] {
			if a.limit[c] > start && pages[c][start] == pages[b][start] {
				g = append(g, c)
				a.mark[c] = depth
			}
		}
		k := 0
	run:
		for start+k < a.limit[b] {
			for _, c := range g {
				if start+k >= a.limit[c] || pages[c][start+k] != pages[b][start+k] {
					break run
				}
			}
			k++
		}
		if k*ps < max(cascadeMinKeys, 1) {
			continue
		}
		*groups = append(*groups, cascadeGroup{members: g, pages: pages[b][start : start+k], start: start})
		a.splitGroups(groups, pages, ps, g, start+k, depth+1)
	}
}

// cascade is attend's work for a paged problem p (resolved, its queries
// uploaded to qb) whose sequences form groups: the prefix pass of each
// group, the suffix pass of the whole batch, and the merge into out and
// lse on the host. q is the dense host copy of the queries.
func (a *attender) cascade(ctx context.Context, c *kv, p backend.Problem, groups []cascadeGroup, qb backend.Buffer, qh *Tensor, out, lse *Tensor) error {
	cascades.Add(1)
	be := c.be
	h, nq, dv := p.H, p.Nq, p.Dv
	suffix, err := a.suffixProblem(p, groups)
	if err != nil {
		return err
	}
	if err := a.fusedToHost(ctx, c, suffix, qb, &a.os, &a.ls, &a.hos, &a.hls); err != nil {
		return err
	}
	// Each group's prefix pass, merged into the suffix pass's rows. Its
	// problem has one head a KV head, whose rows are every member's
	// queries of every query head that reads it (no variant it runs
	// depends on the head or the position), so that one work item holds
	// them all and a K or V tile is read, and a half one widened, once
	// for the group's query heads instead of once each.
	kvh, gq := p.KVHeads, h/p.KVHeads
	for _, g := range groups {
		cascadeNodes.Add(1)
		rows := len(g.members) * nq * gq
		pre, err := prefixProblem(p, g)
		if err != nil {
			return err
		}
		qg, err := a.buffer(be, &a.qg, qh.DType, pre.QLen())
		if err != nil {
			return err
		}
		if err := a.gatherQueries(be, qg, qh, g.members, p); err != nil {
			return err
		}
		if err := a.fusedToHost(ctx, c, pre, qg, &a.op, &a.lp, &a.hop, &a.hlp); err != nil {
			return err
		}
		pos, sos := backend.TensorStrides(p.Layout, kvh, rows, dv), backend.TensorStrides(p.Layout, h, nq, dv)
		for gi, b := range g.members {
			for hh := range h {
				for i := range nq {
					r := prefixRow(gi, i, hh%gq, nq, gq) // pre's row of member gi's query i of head hh
					po := pos.Offset(0, hh/gq, r)
					so := sos.Offset(b, hh, i)
					l1, l2 := float64(a.hlp[(hh/gq)*rows+r]), float64(a.hls[(b*h+hh)*nq+i])
					// Neither pass saw a key: zeros, −Inf.
					a.hls[(b*h+hh)*nq+i] = float32(softmax.MergeOutputs(a.hos[so:so+dv], []softmax.Part{{M: l1, L: 1, Acc: a.hop[po : po+dv]}, {M: l2, L: 1, Acc: a.hos[so : so+dv]}}))
				}
			}
		}
	}
	if out.DType.Half() {
		for i, x := range a.hos[:len(out.Bits)] {
			out.Bits[i] = out.DType.Encode(out.DType.Saturate(x))
		}
	} else {
		copy(out.Data, a.hos)
	}
	if lse != nil {
		copy(lse.Data, a.hls)
	}
	return nil
}

// fusedToHost runs Fused for p on c's cache with the queries q, into
// the device buffers *o and *l (Float32, kept in a between calls), and
// reads the output and the LSE back into the host's *ho and *hl.
func (a *attender) fusedToHost(ctx context.Context, c *kv, p backend.Problem, q backend.Buffer, o, l *backend.Buffer, ho, hl *[]float32) error {
	be := c.be
	ob, err := a.buffer(be, o, Float32, p.OLen())
	if err != nil {
		return err
	}
	lb, err := a.buffer(be, l, Float32, p.LSELen())
	if err != nil {
		return err
	}
	if err := be.Fused(ctx, backend.FusedParams{Problem: p}, q, c.k, c.v, ob, lb); err != nil {
		return err
	}
	*ho, *hl = grow(*ho, p.OLen()), grow(*hl, p.LSELen())
	if err := be.Read(*ho, ob, 0); err != nil {
		return err
	}
	return be.Read(*hl, lb, 0)
}

// cascadeBuffers is attendBuffers' cascade: cascade's passes over the
// caller's buffers, run on c's backend or recorded into rec, and the
// merge on the device as one more Fused call (one key a partial
// result, its LSE the score). Only the merge writes out and lse, last,
// so a pass that fails leaves them as they were.
func (a *attender) cascadeBuffers(ctx context.Context, rec backend.Recording, c *kv, p backend.Problem, groups []cascadeGroup, q, out, lse backend.Buffer) error {
	be := c.be
	fused := be.Fused
	cp, _ := be.(backend.Copier)
	if rec != nil {
		fused, cp = rec.Fused, rec
	}
	h, nq, d, dv := p.H, p.Nq, p.D, p.Dv
	kvh, gq := p.KVHeads, h/p.KVHeads
	if err := backend.CheckBuffer("Q", q, p.QLen()); err != nil {
		return err
	}
	suffix, err := a.suffixProblem(p, groups)
	if err != nil {
		return err
	}
	cascades.Add(1)
	// The merge's pools: a row a partial result, the suffix pass's rows
	// first (in the LSE's order, (b, h, i)), then each node's (in its
	// LSE's order, (KV head, prefixRow)) from base[node].
	r := p.B * h * nq
	base := make([]int, len(groups))
	np := r
	for i, g := range groups {
		base[i] = np
		np += len(g.members) * nq * h
	}
	kp, err := a.buffer(be, &a.mk, Float32, np)
	if err != nil {
		return err
	}
	vp, err := a.buffer(be, &a.mv, Float32, np*dv)
	if err != nil {
		return err
	}
	// The suffix pass writes its LSE into the pool, and its O too where
	// O's rows lie in the LSE's order (BHND, or one query), else into
	// scratch that a copy reorders.
	inOrder := p.Layout == BHND || nq == 1
	os := vp
	if !inOrder {
		if os, err = a.buffer(be, &a.os, Float32, suffix.OLen()); err != nil {
			return err
		}
	}
	if err := fused(ctx, backend.FusedParams{Problem: suffix}, q, c.k, c.v, os, kp); err != nil {
		return err
	}
	if !inOrder {
		a.ranges = a.ranges[:0]
		eachOutRow(p, func(row, out int) {
			a.ranges = append(a.ranges, backend.CopyRange{Dst: row * dv, Src: out * dv, N: dv})
		})
		if err := cp.Copy(ctx, vp, os, a.ranges...); err != nil {
			return err
		}
	}
	// Each node's prefix pass: its queries gathered from q on the device
	// (runs of rows that lie together copied as one range), its LSE and
	// O copied into the pools.
	for ni, g := range groups {
		cascadeNodes.Add(1)
		pre, err := prefixProblem(p, g)
		if err != nil {
			return err
		}
		qg, err := a.buffer(be, &a.qg, q.DType(), pre.QLen())
		if err != nil {
			return err
		}
		a.ranges = a.ranges[:0]
		prefixQueries(p, g.members, d, func(dst, src int) {
			if n := len(a.ranges); n > 0 {
				if l := &a.ranges[n-1]; l.Dst+l.N == dst && l.Src+l.N == src {
					l.N += d
					return
				}
			}
			a.ranges = append(a.ranges, backend.CopyRange{Dst: dst, Src: src, N: d})
		})
		if err := cp.Copy(ctx, qg, q, a.ranges...); err != nil {
			return err
		}
		op, err := a.buffer(be, &a.op, Float32, pre.OLen())
		if err != nil {
			return err
		}
		lp, err := a.buffer(be, &a.lp, Float32, pre.LSELen())
		if err != nil {
			return err
		}
		if err := fused(ctx, backend.FusedParams{Problem: pre}, qg, c.k, c.v, op, lp); err != nil {
			return err
		}
		if err := cp.Copy(ctx, kp, lp, backend.CopyRange{Dst: base[ni], N: pre.LSELen()}); err != nil {
			return err
		}
		a.ranges = a.ranges[:0]
		if p.Layout == BHND {
			a.ranges = append(a.ranges, backend.CopyRange{Dst: base[ni] * dv, N: pre.OLen()})
		} else {
			pstr := backend.TensorStrides(p.Layout, kvh, pre.Nq, dv)
			for g := range kvh {
				for row := range pre.Nq {
					a.ranges = append(a.ranges, backend.CopyRange{Dst: (base[ni] + g*pre.Nq + row) * dv, Src: pstr.Offset(0, g, row), N: dv})
				}
			}
		}
		if err := cp.Copy(ctx, vp, op, a.ranges...); err != nil {
			return err
		}
	}
	// The merge: one sequence an output row, in out's order, whose keys
	// are the row's partials in the pools (one-row pages): K their LSEs
	// (D = 1), V their outputs. A query of 1 at scale 1 scores each by
	// its LSE, so that softmax·V is the exact merge of the passes and
	// the merge's LSE the row's.
	depth := make([]int, p.B)
	per := 1
	for _, g := range groups {
		for _, b := range g.members {
			depth[b]++
			per = max(per, depth[b]+1)
		}
	}
	a.mtable, a.mlens = grow(a.mtable, r*per), grow(a.mlens, r)
	for i := range a.mtable {
		a.mtable[i] = -1
	}
	eachOutRow(p, func(row, out int) {
		a.mtable[out*per], a.mlens[out] = row, 1
	})
	ostr := backend.TensorStrides(p.Layout, h, nq, 1)
	for ni, g := range groups {
		rows := len(g.members) * nq * gq
		for gi, b := range g.members {
			for hh := range h {
				for i := range nq {
					m := ostr.Offset(b, hh, i)
					a.mtable[m*per+a.mlens[m]] = base[ni] + (hh/gq)*rows + prefixRow(gi, i, hh%gq, nq, gq)
					a.mlens[m]++
				}
			}
		}
	}
	mq, err := a.buffer(be, &a.mq, Float32, r)
	if err != nil {
		return err
	}
	if a.mqOnes < r { // a buffer new since the ones were written
		ones := make([]float32, mq.Len())
		for i := range ones {
			ones[i] = 1
		}
		if err := be.Write(mq, 0, ones); err != nil {
			return err
		}
		a.mqOnes = mq.Len()
	}
	a.mpaged = backend.Paged{PageSize: 1, Pages: np, PerSeq: per, Table: a.mtable}
	merge := backend.Problem{B: r, H: 1, KVHeads: 1, Nq: 1, Nk: per, D: 1, Dv: dv, Scale: 1, Layout: BHND, Paged: &a.mpaged}
	merge.KVLens = a.mlens
	ml := lse
	if lse != nil && !inOrder {
		// The merge's LSE lies in out's order: into scratch, reordered.
		if ml, err = a.buffer(be, &a.ls, Float32, r); err != nil {
			return err
		}
	}
	if err := fused(ctx, backend.FusedParams{Problem: merge}, mq, kp, vp, out, ml); err != nil {
		return err
	}
	if ml == lse {
		return nil
	}
	a.ranges = a.ranges[:0]
	eachOutRow(p, func(row, out int) {
		a.ranges = append(a.ranges, backend.CopyRange{Dst: row, Src: out, N: 1})
	})
	return cp.Copy(ctx, lse, ml, a.ranges...)
}

// eachOutRow calls f for each query row of p (batch b, head h, query i)
// with its row in the LSE's order, (b·H + h)·Nq + i, and in the
// output's, p.Layout's.
func eachOutRow(p backend.Problem, f func(row, out int)) {
	ostr := backend.TensorStrides(p.Layout, p.H, p.Nq, 1)
	for b := range p.B {
		for h := range p.H {
			for i := range p.Nq {
				f((b*p.H+h)*p.Nq+i, ostr.Offset(b, h, i))
			}
		}
	}
}

// suffixProblem is the suffix pass of p (paged, resolved) under groups:
// every sequence's pages and length past its deepest node, in the
// attender's scratch (stable, slens).
func (a *attender) suffixProblem(p backend.Problem, groups []cascadeGroup) (backend.Problem, error) {
	ps := p.Paged.PageSize
	suffix := p
	sp := *p.Paged
	per := 0
	skip := make([]int, p.B) // prefix pages of each sequence: to its deepest node's end
	for _, g := range groups {
		for _, m := range g.members {
			skip[m] = max(skip[m], g.start+len(g.pages))
		}
	}
	for b := range p.B {
		per = max(per, p.Paged.PerSeq-skip[b])
	}
	a.stable = grow(a.stable, p.B*per)
	a.slens = grow(a.slens, p.B)
	for b := range p.B {
		row := a.stable[b*per : (b+1)*per]
		src := p.Paged.Table[b*p.Paged.PerSeq+skip[b] : (b+1)*p.Paged.PerSeq]
		n := copy(row, src)
		for j := n; j < per; j++ {
			row[j] = -1
		}
		a.slens[b] = p.KVLens[b] - skip[b]*ps
	}
	sp.PerSeq, sp.Table = per, a.stable
	suffix.Paged, suffix.Nk, suffix.KVLens = &sp, per*ps, a.slens
	if err := suffix.Validate(); err != nil {
		return suffix, err
	}
	return suffix.Resolved(), nil
}

// prefixProblem is the prefix pass of node g over p's pool: one sequence
// of KVHeads heads whose rows are every member's queries of every query
// head that reads the head's K and V (prefixRow), over the node's pages.
func prefixProblem(p backend.Problem, g cascadeGroup) (backend.Problem, error) {
	kvh, ps := p.KVHeads, p.Paged.PageSize
	rows := len(g.members) * p.Nq * (p.H / kvh)
	pre := backend.Problem{B: 1, H: kvh, KVHeads: kvh, Nq: rows, Nk: len(g.pages) * ps, D: p.D, Dv: p.Dv,
		Layout: p.Layout, Scale: p.Scale, Scales: p.Scales, VFromK: p.VFromK}
	pre.Softcap = p.Softcap
	pre.KVLens = []int{len(g.pages) * ps}
	pre.Paged = &backend.Paged{PageSize: ps, Pages: p.Paged.Pages, PerSeq: len(g.pages), Table: g.pages}
	if err := pre.Validate(); err != nil {
		return pre, err
	}
	return pre.Resolved(), nil
}

// prefixQueries calls f for each query row of a prefix pass over the
// members of p's batch: dst its offset in the pass's Q (prefixRow), src
// in p's, in elements of rows of dim (D for Q, Dv for O).
func prefixQueries(p backend.Problem, members []int, dim int, f func(dst, src int)) {
	h, nq := p.H, p.Nq
	kvh, gq := p.KVHeads, p.H/p.KVHeads
	rows := len(members) * nq * gq
	dsts, srcs := backend.TensorStrides(p.Layout, kvh, rows, dim), backend.TensorStrides(p.Layout, h, nq, dim)
	for gi, b := range members {
		for hh := range h {
			for i := range nq {
				f(dsts.Offset(0, hh/gq, prefixRow(gi, i, hh%gq, nq, gq)), srcs.Offset(b, hh, i))
			}
		}
	}
}

// prefixRow is the prefix pass's row of query i of the group's member
// gi for the query head hg of its KV head's gq: member, then query, then
// head, so that a member's rows lie together.
func prefixRow(gi, i, hg, nq, gq int) int { return (gi*nq+i)*gq + hg }

// gatherQueries writes the queries of the members' sequences to qg as
// the prefix pass's one sequence (prefixRow: len(members)·Nq·H/KVHeads
// rows of KVHeads heads), from the dense host queries qh of problem p.
func (a *attender) gatherQueries(be backend.Backend, qg backend.Buffer, qh *Tensor, members []int, p backend.Problem) error {
	d := p.D
	n := len(members) * p.Nq * p.H * d
	half := qh.DType.Half()
	if half {
		a.hqb = grow(a.hqb, n)
	} else {
		a.hq = grow(a.hq, n)
	}
	prefixQueries(p, members, d, func(dst, src int) {
		if half {
			copy(a.hqb[dst:dst+d], qh.Bits[src:])
		} else {
			copy(a.hq[dst:dst+d], qh.Data[src:])
		}
	})
	if half {
		return be.WriteBits(qg, 0, a.hqb[:n])
	}
	return be.Write(qg, 0, a.hq[:n])
}

// seqPages is the pages of each sequence of a PagePool call, for
// cascadeGroups; nil for a KVCache.
func seqPages(dst [][]int, seqs []*Seq) [][]int {
	dst = dst[:0]
	for _, s := range seqs {
		dst = append(dst, s.pages)
	}
	return dst
}
