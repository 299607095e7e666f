package cpu

import (
	"unsafe"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/attn-go/attn/backend"
)

// Decoding: an item of few query rows — the G query heads of one KV head
// at one position (Nq = 1) or a few (speculative decoding) — gives the
// Gemms nothing to do: packing each key tile for a handful of rows costs
// more than multiplying it, and the step is bound by reading K and V
// once. Such items run the decoding kernels instead (dotRows4,
// axpyRows4: AVX-512, or AVX2 with FMA and F16C, decode_amd64.s; NEON on
// arm64, decode_arm64.s), which read K's and V's rows where they lie,
// four query rows at a time, and sum in float32 as the Gemms do.

// decodeRows is the most query rows an item may have for Fused to run the
// decoding kernels rather than the Gemms.
const decodeRows = 16

// useDecode says whether items of rows query rows run the decoding
// kernels: where the CPU has them and the head dims are whole vectors.
// They take precedence over the bfloat16 arithmetic path, which would
// pack what they read once (and they multiply in float32).
func useDecode(rows, d, dv int) bool {
	return hasDecode() && rows <= decodeRows && d%16 == 0 && dv%16 == 0
}

// round4 rounds n up to a multiple of 4: the decoding kernels' rows.
func round4(n int) int { return (n + 3) &^ 3 }

// decodeQ gathers the item's query rows of KV head kvh into scratch from
// element at of sc.q, widened, padded with zero rows to a multiple of 4
// (their scores are 0 and their outputs never read).
func (f *fused) decodeQ(sc *fusedScratch, b, kvh, i0, rows, at int) blas32.General {
	d := f.p.D
	g := blas32.General{Rows: round4(rows), Cols: d, Stride: d, Data: sc.q[at : at+round4(rows)*d]}
	for ii := range rows {
		h, i := f.rowOf(kvh, i0, ii)
		getRow(f.q, f.qr.Offset(b, h, i), g.Data[ii*d:(ii+1)*d])
	}
	clear(g.Data[rows*d:])
	sc.t8.reset()
	return g
}

// rawRows is rows of K or V as stored (float32, half bits, or 8-bit
// values: q8's with their block scales, fp8's bits) at one stride, in
// place or gathered from their pages: the decoding kernels widen what is
// not float32 as they load it.
type rawRows struct {
	store      // from row 0's first element
	stride int // between rows, in elements
	// next is where the rows after these lie (the next page's first of
	// the same head), in elements from row 0, where hasNext: the integer
	// q8 P·V kernel prefetches them within the run's last keys.
	next    int
	hasNext bool
}

// row widens row j into dst (len d).
func (r rawRows) row(j int, dst []float32) { r.widenAt(dst, j*r.stride) }

// slice is keys j0 … j0+n−1 of r (rows of d at r's stride).
func (r rawRows) slice(j0, n, d int) rawRows {
	off, end := j0*r.stride, j0*r.stride
	if n > 0 {
		end = (j0+n-1)*r.stride + d
	}
	// By the dtype, not by which slice is non-nil: a gathered tile's
	// rawRows holds the scratch of every dtype (kvRaw).
	switch {
	case r.t == backend.Q8:
		r.q8, r.sc = r.q8[off:end], r.sc[off/backend.Q8Block:end/backend.Q8Block]
	case r.t == backend.FP8:
		r.f8 = r.f8[off:end]
	case r.t == backend.Q4: // in place (q4InPlace): codes two a byte
		r.q4, r.sc = r.q4[off/2:end/2], r.sc[off/backend.Q8Block:end/backend.Q8Block]
	case r.t.Half():
		r.h = r.h[off:end]
	default:
		r.f32 = r.f32[off:end]
	}
	r.next -= off
	return r
}

