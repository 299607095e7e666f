package cpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
)

// benchSizes are the sequence lengths of the benchmarks, at B = 1, H = 4,
// D = Dv = 64.
var benchSizes = []int{256, 1024, 4096}

type benchOperands struct {
	p             backend.Problem
	q, k, v, o, s backend.Buffer
}

func benchSetup(b *testing.B, be backend.Backend, n int, causal, staged bool) benchOperands {
	b.Helper()
	p := backend.Problem{B: 1, H: 4, KVHeads: 4, Nq: n, Nk: n, D: 64, Dv: 64, Scale: 0.125, Causal: causal}
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	fill := func(m int) backend.Buffer {
		x := make([]float32, m)
		for i := range x {
			x[i] = float32(2*rng.Float64() - 1)
		}
		buf, err := upload(be, x)
		if err != nil {
			b.Fatal(err)
		}
		return buf
	}
	ops := benchOperands{p: p, q: fill(p.QLen()), k: fill(p.KLen()), v: fill(p.VLen())}
	ops.o, _ = be.Alloc(p.OLen())
	if staged {
		ops.s, _ = be.Alloc(p.ScoresLen())
	}
	return ops
}

// flops counts 2·D multiply-adds per score and 2·Dv per weight, halved
// for causal problems.
func flops(p backend.Problem) float64 {
	f := 4 * float64(p.B*p.H) * float64(p.Nq) * float64(p.Nk) * float64(p.D)
	if p.Causal {
		f /= 2
	}
	return f
}

func benchmark(b *testing.B, staged bool) {
	be := newBackend(b)
	for _, n := range benchSizes {
		for _, causal := range []bool{false, true} {
			name := fmt.Sprintf("N=%d", n)
			if causal {
				name += "/causal"
			}
			b.Run(name, func(b *testing.B) {
				ops := benchSetup(b, be, n, causal, staged)
				ctx := context.Background()
				for b.Loop() {
					var err error
					if staged {
						err = be.Scores(ctx, backend.ScoresParams{Problem: ops.p}, ops.q, ops.k, ops.s)
						if err == nil {
							err = be.Softmax(ctx, backend.SoftmaxParams{Problem: ops.p}, ops.s)
						}
						if err == nil {
							err = be.Context(ctx, backend.ContextParams{Problem: ops.p}, ops.s, ops.v, ops.o)
						}
					} else {
						err = be.Fused(ctx, backend.FusedParams{Problem: ops.p}, ops.q, ops.k, ops.v, ops.o, nil)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(flops(ops.p)/sec/1e9, "GFLOP/s")
			})
		}
	}
}

func BenchmarkFused(b *testing.B)  { benchmark(b, false) }
func BenchmarkStaged(b *testing.B) { benchmark(b, true) }
