package bench

import (
	"runtime"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
	"github.com/gogpu/gputypes"
)

// A point's GFLOP/s means something next to what the machine could do at
// its arithmetic intensity (flops per compulsory byte): the roofline
//
//	roof(I) = min(sgemm_gflops, I × read_gbps)
//
// of the host's cores (the CPU backend's own Sgemm on every thread) and
// memory (ReadBandwidth), both measured in the same run. Left of the
// ridge I = sgemm_gflops / read_gbps a point is bound by memory, at and
// right of it by compute.

// SgemmPasses and SgemmBudget are how MeasureSgemm runs cpu.SgemmRate:
// the fastest of SgemmPasses passes, all of them within about
// SgemmBudget.
const (
	SgemmPasses = 5
	SgemmBudget = 1500 * time.Millisecond
)

// MeasureSgemm is cpu.SgemmRate as attn bench runs it: every thread of
// GOMAXPROCS, SgemmPasses passes within about SgemmBudget, in GFLOP/s.
// Like MeasureReadBandwidth it gives its operands back to the system and
// starts a new peak of this process's resident memory.
func MeasureSgemm() (float64, error) {
	defer freshPeak()
	return cpu.SgemmRate(runtime.GOMAXPROCS(0), SgemmPasses, SgemmBudget)
}

// FMAPasses and FMABudget are how MeasureFMA runs cpu.FMARate: its loop
// reaches its rate within microseconds, so a short budget does.
const (
	FMAPasses = 5
	FMABudget = 500 * time.Millisecond
)

// MeasureFMA is cpu.FMARate as attn bench runs it: every thread of
// GOMAXPROCS, FMAPasses passes within about FMABudget, in GFLOP/s, and
// the loop that measured it (cpu.FMAKernel). Its error wraps
// cpu.ErrNoFMA and says why where the build or the CPU has no FMA loop
// (-tags purego).
func MeasureFMA() (gflops float64, kernel string, err error) {
	if kernel, err = cpu.FMAKernel(); err != nil {
		return 0, "", err
	}
	gflops, err = cpu.FMARate(runtime.GOMAXPROCS(0), FMAPasses, FMABudget)
	return gflops, kernel, err
}

// The ceilings a point's Bound names.
const (
	BoundCompute = "compute" // the Sgemm rate: at or right of the ridge
	BoundMemory  = "memory"  // intensity × the read bandwidth: left of it
)

// roofline is the rate in GFLOP/s attainable at intensity flop/byte under
// a compute ceiling of sgemm GFLOP/s and a memory ceiling of readGBPS
// GB/s, and the ceiling that sets it. At the ridge both are equal and
// the point is compute-bound: no more bandwidth would make it faster.
func roofline(intensity, sgemm, readGBPS float64) (gflops float64, bound string) {
	if m := intensity * readGBPS; m < sgemm {
		return m, BoundMemory
	}
	return sgemm, BoundCompute
}

// placement is where a point ran, as far as the machine's ceilings go:
// which of them bound it.
type placement int

const (
	// offHost: a discrete or virtual GPU, with memory and compute of its
	// own; neither ceiling applies.
	offHost placement = iota
	// hostMemory: an integrated GPU, reading the host's memory with
	// compute of its own, and a GPU peer (Peer.GPU), whose adapter its
	// runtime picks: the read bandwidth applies, Sgemm's rate does not.
	hostMemory
	// hostCPU: the CPU backend, a CPU-type adapter (lavapipe) and a CPU
	// peer, running on the host's cores and memory: both apply.
	hostCPU
)

// placeOf is where a backend with info runs its points.
func placeOf(info backend.Info) placement {
	if info.Kind != backend.KindGPU {
		return hostCPU
	}
	switch info.Adapter.DeviceType {
	case gputypes.DeviceTypeCPU:
		return hostCPU
	case gputypes.DeviceTypeIntegratedGPU:
		return hostMemory
	}
	return offHost
}

// HostCeilings says which of the host's ceilings the points of bes and
// peers are read against, and so which a sweep needs measured: the read
// bandwidth (memory) where a point runs in the host's memory, and
// Sgemm's rate and the FMA peak (compute) where one runs on the host's
// CPU (the CPU backend, a CPU-type adapter such as lavapipe, a CPU
// peer). A sweep of discrete GPUs alone needs neither, and measuring
// them takes seconds a sweep (bench/gpu-hw.sh's tune runs dozens).
func HostCeilings(bes []backend.Backend, peers []Peer) (memory, compute bool) {
	at := func(p placement) {
		memory = memory || p != offHost
		compute = compute || p == hostCPU
	}
	for _, be := range bes {
		at(placeOf(be.Info()))
	}
	for _, peer := range peers {
		if peer.Unavailable == "" {
			at(placeOfPeer(peer))
		}
	}
	return memory, compute
}

// placeOfPeer is where peer runs its points.
func placeOfPeer(peer Peer) placement {
	if peer.GPU {
		return hostMemory
	}
	return hostCPU
}

// setCeilings gives pt, of flops flops and run at at, its arithmetic
// intensity and its fractions of the ceilings that apply there, of those
// measured (0 when not): ReadBWFrac in the host's memory, RooflineFrac
// and Bound on the host's CPU when both ceilings were measured. An
// integrated GPU gets no roofline: its compute is not what sgemm
// measured, and its fraction of the one ceiling that applies, the
// memory's, is ReadBWFrac. A point that did not run gets nothing.
func (pt *Point) setCeilings(flops float64, at placement, readGBPS, sgemm float64) {
	if pt.GBPS <= 0 {
		return // did not run
	}
	if at >= hostMemory && readGBPS > 0 {
		pt.ReadBWFrac = pt.GBPS / readGBPS
	}
	if flops <= 0 {
		return
	}
	pt.Intensity = flops / float64(pt.Bytes)
	if at == hostCPU && readGBPS > 0 && sgemm > 0 {
		roof, bound := roofline(pt.Intensity, sgemm, readGBPS)
		pt.RooflineFrac, pt.Bound = pt.GFLOPS/roof, bound
	}
}

// setFMAFrac gives pt, run at at, its fraction of the host's FMA peak of
// fma GFLOP/s (0 when not measured): only on the host's CPU, whose cores
// the peak is of, and only for a point that ran.
func (pt *Point) setFMAFrac(at placement, fma float64) {
	if at == hostCPU && fma > 0 && pt.GFLOPS > 0 && pt.GBPS > 0 {
		pt.FMAFrac = pt.GFLOPS / fma
	}
}
