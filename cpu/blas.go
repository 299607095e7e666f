package cpu

import (
	"runtime/debug"

	"gonum.org/v1/gonum/blas"

	"github.com/attn-go/attn/cpu/internal/sgemm"
)

// blasImpl is the BLAS the ops multiply with, blasName says which, and
// defaultTiles are DefaultTiles for it. With -tags openblas it is
// OpenBLAS through gonum.org/v1/netlib (openblas.go); by default it is
// gonum's with Sgemm on attn's own micro-kernel (AVX-512 or AVX2
// assembly, cpu/internal/sgemm), which is gonum's pure Go where the CPU
// has neither or the build is purego. The backend calls it, not the
// package-wide blas32 implementation, so a program's other gonum code is
// left on whatever it chose.
var (
	blasImpl blas.Float32
	blasName string
	// defaultTiles are the query tile, its score sub-tile and the key
	// tile (DefaultTiles, DefaultSubTile).
	defaultTiles [3]int
)

func init() {
	switch impl, name, ok := openBLAS(); {
	case ok:
		blasImpl, blasName = impl, name
		defaultTiles = [3]int{128, 128, 256}
		liftGemmChunks() // OpenBLAS blocks for itself
	case sgemm.Accelerated():
		blasImpl = sgemm.Implementation{}
		blasName = "attn sgemm (" + sgemm.Kernel() + " micro-kernel), gonum " + gonumVersion()
		defaultTiles = kernelTiles(sgemm.KernelRows())
		liftGemmChunks() // so does the micro-kernel's driver
	default:
		blasImpl = sgemm.Implementation{} // gonum's Sgemm
		blasName = "gonum " + gonumVersion() + " (pure Go)"
		defaultTiles = [3]int{64, 64, 128}
	}
}

// kernelTiles are the tiles for attn's micro-kernel of mr rows: sub-tiles
// a multiple of mr, so that no row block of the kernel is an edge.
func kernelTiles(mr int) [3]int {
	// AVX2's 6×16 and AVX-512's 6×64: with 6×64 on the 2-core Xeon, sub-tiles
	// of 96 to 252 rows and key tiles of 256 to 1024 all ran within the noise
	// of 120 and 512 (B=1 H=8 N=4096, D = 64 and 128).
	if mr == 6 {
		return [3]int{960, 120, 512}
	}
	return [3]int{1024, 256, 512} // AVX-512, and NEON's 8 rows (unmeasured there)
}

func gonumVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "gonum.org/v1/gonum" {
				if d.Replace != nil {
					d = d.Replace
				}
				return d.Version
			}
		}
	}
	return "(unknown version)"
}
