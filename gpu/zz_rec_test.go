//go:build cgo && !nogpu

package gpu_test

import (
	"context"
	"testing"

	"github.com/attn-go/attn/backend"
)

func BenchmarkZZRec(b *testing.B) {
	g := openGPU(b)
	ctx := context.Background()
	p := backend.Problem{B: 1, H: 32, KVHeads: 8, Nq: 1, Nk: 512, D: 128, Dv: 128, Causal: true}
	layers := make([]*layer, 8)
	for l := range layers {
		layers[l] = newLayer(b, g, p, backend.Float32, uint64(l))
	}
	st := g.Record()
	n := 0
	for b.Loop() {
		ly := layers[n%len(layers)]
		if err := st.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
			b.Fatal(err)
		}
		if n++; n%len(layers) == 0 {
			b.StopTimer()
			st.Wait()
			b.StartTimer()
		}
	}
	st.Wait()
}
