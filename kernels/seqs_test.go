package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/kernels"
)

// seqsBackends are the backends packed sequences and paged caches run
// on: the CPU always, the GPU where the build has it (seqs_gpu_test.go).
var seqsBackends = []struct {
	name string
	open func(testing.TB) backend.Backend
}{{"cpu", openCPU}}

// seqCase is one call with packed sequences or a paged cache, built
// twice: as kernels.Attention's tensors and options, and as the
// backend.Problem the reference computes, written out here rather than
// taken from kernels.
type seqCase struct {
	name          string
	h, kvh, d, dv int
	layout        kernels.Layout // of a paged call's Q and pools (packed: BNHD)
	causal        bool
	variants      backend.Variants // the options' variants, as the reference takes them
	bias          bool             // a [1, H, Nq, Nk] bias with a −Inf
	dt            kernels.DType
	// qLens packs the queries (CuSeqlensQ) when not nil; nq is a dense
	// Q's row count otherwise, and b its batch.
	qLens []int
	nq, b int
	// kLens packs the keys (CuSeqlensK) when not nil.
	kLens []int
	// nk is dense keys' count (packed queries without kLens or pages).
	nk int
	// pageSize > 0 pages the keys: cacheLens are the cache lengths (nil:
	// every sequence fills its per blocks), spare pages lie unused, and
	// shared puts sequence 1's first block on sequence 0's first page.
	pageSize, per, spare int
	cacheLens            []int
	shared               bool
}

func cuOf(lens []int) ([]int, int) {
	cu, most := []int{0}, 0
	for _, n := range lens {
		cu = append(cu, cu[len(cu)-1]+n)
		most = max(most, n)
	}
	return cu, most
}

