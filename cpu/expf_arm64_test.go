//go:build arm64 && !purego

package cpu

import (
	"math"
	"testing"

	"github.com/attn-go/attn/backend/backendtest"
)

// The NEON loops against math.Exp and the Go loop, value by value, at
// every 1024th float32 from −87.3 to 0 (they round differently from the
// Go loop: fused multiply-adds, and the polynomial by Estrin's scheme),
// and below −87.34 (0), −Inf and NaN included.
func TestExpShiftNEON(t *testing.T) {
	if !hasNEON {
		t.Skip("this CPU has no ASIMD")
	}
	lo, hi := math.Float32bits(0), math.Float32bits(87.33)
	var row []float32
	for b := lo; b <= hi; b += 1024 {
		row = append(row, -math.Float32frombits(b))
	}
	row = append(row, -87.35, -90, -1000, float32(math.Inf(-1)), float32(math.NaN()))
	for len(row)%8 != 0 {
		row = append(row, -0.5)
	}
	ref := append([]float32(nil), row...)
	sg := expShiftGo(ref, 0)
	vec := append([]float32(nil), row...)
	sv := expShiftNEON(vec, 0)
	worst := 0.0
	for j, x := range row {
		want := math.Exp(float64(x))
		if !(x >= expLo) {
			want = 0
		}
		if want == 0 && vec[j] != 0 || want != 0 && backendtest.Exceeds(math.Abs(float64(vec[j])-want), 2.4e-7*want) {
			t.Fatalf("e^%v = %v, want %v", x, vec[j], want)
		}
		if want != 0 {
			worst = max(worst, math.Abs(float64(vec[j])-want)/want)
		}
		if d := math.Abs(float64(vec[j] - ref[j])); backendtest.Exceeds(d, 2.4e-7*float64(ref[j])) || (ref[j] == 0) != (vec[j] == 0) {
			t.Fatalf("e^%v = %v, Go loop %v", x, vec[j], ref[j])
		}
	}
	if backendtest.Exceeds(math.Abs(sv-sg), 1e-6*sg) {
		t.Errorf("sum %v, Go loop %v", sv, sg)
	}
	t.Logf("NEON: largest relative error %.3g over %d arguments", worst, len(row))
}
