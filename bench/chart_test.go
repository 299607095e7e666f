package bench

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// ranPoint is a point of attn-cpu at N that ran with the given run times.
func ranPoint(n int, causal bool, times []time.Duration) Point {
	p := Shape{B: 1, H: 1, KVHeads: 1, N: n, D: 8, Causal: causal}.Problem()
	pt := newPoint("attn-cpu", "fused", "1 threads, attn sgemm (AVX2+FMA 6×16 micro-kernel)", p)
	pt.setTimes(times[0], times, p, false)
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
