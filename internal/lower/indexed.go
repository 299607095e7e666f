package lower

import (
	"context"
	"sync"

	"github.com/attn-go/attn/backend"
)

// Indexed computes Fused for a problem with an index list
// (backend.Problem.Indices) on be, through ops (be's own, or a
// recording of be's when record is set), after checking p as be's Fused
// would. Fused calls it for such a problem, after any padding.
//
// It lowers the list to a problem that Fused runs without one: each
// query row (and, where the list is per KV head or K stores a key's
// heads apart, each of its KV heads) becomes a sequence of its own, one
// query over a paged pool of one-key pages, whose block table names the
// row's keys that its masks leave visible. K and V are read in place,
// only at the named rows, through the caller's block table when paged,
// in their own dtype. The lowered problem has no mask but the
// sequences' key counts, so every Fused kernel of be that takes paged
// caches runs it: one call in all. Where a row's output, LSE or query
// is not where the lowered problem puts it (queries in BHND with
// Nq > 1, an LSE with Nq > 1 or packed, strided queries), or where the
// KV heads split apart have sinks or scales of their own (one call a
// KV head then), they go through scratch buffers and Copy, recorded too
// (the scratch released once its ops are recorded).
//
// Bias, a keep-mask, ALiBi and a block mask are ErrUnsupported with an
// index list.
func Indexed(ctx context.Context, be backend.Backend, ops Ops, record bool, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	if err := p.Validate(be.Caps(), q, k, v, o, lse); err != nil {
		return err
	}
	return indexed(ctx, be, ops, record, p, q, k, v, o, lse)
}

// indexed is Indexed for a validated p.
func indexed(ctx context.Context, be backend.Backend, ops Ops, record bool, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	switch {
	case p.Bias != nil || p.Keep != nil:
		return backend.Errorf(backend.ErrUnsupported, "an index list with a bias or keep-mask (B=%d H=%d Nq=%d Nk=%d): fold the mask into the list", p.B, p.H, p.Nq, p.Nk)
	case p.ALiBi != nil:
		return backend.Errorf(backend.ErrUnsupported, "an index list with ALiBi (B=%d H=%d Nq=%d Nk=%d)", p.B, p.H, p.Nq, p.Nk)
	case p.Blocks != nil:
		return backend.Errorf(backend.ErrUnsupported, "an index list with a block mask (B=%d H=%d Nq=%d Nk=%d): the list names the keys", p.B, p.H, p.Nq, p.Nk)
	}
	kr, vr := p.KRowsOf(), p.VRowsOf()
	// A sequence's pages are whole rows of its KV heads: one row of
	// every head where a key's heads lie side by side, else one head's.
	split := p.Indices.Heads > 1 || p.KVHeads > 1 && (kr.Head != p.D || !p.VFromK && vr.Head != p.Dv)
	if !split {
		return runIndexed(ctx, be, ops, record, p, false, []int{0}, q, k, v, o, lse)
	}
	// Each KV head's sequences share its sinks and scales: one call for
	// all of them where every head has the same, else one a head.
	same := p.Sinks == nil
	if s := p.Scales; s != nil {
		for g := 1; g < p.KVHeads; g++ {
			same = same && s.KScale(g) == s.KScale(0) && s.VScale(g) == s.VScale(0)
		}
	}
	if same {
		all := make([]int, p.KVHeads)
		for g := range all {
			all[g] = g
		}
		return runIndexed(ctx, be, ops, record, p, true, all, q, k, v, o, lse)
	}
	for g := range p.KVHeads {
		if err := runIndexed(ctx, be, ops, record, p, true, []int{g}, q, k, v, o, lse); err != nil {
			return err
		}
	}
	return nil
}

