package cpu

import (
	"context"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu/internal/sgemm"
)

// Backward tiles: query rows and keys of one step. 128 × 256 is the
// fastest of the sizes from 64 to 512 on a Zen 3, at D = 64 and 128.
const (
	backTileQ = 128
	backTileK = 256
	// backPad pads the rows of P and dS, which the products dKᵀ and dVᵀ
	// read in place as B: at a stride of 256 floats, a kernel's panel
	// of B would fall in an eighth of L1's sets and not stay there.
	backPad = 16
	backLd  = backTileK + backPad
	// backPackBytes bounds a worker's packed key tiles (keyPanels): the
	// first tiles of an item's keys that fit are packed once, the rest
	// for each query tile, so that the cache adds at most this to the
	// worker's N·(D + Dv) floats of dKᵀ and dVᵀ (all of N = 4096 at
	// D = Dv = 128; a quarter of N = 32768 at D = 64).
	backPackBytes = 4 << 20
)

// Backward computes attention's gradients (backend.Backwarder) by
// FlashAttention-2's method: for each KV head of each batch (a work item,
// the items spread over the workers), for each query head of its group
// and each tile of query rows, the probabilities of each key tile are
// recomputed from Q, K and the forward's LSE (P = exp(s − LSE), 0 for a
// hidden key), then
//
//	dV += Pᵀ·dO,  dP = dO·Vᵀ,  dS = P∘(dP − δ),  δ = rowsum(dO∘O)
//	dBias = dS,  dS·softcap′ → dQ += scale·dS·K,  dK += scale·dSᵀ·Q
//
// on the backend's Sgemm and its workers, in float32, never holding more
// than a tile of scores. Half operands are widened a tile at a time, and
// a half dK or dV is summed in float32 rows of the item's own and
// rounded once. An item owns its KV head's rows of dK and dV and its
// query heads' rows of dQ; dSinks are each item's parts added in item
// order, and a dBias that broadcasts over the batch or over heads of
// several KV groups is summed in fixed lanes of items, added in lane
// order: the same inputs give the same bits whatever the thread count. Keys hidden by position (key lengths, causal
// masking, the window), by the keep-mask, by a −Inf bias or by a block
// mask get no gradient; a key tile whose blocks are off for every row of
// a query tile is skipped (keyTiles). An index list reads only the keys
// its rows name, a block of keys at a time for all the rows of an item
// that name them (indexedHead).
func (b *Backend) Backward(ctx context.Context, p backend.BackwardParams, q, k, v, o, lse, dO, dQ, dK, dV backend.Buffer, dSinks []float32) error {
	const op = "backward"
	if err := p.Validate(q, k, v, o, lse, dO, dQ, dK, dV, dSinks); err != nil {
		return backend.Wrapf(err, "cpu: %s", op)
	}
	var d [12]store
	if err := b.fetch(d[:], op,
		operand{"Q", q, false}, operand{"K", k, false}, operand{"V", v, false}, operand{"O", o, false},
		operand{"LSE", lse, false}, operand{"dO", dO, false},
		operand{"bias", p.Bias.Buffer(), false}, operand{"mask", p.Keep.Buffer(), false},
		operand{"dQ", dQ, true}, operand{"dK", dK, true}, operand{"dV", dV, true},
		operand{"dBias", p.DBias.Buffer(), true}); err != nil {
		return err
	}
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	pr := p.Problem
	bw := &backward{p: pr, q: d[0], k: d[1], v: d[2], o: d[3], lse: d[4].f32, do: d[5],
		bias: newMaskView(p.Bias, d[6]), keep: newMaskView(p.Keep, d[7]),
		dq: d[8], dk: d[9], dv: d[10],
		qr: pr.QRowsOf(), kr: pr.KRowsOf(), vr: pr.VRowsOf(), or: pr.ORowsOf()}
	if p.DBias != nil {
		n, _ := backend.CheckedProduct(p.DBias.Shape[:]...)
		bw.dBias = d[11].f32[:n]
		clear(bw.dBias)
		bw.dbs = p.DBias.Strides()
		// Items are (batch, KV head): they share dBias's elements when it
		// broadcasts over a batch of several, or over heads of several
		// KV groups.
		bw.dBiasShared = p.DBias.Shape[0] == 1 && pr.B > 1 || p.DBias.Shape[1] == 1 && pr.KVHeads > 1
	}
	items := pr.B * pr.KVHeads
	if dSinks != nil {
		bw.sinkParts = make([]float64, items*pr.Group())
	}
	n := items
	if bw.dBiasShared {
		// Items that share dBias's elements add into the partial sums
		// of fixed lanes, item it into lane it mod backLanes in item
		// order, and the lanes are added in lane order once all have
		// run: the same sums in the same order whatever the threads.
		n = min(items, backLanes)
		bw.lanes = make([][]float32, n)
		for i := range bw.lanes {
			bw.lanes[i] = make([]float32, len(bw.dBias))
		}
	}
	var r pass
	if err := b.run(ctx, op, &r, n, bw); err != nil {
		return err
	}
	for _, lane := range bw.lanes {
		for i, x := range lane {
			bw.dBias[i] += x
		}
	}
	if dSinks != nil {
		// Each head's sink gradient, the items' parts added in item
		// order (batch by batch).
		g := pr.Group()
		for h := range pr.H {
			var sum float64
			for b := range pr.B {
				sum += bw.sinkParts[(b*pr.KVHeads+h/g)*g+h%g]
			}
			dSinks[h] = float32(sum)
		}
	}
	return nil
}

