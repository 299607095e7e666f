package sgemm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// bf16Func is BF16Gemm's signature, bf16BandFunc BF16GemmBand's.
type (
	bf16Func     func(tB blas.Transpose, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int)
	bf16BandFunc func(tB blas.Transpose, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int, band Band)
)

// bf16Impls are the bfloat16 products under test: the fallback through
// float32 (the golden answer, run whatever the machine) and every kernel
// this CPU runs. Each is held to a float64 product of the same bfloat16
// values.
func bf16Impls() (names []string, fns []bf16Func) {
	names = append(names, "widened")
	fns = append(fns, func(tB blas.Transpose, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
		bf16Widened(tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil)
	})
	for _, kn := range bf16Kernels {
		names = append(names, kn.name)
		fns = append(fns, func(tB blas.Transpose, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
			runBF16(kn, nil, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil)
		})
	}
	for _, tl := range tileImpls() {
		names = append(names, tl.name)
		fns = append(fns, func(tB blas.Transpose, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
			runBF16(tl.kn, tl.tiles, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil)
		})
	}
	return names, fns
}

// skipWithoutBF16 skips a test of the kernels where the CPU has none,
// saying why, unless ATTN_REQUIRE_BF16=1 says it must have them.
func skipWithoutBF16(t testing.TB) {
	t.Helper()
	if len(bf16Kernels) > 0 {
		return
	}
	if os.Getenv("ATTN_REQUIRE_BF16") == "1" {
		t.Fatal("ATTN_REQUIRE_BF16=1, but no bfloat16 kernel runs here (needs amd64 with AVX512_BF16, not -tags purego nor GODEBUG=cpu.avx512bf16=off)")
	}
	t.Skip("no bfloat16 kernel here (needs amd64 with AVX512_BF16, not turned off by GODEBUG=cpu.avx512bf16=off, not -tags purego); the fallback is tested")
}

