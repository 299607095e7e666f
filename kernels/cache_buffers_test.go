package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// onDevice puts x on be: its values in a buffer of its dtype.
func onDevice(t *testing.T, be backend.Backend, x *kernels.Tensor) backend.Buffer {
	t.Helper()
	buf, err := be.Alloc(x.DType, x.Len())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(buf.Release)
	if x.DType.Half() {
		err = be.WriteBits(buf, 0, x.Bits)
	} else {
		err = be.Write(buf, 0, x.Data)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf
}

// fromDevice reads a buffer of be into a tensor of dtype dt and shape.
func fromDevice(t *testing.T, be backend.Backend, buf backend.Buffer, dt kernels.DType, layout kernels.Layout, shape ...int) *kernels.Tensor {
	t.Helper()
	x, err := kernels.NewTensorOf(dt, layout, shape...)
	if err != nil {
		t.Fatal(err)
	}
	if dt.Half() {
		err = be.ReadBits(x.Bits, buf, 0)
	} else {
		err = be.Read(x.Data, buf, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// A decoding loop whose keys, values and queries are on the device
// (AppendBuffers, AttendBuffers: a GPU program's projections), on every
// backend under test, each layout, cache dtype and source dtype,
// contiguous and paged: it matches the float64 reference of the same
// keys, and a step's appends and attention read nothing from the host.
func TestCacheBuffers(t *testing.T) {
	ctx := context.Background()
	for _, bk := range onnxBackends {
		be := bk.open(t)
		for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
			for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16, kernels.BFloat16} {
				srcs := []kernels.DType{kernels.Float32}
				if dt != kernels.Float32 {
					srcs = append(srcs, dt)
				}
				for _, src := range srcs {
					for _, pageSize := range []int{0, 3} {
						name := fmt.Sprintf("%s/%v/%v/from=%v/pages=%d", bk.name, layout, dt, src, pageSize)
						t.Run(name, func(t *testing.T) { cacheBuffers(ctx, t, be, layout, dt, src, pageSize) })
					}
				}
			}
		}
	}
}

func cacheBuffers(ctx context.Context, t *testing.T, be backend.Backend, layout kernels.Layout, dt, src kernels.DType, pageSize int) {
	rng := rand.New(rand.NewPCG(57, uint64(pageSize)))
	// Odd dims: halves of one token's rows straddle words.
	cfg := kernels.CacheConfig{KVHeads: 2, D: 7, Dv: 9, DType: dt, Layout: layout}
	const batch, h = 3, 4
	m := &mirror{cfg: cfg}
	var cache *kernels.KVCache
	var pool *kernels.PagePool
	var seqs []*kernels.Seq
	var err error
	if pageSize == 0 {
		cache, err = kernels.NewKVCache(be, batch, 24, cfg)
	} else {
		pool, err = kernels.NewPagePool(be, pageSize, 3*24/pageSize+3, cfg)
		for range batch {
			seqs = append(seqs, newSeq(t, pool))
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cache != nil {
			cache.Release()
		} else {
			pool.Release()
		}
	}()
	appendRows := func(s, n int) {
		// Buffers longer than the rows: AppendBuffers reads the first n.
		kx, vx := rows(rng, src, n+2, cfg.KVHeads, cfg.D), rows(rng, src, n+1, cfg.KVHeads, cfg.Dv)
		kb, vb := onDevice(t, be, kx), onDevice(t, be, vx)
		k, v := firstRows(t, kx, n), firstRows(t, vx, n)
		var err error
		if cache != nil {
			err = cache.AppendBuffers(ctx, nil, s, n, kb, vb)
		} else {
			err = seqs[s].AppendBuffers(ctx, nil, n, kb, vb)
		}
		if err != nil {
			t.Fatalf("append %d to %d: %v", n, s, err)
		}
		m.append(s, k, v)
	}
	for s, n := range []int{5, 0, 9} {
		appendRows(s, n)
	}
	opts := []*kernels.AttendOptions{
		{Causal: true},
		{Causal: true, Window: &backend.Window{Left: 3, Right: 0}},
		{Scale: 0.3},
	}
	for step := range 6 {
		nq := 1 + step%2
		for s := range batch {
			appendRows(s, nq)
		}
		o := opts[step%len(opts)]
		shape := []int{batch, nq, h, cfg.D}
		oshape := []int{batch, nq, h, cfg.Dv}
		if layout == kernels.BHND {
			shape, oshape = []int{batch, h, nq, cfg.D}, []int{batch, h, nq, cfg.Dv}
		}
		q := rows(rng, src, 1, 1, batch*nq*h*cfg.D)
		q.Shape, q.Layout = shape, layout
		qb := onDevice(t, be, q)
		ob, err := be.Alloc(dt, batch*nq*h*cfg.Dv)
		if err != nil {
			t.Fatal(err)
		}
		lb, err := be.Alloc(kernels.Float32, batch*h*nq)
		if err != nil {
			t.Fatal(err)
		}
		if cache != nil {
			err = cache.AttendBuffers(ctx, nil, qb, ob, lb, h, nq, o)
		} else {
			err = pool.AttendBuffers(ctx, nil, seqs, qb, ob, lb, h, nq, o)
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		out := fromDevice(t, be, ob, dt, layout, oshape...)
		want, _ := m.want(t, []int{0, 1, 2}, q, o)
		compareOut(t, fmt.Sprintf("step %d", step), out, want, cfg.Dv, m.slack(q))
		ob.Release()
		lb.Release()
	}
}

// firstRows is x's first n rows, dense.
func firstRows(t *testing.T, x *kernels.Tensor, n int) *kernels.Tensor {
	t.Helper()
	y, err := x.Slice(0, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	z, err := y.Contiguous()
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// noCopier hides a backend's Copy.
type noCopier struct{ backend.Backend }

// AppendBuffers and AttendBuffers refuse bad sizes before any copy,
// naming them, and leave the cache as it was; a backend that copies
// nothing on the device refuses AppendBuffers.
func TestCacheBuffersErrors(t *testing.T) {
	ctx := context.Background()
	be := openCPU(t)
	cfg := kernels.CacheConfig{KVHeads: 2, D: 4, Dv: 6}
	cache, err := kernels.NewKVCache(be, 2, 3, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Release()
	buf := func(n int) backend.Buffer {
		b, err := be.Alloc(kernels.Float32, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Release)
		return b
	}
	k2, v2 := buf(2*2*4), buf(2*2*6)
	for _, tc := range []struct {
		name     string
		err      error
		sentinel error
		text     string
	}{
		{"sequence out of range", cache.AppendBuffers(ctx, nil, 2, 1, k2, v2), backend.ErrShape, "sequence 2 of a cache of 2"},
		{"negative rows", cache.AppendBuffers(ctx, nil, 0, -1, k2, v2), backend.ErrShape, "-1 rows"},
		{"K short", cache.AppendBuffers(ctx, nil, 0, 3, k2, buf(3*2*6)), backend.ErrShape, "needs 24 elements, its buffer has 16"},
		{"V short", cache.AppendBuffers(ctx, nil, 0, 2, k2, buf(23)), backend.ErrShape, "needs 24 elements, its buffer has 23"},
		{"nil V", cache.AppendBuffers(ctx, nil, 0, 1, k2, nil), backend.ErrShape, "V"},
		{"full", cache.AppendBuffers(ctx, nil, 0, 4, buf(4*2*4), buf(4*2*6)), backend.ErrCacheFull, "holds 0 of its capacity 3"},
		{"no Copier", func() error {
			c, err := kernels.NewKVCache(noCopier{be}, 1, 3, cfg)
			if err != nil {
				return err
			}
			defer c.Release()
			return c.AppendBuffers(ctx, nil, 0, 1, k2, v2)
		}(), backend.ErrUnsupported, "backend.Copier"},
		{"heads not a multiple", cache.AttendBuffers(ctx, nil, buf(2*3*4), buf(2*3*6), nil, 3, 1, nil), backend.ErrShape, "3 query heads"},
		{"Q short", cache.AttendBuffers(ctx, nil, buf(2*4*4-1), buf(2*4*6), nil, 4, 1, nil), backend.ErrShape, "Q needs 32 elements"},
		{"out short", cache.AttendBuffers(ctx, nil, buf(2*4*4), buf(2*4*6-1), nil, 4, 1, nil), backend.ErrShape, "O needs 48 elements"},
	} {
		if !errors.Is(tc.err, tc.sentinel) || !contains(tc.err, tc.text) {
			t.Errorf("%s: %v, want an error wrapping %v that says %q", tc.name, tc.err, tc.sentinel, tc.text)
		}
	}
	if cache.Len(0) != 0 || cache.Len(1) != 0 {
		t.Errorf("lengths %d, %d after refused appends, want 0, 0", cache.Len(0), cache.Len(1))
	}
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
