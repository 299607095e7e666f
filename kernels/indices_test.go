package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/kernels"
)

// TestCacheIndices attends a PagePool (with a fork that copies a page
// on write) and a KVCache through index lists (AttendOptions.Indices),
// on every backend, storage dtype and layout, and compares each with
// plain attention over a second cache of the same config that holds
// only the named rows of each sequence, appended in the list's order:
// rows are stored alike whatever their neighbours (8-bit blocks run
// along a row), so the two read the same values and must agree to
// float32 rounding.
func TestCacheIndices(t *testing.T) {
	const kvh, d, h, ps, k = 2, 64, 8, 16, 24
	ctx := context.Background()
	for _, bk := range stridesBackends {
		for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16, kernels.Q8, kernels.FP8} {
			for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
				t.Run(fmt.Sprintf("%s/%v/%v", bk.name, dt, layout), func(t *testing.T) {
					be := bk.open(t)
					rng := rand.New(rand.NewPCG(57, uint64(dt)*2+uint64(layout)))
					cfg := kernels.CacheConfig{KVHeads: kvh, D: d, DType: dt, Layout: layout}
					if dt == kernels.FP8 {
						cfg.KScale, cfg.VScale = []float32{0.5, 2}, []float32{0.5, 2}
					}
					query := func(b int) *kernels.Tensor {
						if layout == kernels.BNHD {
							return randTensor(rng, layout, b, 1, h, d)
						}
						return randTensor(rng, layout, b, h, 1, d)
					}
					// The rows of each sequence, as appended: [n, kvh, d].
					lens := []int{45, 70, 50}
					keys := make([]*kernels.Tensor, 3)
					vals := make([]*kernels.Tensor, 3)
					for s, n := range lens {
						keys[s] = randTensor(rng, kernels.BNHD, n, kvh, d)
						vals[s] = randTensor(rng, kernels.BNHD, n, kvh, d)
					}
					// Sequence 2 forks sequence 0 at 40 rows: its first 40
					// rows are sequence 0's.
					copy(keys[2].Data, keys[0].Data[:40*kvh*d])
					copy(vals[2].Data, vals[0].Data[:40*kvh*d])
					ix := backendtest.WithIndices(rng, backend.Problem{B: 3, H: h, KVHeads: kvh, Nq: 1, Nk: 70, D: d, Variants: backend.Variants{KVLens: lens}}, 1, k).Indices
					// picked are the rows sequence s names, in its list's
					// order, and nsel their count.
					picked := func(s int, x []*kernels.Tensor) *kernels.Tensor {
						out := &kernels.Tensor{Shape: []int{0, kvh, d}}
						for _, j := range ix.Idx[s*k : (s+1)*k] {
							if j >= 0 {
								out.Data = append(out.Data, x[s].Data[int(j)*kvh*d:(int(j)+1)*kvh*d]...)
								out.Shape[0]++
							}
						}
						return out
					}
					q := query(3)
					attendPool := func(full bool) *kernels.Tensor {
						pool, err := kernels.NewPagePool(be, ps, 64, cfg)
						if err != nil {
							t.Fatal(err)
						}
						defer pool.Release()
						seqs := []*kernels.Seq{newSeq(t, pool), newSeq(t, pool)}
						app := func(s *kernels.Seq, kt, vt *kernels.Tensor) {
							if kt.Shape[0] == 0 {
								return
							}
							if err := s.Append(kt, vt); err != nil {
								t.Fatal(err)
							}
						}
						if full {
							app(seqs[0], rowsOf(keys[0], 0, 40), rowsOf(vals[0], 0, 40))
							fork, err := seqs[0].Fork()
							if err != nil {
								t.Fatal(err)
							}
							seqs = append(seqs, fork)
							app(seqs[0], rowsOf(keys[0], 40, 45), rowsOf(vals[0], 40, 45))
							app(seqs[1], keys[1], vals[1])
							app(seqs[2], rowsOf(keys[2], 40, 50), rowsOf(vals[2], 40, 50))
						} else {
							seqs = append(seqs, newSeq(t, pool))
							for s := range seqs {
								app(seqs[s], picked(s, keys), picked(s, vals))
							}
						}
						out, err := kernels.NewTensor(layout, q.Shape[0], q.Shape[1], q.Shape[2], d)
						if err != nil {
							t.Fatal(err)
						}
						opts := &kernels.AttendOptions{Causal: true}
						if full {
							opts.Indices = ix
						}
						if err := pool.Attend(ctx, seqs, q, out, nil, opts); err != nil {
							t.Fatal(err)
						}
						return out
					}
					near(t, "PagePool", attendPool(true).Data, attendPool(false).Data, 1e-5)

					attendCache := func(full bool) *kernels.Tensor {
						kc, err := kernels.NewKVCache(be, 3, 80, cfg)
						if err != nil {
							t.Fatal(err)
						}
						defer kc.Release()
						for s := range 3 {
							kt, vt := keys[s], vals[s]
							if !full {
								kt, vt = picked(s, keys), picked(s, vals)
							}
							if kt.Shape[0] == 0 {
								continue
							}
							if err := kc.Append(s, kt, vt); err != nil {
								t.Fatal(err)
							}
						}
						out, err := kernels.NewTensor(layout, q.Shape[0], q.Shape[1], q.Shape[2], d)
						if err != nil {
							t.Fatal(err)
						}
						opts := &kernels.AttendOptions{}
						if full {
							opts.Indices = ix
						}
						if err := kc.Attend(ctx, q, out, nil, opts); err != nil {
							t.Fatal(err)
						}
						return out
					}
					near(t, "KVCache", attendCache(true).Data, attendCache(false).Data, 1e-5)
				})
			}
		}
	}
}

