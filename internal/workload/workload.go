// Package workload is the sparse inputs attn's benchmarks draw, each
// from a generator of fixed seed, so that a point is the same workload
// on every backend, in every run and in every peer: the block masks,
// index lists and draft trees of attn bench's sweeps
// (cmd/attn/internal/bench), and of the backends' own benchmarks and
// tests, which cannot import the command's packages.
package workload

import (
	"math/rand/v2"
	"slices"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// RandomBlocks is the block mask of a block-sparse point (attn bench
// -block-size): blocks of size over p's rows and keys, shared by every
// batch and head, each on with probability density from a generator
// seeded by the sizes, and every query block's diagonal block on (the
// block of its last row's key position, bottom-right as causal masking
// aligns), so that no row is left without keys.
func RandomBlocks(p backend.Problem, size int, density float64) *backend.BlockMask {
	p = p.Resolved()
	qb, kb := (p.Nq+size-1)/size, (p.Nk+size-1)/size
	m := &backend.BlockMask{Size: size, Shape: [4]int{1, 1, qb, kb}, Keep: make([]bool, qb*kb)}
	rng := rand.New(rand.NewPCG(uint64(p.Nk)<<20|uint64(p.Nq), uint64(size)))
	for i := range m.Keep {
		m.Keep[i] = rng.Float64() < density
	}
	for bi := range qb {
		last := min((bi+1)*size, p.Nq) - 1
		if j := p.Nk - p.Nq + last; j >= 0 && j < p.Nk {
			m.Keep[bi*kb+j/size] = true
		}
	}
	return m
}

// TopK is the index list of a sparse point (attn bench -topk): for each query
// row of p, k of the keys it may see by position (Problem.KeyRange;
// all of them when fewer), drawn at random from a generator seeded by
// the sizes and sorted, −1 after them; one list a row (Heads 1).
func TopK(p backend.Problem, k int) *backend.Indices {
	p = p.Resolved()
	ix := &backend.Indices{Heads: 1, PerRow: k, Idx: make([]int32, p.TotalQ()*k)}
	p.Indices = ix
	rng := rand.New(rand.NewPCG(uint64(p.Nk), uint64(k)))
	var seen []bool
	for b := range p.B {
		for i := range p.QRows(b) {
			lo, hi := p.KeyRange(b, i)
			row := ix.Idx[p.IndexOffset(b, 0, i):][:k]
			n := hi - lo
			if n <= k {
				for t := range row {
					row[t] = -1
					if t < n {
						row[t] = int32(lo + t)
					}
				}
				continue
			}
			// k distinct keys of n: draw until k are new (k < n, and
			// fewer than half are drawn twice while k ≤ n/2), or take
			// the keys not drawn among n − k.
			seen = slices.Grow(seen[:0], n)[:n]
			clear(seen)
			pick, want := true, k
			if k > n/2 {
				pick, want = false, n-k
			}
			for got := 0; got < want; {
				if j := rng.IntN(n); !seen[j] {
					seen[j] = true
					got++
				}
			}
			t := 0
			for j := range n {
				if seen[j] == pick {
					row[t] = int32(lo + j)
					t++
				}
			}
		}
	}
	return ix
}

// RandomTree is a tree of n draft rows for each of b sequences, from a
// generator seeded by seed: row i's parent is a random earlier row (or,
// one time in four, none: a root after the prompt), and it sees its
// ancestors and itself.
func RandomTree(seed uint64, b, n int) *kernels.Tree {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	t := &kernels.Tree{B: b, N: n, Keep: make([]bool, b*n*n)}
	for s := range b {
		for i := range n {
			row := t.Keep[(s*n+i)*n:][:n]
			row[i] = true
			if i > 0 && rng.IntN(4) > 0 {
				p := rng.IntN(i)
				copy(row[:i], t.Keep[(s*n+p)*n:][:i]) // the parent's ancestors
				row[p] = true
			}
		}
	}
	return t
}
