package cpu

import (
	"context"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu/internal/sgemm"
	"github.com/attn-go/attn/internal/lower"
	"github.com/attn-go/attn/internal/softmax"
)

// fusedScratch is one worker's memory for the tile loop:
// O(sub·Tk + Tq·(D+Dv) + Tk·(D+Dv)), whatever Nq and Nk are.
type fusedScratch struct {
	s   []float32 // rows×Tk scores, then weights, of the current key tile
	acc []float32 // rows×Dv running, unnormalised output (a head's after another's)
	m   []float64 // running row max
	l   []float64 // running row sum of exp(S − m)
	// rowParts are one row's splits, as merge hands them to softmax.Merge.
	rowParts []softmax.Part
	// qms are a decoding item's query rows, a head's matrix each.
	qms []blas32.General
	lo  []int // each row's visible keys in the current key tile,
	hi  []int // [lo, hi) from the tile's start (the Gemms' band)
	// ka and ke are each position's visible keys [ka, ke) in the item's
	// (or split's) key range, taken once an item, not once a key tile.
	ka, ke []int
	// mNew and sums are each row's new max and sum of exponentials in
	// the current key tile, when onlineTile takes the whole tile.
	mNew, sums []float64
	// q, k and v hold the tiles that are not read in place, as float32:
	// a half operand's widened, a grouped tile's Q rows gathered, a paged
	// tile's rows gathered from their pages. nil when never needed.
	q, k, v []float32
	// On the bf16 arithmetic path (fused.bf16): pb is the rows×Tk weights
	// rounded to bfloat16 for P·V, and qb, kb, vb the bits of the tiles
	// that are not read in place (grouped Q, paged K and V).
	pb, qb, kb, vb []uint16
	// kq and vq hold 8-bit K and V rows gathered from their pages for
	// the decoding kernels, in the operand's dtype.
	kq, vq store
	// offs are the byte offsets of the rows a prefetching gather copies
	// (gatherOneKey).
	offs []int
	// t8 is what the 8-bit tile kernels keep for the item.
	t8 tiles8
	// row is one row of K or V widened, for the decoding path's tails.
	row []float32
	// pk is the current key tile packed for the Q·Kᵀ of every query
	// sub-tile of the item (tile).
	pk sgemm.PackedB
	// kw and vw are the current key tile of every KV head widened at
	// once, where an item on the Gemms' path takes every head (kvTile).
	kw, vw wideTile
}

// Fused computes O = softmax(scale·Q·Kᵀ + bias, masked)·V without the
// scores matrix, and the row log-sum-exp into lse when it is not nil.
//
// Each work item is a tile of query rows of one KV head (or of every KV
// head, each in turn a key tile, where the heads lie side by side: see
// fused.mh): Tq/G positions
// of each of the G query heads that share the KV head (one head when
// G = 1), its rows ordered position-major so that their key ranges grow
// with the row; the item streams key tiles of Tk rows, each read once for
// all G heads, and keeps, per query row, the running max m, the running
// sum l and the unnormalised output acc. For a key tile:
//
//	S    = scale · Qtile · Ktileᵀ + bias, −Inf where masked
//	m'   = max(m, rowmax S)
//	P    = exp(S − m')
//	l    = l · exp(m − m') + Σ_j P
//	acc  = acc · exp(m − m') + P · Vtile
//
// and at the end O = acc / l, LSE = m + log l. Key tiles no row of the
// item may see are never visited. When there are fewer items than
// threads (decoding: one query row a head), each item's keys are split
// into ranges run in parallel, each with its own m, l and acc, merged
// exactly by their maxima (flash-decoding's split-KV).
func (b *Backend) Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	const op = "fused"
	if p.NeedsLowering(k, v) {
		if err := lower.Fused(ctx, b, b, false, p, q, k, v, o, lse); err != nil {
			return backend.Wrapf(err, "cpu: %s", op)
		}
		return nil
	}
	if err := p.Validate(b.Caps(), q, k, v, o, lse); err != nil {
		return backend.Wrapf(err, "cpu: %s", op)
	}
	var d [7]store
	if err := b.fetch(d[:], op,
		operand{"Q", q, false}, operand{"K", k, false}, operand{"V", v, false},
		operand{"bias", p.Bias.Buffer(), false}, operand{"mask", p.Keep.Buffer(), false},
		operand{"O", o, true}, operand{"LSE", lse, true}); err != nil {
		return err
	}
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	// A decoding loop calls Fused once a token: the call's state, its
	// workers' scratch and the workers themselves are kept by the
	// backend, so that a steady-state call allocates nothing.
	f := b.fusedPool.Get().(*fused)
	defer func() {
		f.drop()
		b.fusedPool.Put(f)
	}()
	f.reset(b, p, d)
	items := f.plan(b.threads)
	f.growParts(items)
	if err := b.run(ctx, op, &f.run, items*f.splits, &f.items); err != nil || f.splits == 1 {
		return err
	}
	return b.run(ctx, op, &f.run, items, &f.merges)
}

