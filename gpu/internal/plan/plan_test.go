package plan

// These tests need no device (plan.go has no cgo), so they run in every
// build, CGO_ENABLED=0 and -tags nogpu included.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend"
)

// bruteSpan is Span by enumeration: the smallest offset of any
// (b, h, r, c) the unit touches and one past the largest, or 0, 0 when it
// touches none.
func bruteSpan(t Tensor, u Unit, H, G int) (lo, hi int) {
	r0, r1 := u.I0, u.I1
	if t.Rows == ByKey {
		r0, r1 = u.J0, u.J1
	}
	c0, c1 := 0, t.Ncols
	if t.Cols == ColsKeys {
		c0, c1 = u.J0, u.J1
	}
	found := false
	for bh := u.Bh0; bh < u.Bh1; bh++ {
		b, h := bh/H, bh%H
		g := h
		if t.KV {
			g = h / G
		}
		for r := r0; r < r1; r++ {
			for c := c0; c < c1; c++ {
				off := b*t.Sb + g*t.Sh + r*t.Sr + c*t.Sc
				if !found || off < lo {
					lo = off
				}
				if !found || off+1 > hi {
					hi = off + 1
				}
				found = true
			}
		}
	}
	return lo, hi
}

// planProblem is a problem shape for the span tests.
type planProblem struct {
	B, H, KV, Nq, Nk, D, Dv int
	layout                  backend.Layout
}

func (p planProblem) String() string {
	return fmt.Sprintf("B=%d H=%d KV=%d Nq=%d Nk=%d D=%d Dv=%d %v", p.B, p.H, p.KV, p.Nq, p.Nk, p.D, p.Dv, p.layout)
}

func (p planProblem) G() int { return p.H / p.KV }

// tensors are the operands of p as the ops address them (mirroring
// ops.go's qTensor … maskTensor, which need cgo), including masks
// broadcast along each dimension.
func (p planProblem) tensors() map[string]Tensor {
	st := func(heads, rows, dim int) backend.Strides { return backend.TensorStrides(p.layout, heads, rows, dim) }
	q, k, v, o := st(p.H, p.Nq, p.D), st(p.KV, p.Nk, p.D), st(p.KV, p.Nk, p.Dv), st(p.H, p.Nq, p.Dv)
	ts := map[string]Tensor{
		"Q":      {Sb: q.Batch, Sh: q.Head, Sr: q.Row, Sc: 1, Rows: ByQuery, Ncols: p.D},
		"K":      {Sb: k.Batch, Sh: k.Head, Sr: k.Row, Sc: 1, KV: true, Rows: ByKey, Ncols: p.D},
		"V":      {Sb: v.Batch, Sh: v.Head, Sr: v.Row, Sc: 1, KV: true, Rows: ByKey, Ncols: p.Dv},
		"O":      {Sb: o.Batch, Sh: o.Head, Sr: o.Row, Sc: 1, Rows: ByQuery, Ncols: p.Dv},
		"LSE":    {Sb: p.H * p.Nq, Sh: p.Nq, Sr: 1, Sc: 1, Rows: ByQuery, Ncols: 1},
		"scores": {Sb: p.H * p.Nq * p.Nk, Sh: p.Nq * p.Nk, Sr: p.Nk, Sc: 1, Rows: ByQuery, Cols: ColsKeys},
		"stats":  {Sb: p.H * p.Nq * 6, Sh: p.Nq * 6, Sr: 6, Sc: 1, Rows: ByQuery, Ncols: 6},
	}
	full := [4]int{p.B, p.H, p.Nq, p.Nk}
	for _, shape := range [][4]int{
		full,
		{1, p.H, p.Nq, p.Nk},
		{p.B, 1, p.Nq, p.Nk},
		{p.B, p.H, 1, p.Nk},
		{p.B, p.H, p.Nq, 1},
		{1, 1, p.Nq, p.Nk},
		{p.B, 1, 1, p.Nk},
		{1, 1, 1, 1},
	} {
		m := backend.Mask{Shape: shape}
		s := m.Strides()
		ts[fmt.Sprint("mask", shape)] = Tensor{Sb: s[0], Sh: s[1], Sr: s[2], Sc: s[3], Rows: ByQuery, Cols: ColsKeys}
	}
	return ts
}

