//go:build amd64 && !purego

package cpu

import (
	"math"
	"testing"

	"github.com/attn-go/attn/backend/backendtest"
)

// Each vector loop the CPU has, against math.Exp and against the Go
// loop, value by value, at every 1024th float32 from −87.3 to 0 (they
// round differently from the Go loop: fused multiply-adds, and the
// polynomial by Estrin's scheme), and below −87.34 (0).
func TestExpShiftVector(t *testing.T) {
	lo, hi := math.Float32bits(0), math.Float32bits(87.33)
	var row []float32
	for b := lo; b <= hi; b += 1024 {
		row = append(row, -math.Float32frombits(b))
	}
	row = append(row, -87.35, -90, -1000, float32(math.Inf(-1)))
	for len(row)%16 != 0 {
		row = append(row, -0.5)
	}
	ref := append([]float32(nil), row...)
	sg := expShiftGo(ref, 0)
	for _, l := range []struct {
		name string
		has  bool
		fn   func([]float32, float32) float64
	}{{"AVX2", hasAVX2, expShiftAVX2}, {"AVX-512", hasAVX512, expShiftAVX512}} {
		if !l.has {
			t.Logf("%s: this CPU does not have it", l.name)
			continue
		}
		vec := append([]float32(nil), row...)
		sv := l.fn(vec, 0)
		worst := 0.0
		for j, x := range row {
			want := math.Exp(float64(x))
			if x < expLo {
				want = 0
			}
			if want == 0 && vec[j] != 0 || want != 0 && backendtest.Exceeds(math.Abs(float64(vec[j])-want), 2.4e-7*want) {
				t.Fatalf("%s: e^%v = %v, want %v", l.name, x, vec[j], want)
			}
			if want != 0 {
				worst = max(worst, math.Abs(float64(vec[j])-want)/want)
			}
			if d := math.Abs(float64(vec[j] - ref[j])); backendtest.Exceeds(d, 2.4e-7*float64(ref[j])) || (ref[j] == 0) != (vec[j] == 0) {
				t.Fatalf("%s: e^%v = %v, Go loop %v", l.name, x, vec[j], ref[j])
			}
		}
		if backendtest.Exceeds(math.Abs(sv-sg), 1e-6*sg) {
			t.Errorf("%s: sum %v, Go loop %v", l.name, sv, sg)
		}
		t.Logf("%s: largest relative error %.3g over %d arguments", l.name, worst, len(row))
	}
}
