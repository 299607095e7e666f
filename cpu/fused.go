package cpu

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu/internal/sgemm"
)

// fusedScratch is one worker's memory for the tile loop: O(Tq·(Tk+Dv)),
// whatever Nq and Nk are.
type fusedScratch struct {
	s   []float32 // Tq×Tk scores, then weights, of the current key tile
	acc []float32 // Tq×Dv running, unnormalised output
	m   []float64 // running row max
	l   []float64 // running row sum of exp(S − m)
	lo  []int     // each row's visible keys in the current key tile,
	hi  []int     // [lo, hi) from the tile's start (the Gemms' band)
	// The tiles of the half operands, widened to float32 as each tile
	// is taken (nil for a Float32 operand, read in place): Tq×D of Q,
	// Tk×D of K, Tk×Dv of V.
	q, k, v []float32
	// pb is the Tq×Tk weights rounded to bfloat16 for P·V on the bf16
	// arithmetic path (fused.bf16), nil otherwise.
	pb []uint16
}

// Fused computes O = softmax(scale·Q·Kᵀ + bias, masked)·V without the
// scores matrix, and the row log-sum-exp into lse when it is not nil.
//
// Each work item is one query tile of one head (Tq rows); it streams key
// tiles of Tk rows and keeps, per query row, the running max m, the running
// sum l and the unnormalised output acc. For a key tile:
//
//	S    = scale · Qtile · Ktileᵀ + bias, −Inf where masked
//	m'   = max(m, rowmax S)
//	P    = exp(S − m')
//	l    = l · exp(m − m') + Σ_j P
//	acc  = acc · exp(m − m') + P · Vtile
//
// and at the end O = acc / l, LSE = m + log l. Key tiles wholly above the
// causal diagonal are never visited.
func (b *Backend) Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	const op = "fused"
	if err := p.Validate(q, k, v, o, lse); err != nil {
		return fmt.Errorf("cpu: %s: %w", op, err)
	}
	d, err := b.operands(op,
		operand{"Q", q, false}, operand{"K", k, false}, operand{"V", v, false},
		operand{"bias", maskBuf(p.Bias), false}, operand{"mask", maskBuf(p.Keep), false},
		operand{"O", o, true}, operand{"LSE", lse, true})
	if err != nil {
		return err
	}
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	f := &fused{
		p: p.Problem,
		q: d[0], k: d[1], v: d[2], o: d[5], lse: d[6].f32,
		mods: newScoreMods(p.Problem, newMaskView(p.Bias, d[3])),
		keep: newMaskView(p.Keep, d[4]),
		qs:   p.QStrides(), ks: p.KStrides(), vs: p.VStrides(), os: p.OStrides(),
		tq: b.tileQ, tk: b.tileK,
	}
	if f.bf16 = bf16Arithmetic(f.q, f.k, f.v); f.bf16 {
		f.tq, f.tk = b.bf16Q, b.bf16K
	}
	// Scratch never needs to be bigger than the problem (decoding with
	// Nq = 1 gets a 1×Tk score tile). And when there are fewer query
	// tiles than threads, smaller query tiles keep every thread busy; each
	// row's result depends only on Tk and the key order, not on Tq, so
	// this changes no answer.
	f.tq = min(f.tq, max(p.Nq, 1))
	f.tk = min(f.tk, max(p.Nk, 1))
	// Under a window of W keys a query tile's rows see W + Tq − 1 keys
	// between them (the Gemms' band skips what no row of a kernel block
	// sees). When that span is at most three key tiles, one key tile
	// takes it whole: each row then runs one online step a query tile,
	// not three. Measured, B=1 H=8 D=64, W=512 at N=32768 (AVX-512):
	// key tiles of 256, 512, 767 (the span) and 1024 keys ran at about
	// 218, 219, 243 and 226 GFLOP/s.
	if band := p.Band(); band < math.MaxInt {
		if span := band + f.tq - 1; span <= 3*f.tk {
			f.tk = min(span, max(p.Nk, 1))
		}
	}
	if heads := p.B * p.H; heads > 0 && heads*ceilDiv(p.Nq, f.tq) < b.threads {
		perHead := ceilDiv(b.threads, heads)
		f.tq = min(f.tq, max(ceilDiv(p.Nq, perHead), minTileQ))
	}
	bl, n := newBlocks(p.Problem, f.tq)
	return b.forEach(ctx, op, n, func() func(int) {
		sc := &fusedScratch{
			s:   make([]float32, f.tq*f.tk),
			acc: make([]float32, f.tq*p.Dv),
			m:   make([]float64, f.tq),
			l:   make([]float64, f.tq),
			lo:  make([]int, f.tq),
			hi:  make([]int, f.tq),
		}
		if f.bf16 {
			sc.pb = make([]uint16, f.tq*f.tk)
		} else {
			sc.q = halfScratch(f.q, f.tq*p.D)
			sc.k = halfScratch(f.k, f.tk*p.D)
			sc.v = halfScratch(f.v, f.tk*p.Dv)
		}
		return func(it int) {
			if p.Causal {
				// The last query tiles of a head see the most keys: take
				// them first so that the cheap ones fill in at the end.
				it = n - 1 - it
			}
			bi, h, i0, r := bl.item(it)
			f.tile(sc, bi, h, i0, r)
		}
	})
}

