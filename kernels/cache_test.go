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
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/kernels"
)

// mirror is what a cache should hold, on the host: each sequence's keys
// and values as appended, rounded to the cache's dtype.
type mirror struct {
	cfg  kernels.CacheConfig
	k, v [][]float32 // per sequence, [n, KVHeads, dim] token-major
}

func (m *mirror) append(seq int, k, v *kernels.Tensor) {
	for len(m.k) <= seq {
		m.k, m.v = append(m.k, nil), append(m.v, nil)
	}
	dv := m.cfg.Dv
	if dv == 0 {
		dv = m.cfg.D
	}
	m.k[seq] = append(m.k[seq], m.round(k.Float32s(), m.cfg.KScale, m.cfg.D)...)
	m.v[seq] = append(m.v[seq], m.round(v.Float32s(), m.cfg.VScale, dv)...)
}

// round is rows x ([n, KVHeads, dim]) as the cache reads them back: each
// value rounded to its dtype, q8 rows by their blocks, an fp8 value
// divided by its head's scale (when scales is not nil), rounded and
// saturated, and multiplied back.
func (m *mirror) round(x, scales []float32, dim int) []float32 {
	dt := m.cfg.DType
	out := make([]float32, len(x))
	if !dt.Quantized() {
		for i, v := range x {
			out[i] = dt.Round(v)
		}
		return out
	}
	scale := func(i int) float32 {
		if scales == nil {
			return 1
		}
		return scales[i/dim%m.cfg.KVHeads]
	}
	for i, v := range x {
		out[i] = v / scale(i)
	}
	if err := dt.RoundRows(out, out, dim); err != nil {
		panic(err)
	}
	for i := range out {
		out[i] *= scale(i)
	}
	return out
}

// slack is what compareOut allows beyond Allowed for queries q over m's
// cache: under bfloat16 arithmetic (q and the cache both BFloat16, the
// caller's choice of bfloat16 precision, which lets the CPU round P to
// bfloat16) backendtest.BF16Slack of every cached value, else 0.
func (m *mirror) slack(q *kernels.Tensor) float64 {
	if q.DType != kernels.BFloat16 || m.cfg.DType != kernels.BFloat16 {
		return 0
	}
	var v []float32
	for _, s := range m.v {
		v = append(v, s...)
	}
	return backendtest.BF16Slack(v)
}

func (m *mirror) len(seq int) int { return len(m.k[seq]) / (m.cfg.KVHeads * m.cfg.D) }

// want is the float64 reference output of q over sequences seqs of m, as
// a dense problem with key lengths.
func (m *mirror) want(t *testing.T, seqs []int, q *kernels.Tensor, opts *kernels.AttendOptions) ([]float64, backend.Problem) {
	t.Helper()
	b, h, nq, d := operand.Dims(q.Shape, q.Layout)
	dv := m.cfg.Dv
	if dv == 0 {
		dv = d
	}
	nk := 1
	lens := make([]int, len(seqs))
	for i, s := range seqs {
		lens[i] = m.len(s)
		if opts.KVLens != nil {
			lens[i] = opts.KVLens[i] // a prefix of the sequence
		}
		nk = max(nk, lens[i])
	}
	p := backend.Problem{B: b, H: h, KVHeads: m.cfg.KVHeads, Nq: nq, Nk: nk, D: d, Dv: dv, Layout: q.Layout,
		Scale: float32(opts.Scale), Causal: opts.Causal, Variants: backend.Variants{CausalOffset: opts.CausalOffset,
			Window: opts.Window, Softcap: float32(opts.Softcap), ALiBi: opts.ALiBi, Sinks: opts.Sinks, KVLens: lens}}
	r := p.Resolved()
	c := backendtest.Case{Problem: p, Q: q.Float32s(), K: make([]float32, r.KLen()), V: make([]float32, r.VLen())}
	ks, vs := r.KStrides(), r.VStrides()
	for i, s := range seqs {
		for j := range lens[i] {
			for kh := range m.cfg.KVHeads {
				copy(c.K[ks.Offset(i, kh, j):][:d], m.k[s][(j*m.cfg.KVHeads+kh)*d:])
				copy(c.V[vs.Offset(i, kh, j):][:dv], m.v[s][(j*m.cfg.KVHeads+kh)*dv:])
			}
		}
	}
	return backendtest.Reference(c).O, r
}