// toBF16 rounds x to the nearest bfloat16, ties to even (x finite).
func toBF16(x float32) uint16 {
	u := math.Float32bits(x)
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

const bf16NaN = 0x7fc0

// bf16Operands are one case's A (m×k), B (stored k×n or n×k) and C,
// with leading dimensions pad wider than they need and the padding
// NaN.
type bf16Operands struct {
	a, b          []uint16
	c             []float32
	lda, ldb, ldc int
}

func newBF16Operands(g gemmCase, rng *rand.Rand) bf16Operands {
	br, bc := g.k, g.n
	if g.tB != blas.NoTrans {
		br, bc = g.n, g.k
	}
	fill := func(rows, cols, ld int) []uint16 {
		x := make([]uint16, rows*ld)
		for i := range x {
			if i%ld < cols {
				x[i] = toBF16(float32(rng.Float64()*2 - 1))
			} else {
				x[i] = bf16NaN
			}
		}
		return x
	}
	o := bf16Operands{lda: max(g.k+g.pad, 1), ldb: max(bc+g.pad, 1), ldc: max(g.n+g.pad, 1)}
	o.a, o.b = fill(g.m, g.k, o.lda), fill(br, bc, o.ldb)
	o.c = make([]float32, g.m*o.ldc)
	for i := range o.c {
		if i%o.ldc < g.n && g.beta != 0 {
			o.c[i] = float32(rng.Float64()*2 - 1)
		} else {
			o.c[i] = float32(math.NaN()) // beta = 0 must overwrite C, NaN and all
		}
	}
	return o
}

// bf16Rounds bounds how many float32 roundings one entry of C goes
// through: one per step of k (a kernel step's two products are exact
// and added with at most two roundings), and per k block (of 256 or
// more) one for alpha and two for adding beta·C, of which the first
// block's are the last two.
func bf16Rounds(k int) int { return k + 2*((k+255)/256) + 2 }

// gamma is γ(n) = n·u/(1 − n·u), u = 2⁻²⁴: the bound on the relative
// error of n float32 roundings.
func gamma(n int) float64 { return float64(n) * 0x1p-24 / (1 - float64(n)*0x1p-24) }

// checkBF16C compares got with alpha·A·op(B) + beta·C computed in
// float64 on the bfloat16 values, allowing the bound BF16Gemm states:
// γ(bf16Rounds(k)) times the sum of the terms' magnitudes, plus sub,
// an absolute allowance for subnormals.
func checkBF16C(t *testing.T, g gemmCase, o bf16Operands, got []float32, sub float64) {
	t.Helper()
	bt := func(p, j int) float64 {
		if g.tB == blas.NoTrans {
			return float64(fromBF16(o.b[p*o.ldb+j]))
		}
		return float64(fromBF16(o.b[j*o.ldb+p]))
	}
	for i := range g.m {
		for j := range o.ldc {
			idx := i*o.ldc + j
			if j >= g.n {
				if !math.IsNaN(float64(got[idx])) {
					t.Fatalf("%v: C[%d][%d] is past column %d, but was written", g, i, j, g.n)
				}
				continue
			}
			var sum, mag float64
			for p := range g.k {
				x := float64(fromBF16(o.a[i*o.lda+p])) * bt(p, j)
				sum += x
				mag += math.Abs(x)
			}
			want := float64(g.alpha) * sum
			mag *= math.Abs(float64(g.alpha))
			if g.beta != 0 {
				c0 := float64(g.beta) * float64(o.c[idx])
				want += c0
				mag += math.Abs(c0)
			}
			tol := gamma(bf16Rounds(g.k))*mag + sub
			if d := math.Abs(float64(got[idx]) - want); !(d <= tol) {
				t.Fatalf("%v: C[%d][%d] = %v, want %v (off by %.3g, bound %.3g)", g, i, j, got[idx], want, d, tol)
			}
		}
	}
}

// Sizes around the kernels' MR (4, 6, 8, 12) and NR (32, 64), k odd and
// even, around the k blocks (256 and 512 k, a pair's 128 and 256) and
// the n block (512), both transposes, the alphas and betas the attention
// loop uses and others, padded strides.
func TestBF16Gemm(t *testing.T) {
	var cases []gemmCase
	for _, mnk := range [][3]int{
		{0, 0, 0}, {0, 5, 3}, {4, 0, 3}, {3, 4, 0},
		{1, 1, 1}, {1, 1, 2}, {2, 3, 3}, {4, 32, 1}, {5, 33, 2}, {6, 64, 3}, {7, 63, 4},
		{8, 32, 5}, {9, 31, 6}, {11, 65, 7}, {12, 32, 8}, {13, 96, 9}, {24, 128, 64},
		{64, 64, 64}, {65, 129, 63}, {63, 127, 65}, {25, 64, 255}, {7, 40, 256}, {13, 33, 257},
		{5, 70, 511}, {9, 31, 512}, {6, 64, 513}, {3, 5, 1025},
		{5, 511, 3}, {7, 512, 4}, {6, 513, 5}, {13, 1030, 17},
		// AMX's 32×32 blocks and 16 pairs, whole and ± 1.
		{32, 32, 32}, {33, 64, 31}, {31, 33, 33}, {96, 96, 96}, {64, 33, 34}, {40, 96, 1030}, {32, 544, 64},
	} {
		for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, ab := range [][2]float32{{1, 0}, {0.125, 1}, {-2, 0.5}, {0, 2}, {1, 1}} {
				cases = append(cases, gemmCase{blas.NoTrans, tB, mnk[0], mnk[1], mnk[2], ab[0], ab[1], (mnk[0] + mnk[2]) % 3})
			}
		}
	}
	names, fns := bf16Impls()
	for i, fn := range fns {
		t.Run(names[i], func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 13))
			for _, g := range cases {
				o := newBF16Operands(g, rng)
				got := append([]float32(nil), o.c...)
				a0, b0 := append([]uint16(nil), o.a...), append([]uint16(nil), o.b...)
				fn(g.tB, g.m, g.n, g.k, g.alpha, o.a, o.lda, o.b, o.ldb, g.beta, got, o.ldc)
				checkBF16C(t, g, o, got, 0)
				if !sameU16(a0, o.a) || !sameU16(b0, o.b) {
					t.Fatalf("%v: A or B changed", g)
				}
			}
		})
	}
}

