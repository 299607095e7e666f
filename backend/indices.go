package backend

import (
	"context"
	"slices"
	"sync"
)

// Indices names, for each query row, the keys it attends: sparse
// attention over chosen keys, as DeepSeek's sparse attention (an indexer
// picks a few thousand keys a row), NSA's selected blocks and Quest's
// top-k pages choose them. The keys a row names are the only ones it
// reads; every other mask still applies to them (key lengths, causal
// masking and its offset, the window), so a named key that a mask hides
// is not seen.
//
// Idx holds int32 key positions, PerRow entries a row, laid out [B,
// Heads, Nq, PerRow], or [Heads, CuQ[B], PerRow] when the queries are
// packed: the list of query row i of batch b for KV head g is the
// PerRow entries from IndexOffset(b, g, i). A position is a key of the
// row's own sequence, 0 … KVLen(b) − 1, whatever stores it (dense,
// packed or paged: through the block table). −1 is no key: lists of different lengths pad with
// it, anywhere in the row. Heads is 1 (one list a row, shared by every
// head, as DeepSeek's indexer gives) or KVHeads (one list for each KV
// head's group of query heads, as NSA selects).
//
// Problem.Validate refuses (ErrShape, naming the batch, head, row and
// entry) a list of the wrong length, a position below −1 or at or past
// the sequence's key count, and a key named twice in one row, before any
// work. A row that names no key, or whose named keys the masks all
// hide, outputs zeros with LSE −Inf (Sinks[h] with a sink), as a fully
// masked row does. The order of a row's keys changes nothing but the
// order of the sums.
//
// FusedIndexed runs such a problem on a backend's own Fused, reading
// only the named rows (a pool of one-key pages: see FusedIndexed). An
// index list takes no bias, keep-mask, ALiBi or block mask
// (ErrUnsupported: fold a mask into the list); the other variants (softcap, sinks, scales,
// V from K) and every storage dtype apply as they do without one.
type Indices struct {
	// Heads is 1 or KVHeads; PerRow is the entries a row (0 is allowed:
	// no row sees a key), a top-k's k (not K the tensor).
	Heads, PerRow int
	Idx           []int32
}

// IndexOffset is where the list of query row i of batch b for KV head
// g starts in Indices.Idx (g is 0 when Heads is 1).
func (p Problem) IndexOffset(b, g, i int) int {
	ix := p.Indices
	if ix.Heads == 1 {
		g = 0
	}
	if p.Packed != nil {
		return (g*p.Packed.CuQ[p.B] + p.Packed.CuQ[b] + i) * ix.PerRow
	}
	return ((b*ix.Heads+g)*p.Nq + i) * ix.PerRow
}