var planProblems = []planProblem{
	{1, 1, 1, 1, 1, 1, 1, backend.BHND},
	{2, 3, 3, 4, 5, 5, 2, backend.BHND},
	{2, 3, 3, 4, 5, 5, 2, backend.BNHD},
	{3, 4, 2, 3, 4, 3, 2, backend.BHND}, // G = 2
	{3, 4, 2, 3, 4, 3, 2, backend.BNHD},
	{2, 6, 1, 2, 3, 2, 3, backend.BNHD}, // G = 6: every head reads KV head 0
	{4, 2, 1, 5, 1, 1, 4, backend.BHND},
}

// TestSpanKnown pins Span on cases worked by hand, which also checks
// bruteSpan.
func TestSpanKnown(t *testing.T) {
	p := planProblem{B: 2, H: 3, KV: 3, Nq: 4, Nk: 6, D: 5, Dv: 5}
	cases := []struct {
		name   string
		layout backend.Layout
		t      string
		u      Unit
		lo, hi int
	}{
		// bh 2, 3 are (b 0, h 2) and (b 1, h 0): Q rows 1, 2 are at
		// 40+5..54 and 60+5..74.
		{"BHND Q across a batch boundary", backend.BHND, "Q", Unit{2, 4, 1, 3, 0, 6}, 45, 75},
		// BNHD: h·5 + r·15 + c, plus 60 a batch.
		{"BNHD Q across a batch boundary", backend.BNHD, "Q", Unit{2, 4, 1, 3, 0, 6}, 25, 95},
		{"BHND K keys 2..3 of head 1", backend.BHND, "K", Unit{1, 2, 0, 4, 2, 4}, 40, 50},
		{"scores one row", backend.BHND, "scores", Unit{4, 5, 3, 4, 1, 5}, 24*4 + 18 + 1, 24*4 + 18 + 5},
		{"mask [1 1 1 1]", backend.BHND, "mask[1 1 1 1]", Unit{0, 6, 0, 4, 0, 6}, 0, 1},
		{"no heads", backend.BHND, "Q", Unit{3, 3, 0, 4, 0, 6}, 0, 0},
		{"no rows", backend.BHND, "O", Unit{0, 6, 2, 2, 0, 6}, 0, 0},
		{"no keys, K", backend.BHND, "K", Unit{0, 6, 0, 4, 3, 3}, 0, 0},
		{"no keys, O still spans its rows", backend.BHND, "O", Unit{0, 1, 0, 1, 3, 3}, 0, 5},
	}
	for _, c := range cases {
		p.layout = c.layout
		tn, ok := p.tensors()[c.t]
		if !ok {
			t.Fatalf("%s: no tensor %s", c.name, c.t)
		}
		lo, hi := tn.Span(c.u, p.H, p.G())
		blo, bhi := bruteSpan(tn, c.u, p.H, p.G())
		if lo != c.lo || hi != c.hi || blo != c.lo || bhi != c.hi {
			t.Errorf("%s: span = %d, %d, brute force %d, %d; want %d, %d", c.name, lo, hi, blo, bhi, c.lo, c.hi)
		}
	}
}

// ranges returns the ranges [a, b) the span tests try within [0, n): all
// of them when n is small, the whole, empty, first, last and middle ones
// otherwise.
func ranges(n int, all bool) [][2]int {
	var out [][2]int
	if all {
		for a := 0; a <= n; a++ {
			for b := a; b <= n; b++ {
				out = append(out, [2]int{a, b})
			}
		}
		return out
	}
	out = [][2]int{{0, n}, {0, 0}, {n, n}, {0, 1}, {n - 1, n}, {1, n - 1}}
	return slices.DeleteFunc(out, func(r [2]int) bool { return r[0] < 0 || r[1] > n || r[0] > r[1] })
}

