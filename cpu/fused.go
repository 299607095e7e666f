package cpu

import (
	"context"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu/internal/sgemm"
)

// fusedScratch is one worker's memory for the tile loop:
// O(sub·Tk + Tq·(D+Dv) + Tk·(D+Dv)), whatever Nq and Nk are.
type fusedScratch struct {
	s   []float32 // rows×Tk scores, then weights, of the current key tile
	acc []float32 // rows×Dv running, unnormalised output (a head's after another's)
	m   []float64 // running row max
	l   []float64 // running row sum of exp(S − m)
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

// wideTile is a half K or V tile of every KV head widened in one call:
// keys [j0, j0+n) of batch b, from the first head's row on (fused.kvTile
// reads each head's rows out of it at the operand's row stride). ok is
// false until it holds a tile of the current item.
type wideTile struct {
	b, j0, n int
	ok       bool
	data     []float32
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
	if p.Lowers(k, v) {
		if err := backend.FusedLowered(ctx, b, b, false, p, q, k, v, o, lse); err != nil {
			return fmt.Errorf("cpu: %s: %w", op, err)
		}
		return nil
	}
	if err := p.ValidateBlocks(q, k, v, o, lse); err != nil {
		return fmt.Errorf("cpu: %s: %w", op, err)
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

// minTileQ is the smallest query tile Fused picks on its own to spread a
// small problem over more threads.
const minTileQ = 16

// minSplit is the fewest keys Fused gives each split of an item's keys
// (tests lower it to split small problems).
var minSplit = 512

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

// plan picks the tiles and the splits for threads workers and returns
// the number of work items (each run in f.splits parts). Scratch never
// needs to be bigger than the problem (decoding with Nq = 1 gets one
// position a head); when there are fewer items than threads, smaller
// query tiles and then key splits keep every thread busy. Each row's
// result depends only on Tk and the key order (and on the splits, which
// merge exactly), not on Tq.
func (f *fused) plan(threads int) int {
	p := f.p
	f.maxQ = 0
	for b := range p.B {
		f.maxQ = max(f.maxQ, p.QRows(b))
	}
	f.rq = max(1, f.tq/f.g)
	f.rq = min(f.rq, max(f.maxQ, 1))
	f.tk = min(f.tk, max(p.Nk, 1))
	// Under a window of W keys a query tile's rows see W + Tq − 1 keys
	// between them (the Gemms' band skips what no row of a kernel block
	// sees). When that span is at most three key tiles, one key tile
	// takes it whole: each row then runs one online step a query tile,
	// not three. Measured, B=1 H=8 D=64, W=512 at N=32768 (AVX-512):
	// key tiles of 256, 512, 767 (the span) and 1024 keys ran at about
	// 218, 219, 243 and 226 GFLOP/s.
	if band := p.Band(); band < math.MaxInt {
		if span := band + f.rq - 1; span <= 3*f.tk {
			f.tk = min(span, max(p.Nk, 1))
		}
	}
	if bm := p.Blocks; bm != nil {
		// Query tiles that divide a block mask's S (and key tiles, below),
		// so that a block that is off skips whole tiles.
		f.rq = min(f.rq, bm.Size)
		for bm.Size%f.rq != 0 {
			f.rq--
		}
	}
	if heads := p.B * p.KVHeads; heads > 0 && heads*ceilDiv(f.maxQ, f.rq) < threads {
		perHead := ceilDiv(threads, heads)
		f.rq = min(f.rq, max(ceilDiv(f.maxQ, perHead), ceilDiv(minTileQ, f.g)))
	}
	f.tq = f.rq * f.g
	f.sub = min(f.sub, f.tq)
	if p.Blocks != nil {
		// A query tile of one block's rows is one score tile: each key
		// tile is a block, read by one Gemm, not packed for sub-tiles
		// (measured at S = 128 on the Zen 3: 475–482 ms a step against
		// 496–536 with two sub-tiles of 64).
		f.sub = f.tq
	}
	f.mh = 1
	if f.decode = useDecode(f.tq, p.D, p.Dv); f.decode {
		f.bf16 = false
		if p.Band() == math.MaxInt {
			f.tk = min(f.b.decodeK, max(p.Nk, 1)) // DefaultDecodeTileK
		}
		if f.headsInterleaved() {
			// Each item takes every KV head, a short key tile at a
			// time: the heads of a key lie side by side, and a head's
			// rows alone are read at a stride that halves the
			// memory's rate (headsTileK).
			f.mh = p.KVHeads
			tile := headsTileK
			if f.k.t.Quantized() && f.v.t.Quantized() {
				tile = headsTileK8
			}
			f.tk = min(f.tk, tile)
		}
	} else if !f.bf16 && f.headsInterleaved() && f.maxQ*f.g <= gemmHeadsRows {
		// The same on the Gemms' path for few rows a head (a cascade's
		// prefix pass): there the keys' reads, not the arithmetic,
		// decide the time.
		f.mh = p.KVHeads
		f.tk = min(f.tk, gemmHeadsTileK)
	}
	if f.decode || f.bf16 {
		f.sub = f.tq // these paths take a query tile whole
	}
	if bm := p.Blocks; bm != nil {
		// Key tiles of S keys, or of a divisor of S where S is past the
		// tile.
		if bm.Size >= 16 && bm.Size < f.tk {
			f.tk = bm.Size
		} else if bm.Size >= f.tk {
			f.tk = bm.Size / ceilDiv(bm.Size, f.tk)
			for bm.Size%f.tk != 0 {
				f.tk--
			}
		}
	}
	f.splits = 1
	n := f.countItems()
	if n > 0 && n < threads {
		f.splits = min(ceilDiv(threads, n), max(1, p.Nk/minSplit))
	}
	return n
}

// headsTileK is the key tile of a decoding item that takes every KV head
// (fused.mh): its K and V rows of all heads stay in the L2 while each
// head reads its own. Measured on the 2-core AMD EPYC Zen 3, one thread
// (f16, D = 128, 8 KV heads side by side over 32768 keys): each head's
// tile of 1024 keys in turn, 82–83 ns a key a head; every head's tile of
// 128 keys in turn, 45 ns, as fast as with each head's rows together
// (45–46 ns); of 32 keys, 48–49 ns.
const headsTileK = 128

// headsTileK8 is headsTileK where K and V are 8-bit (q8, fp8): a key's
// rows are half a half's bytes, and a tile's per-head steps (the
// softmax, P·V's digits) cost the same a tile, so twice the keys. On
// the 2-core AMD EPYC Zen 4, 16 sequences of 8192 keys in BNHD pages
// (32 query heads over 8 KV heads, D = 128; BenchmarkCacheDecodeBatch),
// six interleaved rounds: q8 16.6–18.2 ms a step against 18.4–20.5 with
// 128 keys; fp8 19.4–20.1 (one round 27.3) against 20.3–22.3; tiles of
// 512 as 256.
const headsTileK8 = 256

// gemmHeadsRows is the most query rows a KV head may have for a call on
// the Gemms' path to take every KV head an item (fused.mh), a key tile
// of gemmHeadsTileK at a time. Measured on the 2-core AMD EPYC Zen 3,
// BNHD, D = 128, f16 K and V: a cascade's prefix pass (128 rows a head
// over 8192 keys, 8 KV heads) in 34.0–34.5 ms a step where it took
// 38.5–39.3 (key tiles of 128 and 512: 35.6–36.4); 64 rows a head over
// 8192 keys 19.0 ms against 25.4; but 2048 rows a head (512 positions,
// 32 heads over 8) 450 against 435 ms, and f32 prefill at N = 4096 582
// against 555.
const (
	gemmHeadsRows  = 128
	gemmHeadsTileK = 256
)

// headsInterleaved says whether a decoding call's items take every KV
// head (fused.mh): K's (and V's) heads lie side by side in a key's row
// (BNHD, BNHD pages, one-key pages of a BNHD cache), not packed, and K
// and V are not 8-bit values that AMX's tiles take (they need runs of
// more keys than headsTileK).
func (f *fused) headsInterleaved() bool {
	p := f.p
	return p.KVHeads > 1 && p.Packed == nil && !f.b.tiled(f.k.t) && !f.b.tiled(f.v.t) &&
		f.kr.Head < f.kr.Row && f.vr.Head < f.vr.Row
}

// tiled says whether AMX's tiles decode K or V of dtype t on this CPU
// under the backend's 8-bit setting, as its items' scratch decides it
// (none under vector, no q8 under integer).
func (b *Backend) tiled(t backend.DType) bool {
	switch t {
	case backend.Q8:
		return b.t8.q8Tiles()
	case backend.FP8:
		return b.t8.fp8Tiles()
	}
	return false
}

// countItems counts the work items, B·KVHeads·⌈QRows(b)/rq⌉ summed over
// the sequences, noting the running count per batch when the sequences
// differ in length.
func (f *fused) countItems() int {
	p := f.p
	if p.Packed == nil {
		f.cum = nil
		return p.B * p.KVHeads / f.mh * ceilDiv(p.Nq, f.rq)
	}
	f.cum = grow(f.cum, p.B+1)
	f.cum[0] = 0
	for b := range p.B {
		f.cum[b+1] = f.cum[b] + p.KVHeads*ceilDiv(p.QRows(b), f.rq)
	}
	return f.cum[p.B]
}

// itemAt locates item it: batch b, KV head kvh, first position i0 and
// positions r.
func (f *fused) itemAt(it int) (b, kvh, i0, r int) {
	p := f.p
	per := ceilDiv(p.Nq, f.rq)
	base := 0
	if f.cum != nil {
		b = sort.SearchInts(f.cum, it+1) - 1
		base = f.cum[b]
		per = ceilDiv(p.QRows(b), f.rq)
	} else {
		groups := p.KVHeads / f.mh // an item's KV heads: f.mh of them
		b = it / (groups * per)
		base = b * groups * per
	}
	it -= base
	kvh, i0 = it/per*f.mh, it%per*f.rq
	return b, kvh, i0, min(f.rq, p.QRows(b)-i0)
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
		if paged {
			sc.k, sc.kb, sc.kq = fitKV(f.k, sc.k, sc.kb, sc.kq, f.tk*p.D)
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
// half, an 8-bit store for q8 and fp8, floats otherwise.
func fitKV(s store, f []float32, h []uint16, q store, n int) ([]float32, []uint16, store) {
	switch {
	case s.t.Half():
		return f, grow(h, n), q
	case s.t == backend.Q8:
		q.t, q.q8, q.sc = s.t, grow(q.q8, n), grow(q.sc, n/backend.Q8Block)
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
// keys with its own max, into one (the running max of all, each part's
// sum and accumulator scaled by exp(its max − that)), and finishes it.
func (f *fused) merge(sc *fusedScratch, it int) {
	pt := &f.parts
	p := f.p
	b, kvh0, i0, r := f.itemAt(it)
	rows := r * f.g
	m, l, acc := sc.m[:rows], sc.l[:rows], sc.acc[:rows*p.Dv]
	for hh := range f.mh { // each KV head of the item (item's parts)
		clear(acc)
		for ii := range rows {
			mx := math.Inf(-1)
			for s := range f.splits {
				mx = max(mx, pt.m[((it*f.splits+s)*f.mh+hh)*f.tq+ii])
			}
			m[ii], l[ii] = mx, 0
			if math.IsInf(mx, -1) {
				continue // no split saw a key: l = 0, acc = 0
			}
			row := acc[ii*p.Dv : (ii+1)*p.Dv]
			for s := range f.splits {
				at := ((it*f.splits+s)*f.mh+hh)*f.tq + ii
				if math.IsInf(pt.m[at], -1) {
					continue
				}
				alpha := math.Exp(pt.m[at] - mx)
				l[ii] += pt.l[at] * alpha
				axpy(row, float32(alpha), pt.acc[at*p.Dv:(at+1)*p.Dv])
			}
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
			// cost 8 % of a window's time, whose rows attend few keys
			// for the Dv outputs each writes.
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
// took 64 ns a row of 128 from the L3 against 11 for the whole tile in
// one call (the 2-core AMD Zen 4, 8 heads, 256 keys): in a cascade's
// prefix pass over BNHD pages, a third of the Gemms' time. ok is false
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
		// One key a page (an index list's lowering: backend.FusedIndexed):
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