// rowsOf is rows lo … hi−1 of x ([n, kvh, d]), a tensor of its own.
func rowsOf(x *kernels.Tensor, lo, hi int) *kernels.Tensor {
	w := x.Shape[1] * x.Shape[2]
	return &kernels.Tensor{Shape: []int{hi - lo, x.Shape[1], x.Shape[2]}, Data: append([]float32(nil), x.Data[lo*w:hi*w]...)}
}

// TestAttentionIndices runs index lists over tensors on every backend
// against Attention with the keep-mask that names the same keys: the
// dense path, with no index list, must give what the sparse one does.
// Prefill (each row its own list), decoding, one list a KV head, and a
// window.
func TestAttentionIndices(t *testing.T) {
	for _, bk := range stridesBackends {
		for _, c := range []struct {
			name             string
			b, h, kvh, nq, n int
			heads, k         int
			layout           kernels.Layout
			opts             kernels.Options
		}{
			{"decode", 2, 8, 2, 1, 300, 1, 40, kernels.BNHD, kernels.Options{}},
			{"decode heads", 2, 8, 2, 1, 300, 2, 40, kernels.BHND, kernels.Options{}},
			{"prefill causal", 1, 4, 2, 33, 65, 1, 16, kernels.BHND, kernels.Options{Causal: true, LSE: true}},
			{"prefill window", 2, 4, 1, 9, 40, 1, 12, kernels.BNHD, kernels.Options{Causal: true, Window: &kernels.Window{Left: 10, Right: 0}, LSE: true}},
		} {
			t.Run(bk.name+"/"+c.name, func(t *testing.T) {
				be := bk.open(t)
				rng := rand.New(rand.NewPCG(58, uint64(c.nq)))
				shape := func(heads, rows int) []int {
					if c.layout == kernels.BNHD {
						return []int{c.b, rows, heads, 64}
					}
					return []int{c.b, heads, rows, 64}
				}
				q := randTensor(rng, c.layout, shape(c.h, c.nq)...)
				k := randTensor(rng, c.layout, shape(c.kvh, c.n)...)
				v := randTensor(rng, c.layout, shape(c.kvh, c.n)...)
				p := backend.Problem{B: c.b, H: c.h, KVHeads: c.kvh, Nq: c.nq, Nk: c.n, D: 64}
				p = backendtest.WithIndices(rng, p, c.heads, c.k)
				ix := p.Indices
				mask := &kernels.Mask{Shape: []int{c.b, c.h, c.nq, c.n}, Keep: make([]bool, c.b*c.h*c.nq*c.n)}
				for b := range c.b {
					for hh := range c.h {
						for i := range c.nq {
							g := hh / (c.h / c.kvh)
							for _, j := range ix.Idx[p.IndexOffset(b, g, i):][:c.k] {
								if j >= 0 {
									mask.Keep[((b*c.h+hh)*c.nq+i)*c.n+int(j)] = true
								}
							}
						}
					}
				}
				sparse, dense := c.opts, c.opts
				sparse.Indices = ix
				dense.Mask = mask
				sameAttention(t, be, q, k, v, &sparse, &dense)
			})
		}
	}
}

