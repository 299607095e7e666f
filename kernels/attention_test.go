package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

func openCPU(t testing.TB) backend.Backend {
	t.Helper()
	be, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

func randTensor(rng *rand.Rand, layout kernels.Layout, shape ...int) *kernels.Tensor {
	t, err := kernels.NewTensor(layout, shape...)
	if err != nil {
		panic(err)
	}
	for i := range t.Data {
		t.Data[i] = float32(rng.Float64()*2 - 1)
	}
	return t
}

// shape4 pads a right-aligned shape to [B, H, Nq, Nk] with ones.
func shape4(s []int) [4]int {
	out := [4]int{1, 1, 1, 1}
	copy(out[4-len(s):], s)
	return out
}

// closeTo reports the worst element of got against want under the
// suite's tolerance, relative to the largest |want|.
func closeTo(got []float32, want []float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("length %d, want %d", len(got), len(want))
	}
	scale := 1.0
	for _, w := range want {
		if !math.IsInf(w, 0) {
			scale = max(scale, math.Abs(w))
		}
	}
	for i, g := range got {
		w := want[i]
		if math.IsInf(w, -1) && math.IsInf(float64(g), -1) {
			continue
		}
		if backendtest.Exceeds(math.Abs(float64(g)-w), backendtest.Tol*scale) {
			return fmt.Errorf("element %d: got %v, want %v", i, g, w)
		}
	}
	return nil
}

