package bench_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/kernels"
)

// rooflinePoints are a compute-bound and a memory-bound point on the
// host's CPU, a discrete GPU's (an intensity, no fraction of either
// ceiling) and one that did not run, as Run records them under ceilings
// of 400 GFLOP/s and 50 GB/s.
func rooflinePoints() []bench.Point {
	sh := bench.Shape{B: 1, H: 2, KVHeads: 2, N: 64, D: 8}
	return []bench.Point{
		{Impl: "attn-cpu", Strategy: "fused", Shape: sh, Runs: 3, MedianS: 1e-3, GFLOPS: 300, GBPS: 18.75,
			ReadBWFrac: 0.375, Intensity: 16, RooflineFrac: 0.75, Bound: bench.BoundCompute, Status: bench.StatusOK},
		{Impl: "ort-cpu-gqa", Strategy: "unfused", Shape: sh, Runs: 3, MedianS: 1e-3, GFLOPS: 42, GBPS: 21,
			ReadBWFrac: 0.42, Intensity: 2, RooflineFrac: 0.42, Bound: bench.BoundMemory, Status: bench.StatusOK},
		{Impl: "attn-gpu", Strategy: "fused", Shape: sh, Runs: 3, MedianS: 1e-3, GFLOPS: 900, GBPS: 450,
			Intensity: 2, Status: bench.StatusOK},
		{Impl: "attn-cpu", Strategy: "staged", Shape: sh, Status: bench.StatusTooLarge, Error: "needs 4 TiB"},
	}
}

