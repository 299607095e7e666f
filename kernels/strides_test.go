package kernels_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/kernels"
)

// stridesBackends are the backends strided tensors run on: the CPU, which
// reads them in place, and the GPU where the build has it
// (strides_gpu_test.go), which receives them gathered.
var stridesBackends = []struct {
	name string
	open func(testing.TB) backend.Backend
}{{"cpu", openCPU}}

// padded returns a random tensor of shape inside a larger one, each
// dimension grown by grow[k] (front and back), sliced back to shape: a
// view whose strides are padded on every dimension but the last, whose
// storage holds NaN wherever the view does not look.
func padded(t testing.TB, rng *rand.Rand, dt kernels.DType, layout kernels.Layout, shape []int, grow []int) *kernels.Tensor {
	t.Helper()
	big := slices.Clone(shape)
	for k := range big {
		big[k] += grow[k]
	}
	full, err := kernels.NewTensorOf(dt, layout, big...)
	if err != nil {
		t.Fatal(err)
	}
	nan16 := uint16(0x7e00)
	if dt == kernels.BFloat16 {
		nan16 = 0x7fc0
	}
	for i := range full.Data {
		full.Data[i] = float32(math.NaN())
	}
	for i := range full.Bits {
		full.Bits[i] = nan16
	}
	v := full
	for k := range shape {
		lo := grow[k] / 2
		if v, err = v.Slice(k, lo, lo+shape[k]); err != nil {
			t.Fatal(err)
		}
	}
	// Fill the view's elements (and only them) through its strides.
	st := v.Strides
	idx := make([]int, len(shape))
	for range v.Len() {
		off := 0
		for k := range idx {
			off += idx[k] * st[k]
		}
		x := float32(rng.Float64()*2 - 1)
		if dt.Half() {
			v.Bits[off] = dt.Encode(x)
		} else {
			v.Data[off] = x
		}
		for k := len(idx) - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return v
}

// storage snapshots a tensor's storage, gaps included, as bits.
func storage(t *kernels.Tensor) []uint32 {
	if t.DType.Half() {
		out := make([]uint32, len(t.Bits))
		for i, b := range t.Bits {
			out[i] = uint32(b)
		}
		return out
	}
	out := make([]uint32, len(t.Data))
	for i, x := range t.Data {
		out[i] = math.Float32bits(x)
	}
	return out
}

func dense(t testing.TB, x *kernels.Tensor) *kernels.Tensor {
	t.Helper()
	d, err := x.Contiguous()
	if err != nil {
		t.Fatal(err)
	}
	if d.Strides != nil {
		t.Fatalf("Contiguous left strides %v", d.Strides)
	}
	return d
}

// sameOut compares two results' outputs within tol (relative to 1: the
// outputs are averages of values in [−1, 1]), and their LSE.
func sameOut(t testing.TB, got, want *kernels.Result, tol float64) {
	t.Helper()
	a, b := got.Out.Float32s(), want.Out.Float32s()
	if len(a) != len(b) || !slices.Equal(got.Out.Shape, want.Out.Shape) {
		t.Fatalf("out of shape %v (%d values), want %v (%d)", got.Out.Shape, len(a), want.Out.Shape, len(b))
	}
	for i := range a {
		if d := math.Abs(float64(a[i]) - float64(b[i])); backendtest.Exceeds(d, tol) {
			t.Fatalf("out[%d] = %v, the dense copy's %v", i, a[i], b[i])
		}
	}
	if want.LSE != nil {
		for i, x := range want.LSE.Data {
			if y := got.LSE.Data[i]; x != y && backendtest.Exceeds(math.Abs(float64(x-y)), tol) {
				t.Fatalf("LSE[%d] = %v, the dense copy's %v", i, y, x)
			}
		}
	}
}

type viewCase struct {
	name    string
	layout  kernels.Layout
	q, k, v []int // shapes
	grow    []int // padding per dimension (the last is padding too: the view's last stride stays 1)
	dt      kernels.DType
	opts    kernels.Options
}

func viewCases() []viewCase {
	f16 := kernels.Float16
	return []viewCase{
		{name: "bhnd", layout: kernels.BHND, q: []int{2, 4, 9, 16}, k: []int{2, 2, 13, 16}, v: []int{2, 2, 13, 8}, grow: []int{1, 2, 3, 5}},
		{name: "bnhd-causal", layout: kernels.BNHD, q: []int{2, 33, 4, 7}, k: []int{2, 40, 4, 7}, v: []int{2, 40, 4, 7}, grow: []int{2, 1, 3, 1}, opts: kernels.Options{Causal: true}},
		{name: "rank3", layout: kernels.BNHD, q: []int{5, 2, 3}, k: []int{6, 1, 3}, v: []int{6, 1, 5}, grow: []int{1, 1, 2}},
		{name: "rank2-one", layout: kernels.BHND, q: []int{1, 1}, k: []int{1, 1}, v: []int{1, 1}, grow: []int{3, 4}},
		{name: "empty-q", layout: kernels.BHND, q: []int{1, 2, 0, 8}, k: []int{1, 2, 5, 8}, v: []int{1, 2, 5, 8}, grow: []int{1, 1, 1, 1}},
		{name: "empty-k", layout: kernels.BNHD, q: []int{1, 3, 2, 8}, k: []int{1, 0, 2, 8}, v: []int{1, 0, 2, 8}, grow: []int{1, 2, 1, 2}},
		{name: "zero-batch", layout: kernels.BHND, q: []int{0, 2, 3, 8}, k: []int{0, 2, 3, 8}, v: []int{0, 2, 3, 8}, grow: []int{1, 1, 1, 1}},
		{name: "staged-weights", layout: kernels.BHND, q: []int{1, 2, 5, 9}, k: []int{1, 2, 6, 9}, v: []int{1, 2, 6, 9}, grow: []int{1, 1, 2, 3}, opts: kernels.Options{Strategy: kernels.Staged, Weights: true, LSE: true}},
		{name: "fused-lse-long", layout: kernels.BNHD, q: []int{1, 130, 2, 64}, k: []int{1, 300, 2, 64}, v: []int{1, 300, 2, 64}, grow: []int{1, 3, 1, 4}, opts: kernels.Options{Strategy: kernels.Fused, LSE: true}},
		{name: "f16", layout: kernels.BNHD, q: []int{1, 9, 4, 16}, k: []int{1, 20, 2, 16}, v: []int{1, 20, 2, 16}, grow: []int{1, 2, 2, 2}, dt: f16},
		{name: "bf16-fused", layout: kernels.BHND, q: []int{1, 2, 40, 32}, k: []int{1, 2, 40, 32}, v: []int{1, 2, 40, 32}, grow: []int{0, 1, 1, 8}, dt: kernels.BFloat16, opts: kernels.Options{Strategy: kernels.Fused}},
	}
}

// TestStridedAttention runs each case with Q, K and V as padded views
// and as their dense copies, on every backend: the outputs agree, and
// the views' storage (NaN gaps included) is unchanged.
func TestStridedAttention(t *testing.T) {
	for _, bk := range stridesBackends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.open(t)
			for _, c := range viewCases() {
				t.Run(c.name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(26, uint64(len(c.name))))
					q := padded(t, rng, c.dt, c.layout, c.q, c.grow)
					k := padded(t, rng, c.dt, c.layout, c.k, c.grow)
					v := padded(t, rng, c.dt, c.layout, c.v, c.grow)
					before := [][]uint32{storage(q), storage(k), storage(v)}
					opts := c.opts
					got, err := kernels.Attention(context.Background(), be, q, k, v, &opts)
					if err != nil {
						t.Fatal(err)
					}
					want, err := kernels.Attention(context.Background(), be, dense(t, q), dense(t, k), dense(t, v), &opts)
					if err != nil {
						t.Fatal(err)
					}
					sameOut(t, got, want, 1e-6)
					if want.Weights != nil && !slices.Equal(got.Weights.Float32s(), want.Weights.Float32s()) {
						t.Errorf("weights differ from the dense copy's")
					}
					for i, x := range []*kernels.Tensor{q, k, v} {
						if !slices.Equal(storage(x), before[i]) {
							t.Errorf("Attention changed the storage of %s", [3]string{"Q", "K", "V"}[i])
						}
					}
				})
			}
		})
	}
}

