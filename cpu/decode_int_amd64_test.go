//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// q8TestRows is n random q8 rows of d values at stride ld: codes −127 …
// 127 and each block's scale a random float16 over four octaves (some
// negative where neg), zero-padded past d.
func q8TestRows(rng *rand.Rand, n, d, ld int, neg bool) rawRows {
	codes := make([]int8, n*ld)
	scales := make([]uint16, n*ld/backend.Q8Block)
	for j := range n {
		for c := range d {
			codes[j*ld+c] = int8(rng.IntN(255) - 127)
		}
		for b := range ld / backend.Q8Block {
			s := math.Ldexp(1+rng.Float64(), -rng.IntN(4)-6)
			if neg && rng.IntN(4) == 0 {
				s = -s
			}
			scales[j*ld/backend.Q8Block+b] = backend.Float16.Encode(float32(s))
		}
	}
	return rawRows{store: store{t: backend.Q8, q8: codes, sc: scales}, stride: ld}
}

// q8Value is value c of row j of r, dequantized.
func q8Value(r rawRows, j, c int) float64 {
	return float64(r.q8[j*r.stride+c]) * float64(backend.Float16.Decode(r.sc[(j*r.stride+c)/backend.Q8Block]))
}

// Each integer P·V kernel the CPU runs against the float64 sums, within float32's sums
// and the weights' digits (half a digit a term: max p·max|d|·Σ|codes|
// /64000): chunks whole and cut (16 … 1040 keys), one block to eight,
// strides past the row, weights spanning 2¹² with zeros, accumulators
// that hold values. A NaN weight stops it before its chunk, which it
// leaves unwritten; so does a chunk whose last key's scale lanes would
// pass the end of V's scales.
func TestAxpyInt(t *testing.T) {
	if !q8IntHas() {
		t.Skip("no AVX2: the integer kernels do not run; an x86 CPU with AVX2 runs this test")
	}
	for _, k := range q8IntKernels() {
		t.Run(k.name, func(t *testing.T) {
			defer setQ8Int(k)()
			testAxpyInt(t)
		})
	}
}

// q8IntKernels are the integer P·V kernels this CPU runs: the AVX2 one
// (on every CPU with AVX2: its digits are the VNNI one's too), and the
// VNNI one where it has AVX512-VNNI.
func q8IntKernels() []*intKernel {
	var ks []*intKernel
	if hasAVX2 {
		ks = append(ks, &intAVX2)
	}
	if hasVNNI {
		ks = append(ks, &intVNNI)
	}
	return ks
}

// setQ8Int makes k the integer kernel until the returned function puts
// the CPU's back.
func setQ8Int(k *intKernel) func() {
	was := q8Int
	q8Int = k
	return func() { q8Int = was }
}

