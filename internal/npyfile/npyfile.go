// Package npyfile writes NumPy .npy files of float32 in C order, the one
// kind of .npy attn produces (outputs of attn run, inputs handed to the
// benchmark's peers). Reading, with its many dtypes and orders, is done
// with github.com/sbinet/npyio where a program needs it.
package npyfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Magic opens every .npy file.
const Magic = "\x93NUMPY"

// ShapeString prints a shape as NumPy does: (3,), (2, 3).
func ShapeString(shape []int) string {
	if len(shape) == 1 {
		return fmt.Sprintf("(%d,)", shape[0])
	}
	s := make([]string, len(shape))
	for i, d := range shape {
		s[i] = strconv.Itoa(d)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// Encode writes a little-endian float32 C-order .npy (format 1.0) of
// the given shape. The header is padded so the data starts on a 64-byte
// boundary, as NumPy does.
func Encode(w io.Writer, shape []int, data []float32) error {
	dict := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", ShapeString(shape))
	if len(shape) == 0 {
		dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (), }"
	}
	hlen := len(dict) + 1
	hlen += (64 - (10+hlen)%64) % 64
	if hlen > math.MaxUint16 {
		return fmt.Errorf("shape %s makes a header too long for .npy 1.0", ShapeString(shape))
	}
	hdr := make([]byte, 10, 10+hlen)
	copy(hdr, Magic)
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
	buf := make([]byte, 0, 1<<16)
	for _, v := range data {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		if len(buf) == cap(buf) {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}
