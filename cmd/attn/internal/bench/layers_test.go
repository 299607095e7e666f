package bench

import (
	"context"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// stepRecorder is the CPU backend as a backend.Recorder that counts its
// recordings and the ops called inside one.
type stepRecorder struct {
	backend.Backend
	begins, waits, inside int
}

func (r *stepRecorder) Begin() backend.Recording {
	r.begins++
	return &cpuRecording{r}
}

// cpuRecording is a recording of stepRecorder: its ops run at once and
// are counted, Wait syncs.
type cpuRecording struct{ r *stepRecorder }

func (c *cpuRecording) Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	c.r.inside++
	return c.r.Backend.Fused(ctx, p, q, k, v, o, lse)
}

func (c *cpuRecording) Scores(ctx context.Context, p backend.ScoresParams, q, k, s backend.Buffer) error {
	return c.r.Backend.Scores(ctx, p, q, k, s)
}

func (c *cpuRecording) Softmax(ctx context.Context, p backend.SoftmaxParams, s backend.Buffer) error {
	return c.r.Backend.Softmax(ctx, p, s)
}

func (c *cpuRecording) Context(ctx context.Context, p backend.ContextParams, pm, v, o backend.Buffer) error {
	return c.r.Backend.Context(ctx, p, pm, v, o)
}

func (c *cpuRecording) Copy(ctx context.Context, dst, src backend.Buffer, ranges ...backend.CopyRange) error {
	return backend.Errorf(backend.ErrUnsupported, "no device copies")
}

func (c *cpuRecording) Submit() error { return nil }

func (c *cpuRecording) Wait() error { c.r.waits++; return c.r.Backend.Sync() }

// -layers: each L is a point of its own, carrying it, whose run is L
// calls over buffers of their own recorded in one step with one wait on
// a backend.Recorder; its bytes and flops count every call, its answers
// are checked, and a point without Layers is a single call as before.
func TestLayers(t *testing.T) {
	be, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	rec := &stepRecorder{Backend: be}
	cfg := Config{Ns: []int{40}, Nqs: []int{1}, Batches: []int{1}, Heads: []int{2}, KVHeads: []int{1}, Dims: []int{8},
		Causal: []bool{true}, Strategies: []kernels.Strategy{kernels.Fused, kernels.Staged}, Layers: []int{1, 3},
		MinRuns: 2, CheckRows: 1, Seed: 4, ReadGBPS: 10, SgemmGFLOPS: 100}
	pts, err := Run(context.Background(), cfg, []backend.Backend{rec}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 4 {
		t.Fatalf("%d points, want 4 (two strategies × two layer counts)", len(pts))
	}
	per := map[string]Point{}
	for _, pt := range pts {
		if pt.Status != StatusOK || pt.CheckedRows != 1 {
			t.Fatalf("%s L=%d: %s (%s), %d rows checked", pt.Strategy, pt.Layers, pt.Status, pt.Error, pt.CheckedRows)
		}
		per[pt.Strategy+map[int]string{1: "1", 3: "3"}[pt.Layers]] = pt
	}
	for _, s := range []string{"fused", "staged"} {
		one, three := per[s+"1"], per[s+"3"]
		if one.Layers != 1 || three.Layers != 3 {
			t.Fatalf("%s: layers %d and %d, want 1 and 3", s, one.Layers, three.Layers)
		}
		if three.Bytes != 3*one.Bytes {
			t.Errorf("%s: %d bytes at L=3, want 3 × %d", s, three.Bytes, one.Bytes)
		}
		if g := three.GFLOPS * three.MedianS; !near(g, 3*Flops(three.Shape.Problem())/1e9) {
			t.Errorf("%s: GFLOPS × median = %g at L=3, want 3 calls' %g GFLOP", s, g, 3*Flops(three.Shape.Problem())/1e9)
		}
		// L calls' flops over L calls' bytes: a step's intensity is a
		// call's, and its place under the roofline is its rate's.
		for _, pt := range []Point{one, three} {
			roof, bound := roofline(pt.Intensity, cfg.SgemmGFLOPS, cfg.ReadGBPS)
			if !near(pt.Intensity, Flops(pt.Shape.Problem())/float64(one.Bytes)) || !near(pt.RooflineFrac, pt.GFLOPS/roof) || pt.Bound != bound {
				t.Errorf("%s L=%d: intensity %g, of roof %g %s; want %g, %g %s", s, pt.Layers, pt.Intensity, pt.RooflineFrac, pt.Bound,
					Flops(pt.Shape.Problem())/float64(one.Bytes), pt.GFLOPS/roof, bound)
			}
		}
	}
	// Every timed and warm-up run is one recording and one wait; the
	// fused points' calls all ran inside one.
	fusedRuns := per["fused1"].Runs + per["fused3"].Runs + 2 // and their warm-ups
	runs := fusedRuns + per["staged1"].Runs + per["staged3"].Runs + 2
	if rec.begins != runs || rec.waits != runs {
		t.Errorf("%d recordings and %d waits, want one each for %d runs", rec.begins, rec.waits, runs)
	}
	if want := per["fused1"].Runs + 1 + 3*(per["fused3"].Runs+1); rec.inside != want {
		t.Errorf("%d Fused calls inside a recording, want %d", rec.inside, want)
	}

	// Without Layers, single calls: no recording, no layers field.
	cfg.Layers = nil
	rec.begins = 0
	pts, err = Run(context.Background(), cfg, []backend.Backend{rec}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range pts {
		if pt.Layers != 0 || pt.Status != StatusOK {
			t.Errorf("%s without -layers: layers %d, %s", pt.Strategy, pt.Layers, pt.Status)
		}
	}
	if rec.begins != 0 {
		t.Errorf("%d recordings without -layers", rec.begins)
	}
	if _, err := Run(context.Background(), Config{Ns: []int{8}, Layers: []int{0}, Strategies: []kernels.Strategy{kernels.Fused}}, []backend.Backend{be}, nil); err == nil {
		t.Error("Layers {0}: no error")
	}
}

func near(a, b float64) bool { return a > 0.999999*b && a < 1.000001*b }
