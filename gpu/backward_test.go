//go:build cgo && !nogpu

package gpu_test

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
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/kernels"
)

// The backward pass's tiles, which the shapes below straddle:
// backkv.wgsl runs 64 keys a workgroup and stages 32 query rows at a
// time, backq.wgsl 64 query rows a workgroup over tiles of 32 keys
// (plan.BackWG; plan.Backward halves the tiles where workgroup memory
// is short); under the CPU plan a dispatch takes some 640 rows or keys
// at D = Dv = 64 (plan.BackwardPlan), which the N = 4096 case crosses.

// grads is one backend's gradients for a case.
type grads struct {
	dq, dk, dv, dSinks []float32
}

// backwardOn runs c's forward on be (Fused, for O and the LSE) and then
// be's Backward with dO, and returns the gradients. The gradients'
// buffers start as NaN (every element must be written) and the inputs
// are read back after: the backward pass must not modify them.
func backwardOn(t testing.TB, be backend.Backend, c backendtest.Case, dO []float32) grads {
	t.Helper()
	ctx := context.Background()
	p := c.Problem.Resolved()
	var bufs []backend.Buffer
	defer func() {
		for _, b := range bufs {
			b.Release()
		}
	}()
	up := func(x []float32, n int) backend.Buffer {
		buf, err := be.Alloc(backend.Float32, n)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, buf)
		if x != nil && n > 0 {
			if err := be.Write(buf, 0, x); err != nil {
				t.Fatal(err)
			}
		}
		return buf
	}
	nans := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.NaN())
		}
		return x
	}
	q, k, v, dob := up(c.Q, p.QLen()), up(c.K, p.KLen()), up(c.V, p.VLen()), up(dO, p.OLen())
	o, lse := up(nil, p.OLen()), up(nil, p.LSELen())
	if err := be.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, lse); err != nil {
		t.Fatalf("%s: fused: %v", be.Name(), err)
	}
	dq, dk, dv := up(nans(p.QLen()), p.QLen()), up(nans(p.KLen()), p.KLen()), up(nans(p.VLen()), p.VLen())
	var g grads
	if p.Sinks != nil {
		g.dSinks = nans(p.H)
	}
	bw, ok := be.(backend.Backwarder)
	if !ok {
		t.Fatalf("%s has no backward pass", be.Name())
	}
	if err := bw.Backward(ctx, backend.BackwardParams{Problem: c.Problem}, q, k, v, o, lse, dob, dq, dk, dv, g.dSinks); err != nil {
		t.Fatalf("%s: backward: %v", be.Name(), err)
	}
	read := func(buf backend.Buffer) []float32 {
		x := make([]float32, buf.Len())
		if err := be.Read(x, buf, 0); err != nil {
			t.Fatal(err)
		}
		return x
	}
	g.dq, g.dk, g.dv = read(dq), read(dk), read(dv)
	for _, in := range []struct {
		name      string
		buf       backend.Buffer
		want      []float32
		wantEmpty bool
	}{{"Q", q, c.Q, false}, {"K", k, c.K, false}, {"V", v, c.V, false}, {"dO", dob, dO, false}} {
		if got := read(in.buf); !slices.Equal(got, in.want) && (len(got) > 0 || len(in.want) > 0) {
			t.Fatalf("%s: backward modified %s", be.Name(), in.name)
		}
	}
	return g
}

// randomDO is a dO for p, uniform in [−1, 1).
func randomDO(rng *rand.Rand, p backend.Problem) []float32 {
	x := make([]float32, p.Resolved().OLen())
	for i := range x {
		x[i] = float32(rng.Float64()*2 - 1)
	}
	return x
}

// nearCPU reports where got, the GPU's gradient, is not within
// tol·max(1, max|want|) of want, the CPU's (NearGrad's criterion).
func nearCPU(name string, got, want []float32, tol float64) error {
	w := make([]float64, len(want))
	for i, x := range want {
		w[i] = float64(x)
	}
	return backendtest.NearGrad(name, got, w, tol)
}