// build returns the case's inputs and options, and the reference's case
// on the same data. Every pool row no sequence reads is NaN: the check
// and the backend must leave it alone.
func (c seqCase) build(rng *rand.Rand) (q, k, v *kernels.Tensor, opts *kernels.Options, ref backendtest.Case) {
	dv := c.dv
	if dv == 0 {
		dv = c.d
	}
	p := backend.Problem{H: c.h, KVHeads: c.kvh, D: c.d, Dv: dv, Layout: kernels.BNHD, Causal: c.causal, Variants: c.variants}
	vr := c.variants
	opts = &kernels.Options{Causal: c.causal, CausalOffset: vr.CausalOffset, Window: vr.Window, Softcap: float64(vr.Softcap),
		ALiBi: vr.ALiBi, Sinks: vr.Sinks, KVLens: vr.KVLens, LSE: true}
	layout := kernels.BNHD
	if c.qLens != nil {
		cu, most := cuOf(c.qLens)
		q = randTensor(rng, layout, cu[len(cu)-1], c.h, c.d)
		opts.CuSeqlensQ = cu
		p.B, p.Nq, p.Packed = len(c.qLens), most, &backend.Packed{CuQ: cu}
	} else {
		layout = c.layout
		p.Layout = layout
		p.B, p.Nq = c.b, c.nq
		shape := []int{c.b, c.nq, c.h, c.d}
		if layout == kernels.BHND {
			shape = []int{c.b, c.h, c.nq, c.d}
		}
		q = randTensor(rng, layout, shape...)
	}
	switch {
	case c.kLens != nil:
		cu, most := cuOf(c.kLens)
		k = randTensor(rng, layout, cu[len(cu)-1], c.kvh, c.d)
		v = randTensor(rng, layout, cu[len(cu)-1], c.kvh, dv)
		opts.CuSeqlensK = cu
		p.Nk, p.Packed.CuK = most, cu
	case c.pageSize > 0:
		lens := c.cacheLens
		full := c.per * c.pageSize
		used := 0
		for b := range p.B {
			n := full
			if lens != nil {
				n = lens[b]
			}
			used += (n + c.pageSize - 1) / c.pageSize
		}
		pg := &backend.Paged{PageSize: c.pageSize, Pages: used + c.spare, PerSeq: c.per, Table: make([]int, p.B*c.per)}
		order := rng.Perm(pg.Pages)
		opts.BlockTable = make([][]int, p.B)
		for b := range p.B {
			n := full
			if lens != nil {
				n = lens[b]
			}
			for blk := range c.per {
				e := -1
				if blk < (n+c.pageSize-1)/c.pageSize {
					e, order = order[0], order[1:]
				}
				pg.Table[b*c.per+blk] = e
			}
		}
		if c.shared {
			pg.Table[c.per] = pg.Table[0]
		}
		for b := range p.B {
			opts.BlockTable[b] = slices.Clone(pg.Table[b*c.per : (b+1)*c.per])
		}
		pool := func(dim int) *kernels.Tensor {
			if layout == kernels.BHND {
				return randTensor(rng, layout, pg.Pages, c.kvh, c.pageSize, dim)
			}
			return randTensor(rng, layout, pg.Pages, c.pageSize, c.kvh, dim)
		}
		k, v = pool(c.d), pool(dv)
		p.Nk, p.Paged, p.KVLens = full, pg, lens
		opts.KVLens = lens
		// Poison every row no sequence reads.
		read := map[[2]int]bool{}
		for b := range p.B {
			for j := range p.KVLen(b) {
				read[[2]int{pg.Table[b*c.per+j/c.pageSize], j % c.pageSize}] = true
			}
		}
		for _, op := range []struct {
			t    *kernels.Tensor
			dim  int
			rows backend.Rows
		}{{k, c.d, p.KRowsOf()}, {v, dv, p.VRowsOf()}} {
			for page := range pg.Pages {
				for slot := range c.pageSize {
					if read[[2]int{page, slot}] {
						continue
					}
					for h := range c.kvh {
						off := op.rows.Strides.Offset(page, h, slot)
						for e := range op.dim {
							op.t.Data[off+e] = float32(math.NaN())
						}
					}
				}
			}
		}
	default:
		k = randTensor(rng, layout, p.B, c.nk, c.kvh, c.d)
		v = randTensor(rng, layout, p.B, c.nk, c.kvh, dv)
		p.Nk = c.nk
	}
	if c.bias {
		opts.Bias = randTensor(rng, kernels.BHND, 1, c.h, p.Nq, p.Nk)
		if len(opts.Bias.Data) > 0 {
			opts.Bias.Data[len(opts.Bias.Data)/3] = float32(math.Inf(-1))
		}
		ref.Bias = &backendtest.HostMask{Shape: [4]int{1, c.h, p.Nq, p.Nk}, Data: opts.Bias.Data}
	}
	if c.dt.Half() {
		out := kernels.Float32
		opts.OutDType = &out
		for _, t := range []**kernels.Tensor{&q, &k, &v} {
			h, err := (*t).Convert(c.dt)
			if err != nil {
				panic(err)
			}
			*t = h
		}
	}
	ref.Problem, ref.Q, ref.K, ref.V = p, q.Float32s(), k.Float32s(), v.Float32s()
	return q, k, v, opts, ref
}

