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

// bf16Slow says whether this CPU's VDPBF16PS runs slower than widening
// bfloat16 to float32 for the float32 kernels: a fact about the CPU, by
// vendor, so that the choice (which changes a result's bits) never turns
// on a timing. Intel's cores run VDPBF16PS at half their float32 FMA
// rate, AMD's at twice it: on two Intel Xeons (family 6 models 167 and
// 207) fused bf16 attention by VDPBF16PS ran slower than float32's and
// widened ran level with it, where on AMD's Zen 4 and 5 VDPBF16PS ran
// well ahead (TestMeasureBF16 logs the kernels' ratio on the machine it
// runs on; the commits that made the choice have the measurements).
//
// A CPU of another vendor with AVX512_BF16 is taken to be fast, as AMD's
// are; ATTN_CPU_BF16 or cpu.WithBF16 says otherwise.
func bf16Slow() bool { return intel }

func amd64BF16Kernels(ok bool) []*bf16Kernel {
	if !ok {
		return nil
	}
	return []*bf16Kernel{
		{name: "AVX512_BF16 8×32", mr: 8, nr: 32, fn: kernBF16x8x32},
	}
}

// packPanel packs a whole panel, nr columns and kp pairs of op(B) from
// row p0 and column j, with the AVX-512 packers (kernel_amd64.s). It
// returns false, packing nothing, where the CPU lacks AVX-512F (the
// tests' model of AMX's tiles packs on any CPU) or nr is not a multiple
// of 16.
func packPanel(tB blas.Transpose, kp int, b []uint16, ldb, p0, j int, dst []uint32, nr int) bool {
	if !hasAVX512 || nr%16 != 0 {
		return false
	}
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
