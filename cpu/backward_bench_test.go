package cpu_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
)

// BenchmarkBackward is issue 58's CPU shape, H = 8, N = 4096, f32, D = 64
// and 128, non-causal and causal: the fused forward (with its LSE) and
// the backward, side by side.
//
//	go test -run XXX -bench Backward -count 3 ./cpu
func BenchmarkBackward(b *testing.B) {
	be, err := cpu.New()
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	ctx := context.Background()
	for _, d := range []int{64, 128} {
		for _, causal := range []bool{false, true} {
			p := backend.Problem{B: 1, H: 8, KVHeads: 8, Nq: 4096, Nk: 4096, D: d, Causal: causal}.Resolved()
			var bufs [9]backend.Buffer
			for i, n := range []int{p.QLen(), p.KLen(), p.VLen(), p.OLen(), p.LSELen(), p.OLen(), p.QLen(), p.KLen(), p.VLen()} {
				if bufs[i], err = be.Alloc(backend.Float32, n); err != nil {
					b.Fatal(err)
				}
				defer bufs[i].Release()
			}
			q, k, v, o, lse, do, dq, dk, dv := bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], bufs[7], bufs[8]
			if err := be.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, lse); err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("D%d/causal=%t/forward", d, causal), func(b *testing.B) {
				for range b.N {
					if err := be.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, lse); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("D%d/causal=%t/backward", d, causal), func(b *testing.B) {
				for range b.N {
					if err := be.Backward(ctx, backend.BackwardParams{Problem: p}, q, k, v, o, lse, do, dq, dk, dv, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
