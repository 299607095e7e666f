package cpu

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// indexedHead is head under an index list (backend.Indices): for each
// query row of KV head kvh of batch b, the keys its list names (those
// its position also lets it see: key lengths, causal masking, the
// window) are gathered once, K's and V's rows widened into the scratch,
// for the G query heads that share the list, and with Q and dO of those
// heads as G rows,
//
//	P = exp(softcap(scale·Q·Kᵀ) − LSE),  dV[keys] += Pᵀ·dO,  dP = dO·Vᵀ,
//	dS = P∘(dP − δ)·softcap′,  dQ = scale·dS·K,  dK[keys] += scale·dSᵀ·Q
//
// the sums into dK and dV going to the named rows only, a row at a time
// in row order (an item owns its KV head's rows: the same bits whatever
// the threads). An index list takes no bias, keep-mask, ALiBi or block
// mask (BackwardParams.Validate).
func (bw *backward) indexedHead(sc *backScratch, dkT, dvT blas32.General, b, kvh int) {
	p := bw.p
	d, dv, k, g := p.D, p.Dv, p.Indices.PerRow, p.Group()
	sc.qt, sc.dot, sc.dqt = grow(sc.qt, g*d), grow(sc.dot, g*dv), grow(sc.dqt, g*d)
	sc.kt, sc.vt = grow(sc.kt, k*d), grow(sc.vt, k*dv)
	sc.gk, sc.gv = grow(sc.gk, k*d), grow(sc.gv, k*dv)
	sc.s, sc.dp, sc.raw = grow(sc.s, g*k), grow(sc.dp, g*k), grow(sc.raw, g*k)
	sc.delta, sc.orow = grow(sc.delta, g), grow(sc.orow, dv)
	keys := make([]int, 0, k)
	lse := make([]float32, g)
	for i := range p.QRows(b) {
		qt := blas32.General{Rows: g, Cols: d, Stride: d, Data: sc.qt[:g*d]}
		dot := blas32.General{Rows: g, Cols: dv, Stride: dv, Data: sc.dot[:g*dv]}
		dqt := blas32.General{Rows: g, Cols: d, Stride: d, Data: sc.dqt[:g*d]}
		clear(dqt.Data)
		for hg := range g {
			h := kvh*g + hg
			bw.q.widenAt(qt.Data[hg*d:(hg+1)*d], bw.qr.Offset(b, h, i))
			bw.do.widenAt(dot.Data[hg*dv:(hg+1)*dv], bw.or.Offset(b, h, i))
			bw.o.widenAt(sc.orow[:dv], bw.or.Offset(b, h, i))
			var s float64 // δ = dO · O
			for c, x := range dot.Data[hg*dv : (hg+1)*dv] {
				s += float64(x) * float64(sc.orow[c])
			}
			sc.delta[hg] = float32(s)
			lse[hg] = bw.lse[p.LSEOffset(b, h, i)]
			if l := float64(lse[hg]); p.Sinks != nil && !math.IsInf(l, -1) {
				bw.sinkParts[(b*p.KVHeads+kvh)*g+hg] -= math.Exp(float64(p.Sinks[h])-l) * s
			}
		}
		lo, hi := p.KeyRange(b, i)
		keys = keys[:0]
		for _, j := range p.Indices.Idx[p.IndexOffset(b, kvh, i):][:k] {
			if j >= 0 && int(j) >= lo && int(j) < hi {
				keys = append(keys, int(j))
			}
		}
		if n := len(keys); n > 0 {
			bw.indexedRow(sc, qt, dot, dqt, dkT, dvT, b, kvh, keys, lse)
		}
		for hg := range g {
			putRow(bw.dq, bw.qr.Offset(b, kvh*g+hg, i), dqt.Data[hg*d:(hg+1)*d])
		}
	}
}

// indexedRow is one query row's gradients over its keys, for the G
// query heads (the rows of qt, dot and dqt) that share its list.
func (bw *backward) indexedRow(sc *backScratch, qt, dot, dqt, dkT, dvT blas32.General, b, kvh int, keys []int, lse []float32) {
	p := bw.p
	d, dv, g, n := p.D, p.Dv, qt.Rows, len(keys)
	kt := blas32.General{Rows: n, Cols: d, Stride: d, Data: sc.kt[:n*d]}
	vt := blas32.General{Rows: n, Cols: dv, Stride: dv, Data: sc.vt[:n*dv]}
	for x, j := range keys {
		bw.k.widenAt(kt.Data[x*d:(x+1)*d], bw.kr.Offset(b, kvh, j))
		bw.v.widenAt(vt.Data[x*dv:(x+1)*dv], bw.vr.Offset(b, kvh, j))
	}
	s := blas32.General{Rows: g, Cols: n, Stride: n, Data: sc.s[:g*n]}
	dp := blas32.General{Rows: g, Cols: n, Stride: n, Data: sc.dp[:g*n]}
	raw := sc.raw[:g*n]
	gemm(blas.Trans, p.Scale, qt, kt, 0, s)
	c := p.Softcap
	if c > 0 {
		copy(raw, s.Data) // tanh′ needs the scores before the cap
	}
	for hg := range g {
		row := s.Data[hg*n : (hg+1)*n]
		if math.IsInf(float64(lse[hg]), -1) {
			clear(row) // the row sees no key and has no sink
			continue
		}
		if c > 0 {
			for x, v := range row {
				row[x] = c * float32(math.Tanh(float64(v/c)))
			}
		}
		expShift(row, lse[hg]) // P = e^(s − LSE)
	}
	// dV[keys] += Pᵀ·dO, summed over the heads before it is added.
	gv := sc.gv[:n*dv]
	blasImpl.Sgemm(blas.Trans, blas.NoTrans, n, dv, g, 1, s.Data, n, dot.Data, dv, 0, gv, dv)
	for x, j := range keys {
		axpy(dvT.Data[j*dvT.Stride:j*dvT.Stride+dv], 1, gv[x*dv:(x+1)*dv])
	}
	// dP = dO·Vᵀ, dS = P∘(dP − δ) through the softcap's tanh.
	gemm(blas.Trans, 1, dot, vt, 0, dp)
	for hg := range g {
		dr := dp.Data[hg*n : (hg+1)*n]
		dsRow(s.Data[hg*n:(hg+1)*n], dr, sc.delta[hg])
		if c > 0 {
			for x, v := range raw[hg*n : (hg+1)*n] {
				th := float32(math.Tanh(float64(v / c)))
				dr[x] *= 1 - th*th
			}
		}
	}
	// dQ = scale·dS·K, dK[keys] += scale·dSᵀ·Q.
	gemm(blas.NoTrans, p.Scale, dp, kt, 1, dqt)
	gk := sc.gk[:n*d]
	blasImpl.Sgemm(blas.Trans, blas.NoTrans, n, d, g, p.Scale, dp.Data, n, qt.Data, d, 0, gk, d)
	for x, j := range keys {
		axpy(dkT.Data[j*dkT.Stride:j*dkT.Stride+d], 1, gk[x*d:(x+1)*d])
	}
}
