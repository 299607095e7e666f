//go:build amd64 && !purego

package cpu

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend"
)

// q4TestRows is n rows of random q4 codes (every nibble 0 … 15) at a
// stride of ld values and their blocks' float16 scales (either sign,
// 2⁻⁶ … 2⁻², a zero among them), and the same rows widened to q8's
// values (code − 8) beside the same scales: what q4Rows gives the q8
// kernels.
func q4TestRows(rng *rand.Rand, n, ld int) (q4, q8 rawRows) {
	codes := make([]uint8, n*ld/2)
	for i := range codes {
		codes[i] = uint8(rng.IntN(256))
	}
	scales := make([]uint16, n*ld/backend.Q8Block)
	for i := range scales {
		s := math.Ldexp(1+rng.Float64(), -rng.IntN(5)-2)
		if rng.IntN(4) == 0 {
			s = -s
		}
		if i == 5 {
			s = 0
		}
		scales[i] = backend.Float16.Encode(float32(s))
	}
	wide := make([]int8, n*ld)
	widenQ4Go(wide, codes)
	return rawRows{store: store{t: backend.Q4, q4: codes, sc: scales}, stride: ld},
		rawRows{store: store{t: backend.Q8, q8: wide, sc: scales}, stride: ld}
}

// Each integer scores kernel's q4 form (VNNI, AVX2) gives the bits of
// the q8 kernel over the codes widened (their int32 sums are the same
// integers, scaled the same way), under both prefetch twins: 2 … 1040
// keys (a tail past the kernel's step left to the caller), one block
// (AVX2; VNNI leaves it) to eighteen (MLA's 576),
// strides past the row (a BNHD row of 8 heads), the scales picked, gathered
// once a group or gathered a block (spare rows give the store room past
// the keys), Q rows whose blocks span 2²⁰, an all-zero block and row. Q
// that is not finite leaves every key to the q8 kernels; a row of one
// block, or a Q4 store it is not, leaves them too.
func TestDotQ4SameBits(t *testing.T) {
	ks := q8IntDotKernels()
	if len(ks) == 0 {
		t.Skip("no integer scores kernel: q4 is widened for the q8 kernels; an x86 CPU with AVX2 runs this test")
	}
	for _, k := range ks {
		t.Run(k.name, func(t *testing.T) {
			defer setQ8IntDot(k)()
			testDotQ4SameBits(t, k)
		})
	}
}

func testDotQ4SameBits(t *testing.T, kern *intDotKernel) {
	if err := checkQ4IntDot(); err != nil {
		t.Fatalf("known-answer check: %v", err)
	}
	w := 1
	if kern.avx2() {
		w = 0
	}
	for _, l2 := range []bool{false, true} {
		restore := usePrefetch(w, l2)
		for _, c := range []struct{ n, d, ld, spare int }{
			{2, 32, 32, 0}, {33, 32, 64, 0}, {16, 64, 64, 0}, {17, 64, 96, 0}, {33, 64, 64, 16}, {48, 96, 96, 16}, {64, 128, 128, 0}, {64, 128, 128, 1},
			{1040, 128, 160, 0}, {100, 256, 256, 0}, {32, 576, 576, 0},
			{64, 128, 1024, 0}, {48, 96, 768, 0}, {32, 64, 512, 16}, {16, 32 * 5, 1024, 0},
		} {
			t.Run(fmt.Sprintf("l2=%v,n=%d,d=%d,ld=%d,spare=%d", l2, c.n, c.d, c.ld, c.spare), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(c.n), uint64(c.d+c.ld)))
				k4, k8 := q4TestRows(rng, c.n+c.spare, c.ld)
				k4 = k4.slice(0, c.n, c.d)
				k8.q8, k8.sc = k8.q8[:c.n*c.ld], k8.sc[:c.n*c.ld/32]
				const ldq, alpha = 600, 0.125
				q := make([]float32, 4*ldq)
				for r := range 4 {
					for col := range c.d {
						e := (col/32*7 + r*3) % 21
						q[r*ldq+col] = float32(math.Ldexp(rng.NormFloat64(), e-10))
					}
				}
				clear(q[32:64])
				clear(q[3*ldq : 3*ldq+c.d])
				lds := c.n + 3
				got, want := make([]float32, 4*lds), make([]float32, 4*lds)
				var t4, t8 tiles8
				m := runDotInt(&t4, 0, q, ldq, k4, c.n, c.d, got, lds, alpha)
				want4 := c.n &^ 15
				if kern.avx2() {
					want4 = c.n &^ 1
				} else if c.d < 64 {
					want4 = 0
				}
				if m != want4 {
					t.Fatalf("took %d keys, want %d", m, want4)
				}
				if m8 := runDotInt(&t8, 0, q, ldq, k8, c.n, c.d, want, lds, alpha); m8 != m {
					t.Fatalf("the q8 kernel took %d keys, the q4 one %d", m8, m)
				}
				for r := range 4 {
					if g, w := got[r*lds:r*lds+m], want[r*lds:r*lds+m]; !slices.Equal(g, w) {
						j := 0
						for g[j] == w[j] {
							j++
						}
						t.Fatalf("row %d key %d: %g, the q8 kernel over the widened codes %g", r, j, g[j], w[j])
					}
				}
				if err := dotIntWithin(q, ldq, k8, m, c.d, got, lds, alpha); err != nil {
					t.Fatal(err)
				}
			})
		}
		restore()
	}
	k4, _ := q4TestRows(rand.New(rand.NewPCG(1, 1)), 32, 64)
	s := make([]float32, 4*32)
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1)), 1e-40} {
		q := make([]float32, 4*64)
		q[70] = bad
		var tt tiles8
		if got := runDotInt(&tt, 0, q, 64, k4, 32, 64, s, 32, 1); got != 0 {
			t.Errorf("Q holding %g: took %d keys, want 0", bad, got)
		}
	}
	var tt tiles8
	_, wide := q4TestRows(rand.New(rand.NewPCG(1, 3)), 32, 64)
	if got := dotQ4(&tt, 0, make([]float32, 4*64), 64, wide, 32, 64, s, 32, 1); got != 0 {
		t.Errorf("a q8 store: took %d keys, want 0", got)
	}
}

