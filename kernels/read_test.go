package kernels_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// readBound is how far a stored value may lie from the float32 x that
// was appended, derived from each dtype's definition, not from attn's
// encoders: amax is the largest magnitude of x's block of 32 along the
// row (q8, q4) and s its head's scale (fp8).
func readBound(dt kernels.DType, x, amax, s float64) float64 {
	switch dt {
	case kernels.Float16: // 10 fraction bits; subnormal spacing 2⁻²⁴
		return math.Max(math.Abs(x)*0x1p-11, 0x1p-25)
	case kernels.BFloat16: // 7 fraction bits
		return math.Abs(x) * 0x1p-8
	case backend.Q8: // d = amax/127 held as a float16: half a step, plus 127 codes of d's rounding
		d := amax / 127
		return d/2 + 127*d*0x1p-11
	case backend.Q4: // d = amax/8 held as a float16: codes −8 … 7, so −amax's opposite is a full step off
		d := amax / 8
		return d + 8*d*0x1p-11
	case backend.FP8: // E4M3: 3 fraction bits; subnormal spacing 2⁻⁹
		return s * math.Max(math.Abs(x/s)*0x1p-4, 0x1p-10)
	}
	return 0 // float32 is exact
}

// checkRead holds got, what a cache read back, to want, the rows that
// were appended ([n, heads, dim]), within readBound of each value.
func checkRead(t *testing.T, what string, dt kernels.DType, got, want *kernels.Tensor, scales []float32) {
	t.Helper()
	if !slices.Equal(got.Shape, want.Shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, want.Shape)
	}
	if got.DType != kernels.Float32 {
		t.Fatalf("%s: dtype %v, want float32", what, got.DType)
	}
	w := want.Float32s()
	heads, dim := want.Shape[1], want.Shape[2]
	bad := 0
	for row := 0; row < len(w); row += dim {
		g, s := row/dim%heads, 1.0
		if scales != nil {
			s = float64(scales[g])
		}
		for b0 := 0; b0 < dim; b0 += 32 {
			block := w[row+b0 : row+min(b0+32, dim)]
			amax := 0.0
			for _, x := range block {
				amax = math.Max(amax, math.Abs(float64(x)))
			}
			for j, x := range block {
				i := row + b0 + j
				if d := math.Abs(float64(got.Data[i]) - float64(x)); !(d <= readBound(dt, float64(x), amax, s)) {
					if bad++; bad <= 3 {
						t.Errorf("%s: element %d (row %d, head %d, col %d): read %g, appended %g (off by %g, bound %g)",
							what, i, row/dim/heads, g, b0+j, got.Data[i], x, d, readBound(dt, float64(x), amax, s))
					}
				}
			}
		}
	}
}

// cat joins row tensors [n, heads, dim] along n, in float32.
func cat(ts ...*kernels.Tensor) *kernels.Tensor {
	out := &kernels.Tensor{Shape: slices.Clone(ts[0].Shape)}
	out.Shape[0] = 0
	for _, x := range ts {
		out.Data = append(out.Data, x.Float32s()...)
		out.Shape[0] += x.Shape[0]
	}
	return out
}

// firstCols is x's first n columns, [rows, heads, n].
func firstCols(x *kernels.Tensor, n int) *kernels.Tensor {
	dim := x.Shape[2]
	out := &kernels.Tensor{Shape: []int{x.Shape[0], x.Shape[1], n}}
	for r := 0; r < len(x.Data); r += dim {
		out.Data = append(out.Data, x.Data[r:r+n]...)
	}
	return out
}