// TestAttentionMatchesReference runs every option through the public API
// on the CPU backend and judges it by the float64 reference.
func TestAttentionMatchesReference(t *testing.T) {
	be := openCPU(t)
	type tc struct {
		name                 string
		rank                 int
		layout               kernels.Layout
		b, h, kvh, nq, nk    int
		d, dv                int
		causal               bool
		scale                float64
		bias, mask           []int // right-aligned shapes, nil for none
		strategy             kernels.Strategy
		weights, lse, scores bool
	}
	cases := []tc{
		{name: "rank2", rank: 2, b: 1, h: 1, kvh: 1, nq: 7, nk: 7, d: 5, dv: 5},
		{name: "rank2/cross/fused", rank: 2, b: 1, h: 1, kvh: 1, nq: 3, nk: 70, d: 16, dv: 8, strategy: kernels.Fused, lse: true},
		{name: "rank3/gqa", rank: 3, b: 1, h: 4, kvh: 2, nq: 9, nk: 11, d: 8, dv: 8, weights: true, lse: true},
		{name: "rank3/bnhd", rank: 3, layout: kernels.BNHD, b: 1, h: 2, kvh: 1, nq: 9, nk: 11, d: 8, dv: 3},
		{name: "rank4/causal/bias2d", rank: 4, b: 2, h: 2, kvh: 2, nq: 33, nk: 33, d: 40, dv: 40, causal: true, bias: []int{33, 33}},
		{name: "rank4/causal/decode", rank: 4, b: 2, h: 4, kvh: 1, nq: 1, nk: 100, d: 64, dv: 64, causal: true, strategy: kernels.Fused, lse: true},
		{name: "rank4/causal/nq>nk", rank: 4, b: 1, h: 2, kvh: 2, nq: 12, nk: 5, d: 8, dv: 8, causal: true, lse: true, weights: true},
		{name: "rank4/keypadding", rank: 4, b: 2, h: 2, kvh: 2, nq: 10, nk: 12, d: 8, dv: 8, mask: []int{2, 1, 1, 12}, strategy: kernels.Fused},
		{name: "rank4/mask+bias/bnhd", rank: 4, layout: kernels.BNHD, b: 2, h: 4, kvh: 2, nq: 10, nk: 12, d: 80, dv: 24, mask: []int{10, 12}, bias: []int{2, 4, 1, 12}, scores: true, weights: true},
		{name: "rank4/scale1/staged-large", rank: 4, b: 1, h: 1, kvh: 1, nq: 300, nk: 300, d: 16, dv: 16, scale: 1, strategy: kernels.Staged},
		{name: "rank4/negative-scale", rank: 4, b: 1, h: 2, kvh: 2, nq: 65, nk: 129, d: 3, dv: 5, scale: -0.7, strategy: kernels.Fused},
		{name: "empty-queries", rank: 4, b: 1, h: 2, kvh: 2, nq: 0, nk: 4, d: 8, dv: 8, lse: true},
		{name: "no-keys", rank: 3, b: 1, h: 2, kvh: 2, nq: 3, nk: 0, d: 8, dv: 8, lse: true, strategy: kernels.Fused},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			shapeOf := func(heads, n, dim int) []int {
				s := []int{c.b, heads, n, dim}
				if c.layout == kernels.BNHD {
					s = []int{c.b, n, heads, dim}
				}
				return s[4-c.rank:]
			}
			q := randTensor(rng, c.layout, shapeOf(c.h, c.nq, c.d)...)
			k := randTensor(rng, c.layout, shapeOf(c.kvh, c.nk, c.d)...)
			v := randTensor(rng, c.layout, shapeOf(c.kvh, c.nk, c.dv)...)
			opts := &kernels.Options{Scale: c.scale, Causal: c.causal, Strategy: c.strategy, Weights: c.weights, LSE: c.lse, Scores: c.scores}
			ref := backendtest.Case{
				Problem: backend.Problem{B: c.b, H: c.h, KVHeads: c.kvh, Nq: c.nq, Nk: c.nk, D: c.d, Dv: c.dv,
					Layout: c.layout, Causal: c.causal, Scale: float32(c.scale)},
				Q: q.Data, K: k.Data, V: v.Data,
			}
			if c.scale == 0 {
				ref.Scale = float32(1 / math.Sqrt(float64(c.d)))
			}
			if c.bias != nil {
				opts.Bias = randTensor(rng, kernels.BHND, c.bias...)
				opts.Bias.Data[0] = float32(math.Inf(-1))
				ref.Bias = &backendtest.HostMask{Shape: shape4(c.bias), Data: opts.Bias.Data}
			}
			if c.mask != nil {
				n := 1
				for _, s := range c.mask {
					n *= s
				}
				opts.Mask = &kernels.Mask{Shape: c.mask, Keep: make([]bool, n)}
				keep := make([]float32, n)
				for j := range keep {
					if rng.Float64() < 0.7 {
						opts.Mask.Keep[j] = true
						keep[j] = 1
					}
				}
				ref.Keep = &backendtest.HostMask{Shape: shape4(c.mask), Data: keep}
			}
			inputs := [][]float32{slices.Clone(q.Data), slices.Clone(k.Data), slices.Clone(v.Data)}

			res, err := kernels.Attention(context.Background(), be, q, k, v, opts)
			if err != nil {
				t.Fatal(err)
			}
			want := backendtest.Reference(ref)
			if err := closeTo(res.Out.Data, want.O); err != nil {
				t.Errorf("output: %v", err)
			}
			wantOut := append(shapeOf(c.h, c.nq, c.dv)[:0:0], shapeOf(c.h, c.nq, c.dv)...)
			if !slices.Equal(res.Out.Shape, wantOut) || res.Out.Layout != c.layout {
				t.Errorf("output shape %v %v, want %v %v", res.Out.Shape, res.Out.Layout, wantOut, c.layout)
			}
			matShape := []int{c.b, c.h, c.nq, c.nk}[4-c.rank:]
			if c.weights {
				if err := closeTo(res.Weights.Data, want.P); err != nil {
					t.Errorf("weights: %v", err)
				}
				if !slices.Equal(res.Weights.Shape, matShape) {
					t.Errorf("weights shape %v, want %v", res.Weights.Shape, matShape)
				}
			}
			if c.scores {
				if err := closeTo(res.Scores.Data, want.Scores); err != nil {
					t.Errorf("scores: %v", err)
				}
			}
			if c.lse {
				if err := closeTo(res.LSE.Data, want.LSE); err != nil {
					t.Errorf("lse: %v", err)
				}
				if !slices.Equal(res.LSE.Shape, matShape[:len(matShape)-1]) {
					t.Errorf("lse shape %v, want %v", res.LSE.Shape, matShape[:len(matShape)-1])
				}
			}
			if c.strategy != kernels.Auto && res.Strategy != c.strategy {
				t.Errorf("ran %v, asked for %v", res.Strategy, c.strategy)
			}
			for j, in := range []*kernels.Tensor{q, k, v} {
				if !slices.Equal(in.Data, inputs[j]) {
					t.Errorf("input %d was modified", j)
				}
			}
		})
	}
}