// backLanes is how many lanes of partial sums a shared dBias is summed
// in (Backward): as many items at once at most, whatever the threads.
const backLanes = 8

// backward is one Backward call's operands.
type backward struct {
	p              backend.Problem
	q, k, v, o, do store
	lse            []float32
	dq, dk, dv     store
	bias, keep     *maskView
	qr, kr, vr, or backend.Rows
	dBias          []float32   // nil when not asked
	dbs            [4]int      // dBias's strides
	dBiasShared    bool        // items share dBias's elements
	lanes          [][]float32 // shared dBias's partial sums (backLanes)
	sinkParts      []float64   // each item's query heads' sink gradients
}

// begin, item and end make bw the pass's body (passBody): item it is KV
// head it mod KVHeads of batch it / KVHeads, on the worker's tiles; with
// a shared dBias, item it is lane it, its items one after the other into
// the lane's partial sums.
func (bw *backward) begin() any { return new(backScratch) }
func (bw *backward) item(state any, it int) {
	sc := state.(*backScratch)
	if bw.lanes == nil {
		bw.head(sc, it/bw.p.KVHeads, it%bw.p.KVHeads)
		return
	}
	sc.dBias = bw.lanes[it]
	for x := it; x < bw.p.B*bw.p.KVHeads; x += len(bw.lanes) {
		bw.head(sc, x/bw.p.KVHeads, x%bw.p.KVHeads)
	}
	sc.dBias = nil
}
func (bw *backward) end(any) {}

// backScratch is a worker's tiles.
type backScratch struct {
	qt, dot, dqt, s, dp, delta []float32
	qtT, dotT                  []float32 // the query tile's Qᵀ and dOᵀ
	dkT, dvT                   []float32 // the item's dKᵀ and dVᵀ, summed
	raw, orow                  []float32
	kt, vt                     []float32 // a half K's and V's tile, widened
	dk, dv                     []float32 // a half dK's and dV's rows, in float32
	ix                         *idxScratch
	dBias                      []float32 // the lane's partial sums of a shared dBias
	// The item's first key tiles' Kᵀ and Vᵀ (backPackBytes), packed for
	// the micro-kernel at a tile's first use (kvPacked) and multiplied by
	// every query tile of every head of the group (keyPanels).
	pk, pv   []sgemm.PackedB
	kvPacked []bool
}

// kvRows is the number of K and V rows batch b has: its key length when
// packed (no rows past it), else Nk (rows past a key length get 0).
func (bw *backward) kvRows(b int) int {
	if bw.p.Packed != nil {
		return bw.p.KVLen(b)
	}
	return bw.p.Nk
}

