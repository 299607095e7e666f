package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/internal/workload"
	"github.com/attn-go/attn/kernels"
)

// randTree is a random tree of n draft rows for each of b sequences
// (workload.RandomTree), seeded from rng.
func randTree(rng *rand.Rand, b, n int) *kernels.Tree {
	return workload.RandomTree(rng.Uint64(), b, n)
}

// Attend with a tree (AttendOptions.Tree) over a page pool and a KV
// cache, on every backend and in every storage dtype (CI runs it on
// NEON too, under qemu): each draft row's
// output is the float64 attention over the keys before the draft and its
// ancestors' and its own, computed here from the stored rows; its LSE
// too. Bad trees and what a tree does not take yet are refused
// (testTreeArgs), on each backend in a subtest of its own: a GPU that
// does not open skips its own subtests only.
func TestAttendTree(t *testing.T) {
	ctx := context.Background()
	const heads, kvh, d, nq = 4, 2, 16, 6
	lens := []int{37 + nq, 20 + nq}
	for _, bk := range onnxBackends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.open(t)
			for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16, kernels.BFloat16, backend.Q8, backend.FP8, backend.Q4} {
				for _, paged := range []bool{true, false} {
					t.Run(fmt.Sprintf("%v/paged=%v", dt, paged), func(t *testing.T) {
						rng := rand.New(rand.NewPCG(74, uint64(dt)))
						cfg := kernels.CacheConfig{KVHeads: kvh, D: d, DType: dt, Layout: kernels.BNHD}
						ks, vs := make([]*kernels.Tensor, len(lens)), make([]*kernels.Tensor, len(lens))
						for s, n := range lens {
							ks[s], vs[s] = rows(rng, kernels.Float32, n, kvh, d), rows(rng, kernels.Float32, n, kvh, d)
						}
						q := randTensor(rng, kernels.BNHD, len(lens), nq, heads, d)
						out := randTensor(rng, kernels.BNHD, len(lens), nq, heads, d)
						lse, _ := kernels.NewTensor(kernels.BHND, len(lens), heads, nq)
						tree := randTree(rng, len(lens), nq)
						opts := &kernels.AttendOptions{Tree: tree, Sinks: []float32{0.5, -1, 0, 2}}
						var stored [][]uint32
						const page = 8
						if paged {
							pool, err := kernels.NewPagePool(be, page, 16, cfg)
							if err != nil {
								t.Fatal(err)
							}
							defer pool.Release()
							seqs := make([]*kernels.Seq, len(lens))
							for s := range lens {
								seqs[s] = newSeq(t, pool)
								if err := seqs[s].Append(ks[s], vs[s]); err != nil {
									t.Fatal(err)
								}
							}
							if err := pool.Attend(ctx, seqs, q, out, lse, opts); err != nil {
								t.Fatal(err)
							}
							stored = storedRows(t, be, pool, cfg, page, [][]*kernels.Seq{seqs})
						} else {
							c, err := kernels.NewKVCache(be, len(lens), 64, cfg)
							if err != nil {
								t.Fatal(err)
							}
							defer c.Release()
							for s := range lens {
								if err := c.Append(s, ks[s], vs[s]); err != nil {
									t.Fatal(err)
								}
							}
							if err := c.Attend(ctx, q, out, lse, opts); err != nil {
								t.Fatal(err)
							}
							// The stored rows as a pool's: [capacity, KVH, D] a sequence.
							kb, vb := kernels.Stores(c)
							pitch := dt.Pitch(d) // q8's and q4's rows padded to whole blocks
							for s, n := range lens {
								var bits []uint32
								for _, buf := range []backend.Buffer{kb, vb} {
									x := make([]float32, n*kvh*pitch)
									if err := be.Read(x, buf, s*64*kvh*pitch); err != nil {
										t.Fatal(err)
									}
									for r := range n * kvh {
										for _, f := range x[r*pitch : r*pitch+d] {
											bits = append(bits, math.Float32bits(f))
										}
									}
								}
								stored = append(stored, bits)
							}
						}
						tol := 1e-4
						if dt == backend.Q8 || dt == backend.Q4 {
							tol = 3e-3 // the CPU's integer q8 kernels' bound, q4's too (quant_accuracy_test.go)
						}
						if dt == kernels.Float16 {
							tol = 2e-3 // the output rounded to f16
						}
						for s, n := range lens {
							kv := stored[s]
							at := func(x []uint32, j, g, c int) float64 { return float64(math.Float32frombits(x[(j*kvh+g)*d+c])) }
							for h := range heads {
								g := h / (heads / kvh)
								for i := range nq {
									// The keys row i sees: the prefix, its tree's.
									var logits []float64
									var keys []int
									for j := range n {
										if j >= n-nq && !tree.Keep[(s*nq+i)*nq+j-(n-nq)] {
											continue
										}
										dot := 0.0
										for c := range d {
											dot += float64(q.Data[((s*nq+i)*heads+h)*d+c]) * at(kv, j, g, c)
										}
										logits = append(logits, dot/math.Sqrt(d))
										keys = append(keys, j)
									}
									m := float64(opts.Sinks[h])
									for _, l := range logits {
										m = max(m, l)
									}
									sum := math.Exp(float64(opts.Sinks[h]) - m)
									for _, l := range logits {
										sum += math.Exp(l - m)
									}
									want := make([]float64, d)
									big := 0.0
									for x, j := range keys {
										w := math.Exp(logits[x]-m) / sum
										for c := range d {
											want[c] += w * at(kv[n*kvh*d:], j, g, c)
										}
									}
									for c := range d {
										big = max(big, math.Abs(want[c]))
									}
									for c := range d {
										if got := float64(out.Data[((s*nq+i)*heads+h)*d+c]); backendtest.Exceeds(math.Abs(got-want[c]), tol*max(big, 1e-3)) {
											t.Fatalf("sequence %d, head %d, draft row %d: O[%d] = %v, want %v", s, h, i, c, got, want[c])
										}
									}
									if got, wantL := float64(lse.Data[(s*heads+h)*nq+i]), m+math.Log(sum); backendtest.Exceeds(math.Abs(got-wantL), 1e-3) {
										t.Fatalf("sequence %d, head %d, draft row %d: LSE %v, want %v", s, h, i, got, wantL)
									}
								}
							}
						}
					})
				}
			}
			t.Run("arguments", func(t *testing.T) { testTreeArgs(t, be) })
		})
	}
}