func TestAutoStrategy(t *testing.T) {
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(1, 2))
	small := randTensor(rng, kernels.BHND, 8, 4)
	large := randTensor(rng, kernels.BHND, 512, 4)
	for _, c := range []struct {
		name string
		x    *kernels.Tensor
		opts kernels.Options
		want kernels.Strategy
	}{
		{"small", small, kernels.Options{}, kernels.Staged},
		{"large", large, kernels.Options{}, kernels.Fused},
		{"large+weights", large, kernels.Options{Weights: true}, kernels.Staged},
		{"large+lse", large, kernels.Options{LSE: true}, kernels.Fused},
	} {
		res, err := kernels.Attention(context.Background(), be, c.x, c.x, c.x, &c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Strategy != c.want {
			t.Errorf("%s: auto ran %v, want %v", c.name, res.Strategy, c.want)
		}
	}
}

// TestBadInput checks that every malformed call is an error wrapping the
// right sentinel and naming the sizes, never a panic.
func TestBadInput(t *testing.T) {
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(3, 4))
	q := randTensor(rng, kernels.BHND, 2, 3, 5, 8)
	k := randTensor(rng, kernels.BHND, 2, 3, 6, 8)
	v := randTensor(rng, kernels.BHND, 2, 3, 6, 4)
	nan := randTensor(rng, kernels.BHND, 2, 3, 5, 8)
	nan.Data[17] = float32(math.NaN())
	inf := randTensor(rng, kernels.BHND, 2, 3, 6, 4)
	inf.Data[3] = float32(math.Inf(1))
	posInfBias := randTensor(rng, kernels.BHND, 5, 6)
	posInfBias.Data[2] = float32(math.Inf(1))
	for _, c := range []struct {
		name    string
		q, k, v *kernels.Tensor
		opts    *kernels.Options
		want    error
		msg     string
	}{
		{"nil Q", nil, k, v, nil, backend.ErrShape, "Q is nil"},
		{"rank 1", &kernels.Tensor{Shape: []int{8}, Data: make([]float32, 8)}, k, v, nil, backend.ErrShape, "rank 1"},
		{"rank 5", randTensor(rng, kernels.BHND, 1, 2, 3, 5, 8), k, v, nil, backend.ErrShape, "rank 5"},
		{"ranks differ", randTensor(rng, kernels.BHND, 3, 5, 8), k, v, nil, backend.ErrShape, "one rank"},
		{"data short", &kernels.Tensor{Shape: []int{2, 3, 5, 8}, Data: make([]float32, 7)}, k, v, nil, backend.ErrShape, "needs 240 elements, has 7"},
		{"D differs", randTensor(rng, kernels.BHND, 2, 3, 5, 7), k, v, nil, backend.ErrShape, "Q has D=7, K has D=8"},
		{"N differs", q, k, randTensor(rng, kernels.BHND, 2, 3, 7, 4), nil, backend.ErrShape, "K has N=6 keys but V has N=7 values"},
		{"batch differs", q, randTensor(rng, kernels.BHND, 1, 3, 6, 8), v, nil, backend.ErrShape, "batch sizes differ"},
		{"heads not multiple", q, randTensor(rng, kernels.BHND, 2, 2, 6, 8), randTensor(rng, kernels.BHND, 2, 2, 6, 4), nil, backend.ErrShape, "Q has H=3 heads, not a multiple of the 2 KV heads of K"},
		{"layouts differ", q, &kernels.Tensor{Shape: k.Shape, Layout: kernels.BNHD, Data: k.Data}, v, nil, backend.ErrShape, "layout"},
		{"bias not broadcast", q, k, v, &kernels.Options{Bias: randTensor(rng, kernels.BHND, 3, 5)}, backend.ErrShape, "bias of shape [3 5] does not broadcast"},
		{"bias rank 5", q, k, v, &kernels.Options{Bias: randTensor(rng, kernels.BHND, 1, 1, 1, 5, 6)}, backend.ErrShape, "bias has rank 5"},
		{"mask not broadcast", q, k, v, &kernels.Options{Mask: &kernels.Mask{Shape: []int{2, 1, 5, 5}, Keep: make([]bool, 50)}}, backend.ErrShape, "mask of shape [2 1 5 5] does not broadcast"},
		{"mask data short", q, k, v, &kernels.Options{Mask: &kernels.Mask{Shape: []int{5, 6}, Keep: make([]bool, 3)}}, backend.ErrShape, "needs 30 elements, has 3"},
		{"NaN in Q", nan, k, v, nil, backend.ErrNonFinite, "Q of shape [2 3 5 8] holds NaN at [0 0 2 1]"},
		{"Inf in V", q, k, inf, nil, backend.ErrNonFinite, "V of shape [2 3 6 4] holds +Inf"},
		{"+Inf in bias", q, k, v, &kernels.Options{Bias: posInfBias}, backend.ErrNonFinite, "bias"},
		{"NaN scale", q, k, v, &kernels.Options{Scale: math.NaN()}, backend.ErrShape, "scale"},
		{"huge scale", q, k, v, &kernels.Options{Scale: 1e300}, backend.ErrShape, "scale"},
		{"fused weights", q, k, v, &kernels.Options{Strategy: kernels.Fused, Weights: true}, backend.ErrUnsupported, "staged"},
		{"zero head dim", randTensor(rng, kernels.BHND, 2, 3, 5, 0), randTensor(rng, kernels.BHND, 2, 3, 6, 0), v, nil, backend.ErrShape, "zero head dim"},
		{"negative dim", &kernels.Tensor{Shape: []int{-1, 8}}, k, v, nil, backend.ErrShape, "negative"},
		{"overflowing shape", &kernels.Tensor{Shape: []int{1 << 40, 1 << 40}}, k, v, nil, backend.ErrTooLarge, "more elements than fit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := kernels.Attention(context.Background(), be, c.q, c.k, c.v, c.opts)
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want one wrapping %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
		})
	}
}

