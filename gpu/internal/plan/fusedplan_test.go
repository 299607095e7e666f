package plan

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
)

// checkSteps checks FusedSteps' promises for p under sp: every step
// within the problem (its batches' rows, the keys), at most
// min(Span, Parts·Chunk) keys (or what the budget allows), splits of at
// most Chunk keys and at most Parts of them; every row of every batch
// written first exactly once, before any later step of it; and every key
// every batch's row may see (Problem.KeyRange) in exactly one step of
// that row.
func checkSteps(t *testing.T, p backend.Problem, sp StepPlan, steps []FusedStep) {
	t.Helper()
	name := fmt.Sprintf("%+v plan %+v", p, sp)
	firstAt := make([][]int, p.B)
	for b := range p.B {
		firstAt[b] = make([]int, p.QRows(b))
		for i := range firstAt[b] {
			firstAt[b][i] = -1
		}
	}
	stepLen := sp.Span
	if sp.Chunk <= sp.Span/sp.Parts {
		stepLen = sp.Parts * sp.Chunk
	}
	for n, st := range steps {
		nq := 0
		for b := st.B0; b < st.B1; b++ {
			nq = max(nq, p.QRows(b))
		}
		if st.B0 < 0 || st.B1 > p.B || st.B0 >= st.B1 || st.I0 < 0 || st.I1 > nq || st.I0 >= st.I1 ||
			st.J0 < 0 || st.J1 > p.Nk || st.J0 > st.J1 || st.J1-st.J0 > stepLen {
			t.Fatalf("%s: step %d %+v is outside the problem or longer than %d keys", name, n, st, stepLen)
		}
		if st.Sk < 1 || st.Sk > sp.Chunk || st.Splits() > sp.Parts {
			t.Fatalf("%s: step %d %+v: %d splits of %d keys, want at most %d of at most %d", name, n, st, st.Splits(), st.Sk, sp.Parts, sp.Chunk)
		}
		for b := st.B0; b < st.B1; b++ {
			for i := st.I0; i < min(st.I1, p.QRows(b)); i++ {
				switch {
				case st.First && firstAt[b][i] >= 0:
					t.Fatalf("%s: batch %d row %d has first steps %d and %d", name, b, i, firstAt[b][i], n)
				case st.First:
					firstAt[b][i] = n
				case firstAt[b][i] < 0:
					t.Fatalf("%s: batch %d row %d: later step %d %+v before its first", name, b, i, n, st)
				}
			}
		}
	}
	for b := range p.B {
		for i, f := range firstAt[b] {
			if f < 0 {
				t.Fatalf("%s: batch %d row %d has no first step", name, b, i)
			}
		}
	}
	for b := range p.B {
		for i := range p.QRows(b) {
			lo, hi := p.KeyRange(b, i)
			for j := lo; j < hi; j++ {
				n := 0
				for _, st := range steps {
					if st.B0 <= b && b < st.B1 && st.I0 <= i && i < st.I1 && st.J0 <= j && j < st.J1 {
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

// chunked is the plan of sequential chunks alone: steps of chunk keys,
// one split each.
func chunked(chunk, tile int) StepPlan {
	return StepPlan{Chunk: chunk, Span: Unbounded, Parts: 1, TileRows: tile}
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
		sp := chunked(chunk, tile)
		checkSteps(t, p, sp, FusedSteps(p.Resolved(), sp))
	}
}

// TestFusedStepsSkip shows the skipping: a sliding window visits O(W)
// keys per row block instead of every key before the row, key lengths
// cut the trailing keys, and a no-variant problem keeps one block over
// all rows (the plan the kernels had before variants).
func TestFusedStepsSkip(t *testing.T) {
	const n, w, chunk, tile = 16384, 256, 4096, 256
	area := func(steps []FusedStep) (a int) {
		for _, st := range steps {
			a += (st.I1 - st.I0) * (st.J1 - st.J0)
		}
		return a
	}
	win := backend.Problem{B: 1, H: 1, Nq: n, Nk: n, D: 64, Causal: true, Variants: backend.Variants{Window: &backend.Window{Left: w - 1, Right: 0}}}
	steps := FusedSteps(win, chunked(chunk, tile))
	for _, st := range steps {
		if st.J1-st.J0 > 2*w+tile {
			t.Errorf("window %d: step %+v visits %d keys, want at most 2W + tile = %d", w, st, st.J1-st.J0, 2*w+tile)
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
	if a, most := area(FusedSteps(causal, chunked(chunk, tile))), n*n/8*5; a > most {
		t.Errorf("causal over N=%d: steps cover %d (row, key) pairs, want at most %d", n, a, most)
	}
	small := win
	small.Nq, small.Nk = 1000, 1000
	checkSteps(t, small, chunked(128, 64), FusedSteps(small, chunked(128, 64)))

	// Leading keys: a window ahead of the keys' start (offset 5000 with a
	// window of 8 to the left sees keys from 4993 on): no step starts
	// before the first key any row may see.
	off := 5000
	lead := backend.Problem{B: 1, H: 1, Nq: 64, Nk: 20000, D: 8, Variants: backend.Variants{CausalOffset: &off, Window: &backend.Window{Left: 7, Right: -1}}}
	for _, st := range FusedSteps(lead.Resolved(), chunked(chunk, tile)) {
		if st.J0 < off-7 || st.J1 > off+64 {
			t.Errorf("leading: step %+v visits keys outside [%d, %d)", st, off-7, off+64)
		}
	}

	// Trailing keys: key lengths 100 and 300 of 10000 keys.
	kv := backend.Problem{B: 2, H: 1, Nq: 10, Nk: 10000, D: 8, Variants: backend.Variants{KVLens: []int{100, 300}}}
	steps = FusedSteps(kv, chunked(128, tile))
	for _, st := range steps {
		if st.J1 > 300 {
			t.Errorf("key lengths: step %+v visits keys past 300", st)
		}
	}
	checkSteps(t, kv, chunked(128, tile), steps)

	plain := backend.Problem{B: 2, H: 3, Nq: 5000, Nk: 9000, D: 8}
	steps = FusedSteps(plain, chunked(chunk, tile))
	want := []FusedStep{{0, 2, 0, 5000, 0, 4096, true, 4096}, {0, 2, 0, 5000, 4096, 8192, false, 4096}, {0, 2, 0, 5000, 8192, 9000, false, 808}}
	if fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("no variants: steps %v, want %v", steps, want)
	}

	// Rows that see no key (a negative offset) still get a first step.
	neg := -50
	empty := backend.Problem{B: 1, H: 1, Nq: 40, Nk: 30, D: 8, Causal: true, Variants: backend.Variants{CausalOffset: &neg}}
	empty = empty.Resolved()
	steps = FusedSteps(empty, chunked(chunk, tile))
	if want := []FusedStep{{0, 1, 0, 40, 0, 0, true, 1}}; fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("no row sees a key: steps %v, want %v", steps, want)
	}
	checkSteps(t, empty, chunked(chunk, tile), steps)
}

// randomSeqs returns p with its sequences packed or its cache paged (or
// both), at random.
func randomSeqs(rng *rand.Rand, p backend.Problem) backend.Problem {
	if rng.IntN(2) == 0 {
		p.Layout = backend.BNHD
		cu := func(n int) []int {
			c := []int{0}
			for range p.B {
				c = append(c, c[len(c)-1]+rng.IntN(n+1))
			}
			return c
		}
		p.Packed = &backend.Packed{CuQ: cu(p.Nq)}
		if rng.IntN(2) == 0 && p.KVLens == nil {
			p.Packed.CuK = cu(p.Nk)
		}
	}
	if (p.Packed == nil || p.Packed.CuK == nil) && rng.IntN(2) == 0 {
		size := 1 + rng.IntN(20)
		per := max(1, CeilDiv(p.Nk, size))
		pg := &backend.Paged{PageSize: size, Pages: p.B * per, PerSeq: per, Table: make([]int, p.B*per)}
		for i := range pg.Table {
			pg.Table[i] = rng.IntN(pg.Pages)
		}
		p.Paged = pg
	}
	return p
}

// TestFusedStepsSplit checks checkSteps' promises with splits side by
// side, the budget and per-sequence cuts, on random problems with every
// positional variant, packed and paged; and that a step's splits are as
// many as its keys need within chunk, and more, down to MinSplit keys,
// when the step has fewer workgroups than target.
func TestFusedStepsSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	for range 300 {
		p := backend.Problem{B: 1 + rng.IntN(3), H: 1 + rng.IntN(2), Nq: rng.IntN(120), Nk: rng.IntN(300), D: 4}
		p = randomSeqs(rng, randomVariants(rng, p))
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		p = p.Resolved()
		sp := StepPlan{
			Chunk:    []int{1, 5, 16, 64, Unbounded}[rng.IntN(5)],
			Span:     []int{1, 7, 100, Unbounded}[rng.IntN(4)],
			Parts:    []int{1, 2, 5, 64}[rng.IntN(4)],
			TileRows: []int{1, 8, 64}[rng.IntN(3)],
			Heads:    []int{1, p.H}[rng.IntN(2)],
			Target:   []int{0, 4, 256}[rng.IntN(3)],
			MinSplit: []int{1, 3, 256}[rng.IntN(3)],
		}
		if rng.IntN(4) == 0 {
			sp.Work = float64(1 + rng.IntN(2000))
		}
		sp.Chunk = min(sp.Chunk, sp.Span)
		if p.Paged != nil && rng.IntN(2) == 0 {
			sp.Cut = PageCuts(p.Paged, 1, 1+rng.IntN(4))
		}
		steps := FusedSteps(p, sp)
		checkSteps(t, p, sp, steps)
		for _, st := range steps {
			n := st.J1 - st.J0
			if n > 0 && st.Splits() > CeilDiv(n, min(sp.Chunk, n)) {
				wgs := CeilDiv(st.I1-st.I0, sp.TileRows) * (st.B1 - st.B0) * p.H / sp.Heads
				if wgs*st.Splits() > 2*sp.Target+2*wgs || st.Sk < min(sp.MinSplit, sp.Chunk, n) {
					t.Fatalf("%+v: step %+v: %d splits of %d keys for %d workgroups, target %d", p, st, st.Splits(), st.Sk, wgs, sp.Target)
				}
			}
		}
	}
}

// TestFusedStepsDecode shows the splits a decoding step gets: one query
// of one head over 100000 keys is cut into target pieces when no loop
// cap bounds them (the hardware plan), into pieces of a chunk under one,
// and is left whole when there are workgroups enough.
func TestFusedStepsDecode(t *testing.T) {
	p := backend.Problem{B: 1, H: 1, Nq: 1, Nk: 100000, D: 64}.Resolved()
	hw := StepPlan{Chunk: Unbounded, Span: Unbounded, Parts: 64, TileRows: 64, Target: 256, MinSplit: 256}
	if steps := FusedSteps(p, hw); len(steps) != 1 || steps[0].Splits() != 64 || !steps[0].First {
		t.Errorf("hardware plan: steps %v, want one first step of 64 splits", steps)
	}
	cpu := StepPlan{Chunk: 4096, Span: Unbounded, Parts: 64, TileRows: 256, Target: 4, MinSplit: 256}
	if steps := FusedSteps(p, cpu); len(steps) != 1 || steps[0].Splits() != 25 || steps[0].Sk != 4096 {
		t.Errorf("cpu plan: steps %v, want one step of 25 splits of 4096 keys", steps)
	}
	few := cpu
	few.Parts = 8
	steps := FusedSteps(p, few)
	if len(steps) != 4 || steps[0].Splits() != 8 || steps[1].First || steps[3].J1 != 100000 {
		t.Errorf("8 parts: steps %v, want four steps of up to 8 splits", steps)
	}
	checkSteps(t, p, few, steps)
	wide := p
	wide.B, wide.H = 4, 64
	if steps := FusedSteps(wide, hw); len(steps) != 1 || steps[0].Splits() != 1 {
		t.Errorf("B=4 H=64: steps %v, want one split", steps)
	}
	short := p
	short.Nk = 300
	if steps := FusedSteps(short, hw); len(steps) != 1 || steps[0].Splits() != 2 || steps[0].Sk != 256 {
		t.Errorf("300 keys: steps %v, want 2 splits of at least 256 keys", steps)
	}
}

// TestFusedStepsDecodeKernel shows the splits the decoding kernel's
// steps get (stepPlanFor's plan for fuseddecode.wgsl: one workgroup a KV
// head's group, decodeTarget workgroups in all, splits of at least
// decodeMinSplit keys, at most decodeMaxParts of them): the H100 shape
// of 32 heads over 8 KV heads decoding over 32768 keys is 8 workgroups a
// split, so 32 splits of 1024 keys, 256 workgroups; over 4096 keys,
// splits of decodeMinSplit; a batch of 64 such sequences has workgroups
// enough unsplit.
func TestFusedStepsDecodeKernel(t *testing.T) {
	p := backend.Problem{B: 1, H: 32, KVHeads: 8, Nq: 1, Nk: 32768, D: 128}.Resolved()
	sp := StepPlan{Chunk: Unbounded, Span: Unbounded, Parts: decodeMaxParts, TileRows: 1, Heads: 4,
		Target: decodeTarget, MinSplit: decodeMinSplit}
	steps := FusedSteps(p, sp)
	if len(steps) != 1 || steps[0].Splits() != 32 || steps[0].Sk != 1024 {
		t.Errorf("32768 keys: steps %+v, want one of 32 splits of 1024 keys", steps)
	}
	checkSteps(t, p, sp, steps)
	p.Nk = 4096
	if steps := FusedSteps(p, sp); len(steps) != 1 || steps[0].Splits() != 4096/decodeMinSplit || steps[0].Sk != decodeMinSplit {
		t.Errorf("4096 keys: steps %+v, want one of %d splits of %d keys", steps, 4096/decodeMinSplit, decodeMinSplit)
	}
	p.B = 64
	if steps := FusedSteps(p, sp); len(steps) != 1 || steps[0].Splits() != 1 {
		t.Errorf("B = 64, 4096 keys: steps %+v, want one unsplit", steps)
	}
	p.B = 16
	if steps := FusedSteps(p, sp); len(steps) != 1 || steps[0].Splits() != 2 {
		t.Errorf("B = 16, 4096 keys: steps %+v, want one of 2 splits", steps)
	}
}

// TestPageCuts checks PageCuts: every cut holds whole pages but at its
// ends, at most n keys, pages within the window, at least one key; the
// cuts cover [j0, j1) in order.
func TestPageCuts(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 23))
	for range 300 {
		size := 1 + rng.IntN(9)
		per := 1 + rng.IntN(30)
		pg := &backend.Paged{PageSize: size, Pages: 1 + rng.IntN(50), PerSeq: per, Table: make([]int, 2*per)}
		for i := range pg.Table {
			pg.Table[i] = rng.IntN(pg.Pages)
		}
		limit := 1 + rng.IntN(10)
		n := []int{1, 3, 10, Unbounded}[rng.IntN(4)]
		j0 := rng.IntN(per * size)
		j1 := j0 + rng.IntN(per*size-j0+1)
		b := rng.IntN(2)
		ends := PageCuts(pg, 1, limit)(b, j0, j1, n)
		start := j0
		for _, end := range ends {
			if end <= start || end > j1 || end-start > n {
				t.Fatalf("table %v size %d, [%d, %d) limit %d n %d: cuts %v", pg.Table, size, j0, j1, limit, n, ends)
			}
			first, last := pg.Table[b*per+start/size], pg.Table[b*per+start/size]
			for j := start; j < end; j++ {
				first, last = min(first, pg.Table[b*per+j/size]), max(last, pg.Table[b*per+j/size])
			}
			if last-first+1 > limit && (end-1)/size != start/size {
				t.Fatalf("table %v size %d, [%d, %d) limit %d: cut [%d, %d) spans pages %d … %d", pg.Table, size, j0, j1, limit, start, end, first, last)
			}
			start = end
		}
		if start != j1 && !(j0 == j1 && len(ends) == 0) {
			t.Fatalf("cuts %v of [%d, %d) end at %d", ends, j0, j1, start)
		}
	}
}