// treeOf is the tree whose rows are rows, each a string of 1s (the row
// sees that draft row) and 0s, N of them a sequence, N their length.
func treeOf(rows ...string) *kernels.Tree {
	n := len(rows[0])
	tr := &kernels.Tree{B: len(rows) / n, N: n}
	for _, r := range rows {
		for _, c := range r {
			tr.Keep = append(tr.Keep, c == '1')
		}
	}
	return tr
}

// testTreeArgs holds a KV cache's Attend with a tree to what it
// refuses, before any work, and to what it takes: a tree whose rows do
// not see themselves or see a later row (at the first and the last row
// and column, so that a bound off by one lets one through), a tree of
// other sizes, a draft longer than a sequence, a window; and, at the
// bounds, a draft that is the whole sequence, a tree for each sequence.
func testTreeArgs(t *testing.T, be backend.Backend) {
	const b, n = 2, 5 // sequences, keys each
	c, err := kernels.NewKVCache(be, b, 16, kernels.CacheConfig{KVHeads: 1, D: 4, Layout: kernels.BNHD})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	rng := rand.New(rand.NewPCG(75, 1))
	for s := range b {
		if err := c.Append(s, rows(rng, kernels.Float32, n, 1, 4), rows(rng, kernels.Float32, n, 1, 4)); err != nil {
			t.Fatal(err)
		}
	}
	good := treeOf("100", "110", "101")
	for _, x := range []struct {
		name string
		nq   int // queries a sequence
		opts *kernels.AttendOptions
		want error // nil: taken
		says string
	}{
		{"a row not seeing itself", 3, &kernels.AttendOptions{Tree: treeOf("100", "000", "001")}, backend.ErrShape, "draft row 1 does not see itself"},
		{"the first row not seeing itself", 3, &kernels.AttendOptions{Tree: treeOf("000", "110", "111")}, backend.ErrShape, "draft row 0 does not see itself"},
		{"the last row not seeing itself", 3, &kernels.AttendOptions{Tree: treeOf("100", "110", "110")}, backend.ErrShape, "draft row 2 does not see itself"},
		{"a row seeing the next", 3, &kernels.AttendOptions{Tree: treeOf("110", "010", "001")}, backend.ErrShape, "draft row 0 sees row 1"},
		{"the first row seeing the last", 3, &kernels.AttendOptions{Tree: treeOf("101", "110", "111")}, backend.ErrShape, "draft row 0 sees row 2"},
		{"a row seeing the last", 3, &kernels.AttendOptions{Tree: treeOf("100", "111", "111")}, backend.ErrShape, "draft row 1 sees row 2"},
		{"the second sequence's tree", 3, &kernels.AttendOptions{Tree: treeOf("100", "110", "111", "100", "110", "110")}, backend.ErrShape, "tree of sequence 1: draft row 2 does not see itself"},
		{"a tree of other rows", 3, &kernels.AttendOptions{Tree: randTree(rng, 1, 4)}, backend.ErrShape, "4 draft rows for 3 queries"},
		{"a tree for other sequences", 3, &kernels.AttendOptions{Tree: randTree(rng, 3, 3)}, backend.ErrShape, "a tree for 3 sequences over 2"},
		{"a tree short of entries", 3, &kernels.AttendOptions{Tree: &kernels.Tree{B: 1, N: 3, Keep: good.Keep[:8]}}, backend.ErrShape, "holds 8 entries: want 9"},
		{"a draft longer than the sequence", n + 1, &kernels.AttendOptions{Tree: randTree(rng, 1, n+1)}, backend.ErrShape, "a tree of 6 draft rows over sequence 0 of 5 keys"},
		{"a tree and a window", 3, &kernels.AttendOptions{Tree: good, Window: &kernels.Window{Left: 2, Right: 0}}, backend.ErrUnsupported, "window"},
		{"a draft of the whole sequence", n, &kernels.AttendOptions{Tree: randTree(rng, 1, n)}, nil, ""},
		{"a tree for each sequence", 3, &kernels.AttendOptions{Tree: treeOf("100", "110", "101", "100", "010", "011")}, nil, ""},
	} {
		q, out := randTensor(rng, kernels.BNHD, b, x.nq, 1, 4), randTensor(rng, kernels.BNHD, b, x.nq, 1, 4)
		err := c.Attend(context.Background(), q, out, nil, x.opts)
		if x.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want it taken", x.name, err)
			}
			continue
		}
		if !errors.Is(err, x.want) || !containsStr(err, x.says) {
			t.Errorf("%s: %v, want %v saying %q", x.name, err, x.want, x.says)
		}
	}
}