// The q4 forms of each class's integer kernels (AVX2, VNNI) pass their
// known-answer checks, and each check fails on a wrong answer injected
// into its kernel's output.
func TestQ4IntCheck(t *testing.T) {
	if !q8IntHas() {
		t.Skip("no integer kernels: q4 is widened; an x86 CPU with AVX2 runs this test")
	}
	type class struct {
		dot  *intDotKernel
		axpy *intKernel
	}
	classes := []class{{&intDotAVX2, &intAVX2}}
	if hasVNNI {
		classes = append(classes, class{&intDotVNNI, &intVNNI})
	}
	for _, c := range classes {
		t.Run(c.dot.name, func(t *testing.T) {
			defer setQ8IntDot(c.dot)()
			defer setQ8Int(c.axpy)()
			checks := q4IntChecks()
			dot, axpy := q4Names()
			if passed, err := passChecks(checks); err != nil || !slices.Equal(passed, []string{dot, axpy}) {
				t.Fatalf("passChecks = %v, %v", passed, err)
			}
			for _, ch := range checks {
				tileFault = ch.kernel
				_, err := passChecks(checks)
				tileFault = ""
				if err == nil {
					t.Errorf("%s: a wrong answer passed its check", ch.kernel)
				}
			}
		})
	}
	if st := q4IntNow(); !st.ok {
		t.Errorf("q4IntNow = %+v; want the kernels on", st)
	}
}

// Each integer P·V kernel's q4 form (VNNI, AVX2) gives the bits of the
// q8 one over the codes widened, under both prefetch twins: 16 … 1040 keys (whole and
// cut chunks), one block to sixteen (MLA's 512: groups of eight), strides
// past the row, weights spanning 2¹² with zeros, accumulators that hold
// values. A NaN weight stops both before the same chunk.
func TestAxpyQ4SameBits(t *testing.T) {
	ks := q8IntKernels()
	if len(ks) == 0 {
		t.Skip("no integer P·V kernel: q4 is widened for the q8 kernels; an x86 CPU with AVX2 runs this test")
	}
	for _, k := range ks {
		t.Run(k.name, func(t *testing.T) {
			defer setQ8Int(k)()
			w := 0
			if k == &intVNNI {
				w = 1
			}
			testAxpyQ4SameBits(t, w)
		})
	}
}

