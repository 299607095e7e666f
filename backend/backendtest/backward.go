package backendtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/attn-go/attn/backend"
)

// GradTol is the tolerance of a backward pass's gradients in dtype t (the
// widest of the case's operand dtypes): NearGrad's tol, relative to the
// largest gradient of each tensor. Float32 sums over a few hundred keys
// and query rows stay inside 1e-4; a half gradient is rounded once, and
// its O and dO were rounded before δ = dO·O was taken.
func GradTol(dt DTypes) float64 {
	switch {
	case dt.Q == backend.BFloat16 || dt.K == backend.BFloat16 || dt.V == backend.BFloat16 || dt.O == backend.BFloat16:
		return 2e-2
	case dt.Half():
		return 3e-3
	}
	return 1e-4
}

// RunBackward runs c forward through be.Fused (O in c.DTypes.O and the
// LSE) and then backward through be's Backward (which must accept or
// refuse as its CheckBackward does) with dO (rounded to O's
// dtype) into dQ, dK and dV stored in Q's, K's and V's dtypes, dSinks
// when c has sinks, and dBias (Float32, the bias's shape) when c has a
// bias. It compares every gradient with ReferenceGrad within
// GradTol(c.DTypes), checks that a row that sees no key has a dQ of
// exactly 0, that the operands past each output are untouched, and that
// Backward changed no input.
func RunBackward(ctx context.Context, be backend.Backend, c Case, dO []float32) error {
	bw, ok := be.(backend.Backwarder)
	if !ok {
		return fmt.Errorf("the %s backend has no Backward (backend.Backwarder)", be.Name())
	}
	p := c.Problem.Resolved()
	dO = rounded(c.DTypes.O, dO, p.Dv)
	s := &session{be: be, pad: pad}
	defer s.release()
	ops, err := s.upload(c)
	if err != nil {
		return err
	}
	o, err := s.out("O", c.DTypes.O, p.OLen())
	if err != nil {
		return err
	}
	lse, err := s.out("LSE", backend.Float32, p.LSELen())
	if err != nil {
		return err
	}
	fp := backend.FusedParams{Problem: c.Problem, Bias: ops.Bias, Keep: ops.Keep}
	if err := guard(func() error { return be.Fused(ctx, fp, ops.Q, ops.K, ops.V, o, lse) }); err != nil {
		return backend.Wrapf(err, "Fused")
	}
	dob, err := s.in("dO", c.DTypes.O, dO)
	if err != nil {
		return err
	}
	// The forward's outputs are the backward's inputs: Backward must
	// leave them as they are.
	for _, in := range []struct {
		name string
		buf  backend.Buffer
		n    int
	}{{"O", o, p.OLen()}, {"LSE", lse, p.LSELen()}} {
		data, err := s.read(in.name, in.buf, in.n+s.pad)
		if err != nil {
			return err
		}
		s.inputs = append(s.inputs, input{name: in.name, buf: in.buf, data: data})
	}
	dq, err := s.out("dQ", c.DTypes.Q, p.QLen())
	if err != nil {
		return err
	}
	dk, err := s.out("dK", c.DTypes.K, p.KLen())
	if err != nil {
		return err
	}
	dv, err := s.out("dV", c.DTypes.V, p.VLen())
	if err != nil {
		return err
	}
	bp := backend.BackwardParams{Problem: c.Problem, Bias: ops.Bias, Keep: ops.Keep}
	if c.Bias != nil {
		buf, err := s.out("dBias", backend.Float32, len(c.Bias.Data))
		if err != nil {
			return err
		}
		bp.DBias = &backend.Mask{Buf: buf, Shape: c.Bias.Shape}
	}
	var dSinks []float32
	if p.Sinks != nil {
		dSinks = nans(p.H)
	}
	cerr := guard(func() error { return bw.CheckBackward(bp, ops.Q, ops.K, ops.V, o, lse, dob, dq, dk, dv, dSinks) })
	err = guard(func() error { return bw.Backward(ctx, bp, ops.Q, ops.K, ops.V, o, lse, dob, dq, dk, dv, dSinks) })
	if (cerr == nil) != (err == nil) {
		return fmt.Errorf("CheckBackward and Backward disagree: %v, and %v", cerr, err)
	}
	if err != nil {
		return backend.Wrapf(err, "Backward")
	}
	want := ReferenceGrad(c, dO)
	tol := GradTol(c.DTypes)
	got := map[string][]float32{"dSinks": dSinks}
	for _, out := range []struct {
		name string
		buf  backend.Buffer
		n    int
	}{{"dQ", dq, p.QLen()}, {"dK", dk, p.KLen()}, {"dV", dv, p.VLen()}} {
		if got[out.name], err = s.result(out.name, out.buf, out.n); err != nil {
			return err
		}
	}
	cmp := []struct {
		name string
		want []float64
	}{{"dQ", want.DQ}, {"dK", want.DK}, {"dV", want.DV}, {"dSinks", want.DSinks}}
	if bp.DBias != nil {
		if got["dBias"], err = s.result("dBias", bp.DBias.Buf, len(c.Bias.Data)); err != nil {
			return err
		}
		cmp = append(cmp, struct {
			name string
			want []float64
		}{"dBias", want.DBias})
	}
	for _, x := range cmp {
		if err := NearGrad(x.name, got[x.name], x.want, tol); err != nil {
			return err
		}
	}
	// A row that sees no key has no gradient, exactly.
	fwd := Reference(c)
	qs := p.QRowsOf()
	for b := range p.B {
		for h := range p.H {
			for i := range p.QRows(b) {
				if !fwd.Empty[p.LSEOffset(b, h, i)] {
					continue
				}
				for d, x := range got["dQ"][qs.Offset(b, h, i):][:p.D] {
					if x != 0 {
						return fmt.Errorf("row (%d, %d, %d) sees no key, but dQ[%d] = %v", b, h, i, d, x)
					}
				}
			}
		}
	}
	return s.checkInputs("Backward")
}

