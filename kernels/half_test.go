package kernels_test

import (
	"bytes"
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
	"github.com/attn-go/attn/kernels"
)

func mustConvert(t *testing.T, x *kernels.Tensor, dt kernels.DType) *kernels.Tensor {
	t.Helper()
	y, err := x.Convert(dt)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// ulp is the unit in the last place of dtype dt at magnitude m (of the
// smallest normal below it).
func ulp(dt kernels.DType, m float64) float64 {
	frac, minExp := 10.0, -14.0 // float16's fraction bits and least exponent
	if dt == kernels.BFloat16 {
		frac, minExp = 7, -126
	}
	e := minExp
	if m > 0 {
		e = math.Max(math.Floor(math.Log2(m)), minExp)
	}
	return math.Exp2(e - frac)
}

// Attention with half Q, K, V (and bias) gives, in the query's dtype, the
// float32 answer for the same half-rounded values rounded to that dtype,
// within one unit in its last place (the float32 arithmetic may land on
// the other side of a rounding boundary), and for bfloat16 the slack the
// contract allows bfloat16 arithmetic — on the backend's own half
// storage where it has one, and on the host path (halves widened before
// upload, O rounded after) where it has not. OutDType Float32 gives the
// float32 answer itself.
func TestAttentionHalf(t *testing.T) {
	ctx := context.Background()
	cpu := openCPU(t)
	rng := rand.New(rand.NewPCG(13, 1))
	for _, be := range []backend.Backend{cpu, backendtest.WithoutHalf(cpu)} {
		for _, dt := range []kernels.DType{kernels.Float16, kernels.BFloat16} {
			for _, strategy := range []kernels.Strategy{kernels.Fused, kernels.Staged} {
				q := mustConvert(t, randTensor(rng, kernels.BHND, 2, 4, 37, 24), dt)
				k := mustConvert(t, randTensor(rng, kernels.BHND, 2, 2, 45, 24), dt)
				v := mustConvert(t, randTensor(rng, kernels.BHND, 2, 2, 45, 20), dt)
				bias := mustConvert(t, randTensor(rng, kernels.BHND, 1, 4, 37, 45), dt)
				opts := &kernels.Options{Causal: true, Strategy: strategy, Bias: bias}
				name := be.Caps().Half
				res, err := kernels.Attention(ctx, be, q, k, v, opts)
				if err != nil {
					t.Fatalf("half=%v %v %v: %v", name, dt, strategy, err)
				}
				// The same values as float32.
				f := func(x *kernels.Tensor) *kernels.Tensor { return mustConvert(t, x, kernels.Float32) }
				opts32 := *opts
				opts32.Bias = f(bias)
				want, err := kernels.Attention(ctx, cpu, f(q), f(k), f(v), &opts32)
				if err != nil {
					t.Fatal(err)
				}
				if res.Out.DType != dt || len(res.Out.Bits) != len(want.Out.Data) || res.Out.Data != nil {
					t.Fatalf("half=%v %v %v: Out is %v with %d bits and %d floats", name, dt, strategy, res.Out.DType, len(res.Out.Bits), len(res.Out.Data))
				}
				// With Q, K and V all bfloat16 a backend may multiply in
				// bfloat16, P rounded (the CPU does where it has
				// AVX512_BF16): the contract's slack on top.
				slack := 0.0
				if dt == kernels.BFloat16 {
					slack = backendtest.BF16Slack(v.Float32s())
				}
				got := res.Out.Float32s()
				for i, w := range want.Out.Data {
					r := dt.Round(w)
					d := math.Abs(float64(got[i]) - float64(r))
					if u := ulp(dt, math.Max(math.Abs(float64(got[i])), math.Abs(float64(r)))); backendtest.Exceeds(d, u+slack) {
						t.Fatalf("half=%v %v %v: O[%d] = %g, want %g rounded to %g (off by %g, allowed %g + %g)", name, dt, strategy, i, got[i], w, r, d, u, slack)
					}
				}
				// Asked for float32, the output is the float32 answer.
				f32 := kernels.Float32
				opts.OutDType = &f32
				res32, err := kernels.Attention(ctx, be, q, k, v, opts)
				if err != nil {
					t.Fatal(err)
				}
				if res32.Out.DType != kernels.Float32 {
					t.Fatalf("OutDType Float32 gave %v", res32.Out.DType)
				}
				for i, w := range want.Out.Data {
					if d := math.Abs(float64(res32.Out.Data[i] - w)); backendtest.Exceeds(d, backendtest.Tol+slack) {
						t.Fatalf("half=%v %v %v, float32 out: O[%d] = %g, want %g (slack %g)", name, dt, strategy, i, res32.Out.Data[i], w, slack)
					}
				}
			}
		}
	}
}

// A float16 output of values beyond 65504 is saturated, on the backend
// and on the host path alike: V holds ±1e5 in float32, every key has
// the same score, so O is V's mean, ±1e5, stored as ±65504.
func TestAttentionHalfSaturates(t *testing.T) {
	cpu := openCPU(t)
	q, _ := kernels.NewTensor(kernels.BHND, 2, 4)
	k, _ := kernels.NewTensor(kernels.BHND, 3, 4)
	v, _ := kernels.NewTensor(kernels.BHND, 3, 2)
	for i := range v.Data {
		v.Data[i] = 1e5
		if i%2 == 1 {
			v.Data[i] = -1e5
		}
	}
	f16 := kernels.Float16
	for _, be := range []backend.Backend{cpu, backendtest.WithoutHalf(cpu)} {
		res, err := kernels.Attention(context.Background(), be, q, k, v, &kernels.Options{OutDType: &f16})
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range res.Out.Float32s() {
			want := float32(65504)
			if i%2 == 1 {
				want = -65504
			}
			if x != want {
				t.Fatalf("half=%v: O[%d] = %g, want %g", be.Caps().Half, i, x, want)
			}
		}
	}
}

// NaN and infinities in half inputs are refused as in float32, naming
// the tensor and the index; a −Inf half bias hides a key.
func TestAttentionHalfNonFinite(t *testing.T) {
	cpu := openCPU(t)
	rng := rand.New(rand.NewPCG(2, 3))
	for _, dt := range []kernels.DType{kernels.Float16, kernels.BFloat16} {
		q := mustConvert(t, randTensor(rng, kernels.BHND, 3, 4), dt)
		k := mustConvert(t, randTensor(rng, kernels.BHND, 3, 4), dt)
		v := mustConvert(t, randTensor(rng, kernels.BHND, 3, 4), dt)
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			kb := mustConvert(t, k, dt)
			kb.Bits[5] = dt.Encode(bad)
			_, err := kernels.Attention(context.Background(), cpu, q, kb, v, nil)
			if !errors.Is(err, backend.ErrNonFinite) || !strings.Contains(err.Error(), "K of shape [3 4]") || !strings.Contains(err.Error(), "[1 1]") {
				t.Errorf("%v K holding %v: %v, want ErrNonFinite naming K and [1 1]", dt, bad, err)
			}
		}
		bias := mustConvert(t, randTensor(rng, kernels.BHND, 3, 3), dt)
		bias.Bits[1] = dt.Encode(float32(math.Inf(-1)))
		res, err := kernels.Attention(context.Background(), cpu, q, k, v, &kernels.Options{Bias: bias})
		if err != nil {
			t.Fatalf("%v bias with −Inf: %v", dt, err)
		}
		if len(res.Out.Bits) != 12 {
			t.Fatalf("%v: O has %d bits", dt, len(res.Out.Bits))
		}
	}
}

