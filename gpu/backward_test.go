//go:build (cgo || gogpu) && !nogpu

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

// grads is one backend's gradients for a case (dBias when it has a
// bias), read back as float32.
type grads struct {
	dq, dk, dv, dSinks, dBias []float32
}

// backwardOn runs c's forward on be (Fused, for O, stored in c.DTypes.O,
// and the LSE) and then be's Backward with dO (stored as O is), its
// bias, keep-mask and a DBias when c has a bias, and returns the
// gradients, dQ, dK and dV stored as Q, K and V are. The gradients'
// buffers start as NaN (every element must be written) and the inputs
// are read back after: the backward pass must not modify them.
func backwardOn(t testing.TB, be backend.Backend, c backendtest.Case, dO []float32) grads {
	t.Helper()
	ctx := context.Background()
	p := c.Problem.Resolved()
	ops, err := backendtest.Upload(be, c)
	if err != nil {
		t.Fatal(err)
	}
	defer ops.Release()
	var bufs []backend.Buffer
	defer func() {
		for _, b := range bufs {
			b.Release()
		}
	}()
	up := func(dt backend.DType, x []float32, n int) backend.Buffer {
		buf, err := be.Alloc(dt, n)
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
	dt := c.DTypes
	dob := up(dt.O, dO, p.OLen())
	o, lse := up(dt.O, nil, p.OLen()), up(backend.Float32, nil, p.LSELen())
	if err := be.Fused(ctx, backend.FusedParams{Problem: p, Bias: ops.Bias, Keep: ops.Keep}, ops.Q, ops.K, ops.V, o, lse); err != nil {
		t.Fatalf("%s: fused: %v", be.Name(), err)
	}
	dq, dk, dv := up(dt.Q, nans(p.QLen()), p.QLen()), up(dt.K, nans(p.KLen()), p.KLen()), up(dt.V, nans(p.VLen()), p.VLen())
	bp := backend.BackwardParams{Problem: c.Problem, Bias: ops.Bias, Keep: ops.Keep}
	if c.Bias != nil {
		bp.DBias = &backend.Mask{Buf: up(backend.Float32, nans(len(c.Bias.Data)), len(c.Bias.Data)), Shape: c.Bias.Shape}
	}
	var g grads
	if p.Sinks != nil {
		g.dSinks = nans(p.H)
	}
	bw, ok := be.(backend.Backwarder)
	if !ok {
		t.Fatalf("%s has no backward pass", be.Name())
	}
	if err := bw.Backward(ctx, bp, ops.Q, ops.K, ops.V, o, lse, dob, dq, dk, dv, g.dSinks); err != nil {
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
	if bp.DBias != nil {
		g.dBias = read(bp.DBias.Buf)
	}
	for _, in := range []struct {
		name string
		buf  backend.Buffer
		want []float32
	}{{"Q", ops.Q, c.Q}, {"K", ops.K, c.K}, {"V", ops.V, c.V}, {"dO", dob, rounded(dt.O, dO)}} {
		if got := read(in.buf); !slices.Equal(got, in.want) && (len(got) > 0 || len(in.want) > 0) {
			t.Fatalf("%s: backward modified %s", be.Name(), in.name)
		}
	}
	return g
}

// rounded is x stored as dt and read back.
func rounded(dt backend.DType, x []float32) []float32 {
	if !dt.Half() {
		return x
	}
	r := make([]float32, len(x))
	for i, v := range x {
		r[i] = dt.Round(v)
	}
	return r
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
		name     string
		gpu, cpu []float32
	}{{"dQ", g.dq, c.dq}, {"dK", g.dk, c.dk}, {"dV", g.dv, c.dv}, {"dSinks", g.dSinks, c.dSinks}, {"dBias", g.dBias, c.dBias}} {
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
	}{{"dQ", g.dq, ref.DQ}, {"dK", g.dk, ref.DK}, {"dV", g.dv, ref.DV}, {"dSinks", g.dSinks, ref.DSinks}, {"dBias", g.dBias, ref.DBias}} {
		if err := backendtest.NearGrad(x.name+" (against the reference)", x.got, x.want, tol); err != nil {
			t.Error(err)
		}
	}
}

// zeroWhereEmpty checks that every row of c that sees no key (the
// forward's Reference says) has a dQ of exactly 0 in g.
func zeroWhereEmpty(t testing.TB, c backendtest.Case, g grads) {
	t.Helper()
	p := c.Problem.Resolved()
	fwd := backendtest.Reference(c)
	qs := p.QRowsOf()
	empty := 0
	for b := range p.B {
		for h := range p.H {
			for i := range p.QRows(b) {
				if !fwd.Empty[p.LSEOffset(b, h, i)] {
					continue
				}
				empty++
				for d, x := range g.dq[qs.Offset(b, h, i):][:p.D] {
					if x != 0 {
						t.Fatalf("row (%d, %d, %d) sees no key, but dQ[%d] = %v", b, h, i, d, x)
					}
				}
			}
		}
	}
	if empty == 0 {
		t.Fatal("no row sees no key: the case tests nothing")
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
// sinks and an explicit scale; a wide row under the hardware plan too
// (its lanes: L = 4 at D = 128), every row in CI's hardware-plan step.
func TestBackward(t *testing.T) {
	g := openGPU(t)
	c := openCPU(t)
	// The hardware plan's backward too, for the wide heads, whose
	// head dims it shares over subgroup lanes (backkv.wgsl and backq.wgsl
	// at L = 2 or 4) where the adapter's plan gives a key or row one
	// invocation.
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	hw := openGPU(t)
	for n, r := range []struct {
		p backend.Problem
		// chunks bounds the rows and keys of a dispatch
		// (gpu.SetBackwardChunks), so that a small problem runs the
		// many dispatches of a large one under the loop cap.
		chunks int
		// hw runs the row under the hardware plan too.
		hw bool
		// full keeps the row to hardwareFull's runs (CI's hardware-plan
		// step), under both plans: the adapter's plan gives a wide head's
		// key one invocation, whose kernels lavapipe takes 10 to 20 s to
		// compile, and no real GPU runs that plan.
		full bool
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
		// Wide heads: under the hardware plan with subgroups a key's
		// head dims are shared by 2 (D = 64, 72) or 4 (D = 128)
		// invocations of backkv.wgsl, their products summed by shuffles.
		{p: causal(prob(1, 2, 1, 33, 70, 128, 128)), hw: true},
		{p: causal(prob(1, 2, 1, 20, 45, 128, 64)), full: true},
		{p: bnhd(window(softcap(alibi(prob(1, 4, 2, 40, 90, 64, 64)), 2), 20, 3)), full: true},
		{p: prob(1, 2, 2, 17, 33, 72, 72), full: true},
	} {
		name := fmt.Sprintf("%d_%s", n, caseName(r.p, nil, nil))
		if r.chunks > 0 {
			name += fmt.Sprintf("_chunks%d", r.chunks)
		}
		t.Run(name, func(t *testing.T) {
			hardwareRow(t, !r.full)
			defer gpu.SetBackwardChunks(gpu.SetBackwardChunks(r.chunks))
			rng := newRand(uint64(600 + n))
			cs := backendtest.RandomCase(rng, r.p, nil, nil)
			dO := randomDO(rng, r.p)
			ref := backendtest.ReferenceGrad(cs, dO)
			cpu := backwardOn(t, c, cs, dO)
			checkGrads(t, backwardOn(t, g, cs, dO), cpu, &ref, backendtest.Tol)
			if r.hw || hardwareFull() {
				checkGrads(t, backwardOn(t, hw, cs, dO), cpu, &ref, backendtest.Tol)
			}
		})
	}
}

// TestBackwardVariants compares the GPU's Backward with
// backendtest.ReferenceGrad and the CPU's Backward, as TestBackward
// does, on what the forward's masks, sequences and dtypes add: a bias
// (dBias too) of the full shape and broadcast over the batch, the
// heads, the rows or the keys, under a softcap, ALiBi and causal
// masking; a keep-mask, with rows it hides entirely (whose dQ must be
// exactly 0); packed sequences, with an empty one, with packed or dense
// keys, with a bias and sinks; and half operands, each its own dtype
// (gradients stored as Q, K and V are), within backendtest.GradTol.
// Each kind runs once more with dispatches of 3 rows, keys or bias
// terms (gpu.SetBackwardChunks).
func TestBackwardVariants(t *testing.T) {
	g := openGPU(t)
	c := openCPU(t)
	f16, bf16 := backend.Float16, backend.BFloat16
	packed := func(p backend.Problem, qs, ks []int) backend.Problem { return backendtest.PackedProblem(p, qs, ks) }
	hideRows := func(rows ...int) func(*backendtest.Case) {
		return func(cs *backendtest.Case) {
			m := cs.Keep
			for x := range m.Data {
				if slices.Contains(rows, x/m.Shape[3]%m.Shape[2]) {
					m.Data[x] = 0
				}
			}
		}
	}
	for n, r := range []struct {
		p          backend.Problem
		bias, keep *[4]int
		dt         backendtest.DTypes
		edit       func(*backendtest.Case)
		chunks     int
		empty      bool // some row sees no key: its dQ must be exactly 0
	}{
		{p: prob(2, 4, 2, 20, 30, 8, 8), bias: &[4]int{2, 4, 20, 30}},
		{p: prob(2, 4, 2, 20, 30, 8, 8), bias: &[4]int{2, 4, 20, 30}, chunks: 3},
		{p: softcap(prob(2, 4, 2, 20, 30, 8, 8), 3), bias: &[4]int{1, 1, 20, 30}},
		{p: causal(prob(2, 4, 4, 20, 30, 8, 8)), bias: &[4]int{2, 1, 1, 30}},
		{p: alibi(bnhd(prob(2, 4, 1, 20, 30, 8, 8))), bias: &[4]int{1, 4, 20, 1}, keep: &[4]int{2, 1, 20, 30}},
		{p: alibi(bnhd(prob(2, 4, 1, 20, 30, 8, 8))), bias: &[4]int{1, 4, 20, 1}, keep: &[4]int{2, 1, 20, 30}, chunks: 3},
		{p: prob(1, 2, 2, 10, 12, 8, 8), keep: &[4]int{1, 2, 10, 12}, edit: hideRows(3, 4, 9), empty: true},
		{p: causal(prob(2, 2, 1, 70, 70, 8, 8)), keep: &[4]int{2, 1, 70, 70}, edit: hideRows(0, 65), empty: true, chunks: 3},
		{p: causal(packed(prob(0, 4, 2, 0, 0, 8, 8), []int{5, 0, 30, 2}, []int{9, 3, 40, 0})), empty: true},
		{p: causal(packed(prob(0, 4, 2, 0, 0, 8, 8), []int{5, 0, 30, 2}, []int{9, 3, 40, 0})), empty: true, chunks: 3},
		{p: sinks(packed(prob(0, 2, 1, 0, 0, 8, 8), []int{3, 4, 0}, []int{5, 4, 2}), 1, -1), bias: &[4]int{3, 2, 4, 5}},
		{p: window(packed(prob(0, 2, 2, 0, 9, 8, 8), []int{7, 0, 12}, nil), 3, 1), bias: &[4]int{1, 2, 12, 1}, keep: &[4]int{3, 1, 12, 9}},
		{p: causal(prob(1, 4, 2, 33, 40, 16, 16)), bias: &[4]int{1, 4, 33, 40}, dt: backendtest.DTypes{Q: f16, K: bf16, V: f16, O: bf16, Bias: f16}},
		{p: bnhd(prob(1, 4, 2, 33, 40, 16, 16)), dt: backendtest.Same(bf16), chunks: 3},
		{p: prob(2, 2, 1, 9, 20, 17, 5), keep: &[4]int{2, 2, 9, 20}, dt: backendtest.DTypes{Q: bf16, K: backend.Float32, V: f16, O: f16}},
		{p: causal(packed(prob(0, 2, 1, 0, 0, 16, 16), []int{6, 0, 9}, []int{12, 2, 0})), bias: &[4]int{3, 1, 9, 12},
			dt: backendtest.DTypes{Q: f16, K: f16, V: bf16, O: f16, Bias: bf16}, empty: true, chunks: 3},
	} {
		name := fmt.Sprintf("%d_%s", n, caseName(r.p, r.bias, r.keep))
		if r.dt.Half() {
			name += "_" + strings.NewReplacer(":", "", ",", "_").Replace(r.dt.String())
		}
		if r.chunks > 0 {
			name += fmt.Sprintf("_chunks%d", r.chunks)
		}
		t.Run(name, func(t *testing.T) {
			defer gpu.SetBackwardChunks(gpu.SetBackwardChunks(r.chunks))
			rng := newRand(uint64(900 + n))
			cs := backendtest.RandomCase(rng, r.p, r.bias, r.keep)
			if r.edit != nil {
				r.edit(&cs)
			}
			dt := r.dt
			cs = cs.WithDTypes(dt)
			dO := rounded(dt.O, randomDO(rng, r.p))
			ref := backendtest.ReferenceGrad(cs, dO)
			gg := backwardOn(t, g, cs, dO)
			checkGrads(t, gg, backwardOn(t, c, cs, dO), &ref, backendtest.GradTol(dt))
			if r.empty {
				zeroWhereEmpty(t, cs, gg)
			}
		})
	}
}

// TestBackwardLongN compares the GPU's Backward with the CPU's at N =
// 4096 (B = 1, H = 1, D = 64, causal), within backendtest.Tol of each
// tensor's largest gradient: many dispatches of rows and of keys under
// the CPU plan's loop cap, whose sums must add up.
func TestBackwardLongN(t *testing.T) {
	g := openGPU(t)
	c := openCPU(t)
	p := causal(prob(1, 1, 1, 4096, 4096, 64, 64))
	rng := newRand(700)
	cs := backendtest.RandomCase(rng, p, nil, nil)
	dO := randomDO(rng, p)
	checkGrads(t, backwardOn(t, g, cs, dO), backwardOn(t, c, cs, dO), nil, backendtest.Tol)
}

// TestBackwardRefuses checks that Backward refuses, with an error
// wrapping backend.ErrUnsupported that names it and before any work (dQ
// keeps what it held), what it does not compute, and bad sizes with
// ErrShape; that it refuses them itself (gpu.RefuseBackward), whatever
// BackwardParams.Validate comes to accept, and takes half operands but
// for the LSE, the keep-mask and DBias; and that it stops on a
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
	withP := func(f func(*backend.BackwardParams)) backend.BackwardParams {
		bp := backend.BackwardParams{Problem: p}
		f(&bp)
		return bp
	}
	for _, c := range []struct {
		name string
		p    backend.BackwardParams
		q, v backend.Buffer
		want error
		says string
	}{
		{"vfromk", withP(func(bp *backend.BackwardParams) { bp.VFromK = true }), q, k, backend.ErrUnsupported, "V from K"},
		{"scales", withP(func(bp *backend.BackwardParams) { bp.Scales = &backend.Scales{K: []float32{1, 1}, V: []float32{1, 1}} }), q, v, backend.ErrUnsupported, "scales"},
		{"short", withP(func(*backend.BackwardParams) {}), f(p.QLen() - 1), v, backend.ErrShape, "Q"},
		{"dsinks", withP(func(bp *backend.BackwardParams) { bp.Sinks = []float32{0, 0} }), q, v, backend.ErrShape, "dSinks"},
	} {
		err := g.Backward(ctx, c.p, c.q, k, c.v, o, lse, dob, dq, dk, dv, nil)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.want, c.says)
		}
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
		{"paged", func(bp *backend.BackwardParams) { bp.Paged = &backend.Paged{} }, "paged"},
		{"views", func(bp *backend.BackwardParams) { bp.Views = &backend.Views{} }, "views"},
		{"vfromk", func(bp *backend.BackwardParams) { bp.VFromK = true }, "V from K"},
		{"scales", func(bp *backend.BackwardParams) { bp.Scales = &backend.Scales{} }, "scales"},
	} {
		err := gpu.RefuseBackward(withP(c.set), q, k, v, o, lse, dob, dq, dk, dv, nil)
		if !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("refuseBackward: %s: %v, want ErrUnsupported naming %q", c.name, err, c.says)
		}
	}
	// Every operand may be a half but the LSE (and the keep-mask and
	// DBias, Float32 as Validate says).
	for i, buf := range []*backend.Buffer{&q, &k, &v, &o, &lse, &dob, &dq, &dk, &dv} {
		bufs := []backend.Buffer{q, k, v, o, lse, dob, dq, dk, dv}
		bufs[i] = alloc(backend.BFloat16, (*buf).Len())
		err := gpu.RefuseBackward(withP(func(*backend.BackwardParams) {}), bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], bufs[7], bufs[8], nil)
		if i == 4 && (!errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), "LSE")) {
			t.Errorf("refuseBackward: the LSE in bfloat16: %v, want ErrUnsupported", err)
		}
		if i != 4 && err != nil {
			t.Errorf("refuseBackward: operand %d in bfloat16: %v", i, err)
		}
	}
	halfMask := &backend.Mask{Buf: alloc(backend.Float16, p.ScoresLen()), Shape: [4]int{1, 2, 4, 4}}
	for _, c := range []struct {
		name string
		set  func(*backend.BackwardParams)
		says string
	}{
		{"keep-mask in float16", func(bp *backend.BackwardParams) { bp.Keep = halfMask }, "keep-mask"},
		{"DBias in float16", func(bp *backend.BackwardParams) { bp.Bias, bp.DBias = halfMask, halfMask }, "DBias"},
	} {
		err := gpu.RefuseBackward(withP(c.set), q, k, v, o, lse, dob, dq, dk, dv, nil)
		if !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("refuseBackward: %s: %v, want ErrUnsupported naming %q", c.name, err, c.says)
		}
	}
	if err := gpu.RefuseBackward(withP(func(bp *backend.BackwardParams) {
		bp.Bias, bp.DBias = halfMask, &backend.Mask{Buf: f(p.ScoresLen()), Shape: [4]int{1, 2, 4, 4}}
	}),
		q, k, v, o, lse, dob, dq, dk, dv, nil); err != nil {
		t.Errorf("refuseBackward: a float16 bias: %v", err)
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
// (odd ones among them), both layouts, the variants (flags), and
// (masks) a bias broadcast over any of its dimensions (its gradient
// too), a keep-mask and packed sequences, of random lengths (empty ones
// among them), with packed or dense keys, and (sparse) an index list,
// shared or one a KV head, of 0 to past Nk entries a row (in place of
// the bias, keep-mask and ALiBi, which a list refuses), or a block mask
// of 16, 32 or 64, shared or one a head, of any density, within
// backendtest.Tol of each gradient's largest. Its seeds run as a test.
func FuzzBackward(f *testing.F) {
	f.Add(uint8(1), uint8(2), uint8(2), uint8(33), uint8(70), uint8(8), uint8(8), uint8(0), uint16(1), uint8(0), uint8(0))
	f.Add(uint8(2), uint8(1), uint8(4), uint8(65), uint8(31), uint8(17), uint8(5), uint8(0b1001_0101), uint16(2), uint8(0), uint8(0))
	f.Add(uint8(1), uint8(2), uint8(1), uint8(1), uint8(64), uint8(8), uint8(16), uint8(0b0110_1010), uint16(3), uint8(0), uint8(0))
	f.Add(uint8(2), uint8(1), uint8(8), uint8(12), uint8(0), uint8(8), uint8(8), uint8(0b0001_0000), uint16(4), uint8(0), uint8(0))
	// A bias of [B, 1, Nq, Nk] with a keep-mask, softcapped and causal;
	// a bias of [1, H, 1, Nk] over packed sequences and keys; packed
	// queries over dense keys with sinks and a window.
	f.Add(uint8(1), uint8(1), uint8(2), uint8(20), uint8(30), uint8(8), uint8(8), uint8(0b0000_0101), uint16(5), uint8(0b0010_0101), uint8(0))
	f.Add(uint8(1), uint8(1), uint8(1), uint8(40), uint8(50), uint8(16), uint8(8), uint8(0b0000_1001), uint16(6), uint8(0b1100_1011), uint8(0))
	f.Add(uint8(1), uint8(0), uint8(2), uint8(25), uint8(20), uint8(8), uint8(8), uint8(0b0011_0000), uint16(7), uint8(0b0100_0000), uint8(0))
	// An index list a KV head over packed causal sequences with sinks; a
	// shared one of more entries than keys, with key lengths and a
	// window; block masks of 16 a head under a keep-mask and bias, and
	// of 64 shared, causal with an offset.
	f.Add(uint8(1), uint8(1), uint8(2), uint8(30), uint8(40), uint8(12), uint8(7), uint8(0b0001_0001), uint16(8), uint8(0b1100_0000), uint8(0b0101_0101))
	f.Add(uint8(0), uint8(0), uint8(3), uint8(9), uint8(20), uint8(16), uint8(16), uint8(0b0110_0000), uint16(9), uint8(0), uint8(0b1011_0010))
	f.Add(uint8(1), uint8(1), uint8(1), uint8(50), uint8(70), uint8(8), uint8(9), uint8(0b0000_0100), uint16(10), uint8(0b0010_0011), uint8(0b0000_0101))
	f.Add(uint8(0), uint8(1), uint8(2), uint8(80), uint8(99), uint8(16), uint8(16), uint8(0b1000_0001), uint16(11), uint8(0), uint8(0b0001_0001))
	g := openGPU(f)
	c := openCPU(f)
	f.Fuzz(func(t *testing.T, b, kv, group, nq, nk, d, dv, flags uint8, seed uint16, masks, sparse uint8) {
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
		if masks&64 != 0 {
			// Packed sequences of up to Nq rows (and Nk keys) each.
			qs := make([]int, p.B)
			var ks []int
			for i := range qs {
				qs[i] = rng.IntN(p.Nq + 1)
			}
			if masks&128 != 0 {
				ks = make([]int, p.B)
				for i := range ks {
					ks[i] = rng.IntN(p.Nk + 1)
				}
			}
			p.KVLens = nil
			p = backendtest.PackedProblem(p, qs, ks)
		}
		var bias, keep *[4]int
		if p.Nq > 0 && p.Nk > 0 {
			full := [4]int{p.B, p.H, p.Nq, p.Nk}
			if masks&1 != 0 {
				sh := full
				for d := range sh {
					if masks&(2<<d) != 0 {
						sh[d] = 1
					}
				}
				bias = &sh
			}
			if masks&32 != 0 {
				keep = &[4]int{p.B, 1, p.Nq, p.Nk}
			}
		}
		switch sparse % 3 {
		case 1:
			heads := 1
			if sparse&4 != 0 {
				heads = p.KVHeads
			}
			p.ALiBi, bias, keep = nil, nil, nil
			p = backendtest.WithIndices(rng, p, heads, int(sparse>>3)%(p.Nk+3))
		case 2:
			p = backendtest.WithBlocks(rng, p, 16<<(int(sparse>>3)%3), rng.Float64(), sparse&4 != 0)
		}
		cs := backendtest.RandomCase(rng, p, bias, keep)
		dO := randomDO(rng, p)
		checkGrads(t, backwardOn(t, g, cs, dO), backwardOn(t, c, cs, dO), nil, backendtest.Tol)
	})
}

// TestBackwardTrains trains a tiny attention model on the GPU by plain
// gradient descent through kernels.AttentionGrad: Q, K and V (two query
// heads sharing one KV head, causal, with sinks) are the parameters,
// the target is the output of other Q, K and V, and the loss ½‖O − T‖²
// must fall below a tenth of where it started in 100 steps (it falls
// well below that).
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
		gr, err := kernels.AttentionGrad(ctx, g, q, k, v, dOut, &kernels.GradOptions{Options: opts})
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
