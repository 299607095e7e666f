package bench_test

import (
	"context"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/kernels"
)

// TestTopK: a sparse point's lists name, for each query row, TopK
// distinct keys it may see by position (all of them when fewer), sorted,
// −1 after them, the same from one call to the next; Flops counts the
// named pairs and Bytes the named rows; the sweep runs on every dtype
// (the point checked against the reference, after a round trip through
// a PointSpec), peers report it unavailable, and a top-k with a prefix
// or below 0 is refused.
func TestTopK(t *testing.T) {
	for _, s := range []bench.Shape{
		{B: 1, H: 4, KVHeads: 2, N: 300, Nq: 1, D: 32, TopK: 40},
		{B: 2, H: 2, KVHeads: 2, N: 90, Nq: 90, D: 16, TopK: 20, Causal: true},
		{B: 1, H: 2, KVHeads: 1, N: 50, Nq: 3, D: 16, TopK: 60},
		{B: 1, H: 2, KVHeads: 1, N: 64, Nq: 1, D: 16, TopK: 50}, // more than half: the keys left out are drawn
	} {
		p := s.Problem()
		ix := p.Indices
		if ix == nil || ix.Heads != 1 || ix.PerRow != s.TopK {
			t.Fatalf("%+v: index list %+v", s, ix)
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		if again := s.Problem().Indices; !slices.Equal(again.Idx, ix.Idx) {
			t.Fatalf("%+v: a second call drew other keys", s)
		}
		pairs := 0
		for b := range p.B {
			for i := range p.Nq {
				lo, hi := p.KeyRange(b, i)
				row := ix.Idx[p.IndexOffset(b, 0, i):][:ix.PerRow]
				n := min(ix.PerRow, hi-lo)
				pairs += n
				for tt, j := range row {
					switch {
					case tt >= n && j != -1:
						t.Fatalf("%+v: row %d,%d entry %d is %d past its %d keys, want −1", s, b, i, tt, j, n)
					case tt < n && (int(j) < lo || int(j) >= hi || tt > 0 && j <= row[tt-1]):
						t.Fatalf("%+v: row %d,%d: %v is not %d sorted distinct keys of [%d, %d)", s, b, i, row, n, lo, hi)
					}
				}
			}
		}
		if want := float64(pairs*s.H) * 2 * float64(2*s.D); bench.Flops(p) != want {
			t.Errorf("%+v: Flops = %v, want %v", s, bench.Flops(p), want)
		}
		dense := p
		dense.Indices = nil
		if s.TopK < s.N && s.Nq == 1 && bench.Bytes(p, false) >= bench.Bytes(dense, false) {
			t.Errorf("%+v: Bytes = %d, not below the dense %d", s, bench.Bytes(p, false), bench.Bytes(dense, false))
		}
	}

	be := openCPU(t)
	cfg := tiny()
	cfg.Ns, cfg.Nqs, cfg.Causal, cfg.Heads, cfg.KVHeads, cfg.Dims = []int{200}, []int{1, 5}, []bool{true}, []int{4}, []int{2}, []int{32}
	cfg.TopK = 24
	cfg.DTypes = []backend.DType{backend.Float32, backend.Float16, backend.Q8, backend.FP8}
	for _, pt := range runAndRespec(t, be, cfg) {
		if pt.Strategy == "staged" {
			if pt.Status == bench.StatusOK {
				t.Errorf("staged %s ran an index list", pt.DType)
			}
			continue
		}
		if pt.Status != bench.StatusOK || pt.MaxErr == nil || pt.CheckedRows == 0 || pt.TopK != 24 {
			t.Errorf("fused %s: %s %s, max error %v over %d rows, shape %+v", pt.DType, pt.Status, pt.Error, pt.MaxErr, pt.CheckedRows, pt.Shape)
		}
	}
	// TopKs: every shape at each value, 0 the dense one, side by side.
	both := cfg
	both.TopKs, both.DTypes, both.Nqs = []int{0, 24}, []backend.DType{backend.Float16}, []int{1}
	both.Strategies = []kernels.Strategy{kernels.Fused}
	pts, err := bench.Run(context.Background(), both, []backend.Backend{be}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || pts[0].TopK != 0 || pts[1].TopK != 24 || pts[0].Status != bench.StatusOK || pts[1].Status != bench.StatusOK {
		t.Errorf("TopKs 0, 24: points %+v", pts)
	}
	for _, bad := range []func(c *bench.Config){
		func(c *bench.Config) { c.TopK = -1 },
		func(c *bench.Config) { c.TopKs = []int{0, -2} },
		func(c *bench.Config) { c.Prefix = 100 },
	} {
		c := cfg
		bad(&c)
		if _, err := bench.Run(context.Background(), c, []backend.Backend{be}, nil); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
