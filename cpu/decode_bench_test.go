package cpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
)

// BenchmarkDecode times one decoding step on buffers already on the
// device: B=1, H=32 query heads over 8 KV heads, D=128, one query over
// Nk cached keys (the query at the last position, so causal masking
// hides nothing), K and V stored in each dtype. GB/s counts the K and V
// bytes a step must read, once; -benchmem shows what a step allocates.
//
//	go test -run '^$' -bench Decode -benchmem ./cpu
func BenchmarkDecode(b *testing.B) {
	for _, nk := range []int{4096, 32768} {
		for _, dt := range []backend.DType{backend.Float32, backend.Float16} {
			b.Run(fmt.Sprintf("Nk=%d/%v", nk, dt), func(b *testing.B) {
				be, err := New()
				if err != nil {
					b.Fatal(err)
				}
				defer be.Close()
				p := backend.Problem{B: 1, H: 32, KVHeads: 8, Nq: 1, Nk: nk, D: 128, Causal: true}.Resolved()
				rng := rand.New(rand.NewPCG(1, 2))
				in := func(t backend.DType, n int) backend.Buffer {
					x := make([]float32, n)
					for i := range x {
						x[i] = float32(2*rng.Float64() - 1)
					}
					buf, err := be.Alloc(t, n)
					if err != nil {
						b.Fatal(err)
					}
					if err := be.Write(buf, 0, x); err != nil {
						b.Fatal(err)
					}
					return buf
				}
				q, k, v := in(dt, p.QLen()), in(dt, p.KLen()), in(dt, p.VLen())
				o, err := be.Alloc(dt, p.OLen())
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				fp := backend.FusedParams{Problem: p}
				b.ResetTimer()
				for b.Loop() {
					if err := be.Fused(ctx, fp, q, k, v, o, nil); err != nil {
						b.Fatal(err)
					}
				}
				bytes := float64(p.KLen()+p.VLen()) * float64(dt.Size())
				b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}