func testAxpyQ4SameBits(t *testing.T, w int) {
	for _, l2 := range []bool{false, true} {
		restore := usePrefetch(w, l2)
		for _, c := range []struct{ n, dv, ld int }{
			{16, 32, 32}, {48, 64, 96}, {1040, 128, 128}, {100, 96, 1024}, {64, 256, 256}, {80, 512, 512},
		} {
			t.Run(fmt.Sprintf("l2=%v,n=%d,dv=%d,ld=%d", l2, c.n, c.dv, c.ld), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(c.n), uint64(c.dv)))
				// Spare rows past the keys: the kernels read eight scale
				// lanes a key.
				v4, v8 := q4TestRows(rng, c.n+8, c.ld)
				p := make([]float32, 4*c.n)
				for i := range p {
					if rng.IntN(9) > 0 {
						p[i] = float32(math.Ldexp(rng.Float64(), -rng.IntN(12)))
					}
				}
				if c.n == 1040 {
					p[2*c.n+700] = float32(math.NaN())
				}
				acc0 := make([]float32, 4*c.dv)
				for i := range acc0 {
					acc0[i] = float32(rng.NormFloat64())
				}
				got, want := slices.Clone(acc0), slices.Clone(acc0)
				var t4, t8 tiles8
				m4 := runAxpyInt(&t4, p, c.n, v4, c.n, c.dv, got, c.dv)
				m8 := runAxpyInt(&t8, p, c.n, v8, c.n, c.dv, want, c.dv)
				wantKeys := c.n &^ 15
				if c.n == 1040 {
					wantKeys = 640 // the chunk holding key 700
				}
				if m4 != wantKeys || m8 != m4 {
					t.Fatalf("took %d keys (q8 over the widened codes: %d), want %d", m4, m8, wantKeys)
				}
				if !slices.Equal(got, want) {
					i := 0
					for got[i] == want[i] {
						i++
					}
					t.Fatalf("acc[%d] = %g, the q8 kernel over the widened codes %g", i, got[i], want[i])
				}
			})
		}
		restore()
	}
}

// A q4 decoding step gives the same bits with its K read in place
// (dotQ4) as widened for the q8 kernels: contiguous keys (BHND, BNHD)
// and pages of 64 and 256 keys in a shuffled table, one and three
// queries, 4 query heads a KV head, D = 96 and 128, key counts that
// leave a tail past the last 16. A 256-key page's runs pass intAhead
// with a next run after them, so the scores kernel takes each in two
// calls (dotIntRun's second from a key past 0, prefetching the next
// run); a 64-key page's never do. The backend runs q8 on the integer
// kernels (WithDecode8("integer")), so that on an AMX CPU too the widened
// q4 goes to the kernels whose bits the q4 forms give, not to the tiles.
func TestDecodeQ4SameBits(t *testing.T) {
	if !q4IntNow().ok || !q8IntDotNow().ok || !q8IntNow().ok {
		t.Skip("no integer q4 kernels here: an x86 CPU with AVX2 and no AVX-512, or with AVX512-VNNI, runs this test")
	}
	if _, ok := os.LookupEnv(EnvDecode8); ok {
		t.Setenv(EnvDecode8, "") // WithDecode8's choice, not the environment's
	}
	be, err := New(WithDecode8("integer"))
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		nq, d  int
		layout backend.Layout
		page   int // keys a page; 0: contiguous
	}{
		{"bhnd", 1, 128, backend.BHND, 0}, {"bnhd", 3, 96, backend.BNHD, 0}, {"paged", 1, 128, backend.BHND, 64}, {"paged3", 3, 96, backend.BHND, 64},
		{"paged256", 1, 128, backend.BHND, 256}, {"paged256bnhd3", 3, 96, backend.BNHD, 256},
	} {
		t.Run(c.name, func(t *testing.T) {
			lens := []int{1000, 777}
			p := backend.Problem{B: 2, H: 8, KVHeads: 2, Nq: c.nq, Nk: 1000, D: c.d, Causal: true, Layout: c.layout,
				Variants: backend.Variants{KVLens: lens}}
			if c.page > 0 {
				per := ceilDiv(1000, c.page) // 2·per a power of two: i·7 + 3 takes every page once
				table := make([]int, 2*per)
				for i := range table {
					table[i] = (i*7 + 3) % (2 * per)
				}
				p.Paged = &backend.Paged{PageSize: c.page, Pages: 2 * per, PerSeq: per, Table: table}
			}
			p = p.Resolved()
			rng := rand.New(rand.NewPCG(3, uint64(c.d)))
			in := func(dt backend.DType, n int) backend.Buffer {
				buf, err := be.Alloc(dt, n)
				if err != nil {
					t.Fatal(err)
				}
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				if err := be.Write(buf, 0, x); err != nil {
					t.Fatal(err)
				}
				return buf
			}
			q, k, v := in(backend.Float32, p.QLen()), in(backend.Q4, p.KLen()), in(backend.Q4, p.VLen())
			run := func(off bool) []float32 {
				noDotQ4 = off
				defer func() { noDotQ4 = false }()
				o, err := be.Alloc(backend.Float32, p.OLen())
				if err != nil {
					t.Fatal(err)
				}
				if err := be.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, nil); err != nil {
					t.Fatal(err)
				}
				out := make([]float32, p.OLen())
				if err := be.Read(out, o, 0); err != nil {
					t.Fatal(err)
				}
				return out
			}
			got, want := run(false), run(true)
			if !slices.Equal(got, want) {
				i := 0
				for got[i] == want[i] || got[i] != got[i] && want[i] != want[i] {
					i++
				}
				t.Fatalf("output %d: %g in place, %g widened", i, got[i], want[i])
			}
		})
	}
}
