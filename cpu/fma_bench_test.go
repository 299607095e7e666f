package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/attn-go/attn/cpu/internal/sgemm"
	"gonum.org/v1/gonum/blas"
)

// BenchmarkSgemmAgainstFMA times the fused loop's two products at a
// score sub-tile of 256 rows by a key tile of 512, D = 64 and 128, and a
// square product, each on one thread right after the FMA chains FMARate
// times: an iteration runs the chains for fmaStep steps, then one
// product, and of_FMA is the median over the iterations of the
// product's rate over the chains'. Side by side on one core the two see
// the same clock and the same neighbours, so the fraction holds where
// either rate alone moves by a third on a shared machine, which is why
// the micro-kernel's choices (sgemm's _gen) rest on it:
//
//	go test -run '^$' -bench SgemmAgainstFMA ./cpu
//	GODEBUG=cpu.avx512f=off go test -run '^$' -bench SgemmAgainstFMA ./cpu
func BenchmarkSgemmAgainstFMA(b *testing.B) {
	if fmaPeak == nil || !sgemm.Accelerated() {
		b.Skipf("no FMA loop (%s) or no micro-kernel (%s)", noFMAReason, sgemm.Kernel())
	}
	k := fmaPeak
	ops := k.operands()
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.Float64() - 0.5)
		}
		return v
	}
	for _, g := range []struct {
		name    string
		tB      blas.Transpose
		m, n, k int
		beta    float32
	}{
		{"QKt/D=64", blas.Trans, 256, 512, 64, 0},
		{"PV/D=64", blas.NoTrans, 256, 64, 512, 1},
		{"QKt/D=128", blas.Trans, 256, 512, 128, 0},
		{"PV/D=128", blas.NoTrans, 256, 128, 512, 1},
		{"square/512", blas.NoTrans, 512, 512, 512, 0},
	} {
		a, bm, c := fill(g.m*g.k), fill(g.k*g.n), fill(g.m*g.n)
		ldb := g.n
		if g.tB == blas.Trans {
			ldb = g.k
		}
		b.Run(fmt.Sprintf("%s/%s", g.name, sgemm.Kernel()), func(b *testing.B) {
			var fracs []float64
			for b.Loop() {
				t0 := time.Now()
				k.run(ops, fmaStep)
				t1 := time.Now()
				sgemm.Implementation{}.Sgemm(blas.NoTrans, g.tB, g.m, g.n, g.k, 1, a, g.k, bm, ldb, g.beta, c, g.n)
				t2 := time.Now()
				peak := float64(fmaStep) * k.flops() / t1.Sub(t0).Seconds()
				fracs = append(fracs, 2*float64(g.m*g.n*g.k)/t2.Sub(t1).Seconds()/peak)
			}
			slices.Sort(fracs)
			b.ReportMetric(fracs[len(fracs)/2], "of_FMA")
		})
	}
}
