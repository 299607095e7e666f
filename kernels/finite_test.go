package kernels_test

import (
	"math"
	"testing"

	"github.com/attn-go/attn/kernels"
)

func TestNonFinite(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, c := range []struct {
		name  string
		data  []float32
		bias  bool
		dt    kernels.DType
		index int
	}{
		{"empty", nil, false, kernels.Float32, -1},
		{"finite", []float32{1, -2, 3}, false, kernels.Float32, -1},
		{"NaN", []float32{1, nan, 3}, false, kernels.Float32, 1},
		{"+Inf", []float32{1, 2, inf}, false, kernels.Float32, 2},
		{"-Inf in an operand", []float32{-inf, 2}, false, kernels.Float32, 0},
		{"-Inf in a bias hides a key", []float32{-inf, 2}, true, kernels.Float32, -1},
		{"+Inf in a bias", []float32{-inf, inf}, true, kernels.Float32, 1},
		{"NaN in float16", []float32{0, 0, nan}, false, kernels.Float16, 2},
		{"-Inf in a bfloat16 bias", []float32{-inf, 1}, true, kernels.BFloat16, -1},
	} {
		x := &kernels.Tensor{Shape: []int{len(c.data)}, Data: c.data}
		if c.dt != kernels.Float32 {
			var err error
			if x, err = x.Convert(c.dt); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		if i, v := kernels.NonFinite(x, c.bias); i != c.index {
			t.Errorf("%s: NonFinite = %d (%v), want %d", c.name, i, v, c.index)
		}
	}
}