func TestAllowNonFinite(t *testing.T) {
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(9, 10))
	q := randTensor(rng, kernels.BHND, 4, 8)
	kv := randTensor(rng, kernels.BHND, 6, 8)
	q.Data[3] = float32(math.NaN()) // row 0 only
	if _, err := kernels.Attention(context.Background(), be, q, kv, kv, nil); !errors.Is(err, backend.ErrNonFinite) {
		t.Fatalf("NaN in Q with the check on: %v", err)
	}
	res, err := kernels.Attention(context.Background(), be, q, kv, kv, &kernels.Options{AllowNonFinite: true})
	if err != nil {
		t.Fatal(err)
	}
	// The policy: the NaN row's output is unspecified; every other row is
	// exactly what it would be without the NaN.
	clean := randTensor(rng, kernels.BHND, 4, 8)
	copy(clean.Data[8:], q.Data[8:])
	want, err := kernels.Attention(context.Background(), be, clean, kv, kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Out.Data[8:], want.Out.Data[8:]) {
		t.Errorf("rows without NaN changed: %v vs %v", res.Out.Data[8:], want.Out.Data[8:])
	}
}

func TestCancelled(t *testing.T) {
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(5, 6))
	x := randTensor(rng, kernels.BHND, 1024, 64)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := kernels.Attention(ctx, be, x, x, x, &kernels.Options{Strategy: kernels.Fused}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context gave %v", err)
	}
}