// The report's JSON gives the machine its sgemm_gflops and each point
// its intensity, roofline_frac and bound (absent where it has none) and
// reads them back; its CSV has them in columns of those names, the
// table an "of roof" column, results.md the ceilings in its first line
// and each fraction beside its GFLOP/s.
func TestReportRooflineFields(t *testing.T) {
	cfg := tiny()
	cfg.ReadGBPS, cfg.SgemmGFLOPS = 50, 400
	points := rooflinePoints()
	r := bench.NewReport(cfg, nil, nil, points)
	js, machine, raw := bench.JSONMaps(t, r)
	if machine["sgemm_gflops"] != 400.0 || machine["read_gbps"] != 50.0 {
		t.Errorf("machine: sgemm_gflops %v, read_gbps %v; want 400, 50", machine["sgemm_gflops"], machine["read_gbps"])
	}
	if p := raw[0]; p["intensity"] != 16.0 || p["roofline_frac"] != 0.75 || p["bound"] != "compute" {
		t.Errorf("compute-bound point's JSON: %v", p)
	}
	if p := raw[1]; p["intensity"] != 2.0 || p["roofline_frac"] != 0.42 || p["bound"] != "memory" {
		t.Errorf("memory-bound point's JSON: %v", p)
	}
	for i, keys := range [][]string{2: {"roofline_frac", "bound"}, 3: {"intensity", "roofline_frac", "bound"}} {
		for _, k := range keys {
			if _, ok := raw[i][k]; ok {
				t.Errorf("point %d (%s) wrote %s: %v", i, points[i].Impl, k, raw[i])
			}
		}
	}
	back, err := bench.ReadReport(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if back.Machine.SgemmGFLOPS != 400 || !slices.EqualFunc(back.Points, points, func(a, b bench.Point) bool {
		return a.Intensity == b.Intensity && a.RooflineFrac == b.RooflineFrac && a.Bound == b.Bound
	}) {
		t.Errorf("read back: sgemm %v, points %+v", back.Machine.SgemmGFLOPS, back.Points)
	}

	rows := bench.CSVRows(t, r)
	names := []string{"read_gbps", "sgemm_gflops", "intensity", "roofline_frac", "bound"}
	for i, want := range [][5]string{
		{"50", "400", "16", "0.75", "compute"},
		{"50", "400", "2", "0.42", "memory"},
		{"50", "400", "2", "", ""},
		{"50", "400", "", "", ""},
	} {
		var got [5]string
		for j, name := range names {
			k := slices.Index(rows[0], name)
			if k < 0 {
				t.Fatalf("CSV header %v lacks %s", rows[0], name)
			}
			got[j] = rows[i+1][k]
		}
		if got != want {
			t.Errorf("CSV row %d: %v = %v, want %v", i, names, got, want)
		}
	}

	var table bytes.Buffer
	if err := bench.WriteTable(&table, points); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(table.String(), "\n")[1:] // under the kernel's line
	head := lines[0]
	at := strings.Index(head, " of roof") + len(" of roof") // the column's right edge
	if at < len(" of roof") {
		t.Fatalf("table header %q has no \"of roof\" column", head)
	}
	for i, want := range []string{"75% C", "42% M", "-", "-"} {
		if got := strings.TrimSpace(lines[i+1][:at]); !strings.HasSuffix(got, " "+want) {
			t.Errorf("table row %d under \"of roof\": %q, want %q", i, got, want)
		}
	}
	if keys := bench.GlossaryKeys(points); !slices.Contains(keys, "roofline_frac") || !slices.Contains(keys, "sgemm_gflops") {
		t.Errorf("the glossary of the table's columns has no roofline: %q", keys)
	}

	var md bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"read bandwidth 50.0 GB/s and Sgemm 400.0 GFLOP/s on every thread (measured in the run)",
		"of the roofline min(400.0 GFLOP/s, intensity × 50.0 GB/s)", "| 300.0 (75% C) |", "| 42.0 (42% M) |", "| 900.0 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}

	// A run that measured no Sgemm rate has no roofline anywhere.
	cfg.SgemmGFLOPS = 0
	for i := range points {
		points[i].RooflineFrac, points[i].Bound = 0, ""
	}
	r = bench.NewReport(cfg, nil, nil, points)
	table.Reset()
	md.Reset()
	if err := bench.WriteTable(&table, points); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	_, machine, raw = bench.JSONMaps(t, r)
	if v, ok := machine["sgemm_gflops"]; ok {
		t.Errorf("machine of a run without a Sgemm rate: sgemm_gflops %v", v)
	}
	for i, p := range raw {
		_, frac := p["roofline_frac"]
		_, bound := p["bound"]
		if frac || bound {
			t.Errorf("point %d of a run without a Sgemm rate: %v", i, p)
		}
	}
	if strings.Contains(table.String(), "of roof") || strings.Contains(md.String(), "Sgemm") || strings.Contains(md.String(), "roofline") {
		t.Errorf("a run without a Sgemm rate shows a roofline:\n%s\n%s", table.String(), md.String())
	}
}

// Reports written before the Sgemm rate was measured still read: the
// first before the read bandwidth too (testdata/report-v1.json), the
// other with it (a decoding run's, with read_bw_frac): no point has an
// intensity or a roofline, the CSV leaves their columns empty, the table
// has no "of roof" column and no roofline chart is listed.
func TestReadReportWithoutRoofline(t *testing.T) {
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
		if r.Machine.SgemmGFLOPS != 0 || len(r.Points) == 0 {
			t.Errorf("%s: Sgemm %v GFLOP/s, %d points", name, r.Machine.SgemmGFLOPS, len(r.Points))
		}
		bw := false
		for _, pt := range r.Points {
			bw = bw || pt.ReadBWFrac > 0
			if pt.Intensity != 0 || pt.RooflineFrac != 0 || pt.Bound != "" {
				t.Errorf("%s: %s N=%d: intensity %v, of roof %v %q", name, pt.Impl, pt.N, pt.Intensity, pt.RooflineFrac, pt.Bound)
			}
		}
		if want := strings.Contains(name, "readbw"); bw != want {
			t.Errorf("%s: fractions of the read bandwidth %v, want %v", name, bw, want)
		}
		rows := bench.CSVRows(t, r)
		for _, row := range rows[1:] {
			for _, col := range []string{"sgemm_gflops", "intensity", "roofline_frac", "bound"} {
				if v := row[slices.Index(rows[0], col)]; v != "" {
					t.Errorf("%s: CSV %s %q, want empty", name, col, v)
				}
			}
		}
		var table bytes.Buffer
		if err := bench.WriteTable(&table, r.Points); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(table.String(), "of roof") {
			t.Errorf("%s: table has an \"of roof\" column:\n%s", name, table.String())
		}
		for _, cf := range r.ChartFiles("png") {
			if strings.HasPrefix(cf.Name, "roofline") {
				t.Errorf("%s: chart files list %s", name, cf.Name)
			}
		}
	}
}

