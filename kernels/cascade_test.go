package kernels_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/kernels"
)

// A batch whose sequences share a forked prompt (three forks grown
// apart, the prompt itself, an unrelated sequence, one fork twice)
// attends through the cascade — the shared pages read once for all, the
// rest per sequence, merged by LSE — and gives what the float64
// reference of each sequence's keys gives, and the same O and LSE as the
// same call without the cascade, within float32's tolerance: on every
// backend, both layouts, a full and a half cache, one and two queries,
// and every variant that applies to a cache. Variants the cascade does
// not run (window, ALiBi, key lengths) fall back, and say so by not
// counting a cascade.
func TestCascade(t *testing.T) {
	defer kernels.SetCascadeMinKeys(4)()
	ctx := context.Background()
	sinks := []float32{0.5, -1, 0, 2}
	two := []int{9, 8, 9, 12, 13, 9}
	for _, bk := range onnxBackends {
		be := bk.open(t)
		for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
			for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16} {
				cfg := kernels.CacheConfig{KVHeads: 2, D: 8, Dv: 6, DType: dt, Layout: layout}
				pool, err := kernels.NewPagePool(be, 4, 40, cfg)
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(71, 72))
				m := &mirror{cfg: cfg}
				add := func(s *kernels.Seq, j, n int) {
					k, v := rows(rng, kernels.Float32, n, 2, 8), rows(rng, kernels.Float32, n, 2, 6)
					if err := s.Append(k, v); err != nil {
						t.Fatal(err)
					}
					m.append(j, k, v)
				}
				prompt := newSeq(t, pool)
				add(prompt, 0, 13) // 3 full pages and one row
				seqs := []*kernels.Seq{prompt}
				for f, n := range []int{1, 5, 9} {
					c, err := prompt.Fork()
					if err != nil {
						t.Fatal(err)
					}
					m.k, m.v = append(m.k, slices.Clone(m.k[0])), append(m.v, slices.Clone(m.v[0]))
					add(c, f+1, n)
					seqs = append(seqs, c)
				}
				other := newSeq(t, pool)
				add(other, 4, 11)
				seqs = append(seqs, other)
				order := []int{1, 4, 2, 0, 3, 1} // forks, the other, the prompt, a fork twice
				call := make([]*kernels.Seq, len(order))
				for i, j := range order {
					call[i] = seqs[j]
				}
				for _, c := range []struct {
					name    string
					opts    kernels.AttendOptions
					cascade bool
				}{
					{"plain", kernels.AttendOptions{}, true},
					{"causal", kernels.AttendOptions{Causal: true}, true},
					{"softcap, sinks", kernels.AttendOptions{Causal: true, Softcap: 3, Sinks: sinks}, true},
					{"scale", kernels.AttendOptions{Scale: 0.7}, true},
					{"window", kernels.AttendOptions{Causal: true, Window: &kernels.Window{Left: 5, Right: 0}}, false},
					{"alibi", kernels.AttendOptions{ALiBi: []float32{0.5, 0.25, 0.125, 0.0625}}, false},
					{"key lengths", kernels.AttendOptions{KVLens: two}, false},
				} {
					for _, nq := range []int{1, 2} {
						what := fmt.Sprintf("%s/%v/%v/%s/nq=%d", bk.name, layout, dt, c.name, nq)
						qs, os := []int{len(call), nq, 4, 8}, []int{len(call), nq, 4, 6}
						ls := []int{len(call), 4, nq}
						if layout == kernels.BHND {
							qs, os = []int{len(call), 4, nq, 8}, []int{len(call), 4, nq, 6}
						}
						q := randTensor(rng, layout, qs...)
						out, _ := kernels.NewTensor(layout, os...)
						lse, _ := kernels.NewTensor(kernels.BHND, ls...)
						before := kernels.Cascades()
						opts := c.opts
						if err := pool.Attend(ctx, call, q, out, lse, &opts); err != nil {
							t.Fatalf("%s: %v", what, err)
						}
						if ran := kernels.Cascades() > before; ran != c.cascade {
							t.Fatalf("%s: the cascade ran %v, want %v", what, ran, c.cascade)
						}
						want, _ := m.want(t, order, q, &opts)
						compareOut(t, what, out, want, 6, 0)
						// The same call without the cascade.
						restore := kernels.SetCascadeMinKeys(math.MaxInt)
						out2, _ := kernels.NewTensor(layout, os...)
						lse2, _ := kernels.NewTensor(kernels.BHND, ls...)
						err := pool.Attend(ctx, call, q, out2, lse2, &opts)
						restore()
						if err != nil {
							t.Fatal(err)
						}
						for i, x := range lse.Data {
							if y := lse2.Data[i]; x != y && backendtest.Exceeds(math.Abs(float64(x-y)), 1e-5*max(1, math.Abs(float64(y)))) {
								t.Fatalf("%s: LSE[%d] = %v with the cascade, %v without", what, i, x, y)
							}
						}
						g1, g2 := out.Float32s(), out2.Float32s()
						for i := range g1 {
							if dt == kernels.Float32 && backendtest.Exceeds(math.Abs(float64(g1[i]-g2[i])), 2e-6*max(1, math.Abs(float64(g2[i])))) {
								t.Fatalf("%s: out[%d] = %v with the cascade, %v without", what, i, g1[i], g2[i])
							}
						}
						cascadeBuffers(t, be, pool, call, q, lse2, &opts, c.cascade, what, func(got *kernels.Tensor) {
							compareOut(t, what+"/buffers", got, want, 6, 0)
						})
					}
				}
				pool.Release()
			}
		}
	}
}

