package backendtest

import (
	"math"
	"testing"
)

func TestRowError(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		name string
		got  []float32
		want []float64
		e    float64 // NaN: want NaN
		fail bool    // Exceeds(e, 1e-3)
	}{
		{"exact", []float32{1, -2, 0}, []float64{1, -2, 0}, 0, false},
		{"relative to the row's largest", []float32{1, -2.5, 0}, []float64{1, -2, 0}, 0.25, true},
		{"all-zero reference: the difference", []float32{0, 1e-4}, []float64{0, 0}, float64(float32(1e-4)), false},
		{"empty row", nil, nil, 0, false},
		{"NaN output", []float32{1, float32(nan)}, []float64{1, 2}, nan, true},
		{"every output NaN", []float32{float32(nan), float32(nan)}, []float64{1, 2}, nan, true},
		{"NaN in a row of zeros", []float32{0, float32(nan)}, []float64{0, 0}, nan, true},
		{"infinite output", []float32{1, float32(inf)}, []float64{1, 2}, inf, true},
		{"the wrong infinity", []float32{float32(-inf), 1}, []float64{inf, 1}, inf, true},
		{"the expected infinity", []float32{float32(inf), 1}, []float64{inf, 1}, 0, false},
		{"a finite value where infinity is wanted", []float32{1, 1}, []float64{inf, 1}, inf, true},
		{"lengths differ", []float32{1}, []float64{1, 2}, nan, true},
	} {
		e := RowError(c.got, c.want)
		if !(e == c.e || math.IsNaN(e) && math.IsNaN(c.e)) {
			t.Errorf("%s: RowError = %v, want %v", c.name, e, c.e)
		}
		if f := Exceeds(e, 1e-3); f != c.fail {
			t.Errorf("%s: Exceeds(%v, 1e-3) = %v, want %v", c.name, e, f, c.fail)
		}
	}
	for _, c := range []struct {
		e, bound float64
		want     bool
	}{{0, 0, false}, {1e-3, 1e-3, false}, {2e-3, 1e-3, true}, {nan, 1e-3, true}, {inf, 1e-3, true}, {inf, inf, true}, {-inf, 1, true}, {nan, inf, true}} {
		if got := Exceeds(c.e, c.bound); got != c.want {
			t.Errorf("Exceeds(%v, %v) = %v, want %v", c.e, c.bound, got, c.want)
		}
	}
}
