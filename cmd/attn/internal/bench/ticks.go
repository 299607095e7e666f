package bench

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// The number of labelled ticks log2Ticks aims for on an axis: enough to
// read a value off it, few enough that labels do not collide on a
// 10×5-inch chart.
const (
	minTickLabels = 4
	maxTickLabels = 10
)

// log2Ticks marks a log-scaled axis at powers of two, labelling at least
// minTickLabels ticks over any range. gonum's LogTicks labels only powers
// of ten, which leaves two labels on a memory axis from 30 to 700 MiB.
//
// Over four or more octaves it labels every power of two, or every
// second (third, ...) one to keep to maxTickLabels, the others left as
// unlabelled ticks; over two or three it labels 1.5·2ᵏ too (32, 48, 64,
// 96 MiB); over less it falls back to evenly spaced round numbers
// (linearTicks). format writes a label.
type log2Ticks struct {
	format func(float64) string
}

var _ plot.Ticker = log2Ticks{}

// Ticks returns the ticks in [lo, hi]; none where a log scale has no
// meaning (lo ≤ 0, hi < lo).
func (t log2Ticks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi >= lo) || math.IsInf(hi, 0) {
		return nil
	}
	// e0 and e1 are the first and last powers of two in [lo, hi]; Log2
	// is exact at powers of two, the loops fix rounding elsewhere.
	e0, e1 := int(math.Ceil(math.Log2(lo))), int(math.Floor(math.Log2(hi)))
	for math.Ldexp(1, e0) < lo {
		e0++
	}
	for math.Ldexp(1, e1) > hi {
		e1--
	}
	if octaves := e1 - e0 + 1; octaves >= minTickLabels {
		every := (octaves + maxTickLabels - 1) / maxTickLabels
		var ticks []plot.Tick
		for e := e0; e <= e1; e++ {
			v := math.Ldexp(1, e)
			tick := plot.Tick{Value: v}
			if ((e%every)+every)%every == 0 { // 1, 4, 16, ... for every = 2, whatever the range
				tick.Label = t.format(v)
			}
			ticks = append(ticks, tick)
		}
		return ticks
	}
	var ticks []plot.Tick
	for e := e0 - 1; e <= e1; e++ {
		for _, m := range []float64{1, 1.5} {
			if v := m * math.Ldexp(1, e); v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v, Label: t.format(v)})
			}
		}
	}
	if len(ticks) >= minTickLabels {
		return ticks
	}
	return linearTicks(lo, hi, t.format)
}

// niceTicks marks a linear axis at round numbers, at least
// minTickLabels of them (plot.DefaultTicks often labels three: 0, 80,
// 160 GFLOP/s).
type niceTicks struct{}

var _ plot.Ticker = niceTicks{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi >= lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	return linearTicks(lo, hi, shortNumber)
}

// linearTicks labels the multiples of the largest 1, 2 or 5 × 10ᵏ step
// with at least minTickLabels of them in [lo, hi] (lo ≤ hi): a linear
// axis's ticks, and a log axis's too narrow for its powers of two to
// show.
func linearTicks(lo, hi float64, format func(float64) string) []plot.Tick {
	if hi == lo {
		return []plot.Tick{{Value: lo, Label: format(lo)}}
	}
	// With 10ᵏ ≤ hi − lo, a step of 10ᵏ⁻¹ has at least 9 multiples in
	// the range: the loop ends by then.
	top := math.Floor(math.Log10(hi - lo))
	for k := top; k >= top-1; k-- {
		for _, m := range []float64{5, 2, 1} {
			step := m * math.Pow(10, k)
			first, last := math.Ceil(lo/step), math.Floor(hi/step)
			if last-first+1 < minTickLabels {
				continue
			}
			var ticks []plot.Tick
			for i := first; i <= last; i++ {
				v := i * step
				ticks = append(ticks, plot.Tick{Value: v, Label: format(v)})
			}
			return ticks
		}
	}
	return []plot.Tick{{Value: lo, Label: format(lo)}, {Value: hi, Label: format(hi)}}
}

// shortNumber writes x with at most six significant digits and no
// exponent, so that the rounding of i·step does not show (0.30000000000000004).
func shortNumber(x float64) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// formatN labels a sequence length: 512, 1.5K, 16K, 1M.
func formatN(n float64) string {
	switch {
	case n >= 1<<20 && math.Mod(n, 1<<19) == 0:
		return shortNumber(n/(1<<20)) + "M"
	case n >= 1<<10 && math.Mod(n, 1<<9) == 0:
		return shortNumber(n/(1<<10)) + "K"
	}
	return shortNumber(n)
}

// formatMiB labels an amount of memory given in MiB: 512 KiB, 48 MiB,
// 1.5 GiB, and 1200 MiB rather than 1.17188 GiB.
func formatMiB(mib float64) string {
	switch {
	case mib >= 1<<10 && math.Mod(mib, 128) == 0:
		return shortNumber(mib/(1<<10)) + " GiB"
	case mib >= 1:
		return shortNumber(mib) + " MiB"
	}
	return shortNumber(mib*(1<<10)) + " KiB"
}
