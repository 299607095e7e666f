//go:build arm64 && !purego

package sgemm

import "golang.org/x/sys/cpu"

// kernels are the micro-kernels this CPU can run. NEON (ASIMD) is part
// of every ARMv8-A core Go runs on, but x/sys/cpu reports it, and
// GODEBUG=cpu.asimd=off takes it out.
var kernels = arm64Kernels(cpu.ARM64.HasASIMD)

func arm64Kernels(neon bool) []*kernel {
	if !neon {
		return nil
	}
	return []*kernel{{name: "NEON 8×12", mr: 8, nr: 12, fn: kern8x12NEON}}
}

// kern8x12NEON sets blocks 8×12 blocks of C, one under the other from c,
// to alpha·A·B + beta·C (NEON, kernel_arm64.s).
//
//go:noescape
func kern8x12NEON(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, alpha float32, beta float32, blocks int)
