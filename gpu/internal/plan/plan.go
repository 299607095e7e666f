package plan

// This file cuts an op into dispatches that respect the device's limits.
// It has no cgo so its tests run everywhere.

import "github.com/attn-go/attn/backend"

// Unit is one dispatch's share of a problem: the flattened heads
// Bh0 … Bh1−1 (bh = b·H + h), query rows I0 … I1−1 and keys (or score
// columns) J0 … J1−1.
type Unit struct {
	Bh0, Bh1 int
	I0, I1   int
	J0, J1   int
}

// RowSel says which of a unit's ranges indexes a tensor's rows.
type RowSel int

const (
	ByQuery RowSel = iota // rows are query rows i
	ByKey                 // rows are keys j
)

// ColSel says which range indexes a tensor's columns.
type ColSel int

const (
	ColsFixed ColSel = iota // columns 0 … Ncols−1 (a head dim, or 1 for LSE)
	ColsKeys                // columns are the unit's keys j
)

// Tensor addresses an operand as
//
//	b·Sb + g(h)·Sh + r·Sr + c·Sc
//
// where g(h) is h, or the KV head h/G when KV is set. All strides are ≥ 0
// (0 on a broadcast dimension), so over any box of (b, h, r, c) the
// offset is smallest at the box's low corner and largest at its high one.
//
// A packed operand (Cu set, Sb = 0) has batch b's row r at row Cu[b] + r,
// rows past Cu[b+1] − Cu[b] being the next batch's and never touched; a
// paged one (Pg set) has batch b's key r at row r mod PageSize of page
// Table[b·PerSeq + r/PageSize], Sb being the page's stride, and Lens[b]
// keys. An operand with Nz slots (the partial results of split keys)
// repeats Sz elements apart.
type Tensor struct {
	Sb, Sh, Sr, Sc int
	KV             bool
	Rows           RowSel
	Cols           ColSel
	Ncols          int // for ColsFixed
	Cu             []int
	Pg             *backend.Paged
	Lens           []int
	Sz, Nz         int
}

// Span returns the smallest offset the unit touches and one past the
// largest, given H heads of which G share a KV head.
func (t Tensor) Span(u Unit, H, G int) (lo, hi int) {
	lo, hi = t.span1(u, H, G)
	if t.Nz > 1 && hi > lo {
		hi += (t.Nz - 1) * t.Sz
	}
	return lo, hi
}

func (t Tensor) span1(u Unit, H, G int) (lo, hi int) {
	if t.Cu != nil || t.Pg != nil {
		return t.seqSpan(u, H, G)
	}
	r0, r1 := u.I0, u.I1
	if t.Rows == ByKey {
		r0, r1 = u.J0, u.J1
	}
	c0, c1 := 0, t.Ncols
	if t.Cols == ColsKeys {
		c0, c1 = u.J0, u.J1
	}
	if u.Bh1 <= u.Bh0 || r1 <= r0 || c1 <= c0 {
		return 0, 0
	}
	head := func(h int) int {
		if t.KV {
			return h / G
		}
		return h
	}
	// The heads of a bh range form up to three boxes in (b, h): the tail
	// of the first batch, whole batches, the head of the last batch.
	bFirst, hFirst := u.Bh0/H, u.Bh0%H
	bLast, hLast := (u.Bh1-1)/H, (u.Bh1-1)%H
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
		l := x.b0*t.Sb + head(x.h0)*t.Sh + r0*t.Sr + c0*t.Sc
		h := x.b1*t.Sb + head(x.h1)*t.Sh + (r1-1)*t.Sr + (c1-1)*t.Sc + 1
		if lo < 0 || l < lo {
			lo = l
		}
		hi = max(hi, h)
	}
	return lo, hi
}

