package backendtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
)

// Strided operands (backend.Views) and host buffers (backend.Wrapper).

// padStrides returns strides for an operand of heads × rows (dim wide)
// in batches under layout l (packed when packed), each padded past the
// dense one, so that a backend that assumes dense strides reads the NaN
// padding between rows, heads and batches.
func padStrides(l backend.Layout, packed bool, heads, rows, dim int) backend.Strides {
	var s backend.Strides
	switch {
	case packed || l == backend.BNHD:
		s.Head = dim + 2
		s.Row = heads*s.Head + 3
		s.Batch = rows*s.Row + 7
		if packed {
			s.Batch = 1 << 20 // not read: packed rows are found through Cu
		}
	default:
		s.Row = dim + 3
		s.Head = rows*s.Row + 1
		s.Batch = heads*s.Head + 5
	}
	return s
}

// ViewCase returns c's problem with Q, K and V at padded strides
// (padStrides) and their data scattered to them, NaN in every gap, for
// a backend that claims Caps.Strides: the answer is Reference(c)'s. K
// and V stay dense when c's problem is paged (a pool is dense).
func ViewCase(c Case) (p backend.Problem, q, k, v []float32) {
	r := c.Problem.Resolved()
	packed := r.Packed != nil
	packedK := packed && r.Packed.CuK != nil
	qs := padStrides(r.Layout, packed, r.H, r.Nq, r.D)
	ks := padStrides(r.Layout, packedK, r.KVHeads, r.Nk, r.D)
	vs := padStrides(r.Layout, packedK, r.KVHeads, r.Nk, r.Dv)
	views := &backend.Views{Q: &qs}
	if r.Paged == nil {
		views.K, views.V = &ks, &vs
	}
	p = c.Problem
	p.Views = views
	pr := r
	pr.Views = views
	scatter := func(dense []float32, from, to backend.Rows, n int, heads, dim int, rows func(b int) int) []float32 {
		out := nans(n)
		for b := range r.B {
			for h := range heads {
				for i := range rows(b) {
					copy(out[to.Offset(b, h, i):to.Offset(b, h, i)+dim], dense[from.Offset(b, h, i):from.Offset(b, h, i)+dim])
				}
			}
		}
		return out
	}
	kvRows := func(int) int { return r.Nk }
	if packedK {
		kvRows = func(b int) int { return r.Packed.CuK[b+1] - r.Packed.CuK[b] }
	}
	q = scatter(c.Q, r.QRowsOf(), pr.QRowsOf(), pr.QLen(), r.H, r.D, r.QRows)
	k, v = c.K, c.V
	if r.Paged == nil {
		k = scatter(c.K, r.KRowsOf(), pr.KRowsOf(), pr.KLen(), r.KVHeads, r.D, kvRows)
		v = scatter(c.V, r.VRowsOf(), pr.VRowsOf(), pr.VLen(), r.KVHeads, r.Dv, kvRows)
	}
	return p, q, k, v
}

// RunViews runs c with Q, K and V at padded strides (ViewCase) through
// be.Fused, and when c is not packed or paged through be's staged ops
// too, and compares the results with Reference(c) as RunFused and
// RunStaged do, checking that the inputs, NaN gaps included, are
// unchanged.
func RunViews(ctx context.Context, be backend.Backend, c Case, withLSE bool) error {
	if err := c.check(); err != nil {
		return err
	}
	pv, q, k, v := ViewCase(c)
	vc := c
	vc.Problem, vc.Q, vc.K, vc.V = pv, q, k, v
	want := Reference(c)
	got, err := execFused(ctx, be, vc, withLSE)
	if err == nil {
		err = compare(c, want, got)
	}
	if err != nil {
		return fmt.Errorf("fused %v with strides %+v:\n%w", c, viewsOf(pv), err)
	}
	if c.Packed != nil || c.Paged != nil || !be.Caps().Staged {
		return nil
	}
	got, err = execStaged(ctx, be, vc, withLSE)
	if err == nil {
		err = compare(c, want, got)
	}
	if err != nil {
		return fmt.Errorf("staged %v with strides %+v:\n%w", c, viewsOf(pv), err)
	}
	return nil
}

func viewsOf(p backend.Problem) []any {
	v := p.Views
	return []any{v.Q, v.K, v.V}
}

// viewSpecs are the cases testViews runs at padded strides: edge sizes
// (0, 1), odd head dims, GQA, both layouts, causal, packed and paged
// sequences, and half operands.
func viewSpecs(c backend.Caps) []spec {
	specs := []spec{
		{p: prob(1, 1, 1, 1, 1, 1, 1)},
		{p: prob(2, 2, 1, 5, 7, 3, 5)},
		{p: bnhd(prob(2, 4, 2, 9, 11, 7, 9))},
		{p: causal(prob(1, 3, 3, 65, 65, 17, 17))},
		{p: causal(bnhd(prob(2, 4, 4, 70, 130, 16, 16))), bias: shape(2, 1, 70, 130)},
		{p: prob(0, 2, 2, 3, 3, 8, 8)},
		{p: prob(1, 2, 2, 0, 5, 8, 8)},
		{p: bnhd(prob(1, 2, 1, 4, 0, 8, 8))},
		{p: bnhd(prob(1, 2, 2, 1, 300, 64, 64))}, // a decoding step
	}
	if c.Seqs {
		specs = append(specs,
			spec{p: PackedProblem(causal(prob(0, 4, 2, 0, 0, 16, 8)), []int{5, 0, 65}, []int{9, 11, 70})},
			spec{p: PackedProblem(prob(0, 2, 2, 0, 20, 9, 9), []int{3, 1}, nil)},
			spec{p: PagedProblem(causal(bnhd(prob(0, 4, 2, 3, 0, 16, 16))), 16, 2, []int{3, 40}, false)},
		)
	}
	if c.Half {
		specs = append(specs,
			spec{p: bnhd(prob(2, 4, 2, 9, 33, 16, 16)), dt: Same(backend.Float16)},
			spec{p: causal(prob(1, 2, 1, 40, 40, 32, 32)), dt: Same(backend.BFloat16)},
		)
	}
	return specs
}

