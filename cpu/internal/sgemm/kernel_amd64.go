//go:build amd64 && !purego

package sgemm

import "golang.org/x/sys/cpu"

// kernels are the micro-kernels this CPU can run, fastest first. The
// AVX-512 kernel needs only AVX-512F; GODEBUG=cpu.avx512f=off (or
// cpu.avx2=off, cpu.fma=off) takes a kernel out, to measure another.
var kernels = amd64Kernels(cpu.X86.HasAVX512F, cpu.X86.HasAVX2 && cpu.X86.HasFMA)

func amd64Kernels(avx512, avx2 bool) []*kernel {
	var ks []*kernel
	if avx512 {
		ks = append(ks, &kernel{name: "AVX-512 8×32", mr: 8, nr: 32, fn: kern8x32AVX512})
	}
	if avx2 {
		ks = append(ks, &kernel{name: "AVX2+FMA 6×16", mr: 6, nr: 16, fn: kern6x16AVX2})
	}
	return ks
}