// seqSpan is Span for a packed or paged operand (ColsFixed). Over the
// unit's batches it takes every head when the unit spans more than one
// batch (a superset of what it touches), and only the table entries of
// keys below each batch's length: the rest may be −1.
func (t Tensor) seqSpan(u Unit, H, G int) (lo, hi int) {
	r0, r1 := u.I0, u.I1
	if t.Rows == ByKey {
		r0, r1 = u.J0, u.J1
	}
	if u.Bh1 <= u.Bh0 || r1 <= r0 {
		return 0, 0
	}
	head := func(h int) int {
		if t.KV {
			return h / G
		}
		return h
	}
	bFirst, bLast := u.Bh0/H, (u.Bh1-1)/H
	h0, h1 := 0, H-1
	if bFirst == bLast {
		h0, h1 = u.Bh0%H, (u.Bh1-1)%H
	}
	if t.Cu != nil {
		// Batch b's rows cu[b] + [min(r0, n_b), min(r1, n_b)): both ends
		// non-decreasing in b, since cu[b] + n_b = cu[b+1].
		n := func(b int) int { return t.Cu[b+1] - t.Cu[b] }
		a, z := t.Cu[bFirst]+min(r0, n(bFirst)), t.Cu[bLast]+min(r1, n(bLast))
		if z <= a {
			return 0, 0
		}
		return head(h0)*t.Sh + a*t.Sr, head(h1)*t.Sh + (z-1)*t.Sr + t.Ncols
	}
	ps := t.Pg.PageSize
	first, last := -1, -1
	for b := bFirst; b <= bLast; b++ {
		end := min(r1, t.Lens[b])
		if r0 >= end {
			continue
		}
		for blk := r0 / ps; blk <= (end-1)/ps; blk++ {
			page := t.Pg.Table[b*t.Pg.PerSeq+blk]
			if first < 0 || page < first {
				first = page
			}
			last = max(last, page)
		}
	}
	if first < 0 {
		return 0, 0
	}
	return first*t.Sb + head(h0)*t.Sh, last*t.Sb + head(h1)*t.Sh + (ps-1)*t.Sr + t.Ncols
}

// Window is the part of a buffer one dispatch binds, in elements.
type Window struct {
	Start, N int
}

// WindowFor aligns a span to the device's storage offset alignment (in
// elements) and clamps it to the buffer's length.
func WindowFor(lo, hi, align, bufLen int) Window {
	if hi <= lo {
		return Window{0, min(align, bufLen)}
	}
	start := lo / align * align
	return Window{start, min(hi, bufLen) - start}
}

// Splitter cuts units until each satisfies OK, halving the head range
// first (in multiples of HeadAlign, when set: a unit that starts on one
// ends on one), then the query rows (in multiples of RowAlign), then the
// keys (in multiples of KeyAlign, only when SplitKeys). It reports false
// when a unit of one head (HeadAlign heads), one row tile and one key
// tile still fails.
type Splitter struct {
	OK        func(Unit) bool
	HeadAlign int
	RowAlign  int
	KeyAlign  int
	SplitKeys bool
}

// Split appends u's pieces to out, cut as Splitter says.
func (s Splitter) Split(u Unit, out []Unit) ([]Unit, bool) {
	if s.OK(u) {
		return append(out, u), true
	}
	ha := max(s.HeadAlign, 1)
	var a, b Unit
	switch {
	case u.Bh1-u.Bh0 > ha:
		m := u.Bh0 + (u.Bh1-u.Bh0)/ha/2*ha
		a, b = u, u
		a.Bh1, b.Bh0 = m, m
	case u.I1-u.I0 > s.RowAlign:
		m := u.I0 + (u.I1-u.I0+2*s.RowAlign-1)/(2*s.RowAlign)*s.RowAlign
		a, b = u, u
		a.I1, b.I0 = m, m
	case s.SplitKeys && u.J1-u.J0 > s.KeyAlign:
		m := u.J0 + (u.J1-u.J0+2*s.KeyAlign-1)/(2*s.KeyAlign)*s.KeyAlign
		a, b = u, u
		a.J1, b.J0 = m, m
	default:
		return out, false
	}
	out, ok := s.Split(a, out)
	if !ok {
		return out, false
	}
	return s.Split(b, out)
}

// Chunks cuts [0, n) into pieces of at most size (size ≥ 1).
func Chunks(n, size int) [][2]int {
	var out [][2]int
	for j := 0; j < n; j += size {
		out = append(out, [2]int{j, min(n, j+size)})
	}
	return out
}

// CeilDiv is ⌈a/b⌉ for a ≥ 0 and b ≥ 1.
func CeilDiv(a, b int) int { return (a + b - 1) / b }