// Nested prefixes cascade as a tree: eight sequences share a prompt of
// two pages, two groups of four of them share two more pages each, and
// each has keys of its own; the call runs three prefix passes (the
// prompt, then each group's pages, each read once) and gives the float64
// reference's answers and the one-level cascade's, on every backend.
func TestCascadeTree(t *testing.T) {
	defer kernels.SetCascadeMinKeys(4)()
	ctx := context.Background()
	for _, bk := range onnxBackends {
		be := bk.open(t)
		cfg := kernels.CacheConfig{KVHeads: 2, D: 8, Dv: 6, DType: kernels.Float32, Layout: kernels.BNHD}
		pool, err := kernels.NewPagePool(be, 4, 64, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(73, 74))
		m := &mirror{cfg: cfg}
		add := func(s *kernels.Seq, j, n int) {
			k, v := rows(rng, kernels.Float32, n, 2, 8), rows(rng, kernels.Float32, n, 2, 6)
			if err := s.Append(k, v); err != nil {
				t.Fatal(err)
			}
			m.append(j, k, v)
		}
		fork := func(s *kernels.Seq, from int) *kernels.Seq {
			c, err := s.Fork()
			if err != nil {
				t.Fatal(err)
			}
			m.k, m.v = append(m.k, slices.Clone(m.k[from])), append(m.v, slices.Clone(m.v[from]))
			return c
		}
		root := newSeq(t, pool)
		m.k, m.v = [][]float32{nil}, [][]float32{nil}
		add(root, 0, 8) // the prompt: two pages
		var seqs []*kernels.Seq
		var order []int
		for g := range 2 {
			mid := fork(root, 0)
			mj := len(m.k) - 1
			add(mid, mj, 8) // the group's two pages
			for i := range 4 {
				s := fork(mid, mj)
				add(s, len(m.k)-1, 2+i+g)
				seqs, order = append(seqs, s), append(order, len(m.k)-1)
			}
		}
		q := randTensor(rng, kernels.BNHD, len(seqs), 1, 4, 8)
		attend := func() *kernels.Tensor {
			out, _ := kernels.NewTensor(kernels.BNHD, len(seqs), 1, 4, 6)
			if err := pool.Attend(ctx, seqs, q, out, nil, &kernels.AttendOptions{Causal: true}); err != nil {
				t.Fatal(err)
			}
			return out
		}
		before := kernels.CascadeNodes()
		out := attend()
		if n := kernels.CascadeNodes() - before; n != 3 {
			t.Errorf("%s: %d prefix passes, want 3 (the prompt, then each group's pages)", bk.name, n)
		}
		want, _ := m.want(t, order, q, &kernels.AttendOptions{Causal: true})
		compareOut(t, bk.name, out, want, 6, 0)
		before = kernels.CascadeNodes()
		cascadeBuffers(t, be, pool, seqs, q, nil, &kernels.AttendOptions{Causal: true}, true, bk.name, func(got *kernels.Tensor) {
			compareOut(t, bk.name+"/buffers", got, want, 6, 0)
		})
		if n := kernels.CascadeNodes() - before; n != 3 && n != 6 {
			t.Errorf("%s: AttendBuffers ran %d prefix passes, want 3 a call", bk.name, n)
		}
		pool.Release()
	}
}

// cascadeBuffers runs the call of Attend(seqs, q, opts) through
// AttendBuffers, with q on the device, waited for and, on a
// backend.Recorder, recorded too: the cascade runs (on the device) as
// cascade says, check gets each output, and the LSE, where want is not
// nil, matches it (the uncascaded call's) within float32's tolerance.
func cascadeBuffers(t *testing.T, be backend.Backend, pool *kernels.PagePool, seqs []*kernels.Seq, q, want *kernels.Tensor, opts *kernels.AttendOptions, cascade bool, what string, check func(*kernels.Tensor)) {
	t.Helper()
	ctx := context.Background()
	b, nq, h := q.Shape[0], q.Shape[1], q.Shape[2]
	if q.Layout == kernels.BHND {
		h, nq = q.Shape[1], q.Shape[2]
	}
	dv := 6
	oshape := []int{b, nq, h, dv}
	if q.Layout == kernels.BHND {
		oshape = []int{b, h, nq, dv}
	}
	recorder, _ := be.(backend.Recorder)
	for _, record := range []bool{false, true} {
		if record && recorder == nil {
			continue
		}
		qb := onDevice(t, be, q)
		ob, err := be.Alloc(kernels.Float32, b*h*nq*dv)
		if err != nil {
			t.Fatal(err)
		}
		lb, err := be.Alloc(kernels.Float32, b*h*nq)
		if err != nil {
			t.Fatal(err)
		}
		var rec backend.Recording
		if record {
			rec = recorder.Begin()
		}
		before := kernels.Cascades()
		err = pool.AttendBuffers(ctx, rec, seqs, qb, ob, lb, h, nq, opts)
		if err == nil && rec != nil {
			err = rec.Wait()
		}
		if err != nil {
			t.Fatalf("%s: AttendBuffers (recorded %t): %v", what, record, err)
		}
		if ran := kernels.Cascades() > before; ran != cascade {
			t.Fatalf("%s: AttendBuffers (recorded %t) cascaded %v, want %v", what, record, ran, cascade)
		}
		check(fromDevice(t, be, ob, kernels.Float32, q.Layout, oshape...))
		if want != nil {
			got := fromDevice(t, be, lb, kernels.Float32, kernels.BHND, b, h, nq)
			for i, x := range got.Data {
				if y := want.Data[i]; x != y && backendtest.Exceeds(math.Abs(float64(x-y)), 1e-5*max(1, math.Abs(float64(y)))) {
					t.Fatalf("%s: AttendBuffers (recorded %t): LSE[%d] = %v, %v without the cascade", what, record, i, x, y)
				}
			}
		}
		ob.Release()
		lb.Release()
	}
}
