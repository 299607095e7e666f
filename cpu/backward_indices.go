package cpu

import (
	"math"
	"unsafe"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/attn-go/attn/backend"
)

// The index-list backward's tiles: keys a block (a power of two), and
// the bytes of a chunk's query rows (Q, dO and dQ of its G heads) held
// while its keys are walked, so that they stay in the L2 beside a
// block's K, V, dK and dV rows.
const (
	idxBlockShift = 8
	idxBlockKeys  = 1 << idxBlockShift
	idxRowBytes   = 512 << 10
	idxMaxRows    = 4096
)

// idxScratch is a worker's scratch for the index-list backward.
type idxScratch struct {
	q, do, dq   []float32 // the chunk's rows: [row][head, padded to 4][D or Dv]
	lse, delta  []float32 // [row][head]
	start, fill []int32   // each block's first pair, and the next to fill
	prow, pkey  []int32   // the pairs (row, key), by block, then row
	kb, vb      []float32 // a half K's and V's block, widened
	touched     float32   // keeps blockOf's reads
	kt, vt      []float32 // a row's keys' K and V rows, gathered
	gk, gv      []float32 // their dK and dV rows, gathered
	s, dp, raw  []float32 // [head][key]: P, then dP and dS
	pt, dst     []float32 // [key][head]: P and scale·dS
	offs        []int     // the keys' rows in the block's K, V, dK and dV
}

// indexedHead is head under an index list (backend.Indices): the query
// rows of KV head kvh of batch b, in chunks whose Q, dO and dQ (of the G
// query heads that share a list) stay in the cache, walk their keys in
// key order, a block of idxBlockKeys at a time: the pairs (row, key) of
// the rows' lists whose position lets the row see the key (key lengths,
// causal masking, the window) are sorted by block (a counting sort, row
// order kept), and each block's K and V rows are read from memory once
// for all of them, its dK and dV rows summed in place. For each row of a
// block (indexedRow), with Q and dO of its G heads as rows,
//
//	P = exp(softcap(scale·Q·Kᵀ) − LSE),  dV[keys] += Pᵀ·dO,  dP = dO·Vᵀ,
//	dS = P∘(dP − δ)·softcap′,  dQ += scale·dS·K,  dK[keys] += scale·dSᵀ·Q
//
// A key's dK and dV rows take their rows' terms in row order, and a
// row's dQ its keys' in block order, then list order: an item owns its
// KV head's rows and its query heads', so the bits do not depend on the
// threads. dK's and dV's rows start at 0 here (target leaves them), and
// a key that no row sees keeps 0. An index list takes no bias,
// keep-mask, ALiBi or block mask (BackwardParams.Validate).
func (bw *backward) indexedHead(sc *backScratch, dkT, dvT blas32.General, b, kvh int) {
	p := bw.p
	if sc.ix == nil {
		sc.ix = new(idxScratch)
	}
	x := sc.ix
	d, dv, g := p.D, p.Dv, p.Group()
	g4 := round4(g)
	rows := min(idxMaxRows, max(1, idxRowBytes/(4*g4*(2*d+dv))))
	nq := p.QRows(b)
	if nq == 0 {
		clearRows(dkT.Data, dkT.Rows, d, dkT.Stride)
		clearRows(dvT.Data, dvT.Rows, dv, dvT.Stride)
		return
	}
	rows = min(rows, nq)
	x.q, x.do, x.dq = grow(x.q, rows*g4*d), grow(x.do, rows*g4*dv), grow(x.dq, rows*g4*d)
	x.lse, x.delta = grow(x.lse, rows*g), grow(x.delta, rows*g)
	sc.orow = grow(sc.orow, dv)
	for i0 := 0; i0 < nq; i0 += rows {
		bw.indexedChunk(sc, dkT, dvT, b, kvh, i0, min(rows, nq-i0))
	}
}

