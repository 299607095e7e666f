package cpu

// The tiles an item multiplies: Q's rows, K's and V's rows widened or
// gathered into float32 (wide heads a row at a time), and the bfloat16
// path's operands.

import (
	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu/internal/sgemm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// wideTile is a half K or V tile of every KV head widened in one call:
// keys [j0, j0+n) of batch b, from the first head's row on (fused.kvTile
// reads each head's rows out of it at the operand's row stride). ok is
// false until it holds a tile of the current item.
type wideTile struct {
	b, j0, n int
	ok       bool
	data     []float32
}

// qTile is the item's Q rows as a float32 matrix: in place for one
// float32 head; else gathered (and widened) into scratch, row (i, g) from
// head kvh·G + g at position i0 + i.
func (f *fused) qTile(sc *fusedScratch, b, kvh, i0, r int) blas32.General {
	p := f.p
	if f.g == 1 {
		return matOf(f.q, f.qr.Offset(b, kvh, i0), r, p.D, f.qr.Row, sc.q)
	}
	rows := r * f.g
	g := blas32.General{Rows: rows, Cols: p.D, Stride: p.D, Data: sc.q[:rows*p.D]}
	for ii := range rows {
		h, i := f.rowOf(kvh, i0, ii)
		getRow(f.q, f.qr.Offset(b, h, i), g.Data[ii*p.D:(ii+1)*p.D])
	}
	return g
}

// kvTile is keys j0 … j0+n−1 of KV head kvh of batch b of K or V (rows
// r, cols wide) as a float32 matrix: in place when they lie at one
// stride in a float32 operand, else widened or gathered from their pages
// into scratch.
func (f *fused) kvTile(s store, r backend.Rows, b, kvh, j0, n, cols int, scratch []float32, w *wideTile) blas32.General {
	if r.Run(j0) >= n {
		if g, ok := f.wideHeads(s, r, b, kvh, j0, n, cols, w); ok {
			return g
		}
		return matOf(s, r.Offset(b, kvh, j0), n, cols, r.Row, scratch)
	}
	g := blas32.General{Rows: n, Cols: cols, Stride: cols, Data: scratch[:n*cols]}
	if r.Row == cols && (r.Pages == nil || r.Pages.PageSize > 1) {
		// Each page's run of rows lies together (BHND pages): widened
		// in one call a run, not a row.
		for j := 0; j < n; {
			run := min(r.Run(j0+j), n-j)
			s.widenAt(g.Data[j*cols:(j+run)*cols], r.Offset(b, kvh, j0+j))
			j += run
		}
		return g
	}
	eachRow(r, b, kvh, j0, n, func(j, off int) {
		getRow(s, off, g.Data[j*cols:(j+1)*cols])
	})
	return g
}

// wideHeadsMax is the most elements wideHeads widens a tile: 4 MiB of
// float32 a thread for each of K and V.
const wideHeadsMax = 1 << 20

// wideHeads is head kvh's n rows from key j0 of a half K or V whose KV
// heads lie side by side in a key's row (BNHD), where the item takes
// every head (fused.mh > 1) on the Gemms' path: the rows of every head
// widened at once into w, in one call over their contiguous elements,
// the first head to ask, then read from there by each head at the
// operand's row stride. Head by head, a row at a time, the widening
// took several times as long a row as the whole tile in one call (an
// AMD Zen 4, 8 heads, 256 keys): in a cascade's prefix pass over BNHD
// pages, a large part of the Gemms' time. ok is false
// where this does not apply (one head an item, 8-bit or float32
// operands, a tile past wideHeadsMax).
func (f *fused) wideHeads(s store, r backend.Rows, b, kvh, j0, n, cols int, w *wideTile) (blas32.General, bool) {
	if f.mh <= 1 || !s.t.Half() || r.Head >= r.Row || n == 0 {
		return blas32.General{}, false
	}
	first := r.Offset(b, 0, j0)
	at := r.Offset(b, kvh, j0) - first // head kvh's first element in the tile
	end := (n-1)*r.Row + (f.mh-1)*r.Head + cols
	if end > wideHeadsMax || at+(n-1)*r.Row+cols > end || first+end > len(s.h) {
		return blas32.General{}, false
	}
	if !w.ok || w.b != b || w.j0 != j0 || w.n != n || len(w.data) < end {
		w.data = grow(w.data, end)
		widen(s.t, w.data[:end], s.h[first:first+end])
		w.b, w.j0, w.n, w.ok = b, j0, n, true
	}
	return blas32.General{Rows: n, Cols: cols, Stride: r.Row, Data: w.data[at : at+(n-1)*r.Row+cols]}, true
}

// eachRow calls row for keys j0 … j0+n−1 of KV head kvh of batch b, in
// order, with each one's index from j0 and its offset in the operand
// that r locates: the loop every gather from pages runs.
func eachRow(r backend.Rows, b, kvh, j0, n int, row func(j, off int)) {
	if pg := r.Pages; pg != nil && pg.PageSize == 1 {
		// One key a page (an index list's lowering: lower.Indexed):
		// each row is its table entry's page.
		at := kvh * r.Head
		for j, page := range pg.Table[b*pg.PerSeq+j0:][:n] {
			row(j, page*r.Batch+at)
		}
		return
	}
	for j := 0; j < n; {
		run := min(r.Run(j0+j), n-j)
		off := r.Offset(b, kvh, j0+j)
		for jj := range run {
			row(j+jj, off+jj*r.Row)
		}
		j += run
	}
}

// getRow copies len(dst) elements of s from off into dst, widened.
func getRow(s store, off int, dst []float32) {
	s.widenAt(dst, off)
}

// bf16Tile is one key tile of item on the bf16 arithmetic path: S =
// scale·Q·Kᵀ by the backend's bf16 path (sgemm.BF16Path.GemmBand) on Q's and K's stored bits (each
// product of two bfloat16 values exact in float32, the sums float32, as
// the float32 path's), the online softmax as ever, then P rounded to
// bfloat16 (2⁻⁸ relative a weight; l sums the float32 weights, so O moves
// by at most 2⁻⁸·Σ_j w_j·|v_j| and the LSE not at all) and acc += P·V on
// V's stored bits. VDPBF16PS reads bfloat16 subnormals (below 2⁻¹²⁶) as
// zero. Grouped Q rows and K and V rows across pages are gathered first.
func (f *fused) bf16Tile(sc *fusedScratch, st, acc blas32.General, band sgemm.Band, b, kvh, i0, j0 int) {
	p := f.p
	rows, tk := st.Rows, st.Cols
	q, lq := f.qBits(sc, b, kvh, i0, rows)
	k := kvRaw(f.k, f.kr, b, kvh, j0, tk, p.D, nil, sc.kb, store{}, nil)
	v := kvRaw(f.v, f.vr, b, kvh, j0, tk, p.Dv, nil, sc.vb, store{}, nil)
	band.Inner = false
	f.b.bf16.GemmBand(blas.Trans, rows, tk, p.D, f.alpha(kvh), q, lq, k.h, k.stride, 0, st.Data, st.Stride, band)
	m, l := sc.m[:rows], sc.l[:rows]
	pbt := sc.pb[:(rows-1)*st.Stride+tk]
	if !f.onlineTile(sc, st, pbt, acc.Data, band, m, l, b, kvh, i0, 0, j0) {
		for ii := range rows {
			h, i := f.rowOf(kvh, i0, ii)
			row := st.Data[ii*st.Stride : ii*st.Stride+tk]
			pb := sc.pb[ii*st.Stride : ii*st.Stride+tk]
			f.online(row, pb, band.Lo[ii], band.Hi[ii], acc.Data[ii*p.Dv:(ii+1)*p.Dv], &m[ii], &l[ii], b, h, i, j0)
		}
	}
	band.Inner = true
	f.b.bf16.GemmBand(blas.NoTrans, rows, p.Dv, tk, 1, pbt, st.Stride, v.h, v.stride, 1, acc.Data, acc.Stride, band)
}

// qBits is the item's Q rows as bfloat16 bits and their row stride: in
// place for one head, gathered for a group.
func (f *fused) qBits(sc *fusedScratch, b, kvh, i0, rows int) ([]uint16, int) {
	p := f.p
	if f.g == 1 {
		qo := f.qr.Offset(b, kvh, i0)
		return f.q.h[qo : qo+(rows-1)*f.qr.Row+p.D], f.qr.Row
	}
	for ii := range rows {
		h, i := f.rowOf(kvh, i0, ii)
		qo := f.qr.Offset(b, h, i)
		copy(sc.qb[ii*p.D:(ii+1)*p.D], f.q.h[qo:qo+p.D])
	}
	return sc.qb[:rows*p.D], p.D
}

// bf16Arithmetic says whether Fused runs bf16Tile: Q, K and V all
// BFloat16 (the caller's choice of bfloat16 precision) on a backend
// whose bf16 path multiplies bfloat16 (AMX or VDPBF16PS, chosen at New
// by CPU and setting, never by a timing).
func (b *Backend) bf16Arithmetic(q, k, v store) bool {
	return q.t == backend.BFloat16 && k.t == backend.BFloat16 && v.t == backend.BFloat16 && b.bf16.Arithmetic()
}
