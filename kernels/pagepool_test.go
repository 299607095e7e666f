package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// Several goroutines decode their own sequences over one page pool at
// once, each matching the reference (run under the race detector in CI).
func TestPagePoolConcurrent(t *testing.T) {
	be := openCPU(t)
	cfg := kernels.CacheConfig{KVHeads: 2, D: 16, DType: kernels.Float16, Layout: kernels.BNHD}
	pool, err := kernels.NewPagePool(be, 4, 64, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Release()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(51, uint64(g)))
			m := &mirror{cfg: cfg}
			seq := newSeq(t, pool)
			defer seq.Release()
			for step := range 20 {
				n := 1
				if step == 0 {
					n = 5 + g
				}
				k, v := rows(rng, kernels.Float32, n, 2, 16), rows(rng, kernels.Float32, n, 2, 16)
				if err := seq.Append(k, v); err != nil {
					t.Error(err)
					return
				}
				m.append(0, k, v)
				q := randTensor(rng, kernels.BNHD, 1, 1, 4, 16)
				out, _ := kernels.NewTensor(kernels.BNHD, 1, 1, 4, 16)
				opts := &kernels.AttendOptions{Causal: true}
				if err := pool.Attend(context.Background(), []*kernels.Seq{seq}, q, out, nil, opts); err != nil {
					t.Error(err)
					return
				}
				want, _ := m.want(t, []int{0}, q, opts)
				compareOut(t, fmt.Sprintf("goroutine %d step %d", g, step), out, want, 16, m.slack(q))
			}
		})
	}
	wg.Wait()
}

// Goroutines attend a sequence over and over while another releases it
// and a third grows a new sequence into the freed pages, filled with
// values that would move any output reading them: every Attend either
// matches the reference of the sequence's keys (it held the sequence, so
// the Release waited for it) or, once the Release has returned, is
// refused with backend.ErrReleased, its output untouched; so are Append
// and Truncate after it, while a second Release does nothing. Run with
// -race (CI does), it also checks that Attend and Release share no data
// unlocked. Attends take the sequence alone, twice in one call, or
// beside another sequence, in either order.
func TestPagePoolAttendRelease(t *testing.T) {
	be := openCPU(t)
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		layout    kernels.Layout
		pageSize  int
		attenders int
		batch     string // "alone", "twice", "first", "second": where the sequence sits in the Attend
	}{
		{"alone", kernels.BNHD, 4, 3, "alone"},
		{"twice", kernels.BHND, 2, 2, "twice"},
		{"before another", kernels.BNHD, 3, 2, "first"},
		{"after another", kernels.BHND, 8, 3, "second"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := kernels.CacheConfig{KVHeads: 2, D: 16, DType: kernels.Float16, Layout: c.layout}
			const n, h, rounds = 9, 4, 8
			per := (n + c.pageSize - 1) / c.pageSize
			pool, err := kernels.NewPagePool(be, c.pageSize, 3*per, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Release()
			for round := range rounds {
				rng := rand.New(rand.NewPCG(131, uint64(round)))
				m := &mirror{cfg: cfg}
				other, seq := newSeq(t, pool), newSeq(t, pool)
				for i, s := range []*kernels.Seq{other, seq} {
					k, v := rows(rng, kernels.Float32, n, 2, 16), rows(rng, kernels.Float32, n, 2, 16)
					if err := s.Append(k, v); err != nil {
						t.Fatal(err)
					}
					m.append(i, k, v)
				}
				seqs, idx := []*kernels.Seq{seq}, []int{1}
				switch c.batch {
				case "twice":
					seqs, idx = []*kernels.Seq{seq, seq}, []int{1, 1}
				case "first":
					seqs, idx = []*kernels.Seq{seq, other}, []int{1, 0}
				case "second":
					seqs, idx = []*kernels.Seq{other, seq}, []int{0, 1}
				}
				shape := []int{len(seqs), 1, h, 16}
				if c.layout == kernels.BHND {
					shape = []int{len(seqs), h, 1, 16}
				}
				q := randTensor(rng, c.layout, shape...)
				opts := &kernels.AttendOptions{Causal: true}
				want, _ := m.want(t, idx, q, opts)
				var released atomic.Bool
				started := make(chan struct{}, c.attenders)
				var wg sync.WaitGroup
				for g := range c.attenders {
					wg.Go(func() {
						out, _ := kernels.NewTensor(c.layout, shape...)
						for i := 0; ; i++ {
							after := released.Load()
							for j := range out.Data {
								out.Data[j] = 7
							}
							err := pool.Attend(ctx, seqs, q, out, nil, opts)
							if i == 0 {
								started <- struct{}{}
							}
							if errors.Is(err, backend.ErrReleased) {
								for j, x := range out.Data {
									if x != 7 {
										t.Errorf("round %d, goroutine %d: a refused Attend wrote out[%d] = %v", round, g, j, x)
										return
									}
								}
								return
							}
							if err != nil {
								t.Errorf("round %d, goroutine %d, attend %d: %v", round, g, i, err)
								return
							}
							if after {
								t.Errorf("round %d, goroutine %d: an Attend begun after Release returned succeeded", round, g)
								return
							}
							compareOut(t, fmt.Sprintf("round %d, goroutine %d, attend %d", round, g, i), out, want, 16, 0)
						}
					})
				}
				wg.Go(func() {
					<-started // an Attend has run; others are under way
					seq.Release()
					released.Store(true)
					// Take every free page and overwrite it.
					thief := newSeq(t, pool)
					big := rows(rng, kernels.Float32, pool.Free()*c.pageSize, 2, 16)
					for j := range big.Data {
						big.Data[j] = 1000
					}
					if err := thief.Append(big, big); err != nil {
						t.Errorf("round %d: growing into the freed pages: %v", round, err)
					}
					thief.Release()
				})
				wg.Wait()
				if t.Failed() {
					return
				}
				k := rows(rng, kernels.Float32, 1, 2, 16)
				for what, err := range map[string]error{"Append": seq.Append(k, k), "Truncate": seq.Truncate(0)} {
					if !errors.Is(err, backend.ErrReleased) {
						t.Errorf("round %d: %s after Release: %v, want %v", round, what, err, backend.ErrReleased)
					}
				}
				seq.Release()
				if seq.Len() != 0 || len(seq.Pages()) != 0 {
					t.Errorf("round %d: a released sequence holds %d keys on pages %v", round, seq.Len(), seq.Pages())
				}
				other.Release()
				if pool.Free() != 3*per {
					t.Fatalf("round %d: %d pages free after every release, want %d", round, pool.Free(), 3*per)
				}
			}
		})
	}
}

