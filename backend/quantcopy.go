package backend

import (
	"context"
	"math"
)

// QuantCopier is implemented by a backend that quantizes on the device:
// a copy from a float32 or half buffer into a Q8 or FP8 one, as a KV
// cache's append from buffers (kernels' AppendBuffers) needs. The CPU
// and the GPU backends implement it; a Recording of one implements it
// too where its backend does (check with a type assertion).
type QuantCopier interface {
	// CopyQuant is Copy into the 8-bit buffer dst from the float32,
	// float16 or bfloat16 buffer src, each range quantized as a write
	// into dst quantizes (the same bytes as QuantizeQ8 and EncodeFP8s;
	// q8 ranges whole blocks), an FP8 dst's values first divided by
	// their head's scale (q.Scales) in float32, as a cache's Append
	// divides them. A finite value beyond ±FP8Max after the division
	// saturates and is counted.
	//
	// A value that a write would refuse (NaN, an infinity; into Q8 a
	// magnitude of Q8Max or more) is stored as NaN — fp8's NaN pattern
	// S.1111.111, and for q8 its block's scale (float16 NaN, 0x7e00) with
	// codes 0 — and counted, by every backend: src is the device's data,
	// which a GPU cannot look at without a round trip to the host, and
	// one policy holds everywhere, so that no append is half written,
	// none refused on one backend and stored on another, and none
	// silently. (A host Write refuses such values: the host looks first.)
	//
	// A range outside either buffer, ranges that are not whole q8
	// blocks, bad scales or a Counts buffer too short are ErrShape; a
	// src of another dtype than float32 or a half, or a dst not 8-bit,
	// is ErrUnsupported. It follows the op rules of Backend.
	CopyQuant(ctx context.Context, dst, src Buffer, q QuantCopy, ranges ...CopyRange) error
}

// QuantCopy says how CopyQuant scales and where it counts.
type QuantCopy struct {
	// Scales, for an FP8 dst, are one scale a head (nil: 1): src element
	// s belongs to head s/Dim mod len(Scales), and is stored divided by
	// its head's scale. Each is finite and > 0.
	Scales []float32
	// Dim is the elements of one head's row in src (the head dim), ≥ 1
	// when Scales is set.
	Dim int
	// Counts, when not nil, is a Float32 buffer of the same backend of
	// at least CountsLen elements, which CopyQuant adds its counts to
	// as two unsigned 64-bit integers, each the bits of two elements,
	// low word first: the values it saturated (elements 0, 1) and the
	// values it stored as NaN (elements 2, 3). Read them with
	// ReadCounts. A new buffer is zero-filled: counts of 0.
	Counts Buffer
}

// CountsLen is the elements of a QuantCopy's Counts buffer.
const CountsLen = 4

// ReadCounts reads a QuantCopy's Counts buffer on be: the values
// CopyQuant saturated and those it stored as NaN, since the buffer was
// made. It waits for the work that writes them, as Read does.
func ReadCounts(be Backend, counts Buffer) (saturated, nan uint64, err error) {
	var w [CountsLen]float32
	if err := be.Read(w[:], counts, 0); err != nil {
		return 0, 0, err
	}
	return CountsOf(w[:])
}

// CountsOf decodes the elements of a Counts buffer, as ReadCounts reads
// them (the bits of each float32 are a word of a count).
func CountsOf(w []float32) (saturated, nan uint64, err error) {
	if len(w) < CountsLen {
		return 0, 0, Errorf(ErrShape, "counts of %d elements, want %d", len(w), CountsLen)
	}
	word := func(i int) uint64 { return uint64(math.Float32bits(w[i])) }
	return word(0) | word(1)<<32, word(2) | word(3)<<32, nil
}

// AddCounts adds saturated and nan to the counts in w, the elements of
// a Counts buffer, as CountsOf reads them (a backend that keeps its
// buffers on the host adds so).
func AddCounts(w []float32, saturated, nan uint64) {
	for i, n := range [2]uint64{saturated, nan} {
		if n == 0 {
			continue
		}
		lo, hi := &w[2*i], &w[2*i+1]
		v := uint64(math.Float32bits(*lo)) | uint64(math.Float32bits(*hi))<<32 + n
		*lo, *hi = math.Float32frombits(uint32(v)), math.Float32frombits(uint32(v>>32))
	}
}

// CheckQuantCopy checks a CopyQuant's arguments that do not depend on
// the backend: dst 8-bit, src float32 or a half, the ranges inside both
// buffers (of dstLen and srcLen elements) and whole q8 blocks, the
// scales finite and positive with Dim ≥ 1. It returns an error wrapping
// ErrUnsupported or ErrShape naming the first bad one.
func CheckQuantCopy(dst, src DType, dstLen, srcLen int, q QuantCopy, ranges []CopyRange) error {
	if !dst.Quantized() {
		return Errorf(ErrUnsupported, "quantizing copy into a %v buffer: want q8 or fp8", dst)
	}
	if src != Float32 && !src.Half() {
		return Errorf(ErrUnsupported, "quantizing copy from a %v buffer: want float32, float16 or bfloat16", src)
	}
	if err := CheckCopy(dstLen, srcLen, ranges); err != nil {
		return err
	}
	if blk := dst.Block(); blk > 1 {
		for i, r := range ranges {
			if r.Dst%blk != 0 || r.Src%blk != 0 || r.N%blk != 0 {
				return Errorf(ErrShape, "copy range %d of %d: %d elements from %d to %d of a %v buffer: want whole blocks of %d", i, len(ranges), r.N, r.Src, r.Dst, dst, blk)
			}
		}
	}
	if q.Scales != nil {
		if q.Dim < 1 || len(q.Scales) == 0 {
			return Errorf(ErrShape, "quantizing copy with %d scales of rows of %d: want at least one scale and rows of at least 1", len(q.Scales), q.Dim)
		}
		for h, s := range q.Scales {
			if !(s > 0) || math.IsInf(float64(s), 0) {
				return Errorf(ErrShape, "quantizing copy: scale of head %d is %g: want finite and > 0", h, s)
			}
		}
	}
	if q.Counts != nil && (q.Counts.DType() != Float32 || q.Counts.Len() < CountsLen) {
		return Errorf(ErrShape, "quantizing copy: counts buffer of %d %v elements, want %d float32s", q.Counts.Len(), q.Counts.DType(), CountsLen)
	}
	return nil
}
