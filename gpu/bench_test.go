//go:build cgo && !nogpu

package gpu_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
)

// BenchmarkFused and BenchmarkStaged time one op sequence on the device
// (inputs already uploaded) at B = 1, H = 4, D = Dv = 64, and report
// GFLOP/s counting 2·D + 2·Dv per attended pair. Compare commits with
// benchstat:
//
//	go test -run '^$' -bench . -count 6 ./gpu > new.txt
func BenchmarkFused(b *testing.B)  { benchmark(b, false) }
func BenchmarkStaged(b *testing.B) { benchmark(b, true) }

var benchSizes = []int{256, 1024, 2048}

func benchmark(b *testing.B, staged bool) {
	be := openGPU(b)
	for _, n := range benchSizes {
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
				pairs := float64(n) * float64(n)
				if causal {
					pairs = float64(n) * float64(n+1) / 2
				}
				f := float64(p.B*p.H) * pairs * float64(2*p.D+2*p.Dv)
				b.ReportMetric(f*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