// minTileQ is the smallest query tile Fused picks on its own to spread a
// small problem over more threads.
const minTileQ = 16

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// fused holds one Fused call's operands.
type fused struct {
	p              backend.Problem
	q, k, v, o     store
	lse            []float32
	mods           scoreMods
	keep           *maskView
	qs, ks, vs, os backend.Strides
	tq, tk         int
	// bf16 says Q, K and V are all BFloat16 and the CPU multiplies
	// bfloat16 (sgemm.HasBF16): Q·Kᵀ and P·V run on the stored bits with
	// VDPBF16PS and float32 accumulation, P rounded to bfloat16 for P·V
	// (see bf16Tile).
	bf16 bool
}

// tile computes rows i0 … i0+r−1 of head h in batch b.
func (f *fused) tile(sc *fusedScratch, b, h, i0, r int) {
	p := f.p
	kvh := h / p.Group()
	negInf := math.Inf(-1)
	m, l := sc.m[:r], sc.l[:r]
	for i := range r {
		m[i], l[i] = negInf, 0
	}
	acc := blas32.General{Rows: r, Cols: p.Dv, Stride: p.Dv, Data: sc.acc[:r*p.Dv]}
	clear(acc.Data)
	var qm blas32.General
	if !f.bf16 {
		qm = matOf(f.q, f.qs.Offset(b, h, i0), r, p.D, f.qs.Row, sc.q)
	}

	// KeyRange's ends grow with i, so the keys some row of the tile may
	// see lie in [keyStart, keyEnd): the tiles outside (past the causal
	// limit or the key length, before a window's start) are skipped
	// outright. Within a tile the rows' visible ranges, which grow with
	// the row too, are the Gemms' band: Q·Kᵀ computes only the kernel
	// blocks some row sees, and P·V reads only the keys whose weights
	// some row of a block has (the rest are 0), so a causal diagonal or a
	// window's edges cost what they attend, not whole tiles.
	keyStart, _ := p.KeyRange(b, i0)
	_, keyEnd := p.KeyRange(b, i0+r-1)
	lo, hi := sc.lo[:r], sc.hi[:r]
	band := sgemm.Band{Lo: lo, Hi: hi}
	for j0 := keyStart; j0 < keyEnd; j0 += f.tk {
		tk := min(f.tk, keyEnd-j0)
		for ii := range r {
			a, e := p.KeyRange(b, i0+ii)
			lo[ii] = min(max(a-j0, 0), tk)
			hi[ii] = min(max(e-j0, lo[ii]), tk)
		}
		st := blas32.General{Rows: r, Cols: tk, Stride: f.tk, Data: sc.s[:(r-1)*f.tk+tk]}
		if f.bf16 {
			f.bf16Tile(sc, st, acc, band, b, h, i0, j0)
			continue
		}
		band.Inner = false
		gemmBand(blas.Trans, p.Scale, qm, matOf(f.k, f.ks.Offset(b, kvh, j0), tk, p.D, f.ks.Row, sc.k), 0, st, band)
		for ii := range r {
			row := st.Data[ii*f.tk : ii*f.tk+tk]
			f.online(row, nil, lo[ii], hi[ii], acc.Data[ii*p.Dv:(ii+1)*p.Dv], &m[ii], &l[ii], b, h, i0+ii, j0)
		}
		band.Inner = true
		gemmBand(blas.NoTrans, 1, st, matOf(f.v, f.vs.Offset(b, kvh, j0), tk, p.Dv, f.vs.Row, sc.v), 1, acc, band)
	}

	for ii := range r {
		off := f.os.Offset(b, h, i0+ii)
		row := acc.Data[ii*p.Dv : (ii+1)*p.Dv]
		lse := negInf
		if p.Sinks != nil {
			var alpha float64
			alpha, m[ii], l[ii] = withSink(m[ii], l[ii], float64(p.Sinks[h]))
			scale(row, float32(alpha))
		}
		if l[ii] > 0 {
			// O = acc · (1/l) in float32, by the vector loop: a scalar
			// loop here cost 8 % of a window's time, whose rows attend
			// few keys for the Dv outputs each writes.
			scale(row, float32(1/l[ii]))
			lse = m[ii] + math.Log(l[ii])
		} else {
			clear(row)
		}
		putRow(f.o, off, row)
		if f.lse != nil {
			f.lse[(b*p.H+h)*p.Nq+i0+ii] = float32(lse)
		}
	}
}