// target is where an item sums dK or dV (rows of width w of KV head kvh
// of batch b): the output itself when it is float32, else the worker's
// float32 rows, which the caller writes whole.
func (bw *backward) target(out store, rows backend.Rows, scratch *[]float32, b, kvh, w int) blas32.General {
	n := bw.kvRows(b)
	if out.t.Half() {
		*scratch = grow(*scratch, n*w)
		return blas32.General{Rows: n, Cols: w, Stride: w, Data: *scratch}
	}
	if n == 0 {
		return blas32.General{Cols: w, Stride: rows.Row}
	}
	return blas32.General{Rows: n, Cols: w, Stride: rows.Row, Data: out.f32[rows.Offset(b, kvh, 0):][:(n-1)*rows.Row+w]}
}

// flush rounds a half dK's or dV's float32 rows into the output.
func (bw *backward) flush(out store, rows backend.Rows, t blas32.General, b, kvh int) {
	if !out.t.Half() {
		return
	}
	for j := range t.Rows {
		putRow(out, rows.Offset(b, kvh, j), t.Data[j*t.Stride:][:t.Cols])
	}
}

// head computes the gradients of KV head kvh of batch b: its rows of dK
// and dV, and its query heads' rows of dQ.
func (bw *backward) head(sc *backScratch, b, kvh int) {
	p := bw.p
	d, dv := p.D, p.Dv
	// dK and dV are written whole: from their transposes (below), or by
	// an index list's blocks, each starting at 0 as it is taken.
	dkT := bw.target(bw.dk, bw.kr, &sc.dk, b, kvh, d)
	dvT := bw.target(bw.dv, bw.vr, &sc.dv, b, kvh, dv)
	if p.Indices != nil {
		bw.indexedHead(sc, dkT, dvT, b, kvh)
		bw.flush(bw.dk, bw.kr, dkT, b, kvh)
		bw.flush(bw.dv, bw.vr, dvT, b, kvh)
		return
	}
	sc.qt, sc.dot, sc.dqt = grow(sc.qt, backTileQ*d), grow(sc.dot, backTileQ*dv), grow(sc.dqt, backTileQ*d)
	sc.s, sc.dp, sc.raw = grow(sc.s, backTileQ*backLd), grow(sc.dp, backTileQ*backLd), grow(sc.raw, backTileQ*backLd)
	sc.delta, sc.orow = grow(sc.delta, backTileQ), grow(sc.orow, dv)
	sc.qtT, sc.dotT = grow(sc.qtT, backTileQ*d), grow(sc.dotT, backTileQ*dv)
	// dK and dV are summed transposed, dKᵀ += Qᵀ·dS and dVᵀ += dOᵀ·P,
	// so that the products read P and dS in place rather than packing
	// their transposes for every tile (Qᵀ and dOᵀ are made once per
	// query tile); the rows padded so that a kernel's rows of C do not
	// share cache sets.
	nkv := bw.kvRows(b)
	ld := nkv + backPad
	sc.dkT, sc.dvT = grow(sc.dkT, d*ld), grow(sc.dvT, dv*ld)
	clear(sc.dkT)
	clear(sc.dvT)
	dkTT := blas32.General{Rows: d, Cols: nkv, Stride: ld, Data: sc.dkT}
	dvTT := blas32.General{Rows: dv, Cols: nkv, Stride: ld, Data: sc.dvT}
	if bw.k.t.Half() {
		sc.kt = grow(sc.kt, backTileK*d)
	}
	if bw.v.t.Half() {
		sc.vt = grow(sc.vt, backTileK*dv)
	}
	sc.kvPacked = sc.kvPacked[:0]
	if p.Blocks == nil && onMicroKernel() {
		nt := min((nkv+backTileK-1)/backTileK, backPackBytes/(4*backTileK*(d+dv)))
		for len(sc.pk) < nt {
			sc.pk, sc.pv = append(sc.pk, sgemm.PackedB{}), append(sc.pv, sgemm.PackedB{})
		}
		sc.kvPacked = append(sc.kvPacked, make([]bool, nt)...)
	}
	g, nq := p.Group(), p.QRows(b)
	var sinkGrad float64
	for h := kvh * g; h < (kvh+1)*g; h++ {
		sinkGrad = 0
		for i0 := 0; i0 < nq; i0 += backTileQ {
			r := min(backTileQ, nq-i0)
			qt := blas32.General{Rows: r, Cols: d, Stride: d, Data: sc.qt[:r*d]}
			dot := blas32.General{Rows: r, Cols: dv, Stride: dv, Data: sc.dot[:r*dv]}
			dqt := blas32.General{Rows: r, Cols: d, Stride: d, Data: sc.dqt[:r*d]}
			clear(dqt.Data)
			for ii := range r {
				bw.q.widenAt(qt.Data[ii*d:(ii+1)*d], bw.qr.Offset(b, h, i0+ii))
				bw.do.widenAt(dot.Data[ii*dv:(ii+1)*dv], bw.or.Offset(b, h, i0+ii))
				// δ = dO · O, the row's sum of P∘dP.
				bw.o.widenAt(sc.orow[:dv], bw.or.Offset(b, h, i0+ii))
				var s float64
				for c, x := range dot.Data[ii*dv : (ii+1)*dv] {
					s += float64(x) * float64(sc.orow[c])
				}
				sc.delta[ii] = float32(s)
				if p.Sinks != nil {
					if l := float64(bw.lse[p.LSEOffset(b, h, i0+ii)]); !math.IsInf(l, -1) {
						sinkGrad -= math.Exp(float64(p.Sinks[h])-l) * s
					}
				}
			}
			qtT := blas32.General{Rows: d, Cols: r, Stride: r, Data: sc.qtT[:r*d]}
			dotT := blas32.General{Rows: dv, Cols: r, Stride: r, Data: sc.dotT[:r*dv]}
			transposeInto(qtT.Data, qt.Data, r, d)
			transposeInto(dotT.Data, dot.Data, r, dv)
			keyLo, _ := p.KeyRange(b, i0)
			_, keyHi := p.KeyRange(b, i0+r-1)
			bw.keyTiles(b, h, i0, r, keyLo, keyHi, func(j0, n int) {
				bw.tile(sc, qt, dot, dqt, qtT, dotT, dkTT, dvTT, b, h, kvh, i0, r, j0, n)
			})
			for ii := range r {
				putRow(bw.dq, bw.qr.Offset(b, h, i0+ii), dqt.Data[ii*d:(ii+1)*d])
			}
		}
		if bw.sinkParts != nil {
			bw.sinkParts[(b*p.KVHeads+kvh)*g+h-kvh*g] = sinkGrad
		}
	}
	untranspose(dkT, dkTT)
	untranspose(dvT, dvTT)
	bw.flush(bw.dk, bw.kr, dkT, b, kvh)
	bw.flush(bw.dv, bw.vr, dvT, b, kvh)
}

