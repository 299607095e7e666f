package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// TestAttentionGrad: AttentionGrad on the CPU gives backendtest's float64
// gradients (ReferenceGrad) within 1e-4 of each tensor's largest, in
// both layouts and rank 3, with GQA, causal masking, sinks and softcap;
// it refuses what the backward pass does not take, a wrong dOut and a
// backend without one.
func TestAttentionGrad(t *testing.T) {
	ctx := context.Background()
	be := openCPU(t)
	for _, c := range []struct {
		name   string
		layout kernels.Layout
		qs, ks []int
		opts   kernels.Options
	}{
		{"bhnd", kernels.BHND, []int{2, 4, 70, 16}, []int{2, 2, 90, 16}, kernels.Options{Causal: true}},
		{"bnhd", kernels.BNHD, []int{1, 33, 4, 8}, []int{1, 140, 1, 8}, kernels.Options{Softcap: 3, Sinks: []float32{0, 1, -1, 0.5}}},
		{"rank3", kernels.BHND, []int{2, 20, 8}, []int{2, 30, 8}, kernels.Options{Scale: 0.5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(67, uint64(len(c.qs))))
			q, k, v := randTensor(rng, c.layout, c.qs...), randTensor(rng, c.layout, c.ks...), randTensor(rng, c.layout, c.ks...)
			dOut := randTensor(rng, c.layout, c.qs...)
			g, err := kernels.AttentionGrad(ctx, be, q, k, v, dOut, &c.opts)
			if err != nil {
				t.Fatal(err)
			}
			// The same problem as backendtest states it.
			p := backend.Problem{B: 1, H: 1, KVHeads: 1, Layout: c.layout, Causal: c.opts.Causal, Scale: float32(c.opts.Scale),
				Variants: backend.Variants{Softcap: float32(c.opts.Softcap), Sinks: c.opts.Sinks}}
			dims := func(s []int) (b, h, n, d int) {
				if len(s) == 3 {
					return 1, s[0], s[1], s[2]
				}
				if c.layout == kernels.BNHD {
					return s[0], s[2], s[1], s[3]
				}
				return s[0], s[1], s[2], s[3]
			}
			var kvh int
			p.B, p.H, p.Nq, p.D = dims(c.qs)
			_, kvh, p.Nk, _ = dims(c.ks)
			p.KVHeads = kvh
			want := backendtest.ReferenceGrad(backendtest.Case{Problem: p, Q: q.Data, K: k.Data, V: v.Data}, dOut.Data)
			for _, cmp := range []struct {
				name string
				got  []float32
				want []float64
			}{{"dQ", g.DQ.Data, want.DQ}, {"dK", g.DK.Data, want.DK}, {"dV", g.DV.Data, want.DV}, {"dSinks", g.DSinks, want.DSinks}} {
				if err := backendtest.NearGrad(cmp.name, cmp.got, cmp.want, 1e-4); err != nil {
					t.Fatal(err)
				}
			}
			if !equalShape(g.DQ.Shape, q.Shape) || !equalShape(g.DK.Shape, k.Shape) || !equalShape(g.DV.Shape, v.Shape) {
				t.Errorf("shapes %v %v %v, want %v %v %v", g.DQ.Shape, g.DK.Shape, g.DV.Shape, q.Shape, k.Shape, v.Shape)
			}
		})
	}

	rng := rand.New(rand.NewPCG(68, 0))
	q, k := randTensor(rng, kernels.BHND, 1, 2, 4, 8), randTensor(rng, kernels.BHND, 1, 2, 5, 8)
	dOut := randTensor(rng, kernels.BHND, 1, 2, 4, 8)
	for _, c := range []struct {
		name string
		be   backend.Backend
		d    *kernels.Tensor
		opts kernels.Options
		want error
	}{
		{"bias", be, dOut, kernels.Options{Bias: randTensor(rng, kernels.BHND, 1, 1, 4, 5)}, backend.ErrUnsupported},
		{"weights", be, dOut, kernels.Options{Weights: true}, backend.ErrUnsupported},
		{"dOut shape", be, randTensor(rng, kernels.BHND, 1, 2, 3, 8), kernels.Options{}, backend.ErrShape},
		{"no backward", noBackward{be}, dOut, kernels.Options{}, backend.ErrUnsupported},
	} {
		if _, err := kernels.AttentionGrad(context.Background(), c.be, q, k, k, c.d, &c.opts); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// noBackward hides a backend's backward pass.
type noBackward struct{ backend.Backend }

func equalShape(a, b []int) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// A one-layer attention model trained by plain gradient descent: the
// queries are its parameters, the target is the output of other queries
// over the same keys and values, and the loss ½‖O − T‖² falls by orders
// of magnitude in 200 steps.
func ExampleAttentionGrad() {
	be, err := cpu.New()
	if err != nil {
		panic(err)
	}
	defer be.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	rnd := func(shape ...int) *kernels.Tensor {
		t, _ := kernels.NewTensor(kernels.BHND, shape...)
		for i := range t.Data {
			t.Data[i] = float32(rng.NormFloat64())
		}
		return t
	}
	k, v := rnd(1, 2, 16, 8), rnd(1, 2, 16, 8)
	target, err := kernels.Attention(ctx, be, rnd(1, 2, 4, 8), k, v, nil)
	if err != nil {
		panic(err)
	}
	q := rnd(1, 2, 4, 8) // the parameters
	loss := func() (float64, *kernels.Tensor) {
		res, err := kernels.Attention(ctx, be, q, k, v, nil)
		if err != nil {
			panic(err)
		}
		dOut := res.Out // ∂L/∂O = O − T
		l := 0.0
		for i, o := range res.Out.Data {
			d := o - target.Out.Data[i]
			dOut.Data[i] = d
			l += 0.5 * float64(d) * float64(d)
		}
		return l, dOut
	}
	first, _ := loss()
	for range 200 {
		_, dOut := loss()
		g, err := kernels.AttentionGrad(ctx, be, q, k, v, dOut, nil)
		if err != nil {
			panic(err)
		}
		for i, d := range g.DQ.Data {
			q.Data[i] -= 0.5 * d
		}
	}
	last, _ := loss()
	fmt.Printf("loss fell by more than 10×: %v\n", last < first/10)
	// Output:
	// loss fell by more than 10×: true
}