func testAxpyInt(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 3))
	for _, c := range []struct{ n, dv, ldv int }{
		{16, 32, 32}, {17, 32, 64}, {48, 64, 64}, {64, 128, 128}, {80, 96, 160}, {1040, 128, 128}, {128, 256, 256},
		{144, 512, 576}, {128, 320, 320}, {64, 288, 288},
	} {
		t.Run(fmt.Sprintf("n=%d/dv=%d/ldv=%d", c.n, c.dv, c.ldv), func(t *testing.T) {
			// Eight keys past n, so that the last chunk's scale lanes
			// stay inside v's scales.
			v := q8TestRows(rng, c.n+8, c.dv, c.ldv, true)
			ldp, ldacc := c.n+5, c.dv+3
			p := make([]float32, 4*ldp)
			for r := range 4 {
				for j := range c.n {
					if rng.IntN(6) != 0 {
						p[r*ldp+j] = float32(math.Ldexp(rng.Float64(), -rng.IntN(12)))
					}
				}
			}
			acc := make([]float32, 4*ldacc)
			for i := range acc {
				acc[i] = float32(rng.NormFloat64())
			}
			acc0 := slices.Clone(acc)
			var tl tiles8
			got := runAxpyInt(&tl, p, ldp, v, c.n, c.dv, acc, ldacc)
			if got != c.n&^15 {
				t.Fatalf("took %d of %d keys", got, c.n)
			}
			checkAxpyInt(t, "", p, ldp, v, got, c.dv, acc0, acc, ldacc)
			// Weights so small that a chunk's F would pass float32's
			// range (capped at 2¹⁰⁰): still every key, within the bound.
			tiny := slices.Clone(p)
			for i := range tiny {
				tiny[i] *= 1e-37
			}
			acc2 := slices.Clone(acc0)
			if n := runAxpyInt(&tl, tiny, ldp, v, c.n, c.dv, acc2, ldacc); n != got {
				t.Fatalf("weights below 1e-37: took %d of %d keys", n, got)
			}
			checkAxpyInt(t, "weights below 1e-37: ", tiny, ldp, v, got, c.dv, acc0, acc2, ldacc)
			// A NaN weight in the second chunk: the first is added, the
			// second and after left as they were.
			if got < 2*intChunk {
				return
			}
			p[ldp+intChunk+3] = float32(math.NaN())
			copy(acc, acc0)
			if got := runAxpyInt(&tl, p, ldp, v, c.n, c.dv, acc, ldacc); got != intChunk {
				t.Errorf("a NaN weight in the second chunk: took %d keys, want %d", got, intChunk)
			}
			// Only the first chunk is in acc: adding it alone again from
			// acc0 gives the same values.
			want := slices.Clone(acc0)
			runAxpyInt(&tl, p, ldp, v, intChunk, c.dv, want, ldacc)
			if !slices.Equal(acc, want) {
				t.Error("a NaN weight in the second chunk: acc is not the first chunk's sum alone")
			}
			// A NaN scale in the second chunk's last group of blocks (rows
			// past eight blocks): its first group's sums are not added
			// either.
			if nb := c.dv / backend.Q8Block; nb > intMaxBlocks {
				p[ldp+intChunk+3] = 0
				at := (intChunk+5)*c.ldv/backend.Q8Block + nb - 1
				keep := v.sc[at]
				v.sc[at] = 0x7e00
				copy(acc, acc0)
				if got := runAxpyInt(&tl, p, ldp, v, c.n, c.dv, acc, ldacc); got != intChunk {
					t.Errorf("a NaN scale in the second chunk's last group: took %d keys, want %d", got, intChunk)
				}
				if !slices.Equal(acc, want) {
					t.Error("a NaN scale in the second chunk's last group: acc is not the first chunk's sum alone")
				}
				v.sc[at] = keep
			}
			// V's scales ending with the last key's blocks (no capacity
			// past them): where a key's last group has fewer than eight
			// blocks, the last chunk is left to the float kernels.
			p[ldp+intChunk+3] = 0
			short := v
			nb := c.dv / backend.Q8Block
			short.sc = slices.Clip(v.sc[:(got-1)*c.ldv/backend.Q8Block+nb])
			last := 0
			if nb-(nb-1)/intMaxBlocks*intMaxBlocks < 8 {
				if last = got % intChunk; last == 0 {
					last = intChunk
				}
			}
			if n := runAxpyInt(&tl, p, ldp, short, got, c.dv, acc, ldacc); n != got-last {
				t.Errorf("scales ending with the last key's: took %d keys, want %d", n, got-last)
			}
		})
	}
}

// checkAxpyInt holds acc, the P·V kernel's sums of n keys onto acc0,
// to the float64 sums within float32's sums (2⁻²⁰ of Σ|terms|) and the
// weights' digits (half a digit a term: max(max p·max|d|/64000, 2⁻¹⁰¹)
// times Σ|codes|).
func checkAxpyInt(t *testing.T, what string, p []float32, ldp int, v rawRows, n, dv int, acc0, acc []float32, ldacc int) {
	t.Helper()
	var dmax float64
	for j := range n {
		for b := range dv / backend.Q8Block {
			dmax = math.Max(dmax, math.Abs(float64(backend.Float16.Decode(v.sc[j*v.stride/backend.Q8Block+b]))))
		}
	}
	for r := range 4 {
		var pmax float64
		for j := range n {
			pmax = math.Max(pmax, float64(p[r*ldp+j]))
		}
		for col := range dv {
			want, mag, csum := float64(acc0[r*ldacc+col]), math.Abs(float64(acc0[r*ldacc+col])), 0.0
			for j := range n {
				x := float64(p[r*ldp+j]) * q8Value(v, j, col)
				want += x
				mag += math.Abs(x)
				csum += math.Abs(float64(v.q8[j*v.stride+col]))
			}
			bound := mag*math.Ldexp(1, -20) + math.Max(pmax*dmax/64000, math.Ldexp(1, -101))*csum
			if g := float64(acc[r*ldacc+col]); backendtest.Exceeds(math.Abs(g-want), bound) {
				t.Fatalf("%srow %d column %d: %g, want %g ± %g", what, r, col, g, want, bound)
			}
		}
	}
}