// transposeInto sets t (c×r, row stride r) to the transpose of m (r×c,
// row stride c), eight rows of m at a time.
func transposeInto(t, m []float32, r, c int) {
	for i0 := 0; i0 < r; i0 += 8 {
		ie := min(i0+8, r)
		for j := range c {
			for i := i0; i < ie; i++ {
				t[j*r+i] = m[i*c+j]
			}
		}
	}
}

// untranspose sets dst's rows to the columns of t (dst.Rows = t.Cols).
func untranspose(dst, t blas32.General) {
	for j := range dst.Rows {
		row := dst.Data[j*dst.Stride:][:dst.Cols]
		for c := range row {
			row[c] = t.Data[c*t.Stride+j]
		}
	}
}

// keyTiles calls tile for the key tiles of keys lo … hi−1 that query
// rows i0 … i0+r−1 of head h in batch b may see: the grid's tiles of
// backTileK keys (the first and last cut to lo and hi), or with a block
// mask the runs of key blocks some row's block keeps, at most backTileK
// keys each (a block that is off for every row is neither read nor
// computed, as in Fused).
func (bw *backward) keyTiles(b, h, i0, r, lo, hi int, tile func(j0, n int)) {
	bm := bw.p.Blocks
	if bm == nil {
		// On the grid of backTileK keys from key 0, so that every tile
		// but a window's first is a whole packed tile or its first keys
		// (keyPanels).
		for j0 := lo; j0 < hi; {
			end := min(hi, (j0/backTileK+1)*backTileK)
			tile(j0, end-j0)
			j0 = end
		}
		return
	}
	start := -1 // the current run's first key
	for j := lo; j < hi; {
		end := min(hi, (j/bm.Size+1)*bm.Size) // the end of key j's block
		on := bm.AnyOn(b, h, h+1, i0, i0+r, j, end)
		if on && start < 0 {
			start = j
		}
		if start >= 0 && (!on || end-start >= backTileK) {
			stop := j
			if on {
				stop = end
			}
			for j0 := start; j0 < stop; j0 += backTileK {
				tile(j0, min(backTileK, stop-j0))
			}
			start = -1
		}
		j = end
	}
	if start >= 0 {
		for j0 := start; j0 < hi; j0 += backTileK {
			tile(j0, min(backTileK, hi-j0))
		}
	}
}

