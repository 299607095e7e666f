package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/attn-go/attn/backend"
)

// quantWidths are the widths of 8-bit decoding kernels this CPU and build
// run (quantWidth's: 1 sixteen lanes, 0 eight): both on an AVX-512 CPU,
// whichever GODEBUG says, since the sixteen-lane CPU runs the eight-lane
// kernels too.
func quantWidths() []int {
	switch w := quantWidth(); {
	case w == 1:
		return []int{1, 0}
	case w == 0:
		return []int{0}
	}
	return nil
}

// quantRows makes n rows of d 8-bit values of dtype t at stride, with
// random codes (q8's −128 and 127 among them, and all-zero scales; every
// E4M3 pattern but NaN), and returns them with their values (rows ×
// stride, widened exactly; 0 between rows).
func quantRows(rng *rand.Rand, t backend.DType, n, stride int) (rawRows, []float64) {
	raw := rawRows{store: store{t: t}, stride: stride}
	vals := make([]float64, n*stride)
	switch t {
	case backend.Q8:
		raw.q8 = make([]int8, n*stride)
		raw.sc = make([]uint16, n*stride/backend.Q8Block)
		for i := range raw.q8 {
			switch rng.IntN(16) {
			case 0:
				raw.q8[i] = -128
			case 1:
				raw.q8[i] = 127
			default:
				raw.q8[i] = int8(rng.IntN(256) - 128)
			}
		}
		for i := range raw.sc {
			var d float32
			switch rng.IntN(8) {
			case 0: // an all-zero block's
			case 1:
				d = float32(math.Ldexp(rng.Float64()+0.5, -20)) // a subnormal half
			default:
				d = float32(rng.Float64() / 64)
			}
			raw.sc[i] = float16.Fromfloat32(d).Bits()
		}
		for i, c := range raw.q8 {
			vals[i] = float64(float16.Frombits(raw.sc[i/backend.Q8Block]).Float32()) * float64(c)
		}
	case backend.FP8:
		raw.f8 = make([]uint8, n*stride)
		for i := range raw.f8 {
			b := uint8(rng.IntN(256))
			for b&0x7f == 0x7f {
				b = uint8(rng.IntN(256))
			}
			raw.f8[i] = b
			vals[i] = float64(backend.DecodeFP8(b))
		}
	}
	return raw, vals
}

// TestQuantDecodeKernels checks the 8-bit decoding kernels, each width
// the CPU runs, against float64 sums of the values they read: key counts
// around the steps and axpy's chunks, head dims through each column path,
// strides wider than the rows; nothing written outside the rows and keys
// asked for.
func TestQuantDecodeKernels(t *testing.T) {
	widths := quantWidths()
	if len(widths) == 0 {
		t.Skip("no 8-bit decoding kernels on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	for _, w := range widths {
		for _, dt := range backend.Quants {
			for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 63, 64, 65, 200} {
				for _, d := range []int{32, 64, 96, 128, 256} {
					t.Run(fmt.Sprintf("w=%d/%v/n=%d/d=%d", w, dt, n, d), func(t *testing.T) {
						checkQuantKernels(t, rng, w, dt, n, d, d+32*(1+rng.IntN(3)))
					})
				}
			}
		}
	}
}

func checkQuantKernels(t *testing.T, rng *rand.Rand, w int, dt backend.DType, n, d, stride int) {
	const ldq, lds, ldacc = 300, 230, 290
	raw, kv := quantRows(rng, dt, n, stride)
	q := randF32(rng, 4*ldq)
	s := randF32(rng, 4*lds)
	before := append([]float32(nil), s...)
	const alpha = 0.37
	done := quantDotW(w, q, ldq, raw, n, d, s, lds, alpha)
	if step := 2 + 2*w; done != n/step*step {
		t.Fatalf("quantDot did %d keys of %d", done, n)
	}
	for r := range 4 {
		for j := range lds {
			got := s[r*lds+j]
			if j >= done {
				if got != before[r*lds+j] {
					t.Fatalf("s[%d][%d] = %v, written beyond the %d keys", r, j, got, done)
				}
				continue
			}
			var sum, mag float64
			for c := range d {
				x := float64(q[r*ldq+c]) * kv[j*stride+c]
				sum += x
				mag += math.Abs(x)
			}
			if want := alpha * sum; math.Abs(float64(got)-want) > 1e-6*float64(d)*alpha*mag+1e-30 {
				t.Fatalf("s[%d][%d] = %v, want %v", r, j, got, want)
			}
		}
	}
	p := randF32(rng, 4*ldq)
	for i := range p {
		p[i] = float32(math.Abs(float64(p[i]))) // softmax weights
	}
	acc := randF32(rng, 4*ldacc)
	before = append(before[:0], acc...)
	if !quantAxpyW(w, p, ldq, raw, n, d, acc, ldacc) {
		t.Fatal("quantAxpy did not run")
	}
	for r := range 4 {
		for c := range ldacc {
			got := acc[r*ldacc+c]
			if c >= d {
				if got != before[r*ldacc+c] {
					t.Fatalf("acc[%d][%d] = %v, written beyond the %d columns", r, c, got, d)
				}
				continue
			}
			want, mag := float64(before[r*ldacc+c]), math.Abs(float64(before[r*ldacc+c]))
			for j := range n {
				x := float64(p[r*ldq+j]) * kv[j*stride+c]
				want += x
				mag += math.Abs(x)
			}
			if math.Abs(float64(got)-want) > 1e-6*float64(n+1)*mag+1e-30 {
				t.Fatalf("acc[%d][%d] = %v, want %v", r, c, got, want)
			}
		}
	}
}

