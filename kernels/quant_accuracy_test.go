package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// The bounds an 8-bit cache's decoding keeps against the float64
// reference over the values as stored (the dequantized cache), as a
// fraction of each output row's largest magnitude, over the decoding
// shapes and query scales of TestQuantDecodeAccuracy. The README's 8-bit
// row, kernels' doc and cpu/doc.go quote these numbers.
const (
	// quantBoundInteger: the CPU's integer q8 kernels (VPDPBUSD and
	// VPDPWSSD on AVX512-VNNI, VPMADDWD on AVX2), which round Q and the
	// weights to integer digits; the default for q8 on those CPUs
	// without AMX.
	quantBoundInteger = 3e-3
	// quantBoundWide: every other path: the widening kernels
	// (WithDecode8("vector"): AVX-512, AVX2, NEON, pure Go), AMX's tiles,
	// the GPU; and fp8 everywhere.
	quantBoundWide = 1e-5
)

// TestQuantDecodeAccuracy measures each 8-bit decoding path (the CPU's
// under each WithDecode8 setting that runs here, and the GPU) against a
// float64 reference computed here from the stored values read back:
// two sequences of a page pool (1500 and 777 keys, pages of 16), 8 query
// heads over 2 KV heads, D = 64 and 128, K with two outlier channels
// (×8, as trained models' keys have), queries at three scales (1, 4 and
// 10 times a unit normal: score spreads up to about 10, the sharp heads
// of a model). It logs each path's worst error, a fraction of its
// output row's largest magnitude, and holds it to the path's bound
// (quantBoundInteger, quantBoundWide). CI runs it on amd64 and, for
// NEON, under qemu.
func TestQuantDecodeAccuracy(t *testing.T) {
	type path struct {
		name    string
		open    func(testing.TB) (backend.Backend, error)
		integer bool // q8 may run on integer kernels
	}
	cpuWith := func(setting string) func(testing.TB) (backend.Backend, error) {
		return func(t testing.TB) (backend.Backend, error) {
			be, err := cpu.New(cpu.WithDecode8(setting))
			if err == nil {
				t.Cleanup(func() { be.Close() })
			}
			return be, err
		}
	}
	// Where the integer kernels do not run, auto is held to the wide
	// bound.
	_, noInt := cpuWith("integer")(t)
	paths := []path{
		{"cpu/auto", cpuWith("auto"), noInt == nil},
		{"cpu/integer", cpuWith("integer"), true},
		{"cpu/vector", cpuWith("vector"), false},
	}
	for _, bk := range onnxBackends[1:] {
		paths = append(paths, path{bk.name, func(t testing.TB) (backend.Backend, error) { return bk.open(t), nil }, false})
	}
	ctx := context.Background()
	const heads, kvHeads, page = 8, 2, 16
	lens := []int{1500, 777}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			be, err := p.open(t)
			if errors.Is(err, backend.ErrUnavailable) {
				t.Skipf("%s: %v", p.name, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, dt := range backend.Quants {
				bound := quantBoundWide
				if dt.Block() > 1 && p.integer {
					bound = quantBoundInteger
				}
				for _, d := range []int{64, 128} {
					cfg := kernels.CacheConfig{KVHeads: kvHeads, D: d, DType: dt, Layout: kernels.BNHD}
					pool, err := kernels.NewPagePool(be, page, (lens[0]+lens[1])/page+2, cfg)
					if err != nil {
						t.Fatal(err)
					}
					rng := rand.New(rand.NewPCG(101, uint64(d)))
					seqs := make([]*kernels.Seq, len(lens))
					for b, n := range lens {
						k, v := rows(rng, kernels.Float32, n, kvHeads, d), rows(rng, kernels.Float32, n, kvHeads, d)
						for i := range k.Data {
							k.Data[i] = float32(rng.NormFloat64())
							if c := i % d; c == 3 || c == d/2+1 {
								k.Data[i] *= 8 // outlier channels
							}
							v.Data[i] = float32(rng.NormFloat64())
						}
						seqs[b] = newSeq(t, pool)
						if err := seqs[b].Append(k, v); err != nil {
							t.Fatal(err)
						}
					}
					stored := storedRows(t, be, pool, cfg, page, [][]*kernels.Seq{seqs})
					worst, worsts := 0.0, ""
					for _, qs := range []float64{1, 4, 10} {
						worst = 0
						q, out := randTensor(rng, kernels.BNHD, len(lens), 1, heads, d), randTensor(rng, kernels.BNHD, len(lens), 1, heads, d)
						for i := range q.Data {
							q.Data[i] = float32(qs * rng.NormFloat64())
						}
						if err := pool.Attend(ctx, seqs, q, out, nil, nil); err != nil {
							t.Fatal(err)
						}
						for b, n := range lens {
							kv := stored[b]
							for h := range heads {
								want := refDecodeRow(q.Data[(b*heads+h)*d:][:d], kv[:n*kvHeads*d], kv[n*kvHeads*d:], n, kvHeads, h/(heads/kvHeads), d)
								// Go's max carries a row's NaN into worst.
								worst = max(worst, backendtest.RowError(out.Data[(b*heads+h)*d:][:d], want))
							}
						}
						if backendtest.Exceeds(worst, bound) {
							t.Errorf("%v D=%d query scale %g: an output off by %.3g of its row's largest, past the bound %g", dt, d, qs, worst, bound)
						}
						worsts += fmt.Sprintf(" %.2g", worst)
					}
					t.Logf("%v D=%d: worst error at query scales 1, 4, 10:%s of a row's largest (bound %g)", dt, d, worsts, bound)
					pool.Release()
				}
			}
		})
	}
}

// refDecodeRow is one query row's output in float64 from first
// principles: softmax(q·kⱼ/√d)·V over the n keys of KV head g, k and v
// a sequence's stored rows as float32 bits, [n, kvHeads, d] each.
func refDecodeRow(q []float32, k, v []uint32, n, kvHeads, g, d int) []float64 {
	at := func(x []uint32, j, c int) float64 { return float64(math.Float32frombits(x[(j*kvHeads+g)*d+c])) }
	s := make([]float64, n)
	m := math.Inf(-1)
	for j := range n {
		for c := range d {
			s[j] += float64(q[c]) * at(k, j, c)
		}
		s[j] /= math.Sqrt(float64(d))
		m = max(m, s[j])
	}
	o := make([]float64, d)
	sum := 0.0
	for j := range n {
		w := math.Exp(s[j] - m)
		sum += w
		for c := range d {
			o[c] += w * at(v, j, c)
		}
	}
	for c := range o {
		o[c] /= sum
	}
	return o
}
