//go:build amd64 && !purego

package cpu

import "github.com/attn-go/attn/backend"

// The 8-bit stores' writing loops (quant_amd64.s): each the same bytes
// as backend.QuantizeQ8 (whole blocks, every magnitude below
// backend.Q8Max) or backend.EncodeFP8s (without its count), sixteen
// lanes at a time (AVX-512F and F16C) or eight (AVX2 and F16C; the FP8
// loop needs AVX2 alone). The FP8 loops take a multiple of 16 and 8
// values.

//go:noescape
func quantQ8AVX512(codes []int8, scales []uint16, src []float32)

//go:noescape
func quantQ8AVX2(codes []int8, scales []uint16, src []float32)

//go:noescape
func encodeFP8AVX512(dst []uint8, src []float32)

//go:noescape
func encodeFP8AVX2(dst []uint8, src []float32)

// quantQ8Vec quantizes the whole blocks of src into codes and scales on
// the vector loops of width w (quantWidth's: 1 sixteen lanes, 0 eight,
// −1 none) and returns how many values that is: all of them, or 0 where
// the CPU has no loop. Every magnitude of src is below backend.Q8Max.
func quantQ8Vec(w int, codes []int8, scales []uint16, src []float32) int {
	n := len(src) / backend.Q8Block * backend.Q8Block
	if w < 0 || n == 0 {
		return 0
	}
	codes, scales, src = codes[:n], scales[:n/backend.Q8Block], src[:n]
	if w == 1 {
		quantQ8AVX512(codes, scales, src)
	} else {
		quantQ8AVX2(codes, scales, src)
	}
	return n
}

// encodeFP8Vec encodes as much of src into dst as the vector loops of
// width w take (sixteen lanes, then eight; −1: none) and returns how
// many values that is.
func encodeFP8Vec(w int, dst []uint8, src []float32) int {
	if w < 0 {
		return 0
	}
	done := 0
	if wide := len(src) &^ 15; w == 1 && wide > 0 {
		encodeFP8AVX512(dst[:wide], src[:wide])
		done = wide
	}
	if rest := (len(src) - done) &^ 7; rest > 0 {
		encodeFP8AVX2(dst[done:done+rest], src[done:done+rest])
		done += rest
	}
	return done
}

// quantWriteWidth is the width of the writing loops the CPU runs
// (quantWidth's), its F16C needed by the q8 ones alone.
func quantWriteWidth(t backend.DType) int {
	switch {
	case hasAVX512 && hasHalfAVX2 && (hasF16C || t == backend.FP8):
		return 1
	case hasHalfAVX2 && (hasF16C || t == backend.FP8):
		return 0
	}
	return -1
}
