package backendtest

// The suite's concurrency and determinism checks: ops from many
// goroutines at once, and the same case twice giving the same bits.

import (
	"context"
	"sync"
	"testing"

	"github.com/attn-go/attn/backend"
)

// testConcurrent runs different cases from 8 goroutines on one backend at
// once.
func (s *suite) testConcurrent(t *testing.T) {
	const workers, rounds = 8, 3
	dims := [][2]int{{16, 16}, {40, 24}, {64, 64}, {3, 5}}
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				n := g*rounds + r
				d := dims[n%len(dims)]
				p := prob(1+n%2, 4, []int{1, 2, 4}[n%3], 20+7*n, 40+5*n, d[0], d[1])
				if n%2 == 1 {
					p = bnhd(p)
				}
				p.Causal = n%3 == 1
				sp := spec{p: p}
				if n%3 == 0 {
					sp.bias = shape(p.B, 1, p.Nq, p.Nk)
				}
				if n%4 == 1 {
					sp.keep = shape(p.B, 1, 1, p.Nk)
				}
				c := s.supported(sp).build()
				if s.caps.Fused {
					if err := RunFused(context.Background(), s.be, c, s.caps.LSE); err != nil {
						t.Errorf("goroutine %d: %v", g, err)
					}
				}
				if s.caps.Staged {
					if err := RunStaged(context.Background(), s.be, c, s.caps.LSE); err != nil {
						t.Errorf("goroutine %d: %v", g, err)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// testDeterministic runs the same case twice and wants bitwise identical
// results, in float32 and, with Caps.Half, in mixed half dtypes.
func (s *suite) testDeterministic(t *testing.T) {
	p := causal(prob(2, 4, 2, 129, 200, 64, 64))
	sp := s.supported(spec{p: p, bias: shape(2, 1, 129, 200), keep: shape(1, 1, 1, 200)})
	cases := []Case{sp.build()}
	if s.caps.Half {
		sp.dt = DTypes{f16, bf16, f16, bf16, f16}
		cases = append(cases, sp.build())
	}
	for _, c := range cases {
		s.deterministic(t, c)
	}
}

// deterministic runs c twice through each strategy.
func (s *suite) deterministic(t *testing.T, c Case) {
	ctx := context.Background()
	same := func(what string, a, b result) {
		for _, x := range []struct {
			name string
			a, b []float32
		}{{"scores", a.S, b.S}, {"weights", a.P, b.P}, {"O", a.O, b.O}, {"LSE", a.LSE, b.LSE}} {
			if i := firstDiff(x.a, x.b); i >= 0 {
				t.Errorf("%s: %s differs between two runs at element %d: %v then %v", what, x.name, i, x.a[i], x.b[i])
			}
		}
	}
	for _, strat := range []struct {
		name string
		has  bool
		exec func(context.Context, backend.Backend, Case, bool) (result, error)
	}{{"fused", s.caps.Fused, execFused}, {"staged", s.caps.Staged, execStaged}} {
		if !strat.has {
			continue
		}
		a, err := strat.exec(ctx, s.be, c, s.caps.LSE)
		if err != nil {
			t.Fatalf("%s %v: %v", strat.name, c, err)
		}
		b, err := strat.exec(ctx, s.be, c, s.caps.LSE)
		if err != nil {
			t.Fatalf("%s %v: %v", strat.name, c, err)
		}
		same(strat.name, a, b)
	}
}
