package sgemm

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
)

// A path that CI's machines may never run (AMX's tiles, VDPBF16PS) does
// not become the default on the word of CPUID alone: before its first
// use in a process it multiplies a small known product (checkBF16), and
// a path that answers wrong, or panics, is never taken (ChooseBF16
// notes why). The product's operands are small integers, exact in
// bfloat16, so every product and every sum is exact in float32 and any
// right path gives the exact answer whatever its order of addition: the
// check compares bits, with nothing left to a tolerance. It covers what
// attention asks of BF16GemmBand: B transposed (Q·Kᵀ) and not (P·V), an
// odd k (A packed with a zero per row), whole AMX blocks of 32×32 with
// 16-pair runs beside inner tails and kernel edges, and the three ways
// the tiles leave C (alpha·AB, AB + C, alpha·AB + beta·C). It runs once a
// process for each path, and takes well under a millisecond.
//
// A fault the check cannot catch: an instruction the CPU refuses raises
// SIGILL, which the Go runtime makes fatal. AMX's one known cause, a
// process without Linux's permission for the tiles, is asked for first
// (amxGranted) and a refusal turns AMX off before anything runs.

// bf16Checks caches each path's check for the process, by kernel and
// whether it runs the tiles.
var bf16Checks sync.Map // bf16CheckKey → *bf16CheckResult

type bf16CheckKey struct {
	kn  *bf16Kernel
	amx bool
}

type bf16CheckResult struct {
	once sync.Once
	err  error
}

// checkedBF16 is checkBF16(p), run once a process for each path.
func checkedBF16(p BF16Path) error {
	r, _ := bf16Checks.LoadOrStore(bf16CheckKey{p.kn, p.tiles != nil}, new(bf16CheckResult))
	res := r.(*bf16CheckResult)
	res.once.Do(func() { res.err = checkBF16(p) })
	return res.err
}

// bf16CheckCases are checkBF16's products.
var bf16CheckCases = []struct {
	tB          blas.Transpose
	m, n, k     int
	alpha, beta float32
}{
	{blas.Trans, 33, 40, 40, 0.5, 0},    // Q·Kᵀ: tiles mode 0, a 4-pair inner tail, edge rows and columns
	{blas.NoTrans, 33, 40, 39, 1, 1},    // P·V: mode 1, odd k
	{blas.Trans, 32, 32, 32, 2, -0.25},  // mode 2, one whole block
	{blas.NoTrans, 7, 35, 3, 0.25, 0.5}, // no whole block: the kernel alone
}

// checkBF16 runs bf16CheckCases on p and compares each element of C with
// its exact value, returning the first that differs (or a panic) as an
// error that names the product.
func checkBF16(p BF16Path) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s panicked: %v", p, r)
		}
	}()
	for ci, c := range bf16CheckCases {
		ar, ac := c.m, c.k
		br, bc := c.k, c.n
		if c.tB != blas.NoTrans {
			br, bc = c.n, c.k
		}
		lda, ldb, ldc := ac+1, bc+2, c.n+3 // strides past the rows, as the fused loop's are
		a := make([]uint16, ar*lda)
		b := make([]uint16, br*ldb)
		cm := make([]float32, c.m*ldc)
		// Integers in −7 … 7 from patterns that differ by row and column,
		// so that a transposed or shifted operand gives another answer;
		// ai and bi hold them as ints, op(B) as k×n, for the reference.
		ai := make([]int32, c.m*c.k)
		bi := make([]int32, c.n*c.k) // n×k: op(B)ᵀ, so the reference's inner loop is contiguous
		for i := range ar {
			for j := range ac {
				v := int32((i*5+j*3+ci)%15 - 7)
				a[i*lda+j], ai[i*c.k+j] = toBF16Exact(float32(v)), v
			}
		}
		for i := range br {
			for j := range bc {
				v := int32((i*7+j*2+ci)%13 - 6)
				b[i*ldb+j] = toBF16Exact(float32(v))
				if c.tB == blas.NoTrans {
					bi[j*c.k+i] = v
				} else {
					bi[i*c.k+j] = v
				}
			}
		}
		for i := range c.m {
			for j := range ldc {
				cm[i*ldc+j] = float32((i+2*j)%9 - 4)
			}
		}
		want := append([]float32(nil), cm...)
		for i := range c.m {
			for j := range c.n {
				var s int32
				for q, x := range ai[i*c.k : (i+1)*c.k] {
					s += x * bi[j*c.k+q]
				}
				w := float64(c.alpha) * float64(s)
				if c.beta != 0 {
					w += float64(c.beta) * float64(want[i*ldc+j])
				}
				want[i*ldc+j] = float32(w)
			}
		}
		p.Gemm(c.tB, c.m, c.n, c.k, c.alpha, a, lda, b, ldb, c.beta, cm, ldc)
		for i := range c.m {
			for j := range ldc {
				if g, w := cm[i*ldc+j], want[i*ldc+j]; math.Float32bits(g) != math.Float32bits(w) {
					what := "C"
					if j >= c.n {
						what = "C's padding"
					}
					return fmt.Errorf("%s: %d×%d×%d product (op(B) %c, alpha %g, beta %g): %s[%d][%d] = %g, want %g",
						p, c.m, c.n, c.k, c.tB, c.alpha, c.beta, what, i, j, g, w)
				}
			}
		}
	}
	return nil
}

// toBF16Exact is x as a bfloat16, for an x that is one exactly.
func toBF16Exact(x float32) uint16 { return uint16(math.Float32bits(x) >> 16) }
