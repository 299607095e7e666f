package kernels_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// Seq.Keep keeps a draft's accepted rows as the sequence's next rows, on
// every backend, storage dtype and layout: the sequence then stores, bit
// for bit, what a sequence that appended the prompt and only the
// accepted rows stores, its fork (which shares the draft's pages) is
// unchanged, and the pages it no longer needs go back to the pool. Its
// arguments are checked on each backend in a subtest of its own
// (testKeepArgs): a GPU that does not open skips its own subtests only.
func TestSeqKeep(t *testing.T) {
	for _, bk := range onnxBackends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.open(t)
			for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16, kernels.BFloat16, backend.Q8, backend.FP8, backend.Q4} {
				d := 5
				if dt.Block() > 1 {
					d = 40 // rows padded to 64
				}
				for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
					t.Run(fmt.Sprintf("%v/%v", dt, layout), func(t *testing.T) {
						const heads, page, prompt, draft = 2, 3, 7, 8
						cfg := kernels.CacheConfig{KVHeads: heads, D: d, DType: dt, Layout: layout}
						pool, err := kernels.NewPagePool(be, page, 40, cfg)
						if err != nil {
							t.Fatal(err)
						}
						defer pool.Release()
						rng := rand.New(rand.NewPCG(71, uint64(dt)))
						pk, pv := rows(rng, kernels.Float32, prompt, heads, d), rows(rng, kernels.Float32, prompt, heads, d)
						dk, dv := rows(rng, kernels.Float32, draft, heads, d), rows(rng, kernels.Float32, draft, heads, d)
						s := newSeq(t, pool)
						if err := s.Append(pk, pv); err != nil {
							t.Fatal(err)
						}
						if err := s.Append(dk, dv); err != nil {
							t.Fatal(err)
						}
						fork, err := s.Fork() // shares every page, the draft's too
						if err != nil {
							t.Fatal(err)
						}
						forkBefore := storedRows(t, be, pool, cfg, page, [][]*kernels.Seq{{fork}})
						keep := []int{0, 2, 5, 6}
						if err := s.Keep(draft, keep); err != nil {
							t.Fatal(err)
						}
						if s.Len() != prompt+len(keep) {
							t.Fatalf("Len %d after Keep, want %d", s.Len(), prompt+len(keep))
						}
						// The reference: the prompt, then the kept rows, appended.
						ref := newSeq(t, pool)
						if err := ref.Append(pk, pv); err != nil {
							t.Fatal(err)
						}
						for _, r := range keep {
							if err := ref.Append(rowsOf(dk, r, r+1), rowsOf(dv, r, r+1)); err != nil {
								t.Fatal(err)
							}
						}
						got := storedRows(t, be, pool, cfg, page, [][]*kernels.Seq{{s, ref, fork}})
						if j := firstDiff(got[0], got[1]); j >= 0 {
							t.Errorf("the kept sequence's stored word %d is %#x, the reference's %#x", j, got[0][j], got[1][j])
						}
						if j := firstDiff(got[2], forkBefore[0]); j >= 0 {
							t.Errorf("the fork's stored word %d changed: %#x, was %#x", j, got[2][j], forkBefore[0][j])
						}
						// Keep nothing: back to the prompt; all of it: no change.
						if err := s.Keep(len(keep), nil); err != nil || s.Len() != prompt {
							t.Fatalf("Keep(%d, nil): %v, Len %d", len(keep), err, s.Len())
						}
					})
				}
			}
			t.Run("arguments", func(t *testing.T) { testKeepArgs(t, be) })
		})
	}
}

// testKeepArgs holds Seq.Keep on a sequence of 6 rows to what it refuses
// (ErrShape, the sequence unchanged) and what it takes, at either side
// of each bound: n from 0 to the sequence's length, each row from 0 to
// n − 1 and named once; and a released sequence's Keep to ErrReleased.
func testKeepArgs(t *testing.T, be backend.Backend) {
	const have = 6
	pool, err := kernels.NewPagePool(be, 4, 8, kernels.CacheConfig{KVHeads: 1, D: 4, DType: kernels.Float32})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Release()
	rng := rand.New(rand.NewPCG(72, 1))
	k, v := rows(rng, kernels.Float32, have, 1, 4), rows(rng, kernels.Float32, have, 1, 4)
	for _, c := range []struct {
		name string
		n    int
		rows []int
		want error // nil: taken
		len  int   // the sequence's length after
	}{
		{"n past the length", have + 1, []int{0}, backend.ErrShape, have},
		{"n below 0", -1, nil, backend.ErrShape, have},
		{"a row at n", 3, []int{3}, backend.ErrShape, have},
		{"a row past n", 3, []int{0, 5}, backend.ErrShape, have},
		{"a row below 0", 3, []int{-1}, backend.ErrShape, have},
		{"a row twice", 3, []int{1, 1}, backend.ErrShape, have},
		{"a row twice, apart", 3, []int{1, 0, 1}, backend.ErrShape, have},
		{"the last row of the draft, moved", 3, []int{2, 0}, nil, have - 1},
		{"a draft of the whole sequence", have, []int{have - 1, 0}, nil, 2},
		{"the draft as it is", 3, []int{0, 1, 2}, nil, have},
		{"nothing of the draft", 3, nil, nil, have - 3},
		{"no draft", 0, nil, nil, have},
	} {
		s := newSeq(t, pool)
		if err := s.Append(k, v); err != nil {
			t.Fatal(err)
		}
		err := s.Keep(c.n, c.rows)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) || s.Len() != c.len {
			t.Errorf("%s: Keep(%d, %v): %v, Len %d; want %v, Len %d", c.name, c.n, c.rows, err, s.Len(), c.want, c.len)
		}
		s.Release()
	}
	s := newSeq(t, pool)
	s.Release()
	if err := s.Keep(0, nil); !errors.Is(err, backend.ErrReleased) {
		t.Errorf("Keep on a released sequence: %v", err)
	}
}

