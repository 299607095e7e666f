//go:build amd64 && !purego

package sgemm

import (
	"encoding/binary"

	"golang.org/x/sys/cpu"
)

// kernels are the micro-kernels this CPU can run, fastest first. The
// AVX-512 kernels need only AVX-512F; GODEBUG=cpu.avx512f=off (or
// cpu.avx2=off, cpu.fma=off) takes a kernel out, and $ATTN_CPU_KERNEL
// picks another (sgemm.go).
var kernels = amd64Kernels(cpu.X86.HasAVX512F, cpu.X86.HasAVX2 && cpu.X86.HasFMA, intel)

// intel says the CPU is Intel's, read once: the float32 kernels' order
// follows it.
var intel = x86Vendor() == "GenuineIntel"

// Intel says whether the CPU is Intel's (CPUID's vendor string), for
// the choices that follow the maker: this package's kernel order and
// the decoding kernels' prefetches (package cpu).
func Intel() bool { return intel }

// amd64Kernels are the kernels of a CPU with or without AVX-512F and AVX2
// with FMA, fastest first, Intel's or another's.
//
// Of the AVX-512 kernels, 6×64 goes first on Intel and 8×32 elsewhere.
// 6×64 loads 10 operands for 24 FMAs, 8×32 10 for 16, so 6×64 leaves
// the load ports more room. On an Intel Xeon (family 6 model 207), side
// by side with the FMA chains on one thread (BenchmarkSgemmAgainstFMA in
// package cpu), 6×64 keeps near them on each of the fused loop's
// products at D = 64 and 128, where 8×32, level with it on Q·Kᵀ at
// D = 64, varies widely on the others and falls further behind on a busy
// machine; fused f32 attention (B=1 H=8 N=4096) runs faster with 6×64,
// by more at D = 128. On Zen 5, 8×32 runs at the FMA peak; on Zen 4 the
// two run level on fused f32 attention. The commit that set the order
// has the measurements.
// Both give the same bits: each element of C is the same chain of FMAs
// over k (TestKernelsAgree).
func amd64Kernels(avx512, avx2, intel bool) []*kernel {
	var ks []*kernel
	if avx512 {
		k8 := &kernel{name: "AVX-512 8×32", mr: 8, nr: 32, fn: kern8x32AVX512}
		k6 := &kernel{name: "AVX-512 6×64", mr: 6, nr: 64, fn: kern6x64AVX512}
		if intel {
			ks = append(ks, k6, k8)
		} else {
			ks = append(ks, k8, k6)
		}
	}
	if avx2 {
		ks = append(ks, &kernel{name: "AVX2+FMA 6×16", mr: 6, nr: 16, fn: kern6x16AVX2})
	}
	return ks
}

// x86Vendor is CPUID's vendor string: "GenuineIntel", "AuthenticAMD" ….
func x86Vendor() string {
	var v [12]byte
	b, d, c := cpuidVendor()
	binary.LittleEndian.PutUint32(v[0:], b)
	binary.LittleEndian.PutUint32(v[4:], d)
	binary.LittleEndian.PutUint32(v[8:], c)
	return string(v[:])
}
