package kernels_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
					seqs[s] = newSeq(t, pool)
					if err := seqs[s].Append(randTensor(rng, kernels.BNHD, n, kvh, d), randTensor(rng, kernels.BNHD, n, kvh, d)); err != nil {
						t.Fatal(err)
					}
				}
				q := randTensor(rng, kernels.BNHD, len(lens), 1, h, d)
				nb := (200 + sz - 1) / sz // the longest sequence's key blocks
				bm := &kernels.BlockMask{Size: sz, Shape: [4]int{len(lens), 1, 1, nb}, Keep: make([]bool, len(lens)*nb)}
				ix := &kernels.Indices{Heads: 1, PerRow: 200, Idx: make([]int32, len(lens)*200)}
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

// elementBlocks is the block mask of an element rule by first
// principles: every (i, j) of nq rows by nk keys asked, block (i/size,
// j/size) on when one is kept; mixed reports whether some block on
// holds a pair not kept (the rule is not the blocks' exactly).
func elementBlocks(nq, nk, size int, rule func(i, j int) bool) (keep []bool, mixed bool) {
	rows, cols := (nq+size-1)/size, (nk+size-1)/size
	keep, all := make([]bool, rows*cols), make([]bool, rows*cols)
	for b := range all {
		all[b] = true
	}
	for i := range nq {
		for j := range nk {
			b := i/size*cols + j/size
			if rule(i, j) {
				keep[b] = true
			} else {
				all[b] = false
			}
		}
	}
	for b := range keep {
		mixed = mixed || keep[b] && !all[b]
	}
	return keep, mixed
}

// docOf is the document of row (or key) i of cu_seqlens cu, −1 for none.
func docOf(cu []int, i int) int {
	for d := range len(cu) - 1 {
		if cu[d] <= i && i < cu[d+1] {
			return d
		}
	}
	return -1
}

// TestBlockHelpers: each helper's block mask is the blocks where some
// element of its rule is kept, by first principles, for sizes that
// divide the tokens and sizes that do not; a bad mask is refused by
// Attention.
func TestBlockHelpers(t *testing.T) {
	for _, n := range []int{64, 100} {
		for _, sz := range []int{16, 24} {
			cu := []int{0, sz, 2 * sz, 2 * sz, n} // an empty document, the last one ragged
			docs, err := kernels.DocumentBlocks(cu, nil, sz)
			if err != nil {
				t.Fatal(err)
			}
			prefix, err := kernels.PrefixLMBlocks(n, 20, sz)
			if err != nil {
				t.Fatal(err)
			}
			stream, err := kernels.StreamingBlocks(n, 4, 16, sz)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name  string
				got   *kernels.BlockMask
				rule  func(i, j int) bool
				exact bool
			}{
				{"documents", docs, func(i, j int) bool { return docOf(cu, i) == docOf(cu, j) }, true},
				{"prefix-LM", prefix, func(i, j int) bool { return j < 20 || j <= i }, false},
				{"streaming", stream, func(i, j int) bool { return j < 4 || j <= i && j > i-16 }, false},
			} {
				want, mixed := elementBlocks(n, n, sz, c.rule)
				shape := [4]int{1, 1, (n + sz - 1) / sz, (n + sz - 1) / sz}
				if c.got.Size != sz || c.got.Shape != shape || !slices.Equal(c.got.Keep, want) {
					t.Errorf("%s n=%d size=%d: %v %v, want %v %v", c.name, n, sz, c.got.Shape, c.got.Keep, shape, want)
				}
				if c.exact && mixed {
					t.Errorf("%s n=%d size=%d: a block on holds pairs the rule hides", c.name, n, sz)
				}
			}
		}
	}
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(63, 0))
	q := randTensor(rng, kernels.BHND, 1, 2, 40, 16)
	k := randTensor(rng, kernels.BHND, 1, 2, 50, 16)
	all := func(int, int) bool { return true }
	over40, err := kernels.ElementBlocks(40, 40, 16, all)
	if err != nil {
		t.Fatal(err)
	}
	over50, err := kernels.ElementBlocks(40, 50, 16, all)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts kernels.Options
		want error
		says string
	}{
		{"shape", kernels.Options{Blocks: over40}, backend.ErrShape, "⌈Nk/16⌉=4"},
		{"size", kernels.Options{Blocks: &kernels.BlockMask{}}, backend.ErrShape, "blocks of 0"},
		{"staged", kernels.Options{Blocks: over50, Strategy: kernels.Staged}, backend.ErrUnsupported, "block masks"},
	} {
		_, err := kernels.Attention(context.Background(), be, q, k, k, &c.opts)
		if !errors.Is(err, c.want) || !containsAll(err, c.says) {
			t.Errorf("%s: got %v, want %v saying %q", c.name, err, c.want, c.says)
		}
	}
}

