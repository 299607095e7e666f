package sgemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// The fused tile loop's two products at a score sub-tile of 256 rows
// (and of 240, a multiple of the AVX2 kernel's 6 rows) by a key tile of
// 512, D = 64, and a square one, on every kernel and gonum:
//
//	go test -run '^$' -bench Sgemm -count 6 ./cpu/internal/sgemm
func BenchmarkSgemm(b *testing.B) {
	names, fns := impls()
	for _, g := range []gemmCase{
		{tA: blas.NoTrans, tB: blas.Trans, m: 256, n: 512, k: 64, alpha: 0.125},        // S = scale·Q·Kᵀ
		{tA: blas.NoTrans, tB: blas.NoTrans, m: 256, n: 64, k: 512, alpha: 1, beta: 1}, // acc += P·V
		{tA: blas.NoTrans, tB: blas.Trans, m: 240, n: 512, k: 64, alpha: 0.125},
		{tA: blas.NoTrans, tB: blas.NoTrans, m: 240, n: 64, k: 512, alpha: 1, beta: 1},
		{tA: blas.NoTrans, tB: blas.NoTrans, m: 512, n: 512, k: 512, alpha: 1},
		{tA: blas.NoTrans, tB: blas.NoTrans, m: 128, n: 64, k: 256, alpha: 1, beta: 1},
		{tA: blas.NoTrans, tB: blas.Trans, m: 256, n: 128, k: 64, alpha: 1, beta: 0},
		{tA: blas.NoTrans, tB: blas.NoTrans, m: 256, n: 64, k: 128, alpha: 1, beta: 1},
		{tA: blas.Trans, tB: blas.NoTrans, m: 128, n: 64, k: 256, alpha: 1, beta: 1},  // the backward's dV += Pᵀ·dO, dK += dSᵀ·Q
		{tA: blas.Trans, tB: blas.NoTrans, m: 128, n: 128, k: 256, alpha: 1, beta: 1}, // at D = 128
	} {
		o := newOperands(g, rand.New(rand.NewPCG(1, 1)))
		for i, fn := range fns {
			b.Run(fmt.Sprintf("%v/%s", g, names[i]), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					fn(g.tA, g.tB, g.m, g.n, g.k, g.alpha, o.a, o.lda, o.b, o.ldb, g.beta, o.c, o.ldc)
				}
				b.ReportMetric(2*float64(g.m*g.n*g.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
