//go:build amd64 && !purego

package cpu

import (
	"math"
	"testing"
)

// The AVX2 loop and the Go loop agree value by value within two units in
// the last place (they round differently: fused multiply-adds), on a
// sweep of arguments from −90 to 0.
func TestExpShiftAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("this CPU has no AVX2 and FMA")
	}
	row := make([]float32, 1<<16)
	for j := range row {
		row[j] = -90 * float32(j) / float32(len(row))
	}
	vec, ref := append([]float32(nil), row...), append([]float32(nil), row...)
	sv, sg := expShiftAVX2(vec, 0), expShiftGo(ref, 0)
	for j := range row {
		if d := math.Abs(float64(vec[j] - ref[j])); d > 2.4e-7*float64(ref[j]) || (ref[j] == 0) != (vec[j] == 0) {
			t.Fatalf("e^%v: AVX2 %v, Go %v", row[j], vec[j], ref[j])
		}
	}
	if math.Abs(sv-sg) > 1e-6*sg {
		t.Errorf("sums: AVX2 %v, Go %v", sv, sg)
	}
}