// TestFusedQKV slices Q, K and V from one [B, N, 3·H, D] projection, as
// a model's fused QKV matmul leaves them, packed too, on every backend.
func TestFusedQKV(t *testing.T) {
	const b, n, h, d = 2, 17, 3, 8
	rng := rand.New(rand.NewPCG(26, 3))
	qkv := randTensor(rng, kernels.BNHD, b, n, 3*h, d)
	before := slices.Clone(qkv.Data)
	views := make([]*kernels.Tensor, 3)
	for i := range views {
		var err error
		if views[i], err = qkv.Slice(2, i*h, (i+1)*h); err != nil {
			t.Fatal(err)
		}
	}
	if want := []int{n * 3 * h * d, 3 * h * d, d, 1}; !slices.Equal(views[1].Strides, want) {
		t.Fatalf("K's strides %v, want %v", views[1].Strides, want)
	}
	// Packed: the rows of both sequences end to end, [total, 3·H, D].
	packedQKV := &kernels.Tensor{Shape: []int{b * n, 3 * h, d}, Layout: kernels.BNHD, Data: qkv.Data}
	packed := make([]*kernels.Tensor, 3)
	for i := range packed {
		var err error
		if packed[i], err = packedQKV.Slice(1, i*h, (i+1)*h); err != nil {
			t.Fatal(err)
		}
	}
	for _, bk := range stridesBackends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.open(t)
			opts := &kernels.Options{Causal: true, LSE: true}
			got, err := kernels.Attention(context.Background(), be, views[0], views[1], views[2], opts)
			if err != nil {
				t.Fatal(err)
			}
			want, err := kernels.Attention(context.Background(), be, dense(t, views[0]), dense(t, views[1]), dense(t, views[2]), opts)
			if err != nil {
				t.Fatal(err)
			}
			sameOut(t, got, want, 1e-6)
			if !be.Caps().Seqs {
				return
			}
			popts := &kernels.Options{Causal: true, CuSeqlensQ: []int{0, n, 2 * n}, CuSeqlensK: []int{0, n, 2 * n}}
			pgot, err := kernels.Attention(context.Background(), be, packed[0], packed[1], packed[2], popts)
			if err != nil {
				t.Fatal(err)
			}
			pwant, err := kernels.Attention(context.Background(), be, dense(t, packed[0]), dense(t, packed[1]), dense(t, packed[2]), popts)
			if err != nil {
				t.Fatal(err)
			}
			sameOut(t, pgot, pwant, 1e-6)
			// The packed answer is the batched one, row for row.
			a, w := pgot.Out.Data, got.Out.Data
			for i := range a {
				if backendtest.Exceeds(math.Abs(float64(a[i]-w[i])), 1e-5) {
					t.Fatalf("packed out[%d] = %v, batched %v", i, a[i], w[i])
				}
			}
		})
	}
	if !slices.Equal(qkv.Data, before) {
		t.Error("Attention changed the QKV projection")
	}
}

