package cpu

import (
	"runtime/debug"

	"gonum.org/v1/gonum/blas"

	"github.com/attn-go/attn/cpu/internal/sgemm"
)

// blasImpl is the BLAS the ops multiply with, and blasName says which.
// By default it is gonum's with Sgemm on attn's own micro-kernel (AVX-512
// or AVX2 assembly, cpu/internal/sgemm), or gonum's pure Go where the CPU
// has neither or the build is purego; with -tags openblas it is OpenBLAS
// through gonum.org/v1/netlib (openblas.go). The backend calls it, not the
// package-wide blas32 implementation, so a program's other gonum code is
// left on whatever it chose.
var (
	blasImpl blas.Float32 = sgemm.Implementation{}
	blasName              = defaultBLASName()
)

func defaultBLASName() string {
	if !sgemm.Accelerated() {
		return "gonum " + gonumVersion() + " (pure Go)"
	}
	return "attn sgemm (" + sgemm.Kernel() + " micro-kernel), gonum " + gonumVersion()
}

// The micro-kernel's driver blocks for the cache itself, as OpenBLAS
// does, so gemm's chunks, sized for gonum's pure-Go kernel, are lifted.
func init() {
	if sgemm.Accelerated() {
		liftGemmChunks()
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
