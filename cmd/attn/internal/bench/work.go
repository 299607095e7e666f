package bench

// What a point does: its flops and its compulsory bytes, which its
// GFLOP/s and GB/s count.

import "github.com/attn-go/attn/backend"

// Flops counts the multiply-adds of attention as 2 flops each:
// 2·D per attended (query, key) pair for Q·Kᵀ and 2·Dv for P·V. Only
// pairs a query may see by position are counted (Problem.KeyRange:
// causal, sliding window, key lengths), so a causal problem with Nq = Nk
// counts about half of 4·B·H·N²·D — the convention FlashAttention uses —
// and a window of W keys about 4·B·H·N·W·D. Softcap, ALiBi and sinks
// add no pairs and are not counted.
func Flops(p backend.Problem) float64 {
	return pairs(p) * float64(p.H) * 2 * float64(p.D+p.Dv)
}

// pairs is Σ_b Σ_i (hi − lo) of Problem.KeyRange(b, i): the (query, key)
// pairs one head of every batch may see. Without causal masking, a window
// or key lengths it is B·Nq·Nk; otherwise a loop over the rows of each
// batch (of one batch when every batch has the same keys).
func pairs(p backend.Problem) float64 {
	if ix := p.Indices; ix != nil {
		// The named keys each row may see by position, averaged over
		// the lists of a row's KV heads.
		n := 0.0
		for b := range p.B {
			for i := range p.QRows(b) {
				lo, hi := p.KeyRange(b, i)
				for g := range ix.Heads {
					for _, j := range ix.Idx[p.IndexOffset(b, g, i):][:ix.PerRow] {
						if int(j) >= lo && int(j) < hi {
							n++
						}
					}
				}
			}
		}
		return n / float64(ix.Heads)
	}
	if bm := p.Blocks; bm != nil {
		// The keys each row may see by position in the blocks that are
		// on, averaged over the heads' masks.
		n := 0.0
		heads := bm.Shape[1]
		for b := range p.B {
			for h := range heads {
				for i := range p.QRows(b) {
					lo, hi := p.KeyRange(b, i)
					for bj, on := range bm.Row(min(b, bm.Shape[0]-1), h, i) {
						if on {
							n += float64(max(0, min(hi, (bj+1)*bm.Size)-max(lo, bj*bm.Size)))
						}
					}
				}
			}
		}
		return n / float64(heads)
	}
	if !p.Causal && p.Window == nil && p.KVLens == nil {
		return float64(p.B) * float64(p.Nq) * float64(p.Nk)
	}
	batches, times := p.B, 1.0
	if p.KVLens == nil {
		batches, times = min(p.B, 1), float64(p.B)
	}
	n := 0.0
	for b := range batches {
		for i := range p.Nq {
			lo, hi := p.KeyRange(b, i)
			n += float64(hi - lo)
		}
	}
	return n * times
}

// Bytes is the compulsory memory traffic of computing p: Q, K and V read
// once and O written once, in float32 (K and V of Nk keys and KVHeads
// heads, Q and O of Nq rows and H heads: a decoding step's traffic is
// mostly its K and V); when the scores are materialised
// (attn's staged strategy, a peer's unfused graph) the B·H·Nq·Nk score
// matrix adds four passes: written by Q·Kᵀ, read and written by the
// softmax, read by P·V.
func Bytes(p backend.Problem, materialised bool) int64 {
	return BytesOf(p, backend.Float32, materialised)
}

// BytesOf is Bytes with Q, K, V and O stored as dt (K and V alone for an
// 8-bit dt, Q and O then float32: qoType); the scores are float32
// whatever dt is.
func BytesOf(p backend.Problem, dt backend.DType, materialised bool) int64 {
	qo := qoType(dt)
	pp := p.Resolved().Pitched(dt, dt) // q8 rows are whole blocks
	kv := dt.Bytes(pp.KLen())
	if !p.VFromK { // V from K is read in K's rows
		kv += dt.Bytes(pp.VLen())
	}
	if p.Indices != nil {
		// Only the keys some row names are read: K and V in proportion.
		kv = int64(float64(kv) * namedFraction(p))
	}
	n := qo.Bytes(p.QLen()) + kv + qo.Bytes(p.OLen())
	if materialised {
		n += 4 * 4 * int64(p.B) * int64(p.H) * int64(p.Nq) * int64(p.Nk)
	}
	return n
}

// namedFraction is the fraction of p's key rows (over every batch and
// KV head) that some row's index list names.
func namedFraction(p backend.Problem) float64 {
	ix := p.Indices
	if p.B == 0 || p.Nk == 0 {
		return 0
	}
	named := make([]bool, p.Nk)
	total := 0
	for b := range p.B {
		for g := range ix.Heads {
			clear(named)
			for i := range p.QRows(b) {
				for _, j := range ix.Idx[p.IndexOffset(b, g, i):][:ix.PerRow] {
					if j >= 0 && !named[j] {
						named[j] = true
						total++
					}
				}
			}
		}
	}
	return float64(total) / float64(p.B*ix.Heads*p.Nk)
}
