package kernels_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/kernels"
)

// ConcatSeq puts past's rows before the new ones in every (batch, head),
// whatever the two layouts and dtypes, checked element by element against
// the coordinates each tensor's layout gives; inputs are never modified.
func TestConcatSeq(t *testing.T) {
	type side struct {
		layout kernels.Layout
		dt     kernels.DType
		n      int
	}
	for i, c := range []struct {
		name      string
		rank      int
		b, h, d   int
		past, cur side
	}{
		{"rank2", 2, 1, 1, 3, side{kernels.BHND, kernels.Float32, 4}, side{kernels.BHND, kernels.Float32, 1}},
		{"rank3/bnhd", 3, 1, 2, 5, side{kernels.BNHD, kernels.Float32, 3}, side{kernels.BNHD, kernels.Float32, 2}},
		{"rank4/bhnd", 4, 2, 3, 4, side{kernels.BHND, kernels.Float32, 5}, side{kernels.BHND, kernels.Float32, 3}},
		{"rank4/bhnd-past/bnhd-new", 4, 2, 3, 8, side{kernels.BHND, kernels.Float32, 12}, side{kernels.BNHD, kernels.Float32, 6}},
		{"rank4/bnhd-past/bhnd-new", 4, 2, 1, 2, side{kernels.BNHD, kernels.Float32, 2}, side{kernels.BHND, kernels.Float32, 7}},
		{"rank3/mixed", 3, 1, 4, 2, side{kernels.BHND, kernels.Float32, 1}, side{kernels.BNHD, kernels.Float32, 1}},
		{"empty past", 4, 2, 2, 4, side{kernels.BHND, kernels.Float32, 0}, side{kernels.BNHD, kernels.Float32, 3}},
		{"empty new", 4, 2, 2, 4, side{kernels.BNHD, kernels.Float32, 3}, side{kernels.BNHD, kernels.Float32, 0}},
		{"float16", 4, 1, 2, 3, side{kernels.BHND, kernels.Float16, 3}, side{kernels.BNHD, kernels.Float16, 2}},
		{"bfloat16", 4, 2, 2, 3, side{kernels.BNHD, kernels.BFloat16, 1}, side{kernels.BNHD, kernels.BFloat16, 1}},
		{"float32 past, float16 new", 4, 1, 2, 3, side{kernels.BHND, kernels.Float32, 4}, side{kernels.BNHD, kernels.Float16, 2}},
		{"float16 past, float32 new", 3, 1, 2, 3, side{kernels.BNHD, kernels.Float16, 4}, side{kernels.BNHD, kernels.Float32, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			make := func(s side) *kernels.Tensor {
				shape := []int{c.b, c.h, s.n, c.d}
				if s.layout == kernels.BNHD {
					shape = []int{c.b, s.n, c.h, c.d}
				}
				x := randTensor(rng, s.layout, shape[4-c.rank:]...)
				if s.dt != kernels.Float32 {
					var err error
					if x, err = x.Convert(s.dt); err != nil {
						t.Fatal(err)
					}
				}
				return x
			}
			past, cur := make(c.past), make(c.cur)
			past0, cur0 := clone(past), clone(cur)
			got, err := kernels.ConcatSeq(past, cur)
			if err != nil {
				t.Fatal(err)
			}
			if !same(past, past0) || !same(cur, cur0) {
				t.Fatal("ConcatSeq modified an input")
			}
			n := c.past.n + c.cur.n
			if b, h, gn, d := operand.Dims(got.Shape, got.Layout); len(got.Shape) != c.rank || b != c.b || h != c.h || gn != n || d != c.d {
				t.Fatalf("shape %v (%v), want rank %d B=%d H=%d N=%d D=%d", got.Shape, got.Layout, c.rank, c.b, c.h, n, c.d)
			}
			if got.Layout != c.cur.layout || got.DType != c.cur.dt {
				t.Fatalf("%v %v, want the new rows' %v %v", got.Layout, got.DType, c.cur.layout, c.cur.dt)
			}
			// at is element (b, h, i, e) of x by its own layout.
			at := func(x *kernels.Tensor, b, h, i, e int) float32 {
				_, hs, ns, ds := operand.Dims(x.Shape, x.Layout)
				return x.Float32s()[backend.TensorStrides(x.Layout, hs, ns, ds).Offset(b, h, i)+e]
			}
			for b := range c.b {
				for h := range c.h {
					for i := range n {
						for e := range c.d {
							var want float32
							switch {
							case i < c.past.n && c.cur.dt.Half():
								want = c.cur.dt.Decode(c.cur.dt.Encode(at(past, b, h, i, e)))
							case i < c.past.n:
								want = at(past, b, h, i, e)
							default:
								want = at(cur, b, h, i-c.past.n, e)
							}
							if g := at(got, b, h, i, e); g != want {
								t.Fatalf("(%d, %d, %d, %d) = %v, want %v", b, h, i, e, g, want)
							}
						}
					}
				}
			}
		})
	}
}