// containsStr says whether err's message holds s.
func containsStr(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// Options.Tree over tensors (a keep-mask over the last Nq keys) gives
// what a cache's Attend with the same tree gives (the keys before the
// draft and the draft's merged by their LSEs), on every backend; a draft
// of every key is taken, one of more rows than keys refused.
func TestAttentionTree(t *testing.T) {
	ctx := context.Background()
	const heads, kvh, d, n, nq = 4, 2, 8, 30, 5
	rng := rand.New(rand.NewPCG(76, 1))
	k, v := rows(rng, kernels.Float32, n, kvh, d), rows(rng, kernels.Float32, n, kvh, d)
	q := randTensor(rng, kernels.BNHD, 1, nq, heads, d)
	tree := randTree(rng, 1, nq)
	kt := &kernels.Tensor{Shape: []int{1, n, kvh, d}, Layout: kernels.BNHD, Data: k.Data}
	vt := &kernels.Tensor{Shape: []int{1, n, kvh, d}, Layout: kernels.BNHD, Data: v.Data}
	for _, bk := range onnxBackends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.open(t)
			res, err := kernels.Attention(ctx, be, q, kt, vt, &kernels.Options{Tree: tree, LSE: true})
			if err != nil {
				t.Fatal(err)
			}
			pool, err := kernels.NewPagePool(be, 16, 4, kernels.CacheConfig{KVHeads: kvh, D: d, Layout: kernels.BNHD})
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Release()
			s := newSeq(t, pool)
			if err := s.Append(k, v); err != nil {
				t.Fatal(err)
			}
			out := randTensor(rng, kernels.BNHD, 1, nq, heads, d)
			if err := pool.Attend(ctx, []*kernels.Seq{s}, q, out, nil, &kernels.AttendOptions{Tree: tree}); err != nil {
				t.Fatal(err)
			}
			for i := range out.Data {
				if backendtest.Exceeds(math.Abs(float64(out.Data[i]-res.Out.Data[i])), 1e-5) {
					t.Fatalf("O[%d]: %v over the cache, %v over tensors", i, out.Data[i], res.Out.Data[i])
				}
			}
			if _, err := kernels.Attention(ctx, be, q, kt, vt, &kernels.Options{Tree: tree, Mask: &kernels.Mask{Shape: []int{nq, n}, Keep: make([]bool, nq*n)}}); !errors.Is(err, backend.ErrUnsupported) {
				t.Errorf("a tree beside a mask: %v, want ErrUnsupported", err)
			}
			// The draft may be every key, and no more.
			for _, c := range []struct {
				keys int
				want error // nil: taken
			}{{nq, nil}, {nq - 1, backend.ErrShape}} {
				kc := &kernels.Tensor{Shape: []int{1, c.keys, kvh, d}, Layout: kernels.BNHD, Data: k.Data[:c.keys*kvh*d]}
				_, err := kernels.Attention(ctx, be, q, kc, kc, &kernels.Options{Tree: tree})
				if c.want == nil && err != nil || c.want != nil && (!errors.Is(err, c.want) || !containsStr(err, "the draft is the last keys")) {
					t.Errorf("a tree of %d draft rows over %d keys: %v, want %v", nq, c.keys, err, c.want)
				}
			}
		})
	}
}

