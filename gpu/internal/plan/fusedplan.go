package plan

import (
	"sort"

	"github.com/attn-go/attn/backend"
)

// This file plans Fused's key chunks and splits. It has no cgo so its
// tests run everywhere.

// FusedStep is one pass of the fused kernel: query rows [I0, I1) of
// batches [B0, B1) over keys [J0, J1), cut into splits of Sk keys that
// run side by side (the grid's z), each writing a partial (O, LSE). A
// first step is the first to reach its rows: with one split it writes O
// and the LSE directly, with the sink; with several, merge.wgsl writes
// the rows from their partials. A later step's partials merge.wgsl folds
// into the rows' running result.
type FusedStep struct {
	B0, B1         int
	I0, I1, J0, J1 int
	First          bool
	Sk             int
}

// Splits is how many splits of Sk keys cover the step (1 for no keys).
func (st FusedStep) Splits() int { return max(1, CeilDiv(st.J1-st.J0, st.Sk)) }

// Direct says the step writes O and the LSE itself, with no merge.
func (st FusedStep) Direct() bool { return st.First && st.Splits() == 1 }

// StepPlan bounds FusedSteps' steps and splits.
type StepPlan struct {
	// Chunk is the most keys one split covers (an invocation's loop cap;
	// Unbounded without one); Span the most keys one step covers (its K
	// and V windows must fit a binding), both ≥ 1.
	Chunk, Span int
	// Parts is the most splits a step may have (the scratch their partial
	// results take, and merge.wgsl's loop), ≥ 1.
	Parts int
	// TileRows is the query rows of one workgroup, of each of its
	// Heads heads (fuseddecode.wgsl's workgroups hold several query heads of
	// one KV head; 0 counts as 1).
	TileRows, Heads int
	// Target is the workgroups a step should have: when its rows and
	// heads give fewer (decoding: a query or a few over a long cache),
	// its keys are split into pieces of at least MinSplit keys until
	// they do, or Parts is reached. 0: split only where Chunk says.
	Target, MinSplit int
	// Work, when > 0, is the most (query row, key) pairs a dispatch may
	// take (the submission budget over the flops a pair costs): a step
	// covers at most Work / min(its rows, TileRows) keys, and never fewer
	// than Chunk.
	Work float64
	// Cut, when set, plans each batch alone and cuts its keys [j0, j1)
	// into steps of at most n keys each by its own rule: a paged cache
	// larger than one binding, whose steps must each find their pages in
	// one window. It returns the ends of the steps, the last one j1.
	Cut func(b, j0, j1, n int) []int
}