// bf16Tile is one key tile of tile on the bf16 arithmetic path: S =
// scale·Q·Kᵀ by sgemm.BF16GemmBand on Q's and K's stored bits (each
// product of two bfloat16 values exact in float32, the sums float32, as
// the float32 path's), the online softmax as ever, then P rounded to
// bfloat16 (2⁻⁸ relative a weight; l sums the float32 weights, so O moves
// by at most 2⁻⁸·Σ_j w_j·|v_j| and the LSE not at all) and acc += P·V on
// V's stored bits. VDPBF16PS reads bfloat16 subnormals (below 2⁻¹²⁶) as
// zero.
func (f *fused) bf16Tile(sc *fusedScratch, st, acc blas32.General, band sgemm.Band, b, h, i0, j0 int) {
	p := f.p
	kvh := h / p.Group()
	r, tk := st.Rows, st.Cols
	qo, ko, vo := f.qs.Offset(b, h, i0), f.ks.Offset(b, kvh, j0), f.vs.Offset(b, kvh, j0)
	q := f.q.h[qo : qo+(r-1)*f.qs.Row+p.D]
	k := f.k.h[ko : ko+(tk-1)*f.ks.Row+p.D]
	v := f.v.h[vo : vo+(tk-1)*f.vs.Row+p.Dv]
	band.Inner = false
	sgemm.BF16GemmBand(blas.Trans, r, tk, p.D, p.Scale, q, f.qs.Row, k, f.ks.Row, 0, st.Data, st.Stride, band)
	m, l := sc.m[:r], sc.l[:r]
	for ii := range r {
		row := st.Data[ii*st.Stride : ii*st.Stride+tk]
		pb := sc.pb[ii*st.Stride : ii*st.Stride+tk]
		f.online(row, pb, band.Lo[ii], band.Hi[ii], acc.Data[ii*p.Dv:(ii+1)*p.Dv], &m[ii], &l[ii], b, h, i0+ii, j0)
	}
	band.Inner = true
	sgemm.BF16GemmBand(blas.NoTrans, r, p.Dv, tk, 1, sc.pb[:(r-1)*st.Stride+tk], st.Stride, v, f.vs.Row, 1, acc.Data, acc.Stride, band)
}

// bf16Arithmetic says whether Fused runs bf16Tile: Q, K and V all
// BFloat16 (the caller's choice of bfloat16 precision) on a CPU that
// multiplies bfloat16 (AVX512_BF16; sgemm.HasBF16).
func bf16Arithmetic(q, k, v store) bool {
	return q.t == backend.BFloat16 && k.t == backend.BFloat16 && v.t == backend.BFloat16 && sgemm.HasBF16()
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
	if mNew != *m {
		// Past a row's first tiles its max seldom grows: only then is
		// acc rescaled. alpha is 0 when m was −Inf; acc and l are 0 then
		// anyway.
		alpha := math.Exp(*m - mNew)
		scale(acc, float32(alpha))
		*l *= alpha
	}
	*l += sum
	*m = mNew
}
