package bench_test

import (
	"context"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
)

// TestRandomBlocks: a block-sparse point's mask keeps about its density
// of blocks and every query block's diagonal block, the same from one
// call to the next; Flops counts the pairs in the blocks that are on;
// the sweep runs every dtype against the reference after a round trip
// through a PointSpec; a bad density, or blocks beside top-k, is
// refused.
func TestRandomBlocks(t *testing.T) {
	s := bench.Shape{B: 1, H: 2, KVHeads: 2, N: 1000, Nq: 1000, D: 16, BlockSize: 50, BlockDensity: 0.2}
	p := s.Problem()
	bm := p.Blocks
	if bm == nil || bm.Size != 50 || bm.Shape != [4]int{1, 1, 20, 20} {
		t.Fatalf("block mask %+v", bm)
	}
	on := 0
	for bi := range 20 {
		if !bm.Keep[bi*20+bi] {
			t.Errorf("query block %d's diagonal block is off", bi)
		}
		for bj := range 20 {
			if bm.Keep[bi*20+bj] {
				on++
			}
		}
	}
	if on < 60 || on > 140 {
		t.Errorf("%d of 400 blocks on at density 0.2 (with the 20 diagonal ones)", on)
	}
	if again := s.Problem().Blocks; again.Keep == nil || len(again.Keep) != len(bm.Keep) || func() bool {
		for i := range again.Keep {
			if again.Keep[i] != bm.Keep[i] {
				return true
			}
		}
		return false
	}() {
		t.Errorf("a second call drew another mask")
	}
	if want := float64(on*50*50*s.H) * 2 * float64(2*s.D); bench.Flops(p) != want {
		t.Errorf("Flops = %v, want %v", bench.Flops(p), want)
	}

	be := openCPU(t)
	cfg := tiny()
	cfg.Ns, cfg.Causal, cfg.Heads, cfg.KVHeads, cfg.Dims = []int{130}, []bool{false, true}, []int{4}, []int{2}, []int{32}
	cfg.BlockSize, cfg.BlockDensity = 32, 0.3
	cfg.DTypes = []backend.DType{backend.Float32, backend.Float16, backend.Q8}
	for _, pt := range runAndRespec(t, be, cfg) {
		if pt.Strategy == "staged" {
			if pt.Status == bench.StatusOK {
				t.Errorf("staged %s ran a block mask", pt.DType)
			}
			continue
		}
		if pt.Status != bench.StatusOK || pt.MaxErr == nil || pt.CheckedRows == 0 || pt.BlockSize != 32 {
			t.Errorf("fused %s: %s %s, max error %v over %d rows, shape %+v", pt.DType, pt.Status, pt.Error, pt.MaxErr, pt.CheckedRows, pt.Shape)
		}
	}
	for _, bad := range []func(c *bench.Config){
		func(c *bench.Config) { c.BlockDensity = 1.5 },
		func(c *bench.Config) { c.TopK = 5 },
	} {
		c := cfg
		bad(&c)
		if _, err := bench.Run(context.Background(), c, []backend.Backend{be}, nil); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
