//go:build amd64 && !purego

package sgemm

import (
	"math"

	"golang.org/x/sys/cpu"
	"gonum.org/v1/gonum/blas"
)

// bf16Kernels are the bfloat16 micro-kernels this CPU can run, fastest
// first: VDPBF16PS needs AVX512_BF16 and, on 512-bit registers,
// AVX-512F. GODEBUG=cpu.avx512bf16=off takes them out.
var bf16Kernels = amd64BF16Kernels(cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16)

// bf16Slow says the CPU widens bfloat16 to float32 faster than it runs
// VDPBF16PS: Intel's. On the 2-core Intel Xeon with AMX of issue 28
// (AVX512_BF16, AVX512_FP16), VDPBF16PS ran at half the float32 FMA rate
// in a chain test, 105 against 210 GFLOP/s a core, and fused attention on
// it 162 and 175 GFLOP/s against float32's 206 and 238 (B=1 H=8 N=4096,
// D = 64 and 128); widened, bfloat16 ran at 0.95–1.00 of float32 (the
// 2-core Xeon without AVX512_BF16, docs/benchmarks.md). On Zen 5 it runs
// at twice the float32 rate (1.65× fused).
var bf16Slow = intel

func amd64BF16Kernels(ok bool) []*bf16Kernel {
	if !ok {
		return nil
	}
	return []*bf16Kernel{
		{name: "AVX512_BF16 8×32", mr: 8, nr: 32, fn: kernBF16x8x32},
	}
}

// packPanel packs a whole panel, nr columns and kp pairs of op(B) from
// row p0 and column j, with the AVX-512 packers (kernel_amd64.s).
func packPanel(tB blas.Transpose, kp int, b []uint16, ldb, p0, j int, dst []uint32, nr int) bool {
	if tB == blas.NoTrans {
		_ = b[(p0+2*kp-1)*ldb+j+nr-1] // the last row's last column
		_ = dst[kp*nr-1]
		bf16PackNNAVX512(kp, &b[p0*ldb+j], ldb, &dst[0], nr/16)
		return true
	}
	if 16*ldb > math.MaxInt32/2 {
		return false // the gather's int32 offsets would overflow
	}
	var idx [16]int32
	for l := range idx {
		idx[l] = int32(2 * l * ldb)
	}
	_ = b[(j+nr-1)*ldb+p0+2*kp-1]
	_ = dst[kp*nr-1]
	bf16PackTAVX512(kp, &b[j*ldb+p0], ldb, &dst[0], nr/16, &idx)
	return true
}
