package gpu

// This file cuts an op into dispatches that respect the device's limits.
// It has no cgo so its tests run everywhere.

import "github.com/attn-go/attn/backend"

// unit is one dispatch's share of a problem: the flattened heads
// bh0 … bh1−1 (bh = b·H + h), query rows i0 … i1−1 and keys (or score
// columns) j0 … j1−1.
type unit struct {
	bh0, bh1 int
	i0, i1   int
	j0, j1   int
}

// rowSel says which of a unit's ranges indexes a tensor's rows.
type rowSel int

const (
	byQuery rowSel = iota // rows are query rows i
	byKey                 // rows are keys j
)

// colSel says which range indexes a tensor's columns.
type colSel int

const (
	colsFixed colSel = iota // columns 0 … cols−1 (a head dim, or 1 for LSE)
	colsKeys                // columns are the unit's keys j
)

// tensor addresses an operand as
//
//	b·sb + g(h)·sh + r·sr + c·sc
//
// where g(h) is h, or the KV head h/G when kv is set. All strides are ≥ 0
// (0 on a broadcast dimension), so over any box of (b, h, r, c) the
// offset is smallest at the box's low corner and largest at its high one.
//
// A packed operand (cu set, sb = 0) has batch b's row r at row cu[b] + r,
// rows past cu[b+1] − cu[b] being the next batch's and never touched; a
// paged one (pg set) has batch b's key r at row r mod PageSize of page
// Table[b·PerSeq + r/PageSize], sb being the page's stride, and lens[b]
// keys. An operand with nz slots (the partial results of split keys)
// repeats sz elements apart.
type tensor struct {
	sb, sh, sr, sc int
	kv             bool
	rows           rowSel
	cols           colSel
	ncols          int // for colsFixed
	cu             []int
	pg             *backend.Paged
	lens           []int
	sz, nz         int
}

// span returns the smallest offset the unit touches and one past the
// largest, given H heads of which G share a KV head.
func (t tensor) span(u unit, H, G int) (lo, hi int) {
	lo, hi = t.span1(u, H, G)
	if t.nz > 1 && hi > lo {
		hi += (t.nz - 1) * t.sz
	}
	return lo, hi
}

func (t tensor) span1(u unit, H, G int) (lo, hi int) {
	if t.cu != nil || t.pg != nil {
		return t.seqSpan(u, H, G)
	}
	r0, r1 := u.i0, u.i1
	if t.rows == byKey {
		r0, r1 = u.j0, u.j1
	}
	c0, c1 := 0, t.ncols
	if t.cols == colsKeys {
		c0, c1 = u.j0, u.j1
	}
	if u.bh1 <= u.bh0 || r1 <= r0 || c1 <= c0 {
		return 0, 0
	}
	head := func(h int) int {
		if t.kv {
			return h / G
		}
		return h
	}
	// The heads of a bh range form up to three boxes in (b, h): the tail
	// of the first batch, whole batches, the head of the last batch.
	bFirst, hFirst := u.bh0/H, u.bh0%H
	bLast, hLast := (u.bh1-1)/H, (u.bh1-1)%H
	type box struct{ b0, b1, h0, h1 int } // inclusive
	var boxes []box
	if bFirst == bLast {
		boxes = []box{{bFirst, bFirst, hFirst, hLast}}
	} else {
		boxes = []box{{bFirst, bFirst, hFirst, H - 1}, {bLast, bLast, 0, hLast}}
		if bLast-bFirst > 1 {
			boxes = append(boxes, box{bFirst + 1, bLast - 1, 0, H - 1})
		}
	}
	lo, hi = -1, 0
	for _, x := range boxes {
		l := x.b0*t.sb + head(x.h0)*t.sh + r0*t.sr + c0*t.sc
		h := x.b1*t.sb + head(x.h1)*t.sh + (r1-1)*t.sr + (c1-1)*t.sc + 1
		if lo < 0 || l < lo {
			lo = l
		}
		hi = max(hi, h)
	}
	return lo, hi
}