// The report's JSON gives the machine its fma_gflops and fma_kernel and
// each point on the host's CPU its fma_frac, and reads them back; the
// CSV has them in columns of those names, the table an "of FMA" column
// and results.md the peak in its first line and each fraction beside its
// GFLOP/s. A run without the peak (-tags purego) has none of them.
func TestReportFMAFields(t *testing.T) {
	cfg := tiny()
	cfg.ReadGBPS, cfg.SgemmGFLOPS, cfg.FMAGFLOPS, cfg.FMAKernel = 50, 400, 600, "VFMADD231PS zmm, 16 chains"
	points := rooflinePoints()
	points[0].FMAFrac, points[1].FMAFrac = 0.5, 0.07
	r := bench.NewReport(cfg, nil, nil, points)
	js, machine, raw := bench.JSONMaps(t, r)
	if machine["fma_gflops"] != 600.0 || machine["fma_kernel"] != cfg.FMAKernel {
		t.Errorf("machine: fma_gflops %v, fma_kernel %v; want 600, %q", machine["fma_gflops"], machine["fma_kernel"], cfg.FMAKernel)
	}
	for i, want := range []any{0.5, 0.07, nil, nil} {
		if got := raw[i]["fma_frac"]; got != want {
			t.Errorf("point %d (%s): fma_frac %v, want %v", i, points[i].Impl, got, want)
		}
	}
	back, err := bench.ReadReport(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if back.Machine.FMAGFLOPS != 600 || back.Machine.FMAKernel != cfg.FMAKernel || back.Points[0].FMAFrac != 0.5 {
		t.Errorf("read back: FMA %v (%q), first point's fraction %v", back.Machine.FMAGFLOPS, back.Machine.FMAKernel, back.Points[0].FMAFrac)
	}

	rows := bench.CSVRows(t, r)
	for i, want := range [][2]string{{"600", "0.5"}, {"600", "0.07"}, {"600", ""}, {"600", ""}} {
		var got [2]string
		for j, name := range []string{"fma_gflops", "fma_frac"} {
			k := slices.Index(rows[0], name)
			if k < 0 {
				t.Fatalf("CSV header %v lacks %s", rows[0], name)
			}
			got[j] = rows[i+1][k]
		}
		if got != want {
			t.Errorf("CSV row %d: fma_gflops, fma_frac = %v, want %v", i, got, want)
		}
	}

	var table bytes.Buffer
	if err := bench.WriteTable(&table, points); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(table.String(), "\n")[1:]
	at := strings.Index(lines[0], " of FMA") + len(" of FMA")
	if at < len(" of FMA") {
		t.Fatalf("table header %q has no \"of FMA\" column", lines[0])
	}
	for i, want := range []string{"50%", "7%", "-", "-"} {
		if got := strings.TrimSpace(lines[i+1][:at]); !strings.HasSuffix(got, " "+want) {
			t.Errorf("table row %d under \"of FMA\": %q, want %q", i, got, want)
		}
	}
	if keys := bench.GlossaryKeys(points); !slices.Contains(keys, "fma_frac") || !slices.Contains(keys, "fma_gflops") {
		t.Errorf("the glossary of the table's columns has no FMA peak: %q", keys)
	}

	var md bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FMA peak 600.0 GFLOP/s (VFMADD231PS zmm, 16 chains)", "of the 600.0 GFLOP/s FMA peak",
		"| 300.0 (75% C, 50% FMA) |", "| 42.0 (42% M, 7% FMA) |", "| 900.0 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}

	// Without the peak: no field, no column.
	cfg.FMAGFLOPS, cfg.FMAKernel = 0, ""
	for i := range points {
		points[i].FMAFrac = 0
	}
	r = bench.NewReport(cfg, nil, nil, points)
	_, machine, raw = bench.JSONMaps(t, r)
	if v, ok := machine["fma_gflops"]; ok {
		t.Errorf("machine of a run without an FMA peak: fma_gflops %v", v)
	}
	for i, p := range raw {
		if v, ok := p["fma_frac"]; ok {
			t.Errorf("point %d of a run without an FMA peak: fma_frac %v", i, v)
		}
	}
	table.Reset()
	if err := bench.WriteTable(&table, points); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(table.String(), "of FMA") {
		t.Errorf("a table without an FMA peak has an \"of FMA\" column:\n%s", table.String())
	}
}

// The table ends with one line pointing to the glossary instead of the
// glossary itself; results.md ends with the definitions of its columns,
// and every key a table can show has a definition.
func TestGlossary(t *testing.T) {
	pt := bench.Point{Impl: "attn-cpu", Strategy: "fused", Runs: 2, MedianS: 1e-3, FMAFrac: 0.5, RooflineFrac: 0.4}
	pt.B, pt.H, pt.KVHeads, pt.N, pt.D, pt.DType = 1, 1, 1, 8, 4, "bf16"
	points := []bench.Point{pt}
	var table bytes.Buffer
	if err := bench.WriteTable(&table, points); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "results.md") || !strings.Contains(last, "attn bench -h") || strings.Contains(table.String(), "gflops: ") {
		t.Errorf("the table's last line %q does not point to the glossary, or the glossary is printed:\n%s", last, table.String())
	}
	keys := bench.GlossaryKeys(points)
	for _, k := range append(keys, bench.AllGlossaryKeys()...) {
		if bench.Conventions[k] == "" {
			t.Errorf("glossary key %q has no definition", k)
		}
	}
	if all := bench.AllGlossaryKeys(); len(all) != len(bench.Conventions) {
		t.Errorf("AllGlossaryKeys has %d keys for %d conventions", len(all), len(bench.Conventions))
	}
	var md strings.Builder
	if err := bench.WriteGlossary(&md, keys, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "- **fma_frac**: ") || !strings.Contains(md.String(), "- **dtype**: ") {
		t.Errorf("the Markdown glossary lacks the table's columns:\n%s", md.String())
	}
}

