package plan

import "github.com/attn-go/attn/backend"

// This file lays out an index list (backend.Indices) for the backward
// pass's index kernels (shaders/backidxkv.wgsl, backidxq.wgsl; gpu's
// Backward). No cgo, as kernel.go.

// IndexLists is one kernel's lists as its list binding holds them:
// Slots+1 words, the word where each slot's entries start and then
// where the last one's end, followed by the entries. A slot is a query
// row (backidxq.wgsl: its keys) or a key (backidxkv.wgsl: its rows) of
// one batch and list head g, numbered g·PerHead + base(b) + x (the
// kernels' kh·lh·lt + base + x), base(b) the batch's first row (key)
// when packed, else b·Nq (b·Nk). Most is the most entries of one slot.
type IndexLists struct {
	Words          []uint32
	Slots, PerHead int
	Most           int
}

// Entries is how many entries the lists hold in all.
func (l IndexLists) Entries() int { return len(l.Words) - l.Slots - 1 }

// Span is how many entries slots [s0, s1) hold.
func (l IndexLists) Span(s0, s1 int) int { return int(l.Words[s1] - l.Words[s0]) }

// BackwardIndexLists lays out p's index list (p resolved and validated,
// with Indices) for the backward's kernels: rows, for each query row of
// each list head, the keys it names that its position lets it see
// (Problem.KeyRange), in the order it names them, less the −1 entries;
// cols, for each key, the query rows whose rows name it, ascending. The
// two hold the same pairs, so each kernel sums its terms in one fixed
// order whatever runs them. The rows' and keys' positions are their
// batch's (0 … QRows(b) − 1, 0 … KVLen(b) − 1).
func BackwardIndexLists(p backend.Problem) (rows, cols IndexLists) {
	ix := p.Indices
	packedK := p.Packed != nil && p.Packed.CuK != nil
	qBase := func(b int) int {
		if p.Packed != nil {
			return p.Packed.CuQ[b]
		}
		return b * p.Nq
	}
	kBase := func(b int) int {
		if packedK {
			return p.Packed.CuK[b]
		}
		return b * p.Nk
	}
	rows.PerHead, cols.PerHead = p.TotalQ(), p.B*p.Nk
	if packedK {
		cols.PerHead = p.Packed.CuK[p.B]
	}
	rows.Slots, cols.Slots = ix.Heads*rows.PerHead, ix.Heads*cols.PerHead
	// The rows' lists, slot by slot (slots ascend with g, b and i), and
	// how many rows name each key.
	rows.Words = make([]uint32, rows.Slots+1, rows.Slots+1+len(ix.Idx))
	count := make([]uint32, cols.Slots+1)
	for g := range ix.Heads {
		for b := range p.B {
			kb := g*cols.PerHead + kBase(b)
			for i := range p.QRows(b) {
				s := g*rows.PerHead + qBase(b) + i
				rows.Words[s] = uint32(len(rows.Words))
				lo, hi := p.KeyRange(b, i)
				for _, j := range ix.Idx[p.IndexOffset(b, g, i):][:ix.PerRow] {
					if j >= 0 && int(j) >= lo && int(j) < hi {
						rows.Words = append(rows.Words, uint32(j))
						count[kb+int(j)]++
					}
				}
				rows.Most = max(rows.Most, len(rows.Words)-int(rows.Words[s]))
			}
		}
	}
	rows.Words[rows.Slots] = uint32(len(rows.Words))
	// The keys' lists: each key's start from the counts, then the rows
	// in ascending order.
	n := rows.Entries()
	cols.Words = make([]uint32, cols.Slots+1+n)
	at := uint32(cols.Slots + 1)
	for s, c := range count[:cols.Slots] {
		cols.Words[s] = at
		at += c
		cols.Most = max(cols.Most, int(c))
	}
	cols.Words[cols.Slots] = at
	next := count[:cols.Slots] // reused: where each key's next row goes
	copy(next, cols.Words[:cols.Slots])
	for g := range ix.Heads {
		for b := range p.B {
			kb := g*cols.PerHead + kBase(b)
			for i := range p.QRows(b) {
				s := g*rows.PerHead + qBase(b) + i
				for _, j := range rows.Words[rows.Words[s]:rows.Words[s+1]] {
					k := kb + int(j)
					cols.Words[next[k]] = uint32(i)
					next[k]++
				}
			}
		}
	}
	return rows, cols
}