// indexedChunk is indexedHead's query rows i0 … i0+r−1.
func (bw *backward) indexedChunk(sc *backScratch, dkT, dvT blas32.General, b, kvh, i0, r int) {
	p, x := bw.p, sc.ix
	d, dv, g := p.D, p.Dv, p.Group()
	g4 := round4(g)
	q, do, dq := x.q[:r*g4*d], x.do[:r*g4*dv], x.dq[:r*g4*d]
	clear(q)
	clear(do)
	clear(dq)
	for ii := range r {
		i := i0 + ii
		for hg := range g {
			h := kvh*g + hg
			dor := do[(ii*g4+hg)*dv:][:dv]
			bw.q.widenAt(q[(ii*g4+hg)*d:][:d], bw.qr.Offset(b, h, i))
			bw.do.widenAt(dor, bw.or.Offset(b, h, i))
			bw.o.widenAt(sc.orow[:dv], bw.or.Offset(b, h, i))
			var s float64 // δ = dO · O
			for c, v := range dor {
				s += float64(v) * float64(sc.orow[c])
			}
			x.delta[ii*g+hg] = float32(s)
			l := bw.lse[p.LSEOffset(b, h, i)]
			x.lse[ii*g+hg] = l
			if p.Sinks != nil && !math.IsInf(float64(l), -1) {
				bw.sinkParts[(b*p.KVHeads+kvh)*g+hg] -= math.Exp(float64(p.Sinks[h])-float64(l)) * s
			}
		}
	}
	// The pairs (row, key), sorted by block: a count a block, its
	// starts, then the pairs in row order. A row's keys in one block
	// come in runs when its list is sorted, counted and placed in
	// registers.
	nb := (bw.kvRows(b) + idxBlockKeys - 1) >> idxBlockShift
	// At least one block's counts: a sequence of no keys counts its
	// (empty) runs in block 0's.
	x.start, x.fill = grow(x.start, max(nb, 1)+1), grow(x.fill, max(nb, 1)+1)
	clear(x.start)
	k := p.Indices.PerRow
	for ii := range r {
		lo, hi := p.KeyRange(b, i0+ii)
		cur, run := int32(0), int32(0)
		for _, j := range p.Indices.Idx[p.IndexOffset(b, kvh, i0+ii):][:k] {
			if j < 0 || int(j) < lo || int(j) >= hi {
				continue
			}
			if c := j >> idxBlockShift; c != cur {
				x.start[cur+1] += run
				cur, run = c, 0
			}
			run++
		}
		x.start[cur+1] += run
	}
	for c := range nb {
		x.start[c+1] += x.start[c]
	}
	copy(x.fill, x.start)
	n := int(x.start[nb])
	x.prow, x.pkey = grow(x.prow, n), grow(x.pkey, n)
	for ii := range r {
		lo, hi := p.KeyRange(b, i0+ii)
		cur, t := int32(0), x.fill[0]
		for _, j := range p.Indices.Idx[p.IndexOffset(b, kvh, i0+ii):][:k] {
			if j < 0 || int(j) < lo || int(j) >= hi {
				continue
			}
			if c := j >> idxBlockShift; c != cur {
				x.fill[cur] = t
				cur, t = c, x.fill[c]
			}
			x.prow[t], x.pkey[t] = int32(ii), j
			t++
		}
		x.fill[cur] = t
	}
	for c := range nb {
		s0, s1 := int(x.start[c]), int(x.start[c+1])
		j0 := c << idxBlockShift
		nk := min(idxBlockKeys, bw.kvRows(b)-j0)
		// The block's dK and dV rows start at 0 (target) as the first
		// chunk takes it, and each chunk sums into them in place.
		dkb, dvb := dkT.Data[j0*dkT.Stride:], dvT.Data[j0*dvT.Stride:]
		if i0 == 0 {
			clearRows(dkb, nk, d, dkT.Stride)
			clearRows(dvb, nk, dv, dvT.Stride)
		}
		if s0 == s1 {
			continue
		}
		if bw.k.wide() {
			x.kb = grow(x.kb, idxBlockKeys*d)
		}
		if bw.v.wide() {
			x.vb = grow(x.vb, idxBlockKeys*dv)
		}
		kb := x.blockOf(bw.k, bw.kr, b, kvh, j0, nk, d, x.kb)
		vb := x.blockOf(bw.v, bw.vr, b, kvh, j0, nk, dv, x.vb)
		for t := s0; t < s1; {
			e := t + 1
			for e < s1 && x.prow[e] == x.prow[t] {
				e++
			}
			bw.indexedRow(x, kb, vb, dkb, dvb, dkT.Stride, dvT.Stride, int(x.prow[t]), j0, x.pkey[t:e])
			t = e
		}
	}
	for ii := range r {
		for hg := range g {
			row := dq[(ii*g4+hg)*d:][:d]
			scale(row, p.Scale)
			putRow(bw.dq, bw.qr.Offset(b, kvh*g+hg, i0+ii), row)
		}
	}
}

