package cpu

import (
	"context"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/attn-go/attn/backend"
)

// maskView reads a broadcast mask: element (b, h, i, j) is
// data[b·s[0] + h·s[1] + i·s[2] + j·s[3]]. A bias may be half (widened
// as addBias reads it); a keep-mask is Float32.
type maskView struct {
	data store
	s    [4]int
}

func newMaskView(m *backend.Mask, data store) *maskView {
	if m == nil {
		return nil
	}
	return &maskView{data: data, s: m.Strides()}
}

// row returns the start of row (b, h, i) and the stride along keys (0 when
// the mask is broadcast over keys).
func (m *maskView) row(b, h, i int) (base, step int) {
	return b*m.s[0] + h*m.s[1] + i*m.s[2], m.s[3]
}

// addBias adds bias row (b, h, i) to row, which starts at key j0. A half
// bias is widened a chunk at a time into a buffer on the stack, so that
// the workers sharing the view share no scratch.
func (m *maskView) addBias(row []float32, b, h, i, j0 int) {
	base, step := m.row(b, h, i)
	base += j0 * step
	t := m.data.t
	if step == 0 {
		var x float32
		if t.Half() {
			x = t.Decode(m.data.h[base])
		} else {
			x = m.data.f32[base]
		}
		for j := range row {
			row[j] += x
		}
		return
	}
	if !t.Half() {
		for j, v := range m.data.f32[base : base+len(row)] {
			row[j] += v
		}
		return
	}
	var buf [256]float32
	for j0 := 0; j0 < len(row); j0 += len(buf) {
		n := min(len(buf), len(row)-j0)
		widen(t, buf[:n], m.data.h[base+j0:base+j0+n])
		for j, v := range buf[:n] {
			row[j0+j] += v
		}
	}
}

// applyKeep sets to −Inf every element of row (starting at key j0) whose
// keep-mask entry is 0.
func (m *maskView) applyKeep(row []float32, b, h, i, j0 int) {
	base, step := m.row(b, h, i)
	base += j0 * step
	if step == 0 {
		if m.data.f32[base] == 0 {
			for j := range row {
				row[j] = float32(math.Inf(-1))
			}
		}
		return
	}
	for j, v := range m.data.f32[base : base+len(row)] {
		if v == 0 {
			row[j] = float32(math.Inf(-1))
		}
	}
}

// blocks splits B·H·ceil(Nq/rows) work items into (b, h, first row, rows).
type blocks struct {
	h, nq, rows, per int
}

func newBlocks(p backend.Problem, rows int) (blocks, int) {
	per := (p.Nq + rows - 1) / rows
	return blocks{h: p.H, nq: p.Nq, rows: rows, per: per}, p.B * p.H * per
}

func (bl blocks) item(it int) (b, h, i0, r int) {
	bh := it / bl.per
	i0 = (it % bl.per) * bl.rows
	return bh / bl.h, bh % bl.h, i0, min(bl.rows, bl.nq-i0)
}

// Scores computes
//
//	S[b,h,i,j] = scale · Σ_d Q[b,h,i,d]·K[b,h/G,j,d] + bias[b,h,i,j]
//
// one Gemm per block of 64 query rows of one head, in parallel.
func (b *Backend) Scores(ctx context.Context, p backend.ScoresParams, q, k, s backend.Buffer) error {
	const op = "scores"
	if err := p.Validate(q, k, s); err != nil {
		return backend.Wrapf(err, "cpu: %s", op)
	}
	d, err := b.operands(op,
		operand{"Q", q, false}, operand{"K", k, false},
		operand{"bias", p.Bias.Buffer(), false}, operand{"mask", p.Keep.Buffer(), false},
		operand{"scores", s, true})
	if err != nil {
		return err
	}
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	qd, kd, sd := d[0], d[1], d[4].f32
	mods := newScoreMods(p.Problem, newMaskView(p.Bias, d[2]))
	keep := newMaskView(p.Keep, d[3])
	qs, ks := p.QStrides(), p.KStrides()
	g, nk := p.Group(), p.Nk
	// A half K is widened halfChunk keys at a time, each chunk's scores
	// one Gemm; a Float32 K is one Gemm over all the keys, in place.
	kc := nk
	if kd.t.Half() {
		kc = min(nk, halfChunk)
	}
	bl, n := newBlocks(p.Problem, rowBlock)
	return b.forEach(ctx, op, n, func() func(int) {
		qt := halfScratch(qd, rowBlock*p.D)
		kt := halfScratch(kd, kc*p.D)
		return func(it int) {
			bi, h, i0, r := bl.item(it)
			sOff := ((bi*p.H+h)*p.Nq + i0) * nk
			if nk == 0 {
				return
			}
			qm := matOf(qd, qs.Offset(bi, h, i0), r, p.D, qs.Row, qt)
			for j0 := 0; j0 < nk; j0 += kc {
				c := min(kc, nk-j0)
				gemm(blas.Trans, p.Scale, qm,
					matOf(kd, ks.Offset(bi, h/g, j0), c, p.D, ks.Row, kt),
					0, mat(sd, sOff+j0, r, c, nk))
			}
			if p.Stage == backend.StageRaw {
				return
			}
			for ii := range r {
				row := sd[sOff+ii*nk : sOff+(ii+1)*nk]
				mods.capped(row)
				if p.Stage == backend.StageCapped {
					continue
				}
				i := i0 + ii
				mods.biased(row, bi, h, i, 0)
				if p.Stage == backend.StageMasked {
					lo, hi := p.KeyRange(bi, i)
					hideOutside(row, lo, hi, 0)
					if keep != nil {
						keep.applyKeep(row, bi, h, i, 0)
					}
				}
			}
		}
	})
}

