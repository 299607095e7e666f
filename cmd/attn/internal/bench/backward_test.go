package bench_test

import (
	"context"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/kernels"
)

// TestBackward: a sweep with Backward adds, beside the forward's points,
// a backward point and a forward-and-backward point per shape and dtype,
// counted as Work says (2.5 and 3.5 forwards), their bytes those the
// backward reads and writes, their gradients checked, each run again from its
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
		// The bytes the backward reads and writes: Q, O, dO and dQ of
		// 4·96 rows of 16, K, V, dK and dV of 2·96, in the dtype, and
		// the float32 LSE of 4·96; with the forward, Q, K and V read
		// again and O and the LSE written.
		size := int64(4)
		if pt.DType == "bf16" {
			size = 2
		}
		q, kv, lse := 4*96*16*size, 2*96*16*size, int64(4*96*4)
		wantBytes := 4*q + 4*kv + lse
		if pt.Strategy == bench.StrategyFwdBwd {
			wantBytes += 2*q + 2*kv + lse
		}
		if pt.Bytes != wantBytes || pt.GBPS*pt.MedianS*1e9 < float64(wantBytes)*0.999 {
			t.Errorf("%s %s: %d bytes at %v GB/s, want %d", pt.Strategy, pt.DType, pt.Bytes, pt.GBPS, wantBytes)
		}
		// Every point is checked: the whole of the last KV group here
		// (2 heads of 96 rows), within the documented bound.
		if pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 2e-2) || pt.CheckedRows != 2*96 {
			t.Errorf("%s %s: max err %v over %d rows, want one within 2e-2 over %d", pt.Strategy, pt.DType, pt.MaxErr, pt.CheckedRows, 2*96)
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