// reset readies a pooled f for one call, keeping its buffers.
func (f *fused) reset(b *Backend, p backend.FusedParams, d [7]store) {
	*f = fused{
		b: b,
		p: p.Problem,
		q: d[0], k: d[1], v: d[2], o: d[5], lse: d[6].f32,
		mods: newScoreModsInto(p.Problem, newMaskView(p.Bias, d[3]), f.mods.align),
		keep: newMaskView(p.Keep, d[4]),
		qr:   p.QRowsOf(), kr: p.KRowsOf(), vr: p.VRowsOf(), or: p.ORowsOf(),
		g: p.Group(), tq: b.tileQ, tk: b.tileK, sub: b.subQ,
		cum: f.cum, parts: f.parts,
	}
	f.items, f.merges = fusedBody{f: f}, fusedBody{f: f, merge: true}
	if f.bf16 = b.bf16Arithmetic(f.q, f.k, f.v); f.bf16 {
		f.tq, f.tk = b.bf16Q, b.bf16K
	}
}

// drop lets go of the call's operands (so that the pool does not keep
// released buffers alive), keeping f's own buffers for the next call.
func (f *fused) drop() {
	*f = fused{cum: f.cum, parts: f.parts, mods: scoreMods{align: f.mods.align}}
}

// fusedBody is a Fused pass's body: its items' splits, or its merges,
// each worker on scratch from the backend's pool.
type fusedBody struct {
	f     *fused
	merge bool
}

func (fb *fusedBody) begin() any {
	sc := fb.f.b.scratchPool.Get().(*fusedScratch)
	sc.fit(fb.f)
	return sc
}

func (fb *fusedBody) item(state any, it int) { fb.f.do(state.(*fusedScratch), it, fb.merge) }
func (fb *fusedBody) end(state any)          { fb.f.b.scratchPool.Put(state) }