// tile is one key tile (n keys from j0) of a query tile (r rows of head
// h from i0): the probabilities recomputed, then dV, dP, dS, dQ and dK.
func (bw *backward) tile(sc *backScratch, qt, dot, dqt, qtT, dotT, dkT, dvT blas32.General, b, h, kvh, i0, r, j0, n int) {
	p := bw.p
	d, dv := p.D, p.Dv
	pk, pv, packed := bw.keyPanels(sc, b, kvh, j0, n)
	// K's and V's rows in place when float32, else widened (matOf).
	kt := matOf(bw.k, bw.kr.Offset(b, kvh, j0), n, d, bw.kr.Row, sc.kt)
	vt := matOf(bw.v, bw.vr.Offset(b, kvh, j0), n, dv, bw.vr.Row, sc.vt)
	ls := n + backPad
	s := blas32.General{Rows: r, Cols: n, Stride: ls, Data: sc.s[:r*ls]}
	dp := blas32.General{Rows: r, Cols: n, Stride: ls, Data: sc.dp[:r*ls]}
	raw := sc.raw[:r*ls]
	// S = scale·Q·Kᵀ, then P = exp(softcap(S) + bias − ALiBi − LSE) on
	// the keys each row sees, 0 elsewhere.
	if packed {
		sgemm.Implementation{}.SgemmBandPacked(r, n, d, p.Scale, qt.Data, qt.Stride, &pk, 0, s.Data, s.Stride, nil)
	} else {
		gemm(blas.Trans, p.Scale, qt, kt, 0, s)
	}
	if p.Softcap > 0 {
		copy(raw, s.Data) // tanh′ needs the scores before the cap
	}
	slope := 0.0
	if p.ALiBi != nil {
		slope = float64(p.ALiBi[h])
	}
	negInf := float32(math.Inf(-1))
	for ii := range r {
		i := i0 + ii
		lo, hi := p.KeyRange(b, i)
		l := bw.lse[p.LSEOffset(b, h, i)]
		t := p.Align(b) + i
		row := s.Data[ii*ls:][:n]
		if math.IsInf(float64(l), -1) {
			clear(row) // the row sees no key (and has no sink)
			continue
		}
		// The keys the row sees are [a, e) of the tile.
		a, e := min(max(lo-j0, 0), n), min(max(hi-j0, 0), n)
		e = max(e, a)
		for jj := range row[:a] {
			row[jj] = negInf
		}
		for jj := range row[e:] {
			row[e+jj] = negInf
		}
		if c := p.Softcap; c > 0 || slope != 0 {
			for jj := a; jj < e; jj++ {
				if c > 0 {
					row[jj] = c * float32(math.Tanh(float64(row[jj]/c)))
				}
				row[jj] -= float32(slope * math.Abs(float64(t-j0-jj)))
			}
		}
		if bw.bias != nil {
			bw.bias.addBias(row[a:e], b, h, i, j0+a)
		}
		if bw.keep != nil {
			bw.keep.applyKeep(row[a:e], b, h, i, j0+a)
		}
		if bm := p.Blocks; bm != nil {
			applyBlocks(row[a:e], bm, b, h, i, j0+a)
		}
		expShift(row, l) // P = e^(s − LSE), 0 for −Inf
	}
	// dVᵀ += dOᵀ·P (the V rows of this tile, Dv×n).
	blasImpl.Sgemm(blas.NoTrans, blas.NoTrans, dv, n, r, 1, dotT.Data, dotT.Stride, s.Data, s.Stride, 1, dvT.Data[j0:], dvT.Stride)
	// dP = dO·Vᵀ, then dS = P∘(dP − δ) (the bias's gradient), through the
	// softcap's tanh.
	if packed {
		sgemm.Implementation{}.SgemmBandPacked(r, n, dv, 1, dot.Data, dot.Stride, &pv, 0, dp.Data, dp.Stride, nil)
	} else {
		gemm(blas.Trans, 1, dot, vt, 0, dp)
	}
	for ii := range r {
		pr, dr := s.Data[ii*ls:][:n], dp.Data[ii*ls:][:n]
		dsRow(pr, dr, sc.delta[ii])
		if bw.dBias != nil {
			bw.addDBias(sc, dr, b, h, i0+ii, j0)
		}
		if c := p.Softcap; c > 0 {
			for jj, x := range raw[ii*ls:][:n] {
				th := float32(math.Tanh(float64(x / c)))
				dr[jj] *= 1 - th*th
			}
		}
	}
	// dQ += scale·dS·K and dKᵀ += scale·Qᵀ·dS.
	gemm(blas.NoTrans, p.Scale, dp, kt, 1, dqt)
	blasImpl.Sgemm(blas.NoTrans, blas.NoTrans, d, n, r, p.Scale, qtT.Data, qtT.Stride, dp.Data, dp.Stride, 1, dkT.Data[j0:], dkT.Stride)
}