// Each integer kernel passes its known-answer check, and the check fails
// on a wrong answer injected into its output, naming its kernel; the
// CPU's kernel is the one q8IntNow runs.
func TestQ8IntChecks(t *testing.T) {
	if !q8IntHas() {
		t.Skip("no AVX2: the integer kernels do not run; an x86 CPU with AVX2 runs this test")
	}
	for _, k := range q8IntKernels() {
		t.Run(k.name, func(t *testing.T) {
			defer setQ8Int(k)()
			if passed, err := passChecks(q8IntChecks()); err != nil || len(passed) != 1 || passed[0] != k.name {
				t.Fatalf("passChecks = %v, %v", passed, err)
			}
			tileFault = k.name
			_, err := passChecks(q8IntChecks())
			tileFault = ""
			if err == nil {
				t.Errorf("%s: a wrong answer passed its check", k.name)
			}
		})
	}
	if st := q8IntNow(); !st.ok || st.note != q8Int.name {
		t.Errorf("q8IntNow = %+v; want the kernels on", st)
	}
}

// The integer kernels' sums are exact int32s turned to float32 and added
// to acc in the same order, so every kernel the CPU runs gives the same
// bits: 1040 keys (whole and cut chunks), one to eight blocks.
func TestAxpyIntSameBits(t *testing.T) {
	ks := q8IntKernels()
	if len(ks) < 2 {
		t.Skip("fewer than two integer kernels on this CPU: an AVX512-VNNI CPU (Zen 4 and 5, the Xeons) has both")
	}
	rng := rand.New(rand.NewPCG(5, 8))
	for _, dv := range []int{32, 96, 128, 256} {
		const n = 1040
		v := q8TestRows(rng, n+8, dv, dv, true)
		p := make([]float32, 4*n)
		for i := range p {
			p[i] = float32(math.Ldexp(rng.Float64(), -rng.IntN(12)))
		}
		acc0 := make([]float32, 4*dv)
		for i := range acc0 {
			acc0[i] = float32(rng.NormFloat64())
		}
		var want []float32
		for _, k := range ks {
			acc := slices.Clone(acc0)
			restore := setQ8Int(k)
			var tl tiles8
			got := runAxpyInt(&tl, p, n, v, n, dv, acc, dv)
			restore()
			if got != n&^15 {
				t.Fatalf("%s, dv=%d: took %d of %d keys", k.name, dv, got, n)
			}
			if want == nil {
				want = acc
			} else if !slices.Equal(acc, want) {
				t.Errorf("%s, dv=%d: not the same bits as %s", k.name, dv, ks[0].name)
			}
		}
	}
}

// The integer scores kernel (VPDPBUSD) against the float64 scores over
// the dequantized keys, within float32's rounding of the blocks' sums
// (2⁻²⁰ of Σ|terms|) and Q's digits (half a unit of each block's
// 2⁻¹⁵·max|q| a term: cpu/doc.go's bound): 16 … 1040 keys (a tail past
// the last 16 left to the caller), two blocks to eighteen (MLA's 576),
// strides past the row, Q rows whose blocks span 2²⁰, an all-zero block
// and an all-zero row, scales of either sign. Q that is not finite, or
// a block too small for its factor, leaves it to the widening kernel.
func TestDotInt(t *testing.T) {
	ks := q8IntDotKernels()
	if len(ks) == 0 {
		t.Skip("no integer q8 scores kernel on this CPU: an x86 CPU with AVX2 runs this test")
	}
	for _, k := range ks {
		t.Run(k.name, func(t *testing.T) {
			defer setQ8IntDot(k)()
			testDotInt(t)
		})
	}
}

