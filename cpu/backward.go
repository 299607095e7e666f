package cpu

import (
	"context"
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/attn-go/attn/backend"
)

// Backward tiles: query rows and keys of one step.
const (
	backTileQ = 256
	backTileK = 128
)

// Backward computes attention's gradients (backend.Backwarder) by
// FlashAttention-2's method: for each KV head of each batch (a work item,
// the items spread over the workers), for each query head of its group
// and each tile of query rows, the probabilities of each key tile are
// recomputed from Q, K and the forward's LSE (P = exp(s − LSE), 0 for a
// hidden key), then
//
//	dV += Pᵀ·dO,  dP = dO·Vᵀ,  dS = P∘(dP − δ)·softcap′,  δ = rowsum(dO∘O)
//	dQ += scale·dS·K,  dK += scale·dSᵀ·Q
//
// on the backend's Sgemm and its workers, in float32, never holding more
// than a tile of scores. An item owns its KV head's rows of dK and dV and its query
// heads' rows of dQ, so the items share nothing but dSinks, which they
// add to under a lock. Keys hidden by position (key lengths, causal
// masking, the window) get no gradient, as the softcap and ALiBi shape
// the scores they differentiate.
func (b *Backend) Backward(ctx context.Context, p backend.BackwardParams, q, k, v, o, lse, dO, dQ, dK, dV backend.Buffer, dSinks []float32) error {
	const op = "backward"
	if err := p.Validate(q, k, v, o, lse, dO, dQ, dK, dV, dSinks); err != nil {
		return fmt.Errorf("cpu: %s: %w", op, err)
	}
	var d [9]store
	if err := b.fetch(d[:], op,
		operand{"Q", q, false}, operand{"K", k, false}, operand{"V", v, false}, operand{"O", o, false},
		operand{"LSE", lse, false}, operand{"dO", dO, false},
		operand{"dQ", dQ, true}, operand{"dK", dK, true}, operand{"dV", dV, true}); err != nil {
		return err
	}
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	pr := p.Problem
	bw := &backward{p: pr, q: d[0].f32, k: d[1].f32, v: d[2].f32, o: d[3].f32, lse: d[4].f32, do: d[5].f32,
		dq: d[6].f32, dk: d[7].f32, dv: d[8].f32, qr: pr.QRowsOf(), kr: pr.KRowsOf(), vr: pr.VRowsOf(), or: pr.ORowsOf()}
	if dSinks != nil {
		clear(dSinks)
		bw.dSinks = dSinks
	}
	var r pass
	return b.run(ctx, op, &r, pr.B*pr.KVHeads, bw)
}

// backward is one Backward call's operands.
type backward struct {
	p                   backend.Problem
	q, k, v, o, lse, do []float32
	dq, dk, dv          []float32
	qr, kr, vr, or      backend.Rows
	mu                  sync.Mutex
	dSinks              []float32
}

// begin, item and end make bw the pass's body (passBody): item it is KV
// head it mod KVHeads of batch it / KVHeads, on the worker's tiles.
func (bw *backward) begin() any { return new(backScratch) }
func (bw *backward) item(state any, it int) {
	bw.head(state.(*backScratch), it/bw.p.KVHeads, it%bw.p.KVHeads)
}
func (bw *backward) end(any) {}

// backScratch is a worker's tiles.
type backScratch struct {
	qt, dot, dqt, s, dp, delta []float32
	raw                        []float32
}