// runIndexed lowers p for the KV heads gs (split apart, or gs = [0]
// for all of them side by side when not split) and runs it, through scratch where the
// lowering cannot read and write the caller's buffers in place.
func runIndexed(ctx context.Context, be backend.Backend, ops Ops, record bool, p backend.FusedParams, split bool, gs []int, q, k, v, o, lse backend.Buffer) error {
	// The lowering's table and lengths come from a pool when the call
	// waits for its work (a recording may keep them), so that a
	// decoding loop does not fault in a fresh table every step.
	var sc *loweringScratch
	if !record {
		sc = loweringPool.Get().(*loweringScratch)
		defer loweringPool.Put(sc)
	}
	l, err := lowerIndexed(p, split, gs, k, v, sc)
	if err != nil {
		return err
	}
	l.scatterLSE = l.scatterLSE && lse != nil
	if !l.gatherQ && !l.scatterO && !l.scatterLSE {
		return ops.Fused(ctx, l.p, q, k, v, o, lse)
	}
	alloc, free := scratchOf(be)
	defer free()
	lp := l.p.Problem
	q2, o2, lse2 := q, o, lse
	if l.gatherQ {
		if q2, err = alloc(q.DType(), lp.QLen()); err != nil {
			return err
		}
	}
	if l.scatterO {
		if o2, err = alloc(o.DType(), lp.OLen()); err != nil {
			return err
		}
	}
	if l.scatterLSE {
		if lse2, err = alloc(backend.Float32, lp.LSELen()); err != nil {
			return err
		}
	}
	qr, or, sr := l.ranges(p.Problem)
	if l.gatherQ {
		if err := ops.Copy(ctx, q2, q, qr...); err != nil {
			return err
		}
	}
	if err := ops.Fused(ctx, l.p, q2, k, v, o2, lse2); err != nil {
		return err
	}
	if l.scatterO {
		if err := ops.Copy(ctx, o, o2, or...); err != nil {
			return err
		}
	}
	if l.scatterLSE {
		if err := ops.Copy(ctx, lse, lse2, sr...); err != nil {
			return err
		}
	}
	return nil
}

// indexedLowering is a problem with an index list lowered to one
// without (Indexed): sequence s is query row s/len(gs) (in
// rowIndex's order) over KV head gs[s mod len(gs)] with its hs query
// heads, or over every KV head when they are not split (gs = [0], hs =
// H).
type indexedLowering struct {
	p                             backend.FusedParams
	gs                            []int
	hs                            int
	gatherQ, scatterO, scatterLSE bool
}

// loweringScratch is a lowering's table and lengths, kept between calls
// (loweringPool).
type loweringScratch struct{ table, lens []int }

var loweringPool = sync.Pool{New: func() any { return new(loweringScratch) }}

