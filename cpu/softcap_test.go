package cpu

import (
	"math"
	"testing"
)

// softcap (its vector loop where the CPU has one, tanhf for the rest)
// against math.Tanh in float64, over scores from 0 to far past the cap,
// both signs, row lengths that leave a tail, and several caps. The bound,
// 4e-7 of c, is what the attention tolerance leaves many times over; a
// wrong lane, sign or constant is off by far more.
func TestSoftcap(t *testing.T) {
	for _, c := range []float32{0.05, 1, 30, 1e4} {
		for _, n := range []int{0, 1, 7, 8, 9, 16, 33, 1000} {
			row := make([]float32, n)
			want := make([]float64, n)
			for j := range row {
				// Spread over ±60c, with exact zeros, tiny and huge values.
				x := float32(60*float64(c)*math.Sin(float64(j)*0.7)) * float32(math.Pow(10, float64(j%7-3)))
				switch j % 11 {
				case 3:
					x = 0
				case 5:
					x = float32(math.Copysign(1e-30, float64(x)))
				case 7:
					x = float32(math.Copysign(3e38, float64(x)))
				}
				row[j] = x
				want[j] = float64(c) * math.Tanh(float64(x)/float64(c))
			}
			in := append([]float32(nil), row...)
			softcap(row, c)
			for j := range row {
				if d := math.Abs(float64(row[j]) - want[j]); d > 4e-7*float64(c) || math.Signbit(float64(row[j])) != math.Signbit(want[j]) && want[j] != 0 {
					t.Fatalf("c=%g n=%d: softcap(%g) = %g, want %g (off by %.2g c)", c, n, in[j], row[j], want[j], d/float64(c))
				}
			}
		}
	}
}
