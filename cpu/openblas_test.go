//go:build openblas

package cpu

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/attn-go/attn/backend/backendtest"
)

// Under -tags openblas the ops multiply with OpenBLAS: it must agree with
// gonum's pure Go on every shape the ops use, odd ones and chunk edges
// included, with both transposes, alphas and betas.
func TestOpenBLASAgainstGonum(t *testing.T) {
	if !strings.HasPrefix(blasName, "OpenBLAS") {
		t.Fatalf("built with -tags openblas, but the ops use %s", blasName)
	}
	rng := rand.New(rand.NewPCG(4, 2))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.Float64()*2 - 1)
		}
		return x
	}
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {64, 192, 256}, {65, 193, 257}, {17, 1, 129}, {128, 64, 64}} {
		m, n, k := sz[0], sz[1], sz[2]
		for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, ab := range [][2]float32{{1, 0}, {0.125, 1}, {-2, 0.5}} {
				a := fill(m * k)
				var b []float32
				ldb := n
				if tB == blas.Trans {
					b, ldb = fill(n*k), k
				} else {
					b = fill(k * n)
				}
				c0 := fill(m * n)
				want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
				gonum.Implementation{}.Sgemm(blas.NoTrans, tB, m, n, k, ab[0], a, k, b, ldb, ab[1], want, n)
				blasImpl.Sgemm(blas.NoTrans, tB, m, n, k, ab[0], a, k, b, ldb, ab[1], got, n)
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); backendtest.Exceeds(d, 1e-4*math.Max(1, math.Abs(float64(want[i])))) {
						t.Fatalf("%d×%d×%d tB=%v alpha=%v beta=%v: C[%d] = %v, gonum %v", m, n, k, tB, ab[0], ab[1], i, got[i], want[i])
					}
				}
			}
		}
	}
}