// indexedRow is the gradients of row ii of the chunk over its keys in
// the block from key j0 (K's and V's rows kb and vb, dK's and dV's from
// dkb and dvb at strides dks and dvs), for the G query heads that share
// its list. The kernels read the keys' rows where they lie (hasBackIdx),
// else copies gathered, four keys at a time.
func (bw *backward) indexedRow(x *idxScratch, kb, vb blas32.General, dkb, dvb []float32, dks, dvs, ii, j0 int, keys []int32) {
	p := bw.p
	d, dv, g := p.D, p.Dv, p.Group()
	g4, n := round4(g), len(keys)
	direct := hasBackIdx() && d%16 == 0 && dv%16 == 0
	// The keys are taken four at a time (the kernels' rows), the spare
	// ones the first key again, with weight 0 (adding +0 leaves a sum
	// as it was, and a sum from +0 is never −0); the scores' rows are
	// sixteen wide (the exponential's vectors).
	n4, n16 := round4(n), (n+15)&^15
	x.s, x.dp = grow(x.s, g4*n16), grow(x.dp, g4*n16)
	x.pt, x.dst = grow(x.pt, n4*g), grow(x.dst, n4*g)
	x.offs = grow(x.offs, 4*n4)
	ko, vo, dko, dvo := x.offs[:n4], x.offs[n4:2*n4], x.offs[2*n4:3*n4], x.offs[3*n4:]
	// Each key's rows in bounds, checked once for every kernel.
	nk := kb.Rows
	_, _ = kb.Data[(nk-1)*kb.Stride+d-1], vb.Data[(nk-1)*vb.Stride+dv-1]
	_, _ = dkb[(nk-1)*dks+d-1], dvb[(nk-1)*dvs+dv-1]
	for t, j := range keys {
		jj := int(j) - j0
		if uint(jj) >= uint(nk) {
			panic("cpu: an index-list key outside its block")
		}
		ko[t], vo[t], dko[t], dvo[t] = 4*jj*kb.Stride, 4*jj*vb.Stride, 4*jj*dks, 4*jj*dvs // bytes
	}
	for t := n; t < n4; t++ {
		ko[t], vo[t], dko[t], dvo[t] = ko[0], vo[0], dko[0], dvo[0]
	}
	q, do, dq := x.q[ii*g4*d:][:g4*d], x.do[ii*g4*dv:][:g4*dv], x.dq[ii*g4*d:][:g4*d]
	s, dp := x.s[:g4*n16], x.dp[:g4*n16]
	// S − LSE and dP − δ, a quad of heads at a time (a padding head's
	// 0), then P = e^(S − LSE) and dS = P∘(dP − δ) over all heads at
	// once. With a softcap the cap comes between: LSE is taken off after.
	c := p.Softcap
	var kt, vt []float32
	if !direct {
		x.kt, x.vt = grow(x.kt, n4*d), grow(x.vt, n4*dv)
		kt, vt = x.kt[:n4*d], x.vt[:n4*dv]
		gatherRows(kt, kb.Data, ko, d)
		gatherRows(vt, vb.Data, vo, dv)
	}
	for h0 := 0; h0 < g4; h0 += 4 {
		var lse, delta [4]float32
		for r := range min(4, g-h0) {
			delta[r] = x.delta[ii*g+h0+r]
			if c == 0 {
				lse[r] = x.lse[ii*g+h0+r]
			}
		}
		if direct {
			dotsIdx(q[h0*d:], d, kb.Data, ko, n4, d, s[h0*n16:], n16, p.Scale, lse)
			dotsIdx(do[h0*dv:], dv, vb.Data, vo, n4, dv, dp[h0*n16:], n16, 1, delta)
			continue
		}
		dots4(q[h0*d:], d, kt, d, n4, d, s[h0*n16:], n16, p.Scale)
		dots4(do[h0*dv:], dv, vt, dv, n4, dv, dp[h0*n16:], n16, 1)
		for r := range 4 {
			for t := range n4 {
				s[(h0+r)*n16+t] -= lse[r]
				dp[(h0+r)*n16+t] -= delta[r]
			}
		}
	}
	if c > 0 {
		x.raw = grow(x.raw, g4*n16)
		copy(x.raw, s) // tanh′ needs the scores before the cap
		for hg := range g {
			l := x.lse[ii*g+hg]
			for t, v := range s[hg*n16:][:n] {
				s[hg*n16+t] = c*float32(math.Tanh(float64(v/c))) - l
			}
		}
	}
	expShift(s, 0)
	for hg := range g4 {
		row, dr := s[hg*n16:][:n16], dp[hg*n16:][:n16]
		if hg >= g || math.IsInf(float64(x.lse[ii*g+hg]), -1) {
			clear(row) // a padding head, or a row that sees no key and has no sink
		} else {
			clear(row[n:])
		}
		for t := n4; t < n16; t++ {
			dr[t] = 0 // never written
		}
	}
	dsRow(s, dp, 0)
	if c > 0 {
		for hg := range g {
			for t, v := range x.raw[hg*n16:][:n] {
				th := float32(math.Tanh(float64(v / c)))
				dp[hg*n16+t] *= 1 - th*th
			}
		}
	}
	// dQ += dS·K (scaled once the chunk's keys are done).
	for h0 := 0; h0 < g4; h0 += 4 {
		if direct {
			axpysIdx(dp[h0*n16:], n16, kb.Data, ko, n4, d, dq[h0*d:], d)
		} else {
			axpys4(dp[h0*n16:], n16, kt, d, n4, d, dq[h0*d:], d)
		}
	}
	// dV[keys] += Pᵀ·dO and dK[keys] += scale·dSᵀ·Q.
	pt, dst := x.pt[:n4*g], x.dst[:n4*g]
	for hg := range g {
		pr, dr := s[hg*n16:][:n4], dp[hg*n16:][:n4]
		for t := range n4 {
			pt[t*g+hg] = pr[t]
			dst[t*g+hg] = p.Scale * dr[t]
		}
	}
	if direct {
		accIdx(pt, g, do, dv, g, dv, dvb, dvo, n4)
		accIdx(dst, g, q, d, g, d, dkb, dko, n4)
		return
	}
	x.gk, x.gv = grow(x.gk, n4*d), grow(x.gv, n4*dv)
	gk, gv := x.gk[:n4*d], x.gv[:n4*dv]
	gatherRows(gk, dkb, dko, d)
	gatherRows(gv, dvb, dvo, dv)
	for t0 := 0; t0 < n4; t0 += 4 {
		axpys4(pt[t0*g:], g, do, dv, g, dv, gv[t0*dv:], dv)
		axpys4(dst[t0*g:], g, q, d, g, d, gk[t0*d:], d)
	}
	for t := range keys {
		copy(dkb[dko[t]/4:][:d], gk[t*d:(t+1)*d])
		copy(dvb[dvo[t]/4:][:dv], gv[t*dv:(t+1)*dv])
	}
}

