package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// expf against math.Exp at every float32 from −87.3 to 88.7 (about 2.1
// billion values would take too long; every 64th bit pattern is 33
// million), and at the edges and special values.
func TestExpf(t *testing.T) {
	worst, at := 0.0, float32(0)
	check := func(x float32) {
		want := math.Exp(float64(x))
		got := float64(expf(x))
		if e := math.Abs(got-want) / want; e > worst || math.IsNaN(e) && !math.IsNaN(worst) {
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
	if backendtest.Exceeds(worst, 2.4e-7) {
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
	b.Run("expShiftBF16", func(b *testing.B) {
		row := make([]float32, len(x))
		out := make([]uint16, len(x))
		for b.Loop() {
			copy(row, x)
			expShiftBF16(row, 0, out)
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

// expShift gives e^(x − m) within expf's bound for every x of rows of
// every length around the vector width (so both the eight-lane loop, where
// the CPU has it, and the scalar tail run), 0 for hidden keys and for
// arguments below float32's normal range, and the sum within 16 float32
// units in the last place of the float64 sum of the values (the vector
// loops add each lane's block of at most 16 values in float32).
func TestExpShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for n := 0; n <= 41; n++ {
		row := make([]float32, n)
		for j := range row {
			switch j % 9 {
			case 4:
				row[j] = float32(math.Inf(-1))
			case 7:
				row[j] = -95 // x − m below −87.34: flushed to 0
			default:
				row[j] = float32(rng.Float64()*20 - 15)
			}
		}
		const m = 3.25
		got := append([]float32(nil), row...)
		sum := expShift(got, m)
		want := 0.0
		for j, x := range row {
			w := math.Exp(float64(x - m))
			if float64(x-m) < -87.34 {
				w = 0
			}
			want += float64(got[j])
			if w == 0 && got[j] != 0 || w != 0 && backendtest.Exceeds(math.Abs(float64(got[j])-w), 2.4e-7*w) {
				t.Fatalf("n=%d: e^(%v − %v) = %v, want %v", n, x, m, got[j], w)
			}
		}
		if backendtest.Exceeds(math.Abs(sum-want), 16*0x1p-24*want) {
			t.Errorf("n=%d: sum %v, the values add to %v", n, sum, want)
		}
	}
}

// rowMax finds the largest value at every position, for every length
// around the vector widths (both of the AVX-512 loop's accumulators),
// −Inf included; −Inf for an empty row.
func TestRowMax(t *testing.T) {
	if m := rowMax(nil); !math.IsInf(float64(m), -1) {
		t.Errorf("rowMax(nil) = %v, want −Inf", m)
	}
	for n := 1; n <= 70; n++ { // up to four sixteen-lane vectors and tails
		for at := 0; at < n; at++ {
			row := make([]float32, n)
			for j := range row {
				row[j] = float32(-j) - 0.5
				if j%3 == 1 {
					row[j] = float32(math.Inf(-1))
				}
			}
			row[at] = 7
			if m := rowMax(row); m != 7 {
				t.Fatalf("n=%d, 7 at %d: rowMax %v", n, at, m)
			}
		}
		all := make([]float32, n)
		for j := range all {
			all[j] = float32(math.Inf(-1))
		}
		if m := rowMax(all); !math.IsInf(float64(m), -1) {
			t.Fatalf("n=%d all −Inf: rowMax %v", n, m)
		}
	}
}

// scale multiplies every element, for every length around the vector
// width, exactly as a float32 multiply does.
func TestScale(t *testing.T) {
	for n := 0; n <= 41; n++ {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i) - 13.25
		}
		want := make([]float32, n)
		for i := range x {
			want[i] = x[i] * 0.3
		}
		scale(x, 0.3)
		for i := range x {
			if x[i] != want[i] {
				t.Fatalf("n=%d: x[%d] = %v, want %v", n, i, x[i], want[i])
			}
		}
	}
}

// expShiftBF16 stores e^(x − m) rounded to bfloat16, within half a
// bfloat16 unit (2⁻⁸ relative) plus the exponential's own error
// (expBF16Err) of the exact value, exactly 0 for a hidden key (−Inf) and for arguments below
// −87.3 (2⁻¹²⁶), and returns the float32 values' sum, for lengths around
// the vector width and values far below the row's max.
func TestExpShiftBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for n := 0; n <= 70; n++ {
		row := make([]float32, n)
		for j := range row {
			row[j] = -float32(rng.Float64() * 30)
			switch j % 7 {
			case 3:
				row[j] = float32(math.Inf(-1))
			case 5:
				row[j] = -float32(88 + rng.Float64()*100) // e^x below 2⁻¹²⁶
			}
		}
		m := float32(rng.Float64() * 2)
		got := make([]uint16, n+1)
		got[n] = 0xdead
		sum := expShiftBF16(append([]float32(nil), row...), m, got[:n])
		want := 0.0
		for j, x := range row {
			e := math.Exp(float64(x) - float64(m))
			if float64(x)-float64(m) < -87.4 {
				e = 0
			}
			want += e
			g := float64(backend.BFloat16.Decode(got[j]))
			if e == 0 && g != 0 || backendtest.Exceeds(math.Abs(g-e), (0x1p-8+expBF16Err+3e-8)*e) {
				t.Fatalf("n=%d: out[%d] = %g, want e^(%g − %g) = %g", n, j, g, x, m, e)
			}
		}
		if backendtest.Exceeds(math.Abs(sum-want), (expBF16Err+1e-6)*want) {
			t.Fatalf("n=%d: sum %v, want %v", n, sum, want)
		}
		if got[n] != 0xdead {
			t.Fatalf("n=%d: wrote past out", n)
		}
	}
}

// softmaxRowsVec, where the CPU has it, gives each row's new max (the
// old one where it is larger), e^(x − max) within 8e-8 absolute and
// 1.2e-7·(1 + |x − max|·log₂e) relative (0 for −Inf and below e^−87.34),
// the sum within 16 float32 units in its
// last place, for rows of every vector count around the four-way max
// loop's, at a stride longer than the rows, rows of −Inf included; what
// lies between the rows is left alone. With out (bf16), each weight is
// e^(x − max) within expBF16Err relative more, rounded to bfloat16 (2⁻⁸
// relative more), the sum is of the float32 values (so within their
// bounds of the exact sum), and s is left as it was.
func TestSoftmaxRows(t *testing.T) {
	negInf := math.Inf(-1)
	for _, bf16 := range []bool{false, true} {
		t.Run(map[bool]string{false: "f32", true: "bf16"}[bf16], func(t *testing.T) {
			if !softmaxRowsFit(16, bf16) {
				t.Skip("no vector loop on this CPU or build: AVX2, AVX-512 or NEON without -tags purego runs this test")
			}
			rng := rand.New(rand.NewPCG(9, 9))
			for _, n := range []int{8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 128, 144, 256, 272, 1024} {
				if !softmaxRowsFit(n, bf16) {
					continue
				}
				const rows, pad = 7, 5
				stride := n + pad
				s := make([]float32, rows*stride)
				for j := range s {
					s[j] = float32(rng.Float64()*30 - 20)
				}
				m := []float64{negInf, 2.5, 50, negInf, -3, 0, negInf}
				for j := range n {
					s[3*stride+j] = float32(negInf) // a row with no visible key
					if j%5 == 1 {
						s[j] = float32(negInf)
					}
					if j%7 == 3 {
						s[stride+j] = -200 // far below the max: 0
					}
				}
				in := append([]float32(nil), s...)
				var out []uint16
				if bf16 {
					out = make([]uint16, len(s))
					for j := range out {
						out[j] = 0xdead
					}
				}
				mNew, sums := make([]float64, rows), make([]float64, rows)
				softmaxRowsVec(s, stride, rows, n, m, mNew, sums, out)
				for r := range rows {
					mx := m[r]
					for _, v := range in[r*stride : r*stride+n] {
						mx = max(mx, float64(v))
					}
					if mNew[r] != mx {
						t.Errorf("n=%d row %d: max %v, want %v", n, r, mNew[r], mx)
					}
					var want, exact, slack float64
					for j := range n {
						at := r*stride + j
						got := float64(s[at])
						if bf16 {
							got = float64(math.Float32frombits(uint32(out[at]) << 16))
						}
						w := 0.0
						x := float64(in[at]) - mx
						if !math.IsInf(mx, -1) && x >= -87.33 {
							w = math.Exp(x)
						}
						// A weight of 0 (x below −87.33, or −∞ for a masked
						// key, where (1 − x·log₂e)·w would be NaN) must be 0.
						abs, rel := 8e-8, 0.0
						if w != 0 {
							rel = 1.2e-7 * (1 - x*math.Log2E) * w
						}
						slack += min(8e-8, rel)
						if bf16 {
							abs, rel = abs+(0x1p-8+expBF16Err)*w, rel+(0x1p-8+expBF16Err)*w
						}
						if math.IsInf(mx, -1) && got != 0 || backendtest.Exceeds(math.Abs(got-w), min(abs, rel)) {
							t.Fatalf("n=%d row %d key %d: e^(%v − %v) = %v, want %v", n, r, j, in[at], mx, got, w)
						}
						want += got
						exact += w
					}
					if bf16 {
						// The sum is of the float32 weights, not of out's.
						if backendtest.Exceeds(math.Abs(sums[r]-exact), slack+(16*0x1p-24+expBF16Err)*exact) {
							t.Errorf("n=%d row %d: sum %v, the weights add to %v", n, r, sums[r], exact)
						}
					} else if backendtest.Exceeds(math.Abs(sums[r]-want), 16*0x1p-24*want) {
						t.Errorf("n=%d row %d: sum %v, the values add to %v", n, r, sums[r], want)
					}
					for j := n; j < stride && r*stride+j < len(s); j++ {
						if s[r*stride+j] != in[r*stride+j] || bf16 && out[r*stride+j] != 0xdead {
							t.Fatalf("n=%d row %d: wrote past the row, at %d", n, r, j)
						}
					}
				}
				if bf16 {
					for j := range s {
						if s[j] != in[j] && !(math.IsNaN(float64(s[j])) && math.IsNaN(float64(in[j]))) {
							t.Fatalf("n=%d: s changed at %d", n, j)
						}
					}
				}
			}
		})
	}
}

// softmaxRowsVec's exponential holds its bounds at every step of t = (v
// − max)·log₂e through four octaves below the max, where its range
// reduction (t's fraction, t's integer part) changes: a row of 2¹⁴
// values 2⁻¹² apart, and one with the max last.
func TestSoftmaxRowsDense(t *testing.T) {
	const n = 1 << 14
	if !softmaxRowsFit(n, false) {
		t.Skip("no vector loop on this CPU or build: AVX2, AVX-512 or NEON without -tags purego runs this test")
	}
	s := make([]float32, 2*n)
	for j := range n {
		s[j] = float32(-j) / 4096
		s[n+j] = float32(j-(n-1)) / 4096 // increasing, to the max 0
	}
	in := append([]float32(nil), s...)
	m, mNew, sums := []float64{math.Inf(-1), math.Inf(-1)}, make([]float64, 2), make([]float64, 2)
	softmaxRowsVec(s, n, 2, n, m, mNew, sums, nil)
	for j, v := range in {
		x := float64(v) // the max of each row is 0
		w := math.Exp(x)
		got := float64(s[j])
		if backendtest.Exceeds(math.Abs(got-w), min(8e-8, 1.2e-7*(1-x*math.Log2E)*w)) {
			t.Fatalf("value %d: e^%v = %v, want %v (%.3g relative)", j, x, got, w, (got-w)/w)
		}
	}
	if mNew[0] != 0 || mNew[1] != 0 || s[0] != 1 || s[2*n-1] != 1 {
		t.Errorf("max %v, %v; the max's weights %v, %v", mNew[0], mNew[1], s[0], s[2*n-1])
	}
}

// BenchmarkSoftmaxRows is one score sub-tile's online-softmax step, 256
// rows of 512 keys, where the CPU has the vector loop: f32 writes the
// weights over the scores, bf16 to a bfloat16 tile (the bf16 path's),
// and bf16-rows does what bf16 does one row at a time, as online does
// for the rows that see only some of a tile's keys (rowMax, then
// expShiftBF16).
func BenchmarkSoftmaxRows(b *testing.B) {
	const rows, n = 256, 512
	for _, c := range []struct {
		name       string
		bf16, each bool
	}{{"f32", false, false}, {"bf16", true, false}, {"bf16-rows", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			if !softmaxRowsFit(n, c.bf16) {
				b.Skip("no vector loop on this CPU")
			}
			rng := rand.New(rand.NewPCG(1, 1))
			s := make([]float32, rows*n)
			for j := range s {
				s[j] = float32(rng.Float64()*8 - 4)
			}
			var out []uint16
			if c.bf16 {
				out = make([]uint16, rows*n)
			}
			// Each f32 run's weights, in (0, 1], are the next one's scores.
			m, mNew, sums := make([]float64, rows), make([]float64, rows), make([]float64, rows)
			for b.Loop() {
				if c.each {
					for r := range rows {
						row := s[r*n : (r+1)*n]
						sums[r] = expShiftBF16(row, rowMax(row), out[r*n:(r+1)*n])
					}
					continue
				}
				for i := range m {
					m[i] = math.Inf(-1)
				}
				softmaxRowsVec(s, n, rows, n, m, mNew, sums, out)
			}
			b.ReportMetric(float64(b.N*rows*n)/b.Elapsed().Seconds()/1e9, "Gexp/s")
		})
	}
}