func seqCases() []seqCase {
	return []seqCase{
		{name: "packed/gqa/causal", h: 4, kvh: 2, d: 16, dv: 8, causal: true, qLens: []int{5, 0, 65, 1}, kLens: []int{9, 11, 70, 300}},
		{name: "packed/more-queries-than-keys", h: 2, kvh: 1, d: 9, causal: true, qLens: []int{40, 3}, kLens: []int{20, 3}},
		{name: "packed/no-keys", h: 2, kvh: 2, d: 8, qLens: []int{3, 2}, kLens: []int{0, 4}},
		{name: "packed/variants+bias", h: 4, kvh: 2, d: 16, causal: true, bias: true, qLens: []int{70, 2, 33}, kLens: []int{70, 130, 33},
			variants: backend.Variants{Window: &kernels.Window{Left: 16, Right: 0}, Softcap: 5, ALiBi: []float32{0.5, 0.25, 0.125, 0.0625}, Sinks: []float32{0, 1, -1, 3}}},
		{name: "packed/no-sequences", h: 2, kvh: 1, d: 4, qLens: []int{}, kLens: []int{}},
		{name: "packed-q/dense-k/key-lengths", h: 2, kvh: 2, d: 16, causal: true, qLens: []int{1, 7, 30}, nk: 50,
			variants: backend.Variants{KVLens: []int{50, 0, 31}}},
		{name: "packed-q/dense-k", h: 3, kvh: 1, d: 5, dv: 7, qLens: []int{4, 1}, nk: 6},
		{name: "paged/page-size-1/shared", h: 2, kvh: 1, d: 8, causal: true, b: 2, nq: 4, pageSize: 1, per: 9, spare: 5, cacheLens: []int{9, 4}, shared: true},
		{name: "paged/decode/gqa", h: 8, kvh: 2, d: 32, layout: kernels.BNHD, causal: true, b: 4, nq: 1, pageSize: 16, per: 7, spare: 2, cacheLens: []int{17, 20, 0, 100}, shared: true},
		{name: "paged/bhnd-pool", h: 4, kvh: 2, d: 16, layout: kernels.BHND, causal: true, b: 3, nq: 3, pageSize: 16, per: 17, spare: 2, cacheLens: []int{3, 64, 260}},
		{name: "paged/full-caches", h: 2, kvh: 2, d: 8, layout: kernels.BNHD, b: 2, nq: 5, pageSize: 4, per: 3, spare: 1},
		{name: "paged/mask-free-window+sinks", h: 4, kvh: 2, d: 16, layout: kernels.BNHD, causal: true, b: 2, nq: 2, pageSize: 16, per: 7, spare: 1, cacheLens: []int{100, 40},
			variants: backend.Variants{Window: &kernels.Window{Left: 31, Right: 0}, Sinks: []float32{1, 0, 2, -1}}},
		{name: "paged/float16", h: 4, kvh: 2, d: 32, layout: kernels.BNHD, causal: true, dt: kernels.Float16, b: 2, nq: 1, pageSize: 16, per: 5, spare: 1, cacheLens: []int{33, 70}},
		{name: "packed-q/paged", h: 4, kvh: 2, d: 16, causal: true, qLens: []int{1, 4, 0}, pageSize: 16, per: 2, spare: 1, cacheLens: []int{30, 4, 9}},
	}
}

// TestAttentionSeqs runs packed sequences and paged caches through
// Attention on every backend and judges Out and the LSE by the float64
// reference; a backend without Caps.Seqs must refuse each call with
// ErrUnsupported before it runs.
func TestAttentionSeqs(t *testing.T) {
	for _, bk := range seqsBackends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.open(t)
			for i, c := range seqCases() {
				t.Run(c.name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(i), 14))
					q, k, v, opts, ref := c.build(rng)
					inputs := []*kernels.Tensor{clone(q), clone(k), clone(v)}
					res, err := kernels.Attention(context.Background(), be, q, k, v, opts)
					if !be.Caps().Seqs {
						if !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), "Caps.Seqs") {
							t.Fatalf("without Caps.Seqs: %v, want ErrUnsupported naming Caps.Seqs", err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					want := backendtest.Reference(ref)
					if err := closeTo(res.Out.Data, want.O); err != nil {
						t.Errorf("output: %v", err)
					}
					wantShape := slices.Clone(q.Shape)
					wantShape[len(wantShape)-1] = ref.Problem.Resolved().Dv
					if !slices.Equal(res.Out.Shape, wantShape) || res.Out.Layout != q.Layout {
						t.Errorf("output shape %v %v, want %v %v", res.Out.Shape, res.Out.Layout, wantShape, q.Layout)
					}
					if err := closeTo(res.LSE.Data, want.LSE); err != nil {
						t.Errorf("lse: %v", err)
					}
					wantLSE := []int{ref.B, ref.H, ref.Nq}
					if c.qLens != nil {
						wantLSE = []int{ref.H, ref.Problem.TotalQ()}
					}
					if !slices.Equal(res.LSE.Shape, wantLSE) {
						t.Errorf("lse shape %v, want %v", res.LSE.Shape, wantLSE)
					}
					if res.Strategy != kernels.Fused {
						t.Errorf("ran %v, want fused", res.Strategy)
					}
					for j, in := range []*kernels.Tensor{q, k, v} {
						if !same(in, inputs[j]) && !hasNaN(in) {
							t.Errorf("input %d was modified", j)
						}
					}
				})
			}
		})
	}
}