// compareOut checks each output row of got against the float64
// reference want, within backendtest.Allowed of its dtype (relative to
// the row's largest value, at least 1) plus slack.
func compareOut(t *testing.T, what string, got *kernels.Tensor, want []float64, dv int, slack float64) {
	t.Helper()
	g := got.Float32s()
	for r := 0; r < len(want); r += dv {
		scale := 1.0
		for _, w := range want[r : r+dv] {
			scale = max(scale, math.Abs(w))
		}
		for i := r; i < r+dv; i++ {
			if d := math.Abs(float64(g[i]) - want[i]); backendtest.Exceeds(d, backendtest.Allowed(got.DType, want[i], scale)+slack) {
				t.Fatalf("%s: out[%d] = %v, want %v", what, i, g[i], want[i])
			}
		}
	}
}

func rows(rng *rand.Rand, dt kernels.DType, n, heads, dim int) *kernels.Tensor {
	x := randTensor(rng, kernels.BNHD, n, heads, dim)
	if dt == kernels.Float32 {
		return x
	}
	y, err := x.Convert(dt)
	if err != nil {
		panic(err)
	}
	return y
}

// A decoding loop over a contiguous cache and over a page pool, in each
// layout and storage dtype: a prompt appended in one piece, then tokens
// one or two at a time (rows in another dtype than the cache's, too),
// each step attending one or two queries over everything cached — with
// GQA, causal masking and the variants — matches the float64 reference
// of the same keys as a dense problem; sequences of different lengths
// interleave their pages, and a released sequence's pages serve the next.
func TestCacheDecode(t *testing.T) {
	testCacheDecode(t, openCPU(t), append(backend.DTypes, backend.Quants...))
}

