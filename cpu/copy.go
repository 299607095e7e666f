package cpu

import (
	"context"

	"github.com/attn-go/attn/backend"
)

// copyChunk is how many elements a copy between two half dtypes widens
// at a time, through a float32 scratch.
const copyChunk = 1024

// Copy copies ranges of src into dst (backend.Copier): bits as they are
// between buffers of one dtype, widened exactly from a half dtype,
// narrowed to one as Saturate says (narrow).
func (b *Backend) Copy(ctx context.Context, dst, src backend.Buffer, ranges ...backend.CopyRange) error {
	d, s, err := b.copyStores(ctx, dst, src)
	if err != nil {
		return err
	}
	if dst == src {
		return backend.Errorf(backend.ErrShape, "cpu: copy: dst and src are one buffer of %d elements", d.len())
	}
	if d.ro {
		return backend.Errorf(backend.ErrShape, "cpu: copy into a read-only wrapped buffer of %d elements", d.len())
	}
	if err := backend.CheckCopy(d.len(), s.len(), ranges); err != nil {
		return backend.Wrapf(err, "cpu")
	}
	var tmp []float32
	if blk := max(d.t, s.t, backend.Q8); d.t.Block() > 1 || s.t.Block() > 1 {
		if d.t.Block() > 1 {
			blk = d.t
		} else {
			blk = s.t
		}
		for _, r := range ranges {
			if err := checkBlocks(blk, "copy", r.Dst, r.N); err != nil {
				return err
			}
			if err := checkBlocks(blk, "copy", r.Src, r.N); err != nil {
				return err
			}
		}
	}
	for _, r := range ranges {
		if d.t.Quantized() || s.t.Quantized() {
			if tmp, err = copyQuant(d, s, r.Dst, r.Src, r.N, tmp); err != nil {
				return err
			}
			continue
		}
		switch {
		case !d.t.Half() && !s.t.Half():
			copy(d.f32[r.Dst:r.Dst+r.N], s.f32[r.Src:])
		case d.t == s.t:
			copy(d.h[r.Dst:r.Dst+r.N], s.h[r.Src:])
		case !d.t.Half():
			widen(s.t, d.f32[r.Dst:r.Dst+r.N], s.h[r.Src:r.Src+r.N])
		case !s.t.Half():
			narrow(d.t, d.h[r.Dst:r.Dst+r.N], s.f32[r.Src:])
		default: // float16 ↔ bfloat16
			if tmp == nil {
				tmp = make([]float32, copyChunk)
			}
			for i := 0; i < r.N; i += copyChunk {
				n := min(copyChunk, r.N-i)
				widen(s.t, tmp[:n], s.h[r.Src+i:r.Src+i+n])
				narrow(d.t, d.h[r.Dst+i:r.Dst+i+n], tmp[:n])
			}
		}
	}
	return nil
}

var _ backend.Copier = (*Backend)(nil)

// copyStores checks a copy's context (nil is context.Background) and
// buffers, and returns dst's and src's stores: Copy's and CopyQuant's
// common start.
func (b *Backend) copyStores(ctx context.Context, dst, src backend.Buffer) (d, s store, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return d, s, backend.Wrapf(err, "cpu: copy")
	}
	if dst == nil || src == nil {
		return d, s, backend.Errorf(backend.ErrShape, "cpu: copy: a nil buffer")
	}
	if d, err = b.data("copy", "dst", dst); err != nil {
		return d, s, err
	}
	s, err = b.data("copy", "src", src)
	return d, s, err
}
