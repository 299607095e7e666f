package kernels_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/kernels"
)

// BenchmarkCacheDecode times a decoding step through the cache API on the
// CPU backend — append one token's K and V, attend one query over the
// whole cache — at B=1, H=32 query heads over 8 KV heads, D=128, with
// caches of Nk keys in float32 and float16, contiguous and paged (pages
// of 256 keys). GB/s counts the cache's K and V bytes a step reads.
//
//	go test -run '^$' -bench CacheDecode -benchmem ./kernels
func BenchmarkCacheDecode(b *testing.B) {
	for _, nk := range []int{4096, 32768} {
		for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16, kernels.Q8, kernels.FP8, kernels.Q4} {
			for _, paged := range []bool{false, true} {
				b.Run(fmt.Sprintf("Nk=%d/%v/paged=%v", nk, dt, paged), func(b *testing.B) {
					benchDecode(b, 1, nk, dt, paged)
				})
			}
		}
	}
}

// BenchmarkCacheDecodeBatch times a decoding step of 16 sequences of 8192
// keys each over a page pool, 32 query heads over 8 KV heads, D=128, in
// each cache dtype, in BHND pages and in BNHD ones: the batched step a
// server runs, where q8 should take at most 0.6× the f16 cache's time.
//
//	go test -run '^$' -bench CacheDecodeBatch ./kernels
func BenchmarkCacheDecodeBatch(b *testing.B) {
	for _, lay := range []kernels.Layout{kernels.BHND, kernels.BNHD} {
		for _, dt := range []kernels.DType{kernels.Float16, kernels.Q8, kernels.FP8, kernels.Q4} {
			b.Run(fmt.Sprintf("%v/%v", lay, dt), func(b *testing.B) { benchDecodeIn(b, 16, 8192, dt, true, lay) })
		}
	}
}

// benchDecode times one decoding step of batch sequences of nk keys (B=1
// for the contiguous cache): each appends a token and attends one query
// a head, causal, then drops the token again. Queries and outputs are
// the cache's dtype, or float32 for an 8-bit cache.
func benchDecode(b *testing.B, batch, nk int, dt kernels.DType, paged bool) {
	benchDecodeIn(b, batch, nk, dt, paged, kernels.BHND)
}