// seqSpan is span for a packed or paged operand (colsFixed). Over the
// unit's batches it takes every head when the unit spans more than one
// batch (a superset of what it touches), and only the table entries of
// keys below each batch's length: the rest may be −1.
func (t tensor) seqSpan(u unit, H, G int) (lo, hi int) {
	r0, r1 := u.i0, u.i1
	if t.rows == byKey {
		r0, r1 = u.j0, u.j1
	}
	if u.bh1 <= u.bh0 || r1 <= r0 {
		return 0, 0
	}
	head := func(h int) int {
		if t.kv {
			return h / G
		}
		return h
	}
	bFirst, bLast := u.bh0/H, (u.bh1-1)/H
	h0, h1 := 0, H-1
	if bFirst == bLast {
		h0, h1 = u.bh0%H, (u.bh1-1)%H
	}
	if t.cu != nil {
		// Batch b's rows cu[b] + [min(r0, n_b), min(r1, n_b)): both ends
		// non-decreasing in b, since cu[b] + n_b = cu[b+1].
		n := func(b int) int { return t.cu[b+1] - t.cu[b] }
		a, z := t.cu[bFirst]+min(r0, n(bFirst)), t.cu[bLast]+min(r1, n(bLast))
		if z <= a {
			return 0, 0
		}
		return head(h0)*t.sh + a*t.sr, head(h1)*t.sh + (z-1)*t.sr + t.ncols
	}
	ps := t.pg.PageSize
	first, last := -1, -1
	for b := bFirst; b <= bLast; b++ {
		end := min(r1, t.lens[b])
		if r0 >= end {
			continue
		}
		for blk := r0 / ps; blk <= (end-1)/ps; blk++ {
			page := t.pg.Table[b*t.pg.PerSeq+blk]
			if first < 0 || page < first {
				first = page
			}
			last = max(last, page)
		}
	}
	if first < 0 {
		return 0, 0
	}
	return first*t.sb + head(h0)*t.sh, last*t.sb + head(h1)*t.sh + (ps-1)*t.sr + t.ncols
}

// window is the part of a buffer one dispatch binds, in elements.
type window struct {
	start, n int
}

// windowFor aligns a span to the device's storage offset alignment (in
// elements) and clamps it to the buffer's length.
func windowFor(lo, hi, align, bufLen int) window {
	if hi <= lo {
		return window{0, min(align, bufLen)}
	}
	start := lo / align * align
	return window{start, min(hi, bufLen) - start}
}

// splitter cuts units until each satisfies ok, halving the head range
// first (in multiples of headAlign, when set: a unit that starts on one
// ends on one), then the query rows (in multiples of rowAlign), then the
// keys (in multiples of keyAlign, only when splitKeys). It reports false
// when a unit of one head (headAlign heads), one row tile and one key
// tile still fails.
type splitter struct {
	ok        func(unit) bool
	headAlign int
	rowAlign  int
	keyAlign  int
	splitKeys bool
}

func (s splitter) split(u unit, out []unit) ([]unit, bool) {
	if s.ok(u) {
		return append(out, u), true
	}
	ha := max(s.headAlign, 1)
	var a, b unit
	switch {
	case u.bh1-u.bh0 > ha:
		m := u.bh0 + (u.bh1-u.bh0)/ha/2*ha
		a, b = u, u
		a.bh1, b.bh0 = m, m
	case u.i1-u.i0 > s.rowAlign:
		m := u.i0 + (u.i1-u.i0+2*s.rowAlign-1)/(2*s.rowAlign)*s.rowAlign
		a, b = u, u
		a.i1, b.i0 = m, m
	case s.splitKeys && u.j1-u.j0 > s.keyAlign:
		m := u.j0 + (u.j1-u.j0+2*s.keyAlign-1)/(2*s.keyAlign)*s.keyAlign
		a, b = u, u
		a.j1, b.j0 = m, m
	default:
		return out, false
	}
	out, ok := s.split(a, out)
	if !ok {
		return out, false
	}
	return s.split(b, out)
}

// chunks cuts [0, n) into pieces of at most size (size ≥ 1).
func chunks(n, size int) [][2]int {
	var out [][2]int
	for j := 0; j < n; j += size {
		out = append(out, [2]int{j, min(n, j+size)})
	}
	return out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