// backwardSpec is a case of the backward pass's section; core marks the
// cases every Backwarder must compute, the others (a bias, a keep-mask,
// packed sequences, half operands) it may refuse with ErrUnsupported.
type backwardSpec struct {
	spec
	core bool
	// blocks: the case has a block mask, which a backend with
	// Caps.BackwardBlocks must compute and one without must refuse
	// (ErrUnsupported); indices likewise an index list and
	// Caps.BackwardIndices.
	blocks, indices bool
}

// backwardSpecs are the backward pass's cases: edge sizes, tile edges of
// 64, 128 and 256, odd head dims, GQA 1/4/8, Dv ≠ D, BNHD, and every
// variant.
func backwardSpecs() []backwardSpec {
	off, neg := 5, -3
	withV := func(p backend.Problem, f func(*backend.Variants)) backend.Problem { f(&p.Variants); return p }
	core := []spec{
		{p: prob(1, 1, 1, 0, 5, 8, 8)},
		{p: prob(1, 1, 1, 3, 0, 8, 8)},
		{p: prob(1, 2, 2, 1, 1, 4, 4)},
		{p: prob(1, 2, 1, 257, 129, 16, 16)},
		{p: causal(prob(1, 1, 1, 255, 127, 8, 8))},
		{p: bnhd(prob(2, 2, 2, 65, 64, 17, 13))},
		{p: prob(1, 8, 8, 20, 30, 16, 16)},
		{p: prob(1, 8, 2, 20, 30, 16, 24)},
		{p: bnhd(causal(prob(1, 8, 1, 20, 30, 16, 8)))},
		{p: withV(causal(prob(2, 2, 1, 40, 70, 8, 8)), func(v *backend.Variants) { v.CausalOffset = &off; v.KVLens = []int{70, 33} })},
		{p: withV(causal(prob(1, 2, 2, 9, 20, 8, 8)), func(v *backend.Variants) { v.CausalOffset = &neg })},
		{p: withV(prob(1, 4, 2, 50, 50, 16, 16), func(v *backend.Variants) { v.Window = win(7, 2) })},
		{p: withV(bnhd(prob(1, 4, 2, 30, 140, 16, 16)), func(v *backend.Variants) {
			v.Softcap = 2.5
			v.ALiBi = []float32{0.5, 0.25, 0.125, 0.0625}
			v.Sinks = []float32{0, 1, -1, 3}
		})},
		{p: withV(prob(2, 2, 2, 6, 10, 8, 8), func(v *backend.Variants) { v.KVLens = []int{0, 10}; v.Sinks = []float32{0.5, -2} })},
	}
	extra := []spec{
		{p: prob(2, 4, 2, 20, 30, 16, 16), bias: &[4]int{2, 4, 20, 30}},
		{p: withV(prob(2, 4, 2, 20, 30, 16, 16), func(v *backend.Variants) { v.Softcap = 3 }), bias: &[4]int{1, 1, 20, 30}},
		{p: prob(2, 4, 4, 20, 30, 16, 16), bias: &[4]int{2, 1, 1, 30}},
		{p: bnhd(causal(prob(2, 4, 1, 20, 30, 16, 16))), bias: &[4]int{2, 4, 20, 1}, keep: &[4]int{2, 1, 20, 30}},
		{p: prob(1, 2, 2, 10, 12, 8, 8), keep: &[4]int{1, 2, 10, 12}, note: "rows3-4masked", edit: func(c *Case) {
			for i := range c.Keep.Data {
				if r := i / 12 % 10; r == 3 || r == 4 {
					c.Keep.Data[i] = 0
				}
			}
		}},
		{p: causal(PackedProblem(prob(0, 4, 2, 0, 0, 16, 8), []int{5, 0, 70, 1}, []int{9, 3, 70, 140}))},
		{p: withV(PackedProblem(prob(0, 2, 1, 0, 0, 8, 8), []int{3, 4}, []int{5, 4}), func(v *backend.Variants) { v.Sinks = []float32{1, -1} }),
			bias: &[4]int{2, 2, 4, 5}},
		// f16, causal, key tiles past the CPU's first (256 keys), each
		// packed once for the group's heads and query tiles, and a
		// window whose rows start mid-tile.
		{p: withV(causal(prob(1, 2, 1, 140, 520, 32, 32)), func(v *backend.Variants) { v.Window = win(290, 0) }), dt: Same(backend.Float16)},
		{p: bnhd(prob(1, 4, 2, 40, 50, 16, 16)), dt: Same(backend.BFloat16)},
		{p: prob(1, 2, 1, 20, 30, 16, 16), dt: DTypes{Q: backend.Float32, K: backend.Float16, V: backend.BFloat16, O: backend.Float32}},
	}
	var out []backwardSpec
	for _, sp := range core {
		out = append(out, backwardSpec{sp, true, false, false})
	}
	for _, sp := range extra {
		out = append(out, backwardSpec{sp, false, false, false})
	}
	// Block masks: blocks smaller and larger than the CPU's tiles (128
	// rows, 256 keys), partial last blocks, shared by the heads and one a
	// head, with causal masking, a window, a keep-mask, a bias, sinks,
	// packed sequences and halves; densities from none to all.
	blk := blockSpec
	withSpec := func(sp spec, f func(*spec)) spec { f(&sp); return sp }
	for _, sp := range []spec{
		blk(prob(1, 2, 1, 300, 600, 16, 16), 64, 0.3, false),
		blk(causal(prob(2, 4, 2, 257, 513, 8, 8)), 16, 0.5, true),
		blk(bnhd(prob(1, 2, 2, 130, 700, 16, 24)), 256, 0.5, false),
		blk(prob(1, 2, 1, 100, 200, 8, 8), 32, 0, false),
		blk(prob(1, 2, 1, 100, 200, 8, 8), 32, 1, false),
		blk(withV(causal(prob(1, 4, 2, 200, 330, 16, 16)), func(v *backend.Variants) {
			v.Window = win(60, 0)
			v.Sinks = []float32{0, 1, -1, 3}
		}), 32, 0.6, true),
		withSpec(blk(prob(2, 2, 2, 70, 140, 8, 8), 16, 0.5, false), func(sp *spec) {
			sp.bias, sp.keep = &[4]int{2, 1, 70, 140}, &[4]int{1, 2, 70, 140}
		}),
		blk(causal(PackedProblem(prob(0, 2, 1, 0, 0, 16, 8), []int{40, 0, 90}, []int{50, 3, 150})), 32, 0.5, false),
		withSpec(blk(causal(prob(1, 4, 2, 150, 270, 32, 32)), 64, 0.4, false), func(sp *spec) { sp.dt = Same(backend.Float16) }),
		withSpec(blk(bnhd(prob(1, 4, 2, 90, 160, 16, 16)), 32, 0.4, true), func(sp *spec) { sp.dt = Same(backend.BFloat16) }),
	} {
		out = append(out, backwardSpec{sp, false, true, false})
	}
	// Index lists: shared by the heads and one a KV head, padded with −1,
	// under causal masking and its offset, key lengths (a batch with
	// none), a window, softcap and sinks, packed (keys packed or dense),
	// GQA groups of 1 to 8, decoding rows, odd head dims, no entries,
	// halves and mixed dtypes.
	idx := func(p backend.Problem, heads, k int) spec {
		name := fmt.Sprintf("idx%dx%d", heads, k)
		return spec{p: p, note: name, edit: func(c *Case) {
			c.Problem = WithIndices(newRand(describe(p, nil, nil)+name), c.Problem, heads, k)
		}}
	}
	for _, sp := range []spec{
		idx(prob(2, 4, 2, 30, 90, 16, 16), 1, 20),
		idx(causal(prob(1, 8, 2, 40, 130, 16, 8)), 2, 33),
		idx(withV(causal(prob(2, 4, 2, 20, 70, 16, 16)), func(v *backend.Variants) {
			v.KVLens = []int{70, 41}
			v.Window = win(30, 0)
			v.Softcap = 3
			v.Sinks = []float32{0, 1, -1, 0.5}
		}), 2, 16),
		idx(causal(PackedProblem(prob(0, 2, 1, 0, 0, 8, 8), []int{7, 1, 20}, []int{30, 5, 60})), 1, 12),
		withSpec(idx(bnhd(prob(1, 4, 2, 25, 80, 16, 16)), 2, 24), func(sp *spec) { sp.dt = Same(backend.BFloat16) }),
		idx(causal(prob(1, 8, 1, 33, 100, 17, 5)), 1, 40),
		idx(prob(3, 8, 4, 1, 300, 32, 32), 4, 64),
		idx(withV(causal(prob(2, 2, 2, 12, 40, 8, 8)), func(v *backend.Variants) {
			v.CausalOffset = &neg
			v.KVLens = []int{0, 40}
			v.Sinks = []float32{0.5, -2}
		}), 2, 9),
		idx(PackedProblem(prob(0, 4, 2, 0, 60, 16, 16), []int{9, 0, 14}, nil), 2, 15),
		idx(prob(1, 2, 1, 6, 20, 8, 8), 1, 0),
		withSpec(idx(causal(prob(1, 4, 2, 50, 90, 32, 32)), 1, 20), func(sp *spec) { sp.dt = Same(backend.Float16) }),
		withSpec(idx(prob(2, 2, 1, 9, 30, 20, 12), 1, 10), func(sp *spec) {
			sp.dt = DTypes{Q: backend.BFloat16, K: backend.Float32, V: backend.Float16, O: backend.Float16}
		}),
	} {
		out = append(out, backwardSpec{sp, false, false, true})
	}
	return out
}

