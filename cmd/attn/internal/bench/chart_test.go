package bench

import (
	"bytes"
	"fmt"
	"image"
	_ "image/png"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"gonum.org/v1/plot"
)

// ranPoint is a point of attn-cpu at N that ran with the given run times.
func ranPoint(n int, causal bool, times []time.Duration) Point {
	p := Shape{B: 1, H: 1, KVHeads: 1, N: n, D: 8, Causal: causal}.Problem()
	pt := newPoint("attn-cpu", "fused", "1 threads, attn sgemm (AVX2+FMA 6×16 micro-kernel)", p)
	pt.setTimes(times[0], times, p, backend.Float32, false)
	return pt
}

// steadyRuns is n run times within 1% of 10 ms, from a fixed seed.
func steadyRuns(n int, seed uint64) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0))
	times := make([]time.Duration, n)
	for i := range times {
		times[i] = time.Duration(float64(10*time.Millisecond) * (1 + 0.01*rng.Float64()))
	}
	return times
}

// The GFLOP/s axis says that causal problems count only the attended
// pairs on charts with causal lines, and only there.
func TestGFLOPSLabel(t *testing.T) {
	for _, c := range []struct {
		name   string
		causal []bool
		want   string
	}{
		{"non-causal", []bool{false}, "GFLOP/s"},
		{"causal", []bool{true}, "GFLOP/s (causal: attended pairs only)"},
		{"both", []bool{false, true}, "GFLOP/s (causal lines: attended pairs only)"},
	} {
		r := &Report{}
		for _, causal := range c.causal {
			r.Points = append(r.Points, ranPoint(64, causal, steadyRuns(5, 1)), ranPoint(128, causal, steadyRuns(5, 2)))
		}
		p, _, err := r.plot(ChartGFLOPS)
		if err != nil {
			t.Fatal(err)
		}
		if p.Y.Label.Text != c.want {
			t.Errorf("%s: Y label %q, want %q", c.name, p.Y.Label.Text, c.want)
		}
	}
}

// One slow run among five or more (a GC, a preemption) leaves the error
// bars, the interquartile range of the runs, within the 1% spread of the
// others, where max − min stretched them to 10 000%; wherever the
// outlier falls. The title says what the bars are.
func TestRateBarsOutlier(t *testing.T) {
	for _, n := range []int{5, 8, 21, 200} {
		for _, at := range []int{0, n / 2, n - 1} {
			times := steadyRuns(n, uint64(n))
			times[at] = time.Second
			pt := ranPoint(256, false, times)
			if pt.MaxS/pt.MinS < 50 {
				t.Fatalf("n=%d: the outlier did not land: runs %v … %v", n, pt.MinS, pt.MaxS)
			}
			lo, hi, ok := rateBars(pt)
			if !ok || !(lo <= pt.GFLOPS && pt.GFLOPS <= hi) || (hi-lo)/pt.GFLOPS > 0.02 {
				t.Errorf("n=%d, slow run %d: bars %.4g … %.4g around %.4g GFLOP/s (ok %v); want within 2%%",
					n, at, lo, hi, pt.GFLOPS, ok)
			}
		}
	}
	r := &Report{Points: []Point{ranPoint(64, false, steadyRuns(5, 1)), ranPoint(128, false, steadyRuns(9, 2))}}
	p, _, err := r.plot(ChartGFLOPS)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Title.Text, "bars: interquartile range of each point's timed runs (5–9 runs)") {
		t.Errorf("title %q does not say what the bars are", p.Title.Text)
	}
}

// quantile interpolates between order statistics as NumPy's default does.
func TestQuantile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	for _, c := range []struct {
		sorted []time.Duration
		q      float64
		want   float64
	}{
		{ms(7), 0.25, 0.007},
		{ms(1, 3), 0.25, 0.0015}, // numpy.quantile([1, 3], 0.25) = 1.5
		{ms(1, 3), 0.75, 0.0025},
		{ms(1, 2, 3, 4), 0.25, 0.00175},
		{ms(1, 2, 3, 4, 1000), 0.75, 0.004},
		{ms(1, 2, 3, 4, 1000), 1, 1},
	} {
		if got := quantile(c.sorted, c.q); got < c.want*(1-1e-12) || got > c.want*(1+1e-12) {
			t.Errorf("quantile(%v, %v) = %v, want %v", c.sorted, c.q, got, c.want)
		}
	}
}

// A sweep of one N gets an axis an octave either side of it, with
// labels at round numbers, not gonum's N ± 1.
func TestChartOneN(t *testing.T) {
	r := &Report{Points: []Point{ranPoint(4096, false, steadyRuns(5, 1))}}
	p, _, err := r.plot(ChartGFLOPS)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got, want := strings.Join(labels, " "), "2K 3K 4K 6K 8K"; got != want {
		t.Errorf("x labels %q, want %q", got, want)
	}
}