// TestStrideRules checks Slice's errors and the strides every function
// refuses, each an error wrapping ErrShape that names the shape and the
// strides.
func TestStrideRules(t *testing.T) {
	base := randTensor(rand.New(rand.NewPCG(26, 4)), kernels.BHND, 2, 3, 4, 5)
	for _, c := range []struct {
		dim, lo, hi int
	}{{-1, 0, 1}, {4, 0, 1}, {1, -1, 2}, {1, 2, 1}, {1, 0, 4}} {
		if _, err := base.Slice(c.dim, c.lo, c.hi); !errors.Is(err, backend.ErrShape) {
			t.Errorf("Slice(%d, %d, %d) = %v, want ErrShape", c.dim, c.lo, c.hi, err)
		}
	}
	bad := []struct {
		name    string
		strides []int
		n       int
	}{
		{"rank", []int{60, 20, 5}, 120},
		{"negative", []int{60, -20, 5, 1}, 120},
		{"last not 1", []int{120, 40, 10, 2}, 240},
		{"short storage", []int{60, 20, 5, 1}, 119},
		{"padded short", []int{70, 22, 5, 1}, 120},
	}
	be := openCPU(t)
	for _, c := range bad {
		x := &kernels.Tensor{Shape: []int{2, 3, 4, 5}, Data: make([]float32, c.n), Strides: c.strides}
		_, err := kernels.Attention(context.Background(), be, x, base, base, nil)
		if !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), fmt.Sprint(c.strides)) || !strings.Contains(err.Error(), "[2 3 4 5]") {
			t.Errorf("%s: Attention = %v, want ErrShape naming the shape and strides %v", c.name, err, c.strides)
		}
		for name, f := range map[string]func() error{
			"Convert":    func() error { _, err := x.Convert(kernels.Float16); return err },
			"Contiguous": func() error { _, err := x.Contiguous(); return err },
			"Slice":      func() error { _, err := x.Slice(0, 0, 1); return err },
			"WriteNpy":   func() error { return x.WriteNpy(&bytes.Buffer{}) },
			"ConcatSeq":  func() error { _, err := kernels.ConcatSeq(nil, x); return err },
		} {
			if err := f(); !errors.Is(err, backend.ErrShape) {
				t.Errorf("%s: %s = %v, want ErrShape", c.name, name, err)
			}
		}
	}
	// Overlapping rows (stride 0) are a valid view, gathered.
	row := &kernels.Tensor{Shape: []int{1, 1, 3, 4}, Data: []float32{1, 2, 3, 4}, Strides: []int{0, 0, 0, 1}}
	res, err := kernels.Attention(context.Background(), be, row, row, row, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range res.Out.Data {
		if want := float32(i%4 + 1); backendtest.Exceeds(math.Abs(float64(x-want)), 1e-6) {
			t.Fatalf("broadcast rows: out[%d] = %v, want %v", i, x, want)
		}
	}
	// A paged pool must be dense.
	pool := randTensor(rand.New(rand.NewPCG(26, 5)), kernels.BNHD, 3, 4, 2, 8)
	view, _ := pool.Slice(0, 0, 2)
	view2, _ := view.Slice(3, 0, 4)
	q := randTensor(rand.New(rand.NewPCG(26, 6)), kernels.BNHD, 1, 1, 2, 4)
	if _, err := kernels.Attention(context.Background(), be, q, view2, view2, &kernels.Options{BlockTable: [][]int{{0, 1}}}); !errors.Is(err, backend.ErrShape) {
		t.Errorf("strided paged pool: %v, want ErrShape", err)
	}
}

