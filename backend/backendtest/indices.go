package backendtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
)

// WithIndices returns p with an index list (backend.Indices) of k
// entries a row, one list a row (heads 1) or one a KV head (heads =
// KVHeads), drawn from rng: each row names between none and k of its
// sequence's keys, in random order, padded with −1 in random places;
// about one row in eight names none, one in four all k it can. p's
// sizes (packed, paged and key lengths) must be set.
func WithIndices(rng *rand.Rand, p backend.Problem, heads, k int) backend.Problem {
	p = p.Resolved()
	p.Indices = &backend.Indices{Heads: heads, PerRow: k}
	p.Indices.Idx = make([]int32, heads*p.TotalQ()*k)
	for b := range p.B {
		n := p.KVLen(b)
		for g := range heads {
			for i := range p.QRows(b) {
				row := p.Indices.Idx[p.IndexOffset(b, g, i):][:k]
				c := min(k, n)
				switch x := rng.IntN(8); {
				case x == 0:
					c = 0
				case x > 2:
					c = rng.IntN(c + 1)
				}
				for t := range row {
					row[t] = -1
				}
				keys := rng.Perm(n)[:c]
				for t, slot := range rng.Perm(k)[:c] {
					row[slot] = int32(keys[t])
				}
			}
		}
	}
	return p
}

