package kernels

import (
	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/operand"
)

// ConcatSeq returns past's rows followed by cur's along the sequence
// axis, in cur's layout and dtype:
//
//	present[b, h, j, :] = past[b, h, j, :]       j < P
//	present[b, h, j, :] = cur[b, h, j − P, :]    P ≤ j < P + N
//
// This is ONNX Attention's present_key = concat(past_key, K) (and
// present_value), a cache grown by this step's keys: attention over
// present with query i at key position P + i (CausalOffset P when
// causal) is attention with the cache. past and cur have one rank (2, 3
// or 4) and the same batch, head count and head dim; each is read in its
// own layout, so a BHND past (ONNX's past_key is always [B, H, P, D])
// extends a BNHD cur. A past of another dtype is rounded to cur's
// (Convert: a value cur's dtype cannot hold is an error wrapping
// backend.ErrNonFinite); a nil past gives a copy of cur. Neither input
// is modified. Every other problem is an error wrapping backend.ErrShape
// that names both shapes.
func ConcatSeq(past, cur *Tensor) (*Tensor, error) {
	if err := cur.check("new rows"); err != nil {
		return nil, err
	}
	if past == nil {
		return cur.Convert(cur.DType)
	}
	if err := past.check("past"); err != nil {
		return nil, err
	}
	if len(past.Shape) != len(cur.Shape) {
		return nil, backend.Errorf(backend.ErrShape, "past of shape %v has rank %d, the new rows of shape %v rank %d: want one rank",
			past.Shape, len(past.Shape), cur.Shape, len(cur.Shape))
	}
	if r := len(cur.Shape); r < 2 || r > 4 {
		return nil, backend.Errorf(backend.ErrShape, "the new rows have rank %d (shape %v); want 2 [N,D], 3 [H,N,D] or 4 [B,H,N,D]", r, cur.Shape)
	}
	for _, t := range []*Tensor{past, cur} {
		if t.Layout != BHND && t.Layout != BNHD {
			return nil, backend.Errorf(backend.ErrShape, "unknown layout %v", t.Layout)
		}
	}
	pb, ph, pn, pd := operand.Dims(past.Shape, past.Layout)
	cb, ch, cn, cd := operand.Dims(cur.Shape, cur.Layout)
	if pb != cb || ph != ch || pd != cd {
		return nil, backend.Errorf(backend.ErrShape, "past of shape %v (%v: B=%d H=%d D=%d) does not extend the new rows of shape %v (%v: B=%d H=%d D=%d)",
			past.Shape, past.Layout, pb, ph, pd, cur.Shape, cur.Layout, cb, ch, cd)
	}
	if past.DType != cur.DType {
		var err error
		if past, err = past.Convert(cur.DType); err != nil {
			return nil, backend.Wrapf(err, "past")
		}
	}
	n, ok := addChecked(pn, cn)
	if !ok {
		return nil, backend.Errorf(backend.ErrTooLarge, "past of %d rows and %d new rows overflow int", pn, cn)
	}
	shape := seqShape(cur.Shape, cur.Layout, n)
	out, err := NewTensorOf(cur.DType, cur.Layout, shape...)
	if err != nil {
		return nil, err
	}
	past, cur = past.contiguous(), cur.contiguous() // rows found densely below
	dst := backend.TensorStrides(cur.Layout, ch, n, cd)
	// copyRows moves src's rows (its Dims, in its layout) to rows from
	// first on of every (b, h) of out.
	copyRows := func(src *Tensor, rows, first int) {
		ss := backend.TensorStrides(src.Layout, ch, rows, cd)
		for b := range cb {
			for h := range ch {
				for i := range rows {
					from, to := ss.Offset(b, h, i), dst.Offset(b, h, first+i)
					if cur.DType.Half() {
						copy(out.Bits[to:to+cd], src.Bits[from:from+cd])
					} else {
						copy(out.Data[to:to+cd], src.Data[from:from+cd])
					}
				}
			}
		}
	}
	copyRows(past, pn, 0)
	copyRows(cur, cn, pn)
	return out, nil
}

// seqShape is shape (of a Q, K, V or O tensor in layout l) with its
// sequence dimension n.
func seqShape(shape []int, l Layout, n int) []int {
	out := append([]int(nil), shape...)
	axis := len(out) - 2 // [N, D], [H, N, D], [B, H, N, D]
	if l == BNHD && len(out) > 2 {
		axis = len(out) - 3 // [N, H, D], [B, N, H, D]
	}
	out[axis] = n
	return out
}

// addChecked adds two non-negative ints, reporting false on overflow.
func addChecked(a, b int) (int, bool) {
	if a > int(^uint(0)>>1)-b {
		return 0, false
	}
	return a + b, true
}
