package kernels_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/kernels"
)

// transpose returns a copy of the [r, c] matrix w as [c, r].
func transpose(w *kernels.Tensor) *kernels.Tensor {
	r, c := w.Shape[0], w.Shape[1]
	t, err := kernels.NewTensor(w.Layout, c, r)
	if err != nil {
		panic(err)
	}
	for i := range r {
		for j := range c {
			t.Data[j*r+i] = w.Data[i*c+j]
		}
	}
	return t
}

// TestLinearOutIn holds a PyTorch-layout weight ([Out, In], y = x·Wᵀ + b)
// to the same weight transposed into the default [In, Out] layout, over
// sizes around the edges.
func TestLinearOutIn(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 2}, {7, 1, 9}, {4, 16, 33}, {0, 4, 3}, {2, 0, 3}, {5, 3, 0}} {
		rows, in, out := sz[0], sz[1], sz[2]
		x := randTensor(rng, kernels.BHND, 2, rows, in)
		w := randTensor(rng, kernels.BHND, in, out)
		b := make([]float32, out)
		for i := range b {
			b[i] = float32(rng.Float64())
		}
		want, err := kernels.Linear{W: w, B: b}.Apply(x)
		if err != nil {
			t.Fatalf("%v: InOut: %v", sz, err)
		}
		wt := transpose(w)
		before := slices.Clone(wt.Data)
		got, err := kernels.Linear{W: wt, B: b, Layout: kernels.OutIn}.Apply(x)
		if err != nil {
			t.Fatalf("%v: OutIn: %v", sz, err)
		}
		if !slices.Equal(got.Shape, want.Shape) {
			t.Fatalf("%v: shape %v, want %v", sz, got.Shape, want.Shape)
		}
		for i := range want.Data {
			if backendtest.Exceeds(math.Abs(float64(got.Data[i]-want.Data[i])), 1e-6) {
				t.Fatalf("%v: y[%d] = %v, want %v", sz, i, got.Data[i], want.Data[i])
			}
		}
		if !slices.Equal(wt.Data, before) {
			t.Fatalf("%v: Apply modified W", sz)
		}
	}
}

// TestLinearLayoutErrors checks that a shape error says which layout the
// weight was read in.
func TestLinearLayoutErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	x := randTensor(rng, kernels.BHND, 3, 4)
	for _, tt := range []struct {
		name string
		l    kernels.Linear
		want string
	}{
		{"InOut wrong In", kernels.Linear{W: randTensor(rng, kernels.BHND, 5, 4)}, "[In, Out]"},
		{"OutIn wrong In", kernels.Linear{W: randTensor(rng, kernels.BHND, 4, 5), Layout: kernels.OutIn}, "[Out, In]"},
		{"OutIn bias length", kernels.Linear{W: randTensor(rng, kernels.BHND, 2, 4), B: make([]float32, 4), Layout: kernels.OutIn}, "needs 2"},
		{"unknown layout", kernels.Linear{W: randTensor(rng, kernels.BHND, 4, 4), Layout: 7}, "WeightLayout(7)"},
	} {
		_, err := tt.l.Apply(x)
		if !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrShape naming %q", tt.name, err, tt.want)
		}
	}
}

// TestMultiHeadOutIn runs MultiHead with every projection in PyTorch's
// layout against the same weights transposed.
func TestMultiHeadOutIn(t *testing.T) {
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(25, 26))
	const n, dm, heads, kvh, d = 5, 8, 4, 2, 2
	x := randTensor(rng, kernels.BHND, n, dm)
	lin := func(in, out int) kernels.Linear {
		return kernels.Linear{W: randTensor(rng, kernels.BHND, in, out), B: make([]float32, out)}
	}
	torch := func(l kernels.Linear) kernels.Linear {
		return kernels.Linear{W: transpose(l.W), B: l.B, Layout: kernels.OutIn}
	}
	a := &kernels.MultiHead{Heads: heads, KVHeads: kvh, Q: lin(dm, heads*d), K: lin(dm, kvh*d), V: lin(dm, kvh*d), O: lin(heads*d, 3)}
	b := &kernels.MultiHead{Heads: heads, KVHeads: kvh, Q: torch(a.Q), K: torch(a.K), V: torch(a.V), O: torch(a.O)}
	ra, err := a.Forward(context.Background(), be, x, nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.Forward(context.Background(), be, x, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ra.Out.Data {
		if backendtest.Exceeds(math.Abs(float64(ra.Out.Data[i]-rb.Out.Data[i])), 1e-6) {
			t.Fatalf("y[%d] = %v with OutIn weights, %v with InOut", i, rb.Out.Data[i], ra.Out.Data[i])
		}
	}
}