// indexSpecs are problems with index lists (backend.Indices): decoding
// and prefill, one list a row and one a KV head, K's heads side by side
// (BNHD, packed, Hkv = 1) and apart (BHND: the lowering splits them),
// queries read in place and through scratch (BHND prefill, the LSE of
// several rows), packed and paged, V from K, with the masks and
// variants that apply to the keys named, every storage dtype, and the
// edges: no entries, rows that name no key, odd head dims.
func indexSpecs() []spec {
	idx := func(p backend.Problem, heads, k int) spec {
		name := fmt.Sprintf("idx%dx%d", heads, k)
		return spec{p: p, note: name, edit: func(c *Case) {
			c.Problem = WithIndices(newRand(describe(p, nil, nil)+name), c.Problem, heads, k)
		}}
	}
	with := func(sp spec, dt DTypes) spec { sp.dt = dt; return sp }
	f16, bf16 := Same(backend.Float16), Same(backend.BFloat16)
	q8 := DTypes{K: backend.Q8, V: backend.Q8}
	f8 := DTypes{K: backend.FP8, V: backend.FP8}
	v := func(p backend.Problem) backend.Problem { p.VFromK = true; return p }
	vars := func(p backend.Problem, f func(*backend.Variants)) backend.Problem { f(&p.Variants); return p }
	decode := prob(2, 8, 2, 1, 300, 64, 64)
	specs := []spec{
		idx(prob(1, 4, 1, 1, 100, 32, 32), 1, 20),
		idx(decode, 1, 64),       // BHND, 2 KV heads: split
		idx(bnhd(decode), 1, 64), // side by side: one sequence a row
		idx(prob(1, 8, 4, 1, 200, 32, 16), 4, 50),
		idx(bnhd(prob(1, 8, 4, 1, 200, 32, 16)), 4, 50),
		idx(prob(1, 2, 1, 1, 10, 8, 8), 1, 0),  // no entries
		idx(prob(1, 2, 1, 1, 0, 8, 8), 1, 3),   // no keys: every entry −1
		idx(prob(1, 3, 1, 5, 50, 17, 9), 1, 7), // BHND prefill: through scratch
		idx(causal(prob(1, 4, 2, 33, 65, 24, 24)), 2, 16),
		idx(causal(bnhd(prob(2, 4, 2, 9, 40, 32, 32))), 1, 12),
		idx(vars(causal(bnhd(prob(2, 4, 1, 6, 60, 32, 16))), func(vs *backend.Variants) {
			vs.Window = win(20, 0)
			vs.Softcap = 5
			vs.Sinks = []float32{0, 1, -1, 3}
			vs.KVLens = []int{60, 25}
		}), 1, 24),
		idx(vars(bnhd(prob(1, 4, 2, 4, 50, 32, 32)), func(vs *backend.Variants) { off := -2; vs.CausalOffset = &off }), 2, 30),
		idx(PackedProblem(causal(prob(3, 4, 1, 0, 0, 32, 16)), []int{1, 7, 30}, []int{20, 7, 45}), 1, 8),
		idx(PackedProblem(prob(2, 4, 2, 0, 0, 32, 32), []int{3, 1}, nil), 2, 10),
		idx(PagedProblem(causal(bnhd(prob(0, 8, 2, 1, 0, 64, 64))), 16, 2, []int{1, 40, 130}, true), 1, 32),
		idx(PagedProblem(causal(prob(0, 8, 2, 1, 0, 64, 64)), 16, 2, []int{1, 40, 130}, true), 2, 32),
		idx(v(PagedProblem(causal(prob(0, 16, 1, 1, 0, 96, 64)), 16, 2, []int{1, 40, 130}, true)), 1, 32),
		idx(v(causal(bnhd(prob(1, 8, 1, 3, 70, 40, 32)))), 1, 20),
		with(idx(bnhd(decode), 1, 64), f16),
		with(idx(decode, 2, 64), bf16),
		with(idx(PagedProblem(causal(prob(0, 8, 2, 1, 0, 64, 32)), 16, 2, []int{1, 40, 130}, true), 1, 32), f16),
	}
	for _, dt := range []DTypes{q8, f8} {
		specs = append(specs,
			with(idx(bnhd(decode), 1, 64), dt),
			with(idx(decode, 2, 64), dt),
			with(idx(PagedProblem(causal(bnhd(prob(0, 8, 2, 1, 0, 64, 32))), 32, 1, []int{70, 33}, false), 2, 16), dt),
			with(idx(v(PagedProblem(causal(prob(0, 16, 1, 1, 0, 96, 64)), 16, 2, []int{1, 40, 130}, true)), 1, 32), dt),
			// Rows that are not whole q8 blocks (padded, then lowered).
			with(idx(causal(prob(1, 8, 2, 2, 150, 80, 40)), 2, 24), dt),
			with(idx(PagedProblem(causal(bnhd(prob(0, 8, 2, 1, 0, 72, 80))), 16, 2, []int{1, 50}, true), 1, 16), dt),
		)
	}
	// Scales and sinks a KV head, where the lowering splits the heads
	// apart (BHND, or one list a KV head): one call a KV head.
	sc := causal(bnhd(prob(1, 8, 2, 1, 100, 64, 32)))
	sc.Scales = &backend.Scales{K: []float32{0.5, 3}, V: []float32{2, 0.25}}
	scSplit := sc
	scSplit.Layout = backend.BHND
	sinks := vars(causal(prob(2, 4, 2, 3, 50, 32, 32)), func(vs *backend.Variants) { vs.Sinks = []float32{0, 1, -1, 3} })
	specs = append(specs, with(idx(sc, 1, 40), f8), with(idx(scSplit, 1, 40), f8), with(idx(sc, 2, 40), f8),
		idx(sinks, 2, 20), idx(bnhd(sinks), 1, 20))
	return specs
}

// testIndices runs the index-list cases and checks the list's errors; a
// backend that does not claim Caps.Indices must refuse a list with
// ErrUnsupported, not attend every key.
func (s *suite) testIndices(t *testing.T) {
	if !s.caps.Indices {
		if s.caps.Fused {
			c := indexSpecs()[0].build()
			if err := RunFused(context.Background(), s.be, c, false); !errors.Is(err, backend.ErrUnsupported) {
				t.Errorf("an index list on a backend without Caps.Indices: %v, want ErrUnsupported", err)
			}
		}
		return
	}
	s.cases(t, indexSpecs())
	t.Run("Errors", s.testIndexErrors)
}

