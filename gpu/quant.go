//go:build cgo && !nogpu

package gpu

import (
	"math"
	"unsafe"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
)

// This file writes and reads the 8-bit buffers (internal/plan/quantlayout.go
// lays them out): the host quantizes and widens, the device holds the
// bytes.

// writeQuant stores src into the 8-bit buffer x from element off, as the
// CPU backend does: q8 whole blocks (off and len(src), else ErrShape),
// quantized by backend.QuantizeQ8, a block with a magnitude of
// backend.Q8Max or more (or a NaN) refused with ErrNonFinite before
// anything is written; fp8 rounded and saturated (backend.EncodeFP8s), a
// NaN or an infinity refused with ErrNonFinite.
// Only the bytes of those elements are written: a word they share with
// others (an fp8 range's ends, a q8 scale word of two blocks of which
// one is written) keeps the others, merged on the device (writeSpans),
// so writes by several goroutines whose ranges meet in a word all land.
// The caller holds b.mu.
func (b *Backend) writeQuant(x *buffer, off int, src []float32) error {
	n := len(src)
	t := x.dtype
	if t == backend.Q8 {
		if off%backend.Q8Block != 0 || n%backend.Q8Block != 0 {
			return backend.Errorf(backend.ErrShape, "gpu: write of %d elements at offset %d of a q8 buffer: want whole blocks of %d", n, off, backend.Q8Block)
		}
		for i, v := range src {
			if !(v < backend.Q8Max && v > -backend.Q8Max) {
				return backend.Errorf(backend.ErrNonFinite, "gpu: write: src element %d is %g: a q8 block holds magnitudes below %g", i, v, float64(backend.Q8Max))
			}
		}
	}
	if t == backend.FP8 {
		// E4M3FN holds no infinity, and its NaN pattern reads as ±480 in
		// the kernels: refused, as on the CPU.
		for i, v := range src {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return backend.Errorf(backend.ErrNonFinite, "gpu: write: src element %d is %g, which an fp8 buffer does not hold", i, v)
			}
		}
	}
	if n == 0 {
		return nil
	}
	codes := make([]byte, n)
	var scales []uint16
	if t == backend.Q8 {
		scales = make([]uint16, n/backend.Q8Block)
		backend.QuantizeQ8(unsafe.Slice((*int8)(unsafe.Pointer(&codes[0])), n), scales, src)
	} else {
		backend.EncodeFP8s(codes, src)
	}
	lo, hi := plan.QuantSpan(t, off, n)
	w0, w1 := lo/4, (hi+3)/4
	img := make([]byte, (w1-w0)*4)
	spans := plan.PackQuant(t, img, w0*4, off, codes, scales)
	// The words a span covers in part keep their other bytes: the
	// device merges them (writeSpans).
	return b.writeSpans(x, w0, img, spans)
}

// readQuant widens len(dst) elements of the 8-bit buffer x from element
// off into dst, exactly (q8: whole blocks, else ErrShape). The caller
// holds b.mu (released while it waits: readChunk).
func (b *Backend) readQuant(dst []float32, x *buffer, off int) error {
	n := len(dst)
	if x.dtype == backend.Q8 && (off%backend.Q8Block != 0 || n%backend.Q8Block != 0) {
		return backend.Errorf(backend.ErrShape, "gpu: read of %d elements at offset %d of a q8 buffer: want whole blocks of %d", n, off, backend.Q8Block)
	}
	if n == 0 {
		return nil
	}
	lo, hi := plan.QuantSpan(x.dtype, off, n)
	w0, w1 := lo/4, (hi+3)/4
	words := make([]uint32, w1-w0)
	if err := b.readWords(words, x, w0); err != nil {
		return err
	}
	plan.UnpackQuant(x.dtype, dst, unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*4), w0*4, off)
	return nil
}