// kvRaw is keys j0 … j0+n−1 of KV head kvh of batch b of K or V (cols
// wide) as stored: in place when they lie at one stride, else gathered
// from their pages into scratch (f for float32, h for halves, q for the
// 8-bit dtypes, a store of s's dtype). The decoding kernels read it, and
// the bfloat16 arithmetic path its bits.
func kvRaw(s store, r backend.Rows, b, kvh, j0, n, cols int, f []float32, h []uint16, q store, offs *[]int) rawRows {
	if s.t == backend.Q4 {
		return q4Rows(s, r, b, kvh, j0, n, cols, q)
	}
	out := rawRows{store: store{t: s.t}, stride: r.Row}
	if r.Run(j0) >= n {
		off := r.Offset(b, kvh, j0)
		end := off + (n-1)*r.Row + cols
		if pg := r.Pages; pg != nil && (j0+n)/pg.PageSize < pg.PerSeq && pg.Table[b*pg.PerSeq+(j0+n)/pg.PageSize] >= 0 {
			out.next, out.hasNext = r.Offset(b, kvh, j0+n)-off, true
		}
		switch s.t {
		case backend.Float32:
			out.f32 = s.f32[off:end]
		case backend.Q8:
			out.q8, out.sc = s.q8[off:end], s.sc[off/backend.Q8Block:end/backend.Q8Block]
		case backend.FP8:
			out.f8 = s.f8[off:end]
		default:
			out.h = s.h[off:end]
		}
		return out
	}
	out.stride = cols
	if gatherOneKey(s, r, b, kvh, j0, n, cols, f, h, q, offs) {
		return finishRaw(out, s.t, n, cols, f, h, q)
	}
	eachRow(r, b, kvh, j0, n, func(j, src int) {
		switch s.t {
		case backend.Float32:
			copy(f[j*cols:(j+1)*cols], s.f32[src:src+cols])
		case backend.Q8:
			copy(q.q8[j*cols:(j+1)*cols], s.q8[src:src+cols])
			copy(q.sc[j*cols/backend.Q8Block:(j+1)*cols/backend.Q8Block], s.sc[src/backend.Q8Block:])
		case backend.FP8:
			copy(q.f8[j*cols:(j+1)*cols], s.f8[src:src+cols])
		default:
			copy(h[j*cols:(j+1)*cols], s.h[src:src+cols])
		}
	})
	return finishRaw(out, s.t, n, cols, f, h, q)
}

// finishRaw points out at the n gathered rows of cols in the scratch of
// dtype t.
func finishRaw(out rawRows, t backend.DType, n, cols int, f []float32, h []uint16, q store) rawRows {
	switch t {
	case backend.Q8:
		out.q8, out.sc = q.q8[:n*cols], q.sc[:n*cols/backend.Q8Block]
	case backend.FP8:
		out.f8 = q.f8[:n*cols]
	default:
		out.f32, out.h = f[:min(len(f), n*cols)], h[:min(len(h), n*cols)]
	}
	return out
}

// gatherOneKey gathers the n rows of an index list's lowering (pages of
// one key, lower.Indexed: each row somewhere else in the cache)
// with the prefetching gather (gatherRowsVec), every row's bounds
// checked first (oneKeyOffsets), into the scratch kvRaw's copies fill; a
// q8 row's scales follow in Go. It reports false, gathering nothing, for
// any other rows or where the gather cannot run.
func gatherOneKey(s store, r backend.Rows, b, kvh, j0, n, cols int, f []float32, h []uint16, q store, offs *[]int) bool {
	size := s.codeSize()
	if cols*size%32 != 0 || !oneKeyOffsets(s, r, b, kvh, j0, n, cols, offs) {
		return false
	}
	o := *offs
	var dst, src unsafe.Pointer
	switch s.t {
	case backend.Float32:
		if len(f) < n*cols {
			return false
		}
		dst, src = unsafe.Pointer(unsafe.SliceData(f)), unsafe.Pointer(unsafe.SliceData(s.f32))
	case backend.Q8:
		if len(q.q8) < n*cols || len(q.sc) < n*cols/backend.Q8Block {
			return false
		}
		dst, src = unsafe.Pointer(unsafe.SliceData(q.q8)), unsafe.Pointer(unsafe.SliceData(s.q8))
	case backend.FP8:
		if len(q.f8) < n*cols {
			return false
		}
		dst, src = unsafe.Pointer(unsafe.SliceData(q.f8)), unsafe.Pointer(unsafe.SliceData(s.f8))
	default:
		if len(h) < n*cols {
			return false
		}
		dst, src = unsafe.Pointer(unsafe.SliceData(h)), unsafe.Pointer(unsafe.SliceData(s.h))
	}
	if !gatherRowsVec(dst, src, o, cols*size) {
		return false
	}
	if s.t == backend.Q8 {
		nb := cols / backend.Q8Block
		for j := range n {
			e := o[j] / backend.Q8Block
			copy(q.sc[j*nb:(j+1)*nb], s.sc[e:e+nb])
		}
	}
	return true
}