// TestSpan compares Span with brute force for every operand of every
// problem in planProblems over every head range (so units that start, end
// and cross batch boundaries in the flattened bh index), a set of row and
// key ranges, and checks that the window bound for the span holds every
// element the unit touches.
func TestSpan(t *testing.T) {
	n := 0
	for _, p := range planProblems {
		for name, tn := range p.tensors() {
			for _, bh := range ranges(p.B*p.H, true) {
				for _, rows := range ranges(p.Nq, testing.Short()) {
					for _, keys := range ranges(p.Nk, testing.Short()) {
						u := Unit{bh[0], bh[1], rows[0], rows[1], keys[0], keys[1]}
						lo, hi := tn.Span(u, p.H, p.G())
						blo, bhi := bruteSpan(tn, u, p.H, p.G())
						n++
						if lo != blo || hi != bhi {
							t.Fatalf("%v: %s: span(%+v) = %d, %d; brute force %d, %d", p, name, u, lo, hi, blo, bhi)
						}
						if hi > lo {
							for _, align := range []int{1, 4, 64} {
								w := WindowFor(lo, hi, align, hi+align)
								if w.Start > lo || w.Start+w.N < hi || w.Start%align != 0 {
									t.Fatalf("%v: %s: windowFor(%d, %d, %d) = %+v does not hold the span", p, name, lo, hi, align, w)
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d spans checked", n)
}

// TestSpanRandom compares Span with brute force on random strides
// (including zero ones), head groupings and units, with a fixed seed.
func TestSpanRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		tn, u, H, G := randomSpanCase(r.IntN)
		lo, hi := tn.Span(u, H, G)
		blo, bhi := bruteSpan(tn, u, H, G)
		if lo != blo || hi != bhi {
			t.Fatalf("span of %+v over %+v with H=%d G=%d = %d, %d; brute force %d, %d", tn, u, H, G, lo, hi, blo, bhi)
		}
	}
}

// randomSpanCase draws a tensor, a unit and H, G from intn (which returns
// a number in [0, n)).
func randomSpanCase(intn func(int) int) (Tensor, Unit, int, int) {
	H := 1 + intn(5)
	divisors := []int{}
	for g := 1; g <= H; g++ {
		if H%g == 0 {
			divisors = append(divisors, g)
		}
	}
	G := divisors[intn(len(divisors))]
	B := 1 + intn(4)
	stride := func() int {
		if intn(4) == 0 {
			return 0
		}
		return intn(50)
	}
	tn := Tensor{Sb: stride(), Sh: stride(), Sr: stride(), Sc: stride(),
		KV: intn(2) == 0, Rows: RowSel(intn(2)), Cols: ColSel(intn(2)), Ncols: intn(5)}
	rng := func(n int) (int, int) {
		a := intn(n + 1)
		return a, a + intn(n-a+1)
	}
	var u Unit
	u.Bh0, u.Bh1 = rng(B * H)
	u.I0, u.I1 = rng(6)
	u.J0, u.J1 = rng(6)
	return tn, u, H, G
}

// FuzzSpan compares Span with brute force on fuzzed cases:
//
//	go test ./gpu/internal/plan -run '^$' -fuzz FuzzSpan
func FuzzSpan(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4})
	f.Add([]byte{255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		k := 0
		intn := func(n int) int {
			if n <= 1 || k >= len(data) {
				return 0
			}
			k++
			return int(data[k-1]) % n
		}
		tn, u, H, G := randomSpanCase(intn)
		lo, hi := tn.Span(u, H, G)
		blo, bhi := bruteSpan(tn, u, H, G)
		if lo != blo || hi != bhi {
			t.Fatalf("span of %+v over %+v with H=%d G=%d = %d, %d; brute force %d, %d", tn, u, H, G, lo, hi, blo, bhi)
		}
	})
}

func TestWindowFor(t *testing.T) {
	cases := []struct {
		name                 string
		lo, hi, align, bufLn int
		want                 Window
	}{
		{"aligned start", 128, 200, 64, 1000, Window{128, 72}},
		{"start rounded down", 130, 200, 64, 1000, Window{128, 72}},
		{"start one before a boundary", 127, 200, 64, 1000, Window{64, 136}},
		{"from zero", 0, 10, 64, 1000, Window{0, 10}},
		{"align 1", 7, 9, 1, 1000, Window{7, 2}},
		{"end clamped to the buffer", 130, 5000, 64, 1000, Window{128, 872}},
		{"end at the buffer", 130, 1000, 64, 1000, Window{128, 872}},
		{"whole buffer", 0, 1000, 64, 1000, Window{0, 1000}},
		{"empty span", 500, 500, 64, 1000, Window{0, 64}},
		{"inverted span", 500, 400, 64, 1000, Window{0, 64}},
		{"empty span, buffer shorter than align", 0, 0, 64, 16, Window{0, 16}},
		{"zero span", 0, 0, 4, 1000, Window{0, 4}},
	}
	for _, c := range cases {
		if got := WindowFor(c.lo, c.hi, c.align, c.bufLn); got != c.want {
			t.Errorf("%s: windowFor(%d, %d, %d, %d) = %+v, want %+v", c.name, c.lo, c.hi, c.align, c.bufLn, got, c.want)
		}
	}
	// Properties, for every span within a buffer: the window starts
	// aligned, less than align before the span, and ends where the span
	// does.
	for _, align := range []int{1, 3, 4, 16, 64} {
		for bufLen := 1; bufLen <= 70; bufLen++ {
			for lo := 0; lo < bufLen; lo++ {
				for hi := lo + 1; hi <= bufLen; hi++ {
					w := WindowFor(lo, hi, align, bufLen)
					if w.Start%align != 0 || w.Start > lo || lo-w.Start >= align || w.Start+w.N != hi {
						t.Fatalf("windowFor(%d, %d, %d, %d) = %+v", lo, hi, align, bufLen, w)
					}
				}
			}
		}
	}
}

// checkSplit checks the pieces of u: they lie in u, do not overlap and
// cover it (so every cell is in exactly one), each satisfies ok, and their
// row and key boundaries sit a multiple of RowAlign, KeyAlign after the
// unit's start, or at its end. It also checks the order of halving: rows
// are only split within one head, keys within one head and one row tile.
func checkSplit(t *testing.T, name string, s Splitter, u Unit, pieces []Unit) {
	t.Helper()
	vol := func(x Unit) int { return max(x.Bh1-x.Bh0, 0) * max(x.I1-x.I0, 0) * max(x.J1-x.J0, 0) }
	// A unit with an empty range is still one piece, so compare cells
	// with empty ranges counted as length 1.
	cells := func(x Unit) int { return max(x.Bh1-x.Bh0, 1) * max(x.I1-x.I0, 1) * max(x.J1-x.J0, 1) }
	total := 0
	for k, a := range pieces {
		total += cells(a)
		if !s.OK(a) {
			t.Errorf("%s: piece %+v fails ok", name, a)
		}
		if a.Bh0 < u.Bh0 || a.Bh1 > u.Bh1 || a.I0 < u.I0 || a.I1 > u.I1 || a.J0 < u.J0 || a.J1 > u.J1 {
			t.Errorf("%s: piece %+v is outside %+v", name, a, u)
		}
		if (a.Bh1 <= a.Bh0) != (u.Bh1 <= u.Bh0) || (a.I1 <= a.I0) != (u.I1 <= u.I0) || (a.J1 <= a.J0) != (u.J1 <= u.J0) {
			t.Errorf("%s: piece %+v has an empty range %+v does not", name, a, u)
		}
		for _, e := range []int{a.I0, a.I1} {
			if e != u.I1 && (e-u.I0)%s.RowAlign != 0 {
				t.Errorf("%s: piece %+v: row boundary %d is not %d + a multiple of %d", name, a, e, u.I0, s.RowAlign)
			}
		}
		for _, e := range []int{a.J0, a.J1} {
			if e != u.J1 && s.KeyAlign > 0 && (e-u.J0)%s.KeyAlign != 0 {
				t.Errorf("%s: piece %+v: key boundary %d is not %d + a multiple of %d", name, a, e, u.J0, s.KeyAlign)
			}
		}
		ha := max(s.HeadAlign, 1)
		for _, e := range []int{a.Bh0, a.Bh1} {
			if (e-u.Bh0)%ha != 0 {
				t.Errorf("%s: piece %+v: head boundary %d is not %d + a multiple of %d", name, a, e, u.Bh0, ha)
			}
		}
		if (a.I0 != u.I0 || a.I1 != u.I1) && a.Bh1-a.Bh0 != ha {
			t.Errorf("%s: piece %+v splits rows across several heads (groups of %d)", name, a, ha)
		}
		if a.J0 != u.J0 || a.J1 != u.J1 {
			if !s.SplitKeys {
				t.Errorf("%s: piece %+v splits keys without splitKeys", name, a)
			}
			if a.Bh1-a.Bh0 != ha || a.I1-a.I0 > s.RowAlign {
				t.Errorf("%s: piece %+v splits keys before heads and rows", name, a)
			}
		}
		for _, b := range pieces[k+1:] {
			if a.Bh0 < b.Bh1 && b.Bh0 < a.Bh1 && a.I0 < b.I1 && b.I0 < a.I1 && a.J0 < b.J1 && b.J0 < a.J1 {
				t.Errorf("%s: pieces %+v and %+v overlap", name, a, b)
			}
		}
	}
	if total != cells(u) {
		t.Errorf("%s: pieces hold %d cells, the unit %d (volume %d)", name, total, cells(u), vol(u))
	}
}

func TestSplit(t *testing.T) {
	heads := func(u Unit) int { return u.Bh1 - u.Bh0 }
	rows := func(u Unit) int { return u.I1 - u.I0 }
	keys := func(u Unit) int { return u.J1 - u.J0 }
	work := func(u Unit) int { return heads(u) * rows(u) * max(keys(u), 1) }
	cases := []struct {
		name   string
		s      Splitter
		u      Unit
		ok     bool
		pieces int // 0: do not check the count
	}{
		{"already fits", Splitter{OK: func(Unit) bool { return true }, RowAlign: 64}, Unit{0, 8, 0, 300, 0, 500}, true, 1},
		{"empty unit", Splitter{OK: func(u Unit) bool { return heads(u) <= 0 }, RowAlign: 1}, Unit{3, 3, 0, 10, 0, 10}, true, 1},
		{"one head each", Splitter{OK: func(u Unit) bool { return heads(u) <= 1 }, RowAlign: 64}, Unit{0, 7, 0, 300, 0, 500}, true, 7},
		{"heads from an offset", Splitter{OK: func(u Unit) bool { return heads(u) <= 2 }, RowAlign: 64}, Unit{5, 12, 0, 3, 0, 5}, true, 4},
		{"groups of 4 heads", Splitter{OK: func(u Unit) bool { return heads(u) <= 4 }, HeadAlign: 4, RowAlign: 1}, Unit{8, 32, 0, 3, 0, 5}, true, 6},
		{"groups of 3 heads, then rows", Splitter{OK: func(u Unit) bool { return heads(u)*rows(u) <= 6 }, HeadAlign: 3, RowAlign: 2}, Unit{0, 12, 0, 4, 0, 5}, true, 8},
		{"a group of heads too many", Splitter{OK: func(u Unit) bool { return heads(u) <= 2 }, HeadAlign: 4, RowAlign: 1}, Unit{0, 8, 0, 1, 0, 5}, false, 0},
		{"row tiles of 64", Splitter{OK: func(u Unit) bool { return rows(u) <= 64 }, RowAlign: 64}, Unit{0, 3, 0, 200, 0, 10}, true, 12},
		{"row tiles from an unaligned start", Splitter{OK: func(u Unit) bool { return rows(u) <= 64 }, RowAlign: 64}, Unit{0, 1, 37, 300, 0, 10}, true, 5},
		{"rows exactly one tile", Splitter{OK: func(u Unit) bool { return rows(u) <= 64 && heads(u) <= 1 }, RowAlign: 64}, Unit{0, 2, 0, 64, 0, 1}, true, 2},
		{"row tile of 1", Splitter{OK: func(u Unit) bool { return work(u) <= 7 }, RowAlign: 1}, Unit{0, 2, 0, 9, 0, 3}, true, 0},
		{"keys", Splitter{OK: func(u Unit) bool { return keys(u) <= 100 }, RowAlign: 64, KeyAlign: 64, SplitKeys: true}, Unit{0, 2, 0, 130, 0, 1000}, true, 0},
		{"keys aligned from an offset", Splitter{OK: func(u Unit) bool { return keys(u) <= 64 }, RowAlign: 1, KeyAlign: 64, SplitKeys: true}, Unit{0, 1, 0, 1, 100, 357}, true, 5},
		{"softmax chunks", Splitter{OK: func(u Unit) bool { return work(u) <= 3*8192 }, RowAlign: 1, KeyAlign: 8192, SplitKeys: true}, Unit{0, 2, 0, 3, 0, 50000}, true, 0},
		{"budget", Splitter{OK: func(u Unit) bool { return work(u) <= 5000 }, RowAlign: 16, KeyAlign: 16, SplitKeys: true}, Unit{0, 6, 0, 100, 0, 90}, true, 0},
		{"empty keys are not split", Splitter{OK: func(u Unit) bool { return rows(u) <= 4 }, RowAlign: 4, KeyAlign: 4, SplitKeys: true}, Unit{0, 1, 0, 10, 0, 0}, true, 3},
		{"keys needed but not allowed", Splitter{OK: func(u Unit) bool { return keys(u) <= 100 }, RowAlign: 64}, Unit{0, 2, 0, 130, 0, 1000}, false, 0},
		{"a row tile too many", Splitter{OK: func(u Unit) bool { return rows(u) <= 10 }, RowAlign: 64}, Unit{0, 4, 0, 300, 0, 5}, false, 0},
		{"a key tile too many", Splitter{OK: func(u Unit) bool { return keys(u) <= 10 }, RowAlign: 1, KeyAlign: 64, SplitKeys: true}, Unit{0, 1, 0, 1, 0, 300}, false, 0},
		{"never", Splitter{OK: func(Unit) bool { return false }, RowAlign: 1, KeyAlign: 1, SplitKeys: true}, Unit{0, 3, 0, 3, 0, 3}, false, 0},
	}
	for _, c := range cases {
		calls := 0
		s := c.s
		ok := s.OK
		s.OK = func(u Unit) bool { calls++; return ok(u) }
		pieces, got := s.Split(c.u, nil)
		if got != c.ok {
			t.Errorf("%s: split reports %v, want %v (pieces %v)", c.name, got, c.ok, pieces)
			continue
		}
		if calls > 4*cellsOf(c.u)+8 {
			t.Errorf("%s: ok called %d times", c.name, calls)
		}
		if !got {
			continue
		}
		if c.pieces != 0 && len(pieces) != c.pieces {
			t.Errorf("%s: %d pieces, want %d: %v", c.name, len(pieces), c.pieces, pieces)
		}
		checkSplit(t, c.name, s, c.u, pieces)
	}
	// Appending to a slice keeps what it held.
	prev := []Unit{{9, 9, 9, 9, 9, 9}}
	s := Splitter{OK: func(u Unit) bool { return heads(u) <= 1 }, RowAlign: 1}
	out, ok := s.Split(Unit{0, 2, 0, 1, 0, 1}, prev)
	if !ok || len(out) != 3 || out[0] != prev[0] {
		t.Errorf("split appending to %v = %v, %v", prev, out, ok)
	}
}

func cellsOf(u Unit) int {
	return max(u.Bh1-u.Bh0, 1) * max(u.I1-u.I0, 1) * max(u.J1-u.J0, 1)
}

// TestSplitRandom splits random units under random budgets and checks the
// pieces, or, when Split reports false, that a minimal unit really fails.
func TestSplitRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 3000 {
		rowAlign, keyAlign := 1+r.IntN(20), 1+r.IntN(20)
		splitKeys := r.IntN(2) == 0
		maxHeads, maxRows, maxKeys := 1+r.IntN(4), 1+r.IntN(40), 1+r.IntN(40)
		budget := 1 + r.IntN(2000)
		ok := func(u Unit) bool {
			return u.Bh1-u.Bh0 <= maxHeads && u.I1-u.I0 <= maxRows && u.J1-u.J0 <= maxKeys &&
				(u.Bh1-u.Bh0)*(u.I1-u.I0)*(u.J1-u.J0) <= budget
		}
		s := Splitter{OK: ok, RowAlign: rowAlign, KeyAlign: keyAlign, SplitKeys: splitKeys}
		bh0, i0, j0 := r.IntN(10), r.IntN(10), r.IntN(10)
		u := Unit{bh0, bh0 + 1 + r.IntN(9), i0, i0 + 1 + r.IntN(100), j0, j0 + 1 + r.IntN(100)}
		pieces, got := s.Split(u, nil)
		name := fmt.Sprintf("case %d: %+v rowAlign=%d keyAlign=%d splitKeys=%v limits %d %d %d %d",
			n, u, rowAlign, keyAlign, splitKeys, maxHeads, maxRows, maxKeys, budget)
		// The smallest piece split can make: one head, the first row tile
		// and (when it splits keys) the first key tile. Every other
		// minimal piece is no larger, so split fails exactly when this
		// one, or one as large, fails.
		rowTile, keyTile := min(rowAlign, u.I1-u.I0), u.J1-u.J0
		if splitKeys {
			keyTile = min(keyAlign, keyTile)
		}
		possible := ok(Unit{0, 1, 0, rowTile, 0, keyTile})
		if got != possible {
			t.Fatalf("%s: split reports %v, but a minimal piece ok = %v", name, got, possible)
		}
		if got {
			checkSplit(t, name, s, u, pieces)
		}
	}
}

func TestChunks(t *testing.T) {
	cases := []struct {
		n, size int
		want    [][2]int
	}{
		{0, 5, nil},
		{0, 1, nil},
		{1, 1, [][2]int{{0, 1}}},
		{1, 5, [][2]int{{0, 1}}},
		{5, 5, [][2]int{{0, 5}}},
		{10, 5, [][2]int{{0, 5}, {5, 10}}},
		{11, 5, [][2]int{{0, 5}, {5, 10}, {10, 11}}},
		{14, 5, [][2]int{{0, 5}, {5, 10}, {10, 14}}},
		{3, 1, [][2]int{{0, 1}, {1, 2}, {2, 3}}},
		{4, 100, [][2]int{{0, 4}}},
	}
	for _, c := range cases {
		if got := Chunks(c.n, c.size); !slices.Equal(got, c.want) {
			t.Errorf("chunks(%d, %d) = %v, want %v", c.n, c.size, got, c.want)
		}
	}
	for n := 0; n <= 60; n++ {
		for size := 1; size <= 13; size++ {
			got := Chunks(n, size)
			if len(got) != CeilDiv(n, size) {
				t.Fatalf("chunks(%d, %d) has %d pieces, want ⌈n/size⌉ = %d", n, size, len(got), CeilDiv(n, size))
			}
			next := 0
			for k, c := range got {
				if c[0] != next || c[1] <= c[0] || c[1]-c[0] > size || (k < len(got)-1 && c[1]-c[0] != size) {
					t.Fatalf("chunks(%d, %d) = %v: piece %d is wrong", n, size, got, k)
				}
				next = c[1]
			}
			if next != n {
				t.Fatalf("chunks(%d, %d) = %v ends at %d", n, size, got, next)
			}
		}
	}
}