// q8IntDotKernels are the integer scores kernels this CPU runs: the AVX2
// one on every CPU with AVX2, FMA and F16C, and the VNNI one where it has
// AVX512-VNNI.
func q8IntDotKernels() []*intDotKernel {
	var ks []*intDotKernel
	if hasAVX2 && hasF16C {
		ks = append(ks, &intDotAVX2)
	}
	if hasVNNI {
		ks = append(ks, &intDotVNNI)
	}
	return ks
}

// setQ8IntDot makes k the integer scores kernel until the returned
// function puts the CPU's back.
func setQ8IntDot(k *intDotKernel) func() {
	was := q8IntDot
	q8IntDot = k
	return func() { q8IntDot = was }
}

func testDotInt(t *testing.T) {
	if err := checkQ8IntDot(); err != nil {
		t.Fatalf("known-answer check: %v", err)
	}
	for _, c := range []struct{ n, d, ld, spare int }{
		{16, 64, 64, 0}, {16, 64, 64, 16}, {17, 64, 96, 0}, {2, 32, 32, 0}, {33, 32, 64, 0}, {3, 96, 96, 0}, {48, 96, 96, 16}, {64, 128, 128, 0}, {64, 128, 128, 1},
		{1040, 128, 160, 0}, {100, 256, 256, 0}, {32, 576, 576, 0},
		{64, 128, 1024, 0}, {48, 96, 768, 0}, {32, 64, 512, 16}, {16, 32 * 5, 1024, 0},
	} {
		t.Run(fmt.Sprintf("n=%d,d=%d,ld=%d,spare=%d", c.n, c.d, c.ld, c.spare), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(c.n), uint64(c.d)))
			// Rows past the n keys give the store capacity beyond them,
			// so that short strides pick the scales out of 128 bytes
			// (perm 1); long ones (a BNHD row of 8 heads: 1024) gather a
			// key's first eight bytes of scales once a group where the
			// row is at most four blocks (perm 2), and each block's
			// scales where it is wider (perm 0).
			k := q8TestRows(rng, c.n+c.spare, c.d, c.ld, true)
			k.q8, k.sc = k.q8[:c.n*c.ld], k.sc[:c.n*c.ld/32]
			const ldq, alpha = 600, 0.125
			q := make([]float32, 4*ldq)
			for r := range 4 {
				for col := range c.d {
					e := (col/32*7 + r*3) % 21 // a block's magnitude, 2⁻¹⁰ … 2¹⁰
					q[r*ldq+col] = float32(math.Ldexp(rng.NormFloat64(), e-10))
				}
			}
			clear(q[32:64])             // an all-zero block of row 0
			clear(q[3*ldq : 3*ldq+c.d]) // an all-zero row
			lds := c.n + 3
			s := make([]float32, 4*lds)
			var tt tiles8
			got := runDotInt(&tt, 0, q, ldq, k, c.n, c.d, s, lds, alpha)
			want := c.n &^ 15
			if q8IntDot.avx2() {
				want = c.n &^ 1
			} else if c.d < 64 {
				want = 0 // VNNI: two blocks at least
			}
			if got != want {
				t.Fatalf("took %d keys, want %d", got, want)
			}
			if err := dotIntWithin(q, ldq, k, got, c.d, s, lds, alpha); err != nil {
				t.Fatal(err)
			}
		})
	}
	k := q8TestRows(rand.New(rand.NewPCG(1, 1)), 32, 64, 64, false)
	s := make([]float32, 4*32)
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1)), 1e-40} {
		q := make([]float32, 4*64)
		q[70] = bad
		var tt tiles8
		if got := runDotInt(&tt, 0, q, 64, k, 32, 64, s, 32, 1); got != 0 {
			t.Errorf("Q holding %g: took %d keys, want 0", bad, got)
		}
	}
}

