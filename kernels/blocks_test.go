package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/kernels"
)

// TestAttentionBlocks runs block masks over tensors on every backend
// against Attention with the keep-mask that keeps the same elements:
// the blocks skipped must change nothing but the work. Sizes not
// multiples of the block, causal and not, one mask a head, the LSE.
func TestAttentionBlocks(t *testing.T) {
	for _, bk := range stridesBackends {
		for _, c := range []struct {
			name                 string
			b, h, kvh, nq, n, sz int
			perHead              bool
			opts                 kernels.Options
		}{
			{"prefill", 1, 4, 2, 100, 150, 32, false, kernels.Options{LSE: true}},
			{"causal heads", 2, 4, 1, 70, 70, 16, true, kernels.Options{Causal: true, LSE: true}},
			{"decode", 2, 8, 2, 1, 300, 64, true, kernels.Options{}},
		} {
			t.Run(bk.name+"/"+c.name, func(t *testing.T) {
				be := bk.open(t)
				rng := rand.New(rand.NewPCG(61, uint64(c.nq)))
				q := randTensor(rng, kernels.BHND, c.b, c.h, c.nq, 32)
				k := randTensor(rng, kernels.BHND, c.b, c.kvh, c.n, 32)
				v := randTensor(rng, kernels.BHND, c.b, c.kvh, c.n, 32)
				p := backendtest.WithBlocks(rng, backend.Problem{B: c.b, H: c.h, KVHeads: c.kvh, Nq: c.nq, Nk: c.n, D: 32}, c.sz, 0.4, c.perHead)
				mask := &kernels.Mask{Shape: []int{c.b, c.h, c.nq, c.n}, Keep: make([]bool, c.b*c.h*c.nq*c.n)}
				for b := range c.b {
					for h := range c.h {
						for i := range c.nq {
							for j := range c.n {
								mask.Keep[((b*c.h+h)*c.nq+i)*c.n+j] = p.Blocks.On(b, h, i, j)
							}
						}
					}
				}
				sparse, dense := c.opts, c.opts
				sparse.Blocks, sparse.Strategy = p.Blocks, kernels.Fused
				dense.Mask, dense.Strategy = mask, kernels.Fused
				sameAttention(t, be, q, k, v, &sparse, &dense)
			})
		}
	}
}

// TestCacheBlocks decodes over a PagePool (BNHD) and a KVCache (BHND)
// with a block mask of key blocks a sequence, against the same step with
// the index lists that name the keys of the blocks that are on: two
// paths (blocks skipped in the kernels, and keys gathered through
// one-key pages) that must agree.
func TestCacheBlocks(t *testing.T) {
	const kvh, d, h, ps, sz = 2, 64, 8, 16, 32
	ctx := context.Background()
	for _, bk := range stridesBackends {
		for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16, kernels.Q8} {
			t.Run(fmt.Sprintf("%s/%v", bk.name, dt), func(t *testing.T) {
				be := bk.open(t)
				rng := rand.New(rand.NewPCG(62, uint64(dt)))
				pool, err := kernels.NewPagePool(be, ps, 64, kernels.CacheConfig{KVHeads: kvh, D: d, DType: dt, Layout: kernels.BNHD})
				if err != nil {
					t.Fatal(err)
				}
				defer pool.Release()
				lens := []int{100, 37, 200}
				seqs := make([]*kernels.Seq, len(lens))
				for s, n := range lens {
					seqs[s] = pool.NewSeq()
					if err := seqs[s].Append(randTensor(rng, kernels.BNHD, n, kvh, d), randTensor(rng, kernels.BNHD, n, kvh, d)); err != nil {
						t.Fatal(err)
					}
				}
				q := randTensor(rng, kernels.BNHD, len(lens), 1, h, d)
				nb := (200 + sz - 1) / sz // the longest sequence's key blocks
				bm := &kernels.BlockMask{Size: sz, Shape: [4]int{len(lens), 1, 1, nb}, Keep: make([]bool, len(lens)*nb)}
				ix := &kernels.Indices{Heads: 1, K: 200, Idx: make([]int32, len(lens)*200)}
				for s, n := range lens {
					row := ix.Idx[s*200 : (s+1)*200]
					for t := range row {
						row[t] = -1
					}
					at := 0
					for blk := range nb {
						on := rng.IntN(3) > 0
						bm.Keep[s*nb+blk] = on
						for j := blk * sz; on && j < min((blk+1)*sz, n); j++ {
							row[at] = int32(j)
							at++
						}
					}
				}
				outs := [2]*kernels.Tensor{}
				for i, opts := range []*kernels.AttendOptions{{Blocks: bm}, {Indices: ix}} {
					if outs[i], err = kernels.NewTensor(kernels.BNHD, len(lens), 1, h, d); err != nil {
						t.Fatal(err)
					}
					if err := pool.Attend(ctx, seqs, q, outs[i], nil, opts); err != nil {
						t.Fatal(err)
					}
				}
				near(t, "blocks against lists", outs[0].Data, outs[1].Data, 1e-5)

				// The same rows in a KVCache of capacity 256 (its key
				// bound: the mask's blocks may stop at the longest
				// sequence's 200 keys).
				kc, err := kernels.NewKVCache(be, len(lens), 256, kernels.CacheConfig{KVHeads: kvh, D: d, DType: dt, Layout: kernels.BHND})
				if err != nil {
					t.Fatal(err)
				}
				defer kc.Release()
				rng = rand.New(rand.NewPCG(62, uint64(dt)))
				for s, n := range lens {
					if err := kc.Append(s, randTensor(rng, kernels.BNHD, n, kvh, d), randTensor(rng, kernels.BNHD, n, kvh, d)); err != nil {
						t.Fatal(err)
					}
				}
				qh := randTensor(rng, kernels.BHND, len(lens), h, 1, d)
				for i, opts := range []*kernels.AttendOptions{{Blocks: bm}, {Indices: ix}} {
					if outs[i], err = kernels.NewTensor(kernels.BHND, len(lens), h, 1, d); err != nil {
						t.Fatal(err)
					}
					if err := kc.Attend(ctx, qh, outs[i], nil, opts); err != nil {
						t.Fatal(err)
					}
				}
				near(t, "KVCache: blocks against lists", outs[0].Data, outs[1].Data, 1e-5)
			})
		}
	}
}

