//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
)

// BenchmarkQuantDecode times one decoding step over a cache stored in
// each of f16, q8 and q4: one query of 32 heads over 8 KV heads, D =
// 128, 4096 keys (docs/gpu.md's 8-bit point), Q and O float32. An
// iteration runs the three in turn, each a waited Fused, so that they
// meet the same machine (a shared one's load moves every op alike), and
// the benchmark reports each dtype's median time an op (the device's
// own where it has timestamps, else the wall time) and the ratios of
// the medians, q4/q8 and q8/f16:
//
//	go test -run '^$' -bench QuantDecode -benchtime 200x ./gpu
func BenchmarkQuantDecode(b *testing.B) {
	g := openGPU(b)
	ctx := context.Background()
	p := prob(1, 32, 8, 1, 4096, 128, 128)
	rng := newRand(4096)
	q, k, v := randSlice(rng, p.QLen()), randSlice(rng, p.KLen()), randSlice(rng, p.VLen())
	dts := []backend.DType{backend.Float16, backend.Q8, backend.Q4}
	type operands struct{ q, k, v, o backend.Buffer }
	ops := make([]operands, len(dts))
	fp := backend.FusedParams{Problem: p}
	for i, dt := range dts {
		x := operands{f32Buf(b, g, q), alloc(b, g, dt, len(k)), alloc(b, g, dt, len(v)), f32Buf(b, g, make([]float32, p.OLen()))}
		if err := g.Write(x.k, 0, k); err != nil {
			b.Fatal(err)
		}
		if err := g.Write(x.v, 0, v); err != nil {
			b.Fatal(err)
		}
		if err := g.Fused(ctx, fp, x.q, x.k, x.v, x.o, nil); err != nil { // compile, warm
			b.Fatal(err)
		}
		ops[i] = x
	}
	timed := g.TimeDevice(true) == nil
	defer g.TimeDevice(false)
	if timed {
		g.DeviceTime() // start the count here
	}
	times := make([][]float64, len(dts)) // ms
	b.ResetTimer()
	for b.Loop() {
		for i, x := range ops {
			start := time.Now()
			if err := g.Fused(ctx, fp, x.q, x.k, x.v, x.o, nil); err != nil {
				b.Fatal(err)
			}
			ms := float64(time.Since(start).Nanoseconds()) / 1e6
			if timed {
				d, err := g.DeviceTime()
				if err != nil {
					b.Fatal(err)
				}
				ms = float64(d.Nanoseconds()) / 1e6
			}
			times[i] = append(times[i], ms)
		}
	}
	b.StopTimer()
	med := make([]float64, len(dts))
	for i, dt := range dts {
		slices.Sort(times[i])
		med[i] = times[i][len(times[i])/2]
		b.ReportMetric(med[i], dt.String()+"-ms")
	}
	b.ReportMetric(med[2]/med[1], "q4/q8")
	b.ReportMetric(med[1]/med[0], "q8/f16")
}
