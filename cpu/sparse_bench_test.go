package cpu_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/internal/workload"
)

// BenchmarkSparseDecode is the sparse decoding step (docs/benchmarks.md,
// "Sparse decoding: index lists") in both cache layouts: one query of 32
// heads over 8 KV heads, D = 128, f16, attending 2048 keys of 32768
// chosen by workload.TopK, beside the dense step (topk0). In BNHD a key's KV
// heads lie side by side (2 KiB a key, one sequence a row in the
// lowering); in BHND each head's rows lie apart (256 bytes a key and
// head, a sequence a row and KV head). topk2048/gather gathers the named
// rows into scratch first, where the CPU's kernels would read them in
// place (hasDecodeIdx).
//
//	go test -run XXX -bench SparseDecode -count 3 ./cpu
func BenchmarkSparseDecode(b *testing.B) {
	be, err := cpu.New()
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	for _, layout := range []backend.Layout{backend.BNHD, backend.BHND} {
		for _, topk := range []int{2048, 0} {
			p := backend.Problem{B: 1, H: 32, KVHeads: 8, Nq: 1, Nk: 32768, D: 128, Dv: 128, Scale: float32(1 / math.Sqrt(128)), Layout: layout}
			if topk > 0 {
				p.Indices = workload.TopK(p, topk)
			}
			// Values written into every buffer: a buffer never written
			// reads the kernel's one zero page, which no step's keys
			// would.
			var bufs [4]backend.Buffer
			for i, n := range []int{p.QLen(), p.KLen(), p.VLen(), p.OLen()} {
				if bufs[i], err = be.Alloc(backend.Float16, n); err != nil {
					b.Fatal(err)
				}
				defer bufs[i].Release()
				x := make([]float32, n)
				for j := range x {
					x[j] = float32(j%97)/97 - 0.5
				}
				if err := be.Write(bufs[i], 0, x); err != nil {
					b.Fatal(err)
				}
			}
			run := func(b *testing.B) {
				for range b.N {
					if err := be.Fused(context.Background(), backend.FusedParams{Problem: p}, bufs[0], bufs[1], bufs[2], bufs[3], nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.Run(fmt.Sprintf("%v/topk%d", layout, topk), run)
			if topk > 0 {
				// The named rows gathered into scratch before the
				// kernels read them, where the indirect kernels
				// would read them in place.
				b.Run(fmt.Sprintf("%v/topk%d/gather", layout, topk), func(b *testing.B) {
					defer cpu.SetDecodeIdx(false)()
					run(b)
				})
			}
		}
	}
}
