package cpu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend"
)

// writeWidths are the widths of the 8-bit writing loops this CPU and
// build run for t (quantWriteWidth's): both on an AVX-512 CPU.
func writeWidths(t backend.DType) []int {
	switch quantWriteWidth(t) {
	case 1:
		return []int{1, 0}
	case 0:
		return []int{0}
	}
	return nil
}

// checkQ8Write quantizes src (whole blocks, magnitudes below Q8Max) on
// the loops of each width, the tail in Go as quantWrite does, and
// fails unless the bytes are backend.QuantizeQ8's.
func checkQ8Write(t testing.TB, name string, src []float32) {
	t.Helper()
	n := len(src)
	wantQ, wantS := make([]int8, n), make([]uint16, n/backend.Q8Block)
	if blk := backend.QuantizeQ8(wantQ, wantS, src); blk >= 0 {
		t.Fatalf("%s: block %d refused", name, blk)
	}
	for _, w := range writeWidths(backend.Q8) {
		q, s := make([]int8, n), make([]uint16, n/backend.Q8Block)
		if done := quantQ8Vec(w, q, s, src); done != n {
			t.Fatalf("%s w=%d: the loop took %d of %d values", name, w, done, n)
		}
		for blk := range s {
			lo, hi := blk*backend.Q8Block, (blk+1)*backend.Q8Block
			if s[blk] != wantS[blk] || !slices.Equal(q[lo:hi], wantQ[lo:hi]) {
				t.Fatalf("%s w=%d: block %d of %v\nis  %#04x %v\nwant %#04x %v", name, w, blk, src[lo:hi], s[blk], q[lo:hi], wantS[blk], wantQ[lo:hi])
			}
		}
	}
}

// checkFP8Write encodes src on the loops of each width (and the tail in
// Go) and fails unless the bytes are backend.EncodeFP8s's.
func checkFP8Write(t testing.TB, name string, src []float32) {
	t.Helper()
	want := make([]uint8, len(src))
	backend.EncodeFP8s(want, src)
	for _, w := range writeWidths(backend.FP8) {
		got := make([]uint8, len(src))
		done := encodeFP8Vec(w, got, src)
		if done != len(src)&^7 {
			t.Fatalf("%s w=%d: the loops took %d of %d values", name, w, done, len(src))
		}
		backend.EncodeFP8s(got[done:], src[done:])
		if !bytes.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s w=%d: %v (%#08x) is %#02x, want %#02x", name, w, src[i], math.Float32bits(src[i]), got[i], want[i])
				}
			}
		}
	}
}

// q8Below is the largest float32 below backend.Q8Max.
var q8Below = math.Nextafter32(backend.Q8Max, 0)

