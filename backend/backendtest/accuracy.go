package backendtest

import "math"

// RowError is a row's error relative to its largest reference value:
// max|got − want| / max|want| over the row (the difference itself where
// every wanted value is 0). An element equal to its reference counts 0,
// an infinity where the reference holds the same one among them; an
// element that is NaN, or an infinity the reference does not hold, makes
// the row's error NaN or +Inf, which Exceeds fails against any bound.
// The lengths must match: a shorter got reads as missing values (NaN).
func RowError(got []float32, want []float64) float64 {
	if len(got) != len(want) {
		return math.NaN()
	}
	diff, scale := 0.0, 0.0
	for i, w := range want {
		g := float64(got[i])
		switch {
		case g == w:
			// Exact, infinities of the same sign included.
		case math.IsNaN(g) || math.IsNaN(w):
			return math.NaN()
		default:
			// A wrong infinity makes diff +Inf; Go's max keeps it.
			diff = max(diff, math.Abs(g-w))
		}
		if !math.IsInf(w, 0) {
			scale = max(scale, math.Abs(w))
		}
	}
	if scale > 0 {
		return diff / scale
	}
	return diff
}

// Exceeds reports whether err, an error measured against the reference,
// fails bound: err > bound, and also a NaN or infinite err. A check
// written as err > bound passes a NaN, which compares false with
// everything, and Go's max carries a NaN through a row's worst, so an
// output of NaNs would pass it; every accuracy check in attn goes
// through Exceeds instead.
func Exceeds(err, bound float64) bool {
	return !(err <= bound) || math.IsInf(err, 0)
}
