package bench_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
)

// poisoned is a backend whose Fused overwrites its output with x (NaN or
// an infinity) after computing it: a kernel gone wrong.
type poisoned struct {
	backend.Backend
	x float32
}

func (b poisoned) Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	if err := b.Backend.Fused(ctx, p, q, k, v, o, lse); err != nil {
		return err
	}
	bad := make([]float32, o.Len())
	for i := range bad {
		bad[i] = b.x
	}
	return b.Backend.Write(o, 0, bad)
}

// An output of NaNs, or of infinities, is wrong at every kind of point
// that checks its output against the reference: a plain one, a prefix
// (shared or not) and a tree (and its causal chunk), whose errors a check
// written as err > bound passed, since NaN > bound is false. Such a
// point records no MaxErr, which JSON could not hold, but says what the
// output held, and its report is written.
func TestNonFiniteOutputWrong(t *testing.T) {
	cpu := openCPU(t)
	for _, x := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		be := poisoned{cpu, x}
		var points []bench.Point
		for _, c := range []struct {
			name string
			sh   bench.Shape
		}{
			{"plain", bench.Shape{B: 1, H: 4, KVHeads: 2, N: 40, Nq: 3, D: 8, Causal: true}},
			{"prefix shared", bench.Shape{B: 2, H: 4, KVHeads: 2, N: 272, Nq: 1, D: 8, Causal: true, Prefix: 256, Shared: true}},
			{"prefix unshared", bench.Shape{B: 2, H: 4, KVHeads: 2, N: 272, Nq: 1, D: 8, Causal: true, Prefix: 256}},
			{"tree", bench.Shape{B: 1, H: 4, KVHeads: 2, N: 300, Nq: 9, D: 32, Causal: true, Tree: 9}},
			{"tree's chunk", bench.Shape{B: 1, H: 4, KVHeads: 2, N: 300, Nq: 9, D: 32, Causal: true, Tree: 9, TreeChunk: true}},
		} {
			spec := bench.PointSpec{Backend: "cpu", Strategy: "fused", Shape: c.sh, Seed: 1, Budget: 1, MinRuns: 1, CheckRows: 4}
			pt := bench.MeasurePoint(context.Background(), be, spec)
			want := map[bool]string{true: "holds NaN", false: "holds an infinity"}[x != x]
			if pt.Status != bench.StatusWrong || pt.MaxErr != nil || !strings.Contains(pt.Error, want) {
				t.Errorf("%v output, %s point: %s %q, max error %v; want wrong, no max error, %q", x, c.name, pt.Status, pt.Error, pt.MaxErr, want)
			}
			points = append(points, pt)
		}
		bench.JSONMaps(t, &bench.Report{Points: points})
	}
	// poisoned reaches the output (zeros are wrong too), and the CPU's
	// own output is right.
	spec := bench.PointSpec{Backend: "cpu", Strategy: "fused", Seed: 1, Budget: 1, MinRuns: 1, CheckRows: 4,
		Shape: bench.Shape{B: 1, H: 4, KVHeads: 2, N: 300, Nq: 9, D: 32, Causal: true, Tree: 9}}
	if pt := bench.MeasurePoint(context.Background(), poisoned{cpu, 0}, spec); pt.Status != bench.StatusWrong {
		t.Errorf("an output of zeros: %s %q, want wrong", pt.Status, pt.Error)
	}
	if pt := bench.MeasurePoint(context.Background(), cpu, spec); pt.Status != bench.StatusOK || pt.MaxErr == nil {
		t.Errorf("the CPU's own output: %s %q, max error %v", pt.Status, pt.Error, pt.MaxErr)
	}
}