func TestQuantWriteQ8(t *testing.T) {
	rng := rand.New(rand.NewPCG(46, 1))
	block := func(f func(i int) float32) []float32 {
		x := make([]float32, backend.Q8Block)
		for i := range x {
			x[i] = f(i)
		}
		return x
	}
	var cases []struct {
		name string
		src  []float32
	}
	add := func(name string, blocks ...[]float32) {
		cases = append(cases, struct {
			name string
			src  []float32
		}{name, slices.Concat(blocks...)})
	}
	// Random blocks at magnitudes from float32's subnormals to Q8Max.
	var random [][]float32
	for e := -149; e <= 22; e++ {
		s := math.Ldexp(1, e)
		random = append(random, block(func(int) float32 { return float32(rng.NormFloat64() * s) }))
	}
	add("random", random...)
	// Ties: amax 127·2^e gives d = 2^e and id = 2^−e, so (k+½)·2^e is a
	// product exactly halfway, of either sign.
	var ties [][]float32
	for _, e := range []int{-20, -8, -1, 0, 3, 9} {
		p := math.Ldexp(1, e)
		ties = append(ties, block(func(i int) float32 {
			if i == 0 {
				return float32(127 * p)
			}
			k := float64(i%127) + 0.5
			if i%2 == 1 {
				k = -k
			}
			return float32(k * p)
		}))
	}
	// And just either side of a half.
	ties = append(ties, block(func(i int) float32 {
		if i == 0 {
			return 127
		}
		return math.Nextafter32(float32(i)+0.5, float32(i%3-1)*1000)
	}))
	add("ties", ties...)
	zero := block(func(int) float32 { return 0 })
	negZero := block(func(int) float32 { return float32(math.Copysign(0, -1)) })
	add("zero", zero, negZero, block(func(i int) float32 {
		if i == 7 {
			return float32(math.Copysign(0, -1))
		}
		return 0
	}))
	// Subnormal float32 blocks (1/d overflows: Go's codes are 0) and
	// blocks whose d is a subnormal float32 (its error pushes codes past
	// 127, which wrap as int8(int32(·)) does).
	var tiny [][]float32
	for e := -149; e <= -110; e++ {
		top := math.Ldexp(1, e)
		tiny = append(tiny, block(func(i int) float32 {
			if i == 3 {
				return float32(top * (1 + rng.Float64()))
			}
			return float32(top * (2*rng.Float64() - 1))
		}))
		tiny = append(tiny, block(func(int) float32 { return math.Float32frombits(rng.Uint32N(1 << 23)) }))
	}
	add("subnormal", tiny...)
	// Scales that are float16 subnormals (d below 2⁻¹⁴, amax ~1e-6),
	// and ones that round across float16's boundaries.
	var f16 [][]float32
	for i := range 200 {
		amax := 127 * math.Ldexp(1+rng.Float64(), -40+i/5)
		f16 = append(f16, block(func(j int) float32 {
			if j == i%32 {
				return float32(-amax)
			}
			return float32(amax * (2*rng.Float64() - 1))
		}))
	}
	add("f16 scales", f16...)
	// Largest magnitudes just below Q8Max: d rounds to float16's 65504.
	add("near Q8Max", block(func(i int) float32 {
		if i == 31 {
			return -q8Below
		}
		return float32(rng.Float64()) * q8Below
	}), block(func(i int) float32 {
		return math.Nextafter32(q8Below, 0) * float32(i%2*2-1)
	}))
	// Random bits of every exponent below Q8Max's.
	var bits [][]float32
	lim := math.Float32bits(backend.Q8Max)
	for range 300 {
		bits = append(bits, block(func(int) float32 {
			return math.Float32frombits(rng.Uint32N(lim) | rng.Uint32()&(1<<31))
		}))
	}
	add("bits", bits...)
	for _, c := range cases {
		checkQ8Write(t, c.name, c.src)
	}
	if len(writeWidths(backend.Q8)) == 0 {
		t.Log("no q8 writing loop on this CPU or build: the Go loop alone")
	}
}

