package sgemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// sgemmFunc is Sgemm's signature.
type sgemmFunc func(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

// impls are the Sgemms under test: every kernel this CPU runs, through
// the driver, and gonum's pure Go, the fallback. Each is held to a float64
// product, so the kernels and gonum are held to each other too.
func impls() (names []string, fns []sgemmFunc) {
	names, fns = append(names, "gonum"), append(fns, gonum.Implementation{}.Sgemm)
	for _, kn := range kernels {
		names = append(names, kn.name)
		fns = append(fns, func(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
			run(kn, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		})
	}
	return names, fns
}

type gemmCase struct {
	tA, tB      blas.Transpose
	m, n, k     int
	alpha, beta float32
	pad         int // extra columns in every leading dimension
}

func (g gemmCase) String() string {
	t := func(t blas.Transpose) string {
		if t == blas.NoTrans {
			return "N"
		}
		return "T"
	}
	return fmt.Sprintf("%s%s/%dx%dx%d/a%g/b%g/pad%d", t(g.tA), t(g.tB), g.m, g.n, g.k, g.alpha, g.beta, g.pad)
}

// operands are one case's A, B and C in their stored shapes, with
// leading dimensions pad wider than they need, and the padding filled
// with NaN so that a read of it shows in C.
type operands struct {
	a, b, c       []float32
	lda, ldb, ldc int
}

func newOperands(g gemmCase, rng *rand.Rand) operands {
	ar, ac := g.m, g.k
	if g.tA != blas.NoTrans {
		ar, ac = g.k, g.m
	}
	br, bc := g.k, g.n
	if g.tB != blas.NoTrans {
		br, bc = g.n, g.k
	}
	fill := func(rows, cols, ld int) []float32 {
		x := make([]float32, rows*ld)
		for i := range x {
			if i%ld < cols {
				x[i] = float32(rng.Float64()*2 - 1)
			} else {
				x[i] = float32(math.NaN())
			}
		}
		return x
	}
	o := operands{lda: ac + g.pad, ldb: bc + g.pad, ldc: g.n + g.pad}
	o.lda, o.ldb, o.ldc = max(o.lda, 1), max(o.ldb, 1), max(o.ldc, 1)
	o.a, o.b, o.c = fill(ar, ac, o.lda), fill(br, bc, o.ldb), fill(g.m, g.n, o.ldc)
	if g.beta == 0 {
		// beta = 0 must overwrite C, NaN and all.
		for i := range o.c {
			o.c[i] = float32(math.NaN())
		}
	}
	return o
}

// checkC compares got with alpha·op(A)·op(B) + beta·C in float64, allowing
// float32 rounding of each sum: 4·eps·(k+2) times the sum of |terms|.
func checkC(t *testing.T, g gemmCase, o operands, got []float32) {
	t.Helper()
	at := func(i, p int) float64 {
		if g.tA == blas.NoTrans {
			return float64(o.a[i*o.lda+p])
		}
		return float64(o.a[p*o.lda+i])
	}
	bt := func(p, j int) float64 {
		if g.tB == blas.NoTrans {
			return float64(o.b[p*o.ldb+j])
		}
		return float64(o.b[j*o.ldb+p])
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
				x := at(i, p) * bt(p, j)
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
			tol := 4 * 0x1p-24 * float64(g.k+2) * mag
			if d := math.Abs(float64(got[idx]) - want); !(d <= tol) {
				t.Fatalf("%v: C[%d][%d] = %v, want %v (off by %.3g, tolerance %.3g)", g, i, j, got[idx], want, d, tol)
			}
		}
	}
}

// The driver's edges: sizes around the kernels' MR (6, 8) and NR (12, 16, 32, 64),
// the k block (256) and the n block (512), with both transposes, the
// alphas and betas the backend uses and others, and padded strides.
func TestSgemm(t *testing.T) {
	var cases []gemmCase
	for _, mnk := range [][3]int{
		{0, 0, 0}, {0, 5, 3}, {4, 0, 3}, {3, 4, 0},
		{1, 1, 1}, {5, 15, 1}, {6, 16, 1}, {7, 17, 2}, {6, 32, 9}, {11, 31, 33}, {12, 33, 7}, {13, 48, 5},
		{64, 128, 64}, {64, 64, 128}, {65, 129, 63}, {63, 127, 65}, {64, 96, 128},
		{3, 5, 255}, {7, 9, 256}, {6, 16, 257}, {2, 3, 513},
		{5, 511, 3}, {7, 512, 4}, {6, 513, 5}, {13, 1030, 17},
		{8, 12, 1}, {7, 11, 3}, {9, 13, 4}, {16, 24, 5}, {17, 25, 2}, {8, 36, 256},
		{6, 64, 3}, {7, 65, 4}, {5, 63, 9}, {12, 128, 2}, {13, 127, 6}, {6, 192, 258},
	} {
		for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				for _, ab := range [][2]float32{{1, 0}, {0.125, 1}, {-2, 0.5}, {0, 2}} {
					cases = append(cases, gemmCase{tA, tB, mnk[0], mnk[1], mnk[2], ab[0], ab[1], (mnk[0] + mnk[2]) % 3})
				}
			}
		}
	}
	names, fns := impls()
	for i, fn := range fns {
		t.Run(names[i], func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 11))
			for _, g := range cases {
				o := newOperands(g, rng)
				got := append([]float32(nil), o.c...)
				a0, b0 := append([]float32(nil), o.a...), append([]float32(nil), o.b...)
				fn(g.tA, g.tB, g.m, g.n, g.k, g.alpha, o.a, o.lda, o.b, o.ldb, g.beta, got, o.ldc)
				checkC(t, g, o, got)
				if !same(a0, o.a) || !same(b0, o.b) {
					t.Fatalf("%v: A or B changed", g)
				}
			}
		})
	}
}

