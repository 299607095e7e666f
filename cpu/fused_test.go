package cpu

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// fuzzProblem derives a small valid problem, mask shapes, tiles and thread
// count from arbitrary bits. Every input maps to a valid case: sizes are
// taken modulo small ranges rather than rejected.
func fuzzProblem(bits uint64) (p backend.Problem, bias, keep *[4]int, tq, tk, threads int, withLSE bool) {
	take := func(n uint64) int {
		v := int(bits % n)
		bits /= n
		return v
	}
	p.B = take(3)
	p.KVHeads = 1 + take(3)
	p.H = p.KVHeads * (1 + take(3))
	p.Nq = take(41)
	p.Nk = take(41)
	p.D = 1 + take(9)
	p.Dv = 1 + take(9)
	if take(4) == 0 {
		p.D, p.Dv = 40, 24
	}
	p.Layout = backend.Layout(take(2))
	p.Causal = take(2) == 1
	p.Scale = []float32{1, 0.25, float32(1 / math.Sqrt(float64(p.D))), 3}[take(4)]
	full := [4]int{p.B, p.H, p.Nq, p.Nk}
	shape := func() *[4]int {
		sel := take(32)
		if sel >= 16 {
			return nil
		}
		var s [4]int
		for d := range s {
			s[d] = 1
			if sel&(1<<d) != 0 {
				s[d] = full[d]
			}
		}
		return &s
	}
	bias, keep = shape(), shape()
	tq, tk = 1+take(9), 1+take(9)
	if take(4) == 0 {
		// Tiles as wide as the micro-kernels' blocks (8×32 and 6×16),
		// so that the Gemms' band skips some of them.
		tq, tk = 6+take(35), 16+take(25)
	}
	threads = 1 + take(3)
	withLSE = take(2) == 1
	return
}

// fuzzVariants sets p's variants from bits: each of the causal offset,
// window, softcap, ALiBi, sinks and key lengths is on for about half the
// inputs, with values that reach empty rows, bands narrower than a tile
// and key lengths from 0 to Nk.
func fuzzVariants(p *backend.Problem, bits uint64) {
	take := func(n uint64) int {
		v := int(bits % n)
		bits /= n
		return v
	}
	v := &p.Variants
	if take(2) == 1 {
		off := take(2*41+1) - 41
		v.CausalOffset = &off
	}
	if take(2) == 1 {
		v.Window = &backend.Window{Left: take(12) - 1, Right: take(12) - 1}
	}
	if take(2) == 1 {
		v.Softcap = []float32{0.1, 1, 5, 50}[take(4)]
	}
	vec := func(r float64) []float32 {
		x := make([]float32, p.H)
		for h := range x {
			x[h] = float32(r * (float64(take(9)) - 4) / 4)
		}
		return x
	}
	if take(2) == 1 {
		v.ALiBi = vec(1)
	}
	if take(2) == 1 {
		v.Sinks = vec(4)
	}
	if take(2) == 1 {
		v.KVLens = make([]int, p.B)
		for b := range v.KVLens {
			v.KVLens[b] = take(uint64(p.Nk) + 1)
		}
	}
}

// fuzzDTypes draws the dtypes of Q, K, V, O and the bias from bits
// (mixed through a multiplication, since the other draws read the same
// bits' low digits): all Float32 for a third of the inputs, and otherwise
// each operand's own.
func fuzzDTypes(bits uint64) backendtest.DTypes {
	bits = (bits * 0x9e3779b97f4a7c15) >> 20
	if bits%3 == 0 {
		return backendtest.DTypes{}
	}
	bits /= 3
	pick := func() backend.DType {
		t := backend.DTypes[bits%3]
		bits /= 3
		return t
	}
	return backendtest.DTypes{Q: pick(), K: pick(), V: pick(), O: pick(), Bias: pick()}
}