func sameU16(x, y []uint16) bool {
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return len(x) == len(y)
}

// The kernels run where the CPU has AVX512_BF16 (ATTN_REQUIRE_BF16=1
// makes their absence a failure), and BF16Gemm runs what ChooseBF16
// picks for $ATTN_CPU_BF16.
func TestBF16Kernels(t *testing.T) {
	skipWithoutBF16(t)
	t.Logf("BF16Gemm runs %s; kernels: %d; notes: %q", BF16Kernel(), len(bf16Kernels), BF16Notes())
	want, _, _ := ChooseBF16(bf16Setting)
	if bf16Def.kn != want.kn || bf16Def.AMX() != want.AMX() || HasBF16() != want.Arithmetic() {
		t.Fatalf("HasBF16() = %v, path %v; want %v", HasBF16(), bf16Def, want)
	}
}

// The choice follows the CPU and the setting, never a timing: AMX where
// the CPU has it, grants it and it answers right; then VDPBF16PS unless
// the CPU is one whose VDPBF16PS is slower than widening, and only if it
// answers right; else widening. A setting that cannot be followed is an
// error with auto's choice beside it, and auto notes why each faster
// path was not taken.
func TestChooseBF16(t *testing.T) {
	k := &bf16Kernel{name: "AVX512_BF16 8×32", mr: 8, nr: 32}
	ks := []*bf16Kernel{k}
	tiles := tileFunc(func([]amxJob, int, float32, float32, []float32) {})
	refused := errors.New("no space left on device")
	wrong := errors.New("C[0][0] = 1, want 2")
	dot, amx, widen := BF16Path{kn: k}, BF16Path{kn: k, tiles: tiles}, BF16Path{}
	for _, c := range []struct {
		name           string
		ks             []*bf16Kernel
		amx, slow      bool
		grant          error
		badAMX, badDot bool
		setting        string
		want           BF16Path
		notes, err     string
	}{
		{name: "fast kernel", ks: ks, want: dot},
		{name: "slow kernel", ks: ks, slow: true, want: widen, notes: "slower than widening"},
		{name: "slow kernel, dot", ks: ks, slow: true, setting: " Dot", want: dot},
		{name: "widen", ks: ks, setting: "widen", want: widen},
		{name: "auto", ks: ks, setting: "AUTO", want: dot},
		{name: "unknown", ks: ks, setting: "fast", want: dot, err: "want auto, amx, dot or widen"},
		{name: "amx without", ks: ks, slow: true, setting: "amx", want: widen, err: "no AMX-BF16"},
		{name: "no kernels", want: widen},
		{name: "no kernels, dot", setting: "dot", want: widen, err: "no bfloat16 kernel"},
		{name: "wrong kernel", ks: ks, badDot: true, want: widen, notes: "known-answer check: " + wrong.Error()},
		{name: "wrong kernel, dot", ks: ks, badDot: true, setting: "dot", want: widen, err: "known-answer check"},
		{name: "AMX", ks: ks, amx: true, slow: true, want: amx},
		{name: "AMX, fast kernel", ks: ks, amx: true, want: amx},
		{name: "AMX refused", ks: ks, amx: true, grant: refused, want: dot, notes: "AMX off: refused: " + refused.Error()},
		{name: "AMX refused, slow", ks: ks, amx: true, slow: true, grant: refused, want: widen, notes: "AMX off: refused"},
		{name: "AMX wrong", ks: ks, amx: true, badAMX: true, want: dot, notes: "AMX off: failed its known-answer check: " + wrong.Error()},
		{name: "AMX wrong, amx", ks: ks, amx: true, badAMX: true, setting: "amx", want: dot, err: "amx: failed its known-answer check"},
		{name: "AMX, dot", ks: ks, amx: true, setting: "dot", want: dot},
		{name: "AMX, widen", ks: ks, amx: true, setting: "widen", want: widen},
		{name: "AMX without kernel", amx: true, want: widen},
	} {
		o := bf16Offer{ks: c.ks, amx: c.amx, slow: c.slow, tiles: tiles,
			grant: func() error { return c.grant },
			check: func(p BF16Path) error {
				if p.AMX() && c.badAMX || !p.AMX() && c.badDot {
					return wrong
				}
				return nil
			}}
		got, notes, err := o.choose(c.setting)
		joined := strings.Join(notes, "; ")
		if got.kn != c.want.kn || got.AMX() != c.want.AMX() || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) ||
			c.err == "" && ((c.notes == "") != (joined == "") || !strings.Contains(joined, c.notes)) {
			t.Errorf("%s: choose(%q) = %v, notes %q, %v; want %v, notes with %q, an error containing %q", c.name, c.setting, got, joined, err, c.want, c.notes, c.err)
		}
	}
}

