package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// TestCacheVFromK runs an MLA cache (CacheConfig.VFromK: one latent row
// a token, V its first Dv columns) beside a cache given those columns as
// its V, with the same appends, a fork that copies a page on write, and
// the same queries, on every backend and storage dtype, in both layouts:
// KVCache and PagePool must attend as the caches with V stored apart do.
func TestCacheVFromK(t *testing.T) {
	const kvh, d, dv, h, ps = 1, 96, 64, 16, 16
	ctx := context.Background()
	for _, bk := range stridesBackends {
		for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16, kernels.Q8, kernels.FP8} {
			for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
				t.Run(fmt.Sprintf("%s/%v/%v", bk.name, dt, layout), func(t *testing.T) {
					be := bk.open(t)
					rng := rand.New(rand.NewPCG(56, uint64(dt)*2+uint64(layout)))
					mla := kernels.CacheConfig{KVHeads: kvh, D: d, DType: dt, Layout: layout, VFromK: dv}
					apart := mla
					apart.Dv, apart.VFromK = dv, 0
					if dt == kernels.FP8 {
						mla.KScale = []float32{0.25}
						apart.KScale, apart.VScale = mla.KScale, mla.KScale
					}
					q := randTensor(rng, layout, 3, h, 1, d)
					if layout == kernels.BNHD {
						q = randTensor(rng, layout, 3, 1, h, d)
					}
					opts := &kernels.AttendOptions{Causal: true, Scale: 1 / math.Sqrt(48)}

					// PagePool: two sequences and a fork of the first.
					var outs [2]*kernels.Tensor
					for i, cfg := range []kernels.CacheConfig{mla, apart} {
						pool, err := kernels.NewPagePool(be, ps, 64, cfg)
						if err != nil {
							t.Fatal(err)
						}
						defer pool.Release()
						rng := rand.New(rand.NewPCG(7, 7)) // the same rows for both caches
						rows := func(n int) (*kernels.Tensor, *kernels.Tensor) {
							k := randTensor(rng, kernels.BNHD, n, kvh, d)
							v, _ := k.Slice(2, 0, dv)
							return k, dense(t, v)
						}
						a, b := newSeq(t, pool), newSeq(t, pool)
						for _, s := range []struct {
							seq *kernels.Seq
							n   int
						}{{a, 21}, {b, 37}} {
							k, v := rows(s.n)
							if cfg.VFromK > 0 {
								v = nil
							}
							if err := s.seq.Append(k, v); err != nil {
								t.Fatal(err)
							}
						}
						c, err := a.Fork()
						if err != nil {
							t.Fatal(err)
						}
						for _, s := range []*kernels.Seq{a, c} { // each copies the shared partial page
							k, v := rows(5)
							if cfg.VFromK > 0 {
								v = nil
							}
							if err := s.Append(k, v); err != nil {
								t.Fatal(err)
							}
						}
						out, err := kernels.NewTensor(layout, q.Shape[0], q.Shape[1], q.Shape[2], dv)
						if err != nil {
							t.Fatal(err)
						}
						if err := pool.Attend(ctx, []*kernels.Seq{a, b, c}, q, out, nil, opts); err != nil {
							t.Fatal(err)
						}
						outs[i] = out
					}
					near(t, "PagePool", outs[0].Data, outs[1].Data, 1e-5)

					// KVCache: a batch of two.
					for i, cfg := range []kernels.CacheConfig{mla, apart} {
						kc, err := kernels.NewKVCache(be, 2, 100, cfg)
						if err != nil {
							t.Fatal(err)
						}
						defer kc.Release()
						rng := rand.New(rand.NewPCG(8, 8))
						for seq, n := range []int{40, 3} {
							k := randTensor(rng, kernels.BNHD, n, kvh, d)
							var v *kernels.Tensor
							if cfg.VFromK == 0 {
								s, _ := k.Slice(2, 0, dv)
								v = dense(t, s)
							}
							if err := kc.Append(seq, k, v); err != nil {
								t.Fatal(err)
							}
						}
						q2, _ := q.Slice(0, 0, 2)
						out, err := kernels.NewTensor(layout, 2, q.Shape[1], q.Shape[2], dv)
						if err != nil {
							t.Fatal(err)
						}
						if err := kc.Attend(ctx, dense(t, q2), out, nil, opts); err != nil {
							t.Fatal(err)
						}
						outs[i] = out
					}
					near(t, "KVCache", outs[0].Data, outs[1].Data, 1e-5)
				})
			}
		}
	}
}

// TestCacheVFromKRefused: an MLA cache refuses a V, a Dv past D or
// beside another, a negative one, a V scale of its own, and a backend
// without Caps.VFromK.
func TestCacheVFromKRefused(t *testing.T) {
	be := openCPU(t)
	ok := kernels.CacheConfig{KVHeads: 1, D: 64, VFromK: 32}
	for _, c := range []struct {
		name string
		be   backend.Backend
		cfg  func(c *kernels.CacheConfig)
		want error
		says string
	}{
		{"dv past D", be, func(c *kernels.CacheConfig) { c.VFromK = 65 }, backend.ErrShape, "VFromK=65 is more than D=64"},
		{"negative", be, func(c *kernels.CacheConfig) { c.VFromK = -1 }, backend.ErrShape, "VFromK=-1"},
		{"another Dv", be, func(c *kernels.CacheConfig) { c.Dv = 16 }, backend.ErrShape, "(VFromK=32, V's head dim) and Dv=16"},
		{"the same Dv", be, func(c *kernels.CacheConfig) { c.Dv = 32 }, nil, ""},
		{"V scale", be, func(c *kernels.CacheConfig) { c.DType, c.VScale = kernels.FP8, []float32{2} }, backend.ErrShape, "K's scales"},
		{"no capability", noVFromK{be}, func(*kernels.CacheConfig) {}, backend.ErrUnsupported, "Caps.VFromK"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.cfg(&cfg)
			pool, err := kernels.NewPagePool(c.be, 16, 4, cfg)
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				pool.Release()
				return
			}
			if !errors.Is(err, c.want) || !containsAll(err, c.says) {
				t.Fatalf("got %v, want %v saying %q", err, c.want, c.says)
			}
		})
	}
	pool, err := kernels.NewPagePool(be, 16, 4, ok)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Release()
	rng := rand.New(rand.NewPCG(1, 2))
	k := randTensor(rng, kernels.BNHD, 3, 1, 64)
	v := randTensor(rng, kernels.BNHD, 3, 1, 32)
	s := newSeq(t, pool)
	if err := s.Append(k, v); !errors.Is(err, backend.ErrShape) || !containsAll(err, "v must be nil") {
		t.Fatalf("append of a V into an MLA cache: %v", err)
	}
	if s.Len() != 0 {
		t.Fatalf("a refused append left %d rows", s.Len())
	}
	if err := s.Append(k, nil); err != nil {
		t.Fatal(err)
	}
}

func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol) {
			t.Fatalf("%s: out[%d] = %v, want %v (the same attention another way)", what, i, got[i], want[i])
		}
	}
}

func containsAll(err error, s string) bool {
	return err != nil && strings.Contains(err.Error(), s)
}