func FuzzFused(f *testing.F) {
	for _, seed := range []uint64{0, 1, 7, 12345, 1 << 20, 0xdeadbeef, 0x0123456789abcdef, math.MaxUint64, 0x5555555555555555} {
		f.Add(seed, seed^0x9e3779b97f4a7c15, seed*0x2545f4914f6cdd1d)
	}
	f.Fuzz(func(t *testing.T, shape, seed, variants uint64) {
		p, bias, keep, tq, tk, threads, withLSE := fuzzProblem(shape)
		fuzzVariants(&p, variants)
		// Query tiles run as sub-tiles of any height sharing each key tile.
		sub := 1 + int(variants>>40)%tq
		be, err := New(WithTile(tq, tk), WithSubTile(sub), WithThreads(threads))
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close()
		c := backendtest.RandomCase(rand.New(rand.NewPCG(seed, shape)), p, bias, keep)
		c = c.WithDTypes(fuzzDTypes(seed ^ variants))
		if err := backendtest.RunFused(context.Background(), be, c, withLSE); err != nil {
			t.Fatalf("tiles %d×%d, sub-tiles of %d rows, %d threads: %v", tq, tk, sub, threads, err)
		}
	})
}

// fusedAlloc runs one fused problem of n×n keys and returns the bytes the
// call allocated and the output.
func fusedAlloc(t *testing.T, n, d int, causal bool) (uint64, []float32, []float32) {
	t.Helper()
	be := newBackend(t)
	p := backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: n, Nk: n, D: d, Dv: d, Scale: float32(1 / math.Sqrt(float64(d))), Causal: causal}
	rng := rand.New(rand.NewPCG(11, 12))
	data := make([]float32, n*d)
	for i := range data {
		data[i] = float32(2*rng.Float64() - 1)
	}
	q, _ := upload(be, data)
	k, _ := upload(be, data)
	v, _ := upload(be, data)
	o, _ := be.Alloc(backend.Float32, n*d)
	lse, _ := be.Alloc(backend.Float32, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := be.Fused(context.Background(), backend.FusedParams{Problem: p}, q, k, v, o, lse); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	got := make([]float32, n*d)
	be.Read(got, o, 0)
	return after.TotalAlloc - before.TotalAlloc, got, data
}

// checkSelfAttention compares a few rows of O = softmax(X·Xᵀ·scale)·X
// (Q = K = V = X, d columns) with a float64 computation.
func checkSelfAttention(t *testing.T, got, x []float32, n, d int, causal bool) {
	t.Helper()
	scale := 1 / math.Sqrt(float64(d))
	for _, i := range []int{0, 1, n / 2, n - 1} {
		lim := n
		if causal {
			lim = i + 1
		}
		s := make([]float64, lim)
		m := math.Inf(-1)
		for j := range lim {
			for c := range d {
				s[j] += float64(x[i*d+c]) * float64(x[j*d+c])
			}
			s[j] *= scale
			m = max(m, s[j])
		}
		var l float64
		for j := range s {
			s[j] = math.Exp(s[j] - m)
			l += s[j]
		}
		for c := range d {
			var want float64
			for j := range s {
				want += s[j] * float64(x[j*d+c])
			}
			want /= l
			if g := float64(got[i*d+c]); backendtest.Exceeds(math.Abs(g-want), backendtest.Tol) {
				t.Fatalf("O[%d, %d] = %v, want %v", i, c, g, want)
			}
		}
	}
}

// TestFusedMemory checks that Fused allocates O(N), not O(N²): at
// N = 4096 the scores alone would be 64 MiB.
func TestFusedMemory(t *testing.T) {
	const n, d = 4096, 64
	alloc, got, x := fusedAlloc(t, n, d, true)
	t.Logf("fused N=%d D=%d allocated %d bytes", n, d, alloc)
	if alloc > 16<<20 {
		t.Errorf("fused N=%d allocated %d bytes, want < 16 MiB (N²·4 = %d)", n, alloc, n*n*4)
	}
	checkSelfAttention(t, got, x, n, d, true)
}

// TestFusedMemoryLong is TestFusedMemory at N = 32768, where the scores
// would take 4 GiB. It takes about half a minute; set ATTN_LONG=1.
func TestFusedMemoryLong(t *testing.T) {
	if testing.Short() || os.Getenv("ATTN_LONG") == "" {
		t.Skip("N=32768 takes ~30 s; set ATTN_LONG=1 to run it")
	}
	const n, d = 32768, 64
	alloc, got, x := fusedAlloc(t, n, d, false)
	t.Logf("fused N=%d D=%d allocated %d bytes", n, d, alloc)
	if alloc > 64<<20 {
		t.Errorf("fused N=%d allocated %d bytes, want < 64 MiB (N²·4 = %d)", n, alloc, n*n*4)
	}
	checkSelfAttention(t, got, x, n, d, false)
}

