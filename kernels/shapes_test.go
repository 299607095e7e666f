package kernels_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// Shapes.Check returns the problem Attention runs and refuses what
// Attention refuses before reading data, naming the operands as told.
func TestShapesCheck(t *testing.T) {
	s := kernels.Shapes{Q: []int{2, 4, 3, 8}, K: []int{2, 2, 5, 8}, V: []int{2, 2, 5, 6}, Bias: []int{3, 5}, Mask: []int{2, 1, 1, 5}}
	p, err := s.Check(&kernels.Options{Causal: true})
	if err != nil {
		t.Fatal(err)
	}
	want := backend.Problem{B: 2, H: 4, KVHeads: 2, Nq: 3, Nk: 5, D: 8, Dv: 6, Scale: float32(1 / math.Sqrt(8)), Causal: true}
	if p.B != want.B || p.H != want.H || p.KVHeads != want.KVHeads || p.Nq != want.Nq || p.Nk != want.Nk ||
		p.D != want.D || p.Dv != want.Dv || p.Scale != want.Scale || !p.Causal {
		t.Errorf("Check = %+v, want %+v", p, want)
	}
	if p, err := (kernels.Shapes{Q: []int{5, 3, 4}, K: []int{7, 1, 4}, V: []int{7, 1, 2}, Layout: kernels.BNHD}).Check(nil); err != nil ||
		p.B != 1 || p.H != 3 || p.KVHeads != 1 || p.Nq != 5 || p.Nk != 7 || p.Dv != 2 || p.Layout != kernels.BNHD {
		t.Errorf("BNHD rank 3 with nil options: %+v, %v", p, err)
	}
	named := func(f func(s *kernels.Shapes)) kernels.Shapes {
		s := kernels.Shapes{Q: []int{3, 8}, K: []int{5, 8}, V: []int{5, 8},
			Names: kernels.OperandNames{Q: "q.npy", K: "k.npy", V: "v.npy", Bias: "bias b.npy", Mask: "mask m.npy"}}
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		s    kernels.Shapes
		opts *kernels.Options
		err  error
		want string
	}{
		{"rank", named(func(s *kernels.Shapes) { s.V = []int{5} }), nil, backend.ErrShape, "v.npy has rank 1"},
		{"ranks differ", named(func(s *kernels.Shapes) { s.K = []int{1, 5, 8} }), nil, backend.ErrShape, "q.npy has rank 2 but k.npy has rank 3"},
		{"head dims", named(func(s *kernels.Shapes) { s.K = []int{5, 7} }), nil, backend.ErrShape, "q.npy has D=8, k.npy has D=7"},
		{"key counts", named(func(s *kernels.Shapes) { s.V = []int{4, 8} }), nil, backend.ErrShape, "k.npy has N=5 keys but v.npy has N=4 values"},
		{"bias", named(func(s *kernels.Shapes) { s.Bias = []int{2, 5} }), nil, backend.ErrShape, "bias b.npy of shape [2 5] does not broadcast to [B=1, H=1, Nq=3, Nk=5]: its Nq dimension is 2"},
		{"mask rank", named(func(s *kernels.Shapes) { s.Mask = []int{1, 1, 1, 3, 5} }), nil, backend.ErrShape, "mask m.npy has rank 5"},
		{"overflow", named(func(s *kernels.Shapes) { s.Q = []int{1 << 62, 1 << 62} }), nil, backend.ErrTooLarge, "q.npy"},
		{"variant", named(func(*kernels.Shapes) {}), &kernels.Options{Softcap: -1}, backend.ErrShape, "softcap -1"},
		{"key lengths", named(func(*kernels.Shapes) {}), &kernels.Options{KVLens: []int{6}}, backend.ErrShape, "batch 0 has 6, want 0 … Nk=5"},
		{"scale", named(func(*kernels.Shapes) {}), &kernels.Options{Scale: math.Inf(1)}, backend.ErrShape, "scale +Inf"},
		{"NaN softcap", named(func(*kernels.Shapes) {}), &kernels.Options{Softcap: math.NaN()}, backend.ErrShape, "softcap NaN is not a finite float32"},
		{"softcap past float32", named(func(*kernels.Shapes) {}), &kernels.Options{Softcap: 1e39}, backend.ErrShape, "softcap 1e+39 is not a finite float32"},
		{"causal offset without causal", named(func(*kernels.Shapes) {}), &kernels.Options{CausalOffset: new(int)}, backend.ErrShape, "CausalOffset 0 without Causal"},
		{"stage", named(func(*kernels.Shapes) {}), &kernels.Options{ScoresStage: 9}, backend.ErrShape, "unknown score stage"},
	} {
		_, err := tc.s.Check(tc.opts)
		if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %v containing %q", tc.name, err, tc.err, tc.want)
		}
	}
}