// Each path this CPU runs passes the known-answer check, the Go model
// of the tiles included; a path that answers wrong anywhere in C, or
// panics, fails it with a message naming the element or the panic.
func TestCheckBF16(t *testing.T) {
	paths := []BF16Path{{}, {kn: refBF16Kernel}, {kn: refBF16Kernel, tiles: amxModel}}
	for _, kn := range bf16Kernels {
		paths = append(paths, BF16Path{kn: kn})
	}
	if amxCPU && amxGranted() == nil {
		paths = append(paths, BF16Path{kn: bf16Kernels[0], tiles: amxTiles})
	}
	for _, p := range paths {
		if err := checkBF16(p); err != nil {
			t.Errorf("checkBF16(%v): %v", p, err)
		}
		// A wrong answer in one element of one block, as a kernel that
		// misread the tiles' layout would give.
		bad := *p.kn0()
		inner := bad.fn
		bad.fn = func(kp int, a *uint16, lda int, b *uint32, c *float32, ldc int, alpha, beta float32) {
			inner(kp, a, lda, b, c, ldc, alpha, beta)
			*c += 1
		}
		wrong := p
		if p.kn != nil {
			wrong.kn = &bad
		}
		if p.tiles != nil {
			tl := p.tiles
			wrong.tiles = func(jobs []amxJob, mode int, alpha, beta float32, s []float32) {
				tl(jobs, mode, alpha, beta, s)
				*jobs[len(jobs)-1].c -= 2
			}
		}
		if p.kn == nil {
			continue // widening is the reference, not checked
		}
		if err := checkBF16(wrong); err == nil || !strings.Contains(err.Error(), "want") {
			t.Errorf("checkBF16 of a wrong %v: %v, want an error naming the element", p, err)
		}
		boom := p
		boom.kn = &bf16Kernel{name: "boom", mr: 8, nr: 32, fn: func(int, *uint16, int, *uint32, *float32, int, float32, float32) { panic("boom") }}
		if err := checkBF16(boom); err == nil || !strings.Contains(err.Error(), "panicked: boom") {
			t.Errorf("checkBF16 of a panicking %v: %v", p, err)
		}
	}
}

// kn0 is p's kernel, or the Go one for widening (whose check the test
// skips).
func (p BF16Path) kn0() *bf16Kernel {
	if p.kn == nil {
		return refBF16Kernel
	}
	return p.kn
}

