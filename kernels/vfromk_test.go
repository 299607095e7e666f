package kernels_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// noVFromK is a backend that does not claim Caps.VFromK: Attention must
// then give it V as a view of K.
type noVFromK struct{ backend.Backend }

func (b noVFromK) Caps() backend.Caps {
	c := b.Backend.Caps()
	c.VFromK = false
	return c
}

// TestAttentionVFromK takes V as K's first Dv columns (Options.VFromK,
// MLA's latent cache) on every backend, with K dense, strided and packed,
// in both layouts and strategies, and compares the result with the same
// call given V as a dense copy of those columns; a backend without
// Caps.VFromK gets V as a view. K's storage is left as it was.
func TestAttentionVFromK(t *testing.T) {
	ctx := context.Background()
	offset0 := 0
	cases := []struct {
		name     string
		layout   kernels.Layout
		dt       kernels.DType
		q, k     []int
		grow     []int // K's padding (a strided view), or nil
		dv       int
		opts     kernels.Options
		seqs     bool
		strategy kernels.Strategy
	}{
		{name: "mqa decode BNHD", layout: kernels.BNHD, q: []int{1, 1, 16, 72}, k: []int{1, 300, 1, 72}, dv: 64, opts: kernels.Options{Causal: true, Scale: 0.125}},
		{name: "gqa prefill BHND", layout: kernels.BHND, q: []int{2, 4, 33, 20}, k: []int{2, 2, 33, 20}, dv: 12, opts: kernels.Options{Causal: true}},
		{name: "dv = d", layout: kernels.BHND, q: []int{1, 2, 5, 8}, k: []int{1, 2, 9, 8}, dv: 8},
		{name: "odd dims f16", layout: kernels.BNHD, dt: kernels.Float16, q: []int{1, 7, 4, 17}, k: []int{1, 30, 2, 17}, dv: 9, opts: kernels.Options{Causal: true, CausalOffset: &offset0}},
		{name: "strided K", layout: kernels.BNHD, q: []int{2, 3, 4, 32}, k: []int{2, 40, 2, 32}, grow: []int{2, 4, 2, 8}, dv: 16, opts: kernels.Options{Softcap: 20}},
		{name: "staged", layout: kernels.BHND, q: []int{1, 4, 6, 24}, k: []int{1, 1, 50, 24}, dv: 16, strategy: kernels.Staged, opts: kernels.Options{Weights: true}},
		{name: "packed", layout: kernels.BNHD, q: []int{8, 4, 32}, k: []int{20, 1, 32}, dv: 16, seqs: true,
			opts: kernels.Options{Causal: true, CuSeqlensQ: []int{0, 3, 8}, CuSeqlensK: []int{0, 12, 20}}},
	}
	for _, bk := range stridesBackends {
		for _, wrap := range []bool{false, true} {
			name := bk.name
			if wrap {
				name += " without Caps.VFromK"
			}
			t.Run(name, func(t *testing.T) {
				be := bk.open(t)
				if wrap {
					be = noVFromK{be}
				}
				for n, c := range cases {
					t.Run(c.name, func(t *testing.T) {
						if c.seqs && !be.Caps().Seqs {
							t.Skip("no Caps.Seqs")
						}
						rng := rand.New(rand.NewPCG(56, uint64(n)))
						grow := c.grow
						if grow == nil {
							grow = make([]int, len(c.k))
						}
						q := padded(t, rng, c.dt, c.layout, c.q, make([]int, len(c.q)))
						k := padded(t, rng, c.dt, c.layout, c.k, grow)
						before := storage(k)
						opts := c.opts
						opts.Strategy = c.strategy
						opts.LSE = !opts.Weights
						opts.VFromK = c.dv
						got, err := kernels.Attention(ctx, be, q, k, nil, &opts)
						if err != nil {
							t.Fatal(err)
						}
						v, err := k.Slice(len(c.k)-1, 0, c.dv)
						if err != nil {
							t.Fatal(err)
						}
						opts.VFromK = 0
						want, err := kernels.Attention(ctx, be, dense(t, q), dense(t, k), dense(t, v), &opts)
						if err != nil {
							t.Fatal(err)
						}
						if got.Out.Shape[len(got.Out.Shape)-1] != c.dv {
							t.Fatalf("out of shape %v, want a last dimension of %d", got.Out.Shape, c.dv)
						}
						sameOut(t, got, want, 1e-6)
						if want.Weights != nil && !slices.Equal(got.Weights.Float32s(), want.Weights.Float32s()) {
							t.Errorf("weights differ from the dense V's")
						}
						if !slices.Equal(storage(k), before) {
							t.Errorf("Attention changed K's storage")
						}
					})
				}
			})
		}
	}
}

// TestAttentionVFromKRefused: bad uses of Options.VFromK are errors
// wrapping backend.ErrShape that name the sizes, before any work.
func TestAttentionVFromKRefused(t *testing.T) {
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(56, 99))
	q := randTensor(rng, kernels.BNHD, 1, 2, 4, 16)
	k := randTensor(rng, kernels.BNHD, 1, 5, 1, 16)
	v := randTensor(rng, kernels.BNHD, 1, 5, 1, 16)
	for _, c := range []struct {
		name string
		v    *kernels.Tensor
		dv   int
		want string
	}{
		{"v given", v, 8, "v must be nil"},
		{"dv past D", nil, 17, "first 17 columns: K of shape [1 5 1 16] has 16"},
		{"negative", nil, -1, "Options.VFromK is -1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := kernels.Attention(context.Background(), be, q, k, c.v, &kernels.Options{VFromK: c.dv})
			if !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an ErrShape saying %q", err, c.want)
			}
		})
	}
}