// codeSize is the bytes a value of s takes where its rows lie: its
// dtype's size, 1 for an 8-bit one (a q8 row's scales lie apart).
func (s store) codeSize() int {
	if s.t.Quantized() {
		return 1
	}
	return s.t.Size()
}

// oneKeyOffsets writes into *offs the byte offsets in s of the n rows
// (of cols) of KV head kvh from key j0 of sequence b, where r's pages
// hold one key each (an index list's lowering), and reports whether
// they are such rows and every one lies inside s (else the Go paths,
// whose bounds checks say where, take them).
func oneKeyOffsets(s store, r backend.Rows, b, kvh, j0, n, cols int, offs *[]int) bool {
	pg := r.Pages
	if pg == nil || pg.PageSize != 1 || offs == nil || n == 0 {
		return false
	}
	size := s.codeSize()
	*offs = grow(*offs, n)
	o := *offs
	// eachRow's one-key-page offsets, written out: through its callback
	// the step took measurably longer.
	total := s.len()
	at := kvh * r.Head
	for j, page := range pg.Table[b*pg.PerSeq+j0:][:n] {
		e := page*r.Batch + at
		if e < 0 || e+cols > total {
			return false // not a row of s: the Go loop's bounds checks say so
		}
		o[j] = e * size
	}
	return true
}

// decodeTile is one key tile of a decoding item: the scores of the keys
// some row sees ([lo[0], hi[rows−1]) of the tile, the rows' ranges
// growing with the row), the online softmax of each row, and acc += P·V
// over the same keys. st and acc have round4(rows) rows. Keys that lie
// at one stride are read in place; paged keys run by run, each page's
// keys in place, when pages hold at least decodeRun keys, and otherwise
// gathered into scratch first.
func (f *fused) decodeTile(sc *fusedScratch, qm, st, acc blas32.General, m, l []float64, rows, b, kvh, i0, j0 int) {
	p := f.p
	a, e := sc.lo[0], sc.hi[rows-1]
	if a >= e {
		return // no row sees a key of this tile
	}
	byRuns := p.Paged != nil && p.Paged.PageSize >= decodeRun
	chunk := e - a
	if f.k.t == backend.Q4 || f.v.t == backend.Q4 {
		chunk = q4Chunk // widened a chunk at a time (q4Rows)
	}
	// segment is the keys from x that one kernel call takes: the rest of
	// the band, or of x's page; a q4 chunk at most.
	segment := func(x int) int {
		if byRuns {
			return min(e-x, chunk, f.kr.Run(j0+x), f.vr.Run(j0+x))
		}
		return min(e-x, chunk)
	}
	for x := a; x < e; x += segment(x) {
		f.decodeDot(sc, qm, st, b, kvh, j0, x, segment(x))
	}
	for ii := range rows {
		h, i := f.rowOf(kvh, i0, ii)
		row := st.Data[ii*st.Stride : ii*st.Stride+st.Cols]
		f.online(row, nil, sc.lo[ii], sc.hi[ii], acc.Data[ii*p.Dv:(ii+1)*p.Dv], &m[ii], &l[ii], b, h, i, j0)
	}
	for x := a; x < e; x += segment(x) {
		f.decodeAxpy(sc, st, acc, b, kvh, j0, x, segment(x))
	}
}