// head computes the gradients of KV head kvh of batch b: its rows of dK
// and dV, and its query heads' rows of dQ.
func (bw *backward) head(sc *backScratch, b, kvh int) {
	p := bw.p
	d, dv := p.D, p.Dv
	// dK and dV start at 0: every key a row sees adds to them.
	for j := range p.Nk {
		clear(bw.dk[bw.kr.Offset(b, kvh, j):][:d])
		clear(bw.dv[bw.vr.Offset(b, kvh, j):][:dv])
	}
	sc.qt, sc.dot, sc.dqt = grow(sc.qt, backTileQ*d), grow(sc.dot, backTileQ*dv), grow(sc.dqt, backTileQ*d)
	sc.s, sc.dp, sc.raw = grow(sc.s, backTileQ*backTileK), grow(sc.dp, backTileQ*backTileK), grow(sc.raw, backTileQ*backTileK)
	sc.delta = grow(sc.delta, backTileQ)
	g := p.Group()
	var sinkGrad float64
	for h := kvh * g; h < (kvh+1)*g; h++ {
		sinkGrad = 0
		for i0 := 0; i0 < p.Nq; i0 += backTileQ {
			r := min(backTileQ, p.Nq-i0)
			qt := blas32.General{Rows: r, Cols: d, Stride: d, Data: sc.qt[:r*d]}
			dot := blas32.General{Rows: r, Cols: dv, Stride: dv, Data: sc.dot[:r*dv]}
			dqt := blas32.General{Rows: r, Cols: d, Stride: d, Data: sc.dqt[:r*d]}
			clear(dqt.Data)
			for ii := range r {
				copy(qt.Data[ii*d:(ii+1)*d], bw.q[bw.qr.Offset(b, h, i0+ii):])
				copy(dot.Data[ii*dv:(ii+1)*dv], bw.do[bw.or.Offset(b, h, i0+ii):])
				// δ = dO · O, the row's sum of P∘dP.
				o := bw.o[bw.or.Offset(b, h, i0+ii):][:dv]
				var s float64
				for c, x := range dot.Data[ii*dv : (ii+1)*dv] {
					s += float64(x) * float64(o[c])
				}
				sc.delta[ii] = float32(s)
				if p.Sinks != nil {
					if l := float64(bw.lse[p.LSEOffset(b, h, i0+ii)]); !math.IsInf(l, -1) {
						sinkGrad -= math.Exp(float64(p.Sinks[h])-l) * s
					}
				}
			}
			keyLo, _ := p.KeyRange(b, i0)
			_, keyHi := p.KeyRange(b, i0+r-1)
			for j0 := keyLo; j0 < keyHi; j0 += backTileK {
				n := min(backTileK, keyHi-j0)
				bw.tile(sc, qt, dot, dqt, b, h, kvh, i0, r, j0, n)
			}
			for ii := range r {
				copy(bw.dq[bw.qr.Offset(b, h, i0+ii):][:d], dqt.Data[ii*d:(ii+1)*d])
			}
		}
		if bw.dSinks != nil {
			bw.mu.Lock()
			bw.dSinks[h] += float32(sinkGrad)
			bw.mu.Unlock()
		}
	}
}

// tile is one key tile (n keys from j0) of a query tile (r rows of head
// h from i0): the probabilities recomputed, then dV, dP, dS, dQ and dK.
func (bw *backward) tile(sc *backScratch, qt, dot, dqt blas32.General, b, h, kvh, i0, r, j0, n int) {
	p := bw.p
	d, dv := p.D, p.Dv
	kt := blas32.General{Rows: n, Cols: d, Stride: bw.kr.Row, Data: bw.k[bw.kr.Offset(b, kvh, j0):]}
	vt := blas32.General{Rows: n, Cols: dv, Stride: bw.vr.Row, Data: bw.v[bw.vr.Offset(b, kvh, j0):]}
	kt.Data = kt.Data[:(n-1)*kt.Stride+d]
	vt.Data = vt.Data[:(n-1)*vt.Stride+dv]
	s := blas32.General{Rows: r, Cols: n, Stride: n, Data: sc.s[:r*n]}
	dp := blas32.General{Rows: r, Cols: n, Stride: n, Data: sc.dp[:r*n]}
	raw := sc.raw[:r*n]
	// S = scale·Q·Kᵀ, then P = exp(softcap(S) − ALiBi − LSE) on the keys
	// each row sees, 0 elsewhere.
	gemm(blas.Trans, p.Scale, qt, kt, 0, s)
	copy(raw, s.Data)
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
		row := s.Data[ii*n : (ii+1)*n]
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
		expShift(row, l) // P = e^(s − LSE), 0 for −Inf
	}
	// dV += Pᵀ·dO (the V rows of this tile, n×Dv).
	blasImpl.Sgemm(blas.Trans, blas.NoTrans, n, dv, r, 1, s.Data, s.Stride, dot.Data, dot.Stride, 1, bw.dv[bw.vr.Offset(b, kvh, j0):], bw.vr.Row)
	// dP = dO·Vᵀ, then dS = P∘(dP − δ), through the softcap's tanh.
	gemm(blas.Trans, 1, dot, vt, 0, dp)
	for ii := range r {
		pr, dr := s.Data[ii*n:(ii+1)*n], dp.Data[ii*n:(ii+1)*n]
		delta := sc.delta[ii]
		dr = dr[:len(pr)]
		for jj, pj := range pr {
			dr[jj] = pj * (dr[jj] - delta)
		}
		if c := p.Softcap; c > 0 {
			for jj, x := range raw[ii*n : (ii+1)*n] {
				th := float32(math.Tanh(float64(x / c)))
				dr[jj] *= 1 - th*th
			}
		}
	}
	// dQ += scale·dS·K and dK += scale·dSᵀ·Q.
	gemm(blas.NoTrans, p.Scale, dp, kt, 1, dqt)
	blasImpl.Sgemm(blas.Trans, blas.NoTrans, n, d, r, p.Scale, dp.Data, dp.Stride, qt.Data, qt.Stride, 1, bw.dk[bw.kr.Offset(b, kvh, j0):], bw.kr.Row)
}

var _ backend.Backwarder = (*Backend)(nil)
