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
// the batches, both ends non-decreasing in i. The keys [lo(0),
// hi(Nq−1)) are cut into chunks of chunk keys, and chunk c = [j0, j1)
// gets
//
//   - a later step over the rows that saw earlier chunks and reach into
//     this one: lo(i) < j0 < hi(i);
//   - a first step over the rows whose own range starts in it: j0 ≤ lo(i)
//     < j1 (every row with lo(i) below the first chunk's end for the
//     first, every row from there on for the last).
//
// Every row thus has exactly one first step, its later steps come after
// it, and a row that sees no key gets a first step (over at most one
// chunk, in which the kernel finds nothing) that writes its zeros. A
// sliding window of W keys therefore costs about Nq·(W + chunk)/chunk
// steps' worth of rows, not Nq·Nk/chunk; the kernels skip the keys outside
// each workgroup's rows within a step. Nq = 0 gives no step; no key in
// any range gives one first step over no keys.
func fusedSteps(p backend.Problem, chunk int) []fusedStep {
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
	// first row i with f(i) true, f monotone false → true; Nq when none.
	search := func(f func(int) bool) int { return sort.Search(p.Nq, f) }

	start, end := lo(0), hi(p.Nq-1)
	if end <= start {
		return []fusedStep{{0, p.Nq, start, start, true}}
	}
	cs := chunks(end-start, chunk)
	var steps []fusedStep
	for c, kc := range cs {
		j0, j1 := start+kc[0], start+kc[1]
		if c > 0 {
			ia := search(func(i int) bool { return hi(i) > j0 })
			ib := search(func(i int) bool { return lo(i) >= j0 })
			if ia < ib {
				steps = append(steps, fusedStep{ia, ib, j0, j1, false})
			}
		}
		fa, fb := 0, p.Nq
		if c > 0 {
			fa = search(func(i int) bool { return lo(i) >= j0 })
		}
		if c < len(cs)-1 {
			fb = search(func(i int) bool { return lo(i) >= j1 })
		}
		if fa < fb {
			steps = append(steps, fusedStep{fa, fb, j0, j1, true})
		}
	}
	return steps
}
