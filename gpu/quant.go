//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"math"
	"unsafe"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
)

// This file writes and reads the quantized buffers
// (internal/plan/quantlayout.go lays them out): the host quantizes and
// widens, the device holds the bytes.

// writeQuant stores src into the quantized buffer x from element off,
// as the CPU backend does: q8 and q4 whole blocks (off and len(src),
// else ErrShape), quantized by backend.QuantizeQ8 or QuantizeQ4, a
// block with a magnitude of backend.Q8Max (q8) or Q4Max (q4) or more
// (or a NaN) refused with ErrNonFinite before anything is written; fp8
// rounded and saturated (backend.EncodeFP8s), a NaN or an infinity
// refused with ErrNonFinite.
// Only the bytes of those elements are written: a word they share with
// others (an fp8 range's ends, a q8 or q4 scale word of two blocks of
// which one is written) keeps the others, merged on the device
// (writeSpans), so writes by several goroutines whose ranges meet in a
// word all land. The caller holds b.mu.
func (b *Backend) writeQuant(x *buffer, off int, src []float32) error {
	n := len(src)
	t := x.dtype
	if blk := t.Block(); blk > 1 {
		if off%blk != 0 || n%blk != 0 {
			return backend.Errorf(backend.ErrShape, "gpu: write of %d elements at offset %d of a %v buffer: want whole blocks of %d", n, off, t, blk)
		}
		lim := t.MaxFinite() // Q8Max, Q4Max
		for i, v := range src {
			if !(v < lim && v > -lim) {
				return backend.Errorf(backend.ErrNonFinite, "gpu: write: src element %d is %g: a %v block holds magnitudes below %g", i, v, t, float64(lim))
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
	var codes []byte
	var scales []uint16
	switch t {
	case backend.Q8:
		codes, scales = make([]byte, n), make([]uint16, n/backend.Q8Block)
		backend.QuantizeQ8(unsafe.Slice((*int8)(unsafe.Pointer(&codes[0])), n), scales, src)
	case backend.Q4:
		codes, scales = make([]byte, n/2), make([]uint16, n/backend.Q8Block)
		backend.QuantizeQ4(codes, scales, src)
	default:
		codes = make([]byte, n)
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

// readQuant widens len(dst) elements of the quantized buffer x from
// element off into dst, exactly (q8, q4: whole blocks, else ErrShape).
// The caller holds b.mu (released while it waits: readChunk).
func (b *Backend) readQuant(dst []float32, x *buffer, off int) error {
	n := len(dst)
	if blk := x.dtype.Block(); off%blk != 0 || n%blk != 0 {
		return backend.Errorf(backend.ErrShape, "gpu: read of %d elements at offset %d of a %v buffer: want whole blocks of %d", n, off, x.dtype, blk)
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