// keyPanels is Kᵀ and Vᵀ of keys j0 … j0+n−1 of KV head kvh of batch b
// packed for the micro-kernel, and true, where the item packs its key
// tiles (no block mask, the kernel multiplies) and the keys start one of
// the tiles it keeps (backPackBytes): the tile packed at its first use,
// or its first n keys (Prefix). Packing once an item, not once a query
// tile of each head, gives the same bits. Else false: the products pack
// as they go. It widens a half tile into sc.kt and sc.vt, which tile
// widens into next.
func (bw *backward) keyPanels(sc *backScratch, b, kvh, j0, n int) (pk, pv sgemm.PackedB, ok bool) {
	t := j0 / backTileK
	if j0%backTileK != 0 || t >= len(sc.kvPacked) {
		return pk, pv, false
	}
	if !sc.kvPacked[t] {
		d, dv := bw.p.D, bw.p.Dv
		full := min(backTileK, bw.kvRows(b)-j0)
		if !packK(&sc.pk[t], matOf(bw.k, bw.kr.Offset(b, kvh, j0), full, d, bw.kr.Row, sc.kt)) ||
			!packK(&sc.pv[t], matOf(bw.v, bw.vr.Offset(b, kvh, j0), full, dv, bw.vr.Row, sc.vt)) {
			return pk, pv, false
		}
		sc.kvPacked[t] = true
	}
	return sc.pk[t].Prefix(n), sc.pv[t].Prefix(n), true
}

// dsRow sets dp[j] = p[j]·(dp[j] − delta) for j < len(p): a row of
// dS = P∘(dP − δ).
func dsRow(p, dp []float32, delta float32) {
	n := dsRowVec(p, dp, delta)
	dp = dp[n:len(p)]
	for jj, pj := range p[n:] {
		dp[jj] = pj * (dp[jj] - delta)
	}
}

// addDBias adds row i of head h's dS over keys j0 … into dBias (the
// worker's share when items share it), summing over the dimensions it
// broadcasts.
func (bw *backward) addDBias(sc *backScratch, ds []float32, b, h, i, j0 int) {
	db := bw.dBias
	if sc.dBias != nil {
		db = sc.dBias
	}
	s := bw.dbs
	base := b*s[0] + h*s[1] + i*s[2] + j0*s[3]
	if s[3] == 0 {
		var sum float32
		for _, x := range ds {
			sum += x
		}
		db[base] += sum
		return
	}
	for jj, x := range ds {
		db[base+jj] += x
	}
}

// CheckBackward checks a Backward call (backend.Backwarder): p.Validate,
// all the CPU's Backward needs.
func (b *Backend) CheckBackward(p backend.BackwardParams, q, k, v, o, lse, dO, dQ, dK, dV backend.Buffer, dSinks []float32) error {
	if err := p.Validate(q, k, v, o, lse, dO, dQ, dK, dV, dSinks); err != nil {
		return backend.Wrapf(err, "cpu: backward")
	}
	return nil
}

var _ backend.Backwarder = (*Backend)(nil)