// testCacheDecode is TestCacheDecode on be for caches of the dtypes dts.
func testCacheDecode(t *testing.T, be backend.Backend, dts []backend.DType) {
	ctx := context.Background()
	for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
		for _, dt := range dts {
			for _, pageSize := range []int{0, 1, 3, 16} {
				name := fmt.Sprintf("%v/%v/pages=%d", layout, dt, pageSize)
				t.Run(name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(31, uint64(pageSize)))
					cfg := kernels.CacheConfig{KVHeads: 2, D: 16, Dv: 32, DType: dt, Layout: layout}
					qdt := dt // the queries' and outputs' dtype
					if dt.Quantized() {
						// Whole q8 blocks; fp8 with a scale a head.
						cfg.D, cfg.Dv, qdt = 32, 64, kernels.Float32
						if dt == backend.FP8 {
							cfg.KScale, cfg.VScale = []float32{0.25, 2}, []float32{0.5, 3}
						}
					}
					const batch, h = 3, 4
					m := &mirror{cfg: cfg}
					var cache *kernels.KVCache
					var pool *kernels.PagePool
					var seqs []*kernels.Seq
					var err error
					if pageSize == 0 {
						cache, err = kernels.NewKVCache(be, batch, 40, cfg)
					} else {
						pool, err = kernels.NewPagePool(be, pageSize, 3*40/pageSize+3, cfg)
					}
					if err != nil {
						t.Fatal(err)
					}
					for range batch * min(pageSize, 1) {
						seqs = append(seqs, newSeq(t, pool))
					}
					appendRows := func(s, n int) {
						kdt := qdt
						if n == 2 {
							kdt = kernels.Float32 // rows of another dtype
						}
						k, v := rows(rng, kdt, n, cfg.KVHeads, cfg.D), rows(rng, kdt, n, cfg.KVHeads, cfg.Dv)
						var err error
						if cache != nil {
							err = cache.Append(s, k, v)
						} else {
							err = seqs[s].Append(k, v)
						}
						if err != nil {
							t.Fatalf("append %d to %d: %v", n, s, err)
						}
						m.append(s, k, v)
					}
					for s, n := range []int{7, 0, 20} {
						appendRows(s, n)
					}
					opts := []*kernels.AttendOptions{
						{Causal: true},
						{Causal: true, Window: &backend.Window{Left: 4, Right: 0}, Sinks: []float32{0, 1, -1, 2}},
						{Softcap: 2, ALiBi: []float32{0.5, 0.25, 0.1, 0.05}},
						{Scale: 0.3, Causal: true}, // and a prefix of each sequence: KVLens, set below
					}
					for step := range 12 {
						nq := 1 + step%2
						for s := range batch {
							appendRows(s, nq)
						}
						if step == 3 {
							// Drop the last token of sequence 2 and write another.
							if cache != nil {
								err = cache.Truncate(2, m.len(2)-1)
							} else {
								err = seqs[2].Truncate(m.len(2) - 1)
							}
							if err != nil {
								t.Fatal(err)
							}
							per := cfg.KVHeads * cfg.D
							m.k[2], m.v[2] = m.k[2][:len(m.k[2])-per], m.v[2][:len(m.v[2])-cfg.KVHeads*cfg.Dv]
							appendRows(2, 1)
						}
						if step == 5 && pool != nil {
							// Release a sequence and grow another into its pages.
							seqs[1].Release()
							seqs[1] = newSeq(t, pool)
							m.k[1], m.v[1] = nil, nil
							appendRows(1, 3)
						}
						o := opts[step%len(opts)]
						if step%len(opts) == 3 {
							o.KVLens = []int{m.len(0) - 1, m.len(1), max(m.len(2)-5, 0)}
						}
						shape := []int{batch, nq, h, cfg.D}
						oshape := []int{batch, nq, h, cfg.Dv}
						if layout == kernels.BHND {
							shape, oshape = []int{batch, h, nq, cfg.D}, []int{batch, h, nq, cfg.Dv}
						}
						q := randTensor(rng, layout, shape...)
						out, _ := kernels.NewTensorOf(qdt, layout, oshape...)
						lse, _ := kernels.NewTensor(kernels.BHND, batch, h, nq)
						if cache != nil {
							err = cache.Attend(ctx, q, out, lse, o)
						} else {
							err = pool.Attend(ctx, seqs, q, out, lse, o)
						}
						if err != nil {
							t.Fatalf("step %d: %v", step, err)
						}
						want, _ := m.want(t, []int{0, 1, 2}, q, o)
						compareOut(t, fmt.Sprintf("step %d", step), out, want, cfg.Dv, m.slack(q))
					}
					if cache != nil {
						cache.Release()
					} else {
						for _, s := range seqs {
							s.Release()
						}
						if pool.Free() != 3*40/pageSize+3 {
							t.Errorf("%d pages free after every sequence's release, want all %d", pool.Free(), 3*40/pageSize+3)
						}
						pool.Release()
					}
				})
			}
		}
	}
}

