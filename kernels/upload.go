package kernels

import (
	"github.com/attn-go/attn/backend"
)

// gatherChunk is how many elements a strided or widened upload gathers
// on the host per Write: 1 MiB of float32, reused, so that a strided
// tensor reaches a device without a dense host copy of the whole.
const gatherChunk = 1 << 18

// put puts the checked tensor t on be for an op, read-only, and returns
// its buffer and, when be reads it in place at strides of its own, those
// strides for backend.Problem.Views (view says the operand may take
// them: Q, K and V, not a bias or a paged pool).
//
//	be a backend.Wrapper, t dense            t's storage itself
//	be a Wrapper with Caps.Strides, t a view t's storage itself, strides
//	otherwise                                Alloc, and Write t's
//	                                         elements densely
//	                                         (writeDense: in one Write
//	                                         when t is dense and stored
//	                                         as it is, else gathered and
//	                                         widened a chunk at a time)
//
// A half t on a backend without Caps.Half is widened to float32: the
// answer is the same, the transfer twice the bytes.
func (d *devBufs) put(be backend.Backend, name string, t *Tensor, view bool) (backend.Buffer, *backend.Strides, error) {
	caps := be.Caps()
	dense := t.isDense()
	var st *backend.Strides
	if !dense && view && caps.Strides {
		st = opStrides(t)
	}
	storable := !t.DType.Half() || caps.Half
	if w, ok := be.(backend.Wrapper); ok && storable && (dense || st != nil) {
		n := t.Len()
		if st != nil {
			n = viewExtent(t.Shape, t.Strides)
		}
		var buf backend.Buffer
		var err error
		if t.DType.Half() {
			buf, err = w.WrapBits(t.DType, t.Bits[:n:n], true)
		} else {
			buf, err = w.Wrap(t.Data[:n:n], true)
		}
		if err != nil {
			return nil, nil, backend.Wrapf(err, "%s", name)
		}
		*d = append(*d, buf)
		return buf, st, nil
	}
	dt := t.DType
	if !storable {
		dt = Float32
	}
	buf, err := d.gatherUpload(be, name, t, dt)
	return buf, nil, err
}

// gatherUpload allocates a dense buffer of dtype dt (t's, or Float32)
// for the checked tensor t and writes t's elements into it (writeDense).
func (d *devBufs) gatherUpload(be backend.Backend, name string, t *Tensor, dt DType) (backend.Buffer, error) {
	buf, err := d.alloc(be, name, dt, t.Len())
	if err != nil {
		return nil, err
	}
	if err := writeDense(be, buf, t); err != nil {
		return nil, backend.Wrapf(err, "writing %s", name)
	}
	return buf, nil
}

// writeDense writes the elements of the checked tensor t, in row-major
// order, to buf from element 0: in one Write (or WriteBits) when t is
// dense and buf's dtype is t's or Float32 is t's, else a chunk at a time,
// gathered from t's strides (and widened from a half t into a Float32
// buf) on the host.
func writeDense(be backend.Backend, buf backend.Buffer, t *Tensor) error {
	n, dt := t.Len(), buf.DType()
	if t.isDense() {
		switch {
		case dt.Half() && dt == t.DType:
			return be.WriteBits(buf, 0, t.Bits[:n])
		case !t.DType.Half():
			return be.Write(buf, 0, t.Data[:n])
		}
	}
	if dt.Half() && dt != t.DType {
		return backend.Errorf(backend.ErrShape, "%v tensor into a %v buffer", t.DType, dt)
	}
	shape, st := t.Shape, t.strides()
	chunk := min(n, gatherChunk)
	var f32 []float32
	var bits []uint16
	if !dt.Half() {
		f32 = make([]float32, chunk)
	}
	if t.DType.Half() {
		bits = make([]uint16, chunk)
	}
	for off := 0; off < n; off += chunk {
		m := min(chunk, n-off)
		var err error
		switch {
		case dt.Half(): // t's own dtype: its bits as they are
			gather(bits[:m], t.Bits, shape, st, off)
			err = be.WriteBits(buf, off, bits[:m])
		case t.DType.Half():
			gather(bits[:m], t.Bits, shape, st, off)
			for i, b := range bits[:m] {
				f32[i] = t.DType.Decode(b)
			}
			err = be.Write(buf, off, f32[:m])
		default:
			gather(f32[:m], t.Data, shape, st, off)
			err = be.Write(buf, off, f32[:m])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// outBuffer returns a buffer for n elements of an output of dtype dt:
// when be is a backend.Wrapper, a writable wrap of a new slice that
// becomes the result (data or bits, the other nil), so that the backend
// writes the result in place; otherwise a buffer of be's (data and bits
// nil: the caller reads it back). An n above be's Caps.MaxBufferLen goes
// to Alloc, which refuses it.
func (d *devBufs) outBuffer(be backend.Backend, name string, dt DType, n int) (buf backend.Buffer, data []float32, bits []uint16, err error) {
	caps := be.Caps()
	w, ok := be.(backend.Wrapper)
	if !ok || dt.Half() && !caps.Half || caps.MaxBufferLen > 0 && n > caps.MaxBufferLen {
		buf, err = d.alloc(be, name, dt, n)
		return buf, nil, nil, err
	}
	if dt.Half() {
		bits = make([]uint16, n)
		buf, err = w.WrapBits(dt, bits, false)
	} else {
		data = make([]float32, n)
		buf, err = w.Wrap(data, false)
	}
	if err != nil {
		return nil, nil, nil, backend.Wrapf(err, "%s", name)
	}
	*d = append(*d, buf)
	return buf, data, bits, nil
}
