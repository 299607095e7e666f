package kernels

import (
	"fmt"
	"math"

	"github.com/attn-go/attn/backend"
)

// Slice returns the view of t's elements lo … hi−1 along dimension dim,
// sharing t's storage: the other dimensions whole, Strides filled in (t's,
// or its dense ones), Data (or Bits) starting at the view's first element.
// Slicing the heads of a fused QKV projection [B, N, 3·H, D] at 0 … H gives
// Q without a copy:
//
//	q, _ := qkv.Slice(2, 0, h)
//	k, _ := qkv.Slice(2, h, 2*h)
//
// A bad t, dim or range is an error wrapping backend.ErrShape that names
// them. Writing the view's elements writes t's.
func (t *Tensor) Slice(dim, lo, hi int) (*Tensor, error) {
	if err := t.check("tensor"); err != nil {
		return nil, err
	}
	if dim < 0 || dim >= len(t.Shape) {
		return nil, backend.Errorf(backend.ErrShape, "slice of dimension %d of a tensor of shape %v (rank %d)", dim, t.Shape, len(t.Shape))
	}
	if lo < 0 || lo > hi || hi > t.Shape[dim] {
		return nil, backend.Errorf(backend.ErrShape, "slice %d … %d of dimension %d of a tensor of shape %v: want 0 ≤ lo ≤ hi ≤ %d", lo, hi, dim, t.Shape, t.Shape[dim])
	}
	st := t.strides()
	shape := append([]int(nil), t.Shape...)
	shape[dim] = hi - lo
	n := viewExtent(shape, st) // ≤ t's: a sub-range of every dimension
	off := 0
	if n > 0 {
		off = lo * st[dim]
	}
	out := &Tensor{Shape: shape, Layout: t.Layout, DType: t.DType, Strides: st}
	if t.DType.Half() {
		out.Bits = t.Bits[off : off+n : off+n]
	} else {
		out.Data = t.Data[off : off+n : off+n]
	}
	return out, nil
}

// Contiguous returns t as a dense row-major tensor (Strides nil): t itself
// when it is one, a tensor sharing t's storage when its strides are the
// dense ones, and otherwise a new tensor holding a copy of its elements.
// A bad t is an error wrapping backend.ErrShape.
func (t *Tensor) Contiguous() (*Tensor, error) {
	if err := t.check("tensor"); err != nil {
		return nil, err
	}
	return t.contiguous(), nil
}

// contiguous is Contiguous for a checked t.
func (t *Tensor) contiguous() *Tensor {
	if t.Strides == nil {
		return t
	}
	n := t.Len()
	out := &Tensor{Shape: append([]int(nil), t.Shape...), Layout: t.Layout, DType: t.DType}
	if t.isDense() {
		if t.DType.Half() {
			out.Bits = t.Bits[:n:n]
		} else {
			out.Data = t.Data[:n:n]
		}
		return out
	}
	if t.DType.Half() {
		out.Bits = make([]uint16, n)
		gather(out.Bits, t.Bits, t.Shape, t.Strides, 0)
	} else {
		out.Data = make([]float32, n)
		gather(out.Data, t.Data, t.Shape, t.Strides, 0)
	}
	return out
}

// strides returns t's strides: Strides, or the dense row-major ones.
func (t *Tensor) strides() []int {
	if t.Strides != nil {
		return append([]int(nil), t.Strides...)
	}
	return denseStrides(t.Shape)
}

func denseStrides(shape []int) []int {
	st := make([]int, len(shape))
	n := 1
	for d := len(shape) - 1; d >= 0; d-- {
		st[d] = n
		n *= max(shape[d], 1)
	}
	return st
}

// isDense reports whether t's elements lie row-major from element 0 with
// no gaps: Strides nil, or equal to the dense strides on every dimension
// longer than 1.
func (t *Tensor) isDense() bool {
	if t.Strides == nil {
		return true
	}
	n := 1
	for d := len(t.Shape) - 1; d >= 0; d-- {
		if t.Shape[d] == 0 {
			return true
		}
		if t.Shape[d] != 1 && t.Strides[d] != n {
			return false
		}
		n *= t.Shape[d]
	}
	return true
}

// checkStrides checks t's Strides by the rules of Tensor.Strides against
// the stored element count.
func (t *Tensor) checkStrides(name string, stored int) error {
	st := t.Strides
	if len(st) != len(t.Shape) {
		return backend.Errorf(backend.ErrShape, "%s of shape %v has %d strides %v: want one a dimension", name, t.Shape, len(st), st)
	}
	for d, s := range st {
		if s < 0 {
			return backend.Errorf(backend.ErrShape, "%s of shape %v has strides %v: stride %d is negative", name, t.Shape, st, d)
		}
	}
	if r := len(st); r > 0 && st[r-1] != 1 {
		return backend.Errorf(backend.ErrShape, "%s of shape %v has strides %v: the last stride must be 1", name, t.Shape, st)
	}
	n, ok := checkedExtent(t.Shape, st)
	if !ok {
		return backend.Errorf(backend.ErrTooLarge, "%s of shape %v at strides %v spans more elements than fit in an int", name, t.Shape, st)
	}
	if stored < n {
		return backend.Errorf(backend.ErrShape, "%s of shape %v at strides %v spans %d elements, its storage holds %d", name, t.Shape, st, n, stored)
	}
	return nil
}

