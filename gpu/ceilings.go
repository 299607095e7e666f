package gpu

import "time"

// Ceilings are the rates WGSL reaches on a backend's device through
// this build's binding (Backend.Ceilings): what attn's kernels could
// reach at best, as the CPU's measured read bandwidth and FMA peak are
// for the CPU backend. A kernel's fraction of them says how far it is
// from what the language, the binding and the driver allow, apart from
// what the hardware's datasheet promises.
type Ceilings struct {
	// ReadGBPS is a streaming read's rate in GB/s (10⁹ bytes a second):
	// every invocation sums vec4<u32>s of one buffer of hashed words,
	// several times the size of a GPU's last-level cache, each pass's
	// loads at other invocations than the last's.
	ReadGBPS float64
	// FMAGFLOPS is the rate of independent chains of vec4<f32> fma in
	// registers, in GFLOP/s, an FMA counted as two flops; F16GFLOPS is
	// the same in vec4<f16>, 0 where the device does not compile f16
	// (Note says why).
	FMAGFLOPS, F16GFLOPS float64
	// Note says how the rates were timed (the device's timestamps or
	// the host's clock) and why a rate is missing.
	Note string
}

// rate is work units (bytes, flops) done in d, in billions a second;
// 0 for a d that is not positive.
func rate(work float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return work / d.Seconds() / 1e9
}

// fmaFlops is the flops of one dispatch of the FMA probe: groups
// workgroups of wg invocations, each running trips trips of its loop of
// chains × depth fmas on vectors of lanes lanes, each fma two flops.
func fmaFlops(groups, wg, trips, chains, depth, lanes int) float64 {
	return 2 * float64(groups) * float64(wg) * float64(trips) * float64(chains*depth*lanes)
}

// readSum is what the read probe's workgroups sum to over one pass of a
// buffer of n words, word e holding fillHash(e) (fillSource), added as
// u32s modulo 2³². A hash, not a pattern: a GPU that compresses memory
// (NVIDIA's since Ampere) reads a buffer of one repeated pattern faster
// than its DRAM allows (an H200's probe read 9.5 TB/s of HBM3e's 4.8
// over e mod 8), where attention's K and V are not so regular.
func readSum(n uint64) uint32 {
	var sum uint32
	for e := range n {
		sum += fillHash(uint32(e))
	}
	return sum
}

// fillHash is an integer hash (Chris Wellons' lowbias32), the same as
// fillSource's hash4.
func fillHash(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}
