package bench

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

// labels lists the labelled ticks' labels.
func labels(ticks []plot.Tick) []string {
	var ls []string
	for _, tk := range ticks {
		if tk.Label != "" {
			ls = append(ls, tk.Label)
		}
	}
	return ls
}

// Over any range a chart may draw, a log axis gets between minTickLabels
// and maxTickLabels distinct labels, all ticks inside the range and in
// order.
func TestLog2Ticks(t *testing.T) {
	for _, c := range []struct {
		name   string
		lo, hi float64
		format func(float64) string
		want   string // the labels, when given
	}{
		{"memory 30–200 MiB", 30, 200, formatMiB, "32 MiB 48 MiB 64 MiB 96 MiB 128 MiB 192 MiB"},
		{"memory 10 MiB–6 GiB", 10, 6000, formatMiB, ""},
		{"memory 24–30 MiB", 24, 30, formatMiB, ""},
		{"memory 400 KiB–3 MiB", 0.4, 3, formatMiB, "512 KiB 768 KiB 1 MiB 1.5 MiB 2 MiB 3 MiB"},
		{"1–1e4", 1, 1e4, formatN, "1 4 16 64 256 1K 4K"},
		{"N 256–16K", 256, 16384, formatN, "256 512 1K 2K 4K 8K 16K"},
		{"N 1–1M", 1, 1 << 20, formatN, "1 8 64 512 4K 32K 256K"},
		{"N 1K–128K", 1024, 131072, formatN, "1K 2K 4K 8K 16K 32K 64K 128K"},
		{"N 1000–3000", 1000, 3000, formatN, "1000 1500 2000 2500 3000"},
		{"N 100–120", 100, 120, formatN, "100 105 110 115 120"},
	} {
		ticks := log2Ticks{c.format}.Ticks(c.lo, c.hi)
		ls := labels(ticks)
		if n := len(ls); n < minTickLabels || n > maxTickLabels {
			t.Errorf("%s: %d labels %q, want %d to %d", c.name, n, ls, minTickLabels, maxTickLabels)
		}
		if c.want != "" && strings.Join(ls, " ") != c.want {
			t.Errorf("%s: labels %q, want %q", c.name, strings.Join(ls, " "), c.want)
		}
		seen := map[string]bool{}
		for i, tk := range ticks {
			if tk.Value < c.lo || tk.Value > c.hi || (i > 0 && tk.Value <= ticks[i-1].Value) {
				t.Errorf("%s: tick %d at %v, out of [%v, %v] or out of order", c.name, i, tk.Value, c.lo, c.hi)
			}
			if tk.Label != "" && seen[tk.Label] {
				t.Errorf("%s: label %q twice", c.name, tk.Label)
			}
			seen[tk.Label] = true
		}
	}
	for _, r := range [][2]float64{{0, 10}, {-1, 10}, {10, 1}, {1, math.Inf(1)}, {math.NaN(), 1}} {
		if ticks := (log2Ticks{formatN}).Ticks(r[0], r[1]); len(ticks) != 0 {
			t.Errorf("Ticks(%v, %v) = %v on a range a log scale cannot draw", r[0], r[1], ticks)
		}
	}
}

// The GFLOP/s axis gets round labels, at least minTickLabels of them.
func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 175, "0 50 100 150"},
		{0, 9.5, "0 2 4 6 8"},
		{0, 0.7, "0 0.2 0.4 0.6"},
		{0, 1200, "0 200 400 600 800 1000 1200"},
		{3, 3, "3"},
	} {
		if got := strings.Join(labels(niceTicks{}.Ticks(c.lo, c.hi)), " "); got != c.want {
			t.Errorf("Ticks(%v, %v): %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

func TestFormatTicks(t *testing.T) {
	for _, c := range []struct {
		f    func(float64) string
		v    float64
		want string
	}{
		{formatN, 96, "96"},
		{formatN, 1024, "1K"},
		{formatN, 1536, "1.5K"},
		{formatN, 2500, "2500"},
		{formatN, 131072, "128K"},
		{formatN, 1 << 20, "1M"},
		{formatN, 3 << 19, "1.5M"},
		{formatMiB, 0.5, "512 KiB"},
		{formatMiB, 48, "48 MiB"},
		{formatMiB, 1536, "1.5 GiB"},
		{formatMiB, 1200, "1200 MiB"},
		{formatMiB, 0.1 + 0.2, "307.2 KiB"},
		{shortNumber, 0.1 + 0.2, "0.3"},
	} {
		if got := c.f(c.v); got != c.want {
			t.Errorf("format(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}