// Read gives back what each cache holds, in every storage dtype and
// layout, for sequences that cross pages mid-page, share pages with a
// fork, were truncated, or are empty, on every backend: each value
// within its dtype's bound of what was appended, the GPU's bits the
// CPU's, and V from K's columns of K.
func TestCacheRead(t *testing.T) {
	const kvh, page = 2, 4
	type result struct{ k, v []*kernels.Tensor }
	cases := []struct {
		dt      kernels.DType
		d, dv   int
		vFromK  int
		kScales []float32
	}{
		{kernels.Float32, 33, 17, 0, nil},
		{kernels.Float16, 33, 17, 0, nil},
		{kernels.BFloat16, 8, 8, 0, nil},
		{backend.Q8, 40, 33, 0, nil},
		{backend.Q8, 64, 0, 24, nil},
		{backend.Q4, 40, 33, 0, nil},
		{backend.FP8, 33, 17, 0, []float32{0.5, 3}},
		{kernels.Float32, 1, 1, 0, nil},
	}
	results := map[string]result{}
	for _, bk := range onnxBackends {
		be := bk.open(t)
		for _, c := range cases {
			for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
				name := fmt.Sprintf("%v/D=%d/Dv=%d/VFromK=%d/%v", c.dt, c.d, c.dv, c.vFromK, layout)
				t.Run(bk.name+"/"+name, func(t *testing.T) {
					if c.dt.Half() && !be.Caps().Half {
						t.Skipf("the %s backend stores no halves", bk.name)
					}
					cfg := kernels.CacheConfig{KVHeads: kvh, D: c.d, Dv: c.dv, DType: c.dt, Layout: layout, VFromK: c.vFromK, KScale: c.kScales}
					if c.vFromK > 0 {
						cfg.Dv = 0
					}
					if c.kScales != nil {
						cfg.VScale = []float32{2, 0.25}
					}
					dv := c.dv
					if c.vFromK > 0 {
						dv = c.vFromK
					}
					rng := rand.New(rand.NewPCG(7, uint64(c.d)))
					kv := func(n int) (*kernels.Tensor, *kernels.Tensor) {
						k := rows(rng, kernels.Float32, n, kvh, c.d)
						if c.vFromK > 0 {
							return k, nil
						}
						return k, rows(rng, kernels.Float32, n, kvh, c.dv)
					}
					vOf := func(k, v *kernels.Tensor) *kernels.Tensor {
						if c.vFromK > 0 {
							return firstCols(k, c.vFromK)
						}
						return v
					}
					pool, err := kernels.NewPagePool(be, page, 8, cfg)
					if err != nil {
						t.Fatal(err)
					}
					defer pool.Release()
					a := newSeq(t, pool)
					k1, v1 := kv(5)
					k2, v2 := kv(4)
					for _, x := range [][2]*kernels.Tensor{{k1, v1}, {k2, v2}} {
						if err := a.Append(x[0], x[1]); err != nil {
							t.Fatal(err)
						}
					}
					b, err := a.Fork()
					if err != nil {
						t.Fatal(err)
					}
					k3, v3 := kv(2)
					if err := b.Append(k3, v3); err != nil { // copies the shared last page, 1 of 4 rows full
						t.Fatal(err)
					}
					if err := a.Truncate(6); err != nil {
						t.Fatal(err)
					}
					empty := newSeq(t, pool)
					var res result
					vScales := cfg.VScale
					if c.vFromK > 0 {
						vScales = cfg.KScale
					}
					for _, s := range []struct {
						what string
						seq  *kernels.Seq
						k, v *kernels.Tensor
					}{
						{"truncated", a, cat(k1, k2), cat(vOf(k1, v1), vOf(k2, v2))},
						{"fork", b, cat(k1, k2, k3), cat(vOf(k1, v1), vOf(k2, v2), vOf(k3, v3))},
					} {
						gk, gv, err := s.seq.Read()
						if err != nil {
							t.Fatalf("%s: %v", s.what, err)
						}
						n := s.seq.Len()
						wk, wv := s.k, s.v
						wk.Shape[0], wv.Shape[0] = n, n
						wk.Data, wv.Data = wk.Data[:n*kvh*c.d], wv.Data[:n*kvh*dv]
						checkRead(t, s.what+" K", c.dt, gk, wk, cfg.KScale)
						checkRead(t, s.what+" V", c.dt, gv, wv, vScales)
						if c.vFromK > 0 && !slices.Equal(gv.Data, firstCols(gk, c.vFromK).Data) {
							t.Errorf("%s: V from K is not K's first %d columns", s.what, c.vFromK)
						}
						res.k, res.v = append(res.k, gk), append(res.v, gv)
					}
					gk, gv, err := empty.Read()
					if err != nil || gk.Shape[0] != 0 || gv.Shape[0] != 0 || gk.Shape[2] != c.d || gv.Shape[2] != dv {
						t.Errorf("empty sequence: read %v and %v, %v; want [0 %d %d] and [0 %d %d]", gk.Shape, gv.Shape, err, kvh, c.d, kvh, dv)
					}

					cache, err := kernels.NewKVCache(be, 3, 11, cfg)
					if err != nil {
						t.Fatal(err)
					}
					defer cache.Release()
					k4, v4 := kv(7)
					if err := cache.Append(1, k4, v4); err != nil {
						t.Fatal(err)
					}
					gk, gv, err = cache.Read(1)
					if err != nil {
						t.Fatal(err)
					}
					checkRead(t, "cache K", c.dt, gk, k4, cfg.KScale)
					checkRead(t, "cache V", c.dt, gv, vOf(k4, v4), vScales)
					res.k, res.v = append(res.k, gk), append(res.v, gv)
					if gk, _, err := cache.Read(2); err != nil || gk.Shape[0] != 0 {
						t.Errorf("an empty sequence of the cache: %v, %v", gk, err)
					}
					for _, seq := range []int{-1, 3} {
						if _, _, err := cache.Read(seq); !errors.Is(err, backend.ErrShape) {
							t.Errorf("Read(%d) of a cache of 3: %v, want ErrShape", seq, err)
						}
					}
					if prev, ok := results[name]; ok {
						for i := range res.k {
							if !slices.Equal(bitsOf(prev.k[i]), bitsOf(res.k[i])) || !slices.Equal(bitsOf(prev.v[i]), bitsOf(res.v[i])) {
								t.Errorf("read %d: the %s backend's values differ from the CPU's", i, bk.name)
							}
						}
					} else {
						results[name] = res
					}
					cache.Release()
					if _, _, err := cache.Read(1); !errors.Is(err, backend.ErrReleased) {
						t.Errorf("Read of a released cache: %v, want ErrReleased", err)
					}
					pool.Release()
					if _, _, err := b.Read(); !errors.Is(err, backend.ErrReleased) {
						t.Errorf("Read of a released pool's sequence: %v, want ErrReleased", err)
					}
				})
			}
		}
	}
}

// bitsOf is x's values' bits, so that NaN compares equal to itself.
func bitsOf(x *kernels.Tensor) []uint32 {
	out := make([]uint32, len(x.Data))
	for i, f := range x.Data {
		out[i] = math.Float32bits(f)
	}
	return out
}