// TestStridedNonFinite checks that the finiteness check reads a view's
// elements, not its storage: NaN gaps pass, a NaN inside is found at
// its index in the view.
func TestStridedNonFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 7))
	be := openCPU(t)
	q := padded(t, rng, kernels.Float32, kernels.BHND, []int{1, 2, 3, 4}, []int{1, 1, 1, 2})
	k := padded(t, rng, kernels.Float32, kernels.BHND, []int{1, 2, 3, 4}, []int{1, 1, 1, 2})
	if _, err := kernels.Attention(context.Background(), be, q, k, k, nil); err != nil {
		t.Fatalf("NaN gaps: %v", err)
	}
	q.Data[q.Strides[1]+2*q.Strides[2]+3] = float32(math.Inf(1))
	_, err := kernels.Attention(context.Background(), be, q, k, k, nil)
	if !errors.Is(err, backend.ErrNonFinite) || !strings.Contains(err.Error(), "[0 1 2 3]") {
		t.Fatalf("Inf inside the view: %v, want ErrNonFinite at [0 1 2 3]", err)
	}
}

// TestStridedHelpers checks that every function reading a tensor's
// elements reads a view as its dense copy.
func TestStridedHelpers(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 8))
	for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16} {
		v := padded(t, rng, dt, kernels.BNHD, []int{2, 3, 2, 5}, []int{1, 2, 1, 3})
		d := dense(t, v)
		if !slices.Equal(v.Float32s(), d.Float32s()) {
			t.Errorf("%v: Float32s of the view differ from the dense copy's", dt)
		}
		for _, to := range []kernels.DType{kernels.Float32, kernels.Float16, kernels.BFloat16} {
			a, err := v.Convert(to)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := d.Convert(to)
			if a.Strides != nil || !slices.Equal(a.Float32s(), b.Float32s()) {
				t.Errorf("%v: Convert(%v) of the view differs from the dense copy's", dt, to)
			}
		}
		var a, b bytes.Buffer
		if err := v.WriteNpy(&a); err != nil {
			t.Fatal(err)
		}
		d.WriteNpy(&b)
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%v: WriteNpy of the view differs from the dense copy's", dt)
		}
		c1, err := kernels.ConcatSeq(v, v)
		if err != nil {
			t.Fatal(err)
		}
		c2, _ := kernels.ConcatSeq(d, d)
		if !slices.Equal(c1.Float32s(), c2.Float32s()) {
			t.Errorf("%v: ConcatSeq of views differs from the dense copies'", dt)
		}
	}
	// Linear.Apply reads x and W through their strides.
	x := padded(t, rng, kernels.Float32, kernels.BHND, []int{4, 6}, []int{2, 3})
	w := padded(t, rng, kernels.Float32, kernels.BHND, []int{6, 3}, []int{1, 2})
	l1, l2 := kernels.Linear{W: w}, kernels.Linear{W: dense(t, w)}
	y1, err := l1.Apply(x)
	if err != nil {
		t.Fatal(err)
	}
	y2, err := l2.Apply(dense(t, x))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(y1.Data, y2.Data) {
		t.Errorf("Linear.Apply of views differs from the dense copies'")
	}
	// A view of a view.
	base := randTensor(rng, kernels.BHND, 3, 4, 5, 6)
	a, _ := base.Slice(1, 1, 3)
	b, _ := a.Slice(2, 2, 5)
	c, _ := b.Slice(3, 0, 6)
	if got := c.Float32s(); len(got) != 3*2*3*6 || got[0] != base.Data[(0*4+1)*30+2*6] {
		t.Errorf("view of a view: %d values, first %v", len(got), got[0])
	}
}

