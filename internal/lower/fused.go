package lower

import (
	"context"

	"github.com/attn-go/attn/backend"
)

// Ops runs a lowered problem: a backend's own ops, or a recording's.
type Ops interface {
	Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error
	backend.Copier
}

// Fused computes Fused on be, through ops (be's own, or a recording of
// be's when record is set), for a problem that the backend's kernels do
// not take as it is (FusedParams.NeedsLowering): one whose q8 K or V
// has head dims that are not whole blocks, run as the padded problem
// (see the package doc), then one with an index list (Indexed). It
// checks p as be's Fused would (FusedParams.Validate with be's Caps)
// first. ops.Fused gets the lowered problem, which lowers no further.
func Fused(ctx context.Context, be backend.Backend, ops Ops, record bool, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	if err := p.Validate(be.Caps(), q, k, v, o, lse); err != nil {
		return err
	}
	lp := p
	lp.Problem = p.Problem.Pitched(k.DType(), v.DType())
	if lp.D == p.D && lp.Dv == p.Dv {
		return run(ctx, be, ops, record, p, q, k, v, o, lse)
	}
	alloc, free := scratchOf(be)
	defer free()
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
	if err := run(ctx, be, ops, record, lp, q2, k, v, o2, lse); err != nil {
		return err
	}
	if o2 != o {
		return ops.Copy(ctx, o, o2, PitchRanges(nil, rows, p.Dv, lp.Dv, false)...)
	}
	return nil
}

// run runs p (validated, its head dims whole blocks) through ops:
// lowering its index list where it has one.
func run(ctx context.Context, be backend.Backend, ops Ops, record bool, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	if p.Indices == nil {
		return ops.Fused(ctx, p, q, k, v, o, lse)
	}
	return indexed(ctx, be, ops, record, p, q, k, v, o, lse)
}

// PitchRanges appends to dst the Copy ranges of rows rows of dim values
// between rows dim apart and rows pitch apart (from element 0 of each):
// into the pitched rows when in, else out of them.
func PitchRanges(dst []backend.CopyRange, rows, dim, pitch int, in bool) []backend.CopyRange {
	r := dst
	for i := range rows {
		if in {
			r = append(r, backend.CopyRange{Dst: i * pitch, Src: i * dim, N: dim})
		} else {
			r = append(r, backend.CopyRange{Dst: i * dim, Src: i * pitch, N: dim})
		}
	}
	return r
}

// scratchOf returns the allocator of a lowering's scratch buffers on be,
// and the function that frees what it allocated when the lowering
// returns: recorded, once its ops are recorded (a Recording keeps a
// released buffer until the work that uses it has run).
func scratchOf(be backend.Backend) (alloc func(backend.DType, int) (backend.Buffer, error), free func()) {
	var bufs []backend.Buffer
	alloc = func(t backend.DType, n int) (backend.Buffer, error) {
		b, err := be.Alloc(t, n)
		if err == nil {
			bufs = append(bufs, b)
		}
		return b, err
	}
	return alloc, func() {
		for _, b := range bufs {
			b.Release()
		}
	}
}