// TestBlockHelpersRefuse: every bad argument of every helper is an
// error wrapping ErrShape (ErrTooLarge for a mask past an int) naming
// the argument and its value, never a panic nor a mask that keeps or
// drops the wrong blocks (a user's mistaken calls first).
func TestBlockHelpersRefuse(t *testing.T) {
	all := func(int, int) bool { return true }
	cu := []int{0, 64, 128}
	for _, c := range []struct {
		name string
		call func() (*kernels.BlockMask, error)
		want error
		says string
	}{
		{"decreasing", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks([]int{0, 100, 50}, nil, 64) }, backend.ErrShape, "cuQ[2] = 50 after cuQ[1] = 100"},
		{"decreasing 2", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks([]int{0, 200, 100}, nil, 64) }, backend.ErrShape, "cuQ[2] = 100 after cuQ[1] = 200"},
		{"no documents", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks(nil, nil, 64) }, backend.ErrShape, "cuQ [] has 0 offsets"},
		{"one offset", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks([]int{0}, nil, 64) }, backend.ErrShape, "cuQ [0] has 1 offsets"},
		{"no rows", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks([]int{0, 0}, nil, 64) }, backend.ErrShape, "cuQ ends at 0"},
		{"document size 0", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks(cu, nil, 0) }, backend.ErrShape, "blocks of 0"},
		{"document size −1", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks(cu, nil, -1) }, backend.ErrShape, "blocks of -1"},
		{"negative start", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks([]int{-5, 100}, nil, 64) }, backend.ErrShape, "cuQ[0] = -5"},
		{"key lists", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks(cu, []int{0, 64}, 64) }, backend.ErrShape, "cuK has 2 offsets (1 documents), cuQ 3 (2 documents)"},
		{"empty keys", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks(cu, []int{}, 64) }, backend.ErrShape, "cuK has 0 offsets"},
		{"decreasing keys", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks(cu, []int{0, 64, 32}, 64) }, backend.ErrShape, "cuK[2] = 32 after cuK[1] = 64"},
		{"off the blocks", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks([]int{0, 10, 40, 41, 100}, nil, 16) }, backend.ErrShape, "document 0 (rows 0 … 9) ends at row 10 (cuQ[1]), inside block 0 of 16 rows"},
		{"keys off the blocks", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks(cu, []int{0, 70, 128}, 64) }, backend.ErrShape, "document 0 (keys 0 … 69) ends at key 70 (cuK[1]), inside block 1 of 64 keys"},
		{"mask size 0", func() (*kernels.BlockMask, error) { return kernels.ElementBlocks(10, 10, 0, all) }, backend.ErrShape, "blocks of 0"},
		{"mask rows −10", func() (*kernels.BlockMask, error) { return kernels.ElementBlocks(-10, 10, 4, all) }, backend.ErrShape, "-10 query rows"},
		{"mask keys 0", func() (*kernels.BlockMask, error) { return kernels.ElementBlocks(10, 0, 4, all) }, backend.ErrShape, "0 keys"},
		{"mask nil", func() (*kernels.BlockMask, error) { return kernels.ElementBlocks(10, 10, 4, nil) }, backend.ErrShape, "keep is nil"},
		{"mask elements", func() (*kernels.BlockMask, error) { return kernels.ElementBlocks(1<<40, 1<<40, 1<<39, all) }, backend.ErrTooLarge, "nq=1099511627776 × nk=1099511627776"},
		{"of rows 0", func() (*kernels.BlockMask, error) { return kernels.GridBlocks(0, 10, 4, all) }, backend.ErrShape, "0 query rows"},
		{"of nil", func() (*kernels.BlockMask, error) { return kernels.GridBlocks(10, 10, 4, nil) }, backend.ErrShape, "on is nil"},
		{"of blocks", func() (*kernels.BlockMask, error) { return kernels.GridBlocks(1<<62, 1<<62, 1, all) }, backend.ErrTooLarge, "overflow int"},
		{"of memory", func() (*kernels.BlockMask, error) { return kernels.GridBlocks(1<<24, 1<<24, 1, all) }, backend.ErrTooLarge, "need more than"},
		{"of ⌈n/size⌉", func() (*kernels.BlockMask, error) { return kernels.GridBlocks(math.MaxInt, 1, math.MaxInt/2+1, all) }, nil, ""},
		{"prefix −1", func() (*kernels.BlockMask, error) { return kernels.PrefixLMBlocks(10, -1, 4) }, backend.ErrShape, "prefix -1"},
		{"prefix n 0", func() (*kernels.BlockMask, error) { return kernels.PrefixLMBlocks(0, 0, 4) }, backend.ErrShape, "n = 0 tokens"},
		{"streaming n −2", func() (*kernels.BlockMask, error) { return kernels.StreamingBlocks(-2, 0, 3, 4) }, backend.ErrShape, "n = -2 tokens"},
		{"streaming", func() (*kernels.BlockMask, error) { return kernels.StreamingBlocks(10, -1, -3, 4) }, backend.ErrShape, "sinks -1"},
		{"window −3", func() (*kernels.BlockMask, error) { return kernels.StreamingBlocks(10, 0, -3, 4) }, backend.ErrShape, "window -3"},
		{"window 0", func() (*kernels.BlockMask, error) { return kernels.StreamingBlocks(10, 0, 0, 4) }, backend.ErrShape, "window 0"},
		{"streaming size", func() (*kernels.BlockMask, error) { return kernels.StreamingBlocks(10, 0, 3, 0) }, backend.ErrShape, "blocks of 0"},
	} {
		m, err := c.call()
		if c.want == nil {
			if err != nil || m == nil {
				t.Errorf("%s: %v, want a mask", c.name, err)
			}
			continue
		}
		if !errors.Is(err, c.want) || !containsAll(err, c.says) || m != nil {
			t.Errorf("%s: got %v (mask %v), want %v saying %q", c.name, err, m != nil, c.want, c.says)
		}
	}
}