// checkGrads compares the GPU's gradients g with the CPU's c and, when
// ref is set, with backendtest.ReferenceGrad's (float64), each within
// tol of the tensor's largest gradient.
func checkGrads(t testing.TB, g, c grads, ref *backendtest.Grads, tol float64) {
	t.Helper()
	for _, x := range []struct {
		name      string
		gpu, cpu  []float32
		reference []float64
	}{{"dQ", g.dq, c.dq, nil}, {"dK", g.dk, c.dk, nil}, {"dV", g.dv, c.dv, nil}, {"dSinks", g.dSinks, c.dSinks, nil}} {
		if err := nearCPU(x.name+" (against the CPU)", x.gpu, x.cpu, tol); err != nil {
			t.Error(err)
		}
	}
	if ref == nil {
		return
	}
	for _, x := range []struct {
		name string
		got  []float32
		want []float64
	}{{"dQ", g.dq, ref.DQ}, {"dK", g.dk, ref.DK}, {"dV", g.dv, ref.DV}, {"dSinks", g.dSinks, ref.DSinks}} {
		if err := backendtest.NearGrad(x.name+" (against the reference)", x.got, x.want, tol); err != nil {
			t.Error(err)
		}
	}
}

func mqa(p backend.Problem) backend.Problem { p.KVHeads = 1; return p }

// TestBackward compares the GPU's Backward (after its own forward) with
// backendtest.ReferenceGrad (float64) and with the CPU's Backward (after
// the CPU's forward), within backendtest.Tol (1e-4) of each tensor's
// largest gradient: sizes 0 and 1, the tiles ± 1, odd head dims, Dv ≠
// D, GQA groups of 1, 2, 4 and 8, both layouts, causal masking and its
// offset (rows that see no key among them, with and without sinks), a
// window with and without causal masking, key lengths, softcap, ALiBi,
// sinks and an explicit scale.
func TestBackward(t *testing.T) {
	g := openGPU(t)
	c := openCPU(t)
	for n, r := range []struct {
		p backend.Problem
		// chunks bounds the rows and keys of a dispatch
		// (gpu.SetBackwardChunks), so that a small problem runs the
		// many dispatches of a large one under the loop cap.
		chunks int
	}{
		{p: prob(1, 2, 2, 5, 9, 8, 8)},
		{p: prob(1, 2, 2, 0, 9, 8, 8)},
		{p: prob(2, 2, 1, 5, 0, 8, 8)},
		{p: prob(1, 1, 1, 1, 1, 8, 8)},
		{p: sinks(prob(1, 2, 2, 3, 0, 8, 8), 0.5, -1)},
		{p: causal(prob(2, 4, 2, 65, 129, 32, 24))},
		{p: causal(prob(2, 4, 2, 65, 129, 32, 24)), chunks: 40},
		{p: prob(1, 4, 4, 63, 31, 32, 24)},
		{p: prob(1, 2, 1, 33, 65, 17, 5)},
		{p: bnhd(window(softcap(alibi(sinks(prob(1, 4, 1, 33, 97, 17, 17), 0, 1, -1, 2)), 2), 40, 3))},
		{p: bnhd(window(softcap(alibi(sinks(prob(1, 4, 1, 33, 97, 17, 17), 0, 1, -1, 2)), 2), 40, 3)), chunks: 7},
		{p: causal(bnhd(prob(2, 8, 1, 64, 64, 32, 24)))},
		{p: window(prob(1, 2, 2, 70, 70, 8, 8), 5, 7)},
		{p: offset(kvlens(prob(2, 2, 1, 33, 140, 8, 8), 140, 20), -3)},
		{p: offset(kvlens(prob(2, 2, 1, 33, 140, 8, 8), 140, 20), -3), chunks: 32},
		{p: sinks(offset(prob(1, 2, 2, 10, 12, 8, 8), -4), 0.5, -1)},
		{p: scaled(alibi(softcap(causal(prob(1, 8, 2, 40, 33, 16, 16)), 3)), 1)},
	} {
		name := fmt.Sprintf("%d_%s", n, caseName(r.p, nil, nil))
		if r.chunks > 0 {
			name += fmt.Sprintf("_chunks%d", r.chunks)
		}
		t.Run(name, func(t *testing.T) {
			defer gpu.SetBackwardChunks(gpu.SetBackwardChunks(r.chunks))
			rng := newRand(uint64(600 + n))
			cs := backendtest.RandomCase(rng, r.p, nil, nil)
			dO := randomDO(rng, r.p)
			ref := backendtest.ReferenceGrad(cs, dO)
			checkGrads(t, backwardOn(t, g, cs, dO), backwardOn(t, c, cs, dO), &ref, backendtest.Tol)
		})
	}
}