// TestPagePoolReleasedCounts: a released pool holds no pages, so Free
// and Shared are 0 after Release, and stay 0 when a sequence it had
// (a fork's parent and child sharing a page) is released after it.
func TestPagePoolReleasedCounts(t *testing.T) {
	be := openCPU(t)
	pool, err := kernels.NewPagePool(be, 2, 4, kernels.CacheConfig{KVHeads: 1, D: 4})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(65, 0))
	seq := newSeq(t, pool)
	if err := seq.Append(rows(rng, kernels.Float32, 1, 1, 4), rows(rng, kernels.Float32, 1, 1, 4)); err != nil {
		t.Fatal(err)
	}
	child, err := seq.Fork()
	if err != nil {
		t.Fatal(err)
	}
	if pool.Free() != 3 || pool.Shared() != 1 {
		t.Fatalf("before Release: Free %d, Shared %d, want 3 and 1", pool.Free(), pool.Shared())
	}
	pool.Release()
	if pool.Free() != 0 || pool.Shared() != 0 {
		t.Errorf("after Release: Free %d, Shared %d, want 0 and 0", pool.Free(), pool.Shared())
	}
	seq.Release()
	child.Release()
	if pool.Free() != 0 || pool.Shared() != 0 {
		t.Errorf("after its sequences' Release: Free %d, Shared %d, want 0 and 0", pool.Free(), pool.Shared())
	}
}

// newSeq is pool.NewSeq for a test, which fails where the pool refuses.
func newSeq(t testing.TB, pool *kernels.PagePool) *kernels.Seq {
	t.Helper()
	s, err := pool.NewSeq()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