// The Go side refuses to run a kernel past its slices' ends: a call whose
// rows end short panics in Go.
func TestQuantDecodeBounds(t *testing.T) {
	for _, w := range quantWidths() {
		for _, dt := range backend.Quants {
			raw, _ := quantRows(rand.New(rand.NewPCG(1, 2)), dt, 8, 64)
			raw.q8, raw.f8 = raw.q8[:min(len(raw.q8), 7*64+63)], raw.f8[:min(len(raw.f8), 7*64+63)]
			if dt == backend.Q8 {
				raw.sc = raw.sc[:len(raw.sc)-1] // and the last block's scale
				raw.q8 = raw.q8[:7*64+64]
			}
			q, s := make([]float32, 4*64), make([]float32, 4*8)
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("w=%d %v: quantDot ran past K's end", w, dt)
					}
				}()
				quantDotW(w, q, 64, raw, 8, 64, s, 8, 1)
			}()
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("w=%d %v: quantAxpy ran past V's end", w, dt)
					}
				}()
				quantAxpyW(w, q, 64, raw, 8, 64, s, 8)
			}()
		}
	}
}

// FuzzQuantDecode runs the 8-bit kernels (each width) against decodeTile's
// loop in Go on rows widened by rawRows.row, on fuzzed bytes.
func FuzzQuantDecode(f *testing.F) {
	f.Add(uint8(0), uint8(5), uint8(1), uint8(1), []byte{1, 2, 3, 0x80, 0x7e, 0xfe, 0x08, 0x88})
	f.Add(uint8(1), uint8(65), uint8(3), uint8(2), []byte{0x7f, 0x80, 0x01, 0x00, 0x3c})
	f.Add(uint8(1), uint8(200), uint8(7), uint8(0), []byte{0xff, 0xff, 0x00})
	widths := quantWidths()
	f.Fuzz(func(t *testing.T, kind, nb, db, pad uint8, data []byte) {
		if len(widths) == 0 || len(data) == 0 {
			t.Skip()
		}
		dt := backend.Quants[kind%2]
		n, d := int(nb)%130, 32*(1+int(db)%8)
		stride := d + 32*(int(pad)%3)
		raw := rawRows{store: store{t: dt}, stride: stride}
		at := 0
		next := func() byte { at++; return data[(at-1)%len(data)] ^ byte(at/len(data)*37) }
		switch dt {
		case backend.Q8:
			raw.q8 = make([]int8, n*stride)
			raw.sc = make([]uint16, n*stride/backend.Q8Block)
			for i := range raw.q8 {
				raw.q8[i] = int8(next())
			}
			for i := range raw.sc {
				// Scales below 2: finite sums, whatever the codes.
				raw.sc[i] = uint16(next())<<8&0x3fff | uint16(next())
			}
		case backend.FP8:
			raw.f8 = make([]uint8, n*stride)
			for i := range raw.f8 {
				if raw.f8[i] = next(); raw.f8[i]&0x7f == 0x7f {
					raw.f8[i] = 0 // NaN: no cache holds it
				}
			}
		}
		rng := rand.New(rand.NewPCG(uint64(len(data)), uint64(n)))
		q := randF32(rng, 4*d)
		kv := make([]float32, max(n, 1)*d)
		for j := range n {
			raw.row(j, kv[j*d:(j+1)*d])
		}
		for _, w := range widths {
			s, want := make([]float32, 4*max(n, 1)), make([]float32, 4*max(n, 1))
			done := quantDotW(w, q, d, raw, n, d, s, max(n, 1), 0.5)
			dotRowsGo(q, d, 4, kv, d, done, d, want, max(n, 1), 0.5)
			for i := range s {
				if math.Abs(float64(s[i]-want[i])) > 1e-5*float64(d)*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("w=%d %v n=%d d=%d: s[%d] = %v, want %v", w, dt, n, d, i, s[i], want[i])
				}
			}
			p := randF32(rng, 4*max(n, 1))
			acc, wantAcc := make([]float32, 4*d), make([]float32, 4*d)
			if !quantAxpyW(w, p, max(n, 1), raw, n, d, acc, d) {
				t.Fatal("quantAxpy did not run")
			}
			axpyRowsGo(p, max(n, 1), 4, kv, d, n, d, wantAcc, d)
			for i := range acc {
				if math.Abs(float64(acc[i]-wantAcc[i])) > 1e-5*float64(n+1)*(1+math.Abs(float64(wantAcc[i]))) {
					t.Fatalf("w=%d %v n=%d d=%d: acc[%d] = %v, want %v", w, dt, n, d, i, acc[i], wantAcc[i])
				}
			}
		}
	})
}