// lowerIndexed lowers p (validated, with Indices) for the KV heads gs
// as Indexed says: split, one sequence a row and KV head of gs;
// else one a row over all KV heads (gs = [0]). Its table and lengths
// are sc's (grown and cleared) when sc is not nil, else new.
func lowerIndexed(p backend.FusedParams, split bool, gs []int, k, v backend.Buffer, sc *loweringScratch) (indexedLowering, error) {
	ix := p.Indices
	kr, vr := p.KRowsOf(), p.VRowsOf()
	kvh, hs := p.KVHeads, p.H
	if split {
		kvh, hs = 1, p.H/p.KVHeads
	}
	lp := p.Problem
	lp.Indices, lp.Blocks, lp.Packed, lp.Views, lp.Variants = nil, nil, nil, nil, backend.Variants{Softcap: p.Softcap}
	lp.Causal = false
	lp.H, lp.KVHeads, lp.Nq, lp.Nk = hs, kvh, 1, ix.PerRow
	if p.Sinks != nil {
		lp.Sinks = p.Sinks[gs[0]*hs:][:hs]
	}
	if s := p.Scales; s != nil && split {
		lp.Scales = &backend.Scales{}
		if s.K != nil {
			lp.Scales.K = s.K[gs[0] : gs[0]+1]
		}
		if s.V != nil {
			lp.Scales.V = s.V[gs[0] : gs[0]+1]
		}
	}
	unitK, unitV := kvh*p.D, kvh*p.Dv
	pages := k.Len() / unitK
	if !p.VFromK {
		pages = min(pages, v.Len()/unitV)
	}
	ng := len(gs)
	nseq := p.TotalQ() * ng
	var table, lens []int
	if sc != nil {
		if cap(sc.table) < nseq*ix.PerRow {
			sc.table = make([]int, nseq*ix.PerRow)
		}
		if cap(sc.lens) < nseq {
			sc.lens = make([]int, nseq)
		}
		table, lens = sc.table[:nseq*ix.PerRow], sc.lens[:nseq]
		clear(table)
	} else {
		table, lens = make([]int, nseq*ix.PerRow), make([]int, nseq)
	}
	// V's row of a key is in the page of K's row wherever V's strides
	// are K's scaled by Dv/D (dense, packed and paged alike), and dense
	// and packed rows lie at one stride: then a key's page is one
	// multiply-add, and only a strided or paged K is looked up key by
	// key.
	ks, vs := kr.Strides, vr.Strides
	sameV := p.VFromK || ks.Batch*unitV == vs.Batch*unitK && ks.Head*unitV == vs.Head*unitK && ks.Row*unitV == vs.Row*unitK
	for b := range p.B {
		for gi, g := range gs {
			base := kr.Offset(b, g, 0)
			linear := kr.Pages == nil && sameV && base%unitK == 0 && ks.Row%unitK == 0
			base, step := base/unitK, ks.Row/unitK
			for i := range p.QRows(b) {
				lo, hi := p.KeyRange(b, i)
				s := rowIndex(p.Problem, b, i)*ng + gi
				row := table[s*ix.PerRow:][:ix.PerRow]
				n := 0
				for _, j := range ix.Idx[p.IndexOffset(b, g, i):][:ix.PerRow] {
					if j < 0 || int(j) < lo || int(j) >= hi {
						continue
					}
					if linear {
						row[n] = base + int(j)*step
						n++
						continue
					}
					off := kr.Offset(b, g, int(j))
					page := off / unitK
					if off%unitK != 0 || !sameV && vr.Offset(b, g, int(j)) != page*unitV {
						return indexedLowering{}, backend.Errorf(backend.ErrUnsupported, "an index list over K and V whose rows are not whole rows of a pool (key %d of batch %d at K element %d, V element %d; KVHeads=%d D=%d Dv=%d)",
							j, b, off, vr.Offset(b, g, int(j)), p.KVHeads, p.D, p.Dv)
					}
					row[n] = page
					n++
				}
				lens[s] = n
			}
		}
	}
	lp.B = nseq
	lp.KVLens = lens
	lp.Paged = &backend.Paged{PageSize: 1, Pages: pages, PerSeq: ix.PerRow, Table: table}
	l := indexedLowering{p: backend.FusedParams{Problem: lp}, gs: gs, hs: hs}
	// The lowered Q and O are dense [rows·len(gs), hs, D|Dv], which is
	// where BNHD (and packed) rows lie, and BHND's when Nq is 1, as long
	// as gs holds every head; the lowered LSE is [rows, H], the
	// caller's only when Nq is 1.
	whole := ng*hs == p.H
	inPlace := whole && (p.Packed != nil || p.Layout == backend.BNHD || p.Nq == 1)
	l.gatherQ = !inPlace || p.Views != nil && p.Views.Q != nil
	l.scatterO = !inPlace
	l.scatterLSE = !whole || p.Packed != nil || p.Nq != 1
	return l, nil
}

// rowIndex numbers query row i of batch b among all rows: CuQ[b] + i
// when packed, else b·Nq + i.
func rowIndex(p backend.Problem, b, i int) int {
	if p.Packed != nil {
		return p.Packed.CuQ[b] + i
	}
	return b*p.Nq + i
}

// ranges are the copies of the scratch path: Q's rows into the lowered
// Q, and the lowered O's rows and LSE's entries out to p's.
func (l indexedLowering) ranges(p backend.Problem) (q, o, lse []backend.CopyRange) {
	qr, or := p.QRowsOf(), p.ORowsOf()
	ng := len(l.gs)
	for b := range p.B {
		for i := range p.QRows(b) {
			r := rowIndex(p, b, i)
			for gi, g := range l.gs {
				for hh := range l.hs {
					h := g*l.hs + hh
					s := (r*ng+gi)*l.hs + hh // the lowered row: sequence, then head
					if l.gatherQ {
						q = append(q, backend.CopyRange{Dst: s * p.D, Src: qr.Offset(b, h, i), N: p.D})
					}
					if l.scatterO {
						o = append(o, backend.CopyRange{Dst: or.Offset(b, h, i), Src: s * p.Dv, N: p.Dv})
					}
					if l.scatterLSE {
						lse = append(lse, backend.CopyRange{Dst: p.LSEOffset(b, h, i), Src: s, N: 1})
					}
				}
			}
		}
	}
	return q, o, lse
}
