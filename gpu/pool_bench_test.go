//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/attn-go/attn/kernels"
)

// BenchmarkPoolDecode decodes over one kernels.PagePool from 1 and 4
// goroutines at once, each over a sequence of its own: a token appends
// its keys and values from the host, attends 8 query heads of 64 over
// the sequence's 256 keys and the new one (2 KV heads, pages of 16
// keys), reads the output back, and truncates the sequence to 256 again,
// so that every token does the same work. tokens/s counts every
// goroutine's tokens: where the device lock is held only to record and
// submit, goroutines record and copy while others wait for the device,
// and 4 goroutines decode more tokens a second than 1 (docs/gpu.md).
//
//	go test -run '^$' -bench PoolDecode -count 5 ./gpu
func BenchmarkPoolDecode(b *testing.B) {
	g := openGPU(b)
	const heads, prefill, pageSize = 8, 256, 16
	cfg := kernels.CacheConfig{KVHeads: 2, D: 64, Layout: kernels.BNHD}
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("goroutines=%d", workers), func(b *testing.B) {
			pool, err := kernels.NewPagePool(g, pageSize, workers*(prefill/pageSize+1), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Release()
			rng := rand.New(rand.NewPCG(1, 2))
			seqs := make([]*kernels.Seq, workers)
			for w := range seqs {
				if seqs[w], err = pool.NewSeq(); err != nil {
					b.Fatal(err)
				}
				k := tensorOf(randSlice(rng, prefill*cfg.KVHeads*cfg.D), prefill, cfg.KVHeads, cfg.D)
				v := tensorOf(randSlice(rng, prefill*cfg.KVHeads*cfg.D), prefill, cfg.KVHeads, cfg.D)
				if err := seqs[w].Append(k, v); err != nil {
					b.Fatal(err)
				}
			}
			ctx := context.Background()
			step := func(s *kernels.Seq, k, v, q, out *kernels.Tensor) error {
				if err := s.Append(k, v); err != nil {
					return err
				}
				if err := pool.Attend(ctx, []*kernels.Seq{s}, q, out, nil, nil); err != nil {
					return err
				}
				return s.Truncate(prefill)
			}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(w), 3))
					k := tensorOf(randSlice(r, cfg.KVHeads*cfg.D), 1, cfg.KVHeads, cfg.D)
					v := tensorOf(randSlice(r, cfg.KVHeads*cfg.D), 1, cfg.KVHeads, cfg.D)
					q := tensorOf(randSlice(r, heads*cfg.D), 1, 1, heads, cfg.D)
					out := tensorOf(make([]float32, heads*cfg.D), 1, 1, heads, cfg.D)
					for i := w; i < b.N; i += workers {
						if err := step(seqs[w], k, v, q, out); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tokens/s")
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
		})
	}
}
