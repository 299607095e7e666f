package backend

import "context"

// Q8 at any head dim. A q8 K or V stores each row of D (or Dv) values in
// whole blocks: a row takes Pitch(D) = ⌈D/Q8Block⌉·Q8Block elements of
// the buffer, the values past D padding, as ggml pads a q8_0 row. The
// strides and lengths of a q8 operand (TensorStrides, a page's rows, a
// packed operand's rows) are those of a problem whose head dim is the
// pitch. A writer stores zeros there (the caches do): the padding is
// part of the last block, so its values set that block's scale, and the
// kernels read it only against zeros, so any finite values give the same
// result. A V taken from a q8 K (VFromK) is read at K's pitch.
//
// Fused takes such a problem through FusedLowered, which runs it as the
// padded problem whose D and Dv are the pitches: Q copied into a scratch
// buffer with zero columns past D (Copy, one range a row), O computed
// into one with Dv's pitch and its first Dv columns copied out. The
// scale is the caller's (the default stays 1/√D, not 1/√pitch), and the
// zero columns add nothing to a score. The copies cost two passes over Q
// and O, small beside K and V when decoding; a recording records them
// too, the scratch released once they are recorded (Recording).

// Pitch is the elements a row of dim values of dtype t takes in a
// buffer: dim rounded up to whole blocks (t.Block()).
func (t DType) Pitch(dim int) int {
	blk := t.Block()
	return (dim + blk - 1) / blk * blk
}

// PitchRows lays x, rows of dim values, out as a K or V buffer of t
// holds them: each row at t's pitch, zeros past dim. It returns x itself
// where the pitch is dim.
func (t DType) PitchRows(x []float32, dim int) []float32 {
	pitch := t.Pitch(dim)
	if pitch == dim || dim <= 0 {
		return x
	}
	out := make([]float32, len(x)/dim*pitch)
	for r := range len(x) / dim {
		copy(out[r*pitch:], x[r*dim:(r+1)*dim])
	}
	return out
}

// Pitched is p with D and Dv set to the pitches of the rows of K and V
// (buffers of dtypes kt and vt: V's rows are K's under VFromK): the
// problem that reads them in place.
func (p Problem) Pitched(kt, vt DType) Problem {
	if p.VFromK {
		vt = kt
	}
	p.D, p.Dv = kt.Pitch(p.D), vt.Pitch(p.Dv)
	return p
}

// pads says whether the head dims of p (resolved) are not whole blocks
// of its q8 K or V, so that Fused runs it through FusedLowered.
func (p FusedParams) pads(k, v Buffer) bool {
	if k == nil || v == nil {
		return false
	}
	pp := p.Problem.Resolved()
	q := pp.Pitched(k.DType(), v.DType())
	return q.D != pp.D || q.Dv != pp.Dv
}

// NeedsLowering says whether a backend whose Fused takes index lists
// and q8 at any head dim (Caps.Indices, Caps.Quant8) runs p through
// FusedLowered: for an index list, or head dims that are not whole q8
// blocks of K or V (padded as the comment above says). Its kernels then
// get only the lowered problems.
func (p FusedParams) NeedsLowering(k, v Buffer) bool {
	return p.Indices != nil || p.pads(k, v)
}

// FusedLowered computes Fused on be, through ops (be's own, or a
// recording of be's when record is set), for a problem that the
// backend's kernels do not take as it is: one whose q8 K or V has head
// dims that are not whole blocks (padded as the comment above says),
// then one with an index list (FusedIndexed). ops.Fused gets the
// lowered problem, which lowers no further.
func FusedLowered(ctx context.Context, be Backend, ops IndexedOps, record bool, p FusedParams, q, k, v, o, lse Buffer) error {
	if !p.pads(k, v) {
		return FusedIndexed(ctx, be, ops, record, p, q, k, v, o, lse)
	}
	if err := p.validate(q, k, v, o, lse); err != nil {
		return err
	}
	alloc, free := scratchOf(be)
	defer free()
	lp := p
	lp.Problem = p.Problem.Pitched(k.DType(), v.DType())
	rows := p.TotalQ() * p.H
	q2, o2 := q, o
	if lp.D != p.D {
		var err error
		if q2, err = alloc(q.DType(), lp.QLen()); err != nil {
			return err
		}
		if err := ops.Copy(ctx, q2, q, PitchRanges(nil, rows, p.D, lp.D, true)...); err != nil {
			return err
		}
	}
	if lp.Dv != p.Dv {
		var err error
		if o2, err = alloc(o.DType(), lp.OLen()); err != nil {
			return err
		}
	}
	run := ops.Fused
	if lp.Indices != nil {
		run = func(ctx context.Context, p FusedParams, q, k, v, o, lse Buffer) error {
			return FusedIndexed(ctx, be, ops, record, p, q, k, v, o, lse)
		}
	}
	if err := run(ctx, lp, q2, k, v, o2, lse); err != nil {
		return err
	}
	if o2 != o {
		return ops.Copy(ctx, o, o2, PitchRanges(nil, rows, p.Dv, lp.Dv, false)...)
	}
	return nil
}

// PitchRanges appends to dst the Copy ranges of rows rows of dim values
// between rows dim apart and rows pitch apart (from element 0 of each):
// into the pitched rows when in, else out of them.
func PitchRanges(dst []CopyRange, rows, dim, pitch int, in bool) []CopyRange {
	r := dst
	for i := range rows {
		if in {
			r = append(r, CopyRange{Dst: i * pitch, Src: i * dim, N: dim})
		} else {
			r = append(r, CopyRange{Dst: i * dim, Src: i * pitch, N: dim})
		}
	}
	return r
}