// FusedSteps cuts Fused's work into steps (see FusedStep), visiting only
// keys some row may see by position. Over the batches of a step, row
// i's keys lie in [lo(i), hi(i)), the union of Problem.KeyRange over the
// batches, both ends non-decreasing in i (for a packed batch, rows past
// its own count extend its range, which is a superset and still
// monotone; the kernels touch none of those rows).
//
// The rows are cut into blocks: one block of all rows unless a window
// bounds both sides of every row's range (Problem.Band), and then blocks
// of the band rounded up to a multiple of TileRows (the rows of one
// workgroup), so that a block's keys [lo(first row), hi(last row))
// number at most about twice the band plus TileRows: a window of W keys
// costs O(Nq·W), not O(Nq·Nk). A block's keys are cut into steps of at
// most min(Span, Parts·Chunk) keys (or as Cut says); its first step
// covers every row of the block and writes their O and LSE (a row that
// sees none of it writes zeros, or the sink); each later step [j0, j1)
// covers the rows that may see some of it (hi(i) > j0 and lo(i) < j1),
// whose partial result merges in. A step's keys are split into pieces of
// at most Chunk keys, fewer and shorter when the step has fewer
// workgroups than Target. So every row has exactly one first step,
// before its later ones, and keys no row of a block may see are in no
// step of it. The kernels skip, within a split, the keys outside each
// workgroup's own rows.
func FusedSteps(p backend.Problem, sp StepPlan) []FusedStep {
	if p.Nq == 0 || p.B == 0 {
		return nil
	}
	stepLen := sp.Span
	if sp.Chunk <= sp.Span/sp.Parts {
		stepLen = sp.Parts * sp.Chunk
	}
	var steps []FusedStep
	group := func(b0, b1 int) {
		lo := func(i int) int {
			l := p.Nk
			for b := b0; b < b1; b++ {
				x, _ := p.KeyRange(b, i)
				l = min(l, x)
			}
			return l
		}
		hi := func(i int) int {
			h := 0
			for b := b0; b < b1; b++ {
				_, x := p.KeyRange(b, i)
				h = max(h, x)
			}
			return h
		}
		nq := 0
		for b := b0; b < b1; b++ {
			nq = max(nq, p.QRows(b))
		}
		if nq == 0 {
			return
		}
		// first row i in [r0, r1) with f(i), f monotone false → true; r1 when none.
		search := func(r0, r1 int, f func(int) bool) int {
			return r0 + sort.Search(r1-r0, func(x int) bool { return f(r0 + x) })
		}
		block := nq
		if band := p.Band(); band < p.Nk {
			block = min(nq, CeilDiv(max(band, 1), sp.TileRows)*sp.TileRows)
		}
		for r0 := 0; r0 < nq; r0 += block {
			r1 := min(nq, r0+block)
			start, end := lo(r0), hi(r1-1)
			if end <= start {
				steps = append(steps, FusedStep{b0, b1, r0, r1, start, start, true, 1})
				continue
			}
			n := stepLen
			if sp.Work > 0 {
				if w := sp.Work / float64(min(r1-r0, sp.TileRows)); w < float64(n) {
					n = max(int(w), min(sp.Chunk, n), 1)
				}
			}
			var ends []int
			if sp.Cut != nil {
				ends = sp.Cut(b0, start, end, n)
			} else {
				for _, c := range Chunks(end-start, n) {
					ends = append(ends, start+c[1])
				}
			}
			wgs := CeilDiv(r1-r0, sp.TileRows) * (b1 - b0) * p.H / max(sp.Heads, 1)
			j0 := start
			for c, j1 := range ends {
				n := j1 - j0
				sk := min(sp.Chunk, n)
				if want := min(sp.Parts, CeilDiv(sp.Target, wgs)); sp.Target > 0 && want > 1 {
					sk = min(sk, max(sp.MinSplit, CeilDiv(n, want)))
				}
				if c == 0 {
					steps = append(steps, FusedStep{b0, b1, r0, r1, j0, j1, true, sk})
				} else {
					ia := search(r0, r1, func(i int) bool { return hi(i) > j0 })
					ib := search(r0, r1, func(i int) bool { return lo(i) >= j1 })
					if ia < ib {
						steps = append(steps, FusedStep{b0, b1, ia, ib, j0, j1, false, sk})
					}
				}
				j0 = j1
			}
		}
	}
	if sp.Cut == nil {
		group(0, p.B)
		return steps
	}
	for b := range p.B {
		group(b, b+1)
	}
	return steps
}

// PageCuts cuts batch b's keys [j0, j1) of a paged cache into steps of at
// most n keys whose pages lie within one window of at most limit
// elements: a step grows a block at a time while its first and last pages
// (pool elements page·pageStride onward, pageStride each) stay within
// limit; a step always holds at least one block (a page larger than a
// binding then fails where the windows are bound, naming the sizes).
func PageCuts(pg *backend.Paged, pageStride, limit int) func(b, j0, j1, n int) []int {
	return func(b, j0, j1, n int) []int {
		ps := pg.PageSize
		var ends []int
		start := j0
		for start < j1 {
			first, last := -1, -1
			end := start
			for end < j1 {
				page := pg.Table[b*pg.PerSeq+end/ps]
				f, l := page, page
				if first >= 0 {
					f, l = min(first, page), max(last, page)
				}
				if end > start && ((l-f+1)*pageStride > limit || end-start >= n) {
					break
				}
				first, last = f, l
				end = min(j1, (end/ps+1)*ps)
				if end-start > n {
					end = start + n
				}
			}
			ends = append(ends, end)
			start = end
		}
		return ends
	}
}
