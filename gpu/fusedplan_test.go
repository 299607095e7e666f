package gpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
)

// checkSteps checks fusedSteps' promises for p: every step within the
// problem and at most chunk keys; every row written first exactly once,
// before any later step of it; and every key every batch's row may see
// (Problem.KeyRange) in exactly one step of that row.
func checkSteps(t *testing.T, p backend.Problem, chunk, tileRows int, steps []fusedStep) {
	t.Helper()
	name := fmt.Sprintf("%+v chunk=%d tile=%d", p, chunk, tileRows)
	firstAt := make([]int, p.Nq)
	for i := range firstAt {
		firstAt[i] = -1
	}
	for n, st := range steps {
		if st.i0 < 0 || st.i1 > p.Nq || st.i0 >= st.i1 || st.j0 < 0 || st.j1 > p.Nk || st.j0 > st.j1 || st.j1-st.j0 > chunk {
			t.Fatalf("%s: step %d %+v is outside the problem or longer than a chunk", name, n, st)
		}
		for i := st.i0; i < st.i1; i++ {
			switch {
			case st.first && firstAt[i] >= 0:
				t.Fatalf("%s: row %d has first steps %d and %d", name, i, firstAt[i], n)
			case st.first:
				firstAt[i] = n
			case firstAt[i] < 0:
				t.Fatalf("%s: row %d: later step %d %+v before its first", name, i, n, st)
			}
		}
	}
	for i, f := range firstAt {
		if f < 0 {
			t.Fatalf("%s: row %d has no first step", name, i)
		}
	}
	for b := range p.B {
		for i := range p.Nq {
			lo, hi := p.KeyRange(b, i)
			for j := lo; j < hi; j++ {
				n := 0
				for _, st := range steps {
					if st.i0 <= i && i < st.i1 && st.j0 <= j && j < st.j1 {
						n++
					}
				}
				if n != 1 {
					t.Fatalf("%s: batch %d row %d key %d (range [%d, %d)) is in %d steps, want 1", name, b, i, j, lo, hi, n)
				}
			}
		}
	}
}

// randomVariants returns p with random positional variants.
func randomVariants(rng *rand.Rand, p backend.Problem) backend.Problem {
	p.Causal = rng.IntN(2) == 0
	if rng.IntN(3) == 0 {
		o := rng.IntN(2*(p.Nq+p.Nk)+3) - p.Nq - p.Nk/2 - 1
		p.CausalOffset = &o
		p.Causal = true
	}
	if rng.IntN(2) == 0 {
		p.Window = &backend.Window{Left: rng.IntN(p.Nk+2) - 1, Right: rng.IntN(p.Nk+2) - 1}
		if rng.IntN(3) == 0 {
			p.Window.Left = rng.IntN(8)
		}
	}
	if rng.IntN(2) == 0 {
		p.KVLens = make([]int, p.B)
		for b := range p.KVLens {
			p.KVLens[b] = rng.IntN(p.Nk + 1)
		}
	}
	return p
}

// TestFusedStepsRandom checks checkSteps' promises on random problems
// with every positional variant.
func TestFusedStepsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for range 400 {
		p := backend.Problem{B: 1 + rng.IntN(3), H: 1, Nq: rng.IntN(120), Nk: rng.IntN(150), D: 4}
		p = randomVariants(rng, p)
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		chunk := []int{1, 5, 16, 64, 4096}[rng.IntN(5)]
		tile := []int{1, 8, 64}[rng.IntN(3)]
		checkSteps(t, p, chunk, tile, fusedSteps(p.Resolved(), chunk, tile))
	}
}

// TestFusedStepsSkip shows the skipping: a sliding window visits O(W)
// keys per row block instead of every key before the row, key lengths
// cut the trailing keys, and a no-variant problem keeps one block over
// all rows (the plan the kernels had before variants).
func TestFusedStepsSkip(t *testing.T) {
	const n, w, chunk, tile = 16384, 256, 4096, 256
	area := func(steps []fusedStep) (a int) {
		for _, st := range steps {
			a += (st.i1 - st.i0) * (st.j1 - st.j0)
		}
		return a
	}
	win := backend.Problem{B: 1, H: 1, Nq: n, Nk: n, D: 64, Causal: true, Variants: backend.Variants{Window: &backend.Window{Left: w - 1, Right: 0}}}
	steps := fusedSteps(win, chunk, tile)
	for _, st := range steps {
		if st.j1-st.j0 > 2*w+tile {
			t.Errorf("window %d: step %+v visits %d keys, want at most 2W + tile = %d", w, st, st.j1-st.j0, 2*w+tile)
		}
	}
	if a, most := area(steps), n*(2*w+tile); a > most {
		t.Errorf("window %d over N=%d: steps cover %d (row, key) pairs, want O(N·W) ≤ %d", w, n, a, most)
	}
	causal := win
	causal.Window = nil
	// Causal without a window keeps one block of rows (the kernels skip
	// the upper triangle per workgroup); a chunk past the first covers
	// only the rows that reach it, 5/8 of the square at four chunks.
	if a, most := area(fusedSteps(causal, chunk, tile)), n*n/8*5; a > most {
		t.Errorf("causal over N=%d: steps cover %d (row, key) pairs, want at most %d", n, a, most)
	}
	small := win
	small.Nq, small.Nk = 1000, 1000
	checkSteps(t, small, 128, 64, fusedSteps(small, 128, 64))

	// Leading keys: a window ahead of the keys' start (offset 5000 with a
	// window of 8 to the left sees keys from 4993 on): no step starts
	// before the first key any row may see.
	off := 5000
	lead := backend.Problem{B: 1, H: 1, Nq: 64, Nk: 20000, D: 8, Variants: backend.Variants{CausalOffset: &off, Window: &backend.Window{Left: 7, Right: -1}}}
	for _, st := range fusedSteps(lead.Resolved(), chunk, tile) {
		if st.j0 < off-7 || st.j1 > off+64 {
			t.Errorf("leading: step %+v visits keys outside [%d, %d)", st, off-7, off+64)
		}
	}

	// Trailing keys: key lengths 100 and 300 of 10000 keys.
	kv := backend.Problem{B: 2, H: 1, Nq: 10, Nk: 10000, D: 8, Variants: backend.Variants{KVLens: []int{100, 300}}}
	steps = fusedSteps(kv, 128, tile)
	for _, st := range steps {
		if st.j1 > 300 {
			t.Errorf("key lengths: step %+v visits keys past 300", st)
		}
	}
	checkSteps(t, kv, 128, tile, steps)

	plain := backend.Problem{B: 2, H: 3, Nq: 5000, Nk: 9000, D: 8}
	steps = fusedSteps(plain, chunk, tile)
	want := []fusedStep{{0, 5000, 0, 4096, true}, {0, 5000, 4096, 8192, false}, {0, 5000, 8192, 9000, false}}
	if fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("no variants: steps %v, want %v", steps, want)
	}

	// Rows that see no key (a negative offset) still get a first step.
	neg := -50
	empty := backend.Problem{B: 1, H: 1, Nq: 40, Nk: 30, D: 8, Causal: true, Variants: backend.Variants{CausalOffset: &neg}}
	empty = empty.Resolved()
	steps = fusedSteps(empty, chunk, tile)
	if want := []fusedStep{{0, 40, 0, 0, true}}; fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("no row sees a key: steps %v, want %v", steps, want)
	}
	checkSteps(t, empty, chunk, tile, steps)
}