// q8Weights4AVX2 makes q8WeightsAVX2's digits and factors, bit for bit,
// for every block of rows of one to four blocks, and fails where it
// fails: a NaN weight or scale.
func TestWeights4SameDigits(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 on this CPU: an x86 CPU with AVX2 runs this test")
	}
	rng := rand.New(rand.NewPCG(7, 4))
	for nb := 1; nb <= 4; nb++ {
		for _, n := range []int{16, 48, 64} {
			for _, bad := range []string{"", "p", "d"} {
				ld := 32 * nb
				v := q8TestRows(rng, n+8, ld, ld, true)
				p := make([]float32, 4*n)
				for i := range p {
					if rng.IntN(7) > 0 {
						p[i] = float32(math.Ldexp(rng.Float64(), -rng.IntN(20)))
					}
				}
				switch bad {
				case "p":
					p[2*n+rng.IntN(n)] = float32(math.NaN())
				case "d":
					v.sc[rng.IntN(n)*nb+nb-1] = 0x7e00
				}
				ss := ld / 32 * 2
				var wd8, wd4 [4 * 32 * 8]int32
				var gs8, gs4 [32]float32
				ok8 := q8WeightsAVX2(&p[0], n, unsafe.Pointer(&v.sc[0]), ss, n, &q8Lanes[nb][0], &wd8[0], &gs8[0], 0)
				ok4 := q8Weights4AVX2(&p[0], n, unsafe.Pointer(&v.sc[0]), ss, n, &q8Lanes4[nb][0], &wd4[0], &gs4[0], 0)
				if ok8 != ok4 || ok4 != (bad == "") {
					t.Fatalf("nb=%d n=%d bad=%q: ok %v, q8WeightsAVX2's %v", nb, n, bad, ok4, ok8)
				}
				if !ok4 {
					continue
				}
				for r := range 4 {
					for b := range nb {
						if math.Float32bits(gs4[8*r+b]) != math.Float32bits(gs8[8*r+b]) {
							t.Fatalf("nb=%d n=%d: g[%d][%d] %g, want %g", nb, n, r, b, gs4[8*r+b], gs8[8*r+b])
						}
						for j := 0; j < n; j += 2 {
							if i := 256*r + 8*(j/2) + b; wd4[i] != wd8[i] {
								t.Fatalf("nb=%d n=%d: row %d keys %d,%d block %d: %#x, want %#x", nb, n, r, j, j+1, b, wd4[i], wd8[i])
							}
						}
					}
				}
			}
		}
	}
}

// FuzzDotInt runs each integer scores kernel the CPU has on fuzzed codes,
// scales and Q against the float64 scores over the dequantized keys,
// within TestDotInt's bound: every head dim of one to nine blocks (VNNI:
// two at least), strides past the row, Q blocks spanning 2⁴⁰, zero
// blocks, 2 to 257 keys. Its q4 form, on the codes' first half read as
// q4 codes beside the same scales, gives the bits the kernel gives over
// those codes widened.
func FuzzDotInt(f *testing.F) {
	f.Add(uint8(0), uint8(16), uint8(0), uint8(3), []byte{1, 2, 3, 0x80, 0x7e, 0xfe, 0x08, 0x88})
	f.Add(uint8(2), uint8(130), uint8(1), uint8(40), []byte{0x7f, 0x81, 0x01, 0x00, 0x3c})
	f.Add(uint8(7), uint8(255), uint8(2), uint8(0), []byte{0xff, 0xff, 0x00})
	f.Fuzz(func(t *testing.T, nbb, nk, pad, spread uint8, data []byte) {
		ks := q8IntDotKernels()
		if len(ks) == 0 {
			t.Skip("no integer q8 scores kernel on this CPU: an x86 CPU with AVX2 runs this test")
		}
		if len(data) == 0 {
			t.Skip("no codes to read")
		}
		nb, n := 1+int(nbb)%9, 2+int(nk)
		d := 32 * nb
		stride := d + 32*(int(pad)%3)
		at := 0
		next := func() byte { at++; return data[(at-1)%len(data)] ^ byte(at/len(data)*37) }
		k := rawRows{store: store{t: backend.Q8, q8: make([]int8, n*stride), sc: make([]uint16, n*stride/32)}, stride: stride}
		for i := range k.q8 {
			k.q8[i] = int8(next())
		}
		for i := range k.sc {
			k.sc[i] = uint16(next())<<8&0x3fff | uint16(next()) // below 2
		}
		rng := rand.New(rand.NewPCG(uint64(len(data)), uint64(n)))
		q := make([]float32, 4*d)
		for i := range q {
			if next()%5 == 0 {
				continue // zeros, and now and then a zero block
			}
			e := int(spread) % 41
			q[i] = float32(math.Ldexp(rng.NormFloat64(), (i/32*7)%(e+1)-e/2))
		}
		for _, kern := range ks {
			restore := setQ8IntDot(kern)
			want := n &^ 1
			if !kern.avx2() {
				want = n &^ 15
				if nb < 2 {
					want = 0
				}
			}
			s := make([]float32, 4*n)
			var tt tiles8
			got := runDotInt(&tt, 0, q, d, k, n, d, s, n, 0.25)
			if got != want {
				restore()
				t.Fatalf("%s: took %d keys, want %d", kern.name, got, want)
			}
			err := dotIntWithin(q, d, k, got, d, s, n, 0.25)
			if err == nil {
				err = dotQ4Same(q, d, k, n, d, 0.25)
			}
			restore()
			if err != nil {
				t.Fatalf("%s: nb=%d n=%d stride=%d: %v", kern.name, nb, n, stride, err)
			}
		}
	})
}