// testIndexErrors checks that a bad index list, and one with what it
// does not take, is refused before any work with the sentinel and the
// row it names, and writes nothing.
func (s *suite) testIndexErrors(t *testing.T) {
	base := func() Case {
		p := WithIndices(newRand("indexErrors"), causal(prob(2, 4, 2, 3, 20, 8, 8)), 2, 5)
		return RandomCase(newRand("indexErrorsCase"), p, nil, nil)
	}
	set := func(c *Case, b, g, i, t int, j int32) {
		c.Indices.Idx[c.IndexOffset(b, g, i)+t] = j
	}
	for _, tc := range []struct {
		name string
		edit func(c *Case)
		want error
		text string
	}{
		{"out of range", func(c *Case) { set(c, 1, 1, 2, 3, 20) }, backend.ErrShape, "batch 1, head 1, row 2, entry 3 names key 20"},
		{"below −1", func(c *Case) { set(c, 0, 0, 0, 0, -2) }, backend.ErrShape, "names key -2"},
		{"twice", func(c *Case) { set(c, 0, 1, 1, 0, 7); set(c, 0, 1, 1, 4, 7) }, backend.ErrShape, "row 1 names key 7 twice (entries 0 and 4)"},
		{"short", func(c *Case) { c.Indices.Idx = c.Indices.Idx[1:] }, backend.ErrShape, "index list of 59 entries"},
		{"heads", func(c *Case) { c.Indices.Heads = 3 }, backend.ErrShape, "index list for 3 heads"},
		{"alibi", func(c *Case) { c.ALiBi = []float32{1, 1, 1, 1} }, backend.ErrUnsupported, "ALiBi"},
		{"bias", func(c *Case) { c.Bias = &HostMask{Shape: [4]int{1, 1, 1, 20}, Data: make([]float32, 20)} }, backend.ErrUnsupported, "bias or keep-mask"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			c.Indices = &backend.Indices{Heads: c.Indices.Heads, PerRow: c.Indices.PerRow, Idx: append([]int32(nil), c.Indices.Idx...)}
			tc.edit(&c)
			err := runFusedRaw(context.Background(), s.be, c)
			if !errors.Is(err, tc.want) || !contains(err, tc.text) {
				t.Errorf("got %v, want %v naming %q", err, tc.want, tc.text)
			}
		})
	}
	// The staged ops refuse a list: they would attend every key.
	c := base()
	ops, err := Upload(s.be, c)
	if err != nil {
		t.Fatal(err)
	}
	defer ops.Release()
	sc, err := s.be.Alloc(backend.Float32, c.Problem.Resolved().ScoresLen())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Release()
	if s.caps.Staged {
		err = guard(func() error {
			return s.be.Scores(context.Background(), backend.ScoresParams{Problem: c.Problem}, ops.Q, ops.K, sc)
		})
		if !errors.Is(err, backend.ErrUnsupported) {
			t.Errorf("Scores with an index list: %v, want ErrUnsupported", err)
		}
	}
}

// runFusedRaw uploads c's operands (checked without its index list,
// which may be the bad input under test: runFusedBad) and runs Fused on c's problem
// once, returning its error and checking that a refused call wrote
// nothing to O.
func runFusedRaw(ctx context.Context, be backend.Backend, c Case) error {
	return runFusedBad(ctx, be, c, func(c *Case) { c.Indices = nil })
}

// runFusedBad is runFusedRaw with valid making the copy of c that is
// uploaded (and checked) valid.
func runFusedBad(ctx context.Context, be backend.Backend, c Case, valid func(*Case)) error {
	up := c
	valid(&up)
	ops, err := Upload(be, up)
	if err != nil {
		return err
	}
	defer ops.Release()
	n := c.Problem.Resolved().OLen()
	o, err := be.Alloc(backend.Float32, n)
	if err != nil {
		return err
	}
	defer o.Release()
	sentinel := make([]float32, n)
	for i := range sentinel {
		sentinel[i] = 7
	}
	if err := be.Write(o, 0, sentinel); err != nil {
		return err
	}
	ferr := guard(func() error {
		return be.Fused(ctx, backend.FusedParams{Problem: c.Problem, Bias: ops.Bias}, ops.Q, ops.K, ops.V, o, nil)
	})
	if ferr != nil {
		got := make([]float32, n)
		if err := be.Read(got, o, 0); err != nil {
			return err
		}
		if i := firstDiff(got, sentinel); i >= 0 {
			return fmt.Errorf("refused (%w) but wrote O[%d] = %g", ferr, i, got[i])
		}
	}
	return ferr
}

// contains reports whether err's text contains s.
func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
