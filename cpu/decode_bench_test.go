package cpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
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

// BenchmarkDecodeQuant times the decoding kernels on K and V stored in
// float32, float16 and in 8 bits (q8, fp8): D = 128, the four query rows of a GQA
// 32/8 head group, 32768 keys. Kernel runs one thread through dotRows4
// then axpyRows4 over tiles of DefaultDecodeTileK keys, as decodeTile
// does, over ATTN_BENCH_KVHEADS KV heads' K and V (8 by default; more make
// the working set larger than the last-level cache), reporting ns a key
// (one KV head's), ATTN_BENCH_PART=dot or axpy timing one kernel alone,
// ATTN_BENCH_LAYOUT=bnhd with the heads side by side in each key's row
// (a BNHD page's), each tile of headsTileK keys (headsTileK8 in 8 bits)
// taking the heads in turn;
// Fused is BenchmarkDecode's step (32 heads over 8) with float16 Q and O,
// in each of those dtypes and q4.
// q8 runs on the widening kernels (WithDecode8("vector")), q8int on the
// integer ones where the CPU has them (WithDecode8("integer")).
//
//	go test -run '^$' -bench DecodeQuant ./cpu
func BenchmarkDecodeQuant(b *testing.B) {
	const nk, d, g = 32768, 128, 4
	heads := 8
	if s := os.Getenv("ATTN_BENCH_KVHEADS"); s != "" {
		if _, err := fmt.Sscan(s, &heads); err != nil {
			b.Fatal(err)
		}
	}
	type variant struct {
		name    string
		dt      backend.DType
		setting string
	}
	variants := []variant{{"f32", backend.Float32, "auto"}, {"f16", backend.Float16, "auto"}, {"q8", backend.Q8, "vector"}, {"q8int", backend.Q8, "integer"}, {"fp8", backend.FP8, "auto"}}
	for _, vr := range variants {
		dt := vr.dt
		b.Run("Kernel/"+vr.name, func(b *testing.B) {
			if !hasDecode() {
				b.Skip("no decoding kernels")
			}
			if vr.setting == "integer" && !q8IntNow().ok {
				b.Skip("no integer q8 kernels on this CPU")
			}
			rng := rand.New(rand.NewPCG(1, 2))
			// ATTN_BENCH_LAYOUT=bnhd: the heads side by side in one store
			// (a BNHD page's rows), each tile's heads in turn, as an item
			// over such rows takes them (fused.mh).
			bnhd := os.Getenv("ATTN_BENCH_LAYOUT") == "bnhd"
			per, stride := heads, d // stores, and a row's stride in each
			if bnhd {
				per, stride = 1, heads*d
			}
			rows := func() rawRows {
				x := randF32(rng, nk*stride)
				r := rawRows{store: store{t: dt}, stride: stride}
				switch dt {
				case backend.Q8:
					r.q8, r.sc = make([]int8, len(x)), make([]uint16, len(x)/backend.Q8Block)
					backend.QuantizeQ8(r.q8, r.sc, x)
				case backend.FP8:
					r.f8 = make([]uint8, len(x))
					backend.EncodeFP8s(r.f8, x)
				case backend.Float32:
					r.f32 = x
				default:
					r.h = make([]uint16, len(x))
					narrow(dt, r.h, x)
				}
				return r
			}
			ks, vs := make([]rawRows, heads), make([]rawRows, heads)
			for h := range per {
				ks[h], vs[h] = rows(), rows()
			}
			tile := DefaultDecodeTileK
			if bnhd {
				tile = headsTileK
				if dt.Quantized() {
					tile = headsTileK8
				}
				for h := range heads { // head h's rows: from column h·d
					ks[h], vs[h] = rowsFrom(ks[0], h*d), rowsFrom(vs[0], h*d)
				}
			}
			part := os.Getenv("ATTN_BENCH_PART")
			q := randF32(rng, g*d)
			s := make([]float32, g*tile)
			acc := make([]float32, g*d)
			// The 8-bit tile or integer kernels' Q, where they run, a
			// head's own.
			tls := make([]tiles8, heads)
			for h := range tls {
				tls[h].vector = vr.setting == "vector"
			}
			run := func(h, j0 int) {
				kt, vt := ks[h].slice(j0, tile, d), vs[h].slice(j0, tile, d)
				tl := &tls[h]
				if part != "axpy" {
					if j := dotTiles(tl, 0, q, d, kt, tile, d, s, tile, 0.01); j < tile {
						dotRows4(q, d, kt.slice(j, tile-j, d), tile-j, d, s[j:], tile, 0.01)
					}
				}
				if part != "dot" {
					if j := axpyTiles(tl, s, tile, vt, tile, d, acc, d); j < tile {
						axpyRows4(s[j:], tile, vt.slice(j, tile-j, d), tile-j, d, acc, d)
					}
				}
			}
			b.ResetTimer()
			for b.Loop() {
				for h := range tls {
					tls[h].reset()
				}
				if bnhd {
					for j0 := 0; j0 < nk; j0 += tile {
						for h := range heads {
							run(h, j0)
						}
					}
					continue
				}
				for h := range heads {
					for j0 := 0; j0 < nk; j0 += tile {
						run(h, j0)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*heads*nk), "ns/key")
			b.ReportMetric(0, "ns/op")
		})
	}
	// q4 reads K's codes in place where the CPU runs its scores kernel
	// (dotQ4), else widens them for the q8 kernels (quant4.go), as
	// q4widen always does: the step only.
	for _, vr := range append(variants, variant{"q4", backend.Q4, "auto"}, variant{"q4widen", backend.Q4, "auto"}) {
		dt := vr.dt
		b.Run("Fused/"+vr.name, func(b *testing.B) {
			noDotQ4 = vr.name == "q4widen"
			defer func() { noDotQ4 = false }()
			if vr.setting == "integer" && !q8IntNow().ok {
				b.Skip("no integer q8 kernels on this CPU")
			}
			be, err := New(WithDecode8(vr.setting))
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			p := backend.Problem{B: 1, H: 32, KVHeads: 8, Nq: 1, Nk: nk, D: d, Causal: true}.Resolved()
			rng := rand.New(rand.NewPCG(1, 2))
			in := func(t backend.DType, n int) backend.Buffer {
				buf, err := be.Alloc(t, n)
				if err != nil {
					b.Fatal(err)
				}
				if err := be.Write(buf, 0, randF32(rng, n)); err != nil {
					b.Fatal(err)
				}
				return buf
			}
			q, k, v := in(backend.Float16, p.QLen()), in(dt, p.KLen()), in(dt, p.VLen())
			o, err := be.Alloc(backend.Float16, p.OLen())
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
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*p.KVHeads*nk), "ns/key")
		})
	}
}

// rowsFrom is r's rows from column c on (c a multiple of q8's block).
func rowsFrom(r rawRows, c int) rawRows {
	switch {
	case r.t == backend.Q8:
		r.q8, r.sc = r.q8[c:], r.sc[c/backend.Q8Block:]
	case r.t == backend.FP8:
		r.f8 = r.f8[c:]
	case r.t == backend.Float32:
		r.f32 = r.f32[c:]
	default:
		r.h = r.h[c:]
	}
	return r
}