// TestBlockHelpersRagged pins small masks written out by hand, the last
// block of each axis partial.
func TestBlockHelpersRagged(t *testing.T) {
	const T, F = true, false
	for _, c := range []struct {
		name  string
		call  func() (*kernels.BlockMask, error)
		shape [4]int
		keep  []bool
	}{
		// Rows 0…7, 8…15, 16…20 (5 in the last block).
		{"documents", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks([]int{0, 8, 16, 21}, nil, 8) }, [4]int{1, 1, 3, 3}, []bool{
			T, F, F,
			F, T, F,
			F, F, T}},
		// Document 1 empty; document 2 over two blocks, ragged.
		{"empty document", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks([]int{0, 8, 8, 21}, nil, 8) }, [4]int{1, 1, 3, 3}, []bool{
			T, F, F,
			F, T, T,
			F, T, T}},
		// Rows 0…3 | 4…9 see keys 0…7 | 8…12.
		{"cross documents", func() (*kernels.BlockMask, error) { return kernels.DocumentBlocks([]int{0, 4, 10}, []int{0, 8, 13}, 4) }, [4]int{1, 1, 3, 4}, []bool{
			T, T, F, F,
			F, F, T, T,
			F, F, T, T}},
		// Row i sees key 0 and keys i−1, i; row 12 alone in its block.
		{"streaming", func() (*kernels.BlockMask, error) { return kernels.StreamingBlocks(13, 1, 2, 4) }, [4]int{1, 1, 4, 4}, []bool{
			T, F, F, F,
			T, T, F, F,
			T, T, T, F,
			T, F, T, T}},
		// Row i sees keys 0…4 and keys ≤ i.
		{"prefix-LM", func() (*kernels.BlockMask, error) { return kernels.PrefixLMBlocks(10, 5, 4) }, [4]int{1, 1, 3, 3}, []bool{
			T, T, F,
			T, T, F,
			T, T, T}},
		// Row i sees key i − 1, 6 rows by 5 keys.
		{"element rule", func() (*kernels.BlockMask, error) {
			return kernels.ElementBlocks(6, 5, 4, func(i, j int) bool { return i == j+1 })
		}, [4]int{1, 1, 2, 2}, []bool{
			T, F,
			T, T}},
	} {
		m, err := c.call()
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if m.Shape != c.shape || !slices.Equal(m.Keep, c.keep) {
			t.Errorf("%s: %v %v, want %v %v", c.name, m.Shape, m.Keep, c.shape, c.keep)
		}
	}
}

