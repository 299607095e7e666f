package cpu

import (
	"math"
	"testing"
)

// expf against math.Exp at every float32 from −87.3 to 88.7 (about 2.1
// billion values would take too long; every 64th bit pattern is 33
// million), and at the edges and special values.
func TestExpf(t *testing.T) {
	worst, at := 0.0, float32(0)
	check := func(x float32) {
		want := math.Exp(float64(x))
		got := float64(expf(x))
		if e := math.Abs(got-want) / want; e > worst {
			worst, at = e, x
		}
	}
	step := uint32(64)
	if testing.Short() {
		step = 4096
	}
	for _, r := range [][2]float32{{0, 88.72}, {-87.33, 0}} {
		lo, hi := math.Float32bits(r[0]), math.Float32bits(r[1])
		if r[0] < 0 {
			lo, hi = math.Float32bits(0), math.Float32bits(-r[0])
		}
		for b := lo; b <= hi; b += step {
			x := math.Float32frombits(b)
			if r[0] < 0 {
				x = -x
			}
			check(x)
		}
	}
	for _, x := range []float32{0, -0.0, 1, -1, 0.34657359, -0.34657359, 88.72, 88.7228, -87.336, 1e-30, -1e-30} {
		check(x)
	}
	if worst > 2.4e-7 {
		t.Errorf("largest relative error %.3g at x = %v, want ≤ 2.4e-7", worst, at)
	}
	t.Logf("largest relative error %.3g at x = %v", worst, at)

	for _, c := range []struct{ x, want float32 }{
		{-87.4, 0}, {-1000, 0}, {float32(math.Inf(-1)), 0},
		{88.73, float32(math.Inf(1))}, {float32(math.Inf(1)), float32(math.Inf(1))},
		{0, 1},
	} {
		if got := expf(c.x); got != c.want {
			t.Errorf("expf(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := expf(float32(math.NaN())); got == got {
		t.Errorf("expf(NaN) = %v", got)
	}
}

func BenchmarkExpf(b *testing.B) {
	x := make([]float32, 4096)
	for i := range x {
		x[i] = -float32(i) / 256
	}
	b.Run("expf", func(b *testing.B) {
		var s float32
		for b.Loop() {
			for _, v := range x {
				s += expf(v)
			}
		}
		b.ReportMetric(float64(b.N*len(x))/b.Elapsed().Seconds()/1e9, "Gexp/s")
	})
	b.Run("expShift", func(b *testing.B) {
		row := make([]float32, len(x))
		for b.Loop() {
			copy(row, x)
			expShift(row, 0)
		}
		b.ReportMetric(float64(b.N*len(x))/b.Elapsed().Seconds()/1e9, "Gexp/s")
	})
	b.Run("math.Exp", func(b *testing.B) {
		var s float32
		for b.Loop() {
			for _, v := range x {
				s += float32(math.Exp(float64(v)))
			}
		}
		b.ReportMetric(float64(b.N*len(x))/b.Elapsed().Seconds()/1e9, "Gexp/s")
	})
}

// expShift is expf(x − m) for every x of a row, and sums them.
func TestExpShift(t *testing.T) {
	row := []float32{0, -1, 3.5, float32(math.Inf(-1)), -90, 2, -0.25}
	const m = 3.5
	want := make([]float32, len(row))
	sum := 0.0
	for j, x := range row {
		want[j] = expf(x - m)
		sum += float64(want[j])
	}
	got := append([]float32(nil), row...)
	if s := expShift(got, m); s != sum {
		t.Errorf("sum %v, want %v", s, sum)
	}
	for j := range got {
		if got[j] != want[j] {
			t.Errorf("e^(%v − %v) = %v, expf gives %v", row[j], m, got[j], want[j])
		}
	}
}
