package cpu

import (
	"unsafe"

	"github.com/attn-go/attn/backend"
)

// The CPU backend uses host slices as buffers in place.
var _ backend.Wrapper = (*Backend)(nil)

// Wrap returns a Float32 buffer over data, with no copy: the ops read
// (and, unless readOnly, write) data itself. See backend.Wrapper.
func (b *Backend) Wrap(data []float32, readOnly bool) (backend.Buffer, error) {
	if err := b.checkOpen("wrap"); err != nil {
		return nil, err
	}
	return &buffer{owner: b, n: len(data), dtype: backend.Float32, data: store{t: backend.Float32, f32: data, ro: readOnly}}, nil
}

// WrapBits returns a buffer of half dtype t over bits, with no copy.
func (b *Backend) WrapBits(t backend.DType, bits []uint16, readOnly bool) (backend.Buffer, error) {
	if err := b.checkOpen("wrap"); err != nil {
		return nil, err
	}
	if !t.Half() {
		return nil, backend.Errorf(backend.ErrShape, "cpu: wrap of %d half bits as %v", len(bits), t)
	}
	return &buffer{owner: b, n: len(bits), dtype: t, data: store{t: t, h: bits, ro: readOnly}}, nil
}

// span is the address range [lo, hi) of s's elements; empty for an empty
// store.
func (s store) span() (lo, hi uintptr) {
	switch {
	case s.t.Half() && len(s.h) > 0:
		lo = uintptr(unsafe.Pointer(unsafe.SliceData(s.h)))
		return lo, lo + uintptr(len(s.h))*2
	case s.t.Quantized():
		return s.quantSpan()
	case !s.t.Half() && len(s.f32) > 0:
		lo = uintptr(unsafe.Pointer(unsafe.SliceData(s.f32)))
		return lo, lo + uintptr(len(s.f32))*4
	}
	return 0, 0
}

// overlaps reports whether s and t share any memory: only wrapped
// buffers can (Alloc gives each buffer memory of its own).
func (s store) overlaps(t store) bool {
	a0, a1 := s.span()
	b0, b1 := t.span()
	return a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1
}