// testViews checks Caps.Strides: a backend that claims it computes every
// view case as its dense copy does, within the reference's tolerance;
// one that does not refuses a problem with Views (ErrUnsupported).
func (s *suite) testViews(t *testing.T) {
	if !s.caps.Strides {
		s.testViewsRefused(t)
		return
	}
	for _, sp := range viewSpecs(s.caps) {
		c := sp.build()
		t.Run(c.String(), func(t *testing.T) {
			if m := s.lacks(c.Problem, c.Bias != nil, c.Keep != nil, c.DTypes); m != "" {
				t.Skip("needs " + m)
			}
			for _, lse := range []bool{false, true} {
				if err := RunViews(context.Background(), s.be, c, lse); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	t.Run("Rules", func(t *testing.T) {
		p := prob(2, 2, 2, 3, 4, 8, 8)
		bad := []backend.Views{
			{Q: &backend.Strides{Batch: 100, Head: 40, Row: 7}},            // rows overlap
			{K: &backend.Strides{Batch: -1, Head: 40, Row: 8}},             // negative
			{V: &backend.Strides{Batch: 100, Head: -8, Row: 10}},           // negative
			{Q: &backend.Strides{Batch: math.MaxInt - 4, Head: 0, Row: 8}}, // overflows
		}
		for _, v := range bad {
			pv := p
			pv.Views = &v
			if err := pv.Validate(); !errors.Is(err, backend.ErrShape) && !errors.Is(err, backend.ErrTooLarge) {
				t.Errorf("Validate with views Q %v K %v V %v = %v, want ErrShape or ErrTooLarge", v.Q, v.K, v.V, err)
			}
		}
		// A buffer shorter than the view's extent is refused.
		c := RandomCase(rand.New(rand.NewPCG(26, 1)), p, nil, nil)
		pv, q, k, v := ViewCase(c)
		ops, err := Upload(s.be, Case{Problem: p, Q: q[:p.QLen()], K: k[:p.KLen()], V: v[:p.VLen()]})
		if err != nil {
			t.Fatal(err)
		}
		defer ops.Release()
		o := mustAlloc(t, s.be, backend.Float32, pv.OLen())
		defer o.Release()
		if err := guard(func() error {
			return s.be.Fused(context.Background(), backend.FusedParams{Problem: pv}, ops.Q, ops.K, ops.V, o, nil)
		}); !errors.Is(err, backend.ErrShape) {
			t.Errorf("Fused with views over dense-sized buffers = %v, want ErrShape", err)
		}
	})
}

// testViewsRefused checks that a backend without Caps.Strides refuses a
// problem with Views, in every op that reads Q, K or V.
func (s *suite) testViewsRefused(t *testing.T) {
	c := RandomCase(rand.New(rand.NewPCG(26, 2)), prob(1, 2, 2, 3, 4, 8, 8), nil, nil)
	pv, q, k, v := ViewCase(c)
	ops, err := Upload(s.be, Case{Problem: pv, Q: q, K: k, V: v})
	if err != nil {
		t.Fatal(err)
	}
	defer ops.Release()
	o := mustAlloc(t, s.be, backend.Float32, pv.OLen())
	defer o.Release()
	sc := mustAlloc(t, s.be, backend.Float32, pv.ScoresLen())
	defer sc.Release()
	ctx := context.Background()
	for name, op := range map[string]func() error{
		"Fused":   func() error { return s.be.Fused(ctx, backend.FusedParams{Problem: pv}, ops.Q, ops.K, ops.V, o, nil) },
		"Scores":  func() error { return s.be.Scores(ctx, backend.ScoresParams{Problem: pv}, ops.Q, ops.K, sc) },
		"Context": func() error { return s.be.Context(ctx, backend.ContextParams{Problem: pv}, sc, ops.V, o) },
	} {
		if err := guard(op); !errors.Is(err, backend.ErrUnsupported) {
			t.Errorf("%s with Views on a backend without Caps.Strides = %v, want ErrUnsupported", name, err)
		}
	}
	if err := backend.FusedSupports(s.be, pv); !errors.Is(err, backend.ErrUnsupported) {
		t.Errorf("FusedSupports with Views = %v, want ErrUnsupported", err)
	}
}

func mustAlloc(t *testing.T, be backend.Backend, dt backend.DType, n int) backend.Buffer {
	t.Helper()
	b, err := be.Alloc(dt, n)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
