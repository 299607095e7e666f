//go:build amd64 && !purego

package sgemm

import (
	"math"
	"slices"
	"time"

	"golang.org/x/sys/cpu"
	"gonum.org/v1/gonum/blas"
)

// bf16Kernels are the bfloat16 micro-kernels this CPU can run, fastest
// first: VDPBF16PS needs AVX512_BF16 and, on 512-bit registers,
// AVX-512F. GODEBUG=cpu.avx512bf16=off takes them out.
var bf16Kernels = amd64BF16Kernels(cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16)

// bf16Slow says whether the CPU widens bfloat16 to float32 faster than
// it runs VDPBF16PS, by measuring both kernels (measureBF16) the first
// time it is asked, which is when the choice is first needed
// (bf16Choice): the VDPBF16PS kernel below bf16Faster times the float32
// kernel Sgemm runs. On the 2-core Intel Xeon with AMX of issue 28
// (AVX512_BF16, AVX512_FP16), VDPBF16PS ran at half the float32 FMA rate
// in a chain test, 105 against 210 GFLOP/s a core, and fused attention
// on it 162 and 175 GFLOP/s against float32's 206 and 238 (B=1 H=8
// N=4096, D = 64 and 128); widened, bfloat16 ran at 0.95–1.00 of
// float32 (the 2-core Xeon without AVX512_BF16, docs/benchmarks.md). On
// Zen 5 it runs at twice the float32 rate (1.65× fused). On the 2-core
// Zen 4 (family 25 model 17), 300 measurements in fresh processes gave
// 1.87–2.08× in 87 % of them and up to 3.35× in the rest, always far
// from bf16Faster (1.4–1.8× fused).
func bf16Slow() bool {
	if active == nil {
		return false // Sgemm is gonum's Go: anything is faster
	}
	bf16Ratio = measureBF16(bf16Kernels[0], active)
	return bf16SlowAt(bf16Ratio)
}

// measureBF16 is the rate of the bfloat16 kernel kn over that of the
// float32 kernel fk, in flops as the product counts them (2·m·n·k), each
// on four blocks of its own rows by its own columns over k = 128, its
// operands in L1: the median of nine rounds a millisecond apart, each
// timing the two in turn, so that a neighbour's load on the core falls
// on both alike and a burst of it that slows one kernel alone (seen on a
// shared 2-core Zen 4: one of them 4–7 times slower for a millisecond or
// two, now and then) moves only the rounds it falls in. About 10 ms, once.
func measureBF16(kn *bf16Kernel, fk *kernel) float64 {
	const k, blocks, reps, rounds = 128, 4, 16, 9
	a16 := make([]uint16, blocks*kn.mr*k)
	for i := range a16 {
		a16[i] = 0x3f80 // 1
	}
	b16 := make([]uint32, k/2*kn.nr)
	for i := range b16 {
		b16[i] = 0x3f003f00 // (½, ½)
	}
	c16 := make([]float32, blocks*kn.mr*kn.nr)
	a32 := make([]float32, blocks*fk.mr*k)
	for i := range a32 {
		a32[i] = 1
	}
	b32 := make([]float32, k*fk.nr)
	for i := range b32 {
		b32[i] = 0.5
	}
	c32 := make([]float32, blocks*fk.mr*fk.nr)
	ratios := make([]float64, rounds)
	for r := range ratios {
		if r > 0 {
			time.Sleep(time.Millisecond)
		}
		start := time.Now()
		for range reps {
			for bl := range blocks {
				kn.fn(k/2, &a16[bl*kn.mr*k], k, &b16[0], &c16[bl*kn.mr*kn.nr], kn.nr, 1, 0)
			}
		}
		t16 := time.Since(start)
		start = time.Now()
		for range reps {
			fk.fn(k, &a32[0], k, &b32[0], fk.nr, &c32[0], fk.nr, 1, 0, blocks)
		}
		t32 := time.Since(start)
		// Each kernel's flops over its time, the same reps, blocks and k.
		ratios[r] = float64(kn.mr*kn.nr) * t32.Seconds() / (float64(fk.mr*fk.nr) * max(t16.Seconds(), 1e-9))
	}
	slices.Sort(ratios)
	return ratios[rounds/2]
}

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
