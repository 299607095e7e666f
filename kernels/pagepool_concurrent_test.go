package kernels_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// Goroutines append to, fork, truncate and release sequences of one
// page pool at once, and the pool stores each sequence's rows bit for
// bit as the same work done in turn does, on every backend, in every
// storage dtype, with rows that end inside a word of the store (odd head
// dims of halves and fp8; q8 and q4 rows of one and three blocks, whose
// scales two rows share a word of; pages of one and three rows), so that two
// sequences' rows meet in a word. Every run, in turn or at once, on
// either backend, must give the same stored values: the backends
// quantize and round on the host alike. Run with -race (CI does).
func TestPagePoolWritesConcurrent(t *testing.T) {
	type setting struct {
		dt           kernels.DType
		d, heads     int
		page         int
		layout       kernels.Layout
		goroutines   int
		stepsEachOne int
	}
	var settings []setting
	for _, dt := range []kernels.DType{kernels.Float16, kernels.BFloat16, backend.FP8} {
		settings = append(settings,
			setting{dt: dt, d: 3, heads: 1, page: 1, layout: kernels.BNHD},
			setting{dt: dt, d: 5, heads: 3, page: 3, layout: kernels.BHND})
	}
	settings = append(settings,
		setting{dt: backend.Q8, d: 32, heads: 1, page: 1, layout: kernels.BNHD},
		setting{dt: backend.Q8, d: 32, heads: 1, page: 3, layout: kernels.BHND},
		setting{dt: backend.Q8, d: 96, heads: 1, page: 1, layout: kernels.BNHD},
		setting{dt: backend.Q4, d: 32, heads: 1, page: 1, layout: kernels.BNHD},
		setting{dt: backend.Q4, d: 32, heads: 1, page: 3, layout: kernels.BHND},
		setting{dt: backend.Q4, d: 96, heads: 1, page: 1, layout: kernels.BNHD},
		setting{dt: kernels.Float32, d: 3, heads: 1, page: 3, layout: kernels.BNHD})
	for i := range settings {
		settings[i].goroutines, settings[i].stepsEachOne = 4, 24
	}
	for _, s := range settings {
		name := fmt.Sprintf("%v/D=%d/heads=%d/page=%d/%v", s.dt, s.d, s.heads, s.page, s.layout)
		t.Run(name, func(t *testing.T) {
			cfg := kernels.CacheConfig{KVHeads: s.heads, D: s.d, DType: s.dt, Layout: s.layout}
			var want [][]uint32 // the first run's rows, each sequence's K then V
			for _, bk := range onnxBackends {
				be := bk.open(t)
				if s.dt == backend.Q4 && !be.Caps().Quant4 {
					continue // a backend that stores no q4 yet
				}
				for _, together := range []bool{false, true} {
					pool, err := kernels.NewPagePool(be, s.page, s.goroutines*3*(4*s.stepsEachOne/s.page+2), cfg)
					if err != nil {
						t.Fatal(err)
					}
					lives := make([][]*kernels.Seq, s.goroutines)
					play := func(g int) {
						lives[g] = playPool(t, pool, cfg, g, s.stepsEachOne)
					}
					if together {
						var wg sync.WaitGroup
						for g := range s.goroutines {
							wg.Go(func() { play(g) })
						}
						wg.Wait()
					} else {
						for g := range s.goroutines {
							play(g)
						}
					}
					got := storedRows(t, be, pool, cfg, s.page, lives)
					pool.Release()
					run := fmt.Sprintf("%s, together %v", bk.name, together)
					if want == nil {
						want = got
						continue
					}
					if len(got) != len(want) {
						t.Fatalf("%s: %d sequences live, want %d", run, len(got), len(want))
					}
					for i := range want {
						if j := firstDiff(got[i], want[i]); j >= 0 {
							t.Errorf("%s: sequence %d (K then V): stored word %d is %#x, want %#x (the first run's)", run, i, j, got[i][j], want[i][j])
						}
					}
				}
			}
			if want == nil {
				t.Skipf("no backend here stores %v", s.dt)
			}
		})
	}
}

// playPool runs goroutine g's fixed script on pool (its own rng): steps
// of appends of one to three rows, forks, truncations and releases of
// the sequences it holds, all but its first; it returns the ones left.
func playPool(t *testing.T, pool *kernels.PagePool, cfg kernels.CacheConfig, g, steps int) []*kernels.Seq {
	rng := rand.New(rand.NewPCG(77, uint64(g)))
	seqs := []*kernels.Seq{newSeq(t, pool)}
	for range steps {
		s := seqs[rng.IntN(len(seqs))]
		switch op := rng.IntN(10); {
		case op < 6:
			n := 1 + rng.IntN(3)
			k, v := rows(rng, kernels.Float32, n, cfg.KVHeads, cfg.D), rows(rng, kernels.Float32, n, cfg.KVHeads, cfg.D)
			if err := s.Append(k, v); err != nil {
				t.Errorf("goroutine %d: append: %v", g, err)
				return seqs
			}
		case op < 8:
			if len(seqs) < 3 {
				c, err := s.Fork()
				if err != nil {
					t.Errorf("goroutine %d: fork: %v", g, err)
					return seqs
				}
				seqs = append(seqs, c)
			}
		case op < 9:
			if err := s.Truncate(rng.IntN(s.Len() + 1)); err != nil {
				t.Errorf("goroutine %d: truncate: %v", g, err)
				return seqs
			}
		default:
			if i := slices.Index(seqs, s); i > 0 {
				s.Release()
				seqs = slices.Delete(seqs, i, i+1)
			}
		}
	}
	return seqs
}