// testBackward is the backward pass's section: every case against
// ReferenceGrad, and the refusals.
func (s *suite) testBackward(t *testing.T) {
	if _, ok := s.be.(backend.Backwarder); !ok {
		t.Skipf("the %s backend computes no gradients (backend.Backwarder)", s.be.Name())
	}
	ctx := context.Background()
	for _, sp := range backwardSpecs() {
		t.Run(sp.name(), func(t *testing.T) {
			if why := s.lacks(sp.p, sp.bias != nil, sp.keep != nil, sp.dt); why != "" {
				t.Skip(why)
			}
			c := sp.build()
			p := c.Problem.Resolved()
			dO := uniform(newRand("dO"+sp.name()), p.OLen(), 1)
			err := RunBackward(ctx, s.be, c, dO)
			if sp.blocks && !s.caps.BackwardBlocks || sp.indices && !s.caps.BackwardIndices {
				if !errors.Is(err, backend.ErrUnsupported) {
					t.Errorf("a block mask or index list without Caps.BackwardBlocks or BackwardIndices: %v, want ErrUnsupported", err)
				}
				return
			}
			if !sp.core && !sp.blocks && !sp.indices && errors.Is(err, backend.ErrUnsupported) {
				t.Logf("refused: %v", err)
				return
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("Errors", s.testBackwardErrors)
}

// testBackwardErrors checks that bad calls are refused with the right
// sentinel before any work: dQ is left as it was.
func (s *suite) testBackwardErrors(t *testing.T) {
	bw := s.be.(backend.Backwarder)
	ctx := context.Background()
	p := prob(1, 2, 1, 4, 6, 8, 8).Resolved()
	ses := &session{be: s.be}
	defer ses.release()
	f := func(name string, n int) backend.Buffer {
		buf, err := ses.alloc(name, backend.Float32, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := ses.write(name, buf, uniform(newRand(name), n, 1)); err != nil {
			t.Fatal(err)
		}
		return buf
	}
	q, k, v, o, lse, dO := f("Q", p.QLen()), f("K", p.KLen()), f("V", p.VLen()), f("O", p.OLen()), f("LSE", p.LSELen()), f("dO", p.OLen())
	dq, dk, dv := f("dQ", p.QLen()), f("dK", p.KLen()), f("dV", p.VLen())
	before, err := ses.read("dQ", dq, p.QLen())
	if err != nil {
		t.Fatal(err)
	}
	bias := &backend.Mask{Buf: f("bias", p.Nq*p.Nk), Shape: [4]int{1, 1, p.Nq, p.Nk}}
	withSinks := p
	withSinks.Sinks = []float32{1, 2}
	vfk := p
	vfk.VFromK, vfk.Dv = true, 4
	paged := PagedProblem(p, 4, 0, []int{p.Nk}, false)
	type badCall struct {
		name   string
		p      backend.BackwardParams
		q, dq  backend.Buffer
		dSinks []float32
		want   error
	}
	calls := []badCall{
		{"short Q", backend.BackwardParams{Problem: p}, f("Q-1", p.QLen()-1), dq, nil, backend.ErrShape},
		{"short dQ", backend.BackwardParams{Problem: p}, q, f("dQ-1", p.QLen()-1), nil, backend.ErrShape},
		{"dSinks without sinks", backend.BackwardParams{Problem: p}, q, dq, make([]float32, 2), backend.ErrShape},
		{"dSinks of 1 for H=2", backend.BackwardParams{Problem: withSinks}, q, dq, make([]float32, 1), backend.ErrShape},
		{"dBias without bias", backend.BackwardParams{Problem: p, DBias: bias}, q, dq, nil, backend.ErrShape},
		{"dBias of another shape", backend.BackwardParams{Problem: p, Bias: bias,
			DBias: &backend.Mask{Buf: f("dBias", p.Nk), Shape: [4]int{1, 1, 1, p.Nk}}}, q, dq, nil, backend.ErrShape},
		{"V from K", backend.BackwardParams{Problem: vfk}, q, dq, nil, backend.ErrUnsupported},
		{"Nq=-1", backend.BackwardParams{Problem: backend.Problem{B: 1, H: 2, KVHeads: 1, Nq: -1, Nk: 6, D: 8}}, q, dq, nil, backend.ErrShape},
		{"paged", backend.BackwardParams{Problem: paged}, q, dq, nil, backend.ErrUnsupported},
	}
	if s.caps.Quant8 {
		q8, err := ses.alloc("Q8", backend.Q8, p.QLen())
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, badCall{"Q in q8", backend.BackwardParams{Problem: p}, q8, dq, nil, backend.ErrUnsupported})
	}
	for _, c := range calls {
		err := guard(func() error { return bw.Backward(ctx, c.p, c.q, k, v, o, lse, dO, c.dq, dk, dv, c.dSinks) })
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if err := guard(func() error { return bw.CheckBackward(c.p, c.q, k, v, o, lse, dO, c.dq, dk, dv, c.dSinks) }); !errors.Is(err, c.want) {
			t.Errorf("%s: CheckBackward: %v, want %v", c.name, err, c.want)
		}
	}
	after, err := ses.read("dQ", dq, p.QLen())
	if err != nil {
		t.Fatal(err)
	}
	for i := range before {
		if math.Float32bits(before[i]) != math.Float32bits(after[i]) {
			t.Fatalf("a refused Backward changed dQ[%d]: %v, was %v", i, after[i], before[i])
		}
	}
}