// same compares bit patterns, so NaN padding compares equal to itself.
func same(x, y []float32) bool {
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			return false
		}
	}
	return len(x) == len(y)
}

// Without a kernel Sgemm is gonum's; with one it is the driver's.
func TestImplementationUsesActive(t *testing.T) {
	if (active != nil) != Accelerated() || (active == nil) != (len(kernels) == 0) {
		t.Fatalf("active %v, %d kernels, Accelerated() = %v", active, len(kernels), Accelerated())
	}
	t.Logf("kernel: %s", Kernel())
	g := gemmCase{blas.NoTrans, blas.Trans, 9, 20, 7, 0.5, 0, 1}
	o := newOperands(g, rand.New(rand.NewPCG(1, 2)))
	got := append([]float32(nil), o.c...)
	Implementation{}.Sgemm(g.tA, g.tB, g.m, g.n, g.k, g.alpha, o.a, o.lda, o.b, o.ldb, g.beta, got, o.ldc)
	checkC(t, g, o, got)
}

// Arguments gonum refuses panic before anything is written.
func TestSgemmBadArguments(t *testing.T) {
	for _, kn := range append([]*kernel{nil}, kernels...) {
		for _, tc := range []struct {
			name                   string
			m, n, k, lda, ldb, ldc int
			la, lb, lc             int
		}{
			{"negative m", -1, 2, 2, 2, 2, 2, 4, 4, 4},
			{"short lda", 2, 2, 3, 2, 2, 2, 6, 6, 4},
			{"short a", 2, 2, 3, 3, 2, 2, 5, 6, 4},
			{"short c", 2, 2, 3, 3, 2, 2, 6, 6, 3},
			{"short ldc", 2, 3, 1, 1, 3, 2, 2, 3, 6},
		} {
			c := make([]float32, tc.lc)
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%v %s: no panic", kn, tc.name)
					}
				}()
				a, b := make([]float32, tc.la), make([]float32, tc.lb)
				if kn == nil {
					Implementation{}.Sgemm(blas.NoTrans, blas.NoTrans, tc.m, tc.n, tc.k, 1, a, tc.lda, b, tc.ldb, 0, c, tc.ldc)
				} else {
					c[0] = 7
					run(kn, blas.NoTrans, blas.NoTrans, tc.m, tc.n, tc.k, 1, a, tc.lda, b, tc.ldb, 0, c, tc.ldc)
				}
			}()
			if kn != nil && c[0] != 7 {
				t.Errorf("%s %s: C written before the panic", kn.name, tc.name)
			}
		}
	}
}

// FuzzSgemm runs the kernels on shapes, transposes, scalars and strides
// the fuzzer picks, against float64.
//
//	go test -run '^$' -fuzz FuzzSgemm -fuzztime 60s ./cpu/internal/sgemm
func FuzzSgemm(f *testing.F) {
	f.Add(uint8(6), uint8(16), uint16(64), false, true, float32(0.125), float32(0), uint8(0), uint64(1))
	f.Add(uint8(65), uint8(129), uint16(257), true, false, float32(-1), float32(1), uint8(3), uint64(2))
	f.Fuzz(func(t *testing.T, m, n uint8, k uint16, ta, tb bool, alpha, beta float32, pad uint8, seed uint64) {
		if len(kernels) == 0 {
			t.Skip("no micro-kernel on this CPU or build: an x86 CPU with AVX2 and FMA, or an arm64 one, without -tags purego, runs this test")
		}
		if math.IsNaN(float64(alpha)) || math.IsInf(float64(alpha), 0) || math.Abs(float64(alpha)) > 1e6 ||
			math.IsNaN(float64(beta)) || math.IsInf(float64(beta), 0) || math.Abs(float64(beta)) > 1e6 {
			t.Skip("scalars out of range")
		}
		g := gemmCase{blas.NoTrans, blas.NoTrans, int(m), int(n), int(k % 600), alpha, beta, int(pad % 5)}
		if ta {
			g.tA = blas.Trans
		}
		if tb {
			g.tB = blas.Trans
		}
		o := newOperands(g, rand.New(rand.NewPCG(seed, 3)))
		for _, kn := range kernels {
			got := append([]float32(nil), o.c...)
			run(kn, g.tA, g.tB, g.m, g.n, g.k, g.alpha, o.a, o.lda, o.b, o.ldb, g.beta, got, o.ldc)
			checkC(t, g, o, got)
		}
	})
}