// dotIntWithin checks the scores s (row stride lds) of the first n keys
// of k for the four rows of q against the float64 scores over the
// dequantized keys: within float32's rounding of the blocks' sums (2⁻²⁰
// of Σ|terms|) and Q's digits (half a unit of each block's max|q|/X, X
// the scores kernel's largest digit: 32512 on VNNI, 16383 on AVX2, times
// the block's Σ|k|), all times α.
func dotIntWithin(q []float32, ldq int, k rawRows, n, d int, s []float32, lds int, alpha float64) error {
	for r := range 4 {
		for j := range n {
			var want, abs, dig float64
			for b := range d / 32 {
				var m, kabs float64
				for c := 32 * b; c < 32*(b+1); c++ {
					m = max(m, math.Abs(float64(q[r*ldq+c])))
					kabs += math.Abs(q8Value(k, j, c))
					x := float64(q[r*ldq+c]) * q8Value(k, j, c)
					want += x
					abs += math.Abs(x)
				}
				dig += m / float64(q8IntDot.xmax) / 2 * kabs
			}
			if g := float64(s[r*lds+j]); backendtest.Exceeds(math.Abs(g-alpha*want), alpha*(0x1p-20*abs+dig)) {
				return fmt.Errorf("row %d key %d: %g, want %g (bound %g)", r, j, g, alpha*want, alpha*(0x1p-20*abs+dig))
			}
		}
	}
	return nil
}

// dotQ4Same runs the scores kernel's q4 form over the first half of k's
// codes read as q4 codes (two a byte, k's scales) and the q8 kernel over
// those codes widened, and reports the first score where their bits
// differ, or a different count of keys taken.
func dotQ4Same(q []float32, ldq int, k rawRows, n, d int, alpha float32) error {
	k4 := rawRows{store: store{t: backend.Q4, q4: unsafeBytes(k.q8)[:len(k.q8)/2], sc: k.sc}, stride: k.stride}
	k8 := rawRows{store: store{t: backend.Q8, q8: make([]int8, len(k.q8)), sc: k.sc}, stride: k.stride}
	widenQ4Go(k8.q8, k4.q4)
	got, want := make([]float32, 4*n), make([]float32, 4*n)
	var t4, t8 tiles8
	m4 := runDotInt(&t4, 0, q, ldq, k4, n, d, got, n, alpha)
	if m8 := runDotInt(&t8, 0, q, ldq, k8, n, d, want, n, alpha); m4 != m8 {
		return fmt.Errorf("q4: took %d keys, the q8 kernel over the widened codes %d", m4, m8)
	}
	for r := range 4 {
		for j := range m4 {
			if g, w := got[r*n+j], want[r*n+j]; math.Float32bits(g) != math.Float32bits(w) {
				return fmt.Errorf("q4: row %d key %d: %g, the q8 kernel over the widened codes %g", r, j, g, w)
			}
		}
	}
	return nil
}
