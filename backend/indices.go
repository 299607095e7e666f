package backend

import "slices"

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
// A backend with Caps.Indices runs such a problem on its own Fused
// through attn's package internal/lower, reading only the named rows (a pool of
// one-key pages: see lower.Indexed). An
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