// BenchmarkAttendTree times a speculative tree on the CPU: a 32-token
// tree over an f16 page pool of 32768 keys (32 query heads over 8 KV
// heads, D = 128), beside the same 32 rows as a causal chunk.
//
//	go test -run '^$' -bench AttendTree -benchtime 5x ./kernels
func BenchmarkAttendTree(b *testing.B) {
	ctx := context.Background()
	const heads, kvh, d, n, nq = 32, 8, 128, 32768, 32
	be := openCPU(b)
	pool, err := kernels.NewPagePool(be, 256, n/256+1, kernels.CacheConfig{KVHeads: kvh, D: d, DType: kernels.Float16, Layout: kernels.BNHD})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Release()
	rng := rand.New(rand.NewPCG(77, 1))
	s := newSeq(b, pool)
	for range n / 4096 {
		if err := s.Append(rows(rng, kernels.Float16, 4096, kvh, d), rows(rng, kernels.Float16, 4096, kvh, d)); err != nil {
			b.Fatal(err)
		}
	}
	q := randTensor(rng, kernels.BNHD, 1, nq, heads, d)
	out := randTensor(rng, kernels.BNHD, 1, nq, heads, d)
	for _, c := range []struct {
		name string
		opts *kernels.AttendOptions
	}{{"causal", &kernels.AttendOptions{Causal: true}}, {"tree", &kernels.AttendOptions{Tree: randTree(rng, 1, nq)}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := pool.Attend(ctx, []*kernels.Seq{s}, q, out, nil, c.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
