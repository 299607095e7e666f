package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/kernels"
)

// TestGPURoof: Run reads every point of attn's GPU backend against the
// best of the probes of the GPU's ceilings (Ceilings' GPU fields), by
// its device time, an f16 point against the f16 FMA ceiling; a point
// above one is measured again and flagged if it stays there; the
// report carries the ceilings, their note and each point's fractions in
// its JSON (read back), CSV, table and results.md. The probes and the
// points are fakes: each point moves 1 byte for every 4 flops, its
// device time half its wall time.
func TestGPURoof(t *testing.T) {
	low := bench.Ceilings{GPUReadGBPS: 10, GPUFMAGFLOPS: 100, GPUNote: "early"}
	high := bench.Ceilings{GPUReadGBPS: 100, GPUFMAGFLOPS: 1000, GPUF16GFLOPS: 4000, GPUNote: "by the device's timestamps"}
	for _, tc := range []struct {
		name      string
		gflops    float64 // wall-time GFLOP/s of every timing
		wantFrac  [2][2]float64
		wantFlags [2]string
	}{
		// Device time: 2 × 100 GFLOP/s and 2 × 25 GB/s.
		{"below", 100, [2][2]float64{{0.5, 0.2}, {0.5, 0.05}}, [2]string{}},
		// 2 × 300 GB/s is past the read ceiling, 2 × 1200 GFLOP/s past
		// f32's FMA, not f16's.
		{"above", 1200, [2][2]float64{{6, 2.4}, {6, 0.6}},
			[2]string{"above GPU FMA 2.40×, GPU BW 6.00×: data in cache or probe noise?", "above GPU BW 6.00×: data in cache or half arithmetic or probe noise?"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probes, timings := 0, 0
			roof := &bench.Roof{Probe: func() bench.Ceilings {
				probes++
				if probes == 1 {
					return low
				}
				return high
			}}
			cfg := tiny()
			cfg.Ns, cfg.Causal, cfg.Strategies, cfg.Roof = []int{64}, []bool{false}, []kernels.Strategy{kernels.Fused}, roof
			cfg.DTypes = []backend.DType{backend.Float32, backend.Float16}
			cfg.Spawn = func(_ context.Context, spec bench.PointSpec) bench.Point {
				timings++
				flops := bench.Flops(spec.Problem())
				pt := bench.Point{Impl: "attn-gpu", Strategy: spec.Strategy, Shape: spec.Shape, Status: bench.StatusOK,
					Runs: 3, MedianS: flops / tc.gflops / 1e9, GFLOPS: tc.gflops, Bytes: int64(flops / 4)}
				pt.GBPS = float64(pt.Bytes) / pt.MedianS / 1e9
				pt.GPUS = pt.MedianS / 2
				return pt
			}
			points, err := bench.Run(context.Background(), cfg, []backend.Backend{openCPU(t)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if best := roof.Best(); best != high {
				t.Errorf("best of the probes %+v, want %+v", best, high)
			}
			if len(points) != 2 {
				t.Fatalf("%d points, want 2", len(points))
			}
			if again := timings - 2; (tc.wantFlags[0] != "") != (again == 2) {
				t.Errorf("%d points measured again", again)
			}
			for i, pt := range points {
				if math.Abs(pt.GPUReadFrac-tc.wantFrac[i][0]) > 1e-9 || math.Abs(pt.GPUFMAFrac-tc.wantFrac[i][1]) > 1e-9 || pt.Flag != tc.wantFlags[i] {
					t.Errorf("%s point: of GPU BW %v, of GPU FMA %v, flag %q; want %v, %v, %q",
						pt.DType, pt.GPUReadFrac, pt.GPUFMAFrac, pt.Flag, tc.wantFrac[i][0], tc.wantFrac[i][1], tc.wantFlags[i])
				}
			}

			r := bench.NewReport(cfg, nil, nil, points)
			m := r.Machine
			if m.GPUReadGBPS != 100 || m.GPUFMAGFLOPS != 1000 || m.GPUF16GFLOPS != 4000 || m.GPUCeilingsNote != high.GPUNote || len(m.CeilingProbes) != probes {
				t.Errorf("machine: %+v", m)
			}
			js, machine, raw := bench.JSONMaps(t, r)
			for k, want := range map[string]any{"gpu_read_gbps": 100.0, "gpu_fma_gflops": 1000.0, "gpu_f16_fma_gflops": 4000.0, "gpu_ceilings_note": high.GPUNote} {
				if machine[k] != want {
					t.Errorf("machine.%s = %v, want %v", k, machine[k], want)
				}
			}
			if f, ok := raw[0]["gpu_read_frac"].(float64); !ok || math.Abs(f-tc.wantFrac[0][0]) > 1e-9 {
				t.Errorf("f32 point's JSON: %v", raw[0])
			}
			if f, ok := raw[1]["gpu_fma_frac"].(float64); !ok || math.Abs(f-tc.wantFrac[1][1]) > 1e-9 {
				t.Errorf("f16 point's JSON: %v", raw[1])
			}
			back, err := bench.ReadReport(bytes.NewReader(js))
			if err != nil {
				t.Fatal(err)
			}
			if back.Machine.GPUF16GFLOPS != 4000 || back.Machine.GPUCeilingsNote != high.GPUNote || back.Points[1].GPUFMAFrac != points[1].GPUFMAFrac {
				t.Errorf("read back: %+v, %+v", back.Machine, back.Points[1])
			}

			rows := bench.CSVRows(t, r)
			for j, name := range []string{"gpu_read_gbps", "gpu_fma_gflops", "gpu_f16_fma_gflops", "gpu_read_frac", "gpu_fma_frac"} {
				k := slices.Index(rows[0], name)
				if k < 0 {
					t.Fatalf("CSV header %v lacks %s", rows[0], name)
				}
				g := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
				want := []string{"100", "1000", "4000", g(points[1].GPUReadFrac), g(points[1].GPUFMAFrac)}[j]
				if rows[2][k] != want {
					t.Errorf("CSV f16 row's %s %q, want %q", name, rows[2][k], want)
				}
			}

			var table, md bytes.Buffer
			if err := bench.WriteTable(&table, points); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(table.String(), "\n") // columns counted in runes: µs
			for _, col := range []string{" of GPU BW", " of GPU FMA"} {
				at := len([]rune(lines[0][:max(strings.Index(lines[0], col), 0)])) + len(col)
				if !strings.Contains(lines[0], col) {
					t.Fatalf("table header %q has no %q column", lines[0], col)
				}
				want := "50%"
				switch {
				case col == " of GPU FMA":
					want = fracCell(tc.wantFrac[1][1])
				case tc.gflops > 100:
					want = "600%"
				}
				if got := strings.TrimSpace(string([]rune(lines[2])[:at])); !strings.HasSuffix(got, " "+want) {
					t.Errorf("f16 row under %q: %q, want %q", col, got, want)
				}
			}
			if keys := bench.GlossaryKeys(points); !slices.Contains(keys, "gpu_read_frac") || !slices.Contains(keys, "gpu_fma_frac") || !slices.Contains(keys, "gpu_fma_gflops") {
				t.Errorf("the glossary of the table's columns has no GPU ceilings: %q", keys)
			}
			if err := r.WriteMarkdown(&md); err != nil {
				t.Fatal(err)
			}
			line := fmt.Sprintf("GPU ceilings measured in the run (the best of %d probes): read 100.0 GB/s, f32 FMA 1000.0 GFLOP/s, f16 FMA 4000.0 GFLOP/s (by the device's timestamps).", probes)
			for _, want := range []string{line, fracCell(tc.wantFrac[0][1]) + " GPU FMA", fracCell(tc.wantFrac[1][0]) + " GPU BW", "- **gpu_fma_frac**: "} {
				if !strings.Contains(md.String(), want) {
					t.Errorf("results.md lacks %q:\n%s", want, md.String())
				}
			}
		})
	}
}

// fracCell is a fraction as the table and results.md print it.
func fracCell(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

// Reports written before the GPU's ceilings were measured still read,
// and show none: no field, no column, no line in results.md.
func TestReadReportWithoutGPUCeilings(t *testing.T) {
	for _, name := range []string{"testdata/report-v1.json", "testdata/report-readbw.json"} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := bench.ReadReport(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m := r.Machine; m.GPUReadGBPS != 0 || m.GPUFMAGFLOPS != 0 || m.GPUF16GFLOPS != 0 || m.GPUCeilingsNote != "" {
			t.Errorf("%s: machine %+v", name, m)
		}
		for _, pt := range r.Points {
			if pt.GPUReadFrac != 0 || pt.GPUFMAFrac != 0 {
				t.Errorf("%s: %s N=%d: of GPU BW %v, of GPU FMA %v", name, pt.Impl, pt.N, pt.GPUReadFrac, pt.GPUFMAFrac)
			}
		}
		var table, md bytes.Buffer
		if err := bench.WriteTable(&table, r.Points); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(table.String(), "of GPU") || strings.Contains(md.String(), "GPU ceilings") || strings.Contains(md.String(), "GPU FMA") {
			t.Errorf("%s: a report without the GPU's ceilings shows them:\n%s\n%s", name, table.String(), md.String())
		}
		rows := bench.CSVRows(t, r)
		for _, row := range rows[1:] {
			for _, col := range []string{"gpu_read_gbps", "gpu_fma_gflops", "gpu_read_frac", "gpu_fma_frac"} {
				if v := row[slices.Index(rows[0], col)]; v != "" {
					t.Errorf("%s: CSV %s %q, want empty", name, col, v)
				}
			}
		}
	}
}