// TestAttentionIndicesRefused: Attention refuses a bad index list with
// the row it names, the staged strategy and the matrices with a list,
// and a bias beside one.
func TestAttentionIndicesRefused(t *testing.T) {
	be := openCPU(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(59, 0))
	q := randTensor(rng, kernels.BHND, 1, 4, 2, 32)
	k := randTensor(rng, kernels.BHND, 1, 2, 10, 32)
	ok := func() *kernels.Indices {
		return &kernels.Indices{Heads: 1, PerRow: 3, Idx: []int32{0, 5, -1, 9, 2, 1}}
	}
	bad := func(f func(ix *kernels.Indices)) *kernels.Indices { ix := ok(); f(ix); return ix }
	for _, c := range []struct {
		name string
		opts kernels.Options
		want error
		says string
	}{
		{"range", kernels.Options{Indices: bad(func(ix *kernels.Indices) { ix.Idx[4] = 10 })}, backend.ErrShape, "row 1, entry 1 names key 10"},
		{"twice", kernels.Options{Indices: bad(func(ix *kernels.Indices) { ix.Idx[2] = 5 })}, backend.ErrShape, "row 0 names key 5 twice (entries 1 and 2)"},
		{"shape", kernels.Options{Indices: bad(func(ix *kernels.Indices) { ix.PerRow = 2 })}, backend.ErrShape, "index list of 6 entries"},
		{"staged", kernels.Options{Indices: ok(), Strategy: kernels.Staged}, backend.ErrUnsupported, "the staged strategy takes no index lists"},
		{"weights", kernels.Options{Indices: ok(), Weights: true}, backend.ErrUnsupported, "weights"},
		{"bias", kernels.Options{Indices: ok(), Bias: randTensor(rng, kernels.BHND, 1, 1, 2, 10)}, backend.ErrUnsupported, "bias or keep-mask"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := kernels.Attention(ctx, be, q, k, k, &c.opts)
			if !errors.Is(err, c.want) || !containsAll(err, c.says) {
				t.Fatalf("got %v, want %v saying %q", err, c.want, c.says)
			}
		})
	}
}

// sameAttention runs Attention with opts and with want (the same
// attention said another way: a keep-mask for a sparse option) and
// checks that the outputs, and the LSEs where asked for, agree (nearInf).
func sameAttention(t *testing.T, be backend.Backend, q, k, v *kernels.Tensor, opts, want *kernels.Options) {
	t.Helper()
	got, err := kernels.Attention(context.Background(), be, q, k, v, opts)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := kernels.Attention(context.Background(), be, q, k, v, want)
	if err != nil {
		t.Fatal(err)
	}
	nearInf(t, "out", got.Out.Data, ref.Out.Data)
	if opts.LSE {
		nearInf(t, "LSE", got.LSE.Data, ref.LSE.Data)
	}
}

// nearInf is near for the sparse and dense paths' outputs, within 1e-5,
// an infinity (the LSE of a row that sees no key) matching itself.
func nearInf(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= 1e-5) && got[i] != want[i] {
			t.Fatalf("%s[%d] = %v, the same attention through a keep-mask %v", what, i, got[i], want[i])
		}
	}
}
