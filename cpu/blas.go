package cpu

import (
	"runtime/debug"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// sgemm is the BLAS the ops multiply with, and blasName says which: gonum's
// pure Go by default; OpenBLAS through gonum.org/v1/netlib when built
// with -tags openblas (openblas.go). The backend calls it, not the
// package-wide blas32 implementation, so a program's other gonum code is
// left on whatever it chose.
var (
	sgemm    blas.Float32 = gonum.Implementation{}
	blasName              = "gonum " + gonumVersion() + " (pure Go)"
)

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
