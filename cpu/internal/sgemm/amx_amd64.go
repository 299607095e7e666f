//go:build amd64 && !purego

package sgemm

import "golang.org/x/sys/cpu"

// amxCPU says the CPU has AMX's tiles with TDPBF16PS (CPUID; GODEBUG=
// cpu.amxtile=off or cpu.amxbf16=off takes them out) and AVX512_BF16's
// kernel for the edges, which every such CPU has. Whether the kernel
// grants them is asked later (requestAMX).
var amxCPU = cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16 && len(bf16Kernels) > 0

// amxConfig is the tiles' configuration for amxBF16: palette 1, each of
// the eight tiles 16 rows of 64 bytes (16 float32s, or 16 pairs of
// bfloat16s).
var amxConfig = func() (cfg [64]byte) {
	cfg[0] = 1
	for t := range 8 {
		cfg[16+2*t] = 64 // bytes a row, little-endian uint16
		cfg[48+t] = 16   // rows
	}
	return cfg
}()

// amxBF16 runs n jobs on the tiles (amx_amd64.s).
//
//go:noescape
func amxBF16(cfg *[64]byte, jobs *amxJob, n int, mode int, alpha, beta float32, t *float32)

// amxTiles is the tileFunc of the hardware.
func amxTiles(jobs []amxJob, mode int, alpha, beta float32, t []float32) {
	_ = t[amxRows*amxRows-1]
	amxBF16(&amxConfig, &jobs[0], len(jobs), mode, alpha, beta, &t[0])
}

// amxPeak runs n rounds of the tiles' probe (amx_amd64.s).
//
//go:noescape
func amxPeak(cfg *[64]byte, n int, a, b *uint16, c *float32)

// amxPeakLoop is the hardware's probe loop (AMXProbe).
var amxPeakLoop = func(n int, a, b []uint16, c []float32) {
	_, _, _ = a[amxProbeA-1], b[amxProbeB-1], c[amxRows*amxRows-1]
	amxPeak(&amxConfig, n, &a[0], &b[0], &c[0])
}