// TestSelfAttentionAndMultiHead checks the projections against the same
// computation written out: x·W per head, Attention, concatenation, W_o.
func TestSelfAttentionAndMultiHead(t *testing.T) {
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(7, 8))
	const n, dm, heads, kvh, d = 6, 12, 4, 2, 3
	x := randTensor(rng, kernels.BHND, 2, n, dm)
	lin := func(in, out int) kernels.Linear {
		l := kernels.Linear{W: randTensor(rng, kernels.BHND, in, out), B: make([]float32, out)}
		for i := range l.B {
			l.B[i] = float32(rng.Float64())
		}
		return l
	}
	mh := &kernels.MultiHead{Heads: heads, KVHeads: kvh, Q: lin(dm, heads*d), K: lin(dm, kvh*d), V: lin(dm, kvh*d), O: lin(heads*d, 5)}
	got, err := mh.Forward(context.Background(), be, x, &kernels.Options{Causal: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Out.Shape, []int{2, n, 5}) {
		t.Fatalf("shape %v", got.Out.Shape)
	}
	// The same by hand, in float64, one head at a time.
	proj := func(l kernels.Linear, b, i int) []float64 {
		out := make([]float64, l.W.Shape[1])
		for j := range out {
			out[j] = float64(l.B[j])
			for c := 0; c < dm; c++ {
				out[j] += float64(x.Data[(b*n+i)*dm+c]) * float64(l.W.Data[c*len(out)+j])
			}
		}
		return out
	}
	want := make([]float64, 2*n*5)
	for b := 0; b < 2; b++ {
		concat := make([][]float64, n)
		for i := range concat {
			concat[i] = make([]float64, heads*d)
		}
		for h := 0; h < heads; h++ {
			g := h / (heads / kvh)
			for i := 0; i < n; i++ {
				qi := proj(mh.Q, b, i)[h*d : (h+1)*d]
				var s []float64
				m := math.Inf(-1)
				for j := 0; j <= i; j++ {
					kj := proj(mh.K, b, j)[g*d : (g+1)*d]
					dot := 0.0
					for c := range qi {
						dot += qi[c] * kj[c]
					}
					s = append(s, dot/math.Sqrt(d))
					m = max(m, s[j])
				}
				sum := 0.0
				for j := range s {
					s[j] = math.Exp(s[j] - m)
					sum += s[j]
				}
				for j := range s {
					vj := proj(mh.V, b, j)[g*d : (g+1)*d]
					for c := 0; c < d; c++ {
						concat[i][h*d+c] += s[j] / sum * vj[c]
					}
				}
			}
		}
		for i := 0; i < n; i++ {
			for o := 0; o < 5; o++ {
				acc := float64(mh.O.B[o])
				for c := 0; c < heads*d; c++ {
					acc += concat[i][c] * float64(mh.O.W.Data[c*5+o])
				}
				want[(b*n+i)*5+o] = acc
			}
		}
	}
	if err := closeTo(got.Out.Data, want); err != nil {
		t.Errorf("multi-head: %v", err)
	}

	// Single-head self-attention is multi-head with one head and no W_o.
	wk, wv := lin(dm, heads*d), lin(dm, 5)
	one := &kernels.MultiHead{Heads: 1, Q: mh.Q, K: wk, V: wv, O: kernels.Linear{W: identity(5)}}
	byMH, err := one.Forward(context.Background(), be, x, nil)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := kernels.SelfAttention(context.Background(), be, x, mh.Q, wk, wv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sa.Out.Shape, byMH.Out.Shape) {
		t.Fatalf("self-attention shape %v, multi-head %v", sa.Out.Shape, byMH.Out.Shape)
	}
	for i := range sa.Out.Data {
		if backendtest.Exceeds(math.Abs(float64(sa.Out.Data[i]-byMH.Out.Data[i])), 1e-5) {
			t.Fatalf("self-attention differs from one-head multi-head at %d: %v vs %v", i, sa.Out.Data[i], byMH.Out.Data[i])
		}
	}
}

func identity(n int) *kernels.Tensor {
	t := &kernels.Tensor{Shape: []int{n, n}, Data: make([]float32, n*n)}
	for i := 0; i < n; i++ {
		t.Data[i*n+i] = 1
	}
	return t
}

func TestLinearBadInput(t *testing.T) {
	l := kernels.Linear{W: identity(3), B: []float32{1, 2}}
	if _, err := l.Apply(identity(3)); !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), "2 elements") {
		t.Errorf("short bias: %v", err)
	}
	l = kernels.Linear{W: identity(3)}
	if _, err := l.Apply(identity(4)); !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), "In=3") {
		t.Errorf("mismatched x: %v", err)
	}
	mh := &kernels.MultiHead{Heads: 3, KVHeads: 2}
	if _, err := mh.Forward(context.Background(), openCPU(t), identity(3), nil); !errors.Is(err, backend.ErrShape) {
		t.Errorf("Heads=3 KVHeads=2: %v", err)
	}
}