// The default tiles' edges, with the BLAS the build has: query and key
// counts one either side of DefaultTiles and of DefaultSubTile, odd and
// even head dims, GQA, causal or not.
func TestFusedDefaultTileEdges(t *testing.T) {
	be := newBackend(t)
	tq, tk := DefaultTiles()
	sub := DefaultSubTile()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range [][3]int{
		{tq - 1, tk + 1, 33}, {tq, tk, 64}, {tq + 1, tk - 1, 64},
		{sub - 1, 2*tk + 1, 64}, {sub + 1, tk - 1, 33},
	} {
		nq, nk, d := n[0], n[1], n[2]
		for _, causal := range []bool{false, true} {
			p := backend.Problem{B: 1, H: 2, KVHeads: 1, Nq: nq, Nk: nk, D: d, Dv: d,
				Scale: float32(1 / math.Sqrt(float64(d))), Causal: causal}
			c := backendtest.RandomCase(rng, p, nil, nil)
			if err := backendtest.RunFused(context.Background(), be, c, true); err != nil {
				t.Fatalf("tiles %d×%d, sub-tiles %d, Nq=%d Nk=%d D=%d causal=%v: %v", tq, tk, sub, nq, nk, d, causal, err)
			}
		}
	}
}

// Items that take every KV head on the Gemms' path (fused.mh > 1: BNHD
// K and V, 17 … 128 query rows a head), whose half K and V tiles are
// widened for every head at once (wideHeads), against the float64
// reference: contiguous and paged (pages of 32, 256 and 300 keys: tiles
// within a page, across pages, and a page's end inside a tile), key
// counts around the tile (gemmHeadsTileK ± 1), causal or not, KV heads
// 2 and 3, head dims 64 and 40 (V's 24), every storage dtype (the
// float32 and 8-bit ones read row by row).
func TestFusedHeadsInterleaved(t *testing.T) {
	be := newBackend(t)
	rng := rand.New(rand.NewPCG(31, 32))
	dts := append(slices.Clone(backend.DTypes), backend.Quants...)
	for _, c := range []struct {
		kvh, g, nq, nk, d, dv, page int
		causal                      bool
	}{
		{2, 4, 5, gemmHeadsTileK + 1, 64, 64, 0, false},
		{3, 2, 12, gemmHeadsTileK - 1, 40, 24, 0, true},
		{2, 4, 8, 2*gemmHeadsTileK + 7, 64, 64, 256, true},
		{3, 8, 3, 700, 64, 64, 300, false},
		{2, 6, 4, 150, 32, 32, 32, true},
	} {
		for _, dt := range dts {
			name := fmt.Sprintf("%v/kvh=%d/g=%d/nq=%d/nk=%d/d=%d/page=%d/causal=%v", dt, c.kvh, c.g, c.nq, c.nk, c.d, c.page, c.causal)
			t.Run(name, func(t *testing.T) {
				p := backend.Problem{B: 2, H: c.kvh * c.g, KVHeads: c.kvh, Nq: c.nq, Nk: c.nk, D: c.d, Dv: c.dv,
					Scale: float32(1 / math.Sqrt(float64(c.d))), Causal: c.causal, Layout: backend.BNHD}
				if c.page > 0 {
					p = backendtest.PagedProblem(p, c.page, 2, []int{c.nk, c.nk - 9}, false)
				}
				if rows := c.nq * c.g; rows <= decodeRows || rows > gemmHeadsRows {
					t.Fatalf("%d rows a head: not the heads' Gemm path", rows)
				}
				cs := backendtest.RandomCase(rng, p, nil, nil).WithDTypes(backendtest.DTypes{Q: backend.Float32, K: dt, V: dt})
				if err := backendtest.RunFused(context.Background(), be, cs, true); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
