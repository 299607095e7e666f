package backendtest

import "github.com/attn-go/attn/backend"

// This file locates what the reference reads (a row of Q, K or V, a
// row's index list, a block mask's entry, a row's key position) from the
// layouts backend's docs give, worked out here rather than through the
// locators the backends use (Problem.QRowsOf and the others,
// IndexOffset, BlockMask.On, Align), so that a change of a documented
// layout in backend fails the suite instead of moving the reference
// with it.

// refQRows is batch b's query rows: CuQ[b+1] − CuQ[b] packed, else Nq.
func refQRows(p backend.Problem, b int) int {
	if p.Packed != nil {
		return p.Packed.CuQ[b+1] - p.Packed.CuQ[b]
	}
	return p.Nq
}

// refKVLen is batch b's keys: KVLens[b], else CuK[b+1] − CuK[b] where K
// is packed, else Nk.
func refKVLen(p backend.Problem, b int) int {
	switch {
	case p.KVLens != nil:
		return p.KVLens[b]
	case p.Packed != nil && p.Packed.CuK != nil:
		return p.Packed.CuK[b+1] - p.Packed.CuK[b]
	}
	return p.Nk
}

// refAlign is the key position of batch b's query row 0: CausalOffset
// when set, else bottom-right, KVLen(b) − QRows(b).
func refAlign(p backend.Problem, b int) int {
	if p.CausalOffset != nil {
		return *p.CausalOffset
	}
	return refKVLen(p, b) - refQRows(p, b)
}

// refAt is where element 0 of row i of head h in batch b of Q (op 0),
// K (1), V (2) or O (3) lies in its operand: dense [B, H, N, D] (BHND) or
// [B, N, H, D] (BNHD); packed [total, H, D] from the sequence's cu_seqlens
// entry; paged [Pages, PageSize, H, D] (BNHD) or [Pages, H, PageSize, D]
// (BHND), key i in row i mod PageSize of page Table[b·PerSeq +
// i/PageSize]; a Views entry's strides in place of the dense ones (a
// packed operand's Batch stride unused; O has none); V from K: K's
// rows.
func refAt(p backend.Problem, op, b, h, i int) int {
	if op == 2 && p.VFromK {
		op = 1
	}
	heads, rows, dim := p.H, p.Nq, p.D
	if op == 1 || op == 2 {
		heads, rows = p.KVHeads, p.Nk
	}
	if op >= 2 {
		dim = p.Dv
	}
	kv := op == 1 || op == 2
	layout, packed := p.Layout, false
	switch {
	case kv && p.Paged != nil:
		pg := p.Paged
		b, i, rows = pg.Table[b*pg.PerSeq+i/pg.PageSize], i%pg.PageSize, pg.PageSize
	case kv && p.Packed != nil && p.Packed.CuK != nil:
		layout, packed, i = backend.BNHD, true, p.Packed.CuK[b]+i
	case !kv && p.Packed != nil:
		layout, packed, i = backend.BNHD, true, p.Packed.CuQ[b]+i
	}
	batch, head, row := heads*rows*dim, rows*dim, dim
	if layout == backend.BNHD {
		batch, head, row = rows*heads*dim, dim, heads*dim
	}
	if p.Views != nil && op < 3 {
		if v := [3]*backend.Strides{p.Views.Q, p.Views.K, p.Views.V}[op]; v != nil {
			batch, head, row = v.Batch, v.Head, v.Row
		}
	}
	if packed {
		b = 0
	}
	return b*batch + h*head + i*row
}

// refIndexList is the index list of query row i of batch b for KV head
// g: Idx is [B, Heads, Nq, PerRow], or [Heads, CuQ[B], PerRow] when the queries
// are packed, and a list shared by every head (Heads = 1) is head 0's.
func refIndexList(p backend.Problem, b, g, i int) []int32 {
	ix := p.Indices
	if ix.Heads == 1 {
		g = 0
	}
	row := (b*ix.Heads+g)*p.Nq + i
	if p.Packed != nil {
		row = g*p.Packed.CuQ[p.B] + p.Packed.CuQ[b] + i
	}
	return ix.Idx[row*ix.PerRow : (row+1)*ix.PerRow]
}

// refBlockOn is the block mask's entry for query row i and key j of
// head h in batch b: Keep row-major over Shape, [B|1, H|1, ⌈Nq/Size⌉,
// ⌈Nk/Size⌉], a dimension of 1 broadcast; a block past the shape holds
// no row or key (off).
func refBlockOn(m *backend.BlockMask, b, h, i, j int) bool {
	bi, bj := i/m.Size, j/m.Size
	if bi >= m.Shape[2] || bj >= m.Shape[3] {
		return false
	}
	if m.Shape[0] == 1 {
		b = 0
	}
	if m.Shape[1] == 1 {
		h = 0
	}
	return m.Keep[((b*m.Shape[1]+h)*m.Shape[2]+bi)*m.Shape[3]+bj]
}

// refLSE is where query row i of head h in batch b lies in the LSE:
// [B, H, Nq], or [H, CuQ[B]] when packed.
func refLSE(p backend.Problem, b, h, i int) int {
	if p.Packed != nil {
		return h*p.Packed.CuQ[p.B] + p.Packed.CuQ[b] + i
	}
	return (b*p.H+h)*p.Nq + i
}