// Tensors of a half dtype: NewTensorOf, Convert both ways (rounding to
// nearest even, refusing a value past float16's range, keeping NaN),
// Float32s, and the checks on Data and Bits.
func TestTensorDTypes(t *testing.T) {
	x := &kernels.Tensor{Shape: []int{4}, Data: []float32{1, 1 + 0x1p-11, 65519, -0x1p-24}}
	h := mustConvert(t, x, kernels.Float16)
	if h.DType != kernels.Float16 || h.Data != nil || len(h.Bits) != 4 {
		t.Fatalf("Convert(Float16) = %+v", h)
	}
	for i, want := range []float32{1, 1, 65504, -0x1p-24} {
		if got := h.Float32s()[i]; got != want {
			t.Errorf("Float16 element %d = %g, want %g", i, got, want)
		}
	}
	back := mustConvert(t, h, kernels.Float32)
	if back.DType != kernels.Float32 || back.Bits != nil || back.Data[2] != 65504 {
		t.Errorf("Convert back = %+v", back)
	}
	if _, err := (&kernels.Tensor{Shape: []int{1}, Data: []float32{1e5}}).Convert(kernels.Float16); !errors.Is(err, backend.ErrNonFinite) {
		t.Errorf("Convert(1e5 to Float16) = %v, want ErrNonFinite", err)
	}
	z, err := kernels.NewTensorOf(kernels.BFloat16, kernels.BNHD, 2, 3)
	if err != nil || z.DType != kernels.BFloat16 || len(z.Bits) != 6 || z.Data != nil || z.Layout != kernels.BNHD {
		t.Fatalf("NewTensorOf = %+v, %v", z, err)
	}
	if _, err := kernels.NewTensorOf(kernels.DType(9), kernels.BHND, 1); !errors.Is(err, backend.ErrShape) {
		t.Errorf("NewTensorOf(unknown) = %v", err)
	}
	// A half tensor with Data, or short Bits, is refused by Attention.
	q := &kernels.Tensor{Shape: []int{1, 2}, DType: kernels.Float16, Bits: []uint16{0, 0}, Data: []float32{0}}
	k := &kernels.Tensor{Shape: []int{1, 2}, Data: []float32{0, 0}}
	if _, err := kernels.Attention(context.Background(), openCPU(t), q, k, k, nil); !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), "other slice") {
		t.Errorf("a half Q with Data: %v", err)
	}
	q.Data, q.Bits = nil, q.Bits[:1]
	if _, err := kernels.Attention(context.Background(), openCPU(t), q, k, k, nil); !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), "needs 2 elements, has 1 (f16, in Bits)") {
		t.Errorf("a short half Q: %v", err)
	}
	bad := kernels.DType(9)
	if _, err := kernels.Attention(context.Background(), openCPU(t), k, k, k, &kernels.Options{OutDType: &bad}); !errors.Is(err, backend.ErrShape) {
		t.Errorf("OutDType unknown: %v", err)
	}
}

