package cpu

import (
	"math"
	"unsafe"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/magnitude"
)

// The quantized dtypes (backend.Q8, backend.FP8; backend.Q4, quant4.go)
// store a cache's K and V.
// A Q8 store holds its int8 values in q8 and one float16 scale a block
// of backend.Q8Block values in sc; an FP8 store its E4M3 bits in f8.
// Fused reads them as K and V, widening in registers in the decoding
// kernels (decodeTile) and tile by tile into float32 scratch elsewhere
// (matOf, getRow); no other op takes them (the params' Validate).

// wide says whether s is stored in a dtype other than float32, read
// through scratch or widening kernels.
func (s store) wide() bool { return s.t != backend.Float32 }

// widenAt widens len(dst) elements of s from element off into dst,
// exactly: a half's bits, a q8 block's scale times its values (off and
// len(dst) whole blocks, as every K or V row of a Q8 store is), E4M3's
// value.
func (s store) widenAt(dst []float32, off int) {
	switch s.t {
	case backend.Float32:
		copy(dst, s.f32[off:off+len(dst)])
	case backend.Q8:
		backend.DequantizeQ8(dst, s.q8[off:off+len(dst)], s.sc[off/backend.Q8Block:(off+len(dst))/backend.Q8Block])
	case backend.FP8:
		backend.DecodeFP8s(dst, s.f8[off:off+len(dst)])
	case backend.Q4:
		backend.DequantizeQ4(dst, s.q4[off/2:(off+len(dst))/2], s.sc[off/backend.Q8Block:(off+len(dst))/backend.Q8Block])
	default:
		widen(s.t, dst, s.h[off:off+len(dst)])
	}
}

// quantWrite stores src into the 8-bit store s from element off: q8
// blocks quantized (off and len(src) whole blocks; a block beyond
// backend.Q8Max is ErrNonFinite and nothing is written), E4M3 rounded and
// saturated (a NaN or an infinity is ErrNonFinite, nothing written); on the vector loops where the CPU has them (quantQ8Vec,
// encodeFP8Vec), the same bytes.
func quantWrite(s store, off int, src []float32) error {
	if s.t == backend.FP8 {
		// E4M3FN holds no infinity, and its NaN pattern reads as ±480 in
		// the decoding kernels: refuse both before writing anything.
		if !magnitude.Below(src, 0x7f800000) {
			for i, x := range src {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					return backend.Errorf(backend.ErrNonFinite, "cpu: write: src element %d is %g, which an fp8 buffer does not hold", i, x)
				}
			}
		}
		dst := s.f8[off : off+len(src)]
		done := encodeFP8Vec(quantWriteWidth(backend.FP8), dst, src)
		backend.EncodeFP8s(dst[done:], src[done:])
		return nil
	}
	if err := checkBlocks(s.t, "write", off, len(src)); err != nil {
		return err
	}
	// Refuse before writing anything: quantize only once every block is
	// known to fit (one vector pass, magnitude.Below, in the common case).
	if i, ok := refused(s.t, src); !ok {
		return backend.Errorf(backend.ErrNonFinite, "cpu: write: src element %d is %g: a %v block holds magnitudes below %g", i, src[i], s.t, float64(s.t.MaxFinite()))
	}
	if s.t == backend.Q4 {
		backend.QuantizeQ4(s.q4[off/2:(off+len(src))/2], s.sc[off/backend.Q8Block:(off+len(src))/backend.Q8Block], src)
		return nil
	}
	codes, scales := s.q8[off:off+len(src)], s.sc[off/backend.Q8Block:(off+len(src))/backend.Q8Block]
	done := quantQ8Vec(quantWriteWidth(backend.Q8), codes, scales, src)
	backend.QuantizeQ8(codes[done:], scales[done/backend.Q8Block:], src[done:])
	return nil
}

// checkBlocks refuses a range of an 8-bit store that is not whole blocks.
func checkBlocks(t backend.DType, op string, off, n int) error {
	if blk := t.Block(); off%blk != 0 || n%blk != 0 {
		return backend.Errorf(backend.ErrShape, "cpu: %s of %d elements at offset %d of a %v buffer: want whole blocks of %d", op, n, off, t, blk)
	}
	return nil
}

// allocQuant makes an 8-bit store of n elements.
func allocQuant(t backend.DType, n int) store {
	s := store{t: t}
	switch t {
	case backend.Q8:
		s.q8 = make([]int8, n)
		s.sc = make([]uint16, n/backend.Q8Block)
	case backend.Q4:
		s.q4 = make([]uint8, n/2)
		s.sc = make([]uint16, n/backend.Q8Block)
	default:
		s.f8 = make([]uint8, n)
	}
	return s
}

// copyQuant copies n elements from src at so into dst at do, one of them
// 8-bit: bits as they are between two of one dtype (q8 ranges whole
// blocks), else widened through tmp and stored as dst stores.
func copyQuant(dst, src store, do, so, n int, tmp []float32) ([]float32, error) {
	if dst.t == src.t {
		switch dst.t {
		case backend.Q8:
			copy(dst.q8[do:do+n], src.q8[so:])
			copy(dst.sc[do/backend.Q8Block:(do+n)/backend.Q8Block], src.sc[so/backend.Q8Block:])
		case backend.Q4:
			copy(dst.q4[do/2:(do+n)/2], src.q4[so/2:])
			copy(dst.sc[do/backend.Q8Block:(do+n)/backend.Q8Block], src.sc[so/backend.Q8Block:])
		default:
			copy(dst.f8[do:do+n], src.f8[so:])
		}
		return tmp, nil
	}
	if tmp == nil {
		tmp = make([]float32, copyChunk)
	}
	for i := 0; i < n; i += copyChunk {
		m := min(copyChunk, n-i)
		src.widenAt(tmp[:m], so+i)
		if dst.t.Quantized() {
			if err := quantWrite(dst, do+i, tmp[:m]); err != nil {
				return tmp, err
			}
		} else if dst.t.Half() {
			narrow(dst.t, dst.h[do+i:do+i+m], tmp[:m])
		} else {
			copy(dst.f32[do+i:do+i+m], tmp[:m])
		}
	}
	return tmp, nil
}

// quantSpan is the address range of an 8-bit store's values.
func (s store) quantSpan() (lo, hi uintptr) {
	switch {
	case s.t == backend.Q8 && len(s.q8) > 0:
		lo = uintptr(unsafe.Pointer(unsafe.SliceData(s.q8)))
		return lo, lo + uintptr(len(s.q8))
	case s.t == backend.FP8 && len(s.f8) > 0:
		lo = uintptr(unsafe.Pointer(unsafe.SliceData(s.f8)))
		return lo, lo + uintptr(len(s.f8))
	case s.t == backend.Q4 && len(s.q4) > 0:
		lo = uintptr(unsafe.Pointer(unsafe.SliceData(s.q4)))
		return lo, lo + uintptr(len(s.q4))
	}
	return 0, 0
}