// TestDocumentBlocksExact: Attention with DocumentBlocks alone is
// Attention with the document mask as a keep-mask, causal and not, the
// last document ragged: the call, not a note beside it, makes it right.
func TestDocumentBlocksExact(t *testing.T) {
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(64, 0))
	const n, sz = 45, 8
	cu := []int{0, 16, 24, 24, n}
	blocks, err := kernels.DocumentBlocks(cu, nil, sz)
	if err != nil {
		t.Fatal(err)
	}
	mask := &kernels.Mask{Shape: []int{1, 1, n, n}, Keep: make([]bool, n*n)}
	for i := range n {
		for j := range n {
			mask.Keep[i*n+j] = docOf(cu, i) == docOf(cu, j)
		}
	}
	q := randTensor(rng, kernels.BHND, 1, 2, n, 16)
	k := randTensor(rng, kernels.BHND, 1, 2, n, 16)
	v := randTensor(rng, kernels.BHND, 1, 2, n, 16)
	for _, causal := range []bool{false, true} {
		sameAttention(t, be, q, k, v,
			&kernels.Options{Causal: causal, Blocks: blocks, Strategy: kernels.Fused, LSE: true},
			&kernels.Options{Causal: causal, Mask: mask, Strategy: kernels.Fused, LSE: true})
	}
}

