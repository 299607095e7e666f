//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/kernels"
)

// TestStepCache: a model's decoding loop as a GPU program runs it. Each
// token, every layer appends its keys and values from device buffers
// and attends its query — the previous layer's output — over its cache,
// all recorded in one step with one wait; the caches alternate between
// contiguous and paged, float16. The outputs match the same loop run
// through the host API on the CPU backend, token by token.
func TestStepCache(t *testing.T) {
	b := openGPU(t)
	host, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	ctx := context.Background()
	const layers, batch, heads, tokens = 4, 2, 4, 5
	cfg := kernels.CacheConfig{KVHeads: 2, D: 32, DType: kernels.Float16, Layout: kernels.BNHD}
	rowLen := cfg.KVHeads * cfg.D
	qLen := batch * heads * cfg.D

	// cache is one layer's cache on one backend, either kind.
	type cache struct {
		c    *kernels.KVCache
		pool *kernels.PagePool
		seqs []*kernels.Seq
	}
	open := func(be backend.Backend, l int) *cache {
		if l%2 == 0 {
			c, err := kernels.NewKVCache(be, batch, tokens, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return &cache{c: c}
		}
		p, err := kernels.NewPagePool(be, 2, batch*tokens, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := &cache{pool: p}
		for range 2 {
			s, err := p.NewSeq()
			if err != nil {
				t.Fatal(err)
			}
			c.seqs = append(c.seqs, s)
		}
		return c
	}
	release := func(c *cache) {
		if c.c != nil {
			c.c.Release()
		} else {
			c.pool.Release()
		}
	}
	buf := func(n int) backend.Buffer {
		x, err := b.Alloc(backend.Float32, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(x.Release)
		return x
	}
	var gc, hc []*cache
	var kb, vb [][]backend.Buffer // per layer, per sequence: the token's projections
	outs := make([]backend.Buffer, layers)
	for l := range layers {
		gc, hc = append(gc, open(b, l)), append(hc, open(host, l))
		defer release(gc[l])
		defer release(hc[l])
		kb, vb = append(kb, []backend.Buffer{buf(rowLen), buf(rowLen)}), append(vb, []backend.Buffer{buf(rowLen), buf(rowLen)})
		outs[l] = buf(qLen)
	}
	q0 := buf(qLen)
	rng := rand.New(rand.NewPCG(5, 5))
	st := b.Record()
	for tok := range tokens {
		// The program's projections for this token, on the device before
		// the step (its own kernels would write them).
		hk := make([][][]float32, layers)
		hv := make([][][]float32, layers)
		for l := range layers {
			for s := range batch {
				k, v := randSlice(rng, rowLen), randSlice(rng, rowLen)
				hk[l], hv[l] = append(hk[l], k), append(hv[l], v)
				if err := b.Write(kb[l][s], 0, k); err != nil {
					t.Fatal(err)
				}
				if err := b.Write(vb[l][s], 0, v); err != nil {
					t.Fatal(err)
				}
			}
		}
		hq := randSlice(rng, qLen)
		if err := b.Write(q0, 0, hq); err != nil {
			t.Fatal(err)
		}

		// The step: every layer's appends and attention, one wait.
		q := q0
		for l, c := range gc {
			for s := range batch {
				if c.c != nil {
					err = c.c.AppendBuffers(ctx, st, s, 1, kb[l][s], vb[l][s])
				} else {
					err = c.seqs[s].AppendBuffers(ctx, st, 1, kb[l][s], vb[l][s])
				}
				if err != nil {
					t.Fatalf("token %d layer %d: append: %v", tok, l, err)
				}
			}
			if c.c != nil {
				err = c.c.AttendBuffers(ctx, st, q, outs[l], nil, heads, 1, nil)
			} else {
				err = c.pool.AttendBuffers(ctx, st, c.seqs, q, outs[l], nil, heads, 1, nil)
			}
			if err != nil {
				t.Fatalf("token %d layer %d: attend: %v", tok, l, err)
			}
			q = outs[l]
		}
		if gpu.PendingDispatches(b) == 0 {
			t.Fatalf("token %d: nothing recorded before Wait: the caches' calls waited", tok)
		}
		if err := st.Wait(); err != nil {
			t.Fatalf("token %d: Wait: %v", tok, err)
		}

		// The same token through the host API on the CPU.
		hq4 := tensorOf(hq, batch, 1, heads, cfg.D)
		for l, c := range hc {
			for s := range batch {
				k := tensorOf(hk[l][s], 1, cfg.KVHeads, cfg.D)
				v := tensorOf(hv[l][s], 1, cfg.KVHeads, cfg.D)
				if c.c != nil {
					err = c.c.Append(s, k, v)
				} else {
					err = c.seqs[s].Append(k, v)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			out, _ := kernels.NewTensor(kernels.BNHD, batch, 1, heads, cfg.D)
			if c.c != nil {
				err = c.c.Attend(ctx, hq4, out, nil, nil)
			} else {
				err = c.pool.Attend(ctx, c.seqs, hq4, out, nil, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, qLen)
			if err := b.Read(got, outs[l], 0); err != nil {
				t.Fatal(err)
			}
			closeTo(t, fmt.Sprintf("token %d layer %d", tok, l), got, out.Data, 1e-4)
			hq4 = out
		}
	}
}

// tensorOf is a float32 BNHD tensor of shape holding x.
func tensorOf(x []float32, shape ...int) *kernels.Tensor {
	t, err := kernels.NewTensor(kernels.BNHD, shape...)
	if err != nil {
		panic(err)
	}
	copy(t.Data, x)
	return t
}