// gatherRows copies rows of src from byte offsets offs (cols wide, in
// src's bounds) into dst's first len(offs) rows: by the vector gather
// where the CPU has it, else a row at a time.
func gatherRows(dst, src []float32, offs []int, cols int) {
	if len(offs) == 0 {
		return
	}
	_ = dst[len(offs)*cols-1]
	if gatherRowsVec(unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), offs, 4*cols) {
		return
	}
	for t, o := range offs {
		copy(dst[t*cols:(t+1)*cols], src[o/4:o/4+cols])
	}
}

// dots4 is dotRows4 on float32 rows (q's four, n of k), in Go for what
// the kernel does not take.
func dots4(q []float32, ldq int, k []float32, ldk, n, d int, s []float32, lds int, alpha float32) {
	m := 0
	if d%16 == 0 {
		m = dotRows4(q, ldq, rawRows{store: store{t: backend.Float32, f32: k}, stride: ldk}, n, d, s, lds, alpha)
	}
	if m < n {
		dotRowsGo(q, ldq, 4, k[m*ldk:], ldk, n-m, d, s[m:], lds, alpha)
	}
}

// axpys4 is axpyRows4 on float32 rows (p's four, n of v), in Go where
// the kernel does not run.
func axpys4(p []float32, ldp int, v []float32, ldv, n, dv int, acc []float32, ldacc int) {
	if dv%16 == 0 && axpyRows4(p, ldp, rawRows{store: store{t: backend.Float32, f32: v}, stride: ldv}, n, dv, acc, ldacc) {
		return
	}
	axpyRowsGo(p, ldp, 4, v, ldv, n, dv, acc, ldacc)
}

// blockOf is the rows j0 … j0+n−1 of KV head kvh of batch b of K or V
// (cols wide): in place when float32, each row's cache lines read once
// in order first (so that the rows' reads in the lists' order find them
// in the cache, not memory), else widened into scratch.
func (x *idxScratch) blockOf(s store, rows backend.Rows, b, kvh, j0, n, cols int, scratch []float32) blas32.General {
	m := matOf(s, rows.Offset(b, kvh, j0), n, cols, rows.Row, scratch)
	if !s.wide() {
		var sum float32
		for j := range n {
			r := m.Data[j*m.Stride:][:cols]
			for c := 0; c < cols; c += 16 {
				sum += r[c]
			}
		}
		x.touched = sum
	}
	return m
}

// clearRows zeroes n rows of cols values at stride from x[0].
func clearRows(x []float32, n, cols, stride int) {
	if n == 0 {
		return
	}
	if stride == cols {
		clear(x[:n*cols])
		return
	}
	for j := range n {
		clear(x[j*stride:][:cols])
	}
}