// A memory chart whose points are all about one size gets two octaves
// around them, with round labels.
func TestMemoryChartOneSize(t *testing.T) {
	pt := ranPoint(4096, false, steadyRuns(5, 1))
	pt.PeakRSS = 1 << 30
	r := &Report{Points: []Point{pt}}
	p, _, err := r.plot(ChartMemory)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(labels(p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max)), " ")
	if want := "512 MiB 768 MiB 1 GiB 1.5 GiB 2 GiB"; got != want {
		t.Errorf("y labels over [%v, %v] MiB: %q, want %q", p.Y.Min, p.Y.Max, got, want)
	}
}

// The variant of each point is in every output: the JSON (and only when
// set, so plain reports read as before), a CSV column each, a table
// column, the chart and Markdown titles when every point shares it, a
// legend label when it varies, and the GFLOP/s axis says a window counts
// attended pairs only.
func TestReportVariants(t *testing.T) {
	v := Variant{Window: &[2]int{3, 0}, Softcap: 30, ALiBi: true, Sinks: true}
	const name = "window 3,0 softcap 30 alibi sinks"
	if v.String() != name {
		t.Fatalf("Variant.String() = %q, want %q", v.String(), name)
	}
	point := func(n int, v Variant) Point {
		p := Shape{B: 1, H: 2, KVHeads: 2, N: n, D: 8, Causal: true, Variant: v}.Problem()
		if len(p.ALiBi) != 0 != v.ALiBi || len(p.Sinks) != 0 != v.Sinks || (p.Window != nil) != (v.Window != nil) {
			t.Fatalf("Problem of %v has variants %+v", v, p.Variants)
		}
		pt := newPoint("attn-cpu", "fused", "1 threads", p)
		pt.setTimes(time.Millisecond, steadyRuns(5, uint64(n)), p, backend.Float32, false)
		return pt
	}
	r := &Report{Schema: Schema, Points: []Point{point(64, v), point(128, v)}}

	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"window": [`, `"softcap": 30`, `"alibi": true`, `"sinks": true`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	back, err := ReadReport(&js)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Points[1].Variant.String(); got != name {
		t.Errorf("JSON round trip: variant %q, want %q", got, name)
	}

	rows := csvRows(t, r)
	col := func(name string) string { return rows[1][slices.Index(rows[0], name)] }
	if col("window") != "3,0" || col("softcap") != "30" || col("alibi") != "true" || col("sinks") != "true" {
		t.Errorf("CSV row %v under %v", rows[1], rows[0])
	}

	var table bytes.Buffer
	if err := WriteTable(&table, r.Points); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), " variant ") || !strings.Contains(table.String(), name) || !slices.Contains(GlossaryKeys(r.Points), "variant") {
		t.Errorf("table does not name the variant:\n%s", table.String())
	}

	var md bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "causal "+name) {
		t.Errorf("Markdown title does not name the variant:\n%s", md.String())
	}
	p, _, err := r.plot(ChartGFLOPS)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Title.Text, name) || p.Y.Label.Text != "GFLOP/s (causal and windowed: attended pairs only)" {
		t.Errorf("chart title %q, Y label %q", p.Title.Text, p.Y.Label.Text)
	}

	// Two variants in one report: each line says which.
	r.Points = append(r.Points, point(64, Variant{}), point(128, Variant{}))
	labels := []string{}
	for _, s := range r.series(true) {
		labels = append(labels, s.label)
	}
	if want := []string{"attn-cpu fused " + name, "attn-cpu fused"}; !slices.Equal(labels, want) {
		t.Errorf("series %q, want %q", labels, want)
	}

	// Plain points write no variant at all, nor a table column.
	js.Reset()
	plain := &Report{Schema: Schema, Points: r.Points[2:]}
	if err := plain.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	table.Reset()
	if err := WriteTable(&table, plain.Points); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"window", "softcap", "alibi", "sinks"} {
		if strings.Contains(js.String(), s) {
			t.Errorf("plain report's JSON mentions %s", s)
		}
	}
	if strings.Contains(table.String(), "variant") {
		t.Errorf("plain table has a variant column:\n%s", table.String())
	}
}

// roofPoint is ranPoint read against ceilings of 400 GFLOP/s and 50 GB/s
// where it ran (at), as Run reads it, named impl.
func roofPoint(impl string, n int, causal bool, at placement) Point {
	pt := ranPoint(n, causal, steadyRuns(5, uint64(n)))
	pt.Impl = impl
	pt.PeakRSS = int64(n) << 20
	pt.setCeilings(Flops(pt.Shape.Problem()), at, 50, 400)
	return pt
}

// The roofline chart is drawn, a PNG (and an SVG) a dot for each point
// with a fraction of the roofline in the colour and marker of its series
// on the GFLOP/s chart, where both ceilings were measured and some point
// has a fraction of them; elsewhere there is no roofline file.
func TestRooflineChart(t *testing.T) {
	withCeilings := func(points ...Point) *Report {
		return &Report{Schema: Schema, Machine: Machine{CPU: "test CPU", CPUs: 2, SgemmGFLOPS: 400, ReadGBPS: 50}, Points: points}
	}
	r := withCeilings(roofPoint("attn-cpu", 64, false, hostCPU), roofPoint("attn-cpu", 128, false, hostCPU),
		roofPoint("attn-gpu", 64, false, offHost), roofPoint("ort-cpu-mha", 64, false, hostCPU))
	var got []string
	for _, d := range r.rooflineDots() {
		got = append(got, fmt.Sprintf("%d %s %d", d.i, d.s.label, len(d.xy)))
	}
	if want := []string{"0 attn-cpu fused 2", "2 ort-cpu-mha 1"}; !slices.Equal(got, want) {
		t.Errorf("roofline dots (series index, label, dots) %q, want %q: the GPU's series (1) has none", got, want)
	}
	for _, format := range []string{"png", "svg"} {
		var names []string
		for _, cf := range r.ChartFiles(format) {
			names = append(names, cf.Name)
		}
		if want := []string{"gflops." + format, "memory." + format, "roofline." + format}; !slices.Equal(names, want) {
			t.Errorf("chart files %v, want %v", names, want)
		}
	}
	cf := r.ChartFiles("png")[2]
	var buf bytes.Buffer
	if err := r.WriteChartFile(&buf, cf); err != nil {
		t.Fatal(err)
	}
	img, kind, err := image.Decode(&buf)
	if err != nil || kind != "png" {
		t.Fatalf("%s: %v (%s)", cf.Name, err, kind)
	}
	if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 300 {
		t.Errorf("%s: %v image", cf.Name, b)
	}
	p, _, err := r.plot(ChartRoofline)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"roofline, B=1 H=1 D=8", "test CPU, 2 CPUs", "float32 Sgemm 400.0 GFLOP/s on every thread, read 50.0 GB/s"} {
		if !strings.Contains(p.Title.Text, want) {
			t.Errorf("roofline title %q lacks %q", p.Title.Text, want)
		}
	}
	if _, ok := p.X.Scale.(plot.LogScale); !ok || p.X.Min > 4 || p.X.Max < 16 {
		t.Errorf("x axis: %T over [%v, %v], want a log scale past the ridge at 8 flop/B", p.X.Scale, p.X.Min, p.X.Max)
	}
	if _, ok := p.Y.Scale.(plot.LogScale); !ok || p.Y.Max <= 400 {
		t.Errorf("y axis: %T up to %v, want a log scale past the 400 GFLOP/s ceiling", p.Y.Scale, p.Y.Max)
	}

	// No roofline file where nothing has a fraction of it: a GPU's points
	// only, ceilings not measured, or the causal half without any.
	for _, c := range []struct {
		name string
		r    *Report
		want []string
	}{
		{"GPU only", withCeilings(roofPoint("attn-gpu", 64, false, offHost)), []string{"gflops.png", "memory.png"}},
		{"no Sgemm rate", &Report{Machine: Machine{ReadGBPS: 50}, Points: r.Points}, []string{"gflops.png", "memory.png"}},
		{"no bandwidth", &Report{Machine: Machine{SgemmGFLOPS: 400}, Points: r.Points}, []string{"gflops.png", "memory.png"}},
		{"causal on the GPU", withCeilings(roofPoint("attn-cpu", 64, false, hostCPU), roofPoint("attn-gpu", 64, true, offHost)),
			[]string{"gflops.png", "gflops-causal.png", "memory.png", "memory-causal.png", "roofline.png"}},
	} {
		var names []string
		for _, cf := range c.r.ChartFiles("png") {
			names = append(names, cf.Name)
		}
		if !slices.Equal(names, c.want) {
			t.Errorf("%s: chart files %v, want %v", c.name, names, c.want)
		}
	}

	// No memory file where no point measured its memory (every process
	// ended before its peak was read): the log axes would hold nothing.
	none := withCeilings(roofPoint("attn-cpu", 64, false, hostCPU))
	none.Points[0].PeakRSS = 0
	var names []string
	for _, cf := range none.ChartFiles("png") {
		names = append(names, cf.Name)
		if err := none.WriteChartFile(io.Discard, cf); err != nil {
			t.Errorf("%s: %v", cf.Name, err)
		}
	}
	if want := []string{"gflops.png", "roofline.png"}; !slices.Equal(names, want) {
		t.Errorf("no memory measured: chart files %v, want %v", names, want)
	}
}