// Bad appends and attends are errors naming the sizes, and leave the
// cache as it was: the next attend answers as before.
func TestCacheErrors(t *testing.T) {
	be := openCPU(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(41, 42))
	cfg := kernels.CacheConfig{KVHeads: 2, D: 16, DType: kernels.Float16, Layout: kernels.BNHD}
	cache, err := kernels.NewKVCache(be, 2, 8, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Release()
	pool, err := kernels.NewPagePool(be, 4, 3, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Release()
	seq := newSeq(t, pool)
	if err := cache.Append(0, rows(rng, kernels.Float32, 6, 2, 16), rows(rng, kernels.Float32, 6, 2, 16)); err != nil {
		t.Fatal(err)
	}
	if err := seq.Append(rows(rng, kernels.Float32, 6, 2, 16), rows(rng, kernels.Float32, 6, 2, 16)); err != nil {
		t.Fatal(err)
	}
	q := randTensor(rng, kernels.BNHD, 2, 1, 4, 16)
	q1 := randTensor(rng, kernels.BNHD, 1, 1, 4, 16)
	before := func() ([]float32, []float32) {
		out, _ := kernels.NewTensor(kernels.BNHD, 2, 1, 4, 16)
		if err := cache.Attend(ctx, q, out, nil, nil); err != nil {
			t.Fatal(err)
		}
		out1, _ := kernels.NewTensor(kernels.BNHD, 1, 1, 4, 16)
		if err := pool.Attend(ctx, []*kernels.Seq{seq}, q1, out1, nil, nil); err != nil {
			t.Fatal(err)
		}
		return out.Data, out1.Data
	}
	was, was1 := before()
	nan := rows(rng, kernels.Float32, 1, 2, 16)
	nan.Data[17] = float32(math.NaN())
	big := rows(rng, kernels.Float32, 1, 2, 16)
	big.Data[3] = 1e5
	ok1 := rows(rng, kernels.Float32, 1, 2, 16)
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"past the capacity", cache.Append(0, rows(rng, kernels.Float32, 3, 2, 16), rows(rng, kernels.Float32, 3, 2, 16)), backend.ErrCacheFull},
		{"sequence out of range", cache.Append(2, ok1, ok1), backend.ErrShape},
		{"wrong heads", cache.Append(1, rows(rng, kernels.Float32, 1, 3, 16), ok1), backend.ErrShape},
		{"rows differ", cache.Append(1, rows(rng, kernels.Float32, 2, 2, 16), ok1), backend.ErrShape},
		{"NaN", cache.Append(1, ok1, nan), backend.ErrNonFinite},
		{"beyond float16", cache.Append(1, big, ok1), backend.ErrNonFinite},
		{"pool exhausted", seq.Append(rows(rng, kernels.Float32, 7, 2, 16), rows(rng, kernels.Float32, 7, 2, 16)), backend.ErrCacheFull},
		{"pool NaN", seq.Append(ok1, nan), backend.ErrNonFinite},
		{"key lengths past a sequence's", cache.Attend(ctx, q, randTensor(rng, kernels.BNHD, 2, 1, 4, 16), nil, &kernels.AttendOptions{KVLens: []int{9, 1}}), backend.ErrShape},
		{"key lengths of the wrong count", cache.Attend(ctx, q, randTensor(rng, kernels.BNHD, 2, 1, 4, 16), nil, &kernels.AttendOptions{KVLens: []int{1}}), backend.ErrShape},
		{"NaN scale", cache.Attend(ctx, q, randTensor(rng, kernels.BNHD, 2, 1, 4, 16), nil, &kernels.AttendOptions{Scale: math.NaN()}), backend.ErrShape},
		{"infinite softcap", cache.Attend(ctx, q, randTensor(rng, kernels.BNHD, 2, 1, 4, 16), nil, &kernels.AttendOptions{Softcap: math.Inf(1)}), backend.ErrShape},
		{"causal offset without causal", cache.Attend(ctx, q, randTensor(rng, kernels.BNHD, 2, 1, 4, 16), nil, &kernels.AttendOptions{CausalOffset: new(int)}), backend.ErrShape},
		{"query of another layout", cache.Attend(ctx, randTensor(rng, kernels.BHND, 2, 4, 1, 16), randTensor(rng, kernels.BHND, 2, 4, 1, 16), nil, nil), backend.ErrShape},
		{"query batch", cache.Attend(ctx, q1, randTensor(rng, kernels.BNHD, 1, 1, 4, 16), nil, nil), backend.ErrShape},
		{"query heads", cache.Attend(ctx, randTensor(rng, kernels.BNHD, 2, 1, 3, 16), randTensor(rng, kernels.BNHD, 2, 1, 3, 16), nil, nil), backend.ErrShape},
		{"output shape", cache.Attend(ctx, q, randTensor(rng, kernels.BNHD, 2, 1, 4, 8), nil, nil), backend.ErrShape},
		{"a foreign sequence", pool.Attend(ctx, []*kernels.Seq{nil}, q1, randTensor(rng, kernels.BNHD, 1, 1, 4, 16), nil, nil), backend.ErrShape},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if cache.Len(0) != 6 || cache.Len(1) != 0 || seq.Len() != 6 || pool.Free() != 1 {
		t.Errorf("after the errors: lengths %d, %d, %d and %d pages free, want 6, 0, 6 and 1", cache.Len(0), cache.Len(1), seq.Len(), pool.Free())
	}
	now, now1 := before()
	for i := range now {
		if now[i] != was[i] {
			t.Fatalf("the cache answers differently after refused appends: out[%d] %v, was %v", i, now[i], was[i])
		}
	}
	for i := range now1 {
		if now1[i] != was1[i] {
			t.Fatalf("the pool answers differently after refused appends: out[%d] %v, was %v", i, now1[i], was1[i])
		}
	}
}

// A cache with no room for an append — a sequence past its capacity, a
// pool out of free pages — says so with backend.ErrCacheFull, not
// ErrShape (which would read as a bug), naming the sizes, and is
// unchanged; an append that fits exactly is no error, and a bad shape
// is still ErrShape.
func TestCacheFull(t *testing.T) {
	be := openCPU(t)
	for _, c := range []struct {
		name      string
		pageSize  int // 0: a KVCache of capacity 8
		pages     int
		held, add int   // keys appended first, then keys the append brings
		want      error // nil: the append fits
		contain   []string
	}{
		{name: "cache fits exactly", held: 5, add: 3},
		{name: "cache one past", held: 5, add: 4, want: backend.ErrCacheFull, contain: []string{"append 4 keys", "holds 5", "capacity 8"}},
		{name: "cache empty, too long", add: 9, want: backend.ErrCacheFull, contain: []string{"append 9 keys", "capacity 8"}},
		{name: "pool fits exactly", pageSize: 4, pages: 3, held: 6, add: 6},
		{name: "pool one key past", pageSize: 4, pages: 3, held: 6, add: 7, want: backend.ErrCacheFull, contain: []string{"append 7 keys", "sequence of 6", "2 more pages of 4 keys", "1 free of 3"}},
		{name: "pool empty, too long", pageSize: 1, pages: 2, add: 3, want: backend.ErrCacheFull, contain: []string{"append 3 keys", "3 more pages of 1 keys", "2 free of 2"}},
		{name: "pool of no pages", pageSize: 16, add: 1, want: backend.ErrCacheFull, contain: []string{"0 free of 0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(101, uint64(c.add)))
			cfg := kernels.CacheConfig{KVHeads: 2, D: 8, DType: kernels.Float16, Layout: kernels.BNHD}
			var appendRows func(k, v *kernels.Tensor) error
			var state func() string
			if c.pageSize == 0 {
				cache, err := kernels.NewKVCache(be, 1, 8, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer cache.Release()
				appendRows = func(k, v *kernels.Tensor) error { return cache.Append(0, k, v) }
				state = func() string { return fmt.Sprintf("%d keys", cache.Len(0)) }
			} else {
				pool, err := kernels.NewPagePool(be, c.pageSize, c.pages, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer pool.Release()
				seq := newSeq(t, pool)
				appendRows = seq.Append
				state = func() string { return fmt.Sprintf("%d keys on pages %v, %d free", seq.Len(), seq.Pages(), pool.Free()) }
			}
			if c.held > 0 {
				if err := appendRows(rows(rng, kernels.Float32, c.held, 2, 8), rows(rng, kernels.Float32, c.held, 2, 8)); err != nil {
					t.Fatal(err)
				}
			}
			was := state()
			err := appendRows(rows(rng, kernels.Float32, c.add, 2, 8), rows(rng, kernels.Float32, c.add, 2, 8))
			if c.want == nil {
				if err != nil {
					t.Fatalf("append %d to %d: %v", c.add, c.held, err)
				}
				return
			}
			if !errors.Is(err, c.want) || errors.Is(err, backend.ErrShape) {
				t.Fatalf("append %d to %d: %v, want %v and not %v", c.add, c.held, err, c.want, backend.ErrShape)
			}
			for _, s := range c.contain {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not name %q", err, s)
				}
			}
			if now := state(); now != was {
				t.Errorf("a refused append changed the cache: %s, was %s", now, was)
			}
			// A bad shape is a bug, not a full cache.
			err = appendRows(rows(rng, kernels.Float32, 1, 3, 8), rows(rng, kernels.Float32, 1, 3, 8))
			if !errors.Is(err, backend.ErrShape) || errors.Is(err, backend.ErrCacheFull) {
				t.Errorf("rows of 3 heads into a cache of 2: %v, want %v alone", err, backend.ErrShape)
			}
		})
	}
}

// A query of the wrong layout or rank is refused with an error that says
// which: a rank-4 query in the other layout names both layouts and its
// shape (it once read "want rank 4" for a tensor of rank 4), and a query
// of another rank names its rank; contiguous and paged, in both layouts.
func TestCacheQueryLayout(t *testing.T) {
	be := openCPU(t)
	ctx := context.Background()
	other := map[kernels.Layout]kernels.Layout{kernels.BNHD: kernels.BHND, kernels.BHND: kernels.BNHD}
	for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
		rng := rand.New(rand.NewPCG(121, uint64(layout)))
		cfg := kernels.CacheConfig{KVHeads: 2, D: 16, Layout: layout}
		cache, err := kernels.NewKVCache(be, 2, 8, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer cache.Release()
		pool, err := kernels.NewPagePool(be, 4, 4, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Release()
		seqs := []*kernels.Seq{newSeq(t, pool), newSeq(t, pool)}
		for i, s := range seqs {
			k, v := rows(rng, kernels.Float32, 3, 2, 16), rows(rng, kernels.Float32, 3, 2, 16)
			if err := s.Append(k, v); err != nil {
				t.Fatal(err)
			}
			if err := cache.Append(i, k, v); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			name    string
			layout  kernels.Layout
			shape   []int
			contain []string
			lacks   string
		}{
			{"other layout", other[layout], []int{2, 4, 1, 16},
				[]string{"[2 4 1 16]", "layout " + other[layout].String(), "layout " + layout.String()}, "rank"},
			{"other layout, its own order", other[layout], []int{2, 1, 4, 16},
				[]string{"[2 1 4 16]", "layout " + other[layout].String(), "layout " + layout.String()}, "rank"},
			{"rank 3", layout, []int{1, 4, 16},
				[]string{"[1 4 16]", "rank 3", "want rank 4"}, ""},
			{"rank 5", layout, []int{2, 1, 1, 4, 16},
				[]string{"[2 1 1 4 16]", "rank 5", "want rank 4"}, ""},
		} {
			for _, via := range []string{"cache", "pool"} {
				t.Run(fmt.Sprintf("%v/%s/%s", layout, c.name, via), func(t *testing.T) {
					q := randTensor(rng, c.layout, c.shape...)
					out := randTensor(rng, c.layout, c.shape...)
					var err error
					if via == "cache" {
						err = cache.Attend(ctx, q, out, nil, nil)
					} else {
						err = pool.Attend(ctx, seqs, q, out, nil, nil)
					}
					if !errors.Is(err, backend.ErrShape) {
						t.Fatalf("%v", err)
					}
					for _, s := range c.contain {
						if !strings.Contains(err.Error(), s) {
							t.Errorf("%q does not name %q", err, s)
						}
					}
					if c.lacks != "" && strings.Contains(err.Error(), c.lacks) {
						t.Errorf("%q speaks of the %s of a rank-4 query", err, c.lacks)
					}
				})
			}
		}
	}
}

// Float32 rows into a half cache pass one range check: values up to the
// largest that rounds to a finite half (65504 and 65519 into float16,
// which round to 65504) are taken, rounded, and the first value that
// would round to an infinity, a NaN or an infinity anywhere in K or V is
// refused with an error naming it, the cache unchanged.
func TestCacheAppendRange(t *testing.T) {
	be := openCPU(t)
	ctx := context.Background()
	maxBF16 := float32(math.Float32frombits(0x7f7f7fff)) // rounds down to bfloat16's largest
	for _, c := range []struct {
		name    string
		dt      kernels.DType
		inV     bool
		at      int
		x       float32
		want    error    // nil: taken
		contain []string // in the error
	}{
		{"f16 largest", kernels.Float16, false, 0, 65504, nil, nil},
		{"f16 rounds to largest", kernels.Float16, true, 100, -65519.99, nil, nil},
		{"f16 rounds to Inf", kernels.Float16, false, 0, 65520, backend.ErrNonFinite, []string{"appended K element 0 is 65520", "65504"}},
		{"f16 far past, last of V", kernels.Float16, true, 3*2*32 - 1, -1e6, backend.ErrNonFinite, []string{"appended V element 191 is -1e+06"}},
		{"f16 in the middle", kernels.Float16, false, 77, 70000, backend.ErrNonFinite, []string{"appended K element 77 is 70000"}},
		{"bf16 rounds to largest", kernels.BFloat16, false, 5, maxBF16, nil, nil},
		{"bf16 rounds to Inf", kernels.BFloat16, true, 5, math.MaxFloat32, backend.ErrNonFinite, []string{"appended V element 5 is 3.4028235e+38"}},
		{"f32 takes its largest", kernels.Float32, false, 9, -math.MaxFloat32, nil, nil},
		{"NaN into f16", kernels.Float16, true, 40, float32(math.NaN()), backend.ErrNonFinite, []string{"appended V", "NaN at [0 1 8]"}},
		{"-Inf into f32", kernels.Float32, false, 130, float32(math.Inf(-1)), backend.ErrNonFinite, []string{"appended K", "-Inf at [1 0 2]"}},
		{"+Inf into bf16", kernels.BFloat16, false, 64, float32(math.Inf(1)), backend.ErrNonFinite, []string{"appended K", "+Inf at [0 1 0]"}},
	} {
		for _, paged := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/paged=%v", c.name, paged), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(151, uint64(c.at)))
				cfg := kernels.CacheConfig{KVHeads: 2, D: 64, Dv: 32, DType: c.dt, Layout: kernels.BHND}
				var appendRows func(k, v *kernels.Tensor) error
				var attend func(q, out *kernels.Tensor) error
				var length func() int
				if paged {
					pool, err := kernels.NewPagePool(be, 2, 4, cfg)
					if err != nil {
						t.Fatal(err)
					}
					defer pool.Release()
					seq := newSeq(t, pool)
					seqs := []*kernels.Seq{seq}
					appendRows = seq.Append
					attend = func(q, out *kernels.Tensor) error { return pool.Attend(ctx, seqs, q, out, nil, nil) }
					length = func() int { return seq.Len()*100 + pool.Free() }
				} else {
					cache, err := kernels.NewKVCache(be, 1, 8, cfg)
					if err != nil {
						t.Fatal(err)
					}
					defer cache.Release()
					appendRows = func(k, v *kernels.Tensor) error { return cache.Append(0, k, v) }
					attend = func(q, out *kernels.Tensor) error { return cache.Attend(ctx, q, out, nil, nil) }
					length = func() int { return cache.Len(0) }
				}
				m := &mirror{cfg: cfg}
				k0, v0 := rows(rng, kernels.Float32, 2, 2, 64), rows(rng, kernels.Float32, 2, 2, 32)
				if err := appendRows(k0, v0); err != nil {
					t.Fatal(err)
				}
				m.append(0, k0, v0)
				q := randTensor(rng, kernels.BHND, 1, 2, 1, 64)
				before, _ := kernels.NewTensor(kernels.BHND, 1, 2, 1, 32)
				if err := attend(q, before); err != nil {
					t.Fatal(err)
				}
				was := length()
				k, v := rows(rng, kernels.Float32, 3, 2, 64), rows(rng, kernels.Float32, 3, 2, 32)
				if c.inV {
					v.Data[c.at] = c.x
				} else {
					k.Data[c.at] = c.x
				}
				err := appendRows(k, v)
				if c.want == nil {
					if err != nil {
						t.Fatalf("append of %g: %v", c.x, err)
					}
					m.append(0, k, v)
					out, _ := kernels.NewTensor(kernels.BHND, 1, 2, 1, 32)
					if err := attend(q, out); err != nil {
						t.Fatal(err)
					}
					want, _ := m.want(t, []int{0}, q, &kernels.AttendOptions{})
					compareOut(t, "after the append", out, want, 32, m.slack(q))
					return
				}
				if !errors.Is(err, c.want) {
					t.Fatalf("append of %g: %v, want %v", c.x, err, c.want)
				}
				for _, s := range c.contain {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("%q does not say %q", err, s)
					}
				}
				if now := length(); now != was {
					t.Errorf("a refused append changed the cache's length or pages: %d, was %d", now, was)
				}
				after, _ := kernels.NewTensor(kernels.BHND, 1, 2, 1, 32)
				if err := attend(q, after); err != nil {
					t.Fatal(err)
				}
				for i := range after.Data {
					if after.Data[i] != before.Data[i] {
						t.Fatalf("the cache answers differently after a refused append: out[%d] %v, was %v", i, after.Data[i], before.Data[i])
					}
				}
			})
		}
	}
}
