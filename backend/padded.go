package backend

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
// A backend with Caps.Quant8 runs a problem whose head dims are not
// whole blocks as the padded one whose D and Dv are the pitches
// (Problem.Pitched), through attn's package internal/lower.

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
// of its q8 K or V, so that Fused pads it (lower.Fused).
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
// attn's package internal/lower's Fused: for an index list, or head dims that
// are not whole q8 blocks of K or V (padded as the comment above says).
// Its kernels then get only the lowered problems.
func (p FusedParams) NeedsLowering(k, v Buffer) bool {
	return p.Indices != nil || p.pads(k, v)
}
