package cpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
)

// BenchmarkDTypes times Fused with Q, K, V and O all float32, all
// float16 or all bfloat16 (B=1 H=8, D=64 and 128, not causal), so that
// the rates compare side by side: the half runs pay the widening of
// every K and V tile a query tile takes, and the narrowing of O; all
// bfloat16 multiplies in bfloat16 where the CPU can (AMX's tiles).
//
//	go test -run '^$' -bench DTypes -count 3 ./cpu
func BenchmarkDTypes(b *testing.B) {
	for _, n := range []int{4096, 16384} {
		for _, d := range []int{64, 128} {
			for _, dt := range backend.DTypes {
				b.Run(fmt.Sprintf("N=%d/D=%d/%v", n, d, dt), func(b *testing.B) { benchDType(b, n, d, dt) })
			}
		}
	}
}

func benchDType(b *testing.B, n, d int, dt backend.DType) {
	be, err := New()
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	const h = 8
	p := backend.Problem{B: 1, H: h, KVHeads: h, Nq: n, Nk: n, D: d, Dv: d, Scale: 0.125}
	rng := rand.New(rand.NewPCG(1, 2))
	in := func() backend.Buffer {
		x := make([]float32, h*n*d)
		for i := range x {
			x[i] = float32(2*rng.Float64() - 1)
		}
		buf, err := be.Alloc(dt, len(x))
		if err != nil {
			b.Fatal(err)
		}
		if err := be.Write(buf, 0, x); err != nil {
			b.Fatal(err)
		}
		return buf
	}
	q, k, v := in(), in(), in()
	o, err := be.Alloc(dt, h*n*d)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if err := be.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, nil); err != nil {
			b.Fatal(err)
		}
	}
	flops := 4 * float64(h) * float64(n) * float64(n) * float64(d)
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
