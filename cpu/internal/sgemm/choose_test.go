package sgemm

import (
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// $ATTN_CPU_KERNEL picks a kernel by rows × columns; a name no kernel
// has keeps the first and says which there are.
func TestChoose(t *testing.T) {
	k8 := &kernel{name: "AVX-512 8×32", mr: 8, nr: 32}
	k6 := &kernel{name: "AVX-512 6×64", mr: 6, nr: 64}
	k2 := &kernel{name: "AVX2+FMA 6×16", mr: 6, nr: 16}
	ks := []*kernel{k6, k8, k2}
	for _, c := range []struct {
		ks   []*kernel
		name string
		want *kernel
		err  string
	}{
		{ks, "", k6, ""},
		{ks, "8x32", k8, ""},
		{ks, " 8×32 ", k8, ""},
		{ks, "6X16", k2, ""},
		{ks, "6x64", k6, ""},
		{ks, "12x32", k6, "6x64, 8x32, 6x16"},
		{ks, "fast", k6, `ATTN_CPU_KERNEL="fast"`},
		{nil, "", nil, ""},
		{nil, "8x32", nil, "no micro-kernel"},
	} {
		got, err := choose(c.ks, c.name)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("choose(%d kernels, %q) = %v, %v; want %v, an error containing %q", len(c.ks), c.name, got, err, c.want, c.err)
		}
	}
	if err := KernelErr(); err != nil {
		t.Errorf("KernelErr() = %v with the tests' environment", err)
	}
}

// Every kernel sums each element of C as the same chain of FMAs over k,
// so the kernel chosen changes the speed, never the bits: the kernels
// are held to each other exactly, over TestSgemm's edges and the fused
// loop's shapes.
func TestKernelsAgree(t *testing.T) {
	if len(kernels) < 2 {
		t.Skipf("%d kernels on this CPU: an AVX-512 CPU has two", len(kernels))
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for _, mnk := range [][3]int{
		{1, 1, 1}, {6, 64, 9}, {7, 65, 63}, {5, 63, 64}, {12, 128, 3}, {13, 129, 257}, {17, 33, 5},
		{64, 512, 64}, {120, 512, 128}, {128, 64, 512}, {120, 128, 512}, {9, 1030, 17},
	} {
		for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, ab := range [][2]float32{{0.125, 0}, {1, 1}, {-2, 0.5}} {
				g := gemmCase{blas.NoTrans, tB, mnk[0], mnk[1], mnk[2], ab[0], ab[1], mnk[0] % 3}
				o := newOperands(g, rng)
				var first []float32
				for _, kn := range kernels {
					got := append([]float32(nil), o.c...)
					run(kn, g.tA, g.tB, g.m, g.n, g.k, g.alpha, o.a, o.lda, o.b, o.ldb, g.beta, got, o.ldc)
					if first == nil {
						first = got
						continue
					}
					if !same(first, got) {
						t.Fatalf("%v: %s and %s differ", g, kernels[0].name, kn.name)
					}
				}
			}
		}
	}
}
