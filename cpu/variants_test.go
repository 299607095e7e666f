package cpu

import (
	"math"
	"testing"

	"github.com/attn-go/attn/backend/backendtest"
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
				if d := math.Abs(float64(row[j]) - want[j]); backendtest.Exceeds(d, 4e-7*float64(c)) || math.Signbit(float64(row[j])) != math.Signbit(want[j]) && want[j] != 0 {
					t.Fatalf("c=%g n=%d: softcap(%g) = %g, want %g (off by %.2g c)", c, n, in[j], row[j], want[j], d/float64(c))
				}
			}
		}
	}
}

// alibi (its vector loops where the CPU has them, the Go loop for the
// rest) against −m·|d0 − j| added in float64, for rows that the query
// position lies before, inside and after, odd lengths that leave a tail,
// and a position so far off (past 2²⁴) that the vector loops must leave
// the row to the integer loop. Three roundings (the distance past 2²⁴,
// the product and the sum) are the most either path may add.
func TestALiBi(t *testing.T) {
	for _, d0 := range []int{0, 5, 17, -3, -40, 1000, 1 << 24, 1<<24 + 3, -(1 << 24), 1 << 30} {
		for _, n := range []int{0, 1, 7, 8, 9, 16, 17, 31, 33, 100} {
			for _, m := range []float32{0.5, 0.0078125, 0.3} {
				row := make([]float32, n)
				for j := range row {
					row[j] = float32(math.Sin(float64(j)*1.3)) * 4
				}
				in := append([]float32(nil), row...)
				alibi(row, m, d0)
				for j := range row {
					dist := math.Abs(float64(d0 - j))
					want := float64(in[j]) - float64(m)*dist
					tol := 1.8e-7 * (math.Abs(float64(in[j])) + float64(m)*dist)
					if d := math.Abs(float64(row[j]) - want); backendtest.Exceeds(d, tol) {
						t.Fatalf("d0=%d n=%d m=%g: j=%d: %g, want %g (off by %.3g, allowed %.3g)", d0, n, m, j, row[j], want, d, tol)
					}
				}
			}
		}
	}
}

// BenchmarkScoreMods times the softcap and ALiBi loops over a row of 256
// scores, the fused loop's key tile, beside expShift on the same row:
// what each costs a score, on whichever vector loop this CPU runs.
//
//	go test -run '^$' -bench ScoreMods ./cpu
func BenchmarkScoreMods(b *testing.B) {
	x := make([]float32, 256)
	for i := range x {
		x[i] = float32(math.Sin(float64(i))) * 40
	}
	row := make([]float32, len(x))
	for _, bc := range []struct {
		name string
		f    func()
	}{
		{"expShift", func() { expShift(row, 40) }},
		{"softcap", func() { softcap(row, 30) }},
		{"alibi", func() { alibi(row, 0.0625, 100) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				copy(row, x)
				bc.f()
			}
			b.ReportMetric(float64(b.N*len(x))/b.Elapsed().Seconds()/1e9, "Gscore/s")
		})
	}
}
