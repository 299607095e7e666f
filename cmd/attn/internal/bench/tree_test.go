package bench_test

import (
	"context"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/kernels"
)

// A tree sweep measures, for each shape and backend, the causal chunk
// and the tree, each checked against the float64 reference under its
// mask; Nq is the tree's tokens whatever -nq says, and a tree beside a
// top-k is refused.
func TestRunTree(t *testing.T) {
	be := openCPU(t)
	cfg := bench.Config{Ns: []int{300}, Nqs: []int{1}, Batches: []int{2}, Heads: []int{4}, KVHeads: []int{2}, Dims: []int{32},
		Causal: []bool{true}, DTypes: []kernels.DType{kernels.Float32, kernels.Q8}, Strategies: []kernels.Strategy{kernels.Fused},
		Tree: 9, Budget: 1, MinRuns: 1, Seed: 3}

	points, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 4 {
		t.Fatalf("%d points, want 4 (chunk and tree in f32 and q8)", len(points))
	}
	for i, pt := range points {
		if pt.Status != bench.StatusOK || pt.Tree != 9 || pt.TreeChunk != (i%2 == 0) || pt.Nq != 9 || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-5) {
			t.Errorf("point %d: %+v", i, pt)
		}
	}
	cfg.TopK = 5
	if _, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil); err == nil {
		t.Error("a tree beside a top-k ran")
	}
}