// TestRoof: Run probes the ceilings (Config.Roof) before the sweep, on
// while a probe raises one, and after it, and reads every point against
// the best of every probe, however low the first ones were; a point
// above the roofline or the FMA peak is measured again, its second
// timing kept, and flagged if it is still above, the flag in the
// table, the JSON, the CSV and results.md. The probe and the points are
// fakes: a probe that answers each of its ceilings in turn, and a Spawn
// that answers each timing of the point's GFLOP/s in turn (the last
// answer repeated), of intensity 100 flop/B: compute-bound under
// ceilings of 500 GFLOP/s and 100 GB/s.
func TestRoof(t *testing.T) {
	low := bench.Ceilings{ReadGBPS: 1, SgemmGFLOPS: 50, FMAGFLOPS: 100, FMAKernel: "fake"}
	high := bench.Ceilings{ReadGBPS: 100, SgemmGFLOPS: 500, FMAGFLOPS: 1000, FMAKernel: "fake"}
	for _, tc := range []struct {
		name         string
		probes       []bench.Ceilings
		gflops       []float64
		wantProbes   int
		wantTimings  int
		wantGFLOPS   float64
		wantFlag     string
		wantProgress int // Progress events of a point measured
	}{
		{"a slow first probe", []bench.Ceilings{low, high}, []float64{200}, 3 + 1, 1, 200, "", 1},
		{"slow probes before the sweep", []bench.Ceilings{low, low, high}, []float64{200}, 2 + 2, 1, 200, "", 1},
		{"above once", []bench.Ceilings{high}, []float64{2000, 300}, 2 + 1, 2, 300, "", 2},
		{"above twice", []bench.Ceilings{high}, []float64{2000}, 2 + 1, 2, 2000, "above roof 4.00× C, FMA 2.00×: probe noise?", 2},
		{"above Sgemm only", []bench.Ceilings{high}, []float64{600}, 2 + 1, 2, 600, "above roof 1.20× C: faster than Sgemm or probe noise?", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probes, timings, events := 0, 0, 0
			roof := &bench.Roof{Probe: func() bench.Ceilings {
				probes++
				return tc.probes[min(probes, len(tc.probes))-1]
			}}
			cfg := tiny()
			cfg.Ns, cfg.Causal, cfg.Strategies, cfg.Roof = []int{64}, []bool{false}, []kernels.Strategy{kernels.Fused}, roof
			cfg.Progress = func(p bench.Progress) {
				if p.Point != nil {
					events++
				}
			}
			cfg.Spawn = func(_ context.Context, spec bench.PointSpec) bench.Point {
				timings++
				gflops := tc.gflops[min(timings, len(tc.gflops))-1]
				flops := bench.Flops(spec.Problem())
				pt := bench.Point{Impl: "attn-cpu", Strategy: spec.Strategy, Shape: spec.Shape, Status: bench.StatusOK,
					Runs: 3, MedianS: flops / gflops / 1e9, GFLOPS: gflops, Bytes: int64(flops / 100)}
				pt.GBPS = float64(pt.Bytes) / pt.MedianS / 1e9
				return pt
			}
			points, err := bench.Run(context.Background(), cfg, []backend.Backend{openCPU(t)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(points) != 1 || probes != tc.wantProbes || len(roof.Probes) != probes || timings != tc.wantTimings || events != tc.wantProgress {
				t.Fatalf("%d points, %d probes (%d recorded), %d timings, %d progress events; want 1, %d, %d, %d",
					len(points), probes, len(roof.Probes), timings, events, tc.wantProbes, tc.wantTimings, tc.wantProgress)
			}
			pt := points[0]
			if best := roof.Best(); best != high {
				t.Errorf("best of the probes %+v, want %+v", best, high)
			}
			if pt.GFLOPS != tc.wantGFLOPS || pt.FMAFrac != tc.wantGFLOPS/1000 || pt.RooflineFrac != tc.wantGFLOPS/500 || pt.Bound != bench.BoundCompute || pt.Flag != tc.wantFlag {
				t.Errorf("point: %v GFLOP/s, of FMA %v, of roof %v %s, flag %q; want %v GFLOP/s read against %+v, flag %q",
					pt.GFLOPS, pt.FMAFrac, pt.RooflineFrac, pt.Bound, pt.Flag, tc.wantGFLOPS, high, tc.wantFlag)
			}

			// The report: the best ceilings and every probe, the flag in
			// each output where there is one.
			r := bench.NewReport(cfg, nil, nil, points)
			if r.Machine.FMAGFLOPS != 1000 || r.Machine.SgemmGFLOPS != 500 || r.Machine.ReadGBPS != 100 || len(r.Machine.CeilingProbes) != probes {
				t.Errorf("machine: %+v", r.Machine)
			}
			_, _, raw := bench.JSONMaps(t, r)
			rows := bench.CSVRows(t, r)
			var table, md bytes.Buffer
			if err := bench.WriteTable(&table, points); err != nil {
				t.Fatal(err)
			}
			if err := r.WriteMarkdown(&md); err != nil {
				t.Fatal(err)
			}
			for _, cf := range r.ChartFiles("png") {
				if cf.Chart != bench.ChartRoofline {
					continue // the fake points have no memory to chart
				}
				if err := r.WriteChartFile(io.Discard, cf); err != nil {
					t.Fatal(err)
				}
			}
			k := slices.Index(rows[0], "flag")
			if k < 0 {
				t.Fatalf("CSV header %v lacks flag", rows[0])
			}
			if tc.wantFlag == "" {
				if _, ok := raw[0]["flag"]; ok || rows[1][k] != "" || strings.Contains(table.String(), "flag") || strings.Contains(md.String(), "flag") {
					t.Errorf("an unflagged point: JSON %v, CSV %q, table or results.md mentions a flag:\n%s\n%s", raw[0]["flag"], rows[1][k], table.String(), md.String())
				}
				return
			}
			if raw[0]["flag"] != tc.wantFlag || rows[1][k] != tc.wantFlag || !strings.Contains(table.String(), "ok, flag: "+tc.wantFlag) ||
				!strings.Contains(md.String(), "flagged)") || !strings.Contains(md.String(), "attn-cpu fused N=64: "+tc.wantFlag) || !strings.Contains(md.String(), "- **flag**: ") {
				t.Errorf("a flagged point: JSON %v, CSV %q; table and results.md:\n%s\n%s", raw[0]["flag"], rows[1][k], table.String(), md.String())
			}
		})
	}
}
