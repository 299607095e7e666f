//go:build arm64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// fmaPeak is NEON's FMLA on 16 chains of four lanes (fma_arm64.s): 4
// cycles of latency on up to four 128-bit pipes (Neoverse V1/V2) is 16
// FMAs in flight. GODEBUG=cpu.asimd=off takes it away.
var fmaPeak, noFMAReason = arm64FMA(cpu.ARM64.HasASIMD)

func arm64FMA(asimd bool) (*fmaKernel, string) {
	if !asimd {
		return nil, "this CPU has no ASIMD (or GODEBUG turned it off)"
	}
	return &fmaKernel{name: "FMLA v.4s, 16 chains", lanes: 4, chains: 16, fn: fmaChainsNEON}, ""
}

// fmaChainsNEON is an fmaKernel's loop on 16 chains of NEON registers
// (fma_arm64.s).
//
//go:noescape
func fmaChainsNEON(n int, x, y, acc *float32)