// storedRows reads the pool's stores back and returns each live
// sequence's rows (goroutine by goroutine), K's then V's, as the bits of
// their values widened to float32, which for every storage dtype says
// which value is stored. The offsets come from the page layout as the
// package docs give it: a page holds [page, heads, pitch] (BNHD) or
// [heads, page, pitch] (BHND) elements, pitch being q8's row padded to
// whole blocks of 32.
func storedRows(t *testing.T, be backend.Backend, pool *kernels.PagePool, cfg kernels.CacheConfig, page int, lives [][]*kernels.Seq) [][]uint32 {
	t.Helper()
	pitch := cfg.DType.Pitch(cfg.D) // q8's and q4's rows padded to whole blocks
	kb, vb := kernels.Stores(pool)
	var stores [2][]float32
	for i, buf := range []backend.Buffer{kb, vb} {
		stores[i] = make([]float32, buf.Len())
		if err := be.Read(stores[i], buf, 0); err != nil {
			t.Fatal(err)
		}
	}
	var out [][]uint32
	for _, seqs := range lives {
		for _, s := range seqs {
			var bits []uint32
			pages := s.Pages()
			for _, x := range stores {
				for r := range s.Len() {
					pg, i := pages[r/page], r%page
					for h := range cfg.KVHeads {
						at := ((pg*page+i)*cfg.KVHeads + h) * pitch
						if cfg.Layout == kernels.BHND {
							at = ((pg*cfg.KVHeads+h)*page + i) * pitch
						}
						for _, f := range x[at : at+cfg.D] {
							bits = append(bits, math.Float32bits(f))
						}
					}
				}
			}
			out = append(out, bits)
		}
	}
	return out
}

// firstDiff is the first index where a and b differ, or -1.
func firstDiff(a, b []uint32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// BenchmarkPoolAppend times one goroutine appending a row at a time to
// a sequence of a page pool, on every backend, where rows end inside a
// word of the store (an f16 head of 5 and an fp8 head of 5, q8's scales
// on pages of one row), so that every append merges a word's bytes with
// its neighbour's (on the GPU, on the device: patch.wgsl), and beside it
// where they end on words (f16, D = 64). Each append is waited for:
// under wait=sync by Sync, under wait=attend by a decoding step's
// Attend of one query over the sequence, as a decoding loop waits.
//
//	go test -run '^$' -bench PoolAppend ./kernels
func BenchmarkPoolAppend(b *testing.B) {
	ctx := context.Background()
	for _, bk := range onnxBackends {
		for _, c := range []struct {
			dt      kernels.DType
			d, page int
		}{{kernels.Float16, 5, 16}, {backend.FP8, 5, 16}, {backend.Q8, 32, 1}, {kernels.Float16, 64, 16}} {
			for _, wait := range []string{"sync", "attend"} {
				b.Run(fmt.Sprintf("%s/%v/D=%d/page=%d/wait=%s", bk.name, c.dt, c.d, c.page, wait), func(b *testing.B) {
					be := bk.open(b)
					cfg := kernels.CacheConfig{KVHeads: 1, D: c.d, DType: c.dt, Layout: kernels.BNHD}
					pool, err := kernels.NewPagePool(be, c.page, 256/c.page+1, cfg)
					if err != nil {
						b.Fatal(err)
					}
					defer pool.Release()
					s := newSeq(b, pool)
					rng := rand.New(rand.NewPCG(93, 94))
					k, v := rows(rng, kernels.Float32, 1, 1, c.d), rows(rng, kernels.Float32, 1, 1, c.d)
					q, out := randTensor(rng, kernels.BNHD, 1, 1, 1, c.d), randTensor(rng, kernels.BNHD, 1, 1, 1, c.d)
					for b.Loop() {
						if s.Len() == 256 {
							if err := s.Truncate(0); err != nil {
								b.Fatal(err)
							}
						}
						if err := s.Append(k, v); err != nil {
							b.Fatal(err)
						}
						if wait == "sync" {
							err = be.Sync()
						} else {
							err = pool.Attend(ctx, []*kernels.Seq{s}, q, out, nil, nil)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
