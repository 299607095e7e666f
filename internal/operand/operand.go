// Package operand holds what package kernels and the attn command both
// need to read an attention operand, kept out of kernels' public API:
// the dimensions a shape gives in a layout, the NumPy spelling of a
// shape, and the finiteness policy of attention's inputs over float32
// values. kernels uses each of them itself; the command uses them on
// files it has read only the headers of, or reads part by part, so that
// its messages follow the same rules.
package operand

import (
	"math"
	"strconv"
	"strings"

	"github.com/attn-go/attn/backend"
)

// Dims reads (batch, heads, tokens, dim) from the shape of a rank 2, 3 or
// 4 Q, K, V or output tensor in the given layout; a missing batch or head
// dimension is 1. Other ranks are the caller's to reject.
func Dims(shape []int, layout backend.Layout) (b, h, n, d int) {
	switch {
	case len(shape) == 2:
		return 1, 1, shape[0], shape[1]
	case len(shape) == 3 && layout == backend.BNHD:
		return 1, shape[1], shape[0], shape[2]
	case len(shape) == 3:
		return 1, shape[0], shape[1], shape[2]
	case layout == backend.BNHD:
		return shape[0], shape[2], shape[1], shape[3]
	}
	return shape[0], shape[1], shape[2], shape[3]
}

// NpyShape prints a shape as NumPy does, and as a .npy header holds it:
// (), (3,), (2, 3).
func NpyShape(shape []int) string {
	if len(shape) == 1 {
		return "(" + strconv.Itoa(shape[0]) + ",)"
	}
	s := make([]string, len(shape))
	for i, d := range shape {
		s[i] = strconv.Itoa(d)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// Refused reports whether attention's input check refuses x: NaN or an
// infinity, but for −Inf where negInf allows it (a bias's hidden key).
func Refused(x float32, negInf bool) bool {
	f := float64(x)
	return math.IsNaN(f) || math.IsInf(f, 1) || !negInf && math.IsInf(f, -1)
}

// FirstRefused is the index and value of the first element of data that
// Refused refuses, or −1.
func FirstRefused(data []float32, negInf bool) (int, float32) {
	// Only an all-ones exponent is NaN or an infinity: test the bits,
	// which is several times faster than classifying each value (a
	// prompt's keys and values are millions of them).
	for i, x := range data {
		if math.Float32bits(x)&0x7f800000 == 0x7f800000 && Refused(x, negInf) {
			return i, x
		}
	}
	return -1, 0
}
