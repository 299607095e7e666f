package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/x448/float16"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// quantWidths are the widths of 8-bit decoding kernels this CPU and build
// run (quantWidth's: on amd64 1 sixteen lanes, 0 eight; on arm64 0, NEON):
// both on an AVX-512 CPU, whichever GODEBUG says, since the sixteen-lane
// CPU runs the eight-lane kernels too.
func quantWidths() []int {
	switch w := quantWidth(); {
	case w == 1:
		return []int{1, 0}
	case w == 0:
		return []int{0}
	}
	return nil
}

// quantWidthsOrSkip is quantWidths, skipping t where this CPU and build
// have no 8-bit decoding kernels, and failing it instead where the CPU
// must run some (wantKernels: its flags, or ATTN_EXPECT_KERNELS).
func quantWidthsOrSkip(t *testing.T) []int {
	t.Helper()
	widths := quantWidths()
	if len(widths) == 0 {
		if want, _ := wantKernels(t); want["decode8"] != "" && want["decode8"] != "Go" {
			t.Fatalf("this CPU must run the %s 8-bit decoding kernels, and none run", want["decode8"])
		}
		t.Skip("no 8-bit decoding kernels on this CPU or build: AVX2, AVX-512 or NEON without -tags purego runs this test")
	}
	return widths
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
// quants8 are the dtypes the 8-bit kernels read (q4 reaches them as q8:
// q4Rows).
var quants8 = []backend.DType{backend.Q8, backend.FP8}

func TestQuantDecodeKernels(t *testing.T) {
	widths := quantWidthsOrSkip(t)
	rng := rand.New(rand.NewPCG(31, 32))
	for _, w := range widths {
		for _, dt := range quants8 {
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
	if step := quantStep(w); done != n/step*step {
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
			if want := alpha * sum; backendtest.Exceeds(math.Abs(float64(got)-want), 1e-6*float64(d)*alpha*mag+1e-30) {
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
			if backendtest.Exceeds(math.Abs(float64(got)-want), 1e-6*float64(n+1)*mag+1e-30) {
				t.Fatalf("acc[%d][%d] = %v, want %v", r, c, got, want)
			}
		}
	}
}

// TestQuantDecodeEdges holds the 8-bit kernels of each width the CPU runs
// to decodeTile's loop in Go, bit for bit, on the rows where a widening
// can go wrong: all-zero q8 blocks (a zero scale over any codes, zero
// codes under any scale), the codes −128 and 127, one outlier of 127 a
// block under float16's largest scale, E4M3's ±448, ±0 and its
// subnormals. Q, the weights and acc hold small integers and every value
// is a multiple of a power of two, so each product and sum is exact in
// float32, in any order: the kernels must give the Go loop's bits. Key
// counts run around the step (0, 1, 3, 4, 5) and a block of keys (31,
// 32, 33); the head dims a kernel cannot take (q8's block ± 16, or a
// stride that is not whole blocks; fp8's d not whole vectors of 16) are
// refused, leaving s and acc untouched.
func TestQuantDecodeEdges(t *testing.T) {
	widths := quantWidthsOrSkip(t)
	h := func(x float32) uint16 { return float16.Fromfloat32(x).Bits() }
	type fill func(rng *rand.Rand, j, c int) (code uint8, scale uint16)
	q8 := func(code func(rng *rand.Rand, j, c int) int8, scale func(j, b int) uint16) fill {
		return func(rng *rand.Rand, j, c int) (uint8, uint16) {
			return uint8(code(rng, j, c)), scale(j, c/backend.Q8Block)
		}
	}
	fp8 := func(pick ...uint8) fill {
		return func(rng *rand.Rand, _, _ int) (uint8, uint16) { return pick[rng.IntN(len(pick))], 0 }
	}
	anyCode := func(rng *rand.Rand, _, _ int) int8 { return int8(rng.IntN(256) - 128) }
	cases := []struct {
		name      string
		dt        backend.DType
		d, stride int
		fill      fill
		refused   bool
	}{
		{"q8/zero scales", backend.Q8, 64, 96, q8(anyCode, func(int, int) uint16 { return 0 }), false},
		{"q8/zero blocks", backend.Q8, 128, 128, q8(func(rng *rand.Rand, j, c int) int8 {
			if (j+c/backend.Q8Block)%2 == 0 {
				return 0 // every other block all zero
			}
			return anyCode(rng, j, c)
		}, func(j, b int) uint16 { return h(float32(int(1) << ((j + b) % 3))) }), false},
		{"q8/-128 and 127", backend.Q8, 256, 288, q8(func(_ *rand.Rand, j, c int) int8 {
			if (j+c)%2 == 0 {
				return -128
			}
			return 127
		}, func(int, int) uint16 { return h(1) }), false},
		{"q8/outliers", backend.Q8, 128, 160, q8(func(rng *rand.Rand, j, c int) int8 {
			if c%backend.Q8Block == (7*j)%backend.Q8Block {
				return 127 // one a block, under float16's largest scale
			}
			return int8(rng.IntN(7) - 3)
		}, func(int, int) uint16 { return h(65504) }), false},
		{"fp8/±448, ±0", backend.FP8, 48, 64, fp8(0x7e, 0xfe, 0x00, 0x80, 0x78, 0xf0), false},
		{"fp8/subnormals", backend.FP8, 64, 80, fp8(0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x08, 0x88), false},
		{"q8/d=16", backend.Q8, 16, 32, q8(anyCode, func(int, int) uint16 { return h(1) }), true},
		{"q8/d=48", backend.Q8, 48, 64, q8(anyCode, func(int, int) uint16 { return h(1) }), true},
		{"q8/stride=48", backend.Q8, 32, 48, q8(anyCode, func(int, int) uint16 { return h(1) }), true},
		{"fp8/d=8", backend.FP8, 8, 16, fp8(0x38), true},
		{"fp8/d=24", backend.FP8, 24, 32, fp8(0x38), true},
	}
	rng := rand.New(rand.NewPCG(46, 8))
	ints := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.IntN(9) - 4)
		}
		return x
	}
	for _, tc := range cases {
		for _, n := range []int{0, 1, 3, 4, 5, 31, 32, 33} {
			raw := rawRows{store: store{t: tc.dt}, stride: tc.stride}
			switch tc.dt {
			case backend.Q8:
				raw.q8 = make([]int8, n*tc.stride)
				raw.sc = make([]uint16, (n*tc.stride+backend.Q8Block-1)/backend.Q8Block)
			case backend.FP8:
				raw.f8 = make([]uint8, n*tc.stride)
			}
			for j := range n {
				for c := range tc.stride {
					code, scale := tc.fill(rng, j, c)
					if i := j*tc.stride + c; tc.dt == backend.Q8 {
						raw.q8[i] = int8(code)
						raw.sc[i/backend.Q8Block] = scale
					} else {
						raw.f8[i] = code
					}
				}
			}
			kv := make([]float32, max(n, 1)*tc.d)
			if !tc.refused {
				for j := range n {
					raw.row(j, kv[j*tc.d:(j+1)*tc.d])
				}
			}
			const ldq, lds, ldacc = 300, 40, 280
			q, p := ints(4*ldq), ints(4*ldq)
			for _, w := range widths {
				t.Run(fmt.Sprintf("w=%d/%s/n=%d", w, tc.name, n), func(t *testing.T) {
					s, acc := ints(4*lds), ints(4*ldacc)
					for i := range acc {
						acc[i] *= 64 // a multiple of the outliers' 32: exact sums
					}
					want, wantAcc := slices.Clone(s), slices.Clone(acc)
					done := quantDotW(w, q, ldq, raw, n, tc.d, s, lds, 0.5)
					ran := quantAxpyW(w, p, ldq, raw, n, tc.d, acc, ldacc)
					if tc.refused {
						if done != 0 || ran {
							t.Fatalf("the kernels took d=%d, stride %d: %d keys, axpy %v", tc.d, tc.stride, done, ran)
						}
					} else {
						if step := quantStep(w); done != n/step*step || !ran {
							t.Fatalf("quantDot did %d keys of %d, quantAxpy ran: %v", done, n, ran)
						}
						dotRowsGo(q, ldq, 4, kv, tc.d, done, tc.d, want, lds, 0.5)
						axpyRowsGo(p, ldq, 4, kv, tc.d, n, tc.d, wantAcc, ldacc)
					}
					for i := range s {
						if math.Float32bits(s[i]) != math.Float32bits(want[i]) {
							t.Fatalf("s[%d][%d] = %v, want %v", i/lds, i%lds, s[i], want[i])
						}
					}
					for i := range acc {
						if math.Float32bits(acc[i]) != math.Float32bits(wantAcc[i]) {
							t.Fatalf("acc[%d][%d] = %v, want %v", i/ldacc, i%ldacc, acc[i], wantAcc[i])
						}
					}
				})
			}
		}
	}
}

// The Go side refuses to run a kernel past its slices' ends: a call whose
// rows end short panics in Go.
func TestQuantDecodeBounds(t *testing.T) {
	for _, w := range quantWidths() {
		for _, dt := range quants8 {
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
	f.Fuzz(checkQuantFuzz)
}

// checkQuantFuzz is FuzzQuantDecode's check of one input.
func checkQuantFuzz(t *testing.T, kind, nb, db, pad uint8, data []byte) {
	if len(data) == 0 {
		t.Skip("no codes to read")
	}
	widths := quantWidthsOrSkip(t)
	dt := quants8[kind%2]
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
			if backendtest.Exceeds(math.Abs(float64(s[i]-want[i])), 1e-5*float64(d)*(1+math.Abs(float64(want[i])))) {
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
			if backendtest.Exceeds(math.Abs(float64(acc[i]-wantAcc[i])), 1e-5*float64(n+1)*(1+math.Abs(float64(wantAcc[i])))) {
				t.Fatalf("w=%d %v n=%d d=%d: acc[%d] = %v, want %v", w, dt, n, d, i, acc[i], wantAcc[i])
			}
		}
	}
}