// decodeRun is the fewest keys a page must hold for decodeTile to read
// paged K and V in place, page by page, rather than gather a tile's
// rows into scratch first: a gather copies every row (and an 8-bit
// row's scales) once more than the kernels read it.
const decodeRun = 32

// decodeDot is the scores of keys x … x+n−1 of the tile at j0 for every
// row group (dotRows4, the last keys of a run that is not a multiple of
// the kernel's step in Go).
func (f *fused) decodeDot(sc *fusedScratch, qm, st blas32.General, b, kvh, j0, x, n int) {
	p := f.p
	alpha := f.alpha(kvh)
	if hasDecodeIdx(f.k.t) && oneKeyOffsets(f.k, f.kr, b, kvh, j0+x, n, p.D, &sc.offs) {
		// An index list's keys, read where they lie.
		o, size := sc.offs[:n], f.k.t.Size()
		for g := 0; g < st.Rows; g += 4 {
			s := st.Data[g*st.Stride+x:]
			q := qm.Data[g*qm.Stride:]
			for j := dotRows4Idx(q, qm.Stride, f.k, o, n, p.D, s, st.Stride, alpha); j < n; j++ {
				kj := sc.row[:p.D]
				f.k.widenAt(kj, o[j]/size)
				dotRowsGo(q, qm.Stride, 4, kj, p.D, 1, p.D, s[j:], st.Stride, alpha)
			}
		}
		return
	}
	// The 8-bit tile kernels keep Q's digits by group of four rows across
	// the item's tiles: an item of several KV heads (fused.mh) numbers its
	// heads' groups apart.
	grp0 := kvh % f.mh * (st.Rows / 4)
	if f.k.t == backend.Q4 {
		// A q4 K's codes read in place where the kernel runs (dotQ4);
		// the keys it leaves are widened for the q8 kernels below.
		done := f.decodeDotQ4(sc, qm, st, grp0, b, kvh, j0, x, n, alpha)
		x, n = x+done, n-done
		if n == 0 {
			return
		}
	}
	k := kvRaw(f.k, f.kr, b, kvh, j0+x, n, p.D, sc.k, sc.kb, sc.kq, &sc.offs)
	for g := 0; g < st.Rows; g += 4 {
		s := st.Data[g*st.Stride+x:]
		q := qm.Data[g*qm.Stride:]
		j := dotTiles(&sc.t8, grp0+g/4, q, qm.Stride, k, n, p.D, s, st.Stride, alpha)
		if j < n {
			j += dotRows4(q, qm.Stride, k.slice(j, n-j, p.D), n-j, p.D, s[j:], st.Stride, alpha)
		}
		for ; j < n; j++ {
			kj := sc.row[:p.D]
			k.row(j, kj)
			dotRowsGo(q, qm.Stride, 4, kj, p.D, 1, p.D, s[j:], st.Stride, alpha)
		}
	}
}

// decodeDotQ4 is the scores of the first keys of x … x+n−1 of the tile at
// j0 for every row group on the q4 kernel, a q4 K's codes read where
// they lie (dotQ4), and returns how many keys it took for every group: 0
// where the keys do not lie at one stride or the kernel does not run.
func (f *fused) decodeDotQ4(sc *fusedScratch, qm, st blas32.General, grp0, b, kvh, j0, x, n int, alpha float32) int {
	k, ok := q4InPlace(f.k, f.kr, b, kvh, j0+x, n, f.p.D)
	if !ok {
		return 0
	}
	done := n
	for g := 0; g < st.Rows; g += 4 {
		// A group the kernel leaves (its Q rows not finite) takes the keys
		// again with the others' on the q8 kernels, the same bits.
		done = min(done, dotQ4(&sc.t8, grp0+g/4, qm.Data[g*qm.Stride:], qm.Stride, k, n, f.p.D, st.Data[g*st.Stride+x:], st.Stride, alpha))
	}
	return done
}

