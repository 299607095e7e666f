package operand

import (
	"math"
	"testing"

	"github.com/attn-go/attn/backend"
)

func TestNpyShape(t *testing.T) {
	for _, tt := range []struct {
		shape []int
		want  string
	}{{nil, "()"}, {[]int{3}, "(3,)"}, {[]int{2, 3}, "(2, 3)"}, {[]int{1, 0, 4}, "(1, 0, 4)"}} {
		if got := NpyShape(tt.shape); got != tt.want {
			t.Errorf("NpyShape(%v) = %q, want %q", tt.shape, got, tt.want)
		}
	}
}

func TestDims(t *testing.T) {
	for _, tt := range []struct {
		shape  []int
		layout backend.Layout
		want   [4]int
	}{
		{[]int{5, 8}, backend.BHND, [4]int{1, 1, 5, 8}},
		{[]int{3, 5, 8}, backend.BHND, [4]int{1, 3, 5, 8}},
		{[]int{5, 3, 8}, backend.BNHD, [4]int{1, 3, 5, 8}},
		{[]int{2, 3, 5, 8}, backend.BHND, [4]int{2, 3, 5, 8}},
		{[]int{2, 5, 3, 8}, backend.BNHD, [4]int{2, 3, 5, 8}},
	} {
		b, h, n, d := Dims(tt.shape, tt.layout)
		if got := [4]int{b, h, n, d}; got != tt.want {
			t.Errorf("Dims(%v, %v) = %v, want %v", tt.shape, tt.layout, got, tt.want)
		}
	}
}

func TestFirstRefused(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, tt := range []struct {
		data   []float32
		negInf bool
		want   int
	}{
		{nil, false, -1},
		{[]float32{1, -2, 3}, false, -1},
		{[]float32{1, nan, 3}, false, 1},
		{[]float32{1, 2, inf}, false, 2},
		{[]float32{-inf, 2}, false, 0},
		{[]float32{-inf, 2}, true, -1},
		{[]float32{-inf, inf}, true, 1},
	} {
		if i, x := FirstRefused(tt.data, tt.negInf); i != tt.want {
			t.Errorf("FirstRefused(%v, %v) = %d (%v), want %d", tt.data, tt.negInf, i, x, tt.want)
		}
	}
}