// checkedExtent is 1 + Σ (shape[k]−1)·strides[k], or 0 when a dimension
// is 0; ok is false on overflow.
func checkedExtent(shape, strides []int) (int, bool) {
	n := 1
	for d, s := range shape {
		if s == 0 {
			return 0, true
		}
		x, ok := backend.CheckedProduct(s-1, strides[d])
		if !ok || n > math.MaxInt-x {
			return 0, false
		}
		n += x
	}
	return n, true
}

// viewExtent is checkedExtent for strides already checked.
func viewExtent(shape, strides []int) int {
	n, _ := checkedExtent(shape, strides)
	return n
}

// gather copies len(dst) elements of the strided tensor (src, shape,
// strides), from element lo in row-major order on, into dst. shape is
// not empty of elements beyond what dst asks.
func gather[T float32 | uint16](dst, src []T, shape, strides []int, lo int) {
	r := len(shape)
	if len(dst) == 0 {
		return
	}
	if r == 0 {
		dst[0] = src[0]
		return
	}
	last := shape[r-1]
	idx := unravel(lo, shape)
	for n := 0; n < len(dst); {
		off := 0
		for d := range r - 1 {
			off += idx[d] * strides[d]
		}
		j := idx[r-1]
		k := min(last-j, len(dst)-n)
		copy(dst[n:n+k], src[off+j:off+j+k])
		n += k
		idx[r-1] = 0
		for d := r - 2; d >= 0; d-- {
			if idx[d]++; idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

// eachRow calls fn with the dense index and the storage offset of each
// row (the last dimension's run of elements) of the checked strided t, in
// row-major order, until fn returns false.
func (t *Tensor) eachRow(fn func(at, off, n int) bool) {
	r := len(t.Shape)
	if t.Len() == 0 {
		return
	}
	if r == 0 {
		fn(0, 0, 1)
		return
	}
	last := t.Shape[r-1]
	idx := make([]int, r-1)
	for at := 0; ; at += last {
		off := 0
		for d, i := range idx {
			off += i * t.Strides[d]
		}
		if !fn(at, off, last) {
			return
		}
		d := r - 2
		for ; d >= 0; d-- {
			if idx[d]++; idx[d] < t.Shape[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// firstBadStrided is firstBad for a strided t: the dense index.
func firstBadStrided(t *Tensor, negInf bool) (int, float32) {
	bad, val := -1, float32(0)
	t.eachRow(func(at, off, n int) bool {
		if i, x := firstBadIn(t, off, off+n, negInf); i >= 0 {
			bad, val = at+i-off, x
			return false
		}
		return true
	})
	return bad, val
}

// opStrides turns the strides of a checked Q, K or V tensor of rank 2, 3
// or 4 in layout l (packed: rank 3 [total, heads, dim]) into the
// backend's: nil when t is dense, or when its rows overlap (a row stride
// below the head dim), which only a gather serves. Dimensions of one
// element get stride 0, or the head dim for the rows.
func opStrides(t *Tensor) *backend.Strides {
	if t.isDense() {
		return nil
	}
	sh, st := t.Shape, t.Strides
	var s backend.Strides
	// The dims each of Batch, Head, Row comes from, −1 for absent.
	bi, hi, ri := -1, -1, -1
	switch r := len(sh); {
	case r == 2:
		ri = 0
	case r == 3 && t.Layout == BNHD:
		ri, hi = 0, 1
	case r == 3:
		hi, ri = 0, 1
	case r == 4 && t.Layout == BNHD:
		bi, ri, hi = 0, 1, 2
	case r == 4:
		bi, hi, ri = 0, 1, 2
	default:
		return nil
	}
	dim := sh[len(sh)-1]
	if bi >= 0 && sh[bi] > 1 {
		s.Batch = st[bi]
	}
	if hi >= 0 && sh[hi] > 1 {
		s.Head = st[hi]
	}
	s.Row = dim
	if sh[ri] > 1 {
		s.Row = st[ri]
	}
	if s.Row < dim {
		return nil
	}
	return &s
}

// viewName names a tensor's strides in an error.
func viewName(t *Tensor) string {
	if t.Strides == nil {
		return fmt.Sprintf("%v", t.Shape)
	}
	return fmt.Sprintf("%v at strides %v", t.Shape, t.Strides)
}
