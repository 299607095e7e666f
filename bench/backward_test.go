package bench_test

import (
	"context"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/bench"
	"github.com/attn-go/attn/kernels"
)

// TestBackward: a sweep with Backward adds, beside the forward's points,
// a backward point and a forward-and-backward point per shape and dtype,
// counted as Work says (2.5 and 3.5 forwards), each run again from its
// PointSpec as Subprocess would; an 8-bit dtype, which the backward pass
// does not take, and a backend without one make them unavailable.
func TestBackward(t *testing.T) {
	if bench.Work(bench.StrategyBackward) != 2.5 || bench.Work(bench.StrategyFwdBwd) != 3.5 || bench.Work("fused") != 1 {
		t.Fatalf("Work: %v %v %v", bench.Work(bench.StrategyBackward), bench.Work(bench.StrategyFwdBwd), bench.Work("fused"))
	}
	be := openCPU(t)
	cfg := tiny()
	cfg.Ns, cfg.Causal, cfg.Heads, cfg.KVHeads, cfg.Dims = []int{96}, []bool{true}, []int{4}, []int{2}, []int{16}
	cfg.Strategies = []kernels.Strategy{kernels.Fused}
	cfg.DTypes = []backend.DType{backend.Float32, backend.BFloat16, backend.Q8}
	cfg.Backward = true
	points, err := bench.Run(context.Background(), cfg, []backend.Backend{be, noBackward{be}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, pt := range points {
		if pt.Strategy == "fused" {
			continue
		}
		seen[pt.Strategy]++
		want := bench.StatusOK
		if pt.DType == "q8" || pt.Impl != "attn-cpu" {
			want = bench.StatusUnavailable
		}
		if pt.Status != want {
			t.Errorf("%s %s %s: %s %s, want %s", pt.Impl, pt.Strategy, pt.DType, pt.Status, pt.Error, want)
			continue
		}
		if want != bench.StatusOK {
			continue
		}
		if pt.Runs == 0 || pt.MedianS <= 0 {
			t.Errorf("%s %s: %d runs, median %v", pt.Strategy, pt.DType, pt.Runs, pt.MedianS)
		}
		if got, want := pt.GFLOPS*pt.MedianS*1e9, bench.Flops(pt.Problem())*bench.Work(pt.Strategy); got < want*0.999 || got > want*1.001 {
			t.Errorf("%s %s: %v flops counted, want %v", pt.Strategy, pt.DType, got, want)
		}
		spec := bench.PointSpec{Backend: "cpu", Strategy: pt.Strategy, Shape: pt.Shape, Seed: cfg.Seed, Budget: cfg.Budget, MinRuns: 2}
		if again := bench.MeasurePoint(context.Background(), be, jsonRoundTrip(t, spec)); again.Status != bench.StatusOK || again.Strategy != pt.Strategy {
			t.Errorf("%s %s from its spec: %s %s", pt.Strategy, pt.DType, again.Status, again.Error)
		}
	}
	if seen[bench.StrategyBackward] != 6 || seen[bench.StrategyFwdBwd] != 6 {
		t.Errorf("backward points: %v, want 6 of each (3 dtypes, 2 backends)", seen)
	}
}

// noBackward hides a backend's backward pass (and renames it, so that a
// sweep can hold it beside the backend itself).
type noBackward struct{ backend.Backend }

func (noBackward) Name() string { return "cpu-nobackward" }