// TestStridedCache appends strided rows and attends with a strided q, on
// a KVCache and a page pool, and compares with dense ones.
func TestStridedCache(t *testing.T) {
	const kvh, d, h, n = 2, 8, 4, 5
	rng := rand.New(rand.NewPCG(26, 9))
	for _, bk := range stridesBackends {
		for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
			t.Run(fmt.Sprintf("%s/%v", bk.name, layout), func(t *testing.T) {
				be := bk.open(t)
				cfg := kernels.CacheConfig{KVHeads: kvh, D: d, Layout: layout}
				kv := padded(t, rng, kernels.Float32, kernels.BNHD, []int{n, kvh, d}, []int{2, 1, 2})
				vv := padded(t, rng, kernels.Float32, kernels.BNHD, []int{n, kvh, d}, []int{1, 2, 0})
				qshape := []int{1, 2, h, d}
				if layout == kernels.BHND {
					qshape = []int{1, h, 2, d}
				}
				qv := padded(t, rng, kernels.Float32, layout, qshape, []int{1, 1, 2, 3})
				before := [][]uint32{storage(kv), storage(vv), storage(qv)}
				outs := make([]*kernels.Tensor, 4)
				for i := range outs {
					outs[i], _ = kernels.NewTensor(layout, qshape...)
				}
				for i, strided := range []bool{true, false} {
					k, v, q := kv, vv, qv
					if !strided {
						k, v, q = dense(t, kv), dense(t, vv), dense(t, qv)
					}
					c, err := kernels.NewKVCache(be, 1, 16, cfg)
					if err != nil {
						t.Fatal(err)
					}
					if err := c.Append(0, k, v); err != nil {
						t.Fatal(err)
					}
					if err := c.Attend(context.Background(), q, outs[i], nil, &kernels.AttendOptions{Causal: true}); err != nil {
						t.Fatal(err)
					}
					c.Release()
					pool, err := kernels.NewPagePool(be, 4, 4, cfg)
					if err != nil {
						t.Fatal(err)
					}
					s := newSeq(t, pool)
					if err := s.Append(k, v); err != nil {
						t.Fatal(err)
					}
					if err := pool.Attend(context.Background(), []*kernels.Seq{s}, q, outs[2+i], nil, &kernels.AttendOptions{Causal: true}); err != nil {
						t.Fatal(err)
					}
					pool.Release()
				}
				for i := 0; i < 4; i += 2 {
					if !slices.Equal(outs[i].Data, outs[i+1].Data) {
						t.Errorf("strided rows and query: %v, dense: %v", outs[i].Data[:4], outs[i+1].Data[:4])
					}
				}
				for i, x := range []*kernels.Tensor{kv, vv, qv} {
					if !slices.Equal(storage(x), before[i]) {
						t.Errorf("the cache changed the storage of input %d", i)
					}
				}
				// A strided output is refused.
				c, _ := kernels.NewKVCache(be, 1, 16, cfg)
				defer c.Release()
				out, _ := kernels.NewTensor(layout, qshape[0], qshape[1], qshape[2], qshape[3]+1)
				view, _ := out.Slice(3, 0, qshape[3])
				if err := c.Attend(context.Background(), qv, view, nil, nil); !errors.Is(err, backend.ErrShape) {
					t.Errorf("Attend into a strided out: %v, want ErrShape", err)
				}
			})
		}
	}
}

