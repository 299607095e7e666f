package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// TestBackwardIndexLists checks the backward's lists against the
// caller's index list read naively: each row's list is the keys its
// list names, in its order, less −1 and the keys its position hides;
// each key's list is, ascending, the rows whose lists hold it; the
// slots sit where the kernels compute them (kh·lh·lt + base + x), the
// offsets run on from Slots + 1 and Most is the longest list. Dense and
// packed sequences (keys packed or not), key lengths, causal masking,
// windows, lists shared by the heads and one a KV head, rows that name
// no key and no entries at all.
func TestBackwardIndexLists(t *testing.T) {
	rng := rand.New(rand.NewPCG(80, 1))
	for n := range 300 {
		kvh := 1 + rng.IntN(3)
		p := backend.Problem{B: 1 + rng.IntN(3), H: kvh * (1 + rng.IntN(2)), KVHeads: kvh, Nq: rng.IntN(20), Nk: rng.IntN(40), D: 4}
		switch n % 4 {
		case 1:
			qs, ks := make([]int, p.B), make([]int, p.B)
			for b := range qs {
				qs[b], ks[b] = rng.IntN(12), rng.IntN(30)
			}
			if rng.IntN(2) == 0 {
				ks = nil
			}
			p = backendtest.PackedProblem(p, qs, ks)
		case 2:
			p.KVLens = make([]int, p.B)
			for b := range p.KVLens {
				p.KVLens[b] = rng.IntN(p.Nk + 1)
			}
		}
		p.Causal = rng.IntN(2) == 0
		if rng.IntN(3) == 0 {
			p.Window = &backend.Window{Left: rng.IntN(10), Right: rng.IntN(3) - 1}
		}
		heads := 1
		if rng.IntN(2) == 0 {
			heads = kvh
		}
		p = backendtest.WithIndices(rng, p, heads, rng.IntN(12))
		if err := p.Validate(); err != nil {
			t.Fatalf("case %d: %v", n, err)
		}
		p = p.Resolved()
		t.Run(fmt.Sprint(n), func(t *testing.T) { checkIndexLists(t, p) })
	}
}

func checkIndexLists(t *testing.T, p backend.Problem) {
	rows, cols := BackwardIndexLists(p)
	ix := p.Indices
	packedK := p.Packed != nil && p.Packed.CuK != nil
	list := func(l IndexLists, s int) []uint32 {
		if s < 0 || s >= l.Slots {
			t.Fatalf("slot %d of %d", s, l.Slots)
		}
		return l.Words[l.Words[s]:l.Words[s+1]]
	}
	for _, l := range []IndexLists{rows, cols} {
		if l.Words[0] != uint32(l.Slots+1) || int(l.Words[l.Slots]) != len(l.Words) {
			t.Fatalf("offsets run from %d to %d over %d words, want from %d to the end", l.Words[0], l.Words[l.Slots], len(l.Words), l.Slots+1)
		}
		most := 0
		for s := range l.Slots {
			if l.Words[s+1] < l.Words[s] {
				t.Fatalf("slot %d ends at %d, before it starts (%d)", s, l.Words[s+1], l.Words[s])
			}
			most = max(most, int(l.Words[s+1]-l.Words[s]))
		}
		if l.Most != most {
			t.Errorf("Most = %d, want %d", l.Most, most)
		}
	}
	if rows.Entries() != cols.Entries() {
		t.Fatalf("%d entries in the rows' lists, %d in the keys'", rows.Entries(), cols.Entries())
	}
	wantK := map[int][]uint32{} // key slot → rows
	for g := range ix.Heads {
		for b := range p.B {
			qb, kb := b*p.Nq, b*p.Nk
			if p.Packed != nil {
				qb = p.Packed.CuQ[b]
			}
			if packedK {
				kb = p.Packed.CuK[b]
			}
			for i := range p.QRows(b) {
				lo, hi := p.KeyRange(b, i)
				var want []uint32
				for _, j := range ix.Idx[p.IndexOffset(b, g, i):][:ix.PerRow] {
					if j >= 0 && int(j) >= lo && int(j) < hi {
						want = append(want, uint32(j))
						s := g*cols.PerHead + kb + int(j)
						wantK[s] = append(wantK[s], uint32(i))
					}
				}
				if got := list(rows, g*rows.PerHead+qb+i); !slices.Equal(got, want) {
					t.Errorf("head %d, batch %d, row %d: keys %v, want %v", g, b, i, got, want)
				}
			}
		}
	}
	for s := range cols.Slots {
		if got := list(cols, s); !slices.Equal(got, wantK[s]) {
			t.Errorf("key slot %d: rows %v, want %v", s, got, wantK[s])
		}
	}
}

// TestIndexEntries: under the CPU plan's loop cap an invocation of
// backidxkv.wgsl (an entry and its G query heads an iteration each) and
// of backidxq.wgsl (an entry an iteration) stays within LoopBudget,
// with the backward's other kernels' margin, for groups of 1 to 128 and
// head dims of 1 to 256; the hardware plan bounds neither.
func TestIndexEntries(t *testing.T) {
	cpu, hw := AdapterPlan{loopCap: LoopBudget}, AdapterPlan{}
	for _, hd := range [][2]int{{1, 1}, {17, 5}, {64, 64}, {256, 256}} {
		bp, ok := cpu.Backward(16384, hd[0], hd[1])
		if !ok {
			t.Fatalf("cpu: Backward(16384, %d, %d) fits no tile", hd[0], hd[1])
		}
		for g := 1; g <= 128; g *= 2 {
			kv, q := bp.IndexEntries(g)
			if kv < 1 || q < 1 || 2*kv*(1+g)+16 > LoopBudget || 2*q+16 > LoopBudget {
				t.Errorf("cpu: D=%d Dv=%d G=%d: %d and %d entries a dispatch: past the loop cap %d with its margin", hd[0], hd[1], g, kv, q, LoopBudget)
			}
		}
		bp, _ = hw.Backward(16384, hd[0], hd[1])
		if kv, q := bp.IndexEntries(4); kv != Unbounded || q != Unbounded {
			t.Errorf("hardware: %d and %d entries a dispatch, want Unbounded", kv, q)
		}
	}
}
