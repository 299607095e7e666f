//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// fmaPeak is the widest FMA this CPU has (fma_amd64.s): AVX-512F's zmm,
// else AVX2's ymm with FMA3. GODEBUG=cpu.avx512f=off takes the first
// away, to measure the second.
var fmaPeak, noFMAReason = amd64FMA(cpu.X86.HasAVX512F, cpu.X86.HasAVX2 && cpu.X86.HasFMA)

func amd64FMA(avx512, avx2 bool) (*fmaKernel, string) {
	switch {
	case avx512:
		return &fmaKernel{name: "VFMADD231PS zmm, 16 chains", lanes: 16, chains: 16, fn: fmaChainsAVX512}, ""
	case avx2:
		return &fmaKernel{name: "VFMADD231PS ymm, 12 chains", lanes: 8, chains: 12, fn: fmaChainsAVX2}, ""
	}
	return nil, "this CPU has neither AVX-512F nor AVX2 with FMA (or GODEBUG turned them off)"
}

// fmaChainsAVX512 is an fmaKernel's loop on 16 chains of zmm registers
// (fma_amd64.s).
//
//go:noescape
func fmaChainsAVX512(n int, x, y, acc *float32)

// fmaChainsAVX2 is an fmaKernel's loop on 12 chains of ymm registers
// (fma_amd64.s).
//
//go:noescape
func fmaChainsAVX2(n int, x, y, acc *float32)
