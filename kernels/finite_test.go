package kernels

import (
	"math"
	"testing"
)

// TestFirstBad checks the input policy over each dtype: NaN and the
// infinities are refused, but for −Inf in a bias (a hidden key).
func TestFirstBad(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, c := range []struct {
		name  string
		data  []float32
		bias  bool
		dt    DType
		index int
	}{
		{"empty", nil, false, Float32, -1},
		{"finite", []float32{1, -2, 3}, false, Float32, -1},
		{"NaN", []float32{1, nan, 3}, false, Float32, 1},
		{"+Inf", []float32{1, 2, inf}, false, Float32, 2},
		{"-Inf in an operand", []float32{-inf, 2}, false, Float32, 0},
		{"-Inf in a bias hides a key", []float32{-inf, 2}, true, Float32, -1},
		{"+Inf in a bias", []float32{-inf, inf}, true, Float32, 1},
		{"NaN in float16", []float32{0, 0, nan}, false, Float16, 2},
		{"-Inf in a bfloat16 bias", []float32{-inf, 1}, true, BFloat16, -1},
	} {
		x := &Tensor{Shape: []int{len(c.data)}, Data: c.data}
		if c.dt != Float32 {
			var err error
			if x, err = x.Convert(c.dt); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		if i, v := firstBad(x, c.bias); i != c.index {
			t.Errorf("%s: firstBad = %d (%v), want %d", c.name, i, v, c.index)
		}
	}
}