// Softmax replaces each row of s by its softmax over the keys the row may
// see, in place, and writes the rows' log-sum-exp to p.LSE when set.
func (b *Backend) Softmax(ctx context.Context, p backend.SoftmaxParams, s backend.Buffer) error {
	const op = "softmax"
	if err := p.Validate(s); err != nil {
		return backend.Wrapf(err, "cpu: %s", op)
	}
	d, err := b.operands(op,
		operand{"scores", s, true}, operand{"mask", p.Keep.Buffer(), false},
		operand{"LSE", p.LSE, true})
	if err != nil {
		return err
	}
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	sd, lse := d[0].f32, d[2].f32
	keep := newMaskView(p.Keep, d[1])
	nk := p.Nk
	bl, n := newBlocks(p.Problem, rowBlock)
	return b.forEach(ctx, op, n, func() func(int) {
		return func(it int) {
			bi, h, i0, r := bl.item(it)
			for ii := range r {
				i := i0 + ii
				row := (bi*p.H+h)*p.Nq + i
				lo, hi := p.KeyRange(bi, i)
				v := softmaxRow(sd[row*nk:(row+1)*nk], lo, hi, keep, bi, h, i, p.Sinks)
				if lse != nil {
					lse[row] = float32(v)
				}
			}
		}
	})
}

// softmaxRow replaces row with its softmax over the visible keys — those
// in [lo, hi), kept by the mask and not −Inf — writing 0 elsewhere, and
// returns the log-sum-exp, −Inf when no key is visible. With sinks, the
// denominator gains exp(sinks[h]) and a row that sees no key has the sink
// as its log-sum-exp. The sum is kept in float64.
func softmaxRow(row []float32, lo, hi int, keep *maskView, b, h, i int, sinks []float32) float64 {
	vis := row[lo:hi]
	if keep != nil {
		keep.applyKeep(vis, b, h, i, lo)
	}
	clear(row[:lo])
	clear(row[hi:])
	m := rowMax(vis)
	mf, sum := math.Inf(-1), 0.0
	if !math.IsInf(float64(m), -1) {
		mf, sum = float64(m), expShift(vis, m)
	} else {
		clear(vis)
	}
	if sinks != nil {
		var alpha float64
		alpha, mf, sum = withSink(mf, sum, float64(sinks[h]))
		scale(vis, float32(alpha))
	}
	if sum == 0 {
		return math.Inf(-1)
	}
	inv := 1 / sum
	for j, v := range vis {
		vis[j] = float32(float64(v) * inv)
	}
	return mf + math.Log(sum)
}

// Context computes O[b,h,i,:] = Σ_j P[b,h,i,j]·V[b,h/G,j,:], one Gemm per
// block of 64 query rows of one head, in parallel.
func (b *Backend) Context(ctx context.Context, p backend.ContextParams, pm, v, o backend.Buffer) error {
	const op = "context"
	if err := p.Validate(pm, v, o); err != nil {
		return backend.Wrapf(err, "cpu: %s", op)
	}
	d, err := b.operands(op,
		operand{"weights", pm, false}, operand{"V", v, false}, operand{"O", o, true})
	if err != nil {
		return err
	}
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	pd, vd, od := d[0].f32, d[1], d[2]
	vs, os := p.VStrides(), p.OStrides()
	g, nk := p.Group(), p.Nk
	// A half V is widened halfChunk keys at a time, each chunk one Gemm
	// accumulating into O's rows; a Float32 V is one Gemm, in place. A
	// half O's rows are computed in float32 scratch and narrowed.
	kc := max(nk, 1)
	if vd.t.Half() {
		kc = min(kc, halfChunk)
	}
	bl, n := newBlocks(p.Problem, rowBlock)
	return b.forEach(ctx, op, n, func() func(int) {
		vt := halfScratch(vd, kc*p.Dv)
		ot := halfScratch(od, rowBlock*p.Dv)
		return func(it int) {
			bi, h, i0, r := bl.item(it)
			var om blas32.General
			if od.t.Half() {
				om = blas32.General{Rows: r, Cols: p.Dv, Stride: max(p.Dv, 1), Data: ot[:r*p.Dv]}
			} else {
				om = mat(od.f32, os.Offset(bi, h, i0), r, p.Dv, os.Row)
			}
			pOff := ((bi*p.H+h)*p.Nq + i0) * nk
			// One pass at least: with nk = 0 the Gemm clears O.
			for j0 := 0; j0 < nk || j0 == 0; j0 += kc {
				c := min(kc, nk-j0)
				beta := float32(1)
				if j0 == 0 {
					beta = 0
				}
				gemm(blas.NoTrans, 1,
					mat(pd, pOff+j0, r, c, max(nk, 1)),
					matOf(vd, vs.Offset(bi, h/g, j0), c, p.Dv, vs.Row, vt),
					beta, om)
			}
			if od.t.Half() {
				for ii := range r {
					putRow(od, os.Offset(bi, h, i0+ii), om.Data[ii*p.Dv:(ii+1)*p.Dv])
				}
			}
		}
	})
}