// TestBackwardLongN compares the GPU's Backward with the CPU's at N =
// 4096 (B = 1, H = 2, D = 64, causal), within backendtest.Tol of each
// tensor's largest gradient: many dispatches of rows and of keys under
// the CPU plan's loop cap, whose sums must add up.
func TestBackwardLongN(t *testing.T) {
	g := openGPU(t)
	c := openCPU(t)
	p := causal(prob(1, 2, 2, 4096, 4096, 64, 64))
	rng := newRand(700)
	cs := backendtest.RandomCase(rng, p, nil, nil)
	dO := randomDO(rng, p)
	checkGrads(t, backwardOn(t, g, cs, dO), backwardOn(t, c, cs, dO), nil, backendtest.Tol)
}

// TestBackwardRefuses checks that Backward refuses, with an error
// wrapping backend.ErrUnsupported that names it and before any work (dQ
// keeps what it held), what it does not compute, and bad sizes with
// ErrShape; that it refuses them itself (gpu.RefuseBackward), whatever
// BackwardParams.Validate comes to accept; and that it stops on a
// cancelled context.
func TestBackwardRefuses(t *testing.T) {
	g := openGPU(t)
	ctx := context.Background()
	p := prob(1, 2, 2, 4, 4, 8, 8).Resolved()
	alloc := func(dt backend.DType, n int) backend.Buffer {
		buf, err := g.Alloc(dt, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(buf.Release)
		return buf
	}
	f := func(n int) backend.Buffer { return alloc(backend.Float32, n) }
	q, k, v, o, lse, dob := f(p.QLen()), f(p.KLen()), f(p.VLen()), f(p.OLen()), f(p.LSELen()), f(p.OLen())
	dq, dk, dv := f(p.QLen()), f(p.KLen()), f(p.VLen())
	sentinel := make([]float32, p.QLen())
	for i := range sentinel {
		sentinel[i] = 7
	}
	if err := g.Write(dq, 0, sentinel); err != nil {
		t.Fatal(err)
	}
	mask := &backend.Mask{Buf: f(p.ScoresLen()), Shape: [4]int{1, 2, 4, 4}}
	withP := func(f func(*backend.BackwardParams)) backend.BackwardParams {
		bp := backend.BackwardParams{Problem: p}
		f(&bp)
		return bp
	}
	half := alloc(backend.Float16, p.QLen())
	packed := backendtest.PackedProblem(p, []int{2, 2}, nil).Resolved()
	for _, c := range []struct {
		name string
		p    backend.BackwardParams
		q, v backend.Buffer
		want error
		says string
	}{
		{"bias", withP(func(bp *backend.BackwardParams) { bp.Bias = mask }), q, v, backend.ErrUnsupported, "bias"},
		{"keep", withP(func(bp *backend.BackwardParams) { bp.Keep = mask }), q, v, backend.ErrUnsupported, "keep"},
		{"dbias", withP(func(bp *backend.BackwardParams) { bp.Bias, bp.DBias = mask, mask }), q, v, backend.ErrUnsupported, "bias"},
		{"vfromk", withP(func(bp *backend.BackwardParams) { bp.VFromK = true }), q, k, backend.ErrUnsupported, "V from K"},
		{"scales", withP(func(bp *backend.BackwardParams) { bp.Scales = &backend.Scales{K: []float32{1, 1}, V: []float32{1, 1}} }), q, v, backend.ErrUnsupported, "scales"},
		{"half", withP(func(*backend.BackwardParams) {}), half, v, backend.ErrUnsupported, "float32"},
		{"short", withP(func(*backend.BackwardParams) {}), f(p.QLen() - 1), v, backend.ErrShape, "Q"},
		{"dsinks", withP(func(bp *backend.BackwardParams) { bp.Sinks = []float32{0, 0} }), q, v, backend.ErrShape, "dSinks"},
	} {
		err := g.Backward(ctx, c.p, c.q, k, c.v, o, lse, dob, dq, dk, dv, nil)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.want, c.says)
		}
	}
	// Packed sequences, with operands of their sizes.
	pq, pdq := f(packed.QLen()), f(packed.QLen())
	if err := g.Backward(ctx, backend.BackwardParams{Problem: packed}, pq, f(packed.KLen()), f(packed.VLen()), f(packed.OLen()), f(packed.LSELen()),
		f(packed.OLen()), pdq, f(packed.KLen()), f(packed.VLen()), nil); !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), "packed") {
		t.Errorf("packed: %v, want ErrUnsupported naming packed sequences", err)
	}
	got := make([]float32, p.QLen())
	if err := g.Read(got, dq, 0); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, sentinel) {
		t.Errorf("a refused Backward wrote dQ")
	}

	// What Backward refuses of itself, after Validate.
	for _, c := range []struct {
		name string
		set  func(*backend.BackwardParams)
		says string
	}{
		{"bias", func(bp *backend.BackwardParams) { bp.Bias = mask }, "bias"},
		{"keep", func(bp *backend.BackwardParams) { bp.Keep = mask }, "keep-mask"},
		{"dbias", func(bp *backend.BackwardParams) { bp.DBias = mask }, "DBias"},
		{"packed", func(bp *backend.BackwardParams) { bp.Packed = &backend.Packed{} }, "packed"},
		{"paged", func(bp *backend.BackwardParams) { bp.Paged = &backend.Paged{} }, "paged"},
		{"views", func(bp *backend.BackwardParams) { bp.Views = &backend.Views{} }, "views"},
		{"indices", func(bp *backend.BackwardParams) { bp.Indices = &backend.Indices{} }, "index"},
		{"blocks", func(bp *backend.BackwardParams) { bp.Blocks = &backend.BlockMask{} }, "block"},
		{"vfromk", func(bp *backend.BackwardParams) { bp.VFromK = true }, "V from K"},
		{"scales", func(bp *backend.BackwardParams) { bp.Scales = &backend.Scales{} }, "scales"},
	} {
		err := gpu.RefuseBackward(withP(c.set), q, k, v, o, lse, dob, dq, dk, dv, nil)
		if !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("refuseBackward: %s: %v, want ErrUnsupported naming %q", c.name, err, c.says)
		}
	}
	for i, buf := range []*backend.Buffer{&q, &k, &v, &o, &lse, &dob, &dq, &dk, &dv} {
		bufs := []backend.Buffer{q, k, v, o, lse, dob, dq, dk, dv}
		bufs[i] = alloc(backend.BFloat16, (*buf).Len())
		err := gpu.RefuseBackward(withP(func(*backend.BackwardParams) {}), bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], bufs[7], bufs[8], nil)
		if !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), "float32") {
			t.Errorf("refuseBackward: operand %d in bfloat16: %v, want ErrUnsupported", i, err)
		}
	}
	if err := gpu.RefuseBackward(withP(func(*backend.BackwardParams) {}), q, k, v, o, lse, dob, dq, dk, dv, nil); err != nil {
		t.Errorf("refuseBackward of a plain problem: %v", err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := g.Backward(cancelled, backend.BackwardParams{Problem: p}, q, k, v, o, lse, dob, dq, dk, dv, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// FuzzBackward compares the GPU's Backward with the CPU's (each after
// its own forward) on problems drawn from the fuzzer's bytes: batches,
// KV heads and groups, query and key counts around the tiles, head dims
// (odd ones among them), both layouts and the variants, within
// backendtest.Tol of each gradient's largest. Its seeds run as a test.
func FuzzBackward(f *testing.F) {
	f.Add(uint8(1), uint8(2), uint8(2), uint8(33), uint8(70), uint8(8), uint8(8), uint8(0), uint16(1))
	f.Add(uint8(2), uint8(1), uint8(4), uint8(65), uint8(31), uint8(17), uint8(5), uint8(0b1001_0101), uint16(2))
	f.Add(uint8(1), uint8(2), uint8(1), uint8(1), uint8(64), uint8(8), uint8(16), uint8(0b0110_1010), uint16(3))
	f.Add(uint8(2), uint8(1), uint8(8), uint8(12), uint8(0), uint8(8), uint8(8), uint8(0b0001_0000), uint16(4))
	g := openGPU(f)
	c := openCPU(f)
	f.Fuzz(func(t *testing.T, b, kv, group, nq, nk, d, dv, flags uint8, seed uint16) {
		p := prob(1+int(b)%2, 0, 1+int(kv)%2, int(nq)%100, int(nk)%100, 1+int(d)%40, 1+int(dv)%40)
		p.H = p.KVHeads * (1 + int(group)%8)
		rng := newRand(uint64(seed))
		if flags&1 != 0 {
			p.Causal = true
		}
		if flags&2 != 0 {
			p.Layout = backend.BNHD
		}
		if flags&4 != 0 {
			p.Softcap = 1 + float32(rng.IntN(4))
		}
		if flags&8 != 0 {
			p = alibi(p)
		}
		if flags&16 != 0 {
			p = sinks(p, float32(rng.Float64()*4-2), 0.5)
		}
		if flags&32 != 0 {
			p = window(p, rng.IntN(20)-1, rng.IntN(20)-1)
		}
		if flags&64 != 0 {
			p.KVLens = make([]int, p.B)
			for i := range p.KVLens {
				p.KVLens[i] = rng.IntN(p.Nk + 1)
			}
		}
		if flags&128 != 0 {
			p = offset(p, rng.IntN(2*p.Nk+9)-p.Nk-4)
		}
		cs := backendtest.RandomCase(rng, p, nil, nil)
		dO := randomDO(rng, p)
		checkGrads(t, backwardOn(t, g, cs, dO), backwardOn(t, c, cs, dO), nil, backendtest.Tol)
	})
}

// TestBackwardTrains trains a tiny attention model on the GPU by plain
// gradient descent through kernels.AttentionGrad: Q, K and V (two query
// heads sharing one KV head, causal, with sinks) are the parameters,
// the target is the output of other Q, K and V, and the loss ½‖O − T‖²
// must fall below a tenth of where it started in 100 steps (it falls
// from 33.7 to about 2.1 there).
func TestBackwardTrains(t *testing.T) {
	g := openGPU(t)
	ctx := context.Background()
	rng := newRand(800)
	rnd := func(shape ...int) *kernels.Tensor {
		x, err := kernels.NewTensor(kernels.BHND, shape...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x.Data {
			x.Data[i] = float32(rng.NormFloat64())
		}
		return x
	}
	opts := &kernels.Options{Causal: true, Sinks: []float32{0.5, -0.5}}
	target, err := kernels.Attention(ctx, g, rnd(1, 2, 12, 8), rnd(1, 1, 12, 8), rnd(1, 1, 12, 8), opts)
	if err != nil {
		t.Fatal(err)
	}
	q, k, v := rnd(1, 2, 12, 8), rnd(1, 1, 12, 8), rnd(1, 1, 12, 8)
	sinks := opts.Sinks
	const steps, lr = 100, 0.5
	var first, last float64
	for step := range steps + 1 {
		res, err := kernels.Attention(ctx, g, q, k, v, opts)
		if err != nil {
			t.Fatal(err)
		}
		dOut := res.Out // ∂L/∂O = O − T
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
		if step == steps {
			break
		}
		gr, err := kernels.AttentionGrad(ctx, g, q, k, v, dOut, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []struct{ x, d []float32 }{{q.Data, gr.DQ.Data}, {k.Data, gr.DK.Data}, {v.Data, gr.DV.Data}, {sinks, gr.DSinks}} {
			for i, d := range u.d {
				u.x[i] -= lr * d
			}
		}
	}
	t.Logf("loss %.4g → %.4g in %d steps", first, last, steps)
	if !(last < first/10) {
		t.Errorf("loss %.4g → %.4g in %d steps: want below a tenth", first, last, steps)
	}
}
