package sgemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// A transposed B's panels, packed by the assembly transposer where it
// runs (packT: 16×16 blocks, AVX-512) and by the Go loop (asmPack off),
// hold op(B)[p][j] = B[j][p0+p] at p·nr + j mod nr, zeros past n's last
// column: block edges and tails in k (kb = 0 … 49 around 16 and 32), in
// columns (a last panel of 1 … nr−1 columns, 16 of them included) and
// offsets p0 and j0 into a wider B.
func TestPackTransposed(t *testing.T) {
	t.Logf("assembly transposers: AVX-512 %v, AVX %v", hasAVX512, hasAVX)
	defer func() { asmPack = true }()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, nr := range []int{16, 32} {
		for _, kb := range []int{0, 1, 15, 16, 17, 31, 32, 33, 48, 49} {
			for _, nb := range []int{1, 15, 16, 17, nr, 40, 3*nr - 16, 3 * nr} {
				p0, j0 := 3, 5
				ldb := p0 + kb + 7
				b := make([]float32, (j0+nb)*ldb)
				for i := range b {
					b[i] = float32(rng.NormFloat64())
				}
				for _, asm := range []bool{true, false} {
					asmPack = asm
					buf := make([]float32, packedSize(nr, blas.Trans, kb, nb))
					for i := range buf {
						buf[i] = float32(math.NaN()) // every entry must be written
					}
					packBInto(buf, nr, blas.Trans, b, ldb, p0, j0, kb, nb)
					for jp := range (nb + nr - 1) / nr {
						for p := range kb {
							for jj := range nr {
								j := jp*nr + jj
								want := float32(0)
								if j < nb {
									want = b[(j0+j)*ldb+p0+p]
								}
								if got := buf[jp*kb*nr+p*nr+jj]; got != want && !(got != got && want != want) {
									t.Fatalf("asm %v nr=%d kb=%d nb=%d: panel %d (p=%d, column %d) = %v, want %v", asm, nr, kb, nb, jp, p, jj, got, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestPackAT: Aᵀ's packing (packAT: the AVX transposer's 8×8 blocks, the
// Go tiles around them) against the definition, for sizes around the
// blocks, with the assembly on and off.
func TestPackAT(t *testing.T) {
	defer func() { asmPack = true }()
	rng := rand.New(rand.NewPCG(5, 6))
	var s scratch
	for _, m := range []int{1, 7, 8, 9, 16, 23, 64} {
		for _, kb := range []int{1, 7, 8, 9, 17, 64} {
			p0 := 3
			lda := m + 5
			a := make([]float32, (p0+kb)*lda)
			for i := range a {
				a[i] = float32(rng.NormFloat64())
			}
			for _, asm := range []bool{true, false} {
				asmPack = asm
				s.a = nil
				got := s.packAT(a, lda, m, p0, kb)
				for i := range m {
					for p := range kb {
						if want := a[(p0+p)*lda+i]; got[i*kb+p] != want {
							t.Fatalf("asm %v m=%d kb=%d: [%d][%d] = %v, want %v", asm, m, kb, i, p, got[i*kb+p], want)
						}
					}
				}
			}
		}
	}
}

// The transposer against the Go loop, on the fused loop's key tile (512
// keys, D = 64 and 128, panels of 32):
//
//	go test -run '^$' -bench PackTransposed ./cpu/internal/sgemm
func BenchmarkPackTransposed(b *testing.B) {
	defer func() { asmPack = true }()
	for _, d := range []int{64, 128} {
		src := make([]float32, 512*d)
		buf := make([]float32, 512*d)
		for _, asm := range []bool{true, false} {
			name := map[bool]string{true: "asm", false: "go"}[asm]
			b.Run(fmt.Sprintf("D=%d/%s", d, name), func(b *testing.B) {
				asmPack = asm
				for b.Loop() {
					packBInto(buf, 32, blas.Trans, src, d, 0, 0, d, 512)
				}
				b.ReportMetric(float64(512*d)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gfloat/s")
			})
		}
	}
}