// TestBlockHelpers: each helper's block mask is MaskBlocks of its rule,
// the blocks where some element is kept, for sizes that divide the
// tokens and sizes that do not; a bad mask is refused by Attention.
func TestBlockHelpers(t *testing.T) {
	for _, n := range []int{64, 100} {
		for _, sz := range []int{16, 24} {
			cu := []int{0, 10, 40, 41, n}
			doc := func(i int) int {
				for d := range len(cu) - 1 {
					if i < cu[d+1] {
						return d
					}
				}
				return -1
			}
			for _, c := range []struct {
				name string
				got  *kernels.BlockMask
				rule func(i, j int) bool
			}{
				{"documents", kernels.DocumentBlocks(cu, nil, sz), func(i, j int) bool { return doc(i) == doc(j) }},
				{"prefix-LM", kernels.PrefixLMBlocks(n, 20, sz), func(i, j int) bool { return j < 20 || j <= i }},
				{"streaming", kernels.StreamingBlocks(n, 4, 16, sz), func(i, j int) bool { return j < 4 || j <= i && j > i-16 }},
			} {
				want := kernels.MaskBlocks(n, n, sz, c.rule)
				if c.got.Size != sz || c.got.Shape != want.Shape || fmt.Sprint(c.got.Keep) != fmt.Sprint(want.Keep) {
					t.Errorf("%s n=%d size=%d: %v %v, want %v %v", c.name, n, sz, c.got.Shape, c.got.Keep, want.Shape, want.Keep)
				}
			}
		}
	}
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(63, 0))
	q := randTensor(rng, kernels.BHND, 1, 2, 40, 16)
	k := randTensor(rng, kernels.BHND, 1, 2, 50, 16)
	for _, c := range []struct {
		name string
		opts kernels.Options
		want error
		says string
	}{
		{"shape", kernels.Options{Blocks: kernels.MaskBlocks(40, 40, 16, func(int, int) bool { return true })}, backend.ErrShape, "⌈Nk/16⌉=4"},
		{"size", kernels.Options{Blocks: &kernels.BlockMask{}}, backend.ErrShape, "blocks of 0"},
		{"staged", kernels.Options{Blocks: kernels.MaskBlocks(40, 50, 16, func(int, int) bool { return true }), Strategy: kernels.Staged}, backend.ErrUnsupported, "block masks"},
	} {
		_, err := kernels.Attention(context.Background(), be, q, k, k, &c.opts)
		if !errors.Is(err, c.want) || !containsAll(err, c.says) {
			t.Errorf("%s: got %v, want %v saying %q", c.name, err, c.want, c.says)
		}
	}
}