// validateIndices checks Indices against p's sizes and key lengths (the
// rest of p already checked).
func (p Problem) validateIndices() error {
	ix := p.Indices
	if ix == nil {
		return nil
	}
	if ix.Heads != 1 && ix.Heads != p.KVHeads {
		return Errorf(ErrShape, "index list for %d heads: want 1 (shared by every head) or KVHeads=%d", ix.Heads, p.KVHeads)
	}
	if ix.PerRow < 0 {
		return Errorf(ErrShape, "index list of %d keys a row: want ≥ 0", ix.PerRow)
	}
	n, ok := CheckedProduct(ix.Heads, p.TotalQ(), ix.PerRow)
	if !ok || len(ix.Idx) != n {
		shape := "[B, Heads, Nq, PerRow]"
		if p.Packed != nil {
			shape = "[Heads, CuQ[B], PerRow]"
		}
		return Errorf(ErrShape, "index list of %d entries: want %s = %d·%d·%d for B=%d Nq=%d",
			len(ix.Idx), shape, ix.Heads, p.TotalQ(), ix.PerRow, p.B, p.Nq)
	}
	maxLen := 0
	for b := range p.B {
		maxLen = max(maxLen, p.KVLen(b))
	}
	// One bit a key: a row's keys are set, checked, then cleared by the
	// same entries, so the check costs the list's length.
	seen := make([]uint64, (maxLen+63)/64)
	for b := range p.B {
		n := p.KVLen(b)
		for g := range ix.Heads {
			for i := range p.QRows(b) {
				off := p.IndexOffset(b, g, i)
				row := ix.Idx[off : off+ix.PerRow]
				var err error
				for t, j := range row {
					switch {
					case j == -1:
						continue
					case j < -1 || int(j) >= n:
						err = Errorf(ErrShape, "index list: batch %d, head %d, row %d, entry %d names key %d: want −1 (none) or 0 … %d (the sequence has %d keys)",
							b, g, i, t, j, n-1, n)
					case seen[j/64]&(1<<(j%64)) != 0:
						first := slices.Index(row, j)
						err = Errorf(ErrShape, "index list: batch %d, head %d, row %d names key %d twice (entries %d and %d)",
							b, g, i, j, first, t)
					}
					if err != nil {
						for _, j := range row[:t] {
							if j >= 0 {
								seen[j/64] = 0
							}
						}
						return err
					}
					seen[j/64] |= 1 << (j % 64)
				}
				for _, j := range row {
					if j >= 0 {
						seen[j/64] = 0
					}
				}
			}
		}
	}
	return nil
}

// IndexedOps runs the lowered problem of FusedIndexed: a backend's own
// ops, or a recording's.
type IndexedOps interface {
	Fused(ctx context.Context, p FusedParams, q, k, v, o, lse Buffer) error
	Copier
}

// scratchOf returns the allocator of a lowering's scratch buffers on be,
// and the function that frees what it allocated when the lowering
// returns: recorded, once its ops are recorded (a Recording keeps a
// released buffer until the work that uses it has run).
func scratchOf(be Backend) (alloc func(DType, int) (Buffer, error), free func()) {
	var bufs []Buffer
	alloc = func(t DType, n int) (Buffer, error) {
		b, err := be.Alloc(t, n)
		if err == nil {
			bufs = append(bufs, b)
		}
		return b, err
	}
	return alloc, func() {
		for _, b := range bufs {
			b.Release()
		}
	}
}

