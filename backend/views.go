package backend

// Views gives Q, K or V strides of their own, in place of the dense
// strides of the problem's layout (TensorStrides), so that an op reads
// the operand where it lies: the Q heads of a fused QKV projection, a
// slice of a longer sequence, rows padded for alignment. A nil field
// keeps that operand dense; O, the masks, the scores and the LSE are
// always dense.
//
// Row i of head h in batch b of a viewed operand starts at element
//
//	b·Batch + h·Head + i·Row
//
// and its D (or Dv) elements are contiguous. The rules, checked by
// Problem.Validate (ErrShape, naming the operand and its strides):
//
//	Batch ≥ 0, Head ≥ 0    (0 repeats one batch or head: a broadcast)
//	Row ≥ D (Dv for V)     (rows may not overlap: they are read as a
//	                       matrix with that leading dimension)
//	no Views.K or V with a paged K and V (Problem.Paged): a pool is dense
//
// Packed operands (Problem.Packed) use Head and Row, and ignore Batch:
// packed row r of head h starts at h·Head + r·Row. The buffer must hold
// the operand's extent, the last element of its last row plus one
// (QLen, KLen, VLen). Overlapping heads or batches are allowed: no op
// writes Q, K or V.
//
// Only a backend that claims Caps.Strides reads Views; every other op
// refuses a problem that sets them (ErrUnsupported, DenseOnly), so a
// caller that does not check gets an error, never a wrong answer.
type Views struct {
	Q, K, V *Strides
}

// DenseOnly returns an error wrapping ErrUnsupported when p sets Views:
// the first check of every op of a backend without Caps.Strides. name is
// the backend's.
func (p Problem) DenseOnly(name string) error {
	if p.Views != nil && (p.Views.Q != nil || p.Views.K != nil || p.Views.V != nil) {
		return Errorf(ErrUnsupported, "the %s backend reads only dense Q, K and V (Caps.Strides is false): the problem sets strides of its own (B=%d H=%d Nq=%d Nk=%d)",
			name, p.B, p.H, p.Nq, p.Nk)
	}
	return nil
}

// view returns the strides Views sets for operand i (0 Q, 1 K, 2 V), or
// nil.
func (p Problem) view(i int) *Strides {
	if p.Views == nil {
		return nil
	}
	return [3]*Strides{p.Views.Q, p.Views.K, p.Views.V}[i]
}

// extent is how many elements an operand of heads × rows (dim wide) in
// batches spans at strides s: the last element of its last row plus
// one, or 0 when it is empty; ok is false on overflow.
func extent(s Strides, batches, heads, rows, dim int) (int, bool) {
	if batches == 0 || heads == 0 || rows == 0 || dim == 0 {
		return 0, true
	}
	n := dim
	for _, t := range [3][2]int{{batches - 1, s.Batch}, {heads - 1, s.Head}, {rows - 1, s.Row}} {
		x, ok := CheckedProduct(t[0], t[1])
		if !ok || n > maxRun-x {
			return 0, false
		}
		n += x
	}
	return n, true
}

// viewExtent is the extent of operand i under its view; ok is false on
// overflow. The batch count is 1 for a packed operand (its Batch stride
// is not read).
func (p Problem) viewExtent(i int, s Strides) (int, bool) {
	heads, dim := p.H, p.D
	if i > 0 {
		heads = p.KVHeads
	}
	if i == 2 {
		dim = p.Dv
	}
	batches, rows := p.B, p.Nq
	switch {
	case i == 0 && p.Packed != nil:
		batches, rows = 1, p.Packed.CuQ[p.B]
	case i == 0:
	case p.packedK():
		batches, rows = 1, p.Packed.CuK[p.B]
	default:
		rows = p.Nk
	}
	return extent(s, batches, heads, rows, dim)
}

// validateViews checks Views by the rules of the Views type.
func (p Problem) validateViews() error {
	if p.Views == nil {
		return nil
	}
	for i, name := range [3]string{"Q", "K", "V"} {
		s := p.view(i)
		if s == nil {
			continue
		}
		dim := p.D
		if i == 2 {
			dim = p.Dv
		}
		switch {
		case i > 0 && p.Paged != nil:
			return Errorf(ErrShape, "%s strides %+v over a paged cache: a page pool is dense", name, *s)
		case s.Batch < 0 || s.Head < 0:
			return Errorf(ErrShape, "%s strides %+v: the batch and head strides must be ≥ 0", name, *s)
		case s.Row < dim:
			return Errorf(ErrShape, "%s strides %+v: the row stride must be at least the head dim %d, rows may not overlap", name, *s, dim)
		}
		if _, ok := p.viewExtent(i, *s); !ok {
			return Errorf(ErrTooLarge, "%s strides %+v over B=%d H=%d KVHeads=%d Nq=%d Nk=%d span more elements than fit in an int", name, *s, p.B, p.H, p.KVHeads, p.Nq, p.Nk)
		}
	}
	return nil
}
