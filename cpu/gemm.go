package cpu

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/attn-go/attn/cpu/internal/sgemm"
)

// Chunk sizes for gemm. gonum's pure-Go Sgemm starts GOMAXPROCS goroutines
// of its own once C spans four or more 64×64 blocks; the ops already run
// one Gemm per worker, so C is cut into pieces of at most 64×192 (three
// blocks) to keep each call serial and the thread count what WithThreads
// said. The inner dimension is cut too: gonum's serial kernel does not
// block it, and a 64-row block of P times an Nk×Dv V would otherwise
// stream all of V through the cache once per row. OpenBLAS blocks for
// itself and runs one thread per call here, and so does attn's
// micro-kernel driver: both lift the cuts (blas.go).
var (
	gemmRows = 64
	gemmCols = 192
	gemmK    = 256
)

// liftGemmChunks makes each gemm one Sgemm call, for a BLAS that blocks
// for itself.
func liftGemmChunks() { gemmRows, gemmCols, gemmK = 1<<30, 1<<30, 1<<30 }

// mat is the rows×cols matrix at data[off:] with the given row stride.
func mat(data []float32, off, rows, cols, stride int) blas32.General {
	g := blas32.General{Rows: rows, Cols: cols, Stride: stride}
	if rows > 0 && cols > 0 {
		g.Data = data[off : off+(rows-1)*stride+cols]
	}
	return g
}

// sub is the r×c submatrix of g at row i, column j.
func sub(g blas32.General, i, j, r, c int) blas32.General {
	return mat(g.Data, i*g.Stride+j, r, c, g.Stride)
}

// gemm computes
//
//	C = alpha · A · op(B) + beta · C
//
// with A m×k, op(B) = B (tB = NoTrans, B k×n) or Bᵀ (tB = Trans, B n×k),
// in serial chunks (see gemmRows). k may be 0, which scales C by beta.
func gemm(tB blas.Transpose, alpha float32, a, b blas32.General, beta float32, c blas32.General) {
	m, n, k := c.Rows, c.Cols, a.Cols
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := range m {
			row := c.Data[i*c.Stride : i*c.Stride+n]
			if beta == 0 {
				clear(row)
			} else {
				for j := range row {
					row[j] *= beta
				}
			}
		}
		return
	}
	for i0 := 0; i0 < m; i0 += gemmRows {
		mi := min(gemmRows, m-i0)
		for j0 := 0; j0 < n; j0 += gemmCols {
			nj := min(gemmCols, n-j0)
			cij := sub(c, i0, j0, mi, nj)
			bt := beta
			for l0 := 0; l0 < k; l0 += gemmK {
				kl := min(gemmK, k-l0)
				ail := sub(a, i0, l0, mi, kl)
				var blj blas32.General
				if tB == blas.Trans {
					blj = sub(b, j0, l0, nj, kl)
				} else {
					blj = sub(b, l0, j0, kl, nj)
				}
				blasImpl.Sgemm(blas.NoTrans, tB, mi, nj, kl, alpha, ail.Data, ail.Stride, blj.Data, blj.Stride, bt, cij.Data, cij.Stride)
				bt = 1
			}
		}
	}
}

// gemmBand is gemm restricted to a band of rows' ranges (sgemm.Band):
// with attn's micro-kernel the kernel blocks outside it are skipped
// (Cols: columns of C no row of the block needs; Inner: inner indices
// where A is zero, beta = 1); any other BLAS computes everything, which
// the band allows.
func gemmBand(tB blas.Transpose, alpha float32, a, b blas32.General, beta float32, c blas32.General, band sgemm.Band) {
	if !onMicroKernel() || c.Rows == 0 || c.Cols == 0 || a.Cols == 0 {
		gemm(tB, alpha, a, b, beta, c)
		return
	}
	sgemm.Implementation{}.SgemmBand(tB, c.Rows, c.Cols, a.Cols, alpha, a.Data, a.Stride, b.Data, b.Stride, beta, c.Data, c.Stride, band)
}

// packK packs a key tile for gemmBandPacked, where attn's micro-kernel
// multiplies, and reports whether it did; any other BLAS multiplies the
// tile as it is (gemmBand).
func packK(pk *sgemm.PackedB, k blas32.General) bool {
	if !onMicroKernel() || k.Rows == 0 || k.Cols == 0 {
		return false
	}
	pk.Pack(blas.Trans, k.Rows, k.Cols, k.Data, k.Stride)
	return true
}

// gemmBandPacked is gemmBand(blas.Trans, alpha, a, k, 0, c, band) for the
// key tile k that packK packed into pk.
func gemmBandPacked(alpha float32, a blas32.General, pk *sgemm.PackedB, c blas32.General, band sgemm.Band) {
	sgemm.Implementation{}.SgemmBandPacked(c.Rows, c.Cols, a.Cols, alpha, a.Data, a.Stride, pk, 0, c.Data, c.Stride, &band)
}

// onMicroKernel says whether the backend multiplies with attn's
// micro-kernel (sgemm.Implementation with a kernel for this CPU), whose
// band and packed products gemmBand and packK use.
func onMicroKernel() bool {
	_, ok := blasImpl.(sgemm.Implementation)
	return ok && sgemm.Accelerated()
}
