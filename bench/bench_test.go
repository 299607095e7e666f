package bench_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/bench"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

func TestFlops(t *testing.T) {
	for _, c := range []struct {
		p    backend.Problem
		want float64
	}{
		{backend.Problem{B: 1, H: 8, KVHeads: 8, Nq: 1024, Nk: 1024, D: 64, Dv: 64}, 4 * 8 * 1024 * 1024 * 64},
		{backend.Problem{B: 2, H: 1, KVHeads: 1, Nq: 3, Nk: 5, D: 4, Dv: 2}, 2 * 3 * 5 * (2*4 + 2*2)},
		// Causal, Nq = Nk = 4: 1+2+3+4 = 10 attended pairs.
		{backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 4, Nk: 4, D: 8, Dv: 8, Causal: true}, 10 * 32},
		// Causal decode: one query sees all 6 keys.
		{backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 6, D: 8, Dv: 8, Causal: true}, 6 * 32},
	} {
		if got := bench.Flops(c.p); got != c.want {
			t.Errorf("Flops(%+v) = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestRun(t *testing.T) {
	be, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	cfg := bench.Config{
		Ns: []int{16, 64}, B: 1, H: 2, KVHeads: 1, D: 8, Causal: true,
		Strategies: []kernels.Strategy{kernels.Fused, kernels.Staged},
		Budget:     time.Millisecond, MinRuns: 3, Seed: 1,
	}
	var reported int
	points, err := bench.Run(context.Background(), be, cfg, func(bench.Point) { reported++ })
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 4 || reported != 4 {
		t.Fatalf("%d points, %d reported; want 4", len(points), reported)
	}
	for _, pt := range points {
		if pt.Err != nil || pt.Runs < 3 || pt.Median <= 0 || pt.Min > pt.Median || pt.Median > pt.Max || pt.GFLOPS <= 0 {
			t.Errorf("bad point %+v", pt)
		}
	}
	var buf bytes.Buffer
	if err := bench.WriteTable(&buf, points); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), "\n"); got != 6 {
		t.Errorf("table has %d lines, want header + 4 rows + note:\n%s", got, buf.String())
	}
}

func TestRunReportsFailures(t *testing.T) {
	be, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	// A staged point whose scores overflow int is reported, not dropped.
	cfg := bench.Config{Ns: []int{1 << 31}, B: 1 << 20, H: 1, D: 1, Strategies: []kernels.Strategy{kernels.Staged}, MinRuns: 1}
	points, err := bench.Run(context.Background(), be, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 1 || points[0].Err == nil {
		t.Fatalf("points %+v; want one failed point", points)
	}
	var buf bytes.Buffer
	bench.WriteTable(&buf, points)
	if !strings.Contains(buf.String(), "too large") {
		t.Errorf("table does not say the point was too large:\n%s", buf.String())
	}
}