// A nil past copies the new rows; every mismatch is an error naming both
// shapes, and a past value the new rows' dtype cannot hold is refused.
func TestConcatSeqErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cur := randTensor(rng, kernels.BHND, 2, 3, 4, 8)
	got, err := kernels.ConcatSeq(nil, cur)
	if err != nil || !slices.Equal(got.Data, cur.Data) || !slices.Equal(got.Shape, cur.Shape) || &got.Data[0] == &cur.Data[0] {
		t.Errorf("nil past: %v, %v; want a copy of the new rows", got, err)
	}
	half, err := cur.Convert(kernels.Float16)
	if err != nil {
		t.Fatal(err)
	}
	big := randTensor(rng, kernels.BHND, 2, 3, 1, 8)
	big.Data[5] = 1e6
	for _, c := range []struct {
		name      string
		past, cur *kernels.Tensor
		err       error
		msg       string
	}{
		{"nil new", cur, nil, backend.ErrShape, "new rows is nil"},
		{"ranks", randTensor(rng, kernels.BHND, 3, 4, 8), cur, backend.ErrShape, "rank 3"},
		{"rank 1", &kernels.Tensor{Shape: []int{4}, Data: make([]float32, 4)}, &kernels.Tensor{Shape: []int{4}, Data: make([]float32, 4)}, backend.ErrShape, "rank 1"},
		{"batch", randTensor(rng, kernels.BHND, 1, 3, 4, 8), cur, backend.ErrShape, "past of shape [1 3 4 8] (BHND: B=1 H=3 D=8) does not extend the new rows of shape [2 3 4 8] (BHND: B=2 H=3 D=8)"},
		{"heads", randTensor(rng, kernels.BHND, 2, 2, 4, 8), cur, backend.ErrShape, "H=2"},
		{"dim", randTensor(rng, kernels.BHND, 2, 3, 4, 7), cur, backend.ErrShape, "D=7"},
		{"layout read", randTensor(rng, kernels.BNHD, 2, 3, 4, 8), cur, backend.ErrShape, "BNHD: B=2 H=4 D=8"},
		{"short data", &kernels.Tensor{Shape: []int{2, 3, 4, 8}, Data: make([]float32, 5)}, cur, backend.ErrShape, "needs 192 elements, has 5"},
		{"overflow into float16", big, half, backend.ErrNonFinite, "past"},
	} {
		_, err := kernels.ConcatSeq(c.past, c.cur)
		if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %v containing %q", c.name, err, c.err, c.msg)
		}
	}
	if _, err := kernels.ConcatSeq(&kernels.Tensor{Shape: []int{math.MaxInt / 2, 0}}, &kernels.Tensor{Shape: []int{math.MaxInt/2 + 2, 0}}); !errors.Is(err, backend.ErrTooLarge) {
		t.Errorf("rows overflowing int: %v, want ErrTooLarge", err)
	}
}