// The weights and scores come back in the query's dtype (ONNX's
// qk_matmul_output is the query's type), or in Options.MatrixDType: the
// float32 matrices every backend forms, rounded as O is (a score past a
// half's range saturated, a masked −Inf kept), on the backend's half
// storage and on the host path alike; Float32 gives them as formed, and
// the LSE stays float32. An unknown MatrixDType is ErrShape.
func TestMatrixDType(t *testing.T) {
	ctx := context.Background()
	cpu := openCPU(t)
	f32, f16, bf16 := kernels.Float32, kernels.Float16, kernels.BFloat16
	for _, c := range []struct {
		q      kernels.DType
		matrix *kernels.DType
		want   kernels.DType
	}{
		{f32, nil, f32},
		{f16, nil, f16},
		{bf16, nil, bf16},
		{f16, &f32, f32},
		{bf16, &f32, f32},
		{f32, &f16, f16},
		{f16, &bf16, bf16},
	} {
		for _, be := range []backend.Backend{cpu, backendtest.WithoutHalf(cpu)} {
			name := fmt.Sprintf("Q=%v/matrix=%v/half=%v", c.q, c.want, be.Caps().Half)
			t.Run(name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(161, uint64(c.q)))
				q := mustConvert(t, randTensor(rng, kernels.BHND, 1, 2, 5, 8), c.q)
				k := mustConvert(t, randTensor(rng, kernels.BHND, 1, 2, 7, 8), c.q)
				v := mustConvert(t, randTensor(rng, kernels.BHND, 1, 2, 7, 8), c.q)
				// A large scale drives some scores past 65504 (float16
				// saturates them); causal masking puts −Inf in the
				// masked scores.
				opts := kernels.Options{Scale: 3e4, Causal: true, Strategy: kernels.Staged, Weights: true, Scores: true,
					ScoresStage: kernels.StageMasked, LSE: true, MatrixDType: c.matrix}
				res, err := kernels.Attention(ctx, be, q, k, v, &opts)
				if err != nil {
					t.Fatal(err)
				}
				opts.MatrixDType = &f32
				exact, err := kernels.Attention(ctx, be, q, k, v, &opts)
				if err != nil {
					t.Fatal(err)
				}
				if res.LSE.DType != f32 {
					t.Errorf("LSE is %v, want f32", res.LSE.DType)
				}
				saturated := 0
				for _, m := range []struct {
					what        string
					got, formed *kernels.Tensor
				}{{"weights", res.Weights, exact.Weights}, {"scores", res.Scores, exact.Scores}} {
					if m.got.DType != c.want || m.formed.DType != f32 {
						t.Fatalf("%s are %v (%v with Float32 asked), want %v", m.what, m.got.DType, m.formed.DType, c.want)
					}
					if !slices.Equal(m.got.Shape, m.formed.Shape) {
						t.Fatalf("%s of shape %v, want %v", m.what, m.got.Shape, m.formed.Shape)
					}
					got := m.got.Float32s()
					for i, x := range m.formed.Data {
						want := c.want.Saturate(x)
						if math.Float32bits(got[i]) != math.Float32bits(want) {
							t.Fatalf("%s[%d] = %v, want %v (%v rounded to %v)", m.what, i, got[i], want, x, c.want)
						}
						if c.want.Half() && x != want && math.Abs(float64(want)) == float64(c.want.MaxFinite()) {
							saturated++
						}
					}
				}
				if c.want == f16 && saturated == 0 {
					t.Errorf("no score saturated: the case does not test it")
				}
			})
		}
	}
	bad := kernels.DType(9)
	k := &kernels.Tensor{Shape: []int{1, 2}, Data: []float32{0, 0}}
	if _, err := kernels.Attention(ctx, cpu, k, k, k, &kernels.Options{Weights: true, MatrixDType: &bad}); !errors.Is(err, backend.ErrShape) {
		t.Errorf("MatrixDType unknown: %v", err)
	}
}