// benchDecodeIn is benchDecode with the cache's pages or rows in layout
// lay (BNHD: a key's KV heads side by side, vLLM's pages).
func benchDecodeIn(b *testing.B, batch, nk int, dt kernels.DType, paged bool, lay kernels.Layout) {
	be := openCPU(b)
	const h, kvh, d, page = 32, 8, 128, 256
	cfg := kernels.CacheConfig{KVHeads: kvh, D: d, DType: dt, Layout: lay}
	rng := rand.New(rand.NewPCG(71, 72))
	qdt := dt
	if dt.Quantized() {
		qdt = kernels.Float32
	}
	prompt := func(n int) (*kernels.Tensor, *kernels.Tensor) {
		return rows(rng, qdt, n, kvh, d), rows(rng, qdt, n, kvh, d)
	}
	k, v := prompt(nk - 1)
	tk, tv := prompt(1)
	// One query a head: [B, H, 1, D] and [B, 1, H, D] lie alike.
	q := rows(rng, qdt, batch*h, 1, d)
	q.Shape, q.Layout = []int{batch, h, 1, d}, kernels.BHND
	oshape := []int{batch, h, 1, d}
	if lay == kernels.BNHD {
		q.Shape, q.Layout = []int{batch, 1, h, d}, kernels.BNHD
		oshape = []int{batch, 1, h, d}
	}
	out, _ := kernels.NewTensorOf(qdt, lay, oshape...)
	opts := &kernels.AttendOptions{Causal: true}
	ctx := context.Background()
	var step func() error
	if paged {
		pool, err := kernels.NewPagePool(be, page, batch*(nk/page+1), cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Release()
		seqs := make([]*kernels.Seq, batch)
		for i := range seqs {
			seqs[i] = newSeq(b, pool)
			if err := seqs[i].Append(k, v); err != nil {
				b.Fatal(err)
			}
		}
		step = func() error {
			for _, s := range seqs {
				if err := s.Append(tk, tv); err != nil {
					return err
				}
			}
			if err := pool.Attend(ctx, seqs, q, out, nil, opts); err != nil {
				return err
			}
			for _, s := range seqs {
				if err := s.Truncate(nk - 1); err != nil {
					return err
				}
			}
			return nil
		}
	} else {
		cache, err := kernels.NewKVCache(be, 1, nk, cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer cache.Release()
		if err := cache.Append(0, k, v); err != nil {
			b.Fatal(err)
		}
		step = func() error {
			if err := cache.Append(0, tk, tv); err != nil {
				return err
			}
			if err := cache.Attend(ctx, q, out, nil, opts); err != nil {
				return err
			}
			return cache.Truncate(0, nk-1)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := step(); err != nil {
			b.Fatal(err)
		}
	}
	bytes := 2 * float64(batch) * float64(dt.Bytes(nk*kvh*d))
	b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkCachePrefill times a prompt's attention through the cache
// API (append N tokens' keys and values, attend their N queries, causal)
// against kernels.Attention on the same host tensors (B=1, H=8, D=64):
// both upload and check their inputs, run Fused once and read O back, so
// the two should run at one rate.
//
//	go test -run '^$' -bench CachePrefill ./kernels
func BenchmarkCachePrefill(b *testing.B) {
	const n, h, d = 4096, 8, 64
	for _, via := range []string{"cache", "attention"} {
		b.Run(via, func(b *testing.B) {
			be := openCPU(b)
			rng := rand.New(rand.NewPCG(81, 82))
			k, v := rows(rng, kernels.Float32, n, h, d), rows(rng, kernels.Float32, n, h, d)
			q := rows(rng, kernels.Float32, n, h, d)
			q.Shape, q.Layout = []int{1, n, h, d}, kernels.BNHD
			out, _ := kernels.NewTensor(kernels.BNHD, 1, n, h, d)
			ctx := context.Background()
			opts := &kernels.Options{Causal: true, Strategy: kernels.Fused}
			var run func() error
			if via == "cache" {
				cache, err := kernels.NewKVCache(be, 1, n, kernels.CacheConfig{KVHeads: h, D: d, Layout: kernels.BNHD})
				if err != nil {
					b.Fatal(err)
				}
				defer cache.Release()
				run = func() error {
					if err := cache.Truncate(0, 0); err != nil {
						return err
					}
					if err := cache.Append(0, k, v); err != nil {
						return err
					}
					return cache.Attend(ctx, q, out, nil, &kernels.AttendOptions{Causal: opts.Causal})
				}
			} else {
				k4 := &kernels.Tensor{Shape: []int{1, n, h, d}, Layout: kernels.BNHD, Data: k.Data}
				v4 := &kernels.Tensor{Shape: []int{1, n, h, d}, Layout: kernels.BNHD, Data: v.Data}
				run = func() error {
					_, err := kernels.Attention(ctx, be, q, k4, v4, opts)
					return err
				}
			}
			for b.Loop() {
				if err := run(); err != nil {
					b.Fatal(err)
				}
			}
			flops := 2 * float64(h) * n * n * d // causal: half of 4·H·N²·D
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkAppend times appending rows to a cache on the CPU backend (8
// KV heads, D=64) stored as float16, q8 or fp8, from float32 rows
// (checked against the dtype's range and rounded) and from float16 rows
// (copied as bits into an f16 cache, widened first into an 8-bit one): a
// prompt of 2000 tokens into an emptied cache, and a decoding step of one
// token. MB/s counts the values appended, 4 bytes each, so every cache
// dtype and source compares directly; none should allocate
// (TestCacheAppendAllocs), float32 rows should append within a small
// factor of float16 ones, and an 8-bit cache within 3× an f16 one.
//
//	go test -run '^$' -bench Append -benchmem ./kernels
func BenchmarkAppend(b *testing.B) {
	const kvh, d = 8, 64
	for _, n := range []int{2000, 1} {
		for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
			for _, cdt := range []kernels.DType{kernels.Float16, kernels.Q8, kernels.FP8} {
				for _, src := range []kernels.DType{kernels.Float32, kernels.Float16} {
					b.Run(fmt.Sprintf("tokens=%d/%v/cache=%v/from=%v", n, layout, cdt, src), func(b *testing.B) {
						be := openCPU(b)
						cfg := kernels.CacheConfig{KVHeads: kvh, D: d, DType: cdt, Layout: layout}
						cache, err := kernels.NewKVCache(be, 1, max(n, 2000), cfg)
						if err != nil {
							b.Fatal(err)
						}
						defer cache.Release()
						rng := rand.New(rand.NewPCG(91, 92))
						k, v := rows(rng, src, n, kvh, d), rows(rng, src, n, kvh, d)
						b.SetBytes(int64(2 * n * kvh * d * 4))
						b.ReportAllocs()
						for b.Loop() {
							if err := cache.Truncate(0, 0); err != nil {
								b.Fatal(err)
							}
							if err := cache.Append(0, k, v); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		}
	}
}
