package bench_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
)

// A dtype sweep measures each dtype as a curve of its own: every point
// records its dtype, checks against the reference on the half-rounded
// inputs within the dtype's rounding, counts the stored bytes, survives
// a PointSpec's JSON round trip, and names its dtype in the table and
// the CSV; a backend without halves reports the half points unavailable.
func TestRunDTypes(t *testing.T) {
	be := openCPU(t)
	if !be.Caps().Half {
		t.Skip("the CPU backend stores no halves in this build")
	}
	cfg := tiny()
	cfg.Ns, cfg.Causal = []int{33}, []bool{true}
	cfg.DTypes = []backend.DType{backend.Float32, backend.Float16, backend.BFloat16}
	points, err := bench.Run(context.Background(), cfg, []backend.Backend{be, backendtest.WithoutHalf(be)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 3*2*2 {
		t.Fatalf("%d points, want 12", len(points))
	}
	bound := map[string]float64{"": 1e-5, "f16": 0x1p-10, "bf16": 0x1p-7}
	for i, pt := range points {
		dt := []string{"", "f16", "bf16"}[i/4]
		if pt.DType != dt {
			t.Fatalf("point %d: dtype %q, want %q", i, pt.DType, dt)
		}
		half := i%4 >= 2 // the points of the backend without halves
		if half && dt != "" {
			if pt.Status != bench.StatusUnavailable {
				t.Errorf("without halves %s %s: %s, want unavailable", pt.Strategy, dt, pt.Status)
			}
			continue
		}
		if pt.Status != bench.StatusOK || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, bound[dt]) {
			t.Errorf("%s %q: %s %s, max error %v", pt.Strategy, dt, pt.Status, pt.Error, pt.MaxErr)
		}
		p := pt.Shape.Problem()
		size := int64(4)
		if dt != "" {
			size = 2
		}
		want := size * int64(p.QLen()+p.KLen()+p.VLen()+p.OLen())
		if pt.Strategy == "staged" {
			want += 16 * int64(p.ScoresLen())
		}
		if pt.Bytes != want {
			t.Errorf("%s %q: %d bytes, want %d", pt.Strategy, dt, pt.Bytes, want)
		}
	}
	// The dtype survives a PointSpec's round trip (Subprocess's path).
	spec := bench.PointSpec{Backend: be.Name(), Strategy: "fused", Shape: points[4].Shape, Seed: cfg.Seed, Budget: cfg.Budget, MinRuns: 2, CheckRows: 5}
	if pt := bench.MeasurePoint(context.Background(), be, jsonRoundTrip(t, spec)); pt.DType != "f16" || pt.Status != bench.StatusOK || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 0x1p-10) {
		t.Errorf("MeasurePoint of an f16 spec: dtype %q, %s %s, error %v", pt.DType, pt.Status, pt.Error, pt.MaxErr)
	}
	var table bytes.Buffer
	if err := bench.WriteTable(&table, points); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "dtype") || !strings.Contains(table.String(), " bf16 ") {
		t.Errorf("the table names no dtype:\n%s", table.String())
	}
	rows := bench.CSVRows(t, &bench.Report{Points: points})
	col := -1
	for i, h := range rows[0] {
		if h == "dtype" {
			col = i
		}
	}
	if col < 0 || rows[1][col] != "f32" || rows[5][col] != "f16" || rows[9][col] != "bf16" {
		t.Errorf("CSV dtype column %d: %v", col, rows)
	}
}
