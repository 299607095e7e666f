package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
)

// Benchmark is the Go benchmark of one backend's ops, shared by every
// backend's BenchmarkFused and BenchmarkStaged: for each N in sizes,
// without and with causal masking, at B = 1, H = 4, D = Dv = 64, it times
// the fused op (or Scores, Softmax and Context when staged) on inputs
// already on the device, and reports GFLOP/s as Flops counts them, so
// benchstat can compare commits:
//
//	go test -run '^$' -bench . -count 6 ./cpu > new.txt
func Benchmark(b *testing.B, be backend.Backend, sizes []int, staged bool) {
	for _, n := range sizes {
		for _, causal := range []bool{false, true} {
			name := fmt.Sprintf("N=%d", n)
			if causal {
				name += "/causal"
			}
			b.Run(name, func(b *testing.B) {
				p := backend.Problem{B: 1, H: 4, KVHeads: 4, Nq: n, Nk: n, D: 64, Dv: 64, Scale: 0.125, Causal: causal}
				rng := rand.New(rand.NewPCG(1, uint64(n)))
				fill := func(m int) backend.Buffer {
					x := make([]float32, m)
					for i := range x {
						x[i] = float32(2*rng.Float64() - 1)
					}
					buf, err := be.Alloc(m)
					if err == nil {
						err = be.Write(buf, 0, x)
					}
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(buf.Release)
					return buf
				}
				q, k, v, o := fill(p.QLen()), fill(p.KLen()), fill(p.VLen()), fill(p.OLen())
				var s backend.Buffer
				if staged {
					s = fill(p.ScoresLen())
				}
				ctx := context.Background()
				for b.Loop() {
					var err error
					if staged {
						err = be.Scores(ctx, backend.ScoresParams{Problem: p}, q, k, s)
						if err == nil {
							err = be.Softmax(ctx, backend.SoftmaxParams{Problem: p}, s)
						}
						if err == nil {
							err = be.Context(ctx, backend.ContextParams{Problem: p}, s, v, o)
						}
					} else {
						err = be.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, nil)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(Flops(p)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
