package kernels_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// 8-bit caches refuse what they cannot store, naming it, and leave the
// cache as it was; an fp8 cache counts the values it saturates.
func TestCacheQuantErrors(t *testing.T) {
	be := openCPU(t)
	for _, c := range []struct {
		name string
		cfg  kernels.CacheConfig
		want error
		msg  string
	}{
		{"f16 scales", kernels.CacheConfig{KVHeads: 1, D: 32, DType: backend.Float16, KScale: []float32{2}}, backend.ErrShape, "only an fp8 cache"},
		{"fp8 scales short", kernels.CacheConfig{KVHeads: 2, D: 32, DType: backend.FP8, VScale: []float32{2}}, backend.ErrShape, "1 V scales for 2 KV heads"},
		{"fp8 scale 0", kernels.CacheConfig{KVHeads: 1, D: 32, DType: backend.FP8, KScale: []float32{0}}, backend.ErrShape, "K scale of KV head 0 is 0"},
	} {
		_, err := kernels.NewKVCache(be, 1, 4, c.cfg)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.want, c.msg)
		}
	}

	rng := rand.New(rand.NewPCG(46, 1))
	for _, dt := range backend.Quants {
		cfg := kernels.CacheConfig{KVHeads: 2, D: 32, DType: dt, Layout: kernels.BNHD}
		if dt == backend.FP8 {
			cfg.KScale = []float32{1, 0.5}
		}
		cache, err := kernels.NewKVCache(be, 1, 8, cfg)
		if err != nil {
			t.Fatal(err)
		}
		k, v := randTensor(rng, kernels.BNHD, 2, 2, 32), randTensor(rng, kernels.BNHD, 2, 2, 32)
		k.Data[37] = float32(math.NaN())
		if err := cache.Append(0, k, v); !errors.Is(err, backend.ErrNonFinite) || cache.Len(0) != 0 {
			t.Errorf("%v: a NaN appended: %v, length %d", dt, err, cache.Len(0))
		}
		k.Data[37] = 1e7 // beyond q8's largest block, 127·65520, and q4's, 8·65520; fp8 saturates it
		err = cache.Append(0, k, v)
		if dt.Block() > 1 {
			if !errors.Is(err, backend.ErrNonFinite) || !strings.Contains(err.Error(), dt.String()) || cache.Len(0) != 0 {
				t.Errorf("%v: 1e7 appended: %v, length %d", dt, err, cache.Len(0))
			}
			k.Data[37] = dt.MaxFinite() / 2 // within it
			err = cache.Append(0, k, v)
		}
		if err != nil {
			t.Fatalf("%v: %v", dt, err)
		}
		// fp8: 1e7 in head 1 (scale 0.5) saturates; 300 in head 1 (scale
		// 0.5, stored 600) too; 400 in head 0 does not; in V (unscaled,
		// stored as it comes) −500 saturates, 448 does not.
		want := int64(0)
		if dt == backend.FP8 {
			want = 1
			v2 := randTensor(rng, kernels.BNHD, 1, 2, 32)
			k2 := randTensor(rng, kernels.BNHD, 1, 2, 32)
			k2.Data[40], k2.Data[3] = 300, 400
			v2.Data[5], v2.Data[50] = -500, 448
			if err := cache.Append(0, k2, v2); err != nil {
				t.Fatal(err)
			}
			want += 2
		}
		if got, err := cache.Saturated(); got != want || err != nil {
			t.Errorf("%v: Saturated() = %d, %v; want %d", dt, got, err, want)
		}
		kb, _ := be.Alloc(backend.Float32, 2*32)
		vb, _ := be.Alloc(backend.Float32, 2*32)
		err = cache.AppendBuffers(context.Background(), nil, 0, 1, kb, vb)
		if got, errCount := cache.Saturated(); err != nil || errCount != nil || got != want {
			t.Errorf("%v: AppendBuffers of zeros: %v, Saturated() = %d, %v; want nil, %d", dt, err, got, errCount, want)
		}
		kb.Release()
		vb.Release()
		cache.Release()
		// A released cache's counts cannot be read: the error says so,
		// and the count last read stands.
		if got, err := cache.Saturated(); got != want || !errors.Is(err, backend.ErrReleased) {
			t.Errorf("%v: Saturated() of a released cache = %d, %v; want %d, ErrReleased", dt, got, err, want)
		}
	}
}

// A q8 or fp8 page shared by a fork and copied on write keeps its bytes:
// the parent's answers do not move when the child writes, and the child
// sees its own row.
func TestSeqForkQuant(t *testing.T) {
	be := openCPU(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(46, 2))
	for _, dt := range backend.Quants {
		cfg := kernels.CacheConfig{KVHeads: 1, D: 32, DType: dt, Layout: kernels.BHND}
		pool, err := kernels.NewPagePool(be, 4, 6, cfg)
		if err != nil {
			t.Fatal(err)
		}
		parent := newSeq(t, pool)
		if err := parent.Append(randTensor(rng, kernels.BNHD, 6, 1, 32), randTensor(rng, kernels.BNHD, 6, 1, 32)); err != nil {
			t.Fatal(err)
		}
		q := randTensor(rng, kernels.BHND, 1, 2, 1, 32)
		attend := func(s *kernels.Seq) []float32 {
			out, _ := kernels.NewTensor(kernels.BHND, 1, 2, 1, 32)
			if err := pool.Attend(ctx, []*kernels.Seq{s}, q, out, nil, nil); err != nil {
				t.Fatal(err)
			}
			return out.Data
		}
		before := attend(parent)
		child, err := parent.Fork()
		if err != nil {
			t.Fatal(err)
		}
		if err := child.Append(randTensor(rng, kernels.BNHD, 1, 1, 32), randTensor(rng, kernels.BNHD, 1, 1, 32)); err != nil {
			t.Fatal(err)
		}
		after := attend(parent)
		for i := range before {
			if before[i] != after[i] {
				t.Fatalf("%v: the parent's output moved at %d after its child wrote: %g, then %g", dt, i, before[i], after[i])
			}
		}
		if c := attend(child); c[0] == before[0] && c[1] == before[1] {
			t.Errorf("%v: the child's output is the parent's: its own row went unseen", dt)
		}
		child.Release()
		parent.Release()
		pool.Release()
	}
}