// Linear keeps x's dtype: a float16 x gives a float16 y, the float32
// answer rounded.
func TestLinearHalf(t *testing.T) {
	w := &kernels.Tensor{Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}}
	x := mustConvert(t, &kernels.Tensor{Shape: []int{1, 2}, Data: []float32{0.5, 0.25}}, kernels.Float16)
	y, err := kernels.Linear{W: w}.Apply(x)
	if err != nil {
		t.Fatal(err)
	}
	if y.DType != kernels.Float16 {
		t.Fatalf("y is %v", y.DType)
	}
	for i, want := range []float32{1.5, 2.25, 3} {
		if got := y.Float32s()[i]; got != want {
			t.Errorf("y[%d] = %g, want %g", i, got, want)
		}
	}
}

// WriteNpy writes a Float16 tensor as '<f2' with its bits, and a
// BFloat16 one as the float32 values it holds.
func TestWriteNpyHalf(t *testing.T) {
	h := mustConvert(t, &kernels.Tensor{Shape: []int{2}, Data: []float32{1, -2}}, kernels.Float16)
	var buf bytes.Buffer
	if err := h.WriteNpy(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if !bytes.Contains(b, []byte("'descr': '<f2'")) || !bytes.HasSuffix(b, []byte{0x00, 0x3c, 0x00, 0xc0}) {
		t.Errorf("float16 .npy ends % x, header %q", b[len(b)-4:], b[10:64])
	}
	bf := mustConvert(t, &kernels.Tensor{Shape: []int{1}, Data: []float32{1.5}}, kernels.BFloat16)
	buf.Reset()
	if err := bf.WriteNpy(&buf); err != nil {
		t.Fatal(err)
	}
	if b := buf.Bytes(); !bytes.Contains(b, []byte("'<f4'")) || !bytes.HasSuffix(b, []byte{0, 0, 0xc0, 0x3f}) {
		t.Errorf("bfloat16 .npy ends % x", b[len(b)-4:])
	}
}
