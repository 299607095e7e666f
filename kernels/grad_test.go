package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// TestAttentionGrad: AttentionGrad on the CPU gives backendtest's float64
// gradients (ReferenceGrad) within 1e-4 of each tensor's largest, in
// both layouts and rank 3, with GQA, causal masking, sinks, softcap, a
// broadcast bias (and its gradient) and a keep-mask; it refuses what the
// backward pass does not take, a wrong dOut and a backend without one.
func TestAttentionGrad(t *testing.T) {
	ctx := context.Background()
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(67, 1))
	keep := &kernels.Mask{Shape: []int{70, 90}, Keep: make([]bool, 70*90)}
	for i := range keep.Keep {
		keep.Keep[i] = i%7 != 3
	}
	for _, c := range []struct {
		name   string
		layout kernels.Layout
		qs, ks []int
		opts   kernels.Options
		dBias  bool
	}{
		{"bhnd", kernels.BHND, []int{2, 4, 70, 16}, []int{2, 2, 90, 16}, kernels.Options{Causal: true}, false},
		{"bnhd", kernels.BNHD, []int{1, 33, 4, 8}, []int{1, 140, 1, 8}, kernels.Options{Softcap: 3, Sinks: []float32{0, 1, -1, 0.5}}, false},
		{"rank3", kernels.BHND, []int{2, 20, 8}, []int{2, 30, 8}, kernels.Options{Scale: 0.5}, false},
		{"bias", kernels.BHND, []int{2, 4, 70, 16}, []int{2, 2, 90, 16}, kernels.Options{
			Bias: randTensor(rng, kernels.BHND, 4, 70, 90), Mask: keep}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(67, uint64(len(c.qs))))
			q, k, v := randTensor(rng, c.layout, c.qs...), randTensor(rng, c.layout, c.ks...), randTensor(rng, c.layout, c.ks...)
			dOut := randTensor(rng, c.layout, c.qs...)
			g, err := kernels.AttentionGrad(ctx, be, q, k, v, dOut, &kernels.GradOptions{Options: &c.opts, DBias: c.dBias})
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
			hc := backendtest.Case{Problem: p, Q: q.Data, K: k.Data, V: v.Data}
			if b := c.opts.Bias; b != nil {
				hc.Bias = &backendtest.HostMask{Shape: shape4(b.Shape), Data: b.Data}
			}
			if m := c.opts.Mask; m != nil {
				hc.Keep = &backendtest.HostMask{Shape: shape4(m.Shape), Data: make([]float32, len(m.Keep))}
				for i, on := range m.Keep {
					if on {
						hc.Keep.Data[i] = 1
					}
				}
			}
			want := backendtest.ReferenceGrad(hc, dOut.Data)
			cmps := []struct {
				name string
				got  []float32
				want []float64
			}{{"dQ", g.DQ.Data, want.DQ}, {"dK", g.DK.Data, want.DK}, {"dV", g.DV.Data, want.DV}, {"dSinks", g.DSinks, want.DSinks}}
			if c.dBias {
				if !equalShape(g.DBias.Shape, c.opts.Bias.Shape) {
					t.Errorf("dBias of shape %v, want %v", g.DBias.Shape, c.opts.Bias.Shape)
				}
				cmps = append(cmps, struct {
					name string
					got  []float32
					want []float64
				}{"dBias", g.DBias.Data, want.DBias})
			}
			for _, cmp := range cmps {
				if err := backendtest.NearGrad(cmp.name, cmp.got, cmp.want, 1e-4); err != nil {
					t.Fatal(err)
				}
			}
			if !equalShape(g.DQ.Shape, q.Shape) || !equalShape(g.DK.Shape, k.Shape) || !equalShape(g.DV.Shape, v.Shape) {
				t.Errorf("shapes %v %v %v, want %v %v %v", g.DQ.Shape, g.DK.Shape, g.DV.Shape, q.Shape, k.Shape, v.Shape)
			}
		})
	}

	q, k := randTensor(rng, kernels.BHND, 1, 2, 4, 8), randTensor(rng, kernels.BHND, 1, 2, 5, 8)
	dOut := randTensor(rng, kernels.BHND, 1, 2, 4, 8)
	for _, c := range []struct {
		name string
		be   backend.Backend
		d    *kernels.Tensor
		opts *kernels.GradOptions
		want error
	}{
		{"dBias without a bias", be, dOut, &kernels.GradOptions{DBias: true}, backend.ErrShape},
		{"V from K with a v", be, dOut, &kernels.GradOptions{Options: &kernels.Options{VFromK: 4}}, backend.ErrShape},
		{"paged", be, dOut, &kernels.GradOptions{Options: &kernels.Options{BlockTable: [][]int{{0}}, KVLens: []int{5}}}, backend.ErrUnsupported},
		{"weights", be, dOut, &kernels.GradOptions{Options: &kernels.Options{Weights: true}}, backend.ErrUnsupported},
		{"dOut shape", be, randTensor(rng, kernels.BHND, 1, 2, 3, 8), nil, backend.ErrShape},
		{"dOut NaN", be, &kernels.Tensor{Shape: dOut.Shape, Data: append([]float32{float32(math.NaN())}, dOut.Data[1:]...)}, &kernels.GradOptions{}, backend.ErrNonFinite},
		{"no backward", noBackward{be}, dOut, nil, backend.ErrUnsupported},
	} {
		if _, err := kernels.AttentionGrad(context.Background(), c.be, q, k, k, c.d, c.opts); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestAttentionGradPacked: the gradients of a packed batch (CuSeqlensQ,
// CuSeqlensK) are those of each sequence alone, and half tensors give the
// float32 gradients within half's rounding, in their own dtype.
func TestAttentionGradPacked(t *testing.T) {
	ctx := context.Background()
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(69, 0))
	qn, kn := []int{3, 0, 40}, []int{7, 2, 60}
	const h, kvh, d = 4, 2, 16
	q, k, v := randTensor(rng, kernels.BNHD, 43, h, d), randTensor(rng, kernels.BNHD, 69, kvh, d), randTensor(rng, kernels.BNHD, 69, kvh, d)
	dOut := randTensor(rng, kernels.BNHD, 43, h, d)
	opts := kernels.Options{Causal: true, CuSeqlensQ: []int{0, 3, 3, 43}, CuSeqlensK: []int{0, 7, 9, 69}}
	g, err := kernels.AttentionGrad(ctx, be, q, k, v, dOut, &kernels.GradOptions{Options: &opts})
	if err != nil {
		t.Fatal(err)
	}
	for s := range qn {
		rows := func(t *kernels.Tensor, lo, n int) *kernels.Tensor {
			w := t.Shape[1] * t.Shape[2]
			return &kernels.Tensor{Shape: []int{1, n, t.Shape[1], t.Shape[2]}, Layout: kernels.BNHD, Data: t.Data[lo*w : (lo+n)*w]}
		}
		q0, k0 := opts.CuSeqlensQ[s], opts.CuSeqlensK[s]
		one, err := kernels.AttentionGrad(ctx, be, rows(q, q0, qn[s]), rows(k, k0, kn[s]), rows(v, k0, kn[s]), rows(dOut, q0, qn[s]), &kernels.GradOptions{Options: &kernels.Options{Causal: true}})
		if err != nil {
			t.Fatal(err)
		}
		for _, cmp := range []struct {
			name      string
			got, want *kernels.Tensor
		}{{"dQ", rows(g.DQ, q0, qn[s]), one.DQ}, {"dK", rows(g.DK, k0, kn[s]), one.DK}, {"dV", rows(g.DV, k0, kn[s]), one.DV}} {
			for i, x := range cmp.want.Data {
				if y := cmp.got.Data[i]; backendtest.Exceeds(math.Abs(float64(x-y)), 1e-5) {
					t.Fatalf("sequence %d: packed %s[%d] = %v, alone %v", s, cmp.name, i, y, x)
				}
			}
		}
	}

	for _, dt := range []kernels.DType{kernels.Float16, kernels.BFloat16} {
		half := func(x *kernels.Tensor) *kernels.Tensor { return mustConvert(t, x, dt) }
		hq, hk, hv, hd := half(q), half(k), half(v), half(dOut)
		hg, err := kernels.AttentionGrad(ctx, be, hq, hk, hv, hd, &kernels.GradOptions{Options: &opts})
		if err != nil {
			t.Fatal(err)
		}
		f32 := func(x *kernels.Tensor) *kernels.Tensor { return mustConvert(t, x, kernels.Float32) }
		want, err := kernels.AttentionGrad(ctx, be, f32(hq), f32(hk), f32(hv), f32(hd), &kernels.GradOptions{Options: &opts})
		if err != nil {
			t.Fatal(err)
		}
		tol := map[kernels.DType]float64{kernels.Float16: 2e-3, kernels.BFloat16: 1e-2}[dt]
		for _, cmp := range []struct {
			name      string
			got, want *kernels.Tensor
		}{{"dQ", hg.DQ, want.DQ}, {"dK", hg.DK, want.DK}, {"dV", hg.DV, want.DV}} {
			if cmp.got.DType != dt {
				t.Fatalf("%v: %s is %v", dt, cmp.name, cmp.got.DType)
			}
			got := f32(cmp.got).Data
			top := 0.0
			for _, x := range cmp.want.Data {
				top = math.Max(top, math.Abs(float64(x)))
			}
			for i, x := range cmp.want.Data {
				if backendtest.Exceeds(math.Abs(float64(got[i]-x)), tol*top) {
					t.Fatalf("%v: %s[%d] = %v, float32 %v (largest %v)", dt, cmp.name, i, got[i], x, top)
				}
			}
		}
	}
}

// noBackward hides a backend's backward pass.
type noBackward struct{ backend.Backend }

func equalShape(a, b []int) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// A one-layer attention model trained by plain gradient descent: the
// queries are its parameters, the target is the output of other queries
// over the same keys and values, and the loss ½‖O − T‖² falls more than
// tenfold in 200 steps. Each step runs the causal forward once, with its
// LSE, and the backward from it (AttentionGradFrom) through the same
// options, as the README's snippet does.
func ExampleAttentionGradFrom() {
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
	opts := &kernels.Options{Causal: true, LSE: true}
	var first, last float64
	for step := range 201 {
		res, err := kernels.Attention(ctx, be, q, k, v, opts)
		if err != nil {
			panic(err)
		}
		dOut, _ := kernels.NewTensor(kernels.BHND, res.Out.Shape...) // ∂L/∂O = O − T
		loss := 0.0
		for i, o := range res.Out.Data {
			d := o - target.Out.Data[i]
			dOut.Data[i] = d
			loss += 0.5 * float64(d) * float64(d)
		}
		if step == 0 {
			first = loss
		}
		last = loss
		g, err := kernels.AttentionGradFrom(ctx, be, q, k, v, dOut, res, &kernels.GradOptions{Options: opts})
		if err != nil {
			panic(err)
		}
		for i, d := range g.DQ.Data {
			q.Data[i] -= 0.5 * d
		}
	}
	fmt.Printf("loss fell by more than 10×: %v\n", last < first/10)
	// Output:
	// loss fell by more than 10×: true
}

// TestAttentionGradFrom: the backward from the forward's own Result (its
// output and LSE) is AttentionGrad's, and a missing or wrong output or
// LSE is refused.
func TestAttentionGradFrom(t *testing.T) {
	ctx := context.Background()
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(70, 0))
	q, k, v := randTensor(rng, kernels.BHND, 2, 4, 30, 16), randTensor(rng, kernels.BHND, 2, 2, 50, 16), randTensor(rng, kernels.BHND, 2, 2, 50, 16)
	dOut := randTensor(rng, kernels.BHND, 2, 4, 30, 16)
	opts := &kernels.Options{Causal: true, Sinks: []float32{0, 1, 2, 3}, LSE: true}
	res, err := kernels.Attention(ctx, be, q, k, v, opts)
	if err != nil {
		t.Fatal(err)
	}
	gopts := &kernels.GradOptions{Options: opts}
	from, err := kernels.AttentionGradFrom(ctx, be, q, k, v, dOut, res, gopts)
	if err != nil {
		t.Fatal(err)
	}
	again, err := kernels.AttentionGrad(ctx, be, q, k, v, dOut, gopts)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmp := range []struct {
		name      string
		got, want []float32
	}{{"dQ", from.DQ.Data, again.DQ.Data}, {"dK", from.DK.Data, again.DK.Data}, {"dV", from.DV.Data, again.DV.Data}, {"dSinks", from.DSinks, again.DSinks}} {
		for i := range cmp.want {
			if backendtest.Exceeds(math.Abs(float64(cmp.got[i]-cmp.want[i])), 1e-5) {
				t.Fatalf("%s[%d]: %v from the forward's, %v recomputed", cmp.name, i, cmp.got[i], cmp.want[i])
			}
		}
	}
	nan := &kernels.Tensor{Shape: res.LSE.Shape, Data: append([]float32{float32(math.NaN())}, res.LSE.Data[1:]...)}
	for _, c := range []struct {
		name string
		fwd  *kernels.Result
		want error
	}{
		{"no result", nil, backend.ErrShape},
		{"no LSE", &kernels.Result{Out: res.Out}, backend.ErrShape},
		{"no output", &kernels.Result{LSE: res.LSE}, backend.ErrShape},
		{"LSE of another shape", &kernels.Result{Out: res.Out, LSE: &kernels.Tensor{Shape: []int{2, 4, 29}, Data: res.LSE.Data[:2*4*29]}}, backend.ErrShape},
		{"out of Q's shape, not the output's", &kernels.Result{Out: randTensor(rng, kernels.BHND, 2, 4, 30, 8), LSE: res.LSE}, backend.ErrShape},
		{"LSE NaN", &kernels.Result{Out: res.Out, LSE: nan}, backend.ErrNonFinite},
	} {
		_, err := kernels.AttentionGradFrom(ctx, be, q, k, v, dOut, c.fwd, gopts)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestAttentionGradBlocks: the gradients through a document block mask
// (packed documents whose edges fall on blocks, causal) are those through
// the element keep-mask it stands for, on a backend with
// Caps.BackwardBlocks; a backend without it refuses the block mask
// (ErrUnsupported) before the forward runs.
func TestAttentionGradBlocks(t *testing.T) {
	ctx := context.Background()
	cu := []int{0, 96, 224, 300} // three documents, edges on blocks of 32
	blocks, err := kernels.DocumentBlocks(cu, nil, 32)
	if err != nil {
		t.Fatal(err)
	}
	const n, h, kvh, d = 300, 4, 2, 16
	doc := func(i int) int {
		for x := range len(cu) - 1 {
			if i < cu[x+1] {
				return x
			}
		}
		return -1
	}
	keep := &kernels.Mask{Shape: []int{n, n}, Keep: make([]bool, n*n)}
	for i := range n {
		for j := range n {
			keep.Keep[i*n+j] = doc(i) == doc(j)
		}
	}
	rng := rand.New(rand.NewPCG(68, 1))
	q, k, v := randTensor(rng, kernels.BNHD, 1, n, h, d), randTensor(rng, kernels.BNHD, 1, n, kvh, d), randTensor(rng, kernels.BNHD, 1, n, kvh, d)
	dOut := randTensor(rng, kernels.BNHD, 1, n, h, d)
	for _, bk := range onnxBackends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.open(t)
			got, err := kernels.AttentionGrad(ctx, be, q, k, v, dOut, &kernels.GradOptions{Options: &kernels.Options{Causal: true, Blocks: blocks}})
			if !be.Caps().BackwardBlocks {
				if !errors.Is(err, backend.ErrUnsupported) {
					t.Fatalf("a block mask on a backend without Caps.BackwardBlocks: %v, want ErrUnsupported", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, err := kernels.AttentionGrad(ctx, be, q, k, v, dOut, &kernels.GradOptions{Options: &kernels.Options{Causal: true, Mask: keep}})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name      string
				got, want []float32
			}{{"dQ", got.DQ.Data, want.DQ.Data}, {"dK", got.DK.Data, want.DK.Data}, {"dV", got.DV.Data, want.DV.Data}} {
				w := make([]float64, len(c.want))
				for i, x := range c.want {
					w[i] = float64(x)
				}
				if err := backendtest.NearGrad(c.name, c.got, w, 1e-5); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestAttentionGradDeterministic: the same inputs give bit-identical
// gradients on every run: on the CPU whatever its thread count (1, 2
// and 7 workers), on the GPU across runs with other work between, with
// what sums across work items (GQA's query heads, sinks over the batch,
// a bias broadcast over the batch and heads with its gradient, and index
// lists, one a KV head, whose dK and dV sum over the rows that name
// each key).
func TestAttentionGradDeterministic(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(69, 1))
	const b, n, h, kvh, d = 3, 150, 4, 2, 16
	q, k, v := randTensor(rng, kernels.BNHD, b, n, h, d), randTensor(rng, kernels.BNHD, b, n, kvh, d), randTensor(rng, kernels.BNHD, b, n, kvh, d)
	dOut := randTensor(rng, kernels.BNHD, b, n, h, d)
	sinks := []float32{0.5, -1, 2, 0}
	ix := backendtest.WithIndices(rng, backend.Problem{B: b, H: h, KVHeads: kvh, Nq: n, Nk: n, D: d, Causal: true}, kvh, 40).Indices
	bits := func(g *kernels.Grads) [][]uint32 {
		var out [][]uint32
		dBias := []float32(nil)
		if g.DBias != nil {
			dBias = g.DBias.Data
		}
		for _, x := range [][]float32{g.DQ.Data, g.DK.Data, g.DV.Data, g.DSinks, dBias} {
			w := make([]uint32, len(x))
			for i, f := range x {
				w[i] = math.Float32bits(f)
			}
			out = append(out, w)
		}
		return out
	}
	same := func(t *testing.T, what string, a, b [][]uint32) {
		t.Helper()
		for i, name := range []string{"dQ", "dK", "dV", "dSinks", "dBias"} {
			if j := firstDiff(a[i], b[i]); j >= 0 {
				t.Errorf("%s: %s[%d] is %#x, %#x the first time", what, name, j, b[i][j], a[i][j])
			}
		}
	}
	for _, c := range []struct {
		name string
		opts *kernels.GradOptions
	}{
		{"bias", &kernels.GradOptions{Options: &kernels.Options{Causal: true, Sinks: sinks, Bias: randTensor(rng, kernels.BHND, 1, 1, n, n)}, DBias: true}},
		{"indices", &kernels.GradOptions{Options: &kernels.Options{Causal: true, Sinks: sinks, Indices: ix}}},
	} {
		opts := c.opts
		t.Run(c.name+"/cpu", func(t *testing.T) {
			var first [][]uint32
			for _, threads := range []int{1, 2, 7} {
				be, err := cpu.New(cpu.WithThreads(threads))
				if err != nil {
					t.Fatal(err)
				}
				g, err := kernels.AttentionGrad(ctx, be, q, k, v, dOut, opts)
				be.Close()
				if err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = bits(g)
					continue
				}
				same(t, fmt.Sprintf("%d threads against 1", threads), first, bits(g))
			}
		})
		for _, bk := range onnxBackends[1:] {
			t.Run(c.name+"/"+bk.name, func(t *testing.T) {
				be := bk.open(t)
				g1, err := kernels.AttentionGrad(ctx, be, q, k, v, dOut, opts)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := kernels.Attention(ctx, be, q, k, k, &kernels.Options{Window: &kernels.Window{Left: 7, Right: 7}}); err != nil { // other work between
					t.Fatal(err)
				}
				g2, err := kernels.AttentionGrad(ctx, be, q, k, v, dOut, opts)
				if err != nil {
					t.Fatal(err)
				}
				same(t, "the second run", bits(g1), bits(g2))
			})
		}
	}
}

// TestAttentionGradIndices: the gradients through index lists (one a KV
// head over GQA groups, −1 padding, rows that name no key, causal
// masking hiding some named keys, sinks, B = 2, BNHD) are those through
// the element keep-mask that names the same keys, on a backend with
// Caps.BackwardIndices (the CPU's and the GPU's), dK and dV of a key no
// row names exactly 0; a backend without it refuses the list
// (ErrUnsupported) before the forward runs.
func TestAttentionGradIndices(t *testing.T) {
	ctx := context.Background()
	const b, h, kvh, nq, nk, d, per = 2, 8, 2, 40, 120, 24, 30
	rng := rand.New(rand.NewPCG(80, 1))
	q, k, v := randTensor(rng, kernels.BNHD, b, nq, h, d), randTensor(rng, kernels.BNHD, b, nk, kvh, d), randTensor(rng, kernels.BNHD, b, nk, kvh, d)
	dOut := randTensor(rng, kernels.BNHD, b, nq, h, d)
	p := backend.Problem{B: b, H: h, KVHeads: kvh, Nq: nq, Nk: nk, D: d, Layout: kernels.BNHD, Causal: true}
	ix := backendtest.WithIndices(rng, p, kvh, per).Indices
	p.Indices = ix
	keep := &kernels.Mask{Shape: []int{b, h, nq, nk}, Keep: make([]bool, b*h*nq*nk)}
	named := make([]bool, b*kvh*nk)
	for bt := range b {
		for hh := range h {
			g := hh / (h / kvh)
			for i := range nq {
				lo, hi := p.KeyRange(bt, i)
				for _, j := range ix.Idx[p.IndexOffset(bt, g, i):][:per] {
					if j >= 0 {
						keep.Keep[((bt*h+hh)*nq+i)*nk+int(j)] = true
						named[(bt*kvh+g)*nk+int(j)] = named[(bt*kvh+g)*nk+int(j)] || int(j) >= lo && int(j) < hi
					}
				}
			}
		}
	}
	sinks := []float32{0, 1, -1, 0.5, 2, 0, -2, 1}
	for _, bk := range onnxBackends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.open(t)
			got, err := kernels.AttentionGrad(ctx, be, q, k, v, dOut, &kernels.GradOptions{Options: &kernels.Options{Causal: true, Sinks: sinks, Indices: ix}})
			if !be.Caps().BackwardIndices {
				if !errors.Is(err, backend.ErrUnsupported) {
					t.Fatalf("an index list on a backend without Caps.BackwardIndices: %v, want ErrUnsupported", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, err := kernels.AttentionGrad(ctx, be, q, k, v, dOut, &kernels.GradOptions{Options: &kernels.Options{Causal: true, Sinks: sinks, Mask: keep}})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name      string
				got, want []float32
			}{{"dQ", got.DQ.Data, want.DQ.Data}, {"dK", got.DK.Data, want.DK.Data}, {"dV", got.DV.Data, want.DV.Data}, {"dSinks", got.DSinks, want.DSinks}} {
				w := make([]float64, len(c.want))
				for i, x := range c.want {
					w[i] = float64(x)
				}
				if err := backendtest.NearGrad(c.name, c.got, w, 1e-5); err != nil {
					t.Error(err)
				}
			}
			// K and V are BNHD: key j of KV head g in batch bt is row
			// (bt·nk + j)·kvh + g.
			for x, on := range named {
				bt, g, j := x/(kvh*nk), x/nk%kvh, x%nk
				r := (bt*nk+j)*kvh + g
				for c := range d {
					if !on && (got.DK.Data[r*d+c] != 0 || got.DV.Data[r*d+c] != 0) {
						t.Fatalf("key %d of KV head %d, batch %d: named by no row, but dK, dV = %v, %v", j, g, bt, got.DK.Data[r*d+c], got.DV.Data[r*d+c])
					}
				}
			}
		})
	}
}

// TestAttentionGradVFromK: with V from K (MLA's latent cache: V is K's
// first Dv columns) the gradient of K is the float64 reference's through
// K alone plus its gradient through V on the shared columns, on every
// backend; no dV comes back, and a half K gets its dK in its dtype.
func TestAttentionGradVFromK(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(70, 1))
	const b, n, h, d, dv = 2, 40, 4, 24, 16
	q, k := randTensor(rng, kernels.BNHD, b, n, h, d), randTensor(rng, kernels.BNHD, b, n, 1, d)
	dOut := randTensor(rng, kernels.BNHD, b, n, h, dv)
	// The reference: V a tensor of its own, K's first dv columns.
	v := &kernels.Tensor{Shape: []int{b, n, 1, dv}, Layout: kernels.BNHD, Data: make([]float32, b*n*dv)}
	for r := range b * n {
		copy(v.Data[r*dv:(r+1)*dv], k.Data[r*d:r*d+dv])
	}
	p := backend.Problem{B: b, H: h, KVHeads: 1, Nq: n, Nk: n, D: d, Dv: dv, Layout: kernels.BNHD, Causal: true}
	want := backendtest.ReferenceGrad(backendtest.Case{Problem: p, Q: q.Data, K: k.Data, V: v.Data}, dOut.Data)
	wantDK := append([]float64(nil), want.DK...)
	for r := range b * n {
		for c := range dv {
			wantDK[r*d+c] += want.DV[r*dv+c]
		}
	}
	for _, bk := range onnxBackends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.open(t)
			g, err := kernels.AttentionGrad(ctx, be, q, k, nil, dOut, &kernels.GradOptions{Options: &kernels.Options{Causal: true, VFromK: dv}})
			if err != nil {
				t.Fatal(err)
			}
			if g.DV != nil {
				t.Errorf("a dV of shape %v with V from K", g.DV.Shape)
			}
			if err := backendtest.NearGrad("dQ", g.DQ.Data, want.DQ, 1e-4); err != nil {
				t.Error(err)
			}
			if err := backendtest.NearGrad("dK", g.DK.Data, wantDK, 1e-4); err != nil {
				t.Error(err)
			}
			kh, err := k.Convert(kernels.Float16)
			if err != nil {
				t.Fatal(err)
			}
			gh, err := kernels.AttentionGrad(ctx, be, q, kh, nil, dOut, &kernels.GradOptions{Options: &kernels.Options{Causal: true, VFromK: dv}})
			if err != nil {
				t.Fatal(err)
			}
			if gh.DK.DType != kernels.Float16 || !equalShape(gh.DK.Shape, k.Shape) || gh.DV != nil {
				t.Errorf("half K: dK %v of shape %v, dV %v", gh.DK.DType, gh.DK.Shape, gh.DV)
			}
		})
	}
	if _, err := kernels.AttentionGrad(ctx, onnxBackends[0].open(t), q, k, k, dOut, &kernels.GradOptions{Options: &kernels.Options{VFromK: dv}}); !errors.Is(err, backend.ErrShape) {
		t.Errorf("V from K with a v: %v, want ErrShape", err)
	}
}