// FuzzBlockHelpers runs every helper on random arguments (negative,
// zero, huge, lists out of order): none panics, and each returns either
// an error wrapping ErrShape (or ErrTooLarge) or the mask its rule gives
// by first principles (elementBlocks). Arguments that are well formed
// and small must give a mask, but DocumentBlocks's where a block would
// hold pairs of two documents (refused, as its doc says); a call whose
// mask would be valid but large is left out, to keep each run fast.
func FuzzBlockHelpers(f *testing.F) {
	f.Add(int64(100), int64(80), int64(16), int64(20), int64(7), uint64(1), []byte{0, 32, 60, 8}, []byte{0, 40, 40}, false, false)
	f.Add(int64(10), int64(10), int64(4), int64(-1), int64(-3), uint64(2), []byte{0, 200, 99}, []byte{}, true, false)
	f.Add(int64(21), int64(13), int64(8), int64(0), int64(1), uint64(3), []byte{0, 1, 1, 0, 2}, []byte{0, 2, 1, 2}, true, true)
	f.Add(int64(-10), int64(0), int64(0), int64(1<<40), int64(math.MaxInt64), uint64(4), []byte{9, 200, 1}, []byte{0, 255, 255, 255, 255, 255, 255, 255, 255, 1}, false, true)
	f.Add(int64(math.MaxInt64), int64(1), int64(math.MaxInt64/2+1), int64(3), int64(4), uint64(5), []byte{0, 254, 255, 255, 255, 255, 255, 255, 255, 255, 1}, []byte(nil), true, false)
	f.Add(int64(1<<40), int64(1<<40), int64(1<<39), int64(math.MinInt64), int64(2), uint64(6), []byte{0}, []byte{1, 2}, false, false)
	f.Fuzz(func(t *testing.T, nq64, nk64, size64, a64, b64 int64, seed uint64, cuq, cuk []byte, aligned, cross bool) {
		nq, nk, size, a, b := int(nq64), int(nk64), int(size64), int(a64), int(b64)
		// Element checks up to 1<<14 pairs, masks up to 1<<12 blocks;
		// a mask past 1<<46 bytes (or an int) must be refused at once.
		cheap := func(nq, nk, size int, perElement bool) bool {
			if nq < 1 || nk < 1 || size < 1 {
				return true
			}
			n, ok := backend.CheckedProduct((nq-1)/size+1, (nk-1)/size+1)
			if !ok || n > 1<<46 {
				return true
			}
			if n > 1<<12 {
				return false
			}
			e, ok := backend.CheckedProduct(nq, nk)
			return !perElement || !ok || e <= 1<<14
		}
		// check runs one helper's result against its rule, valid
		// saying whether the arguments are well formed.
		check := func(what string, nq, nk int, m *kernels.BlockMask, err error, valid bool, rule func(i, j int) bool, exact bool) {
			t.Helper()
			if err != nil {
				if m != nil || !errors.Is(err, backend.ErrShape) && !errors.Is(err, backend.ErrTooLarge) {
					t.Fatalf("%s: %v (mask %v): want an error wrapping ErrShape or ErrTooLarge, and no mask", what, err, m != nil)
				}
				small := nq >= 1 && nk >= 1 && size >= 1 && nq*nk <= 1<<14 && nq <= 1<<14 && nk <= 1<<14
				if valid && small && (rule == nil || !exact) {
					t.Fatalf("%s: %v for well-formed arguments", what, err)
				}
				if valid && small && exact {
					// Refused only where a block would mix pairs.
					if _, mixed := elementBlocks(nq, nk, size, rule); !mixed {
						t.Fatalf("%s: %v, but every block is wholly kept or wholly hidden", what, err)
					}
				}
				return
			}
			if !valid {
				t.Fatalf("%s: a mask for bad arguments (nq=%d nk=%d size=%d a=%d b=%d)", what, nq, nk, size, a, b)
			}
			shape := [4]int{1, 1, (nq-1)/size + 1, (nk-1)/size + 1}
			if m.Size != size || m.Shape != shape || len(m.Keep) != shape[2]*shape[3] {
				t.Fatalf("%s: size %d shape %v with %d entries, want %d %v", what, m.Size, m.Shape, len(m.Keep), size, shape)
			}
			if e, ok := backend.CheckedProduct(nq, nk); !ok || e > 1<<14 || rule == nil {
				return
			}
			want, mixed := elementBlocks(nq, nk, size, rule)
			if !slices.Equal(m.Keep, want) {
				t.Fatalf("%s nq=%d nk=%d size=%d: %v, want %v", what, nq, nk, size, m.Keep, want)
			}
			if exact && mixed {
				t.Fatalf("%s nq=%d nk=%d size=%d: a block on holds pairs the rule hides", what, nq, nk, size)
			}
		}
		positive := nq >= 1 && nk >= 1 && size >= 1

		// An element rule of a few random stripes and spots.
		mod := seed%7 + 1
		rule := func(i, j int) bool { return uint64(i*31+j*17)%mod == seed%mod || i-j == int(seed%5) }
		if cheap(nq, nk, size, true) {
			m, err := kernels.ElementBlocks(nq, nk, size, rule)
			check("ElementBlocks", nq, nk, m, err, positive, rule, false)
			_, err = kernels.ElementBlocks(nq, nk, size, nil)
			check("ElementBlocks nil", nq, nk, nil, err, false, nil, false)
		}
		if cheap(nq, nk, size, false) {
			rows, cols := 0, 0
			if positive {
				rows, cols = (nq-1)/size+1, (nk-1)/size+1
			}
			on := func(bi, bj int) bool {
				if bi < 0 || bi >= rows || bj < 0 || bj >= cols {
					t.Fatalf("GridBlocks asked block (%d, %d) of %d × %d", bi, bj, rows, cols)
				}
				return rule(bi, bj)
			}
			m, err := kernels.GridBlocks(nq, nk, size, on)
			// Its rule by elements: an element is its block's.
			check("GridBlocks", nq, nk, m, err, positive, func(i, j int) bool { return rule(i/size, j/size) }, true)
		}
		if cheap(nq, nq, size, true) {
			prefix := a
			m, err := kernels.PrefixLMBlocks(nq, prefix, size)
			check("PrefixLMBlocks", nq, nq, m, err, nq >= 1 && size >= 1 && prefix >= 0,
				func(i, j int) bool { return j < prefix || j <= i }, false)
			sinks, window := a, b
			m, err = kernels.StreamingBlocks(nq, sinks, window, size)
			check("StreamingBlocks", nq, nq, m, err, nq >= 1 && size >= 1 && sinks >= 0 && window >= 1,
				func(i, j int) bool { return j < sinks || j <= i && i-j < window }, false)
		}

		// cu_seqlens from varints: the first an offset, the rest
		// steps (times the block size when aligned).
		list := func(raw []byte) []int {
			cu := []int{}
			for len(raw) > 0 && len(cu) < 64 {
				x, n := binary.Varint(raw)
				if n <= 0 {
					break
				}
				raw = raw[n:]
				if len(cu) == 0 {
					cu = append(cu, int(x))
					continue
				}
				if aligned && size >= 1 && size <= 1<<20 {
					x *= int64(size)
				}
				cu = append(cu, cu[len(cu)-1]+int(x))
			}
			return cu
		}
		cuQ, cuK := list(cuq), []int(nil)
		if cross {
			cuK = list(cuk)
		}
		// Well formed by first principles: at least one document, from
		// 0, never decreasing, to at least one row (key).
		formed := func(cu []int) bool {
			if len(cu) < 2 || cu[0] != 0 || cu[len(cu)-1] < 1 {
				return false
			}
			for d := 1; d < len(cu); d++ {
				if cu[d] < cu[d-1] {
					return false
				}
			}
			return true
		}
		keys := cuK
		if keys == nil {
			keys = cuQ
		}
		valid := size >= 1 && formed(cuQ) && formed(keys) && len(keys) == len(cuQ)
		dq, dk := 0, 0
		if len(cuQ) > 0 {
			dq = cuQ[len(cuQ)-1]
		}
		if len(keys) > 0 {
			dk = keys[len(keys)-1]
		}
		if !valid || cheap(dq, dk, size, false) {
			m, err := kernels.DocumentBlocks(cuQ, cuK, size)
			check("DocumentBlocks", dq, dk, m, err, valid, func(i, j int) bool {
				d := docOf(cuQ, i)
				return d >= 0 && d == docOf(keys, j)
			}, true)
		}
	})
}