// FusedIndexed computes Fused for a problem with an index list
// (Problem.Indices) on be, through ops (be's own, or a recording of
// be's when record is set). A backend's Fused that claims Caps.Indices
// calls it for such a problem.
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
func FusedIndexed(ctx context.Context, be Backend, ops IndexedOps, record bool, p FusedParams, q, k, v, o, lse Buffer) error {
	if err := p.validate(q, k, v, o, lse); err != nil {
		return err
	}
	switch {
	case p.Bias != nil || p.Keep != nil:
		return Errorf(ErrUnsupported, "an index list with a bias or keep-mask (B=%d H=%d Nq=%d Nk=%d): fold the mask into the list", p.B, p.H, p.Nq, p.Nk)
	case p.ALiBi != nil:
		return Errorf(ErrUnsupported, "an index list with ALiBi (B=%d H=%d Nq=%d Nk=%d)", p.B, p.H, p.Nq, p.Nk)
	case p.Blocks != nil:
		return Errorf(ErrUnsupported, "an index list with a block mask (B=%d H=%d Nq=%d Nk=%d): the list names the keys", p.B, p.H, p.Nq, p.Nk)
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
func runIndexed(ctx context.Context, be Backend, ops IndexedOps, record bool, p FusedParams, split bool, gs []int, q, k, v, o, lse Buffer) error {
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
		if lse2, err = alloc(Float32, lp.LSELen()); err != nil {
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
// without (FusedIndexed): sequence s is query row s/len(gs) (in
// rowIndex's order) over KV head gs[s mod len(gs)] with its hs query
// heads, or over every KV head when they are not split (gs = [0], hs =
// H).
type indexedLowering struct {
	p                             FusedParams
	gs                            []int
	hs                            int
	gatherQ, scatterO, scatterLSE bool
}

// loweringScratch is a lowering's table and lengths, kept between calls
// (loweringPool).
type loweringScratch struct{ table, lens []int }

var loweringPool = sync.Pool{New: func() any { return new(loweringScratch) }}

// lowerIndexed lowers p (validated, with Indices) for the KV heads gs
// as FusedIndexed says: split, one sequence a row and KV head of gs;
// else one a row over all KV heads (gs = [0]). Its table and lengths
// are sc's (grown and cleared) when sc is not nil, else new.
func lowerIndexed(p FusedParams, split bool, gs []int, k, v Buffer, sc *loweringScratch) (indexedLowering, error) {
	ix := p.Indices
	kr, vr := p.KRowsOf(), p.VRowsOf()
	kvh, hs := p.KVHeads, p.H
	if split {
		kvh, hs = 1, p.H/p.KVHeads
	}
	lp := p.Problem
	lp.Indices, lp.Blocks, lp.Packed, lp.Views, lp.Variants = nil, nil, nil, nil, Variants{Softcap: p.Softcap}
	lp.Causal = false
	lp.H, lp.KVHeads, lp.Nq, lp.Nk = hs, kvh, 1, ix.PerRow
	if p.Sinks != nil {
		lp.Sinks = p.Sinks[gs[0]*hs:][:hs]
	}
	if s := p.Scales; s != nil && split {
		lp.Scales = &Scales{}
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
				s := p.rowIndex(b, i)*ng + gi
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
						return indexedLowering{}, Errorf(ErrUnsupported, "an index list over K and V whose rows are not whole rows of a pool (key %d of batch %d at K element %d, V element %d; KVHeads=%d D=%d Dv=%d)",
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
	lp.Paged = &Paged{PageSize: 1, Pages: pages, PerSeq: ix.PerRow, Table: table}
	l := indexedLowering{p: FusedParams{Problem: lp}, gs: gs, hs: hs}
	// The lowered Q and O are dense [rows·len(gs), hs, D|Dv], which is
	// where BNHD (and packed) rows lie, and BHND's when Nq is 1, as long
	// as gs holds every head; the lowered LSE is [rows, H], the
	// caller's only when Nq is 1.
	whole := ng*hs == p.H
	inPlace := whole && (p.Packed != nil || p.Layout == BNHD || p.Nq == 1)
	l.gatherQ = !inPlace || p.Views != nil && p.Views.Q != nil
	l.scatterO = !inPlace
	l.scatterLSE = !whole || p.Packed != nil || p.Nq != 1
	return l, nil
}

// rowIndex numbers query row i of batch b among all rows: CuQ[b] + i
// when packed, else b·Nq + i.
func (p Problem) rowIndex(b, i int) int {
	if p.Packed != nil {
		return p.Packed.CuQ[b] + i
	}
	return b*p.Nq + i
}

// ranges are the copies of the scratch path: Q's rows into the lowered
// Q, and the lowered O's rows and LSE's entries out to p's.
func (l indexedLowering) ranges(p Problem) (q, o, lse []CopyRange) {
	qr, or := p.QRowsOf(), p.ORowsOf()
	ng := len(l.gs)
	for b := range p.B {
		for i := range p.QRows(b) {
			r := p.rowIndex(b, i)
			for gi, g := range l.gs {
				for hh := range l.hs {
					h := g*l.hs + hh
					s := (r*ng+gi)*l.hs + hh // the lowered row: sequence, then head
					if l.gatherQ {
						q = append(q, CopyRange{Dst: s * p.D, Src: qr.Offset(b, h, i), N: p.D})
					}
					if l.scatterO {
						o = append(o, CopyRange{Dst: or.Offset(b, h, i), Src: s * p.Dv, N: p.Dv})
					}
					if l.scatterLSE {
						lse = append(lse, CopyRange{Dst: p.LSEOffset(b, h, i), Src: s, N: 1})
					}
				}
			}
		}
	}
	return q, o, lse
}