// KVCache.Keep keeps a draft's accepted rows as a sequence's next rows,
// on every backend, storage dtype and layout, bit for bit as a cache
// that appended only them; the other sequences are unchanged.
func TestKVCacheKeep(t *testing.T) {
	for _, bk := range onnxBackends {
		be := bk.open(t)
		for _, dt := range []kernels.DType{kernels.Float32, kernels.BFloat16, backend.Q8, backend.FP8, backend.Q4} {
			for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
				t.Run(fmt.Sprintf("%s/%v/%v", bk.name, dt, layout), func(t *testing.T) {
					const heads, d, prompt, draft = 2, 32, 5, 6
					cfg := kernels.CacheConfig{KVHeads: heads, D: d, DType: dt, Layout: layout}
					rng := rand.New(rand.NewPCG(73, uint64(dt)))
					pk, pv := rows(rng, kernels.Float32, prompt, heads, d), rows(rng, kernels.Float32, prompt, heads, d)
					dk, dv := rows(rng, kernels.Float32, draft, heads, d), rows(rng, kernels.Float32, draft, heads, d)
					keep := []int{1, 3, 4}
					var stored [2][]float32
					for x := range 2 {
						c, err := kernels.NewKVCache(be, 2, 16, cfg) // capacity 16, as below
						if err != nil {
							t.Fatal(err)
						}
						defer c.Release()
						for seq := range 2 {
							if err := c.Append(seq, pk, pv); err != nil {
								t.Fatal(err)
							}
						}
						if x == 0 {
							if err := c.Append(1, dk, dv); err != nil {
								t.Fatal(err)
							}
							if err := c.Keep(1, draft, keep); err != nil {
								t.Fatal(err)
							}
						} else {
							for _, r := range keep {
								if err := c.Append(1, rowsOf(dk, r, r+1), rowsOf(dv, r, r+1)); err != nil {
									t.Fatal(err)
								}
							}
						}
						if c.Len(1) != prompt+len(keep) {
							t.Fatalf("Len %d, want %d", c.Len(1), prompt+len(keep))
						}
						kb, vb := kernels.Stores(c)
						for _, buf := range []backend.Buffer{kb, vb} {
							x2 := make([]float32, buf.Len())
							if err := be.Read(x2, buf, 0); err != nil {
								t.Fatal(err)
							}
							stored[x] = append(stored[x], x2...)
						}
					}
					// The rows each sequence holds (the rows past its length
					// are stale), K's then V's: [B, capacity, KVH, D] or
					// [B, KVH, capacity, D] each.
					const capacity = 16
					per := 2 * capacity * heads * d
					for buf := range 2 {
						for seq, n := range []int{prompt, prompt + len(keep)} {
							for row := range n {
								for h := range heads {
									at := ((seq*capacity+row)*heads + h) * d
									if layout == kernels.BHND {
										at = ((seq*heads+h)*capacity + row) * d
									}
									at += buf * per
									for c := range d {
										if a, b := stored[0][at+c], stored[1][at+c]; math.Float32bits(a) != math.Float32bits(b) {
											t.Fatalf("buffer %d, sequence %d, row %d, head %d: element %d is %v, %v in the cache that appended only the kept rows", buf, seq, row, h, c, a, b)
										}
									}
								}
							}
						}
					}
				})
			}
		}
	}
}

// BenchmarkSeqKeep times keeping a speculative decode's accepted path: of a
// 32-row draft on a paged q8 cache (8 KV heads, D = 128, pages of 16,
// after a prompt of 1000 rows), Keep of 8 scattered rows beside
// appending 8 rows, on every backend. Each iteration restores the
// sequence outside the timer.
//
//	go test -run '^$' -bench SeqKeep ./kernels
func BenchmarkSeqKeep(b *testing.B) {
	const kvh, d, page, prompt, draft = 8, 128, 16, 1000, 32
	keep := []int{0, 3, 4, 9, 13, 20, 26, 31}
	for _, bk := range onnxBackends {
		be := bk.open(b)
		cfg := kernels.CacheConfig{KVHeads: kvh, D: d, DType: backend.Q8, Layout: kernels.BNHD}
		pool, err := kernels.NewPagePool(be, page, (prompt+draft)/page+4, cfg)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(79, 1))
		s := newSeq(b, pool)
		if err := s.Append(rows(rng, kernels.Float32, prompt, kvh, d), rows(rng, kernels.Float32, prompt, kvh, d)); err != nil {
			b.Fatal(err)
		}
		dk, dv := rows(rng, kernels.Float32, draft, kvh, d), rows(rng, kernels.Float32, draft, kvh, d)
		k8, v8 := rows(rng, kernels.Float32, len(keep), kvh, d), rows(rng, kernels.Float32, len(keep), kvh, d)
		for _, c := range []struct {
			name       string
			setup, run func() error
		}{
			{"append8", func() error { return nil }, func() error { return s.Append(k8, v8) }},
			{"keep8of32", func() error { return s.Append(dk, dv) }, func() error { return s.Keep(draft, keep) }},
		} {
			b.Run(bk.name+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					if err := c.setup(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if err := c.run(); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if err := s.Truncate(prompt); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
		}
		pool.Release()
	}
}