// do runs item it of the pass (an item's split, or a merge).
func (f *fused) do(sc *fusedScratch, it int, merge bool) {
	if merge {
		f.merge(sc, it)
		return
	}
	if f.p.Causal {
		// The last query tiles of a head see the most keys: take them
		// first so that the cheap ones fill in at the end.
		it = f.run.n - 1 - it
	}
	f.item(sc, it/f.splits, it%f.splits)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// fused holds one Fused call's operands, plan and passes; the backend
// pools them (fusedPool) with their buffers.
type fused struct {
	b              *Backend
	run            pass
	items, merges  fusedBody // the passes' bodies
	parts          parts
	p              backend.Problem
	q, k, v, o     store
	lse            []float32
	mods           scoreMods
	keep           *maskView
	qr, kr, vr, or backend.Rows
	// g is the group size H/KVHeads, rq the query positions of a tile
	// (its rows are rq·g), tq and tk the tiles in rows and keys, and sub
	// the rows of a score tile (tile: a query tile's sub-tiles share
	// each key tile).
	g, rq, tq, tk, sub int
	// splits is how many key ranges each item's keys are cut into.
	splits int
	// maxQ is the most query rows of any sequence, perB the items of one
	// batch (and cum their running count, for packed sequences of
	// different lengths).
	maxQ int
	cum  []int
	// decode says the items run the decoding kernels (decodeTile): few
	// rows, their Q gathered and padded to a multiple of 4; mh is the KV
	// heads an item takes (1, or every head: headsInterleaved).
	decode bool
	mh     int
	// bf16 says Q, K and V are all BFloat16 and the backend multiplies
	// bfloat16 (its bf16 path, sgemm.BF16Path): Q·Kᵀ and P·V run on the
	// stored bits with AMX or VDPBF16PS and float32 accumulation, P
	// rounded to bfloat16 for P·V (see bf16Tile).
	bf16 bool
}

// fit sizes a pooled worker's scratch for f's plan, growing what is too
// small and keeping the rest.
func (sc *fusedScratch) fit(f *fused) {
	p := f.p
	rows := f.tq
	if f.decode {
		rows = round4(rows)
	}
	srows := rows // a score tile's rows: a sub-tile's, or all the decoding rows
	if !f.decode {
		srows = min(rows, f.sub)
	}
	sc.s = grow(sc.s, srows*f.tk)
	sc.acc = grow(sc.acc, f.mh*rows*p.Dv)
	sc.m = grow(sc.m, f.mh*rows)
	sc.l = grow(sc.l, f.mh*rows)
	sc.lo = grow(sc.lo, rows)
	sc.hi = grow(sc.hi, rows)
	sc.ka = grow(sc.ka, rows)
	sc.ke = grow(sc.ke, rows)
	sc.mNew = grow(sc.mNew, rows)
	sc.sums = grow(sc.sums, rows)
	paged := p.Paged != nil
	switch {
	case f.decode:
		// The decoding kernels read K and V as stored: scratch only for
		// rows gathered from pages, in their dtype.
		sc.q = grow(sc.q, f.mh*rows*p.D)
		sc.row = grow(sc.row, max(p.D, p.Dv))
		if paged || f.k.t == backend.Q4 {
			sc.k, sc.kb, sc.kq = fitKV(f.k, sc.k, sc.kb, sc.kq, f.tk*p.D)
		}
		if paged || f.v.t == backend.Q4 {
			sc.v, sc.vb, sc.vq = fitKV(f.v, sc.v, sc.vb, sc.vq, f.tk*p.Dv)
		}
	case f.bf16:
		sc.pb = grow(sc.pb, rows*f.tk)
		if f.g > 1 {
			sc.qb = grow(sc.qb, rows*p.D)
		}
		if paged {
			sc.kb = grow(sc.kb, f.tk*p.D)
			sc.vb = grow(sc.vb, f.tk*p.Dv)
		}
	default:
		if f.q.t.Half() || f.g > 1 {
			sc.q = grow(sc.q, rows*p.D)
		}
		if f.k.wide() || paged {
			sc.k = grow(sc.k, f.tk*p.D)
		}
		if f.v.wide() || paged {
			sc.v = grow(sc.v, f.tk*p.Dv)
		}
	}
}

// fitKV grows the scratch of a paged operand stored as s: bits for a
// half, an 8-bit store for q8 and fp8 (and q8's for q4), floats
// otherwise.
func fitKV(s store, f []float32, h []uint16, q store, n int) ([]float32, []uint16, store) {
	switch {
	case s.t.Half():
		return f, grow(h, n), q
	case s.t == backend.Q8 || s.t == backend.Q4:
		// A q4 tile the integer kernels do not read in place is widened
		// to q8 (q4Rows).
		q.t, q.q8, q.sc = backend.Q8, grow(q.q8, n), grow(q.sc, n/backend.Q8Block)
		return f, h, q
	case s.t == backend.FP8:
		q.t, q.f8 = s.t, grow(q.f8, n)
		return f, h, q
	}
	return grow(f, n), h, q
}

// grow returns buf with length n, reallocated only when its capacity is
// short.
func grow[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// parts holds the splits' partial results when an item's keys are split:
// per item and split, each row's m, l and acc.
type parts struct {
	m, l []float64
	acc  []float32
}

// growParts sizes the parts for items split f.splits ways.
func (f *fused) growParts(items int) {
	if f.splits == 1 {
		return
	}
	n := items * f.splits * f.mh * f.tq
	f.parts.m, f.parts.l, f.parts.acc = grow(f.parts.m, n), grow(f.parts.l, n), grow(f.parts.acc, n*f.p.Dv)
}

// rowOf is the query head and position of row ii of an item of KV head
// kvh from position i0.
func (f *fused) rowOf(kvh, i0, ii int) (h, i int) {
	return kvh*f.g + ii%f.g, i0 + ii/f.g
}

// item runs split s of work item it: its query rows over its share of
// the keys, into O (one split) or into its part (several). An item of
// several KV heads (f.mh > 1: decoding K and V whose heads lie side by
// side) runs each key tile for every head in turn, each head's rows with
// their own m, l and acc.
func (f *fused) item(sc *fusedScratch, it, s int) {
	pt := &f.parts
	p := f.p
	b, kvh0, i0, r := f.itemAt(it)
	rows := r * f.g
	padded := rows // the decoding kernels' rows, a multiple of 4
	if f.decode {
		padded = round4(rows)
	}
	mh := f.mh
	negInf := math.Inf(-1)
	mAll, lAll := sc.m[:mh*padded], sc.l[:mh*padded]
	for i := range mAll {
		mAll[i], lAll[i] = negInf, 0
	}
	accAll := sc.acc[:mh*padded*p.Dv]
	clear(accAll)
	sc.kw.ok, sc.vw.ok = false, false // another item's, or another call's
	// head hh's rows, accumulator and (decoding) queries.
	state := func(hh int) (m, l []float64, acc blas32.General) {
		return mAll[hh*padded : hh*padded+rows], lAll[hh*padded : hh*padded+rows],
			blas32.General{Rows: padded, Cols: p.Dv, Stride: p.Dv, Data: accAll[hh*padded*p.Dv : (hh+1)*padded*p.Dv]}
	}

	// KeyRange's ends grow with the position, so the keys some row of
	// the item may see lie in [keyStart, keyEnd): the tiles outside
	// (past the causal limit or the key length, before a window's start)
	// are skipped outright. A split takes its share of those tiles.
	keyStart, _ := p.KeyRange(b, i0)
	_, keyEnd := p.KeyRange(b, i0+r-1)
	if f.splits > 1 {
		tiles := ceilDiv(max(keyEnd-keyStart, 0), f.tk)
		per := ceilDiv(tiles, f.splits)
		keyStart, keyEnd = keyStart+min(s*per*f.tk, keyEnd-keyStart), min(keyEnd, keyStart+(s+1)*per*f.tk)
	}
	var qm blas32.General
	qms := sc.qms[:0]
	switch {
	case f.decode:
		for hh := range mh {
			qms = append(qms, f.decodeQ(sc, b, kvh0+hh, i0, rows, hh*padded*p.D))
		}
		sc.qms = qms
	case !f.bf16:
		qm = f.qTile(sc, b, kvh0, i0, r)
	}
	// Within a tile the rows' visible ranges, which grow with the row
	// too, are the Gemms' band: Q·Kᵀ computes only the kernel blocks some
	// row sees, and P·V reads only the keys whose weights some row of a
	// block has (the rest are 0), so a causal diagonal or a window's
	// edges cost what they attend, not whole tiles.
	lo, hi := sc.lo[:rows], sc.hi[:rows]
	band := sgemm.Band{Lo: lo, Hi: hi}
	ka, ke := sc.ka[:r], sc.ke[:r]
	for pos := range ka {
		a, e := p.KeyRange(b, i0+pos)
		ka[pos], ke[pos] = max(a, keyStart), min(e, keyEnd)
	}
	bm := p.Blocks
	if bm != nil {
		// Key tiles on the block grid: the first may start before the
		// rows' keys (the band clips it).
		keyStart -= keyStart % f.tk
	}
	for j0 := keyStart; j0 < keyEnd; j0 += f.tk {
		tk := min(f.tk, keyEnd-j0)
		if bm != nil && !bm.AnyOn(b, kvh0*f.g, (kvh0+mh)*f.g, i0, i0+r, j0, j0+tk) {
			continue // a block mask's blocks, all off: never computed
		}
		for pos, a := range ka {
			l := min(max(a-j0, 0), tk)
			h := min(max(ke[pos]-j0, l), tk)
			for ii := pos * f.g; ii < (pos+1)*f.g; ii++ {
				lo[ii], hi[ii] = l, h
			}
		}
		switch {
		case f.decode:
			st := blas32.General{Rows: padded, Cols: tk, Stride: f.tk, Data: sc.s[:(padded-1)*f.tk+tk]}
			for hh := range mh {
				kvh := kvh0 + hh
				if mh > 1 && bm != nil && !bm.AnyOn(b, kvh*f.g, (kvh+1)*f.g, i0, i0+r, j0, j0+tk) {
					continue
				}
				m, l, acc := state(hh)
				f.decodeTile(sc, qms[hh], st, acc, m, l, rows, b, kvh, i0, j0)
			}
			continue
		case f.bf16:
			_, _, acc := state(0)
			st := blas32.General{Rows: rows, Cols: tk, Stride: f.tk, Data: sc.s[:(rows-1)*f.tk+tk]}
			f.bf16Tile(sc, st, acc, band, b, kvh0, i0, j0)
			continue
		}
		for hh := range mh {
			kvh := kvh0 + hh
			if mh > 1 {
				if bm != nil && !bm.AnyOn(b, kvh*f.g, (kvh+1)*f.g, i0, i0+r, j0, j0+tk) {
					continue
				}
				qm = f.qTile(sc, b, kvh, i0, r) // gathered again a tile: sc.q holds one head's
			}
			m, l, acc := state(hh)
			f.tile(sc, qm, acc, m, l, b, kvh, i0, j0, tk)
		}
	}

	for hh := range mh {
		m, l, acc := state(hh)
		if f.splits > 1 {
			at := ((it*f.splits+s)*mh + hh) * f.tq
			copy(pt.m[at:at+rows], m)
			copy(pt.l[at:at+rows], l)
			copy(pt.acc[at*p.Dv:(at+rows)*p.Dv], acc.Data[:rows*p.Dv])
			continue
		}
		f.finish(b, kvh0+hh, i0, m, l, acc.Data[:rows*p.Dv])
	}
}

// tile runs one key tile (tk keys from j0) of an item's rows on the
// float32 path, sub-tile by sub-tile of f.sub rows: S = scale·Q·Kᵀ, the
// online softmax, acc += P·V. The K tile is packed once for all the
// sub-tiles (sgemm.PackedB) and read widened or gathered once, as is the
// V tile, so that a tall item pays a key tile's set-up once for many
// rows while its score tile stays f.sub×Tk. A sub-tile none of whose
// rows sees a key of the tile is skipped.
func (f *fused) tile(sc *fusedScratch, qm, acc blas32.General, m, l []float64, b, kvh, i0, j0, tk int) {
	p := f.p
	rows := qm.Rows
	lo, hi := sc.lo[:rows], sc.hi[:rows]
	kt := f.kvTile(f.k, f.kr, b, kvh, j0, tk, p.D, sc.k, &sc.kw)
	vt := f.kvTile(f.v, f.vr, b, kvh, j0, tk, p.Dv, sc.v, &sc.vw)
	packed := f.sub < rows && packK(&sc.pk, kt)
	for s0 := 0; s0 < rows; s0 += f.sub {
		sr := min(f.sub, rows-s0)
		band := sgemm.Band{Lo: lo[s0 : s0+sr], Hi: hi[s0 : s0+sr]}
		if !band.Any() {
			continue
		}
		st := blas32.General{Rows: sr, Cols: tk, Stride: f.tk, Data: sc.s[:(sr-1)*f.tk+tk]}
		qs, as := sub(qm, s0, 0, sr, p.D), sub(acc, s0, 0, sr, p.Dv)
		if packed {
			gemmBandPacked(f.alpha(kvh), qs, &sc.pk, st, band)
		} else {
			gemmBand(blas.Trans, f.alpha(kvh), qs, kt, 0, st, band)
		}
		ms, ls := m[s0:s0+sr], l[s0:s0+sr]
		if !f.onlineTile(sc, st, nil, as.Data, band, ms, ls, b, kvh, i0, s0, j0) {
			for ii := range sr {
				h, i := f.rowOf(kvh, i0, s0+ii)
				row := st.Data[ii*f.tk : ii*f.tk+tk]
				f.online(row, nil, band.Lo[ii], band.Hi[ii], as.Data[ii*p.Dv:(ii+1)*p.Dv], &ms[ii], &ls[ii], b, h, i, j0)
			}
		}
		band.Inner = true
		gemmBand(blas.NoTrans, 1, st, vt, 1, as, band)
	}
}

// merge combines the splits of item it, each a partial softmax over its
// keys with its own max, into one (softmax.Merge: the max of all, each
// part's sum and accumulator scaled by exp(its max − that)), and
// finishes it.
func (f *fused) merge(sc *fusedScratch, it int) {
	pt := &f.parts
	p := f.p
	b, kvh0, i0, r := f.itemAt(it)
	rows := r * f.g
	m, l, acc := sc.m[:rows], sc.l[:rows], sc.acc[:rows*p.Dv]
	sc.rowParts = grow(sc.rowParts, f.splits)
	for hh := range f.mh { // each KV head of the item (item's parts)
		for ii := range rows {
			for s := range f.splits {
				at := ((it*f.splits+s)*f.mh+hh)*f.tq + ii
				sc.rowParts[s] = softmax.Part{M: pt.m[at], L: pt.l[at], Acc: pt.acc[at*p.Dv : (at+1)*p.Dv]}
			}
			m[ii], l[ii] = softmax.Merge(acc[ii*p.Dv:(ii+1)*p.Dv], sc.rowParts)
		}
		f.finish(b, kvh0+hh, i0, m, l, acc)
	}
}

// axpy adds a·x to y.
func axpy(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}

// finish writes the rows of an item from position i0 of KV head kvh: O =
// acc/l (with the sink in l) and the LSE m + log l.
func (f *fused) finish(b, kvh, i0 int, m, l []float64, acc []float32) {
	p := f.p
	for ii := range m {
		h, i := f.rowOf(kvh, i0, ii)
		row := acc[ii*p.Dv : (ii+1)*p.Dv]
		lse := math.Inf(-1)
		if p.Sinks != nil {
			var alpha float64
			alpha, m[ii], l[ii] = withSink(m[ii], l[ii], float64(p.Sinks[h]))
			scale(row, float32(alpha))
		}
		if l[ii] > 0 {
			// O = acc · (1/l) in float32 (times V's scale, 1 without
			// backend.Scales), by the vector loop: a scalar loop here
			// cost a measurable part of a window's time, whose rows
			// attend few keys for the Dv outputs each writes.
			scale(row, float32(float64(p.Scales.VScale(kvh))/l[ii]))
			lse = m[ii] + math.Log(l[ii])
		} else {
			clear(row)
		}
		putRow(f.o, f.or.Offset(b, h, i), row)
		if f.lse != nil {
			f.lse[p.LSEOffset(b, h, i)] = float32(lse)
		}
	}
}

// alpha is the scores' factor for KV head kvh: the problem's scale
// times the head's scale of K (backend.Scales; 1 without).
func (f *fused) alpha(kvh int) float32 {
	return f.p.Scale * f.p.Scales.KScale(kvh)
}

// onlineTile is online for every row of a key tile (st, from key j0;
// its rows the item's from row r0) at once, where each row sees all of
// the tile's keys and the vector loop takes rows of its length
// (softmaxRowsFit): the score modifiers and the keep-mask row by row,
// then one call for every row's new max, exponentials and sum, then the
// rescaling of the rows whose max grew. With pb (the bfloat16 path,
// bf16Tile) the weights go to pb's rows, at st's stride, rounded to
// bfloat16, as online's do. It reports false, having done nothing,
// otherwise: online takes the tile row by row. The tile's exponentials
// are softmaxRowsVec's (in base 2, within 8e-8 of e^(x − m)), where
// online's float32 ones are expShift's (its bfloat16 ones the same loop
// as the tile's, expShiftBF16AVX512); either is inside float32
// attention's error.
func (f *fused) onlineTile(sc *fusedScratch, st blas32.General, pb []uint16, acc []float32, band sgemm.Band, m, l []float64, b, kvh, i0, r0, j0 int) bool {
	rows, tk, dv := st.Rows, st.Cols, f.p.Dv
	if rows == 0 || !softmaxRowsFit(tk, pb != nil) {
		return false
	}
	for ii := range rows {
		if band.Lo[ii] != 0 || band.Hi[ii] != tk {
			return false
		}
	}
	if !f.mods.none() || f.keep != nil || f.p.Blocks != nil {
		for ii := range rows {
			h, i := f.rowOf(kvh, i0, r0+ii)
			row := st.Data[ii*st.Stride : ii*st.Stride+tk]
			f.mods.all(row, b, h, i, j0)
			if f.keep != nil {
				f.keep.applyKeep(row, b, h, i, j0)
			}
			if f.p.Blocks != nil {
				applyBlocks(row, f.p.Blocks, b, h, i, j0)
			}
		}
	}
	mNew, sums := sc.mNew[:rows], sc.sums[:rows]
	softmaxRowsVec(st.Data, st.Stride, rows, tk, m, mNew, sums, pb)
	for ii := range rows {
		fold(acc[ii*dv:(ii+1)*dv], &m[ii], &l[ii], mNew[ii], sums[ii])
	}
	return true
}

// applyBlocks hides (−Inf) the keys of row, which starts at key j0, that
// lie in blocks of query row (b, h, i) that bm leaves off: the partial
// blocks of a tile the block grid does not align with.
func applyBlocks(row []float32, bm *backend.BlockMask, b, h, i, j0 int) {
	blocks := bm.Row(b, h, i)
	for j := 0; j < len(row); {
		key := j0 + j
		n := min(len(row)-j, bm.Size-key%bm.Size) // the rest of key's block
		if key/bm.Size >= len(blocks) || !blocks[key/bm.Size] {
			for x := range row[j : j+n] {
				row[j+x] = float32(math.Inf(-1))
			}
		}
		j += n
	}
}

// fold takes a key tile's weights of one row, exp(S − mNew) summing to
// sum, into its running max m, sum l and accumulator acc (the tile's
// P·V is added to acc after): where the max grew, acc and l are rescaled
// by exp(m − mNew) first.
func fold(acc []float32, m, l *float64, mNew, sum float64) {
	if mNew != *m {
		// Past a row's first tiles its max seldom grows: only then is
		// acc rescaled. alpha is 0 when m was −Inf; acc and l are 0
		// then anyway.
		alpha := math.Exp(*m - mNew)
		scale(acc, float32(alpha))
		*l *= alpha
	}
	*l += sum
	*m = mNew
}

// online folds one row of a key tile (starting at key j0) into query row
// i's running max m, sum l and accumulator acc, leaving exp(S − m') in row
// for the P·V Gemm: the keys outside [a, e) (the row's KeyRange, from the
// tile's start) get weight 0, the others the softcap, bias, ALiBi and
// keep-mask first. A row that has seen no visible key yet keeps m = −Inf,
// l = 0 and acc = 0, and its weights are all 0: no −Inf − −Inf, no NaN.
// With pb (the bfloat16 path), the weights go to pb rounded to bfloat16
// instead (expShiftBF16), and row's are not kept.
func (f *fused) online(row []float32, pb []uint16, a, e int, acc []float32, m, l *float64, b, h, i, j0 int) {
	clear(row[:a])
	clear(row[e:])
	if pb != nil {
		clear(pb[:a])
		clear(pb[e:])
	}
	vis := row[a:e]
	j0 += a
	f.mods.all(vis, b, h, i, j0)
	if f.keep != nil {
		f.keep.applyKeep(vis, b, h, i, j0)
	}
	if f.p.Blocks != nil {
		applyBlocks(vis, f.p.Blocks, b, h, i, j0)
	}
	mNew := max(*m, float64(rowMax(vis)))
	if math.IsInf(mNew, -1) {
		clear(vis)
		if pb != nil {
			clear(pb[a:e])
		}
		return
	}
	var sum float64
	if pb != nil {
		sum = expShiftBF16(vis, float32(mNew), pb[a:e])
	} else {
		sum = expShift(vis, float32(mNew))
	}
	fold(acc, m, l, mNew, sum)
}
