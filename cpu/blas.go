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
	blasImpl     blas.Float32
	blasName     string
	defaultTiles [2]int
)

func init() {
	switch impl, name, ok := openBLAS(); {
	case ok:
		blasImpl, blasName = impl, name
		defaultTiles = [2]int{128, 256}
		liftGemmChunks() // OpenBLAS blocks for itself
	case sgemm.Accelerated():
		blasImpl = sgemm.Implementation{}
		blasName = "attn sgemm (" + sgemm.Kernel() + " micro-kernel), gonum " + gonumVersion()
		defaultTiles = [2]int{256, 256}
		liftGemmChunks() // so does the micro-kernel's driver
	default:
		blasImpl = sgemm.Implementation{} // gonum's Sgemm
		blasName = "gonum " + gonumVersion() + " (pure Go)"
		defaultTiles = [2]int{64, 128}
	}
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