// FuzzStridedAttention compares Attention on random views of random
// padded storage with Attention on their dense copies, on the CPU.
func FuzzStridedAttention(f *testing.F) {
	f.Add(uint64(1), uint8(2), uint8(3), uint8(5), uint8(4), uint8(7), false, false)
	f.Add(uint64(2), uint8(1), uint8(1), uint8(1), uint8(1), uint8(1), true, true)
	f.Add(uint64(3), uint8(4), uint8(2), uint8(70), uint8(65), uint8(16), true, false)
	f.Fuzz(func(t *testing.T, seed uint64, b, h, nq, nk, d uint8, bnhd, causal bool) {
		if b > 3 || h > 4 || nq > 80 || nk > 80 || d > 40 || h == 0 || d == 0 {
			t.Skip()
		}
		rng := rand.New(rand.NewPCG(seed, 26))
		layout := kernels.BHND
		if bnhd {
			layout = kernels.BNHD
		}
		shape := func(n int) []int {
			if bnhd {
				return []int{int(b), n, int(h), int(d)}
			}
			return []int{int(b), int(h), n, int(d)}
		}
		grow := func() []int { return []int{rng.IntN(3), rng.IntN(3), rng.IntN(3), rng.IntN(4)} }
		q := padded(t, rng, kernels.Float32, layout, shape(int(nq)), grow())
		k := padded(t, rng, kernels.Float32, layout, shape(int(nk)), grow())
		v := padded(t, rng, kernels.Float32, layout, shape(int(nk)), grow())
		be := openCPU(t)
		opts := &kernels.Options{Causal: causal, LSE: true}
		got, err := kernels.Attention(context.Background(), be, q, k, v, opts)
		if err != nil {
			t.Fatal(err)
		}
		want, err := kernels.Attention(context.Background(), be, dense(t, q), dense(t, k), dense(t, v), opts)
		if err != nil {
			t.Fatal(err)
		}
		sameOut(t, got, want, 1e-6)
	})
}