// decodeAxpy adds the weighted values of keys x … x+n−1 of the tile at
// j0 into every row group's accumulator (axpyRows4, else Go).
func (f *fused) decodeAxpy(sc *fusedScratch, st, acc blas32.General, b, kvh, j0, x, n int) {
	p := f.p
	if hasDecodeIdx(f.v.t) && oneKeyOffsets(f.v, f.vr, b, kvh, j0+x, n, p.Dv, &sc.offs) {
		for g := 0; g < st.Rows; g += 4 {
			axpyRows4Idx(st.Data[g*st.Stride+x:], st.Stride, f.v, sc.offs[:n], n, p.Dv, acc.Data[g*acc.Stride:], acc.Stride)
		}
		return
	}
	// A q4 V's codes read in place where the kernel runs (axpyQ4), group
	// g's first done[g] keys; the keys after the fewest any group took
	// are widened for the q8 kernels below.
	var done [decodeMaxGroups]int
	from := 0
	if f.v.t == backend.Q4 && st.Rows <= 4*decodeMaxGroups {
		if v4, ok := q4InPlace(f.v, f.vr, b, kvh, j0+x, n, p.Dv); ok {
			from = n
			for g := 0; g < st.Rows; g += 4 {
				done[g/4] = axpyQ4(&sc.t8, st.Data[g*st.Stride+x:], st.Stride, v4, n, p.Dv, acc.Data[g*acc.Stride:], acc.Stride)
				from = min(from, done[g/4])
			}
			if from == n {
				return
			}
		}
	}
	v := kvRaw(f.v, f.vr, b, kvh, j0+x+from, n-from, p.Dv, sc.v, sc.vb, sc.vq, &sc.offs)
	for g := 0; g < st.Rows; g += 4 {
		w := st.Data[g*st.Stride+x+from:]
		out := acc.Data[g*acc.Stride:]
		n, v := n-from, v
		if d := done[g/4] - from; d > 0 {
			w, n, v = w[d:], n-d, v.slice(d, n-d, p.Dv)
		}
		j := axpyTiles(&sc.t8, w, st.Stride, v, n, p.Dv, out, acc.Stride)
		if j == n || axpyRows4(w[j:], st.Stride, v.slice(j, n-j, p.Dv), n-j, p.Dv, out, acc.Stride) {
			continue
		}
		for ; j < n; j++ {
			vj := sc.row[:p.Dv]
			v.row(j, vj)
			axpyRowsGo(w[j:], st.Stride, 4, vj, p.Dv, 1, p.Dv, out, acc.Stride)
		}
	}
}

// dotRowsGo is dotRows4 in Go for any rows and keys: s[r][j] = alpha ·
// Σ_c q[r][c]·k[j][c], summed in float32.
func dotRowsGo(q []float32, ldq, rows int, k []float32, ldk, n, d int, s []float32, lds int, alpha float32) {
	for r := range rows {
		qr := q[r*ldq : r*ldq+d]
		for j := range n {
			kj := k[j*ldk : j*ldk+d]
			var sum float32
			for c, x := range qr {
				sum += x * kj[c]
			}
			s[r*lds+j] = alpha * sum
		}
	}
}

// axpyRowsGo is axpyRows4 in Go for any rows: acc[r][c] += Σ_j
// p[r][j]·v[j][c].
func axpyRowsGo(p []float32, ldp, rows int, v []float32, ldv, n, dv int, acc []float32, ldacc int) {
	for r := range rows {
		out := acc[r*ldacc : r*ldacc+dv]
		for j := range n {
			w := p[r*ldp+j]
			if w == 0 {
				continue
			}
			vj := v[j*ldv : j*ldv+dv]
			for c := range out {
				out[c] += w * vj[c]
			}
		}
	}
}
