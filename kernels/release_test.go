package kernels_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// counting wraps a backend and counts the buffers alive.
type counting struct {
	backend.Backend
	mu   sync.Mutex
	live int
}

type countedBuf struct {
	backend.Buffer
	c    *counting
	once sync.Once
}

func (b *countedBuf) Release() {
	b.once.Do(func() {
		b.c.mu.Lock()
		b.c.live--
		b.c.mu.Unlock()
	})
	b.Buffer.Release()
}

func (c *counting) Alloc(t backend.DType, n int) (backend.Buffer, error) {
	buf, err := c.Backend.Alloc(t, n)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.live++
	c.mu.Unlock()
	return &countedBuf{Buffer: buf, c: c}, nil
}

func unwrap(b backend.Buffer) backend.Buffer {
	if cb, ok := b.(*countedBuf); ok {
		return cb.Buffer
	}
	return b
}

func (c *counting) Write(dst backend.Buffer, off int, src []float32) error {
	return c.Backend.Write(unwrap(dst), off, src)
}

func (c *counting) Read(dst []float32, src backend.Buffer, off int) error {
	return c.Backend.Read(dst, unwrap(src), off)
}

func unwrapMask(m *backend.Mask) *backend.Mask {
	if m == nil {
		return nil
	}
	return &backend.Mask{Buf: unwrap(m.Buf), Shape: m.Shape}
}

func (c *counting) Scores(ctx context.Context, p backend.ScoresParams, q, k, s backend.Buffer) error {
	p.Bias = unwrapMask(p.Bias)
	return c.Backend.Scores(ctx, p, unwrap(q), unwrap(k), unwrap(s))
}

func (c *counting) Softmax(ctx context.Context, p backend.SoftmaxParams, s backend.Buffer) error {
	p.Keep = unwrapMask(p.Keep)
	if p.LSE != nil {
		p.LSE = unwrap(p.LSE)
	}
	return c.Backend.Softmax(ctx, p, unwrap(s))
}

func (c *counting) Context(ctx context.Context, p backend.ContextParams, pm, v, o backend.Buffer) error {
	return c.Backend.Context(ctx, p, unwrap(pm), unwrap(v), unwrap(o))
}

func (c *counting) Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	p.Bias, p.Keep = unwrapMask(p.Bias), unwrapMask(p.Keep)
	if lse != nil {
		lse = unwrap(lse)
	}
	return c.Backend.Fused(ctx, p, unwrap(q), unwrap(k), unwrap(v), unwrap(o), lse)
}

// TestAttentionReleasesBuffers checks that Attention frees every device
// buffer it allocates, on success and on error, for both strategies.
func TestAttentionReleasesBuffers(t *testing.T) {
	c := &counting{Backend: openCPU(t)}
	q := &kernels.Tensor{Shape: []int{2, 3, 4}, Data: make([]float32, 24)}
	k := &kernels.Tensor{Shape: []int{2, 5, 4}, Data: make([]float32, 40)}
	v := &kernels.Tensor{Shape: []int{2, 5, 4}, Data: make([]float32, 40)}
	bias := &kernels.Tensor{Shape: []int{3, 5}, Data: make([]float32, 15)}
	for _, opts := range []*kernels.Options{
		{Strategy: kernels.Fused, LSE: true, Bias: bias},
		{Strategy: kernels.Staged, Weights: true, Scores: true, LSE: true, Bias: bias},
		{Strategy: kernels.Fused, Scale: 0.5, Causal: true},
	} {
		if _, err := kernels.Attention(context.Background(), c, q, k, v, opts); err != nil {
			t.Fatalf("Attention(%+v): %v", opts, err)
		}
		if c.live != 0 {
			t.Errorf("Attention(%+v) left %d buffers allocated", opts, c.live)
		}
	}
	// An error after the uploads: a cancelled ctx.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := kernels.Attention(ctx, c, q, k, v, &kernels.Options{Strategy: kernels.Staged}); err == nil {
		t.Fatal("Attention with a cancelled ctx succeeded")
	}
	if c.live != 0 {
		t.Errorf("Attention that failed left %d buffers allocated", c.live)
	}
}

// Once a cache or a page pool is released, every call of it and of its
// sequences, NewSeq included, is backend.ErrReleased naming it, and a second
// Release does nothing.
func TestReleasedCaches(t *testing.T) {
	be := openCPU(t)
	ctx := context.Background()
	cfg := kernels.CacheConfig{KVHeads: 1, D: 4}
	row := func() *kernels.Tensor { return &kernels.Tensor{Shape: []int{1, 1, 4}, Data: make([]float32, 4)} }
	q := &kernels.Tensor{Shape: []int{1, 1, 1, 4}, Data: make([]float32, 4)}
	out := &kernels.Tensor{Shape: []int{1, 1, 1, 4}, Data: make([]float32, 4)}
	check := func(what, name string, err error) {
		t.Helper()
		if !errors.Is(err, backend.ErrReleased) || !strings.Contains(err.Error(), name+" is released") {
			t.Errorf("%s after Release: %v; want backend.ErrReleased naming the %s", what, err, name)
		}
	}

	pool, err := kernels.NewPagePool(be, 2, 4, cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := newSeq(t, pool)
	if err := old.Append(row(), row()); err != nil {
		t.Fatal(err)
	}
	pool.Release()
	pool.Release()
	seq, err := pool.NewSeq()
	check("NewSeq", "page pool", err)
	if seq != nil {
		t.Errorf("NewSeq after Release returned a sequence")
	}
	check("an old sequence's Append", "page pool", old.Append(row(), row()))
	check("Truncate", "page pool", old.Truncate(0))
	_, err = old.Fork()
	check("Fork", "page pool", err)
	check("Attend", "page pool", pool.Attend(ctx, []*kernels.Seq{old}, q, out, nil, nil))
	old.Release()

	c, err := kernels.NewKVCache(be, 1, 4, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Append(0, row(), row()); err != nil {
		t.Fatal(err)
	}
	c.Release()
	c.Release()
	check("Append", "KV cache", c.Append(0, row(), row()))
	check("Truncate", "KV cache", c.Truncate(0, 0))
	check("Attend", "KV cache", c.Attend(ctx, q, out, nil, nil))
}
