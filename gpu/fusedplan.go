package gpu

import (
	"sort"

	"github.com/attn-go/attn/backend"
)

// This file plans Fused's key chunks. It has no cgo so its tests run
// everywhere.

// fusedStep is one pass of the fused kernel: query rows [i0, i1) over
// keys [j0, j1). A first step is the first to reach its rows: it writes O
// and the LSE directly, with the sink; a later step of the same rows
// writes a partial (O, LSE) that merge.wgsl folds in.
type fusedStep struct {
	i0, i1, j0, j1 int
	first          bool
}

// fusedSteps cuts Fused's work into steps of at most chunk keys (chunk ≥
// 1), visiting only keys some row may see by position. Over every batch,
// row i's keys lie in [lo(i), hi(i)), the union of Problem.KeyRange over
// the batches, both ends non-decreasing in i.
//
// The rows are cut into blocks: one block of all Nq rows unless a window
// bounds both sides of every row's range (Problem.Band), and then blocks
// of the band rounded up to a multiple of tileRows (the rows of one
// workgroup), so that a block's keys [lo(first row), hi(last row)) number
// at most about twice the band plus tileRows: a window of W keys costs
// O(Nq·W), not O(Nq·Nk). A block's keys are cut into chunks: its first
// step covers every row of the block over the first chunk and writes
// their O and LSE (a row that sees none of it writes zeros, or the sink);
// each later chunk [j0, j1) is a later step over the rows that may see
// some of it (hi(i) > j0 and lo(i) < j1), whose partial result merges in.
// So every row has exactly one first step, before its later ones, and
// keys no row of a block may see are in no step of it. The kernels skip,
// within a step, the keys outside each workgroup's own rows.
func fusedSteps(p backend.Problem, chunk, tileRows int) []fusedStep {
	if p.Nq == 0 {
		return nil
	}
	lo := func(i int) int {
		l := p.Nk
		for b := range max(p.B, 1) {
			x, _ := p.KeyRange(b, i)
			l = min(l, x)
		}
		return l
	}
	hi := func(i int) int {
		h := 0
		for b := range max(p.B, 1) {
			_, x := p.KeyRange(b, i)
			h = max(h, x)
		}
		return h
	}
	// first row i in [r0, r1) with f(i), f monotone false → true; r1 when none.
	search := func(r0, r1 int, f func(int) bool) int {
		return r0 + sort.Search(r1-r0, func(x int) bool { return f(r0 + x) })
	}
	block := p.Nq
	if band := p.Band(); band < p.Nk {
		block = min(p.Nq, ceilDiv(max(band, 1), tileRows)*tileRows)
	}
	var steps []fusedStep
	for r0 := 0; r0 < p.Nq; r0 += block {
		r1 := min(p.Nq, r0+block)
		start, end := lo(r0), hi(r1-1)
		if end <= start {
			steps = append(steps, fusedStep{r0, r1, start, start, true})
			continue
		}
		for c, kc := range chunks(end-start, chunk) {
			j0, j1 := start+kc[0], start+kc[1]
			if c == 0 {
				steps = append(steps, fusedStep{r0, r1, j0, j1, true})
				continue
			}
			ia := search(r0, r1, func(i int) bool { return hi(i) > j0 })
			ib := search(r0, r1, func(i int) bool { return lo(i) >= j1 })
			if ia < ib {
				steps = append(steps, fusedStep{ia, ib, j0, j1, false})
			}
		}
	}
	return steps
}