func TestQuantWriteFP8(t *testing.T) {
	rng := rand.New(rand.NewPCG(46, 2))
	// Every float32 exponent, either sign, with fractions that round
	// down, up and to even at E4M3's bit 20 (a normal's) and wherever a
	// subnormal's unit falls: every pattern of the top 16 bits with
	// the low 16 bits at their edges and at random.
	var src []float32
	for hi := range uint32(1 << 16) {
		for _, lo := range []uint32{0, 1, 0x7fff, 0x8000, 0xffff, rng.Uint32N(1 << 16)} {
			src = append(src, math.Float32frombits(hi<<16|lo))
		}
	}
	checkFP8Write(t, "float32 patterns", src)
	// Around the boundaries: 448 and the midpoint 464 to the next
	// (absent) step, 2⁻⁶ (the least normal), 2⁻⁹ (the least subnormal)
	// and 2⁻¹⁰ (halfway to it, a tie to 0), odd multiples of 2⁻¹⁰ (ties
	// between subnormals), infinities and NaNs.
	var edges []float32
	for _, v := range []float64{448, 464, 480, 416, 432, math.Ldexp(1, -6), math.Ldexp(1, -9), math.Ldexp(1, -10), math.Ldexp(15, -10), math.Ldexp(17, -10), math.Ldexp(1, -7) * 1.0625, 240, 232, 0} {
		x := float32(v)
		for _, y := range []float32{x, math.Nextafter32(x, 0), math.Nextafter32(x, 1e9)} {
			edges = append(edges, y, -y)
		}
	}
	for k := 1; k < 16; k += 2 {
		edges = append(edges, float32(math.Ldexp(float64(k), -10)), float32(math.Ldexp(-float64(k), -10)))
	}
	edges = append(edges, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0xffc00001), math.Float32frombits(0x7f800001), math.Float32frombits(1), math.Float32frombits(0x807fffff))
	for len(edges)%8 != 5 {
		edges = append(edges, 1)
	}
	checkFP8Write(t, "edges", edges)
	// Random values at every scale, lengths off the vectors' steps.
	for n := range 40 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(40)-30))
		}
		checkFP8Write(t, fmt.Sprintf("random n=%d", n), x)
	}
}

// TestQuantWriteBackend writes into 8-bit buffers through Write, the
// vector loops and the Go tail together, at an offset, against the Go
// functions.
func TestQuantWriteBackend(t *testing.T) {
	b := newBackend(t)
	rng := rand.New(rand.NewPCG(46, 3))
	src := make([]float32, 32*37)
	for i := range src {
		src[i] = float32(rng.NormFloat64() * 3)
	}
	for _, dt := range backend.Quants {
		buf, err := b.Alloc(dt, len(src)+64)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Write(buf, 32, src); err != nil {
			t.Fatal(err)
		}
		s := buf.(*buffer).data
		switch dt {
		case backend.Q8:
			q, sc := make([]int8, len(src)), make([]uint16, len(src)/32)
			backend.QuantizeQ8(q, sc, src)
			if !slices.Equal(s.q8[32:32+len(src)], q) || !slices.Equal(s.sc[1:1+len(sc)], sc) {
				t.Errorf("%v: Write's bytes are not QuantizeQ8's", dt)
			}
		case backend.FP8:
			f := make([]uint8, len(src))
			backend.EncodeFP8s(f, src)
			if !slices.Equal(s.f8[32:32+len(src)], f) {
				t.Errorf("%v: Write's bytes are not EncodeFP8s's", dt)
			}
		case backend.Q4:
			q, sc := make([]uint8, len(src)/2), make([]uint16, len(src)/32)
			backend.QuantizeQ4(q, sc, src)
			if !slices.Equal(s.q4[16:16+len(q)], q) || !slices.Equal(s.sc[1:1+len(sc)], sc) {
				t.Errorf("%v: Write's bytes are not QuantizeQ4's", dt)
			}
		}
		buf.Release()
	}
}

// FuzzQuantWrite runs the 8-bit writing loops against the Go functions
// on fuzzed float32 bits: q8 blocks (a magnitude of Q8Max or more, or a
// NaN, made finite first) and E4M3 (every value as it is).
func FuzzQuantWrite(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x3f, 0, 0, 0xe0, 0x43, 0, 0, 0x80, 0x3a})
	f.Add([]byte{1, 0, 0, 0, 0xff, 0xff, 0x7f, 0x7f, 0, 0, 0xc0, 0x7f})
	f.Fuzz(func(t *testing.T, data []byte) {
		n := len(data) / 4
		x := make([]float32, n)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		checkFP8Write(t, "fuzz", x)
		q := make([]float32, (n+31)/32*32)
		for i, v := range x {
			if !(v < backend.Q8Max && v > -backend.Q8Max) {
				v = float32(math.Mod(float64(v), float64(q8Below)))
				if v != v {
					v = 1
				}
			}
			q[i] = v
		}
		checkQ8Write(t, "fuzz", q)
	})
}
