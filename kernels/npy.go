package kernels

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/attn-go/attn/internal/operand"
)

// WriteNpy writes t as a NumPy .npy file: format 1.0, little-endian
// float32 ("<f4") — or float16 ("<f2") for a Float16 tensor, its bits as
// they are; NumPy has no bfloat16, so a BFloat16 tensor is written as the
// float32 values it holds, exactly — C order, its Shape as the array's
// shape (Layout is not recorded). The header is padded so that the data
// starts on a 64-byte boundary, as NumPy's own files do; np.load reads it
// back. It is the format attn run writes. A tensor whose data does not
// match its shape is an error wrapping backend.ErrShape.
func (t *Tensor) WriteNpy(w io.Writer) error {
	if err := t.check("tensor"); err != nil {
		return err
	}
	t = t.contiguous() // a strided view is written as its dense copy
	shape, descr := t.Shape, "<f4"
	if t.DType == Float16 {
		descr = "<f2"
	}

	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, operand.NpyShape(shape))
	hlen := len(dict) + 1
	hlen += (64 - (10+hlen)%64) % 64
	if hlen > math.MaxUint16 {
		return fmt.Errorf("shape %s makes a header too long for .npy 1.0", operand.NpyShape(shape))
	}
	hdr := make([]byte, 10, 10+hlen)
	copy(hdr, "\x93NUMPY")
	hdr[6], hdr[7] = 1, 0
	binary.LittleEndian.PutUint16(hdr[8:], uint16(hlen))
	hdr = append(hdr, dict...)
	for len(hdr) < 10+hlen-1 {
		hdr = append(hdr, ' ')
	}
	hdr = append(hdr, '\n')
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	// Elements are appended by put and written out 64 KiB at a time.
	buf := make([]byte, 0, 1<<16)
	var put func(i int)
	if t.DType == Float16 {
		put = func(i int) { buf = binary.LittleEndian.AppendUint16(buf, t.Bits[i]) }
	} else {
		vals := t.Float32s()
		put = func(i int) { buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(vals[i])) }
	}
	for i := range t.Len() {
		put(i)
		if len(buf) > cap(buf)-4 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}
