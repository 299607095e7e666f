//go:build cgo && !nogpu

package gpu_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
)

// BenchmarkQuantDecode times one decoding step over a cache stored in
// each dtype: one query of 32 heads over 8 KV heads, D = 128, 4096 keys
// (docs/gpu.md's 8-bit point), Q and O float32. Each sub-benchmark
// reports the wall time of a waited Fused (ms/op) and the device's own
// (gpu-ms, where the device has timestamps). -count runs the dtypes in
// turn, round after round, so that q4 and q8 meet the same machine:
//
//	go test -run '^$' -bench QuantDecode -count 8 ./gpu
func BenchmarkQuantDecode(b *testing.B) {
	g := openGPU(b)
	ctx := context.Background()
	p := prob(1, 32, 8, 1, 4096, 128, 128)
	rng := newRand(4096)
	q, k, v := randSlice(rng, p.QLen()), randSlice(rng, p.KLen()), randSlice(rng, p.VLen())
	for _, dt := range []backend.DType{backend.Float16, backend.Q8, backend.Q4} {
		b.Run(fmt.Sprintf("dtype=%v", dt), func(b *testing.B) {
			qb, ob := f32Buf(b, g, q), f32Buf(b, g, make([]float32, p.OLen()))
			kb, vb := alloc(b, g, dt, len(k)), alloc(b, g, dt, len(v))
			if err := g.Write(kb, 0, k); err != nil {
				b.Fatal(err)
			}
			if err := g.Write(vb, 0, v); err != nil {
				b.Fatal(err)
			}
			fp := backend.FusedParams{Problem: p}
			if err := g.Fused(ctx, fp, qb, kb, vb, ob, nil); err != nil { // compile, warm
				b.Fatal(err)
			}
			timed := g.TimeDevice(true) == nil
			defer g.TimeDevice(false)
			if timed {
				g.DeviceTime() // start the count here
			}
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if err := g.Fused(ctx, fp, qb, kb, vb, ob, nil); err != nil {
					b.Fatal(err)
				}
			}
			wall := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(wall.Microseconds())/1e3/float64(b.N), "ms/op")
			if timed {
				if d, err := g.DeviceTime(); err == nil {
					b.ReportMetric(float64(d.Microseconds())/1e3/float64(b.N), "gpu-ms")
				}
			}
		})
	}
}