// packB's panels, whole (the assembly packers where there are kernels)
// and partial, through the assembly and through Go, against the layout
// written out: word p of column j is (op(B)[2p][j], op(B)[2p+1][j]), an
// odd k's last second half zero, columns past the edge zero.
func TestBF16PackB(t *testing.T) {
	defer func() { asmPack = true }()
	rng := rand.New(rand.NewPCG(9, 9))
	for _, fast := range []bool{true, false} {
		asmPack = fast
		for _, nr := range []int{16, 32, 64} {
			for _, sz := range [][4]int{{1, 1, 0, 0}, {2, 32, 0, 0}, {7, 64, 2, 5}, {64, 100, 4, 3}, {65, 96, 1, 32}, {130, 128, 0, 16}} {
				kb, nb, p0, j0 := sz[0], sz[1], sz[2], sz[3]
				for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
					// Stored B, k×n or n×k, with a padded stride.
					rows, cols := p0+kb, j0+nb
					if tB != blas.NoTrans {
						rows, cols = cols, rows
					}
					ldb := cols + 3
					b := make([]uint16, rows*ldb)
					for x := range b {
						b[x] = uint16(rng.Uint32())
					}
					op := func(p, j int) uint32 {
						if p >= kb || j >= nb {
							return 0
						}
						if tB == blas.NoTrans {
							return uint32(b[(p0+p)*ldb+j0+j])
						}
						return uint32(b[(j0+j)*ldb+p0+p])
					}
					s := new(bf16Scratch)
					got := s.packB(nr, tB, b, ldb, p0, j0, kb, nb)
					kp := (kb + 1) / 2
					for jp := range (nb + nr - 1) / nr {
						for p := range kp {
							for jj := range nr {
								j := jp*nr + jj
								want := op(2*p, j) | op(2*p+1, j)<<16
								if g := got[jp*kp*nr+p*nr+jj]; g != want {
									t.Fatalf("asm %v nr=%d kb=%d nb=%d p0=%d j0=%d tB=%c: panel %d word (%d, %d) = %#x, want %#x",
										fast, nr, kb, nb, p0, j0, tB, jp, p, jj, g, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// HasBF16, BF16Kernel and BF16Gemm agree on what runs.
func TestBF16GemmUsesActive(t *testing.T) {
	if want, _, _ := ChooseBF16(bf16Setting); HasBF16() != want.Arithmetic() || BF16Kernel() != want.String() {
		t.Fatalf("HasBF16() = %v, BF16Kernel() = %q; want %v", HasBF16(), BF16Kernel(), want)
	}
	t.Logf("BF16Gemm: %s", BF16Kernel())
	rng := rand.New(rand.NewPCG(1, 2))
	for _, g := range []gemmCase{
		{blas.NoTrans, blas.Trans, 9, 20, 7, 0.5, 0, 1},
		{blas.NoTrans, blas.NoTrans, 17, 70, 64, 1, 1, 0},
	} {
		o := newBF16Operands(g, rng)
		got := append([]float32(nil), o.c...)
		BF16Gemm(g.tB, g.m, g.n, g.k, g.alpha, o.a, o.lda, o.b, o.ldb, g.beta, got, o.ldc)
		checkBF16C(t, g, o, got, 0)
	}
}

// VDPBF16PS reads bfloat16 subnormals as zero and flushes subnormal
// sums to zero; the fallback keeps them. Both stay within the absolute
// allowance BF16Gemm states, k·2⁻¹²⁶·(1 + max|A| + max|B|)·|alpha|.
func TestBF16GemmSubnormals(t *testing.T) {
	names, fns := bf16Impls()
	for i, fn := range fns {
		t.Run(names[i], func(t *testing.T) {
			const m, n, k = 9, 40, 7
			for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				g := gemmCase{blas.NoTrans, tB, m, n, k, 1, 0, 0}
				o := newBF16Operands(g, rand.New(rand.NewPCG(5, 5)))
				// A: subnormals (0x0001 … 0x007f: 2⁻¹³³ … 2⁻¹²⁶·(1−2⁻⁷)),
				// B: 2¹⁰⁰, so the exact products are far from subnormal.
				for x := range o.a {
					o.a[x] = uint16(1 + x%0x7f)
				}
				for x := range o.b {
					o.b[x] = toBF16(0x1p100)
				}
				got := append([]float32(nil), o.c...)
				fn(g.tB, g.m, g.n, g.k, g.alpha, o.a, o.lda, o.b, o.ldb, g.beta, got, o.ldc)
				checkBF16C(t, g, o, got, k*0x1p-126*(1+0x1p-126+0x1p100))
				if tB == blas.NoTrans {
					want, _ := bf16Want(g, o, 0, 0)
					t.Logf("C[0][0] = %g, exactly %g", got[0], want)
				}
			}
		})
	}
}

// Arguments Sgemm refuses panic before anything is written, on the
// kernels and on the fallback.
func TestBF16GemmBadArguments(t *testing.T) {
	names, fns := bf16Impls()
	for i, fn := range fns {
		for _, tc := range []struct {
			name                   string
			tB                     blas.Transpose
			m, n, k, lda, ldb, ldc int
			la, lb, lc             int
		}{
			{"negative m", blas.NoTrans, -1, 2, 2, 2, 2, 2, 4, 4, 4},
			{"negative k", blas.Trans, 2, 2, -2, 2, 2, 2, 4, 4, 4},
			{"bad transpose", 'x', 2, 2, 2, 2, 2, 2, 4, 4, 4},
			{"short lda", blas.NoTrans, 2, 2, 3, 2, 2, 2, 6, 6, 4},
			{"short a", blas.NoTrans, 2, 2, 3, 3, 2, 2, 5, 6, 4},
			{"short b", blas.NoTrans, 2, 2, 3, 3, 2, 2, 6, 5, 4},
			{"short ldb (Trans)", blas.Trans, 2, 2, 3, 3, 2, 2, 6, 6, 4},
			{"short b (Trans)", blas.Trans, 2, 2, 3, 3, 3, 2, 6, 5, 4},
			{"short c", blas.NoTrans, 2, 2, 3, 3, 2, 2, 6, 6, 3},
			{"short ldc", blas.NoTrans, 2, 3, 1, 1, 3, 2, 2, 3, 6},
		} {
			c := make([]float32, tc.lc)
			c[0] = 7
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s %s: no panic", names[i], tc.name)
					}
				}()
				fn(tc.tB, tc.m, tc.n, tc.k, 1, make([]uint16, tc.la), tc.lda, make([]uint16, tc.lb), tc.ldb, 0, c, tc.ldc)
			}()
			if c[0] != 7 {
				t.Errorf("%s %s: C written before the panic", names[i], tc.name)
			}
		}
	}
	for name, f := range map[string]func(){
		"short band": func() {
			BF16GemmBand(blas.NoTrans, 2, 1, 1, 1, make([]uint16, 2), 1, make([]uint16, 1), 1, 0, make([]float32, 2), 1, Band{Lo: []int{0}, Hi: []int{1}})
		},
		"inner beta": func() {
			BF16GemmBand(blas.NoTrans, 1, 1, 1, 1, make([]uint16, 1), 1, make([]uint16, 1), 1, 0, make([]float32, 1), 1, Band{Lo: []int{0}, Hi: []int{1}, Inner: true})
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// BF16GemmBand on every kernel and on the fallback, against float64, as
// TestSgemmBand checks SgemmBand: under Cols each row's range must be
// the product and the rest the product or C as it was; under Inner,
// with A zero outside each row's range (odd bounds included, which the
// kernels widen to pairs) and beta = 1, all of C the product.
func TestBF16GemmBand(t *testing.T) {
	bf16Choice() // made now, so that it cannot overwrite what the test sets
	saved := bf16Def
	defer func() { bf16Def = saved }()
	for _, kn := range append([]*bf16Kernel{nil}, bf16Kernels...) {
		name := "widened"
		if kn != nil {
			name = kn.name
		}
		t.Run(name, func(t *testing.T) {
			bf16Def = BF16Path{kn: kn}
			rng := rand.New(rand.NewPCG(3, 7))
			for _, sz := range [][3]int{{1, 1, 1}, {7, 33, 5}, {8, 32, 64}, {17, 65, 63}, {64, 256, 64}, {130, 300, 41}, {40, 600, 16}, {30, 64, 600}} {
				for _, bw := range [][2]float64{{1, 1}, {5, 0.5}, {40, 1}, {200, 2}, {1000, 0}} {
					for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
						checkBF16Band(t, BF16GemmBand, rng, sz[0], sz[1], sz[2], bw[0], bw[1], tB, false)
						checkBF16Band(t, BF16GemmBand, rng, sz[0], sz[2], sz[1], bw[0], bw[1], tB, true)
					}
				}
			}
		})
	}
}

func checkBF16Band(t *testing.T, fn bf16BandFunc, rng *rand.Rand, m, n, k int, w, step float64, tB blas.Transpose, inner bool) {
	t.Helper()
	g := gemmCase{blas.NoTrans, tB, m, n, k, 0.5, 1, 0}
	bandN := n
	if inner {
		bandN, g.alpha = k, 2
	}
	band := randomBand(rng, m, bandN, w, step)
	band.Inner = inner
	o := newBF16Operands(g, rng)
	if inner {
		for i := range m {
			for p := range k {
				if p < band.Lo[i] || p >= band.Hi[i] {
					o.a[i*o.lda+p] = 0
				}
			}
		}
	}
	betas := []float32{1}
	if !inner {
		betas = append(betas, 0)
	}
	for _, beta := range betas {
		g.beta = beta
		c0 := append([]float32(nil), o.c...)
		if beta == 0 {
			for i := range c0 {
				c0[i] = float32(i%7) - 3
			}
		}
		c := append([]float32(nil), c0...)
		fn(tB, m, n, k, g.alpha, o.a, o.lda, o.b, o.ldb, beta, c, o.ldc, band)
		oc := o
		oc.c = c0
		for i := range m {
			for j := range n {
				want, mag := bf16Want(g, oc, i, j)
				d := math.Abs(float64(c[i*o.ldc+j]) - want)
				ok := d <= gamma(bf16Rounds(k))*mag
				if !inner && (j < band.Lo[i] || j >= band.Hi[i]) {
					ok = ok || c[i*o.ldc+j] == c0[i*o.ldc+j]
				}
				if !ok {
					t.Fatalf("inner=%v %dx%dx%d band w=%g step=%g tB=%v beta=%g: C[%d][%d] = %g, want %g (row range [%d, %d))",
						inner, m, n, k, w, step, tB, beta, i, j, c[i*o.ldc+j], want, band.Lo[i], band.Hi[i])
				}
			}
		}
	}
}

// bf16Want is entry (i, j) of alpha·A·op(B) + beta·C in float64, and
// the magnitude its bound scales.
func bf16Want(g gemmCase, o bf16Operands, i, j int) (float64, float64) {
	var sum, mag float64
	for p := range g.k {
		var bv uint16
		if g.tB == blas.NoTrans {
			bv = o.b[p*o.ldb+j]
		} else {
			bv = o.b[j*o.ldb+p]
		}
		x := float64(fromBF16(o.a[i*o.lda+p])) * float64(fromBF16(bv))
		sum += x
		mag += math.Abs(x)
	}
	var c float64
	if g.beta != 0 {
		c = float64(g.beta) * float64(o.c[i*o.ldc+j])
	}
	return float64(g.alpha)*sum + c, math.Abs(float64(g.alpha))*mag + math.Abs(c)
}

// FuzzBF16Gemm runs the kernels and the fallback on shapes, transposes,
// scalars and strides the fuzzer picks, against float64.
//
//	go test -run '^$' -fuzz FuzzBF16Gemm -fuzztime 60s ./cpu/internal/sgemm
func FuzzBF16Gemm(f *testing.F) {
	f.Add(uint8(8), uint8(32), uint16(64), true, float32(0.125), float32(0), uint8(0), uint64(1))
	f.Add(uint8(65), uint8(129), uint16(257), false, float32(-1), float32(1), uint8(3), uint64(2))
	f.Fuzz(func(t *testing.T, m, n uint8, k uint16, tb bool, alpha, beta float32, pad uint8, seed uint64) {
		if math.IsNaN(float64(alpha)) || math.IsInf(float64(alpha), 0) || math.Abs(float64(alpha)) > 1e6 ||
			math.IsNaN(float64(beta)) || math.IsInf(float64(beta), 0) || math.Abs(float64(beta)) > 1e6 {
			t.Skip("scalars out of range")
		}
		g := gemmCase{blas.NoTrans, blas.NoTrans, int(m), int(n), int(k % 1100), alpha, beta, int(pad % 5)}
		if tb {
			g.tB = blas.Trans
		}
		o := newBF16Operands(g, rand.New(rand.NewPCG(seed, 3)))
		_, fns := bf16Impls()
		for _, fn := range fns {
			got := append([]float32(nil), o.c...)
			fn(g.tB, g.m, g.n, g.k, g.alpha, o.a, o.lda, o.b, o.ldb, g.beta, got, o.ldc)
			checkBF16C(t, g, o, got, 0)
		}
	})
}

// The fused tile loop's two products at the default tiles (Tq = Tk =
// 256, D = 64), bfloat16 on every kernel and the fallback, beside
// float32 Sgemm's kernel (Sgemm/…, the same shapes) so that one run
// gives the ratio:
//
//	go test -run '^$' -bench 'BF16Gemm|Sgemm' -count 6 ./cpu/internal/sgemm
func BenchmarkBF16Gemm(b *testing.B) {
	names, fns := bf16Impls()
	for _, g := range []gemmCase{
		{tA: blas.NoTrans, tB: blas.Trans, m: 256, n: 256, k: 64, alpha: 0.125},        // S = scale·Q·Kᵀ
		{tA: blas.NoTrans, tB: blas.NoTrans, m: 256, n: 64, k: 256, alpha: 1, beta: 1}, // acc += P·V
		{tA: blas.NoTrans, tB: blas.NoTrans, m: 512, n: 512, k: 512, alpha: 1},
	} {
		o := newBF16Operands(g, rand.New(rand.NewPCG(1, 1)))
		for i := range o.c {
			o.c[i] = 0 // no NaN padding to carry through the loop
		}
		bench := func(name string, fn func()) {
			b.Run(fmt.Sprintf("%v/%s", g, name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					fn()
				}
				b.ReportMetric(2*float64(g.m*g.n*g.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
		for i, fn := range fns {
			bench(names[i], func() { fn(g.tB, g.m, g.n, g.k, g.alpha, o.a, o.lda, o.b, o.ldb, g.beta, o.c, o.ldc) })
		}
		// float32 Sgemm on the same values, for the ratio.
		fo := operands{lda: o.lda, ldb: o.ldb, ldc: o.ldc, c: o.c}
		fo.a, fo.b = make([]float32, len(o.a)), make([]float32, len(o.b))
		for x, v := range o.a {
			fo.a[x] = fromBF16(v)
		}
		for x, v := range o.b {
			fo.b[x] = fromBF16(v)
		}
		bench("float32 Sgemm "+Kernel(), func() {
			Implementation{}.Sgemm(g.tA, g.tB, g.m, g.n, g.k, g.alpha, fo.a, fo.lda, fo.b, fo.ldb, g.beta, fo.c, fo.ldc)
		})
	}
}