// hasNaN reports whether t holds a NaN, which same cannot compare.
func hasNaN(t *kernels.Tensor) bool {
	return slices.ContainsFunc(t.Float32s(), func(x float32) bool { return x != x })
}

// noSeqs is the CPU backend claiming no packed or paged problems.
type noSeqs struct{ backend.Backend }

func (n noSeqs) Caps() backend.Caps {
	c := n.Backend.Caps()
	c.Seqs = false
	return c
}

// TestSeqsBadInput: every malformed packed or paged call is an error
// wrapping the right sentinel and naming the sizes, before any work.
func TestSeqsBadInput(t *testing.T) {
	be := openCPU(t)
	rng := rand.New(rand.NewPCG(3, 14))
	q := randTensor(rng, kernels.BNHD, 7, 4, 8) // packed [7, 4, 8]
	k := randTensor(rng, kernels.BNHD, 9, 2, 8) // packed [9, 2, 8]
	v := randTensor(rng, kernels.BNHD, 9, 2, 6) // packed [9, 2, 6]
	dq := randTensor(rng, kernels.BNHD, 2, 3, 4, 8)
	pool := randTensor(rng, kernels.BNHD, 5, 4, 2, 8) // 5 pages of 4 keys
	vpool := randTensor(rng, kernels.BNHD, 5, 4, 2, 6)
	table := [][]int{{0, 1, -1}, {2, 3, 4}}
	nanPool := randTensor(rng, kernels.BNHD, 5, 4, 2, 8)
	nanPool.Data[(3*4+1)*2*8+8+2] = float32(math.NaN()) // page 3, slot 1, head 1, element 2
	packed := func(cuQ, cuK []int) *kernels.Options {
		return &kernels.Options{CuSeqlensQ: cuQ, CuSeqlensK: cuK}
	}
	paged := func(t [][]int, lens ...int) *kernels.Options {
		return &kernels.Options{KVLens: lens, BlockTable: t}
	}
	bhnd := func(x *kernels.Tensor) *kernels.Tensor {
		return &kernels.Tensor{Shape: x.Shape, Layout: kernels.BHND, Data: x.Data}
	}
	for _, c := range []struct {
		name    string
		be      backend.Backend
		q, k, v *kernels.Tensor
		opts    *kernels.Options
		want    error
		msg     string
	}{
		{"cu_q not from 0", be, q, k, v, packed([]int{1, 3, 7}, []int{0, 4, 9}), backend.ErrShape, "CuSeqlensQ starts at 1, want 0"},
		{"cu_q decreasing", be, q, k, v, packed([]int{0, 5, 4, 7}, []int{0, 4, 4, 9}), backend.ErrShape, "CuSeqlensQ decreases: entry 1 is 5, entry 2 is 4"},
		{"cu_q short of total", be, q, k, v, packed([]int{0, 3, 6}, []int{0, 4, 9}), backend.ErrShape, "CuSeqlensQ ends at 6 but Q has 7 rows"},
		{"cu_k past total", be, q, k, v, packed([]int{0, 3, 7}, []int{0, 4, 10}), backend.ErrShape, "CuSeqlensK ends at 10 but K has 9 rows"},
		{"cu_k empty", be, q, k, v, packed([]int{0, 3, 7}, []int{}), backend.ErrShape, "CuSeqlensK has 0 entries, CuSeqlensQ 3"},
		{"cu_q empty", be, q, k, v, packed([]int{}, nil), backend.ErrShape, "CuSeqlensQ is empty"},
		{"cu_k counts", be, q, k, v, packed([]int{0, 3, 7}, []int{0, 9}), backend.ErrShape, "CuSeqlensK has 2 entries, CuSeqlensQ 3"},
		{"cu_k alone", be, q, k, v, packed(nil, []int{0, 9}), backend.ErrShape, "give CuSeqlensQ too"},
		{"packed bhnd", be, bhnd(q), bhnd(k), bhnd(v), packed([]int{0, 7}, []int{0, 9}), backend.ErrShape, "must be BNHD, not BHND"},
		{"packed rank 4", be, dq, k, v, packed([]int{0, 7}, []int{0, 9}), backend.ErrShape, "Q has shape [2 3 4 8]; packed queries (CuSeqlensQ) are rank 3"},
		{"packed heads", be, q, randTensor(rng, kernels.BNHD, 9, 3, 8), randTensor(rng, kernels.BNHD, 9, 3, 6), packed([]int{0, 7}, []int{0, 9}), backend.ErrShape, "Q has H=4 heads, not a multiple of the 3 KV heads of K"},
		{"packed dims", be, q, randTensor(rng, kernels.BNHD, 9, 2, 7), v, packed([]int{0, 7}, []int{0, 9}), backend.ErrShape, "Q has D=8, K has D=7"},
		{"packed V rows", be, q, k, randTensor(rng, kernels.BNHD, 8, 2, 6), packed([]int{0, 7}, []int{0, 9}), backend.ErrShape, "K has 9 rows but V has 8"},
		{"packed V heads", be, q, k, randTensor(rng, kernels.BNHD, 9, 1, 6), packed([]int{0, 7}, []int{0, 9}), backend.ErrShape, "K has 2 heads but V has 1"},
		{"packed key lengths too", be, q, k, v, &kernels.Options{KVLens: []int{3}, CuSeqlensQ: []int{0, 7}, CuSeqlensK: []int{0, 9}}, backend.ErrShape, "give one"},
		{"packed q dense k batch", be, q, randTensor(rng, kernels.BNHD, 3, 5, 2, 8), randTensor(rng, kernels.BNHD, 3, 5, 2, 6), packed([]int{0, 3, 7}, nil), backend.ErrShape, "CuSeqlensQ has B=2 sequences, K has B=3"},
		{"packed staged", be, q, k, v, &kernels.Options{CuSeqlensQ: []int{0, 7}, CuSeqlensK: []int{0, 9}, Strategy: kernels.Staged}, backend.ErrUnsupported, "the staged strategy takes no packed sequences (B=1 Nq=7 Nk=9)"},
		{"packed weights", be, q, k, v, &kernels.Options{CuSeqlensQ: []int{0, 7}, CuSeqlensK: []int{0, 9}, Weights: true}, backend.ErrUnsupported, "weights and scores exist only on the staged path"},
		{"packed scores", be, q, k, v, &kernels.Options{CuSeqlensQ: []int{0, 7}, CuSeqlensK: []int{0, 9}, Scores: true}, backend.ErrUnsupported, "staged path"},
		{"no Caps.Seqs", noSeqs{be}, q, k, v, packed([]int{0, 7}, []int{0, 9}), backend.ErrUnsupported, "the cpu backend's fused path takes no packed sequences or paged caches (Caps.Seqs is false; B=1 Nq=7 Nk=9)"},
		{"packed bias", be, q, k, v, &kernels.Options{CuSeqlensQ: []int{0, 3, 7}, CuSeqlensK: []int{0, 4, 9}, Bias: randTensor(rng, kernels.BHND, 7, 9)}, backend.ErrShape, "bias of shape [7 9] does not broadcast to [B=2, H=4, Nq=4, Nk=5]"},
		{"NaN in packed K", be, q, func() *kernels.Tensor {
			x := clone(k)
			x.Shape = k.Shape
			x.Layout = kernels.BNHD
			x.Data[17] = float32(math.Inf(1))
			return x
		}(), v,
			packed([]int{0, 7}, []int{0, 9}), backend.ErrNonFinite, "K of shape [9 2 8] holds +Inf at [1 0 1]"},

		{"table entry out of range", be, dq, pool, vpool, paged([][]int{{0, 1, -1}, {2, 5, 4}}, 8, 12), backend.ErrShape, "BlockTable: sequence 1 block 1 (keys 4 … 7 of its 12) names page 5, want 0 … 4 (K has 5 pages)"},
		{"unread entry out of range", be, dq, pool, vpool, paged([][]int{{0, 1, 7}, {2, 3, 4}}, 8, 12), nil, ""},
		{"cache beyond pages", be, dq, pool, vpool, paged(table, 13, 12), backend.ErrShape, "KVLens: cache length 13 of sequence 0 is beyond its 3 pages of 4 keys (BlockTable rows of 3 entries hold 0 … 12 keys)"},
		{"cache lengths count", be, dq, pool, vpool, paged(table, 8), backend.ErrShape, "KVLens: 1 cache lengths for B=2 sequences"},
		{"negative cache length", be, dq, pool, vpool, paged(table, -1, 12), backend.ErrShape, "cache length -1 of sequence 0"},
		{"table rows", be, dq, pool, vpool, paged([][]int{{0, 1}, {2, 3, 4}}, 8, 12), backend.ErrShape, "BlockTable row 1 has 3 entries, row 0 has 2"},
		{"table batch", be, dq, pool, vpool, paged([][]int{{0, 1, 2}}, 8), backend.ErrShape, "BlockTable has 1 rows for B=2 sequences of Q"},
		{"full caches read -1", be, dq, pool, vpool, paged(table), backend.ErrShape, "names page -1"},
		{"pool rank", be, dq, k, v, paged(table, 8, 12), backend.ErrShape, "K has shape [9 2 8]; a paged cache (BlockTable) is a pool of rank 4"},
		{"q rank", be, randTensor(rng, kernels.BNHD, 3, 4, 8), pool, vpool, paged(table, 8, 12), backend.ErrShape, "queries are rank 4"},
		{"pools differ", be, dq, pool, randTensor(rng, kernels.BNHD, 4, 4, 2, 6), paged(table, 8, 12), backend.ErrShape, "K has 5 pages of 4 keys, V 4 pages of 4"},
		{"pool heads", be, dq, pool, randTensor(rng, kernels.BNHD, 5, 4, 1, 6), paged(table, 8, 12), backend.ErrShape, "K has 2 heads but V has 1"},
		{"pool dims", be, dq, randTensor(rng, kernels.BNHD, 5, 4, 2, 9), vpool, paged(table, 8, 12), backend.ErrShape, "Q has D=8, K has D=9"},
		{"pages of 0 keys", be, dq, randTensor(rng, kernels.BNHD, 5, 0, 2, 8), randTensor(rng, kernels.BNHD, 5, 0, 2, 6), paged(table, 0, 0), backend.ErrShape, "page size ≥ 1"},
		{"table and packed keys", be, q, k, v, &kernels.Options{CuSeqlensQ: []int{0, 7}, CuSeqlensK: []int{0, 9}, BlockTable: table}, backend.ErrShape, "both set"},
		{"NaN on a read page", be, dq, nanPool, vpool, paged(table, 8, 6), backend.ErrNonFinite, "K of shape [5 4 2 8] holds NaN at [3 1 1 2] (sequence 1's key 5, on page 3)"},
		{"NaN past the cache", be, dq, nanPool, vpool, paged(table, 8, 5), nil, ""},
		{"paged staged", be, dq, pool, vpool, &kernels.Options{KVLens: []int{8, 12}, BlockTable: table, Strategy: kernels.Staged}, backend.ErrUnsupported, "the staged strategy takes no paged caches (B=2 Nq=3 Nk=12)"},
		{"paged no Caps.Seqs", noSeqs{be}, dq, pool, vpool, paged(table, 8, 12), backend.ErrUnsupported, "takes no packed sequences or paged caches (Caps.Seqs is false; B=2 Nq=3 Nk=12)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := kernels.Attention(context.Background(), c.be, c.q, c.k, c.v, c.opts)
			if c.want == nil {
				if err != nil {
					t.Fatalf("%v, want no error", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want one wrapping %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
		})
	}
}

// Shapes.Check knows the sequences too: the problem it returns is the
// one Attention runs, with Packed and Paged set from the options.
func TestShapesCheckSeqs(t *testing.T) {
	p, err := kernels.Shapes{Q: []int{7, 4, 8}, K: []int{5, 4, 2, 8}, V: []int{5, 4, 2, 6}, Layout: kernels.BNHD}.Check(
		&kernels.Options{KVLens: []int{5, 12}, CuSeqlensQ: []int{0, 1, 7}, BlockTable: [][]int{{0, 1, -1}, {2, 3, 4}}})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("B=%d H=%d KVH=%d Nq=%d Nk=%d D=%d Dv=%d cuQ=%v pages=%+v", p.B, p.H, p.KVHeads, p.Nq, p.Nk, p.D, p.Dv, p.Packed.CuQ, *p.Paged)
	want := "B=2 H=4 KVH=2 Nq=6 Nk=12 D=8 Dv=6 cuQ=[0 1 7] pages={PageSize:4 Pages:5 PerSeq:3 Table:[0 1 -1 2 3 4]}"
	if got != want {
		t.Errorf("Check = %s, want %s", got, want)
	}
	// The errors name the lists as the caller says (attn run: its flags
	// and files).
	named := kernels.Shapes{Q: []int{7, 4, 8}, K: []int{5, 4, 2, 8}, V: []int{5, 4, 2, 6}, Layout: kernels.BNHD,
		Names: kernels.OperandNames{Q: "q.npy", K: "k.npy", V: "v.npy",
			CuSeqlensQ: "-cu-seqlens-q cq.npy", CuSeqlensK: "-cu-seqlens-k ck.npy", BlockTable: "-block-table t.npy", KVLens: "-cache-lens l.npy"}}
	for _, tc := range []struct {
		opts *kernels.Options
		want string
	}{
		{&kernels.Options{CuSeqlensQ: []int{0, 1, 6}}, "-cu-seqlens-q cq.npy ends at 6 but q.npy has 7 rows"},
		{&kernels.Options{CuSeqlensQ: []int{0, 7}, CuSeqlensK: []int{0, 5}}, "k.npy has shape [5 4 2 8]; packed keys and values (-cu-seqlens-k ck.npy) are rank 3"},
		{&kernels.Options{KVLens: []int{5, 12}, CuSeqlensQ: []int{0, 1, 7}, BlockTable: [][]int{{0, 9, -1}, {2, 3, 4}}},
			"-block-table t.npy: sequence 0 block 1 (keys 4 … 4 of its 5) names page 9, want 0 … 4 (k.npy has 5 pages)"},
		{&kernels.Options{KVLens: []int{5, 13}, CuSeqlensQ: []int{0, 1, 7}, BlockTable: [][]int{{0, 1, -1}, {2, 3, 4}}},
			"-cache-lens l.npy: cache length 13 of sequence 1 is beyond its 3 pages of 4 keys (-block-table t.npy rows of 3 entries hold 0 … 12 keys)"},
	} {
		if _, err := named.Check(tc.opts); !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want ErrShape saying %q", err, tc.want)
		}
	}
}
