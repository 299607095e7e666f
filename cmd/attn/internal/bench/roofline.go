package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
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

// MeasureAMX is cpu.AMXRate as attn bench runs it, as MeasureFMA runs
// the FMA peak: AMX's tiles at their peak in bfloat16 on every thread,
// in GFLOP/s, and the loop that measured it (cpu.AMXKernel). Its error
// wraps cpu.ErrNoAMX and says why where the build or the CPU has no
// tiles, or Linux refuses them.
func MeasureAMX() (gflops float64, kernel string, err error) {
	if kernel, err = cpu.AMXKernel(); err != nil {
		return 0, "", err
	}
	gflops, err = cpu.AMXRate(runtime.GOMAXPROCS(0), FMAPasses, FMABudget)
	return gflops, kernel, err
}

// Ceilings are the ceilings a sweep reads its points against, each 0
// where not measured: the host's read bandwidth in GB/s
// (MeasureReadBandwidth), the CPU backend's Sgemm rate and the FMA peak
// in GFLOP/s (MeasureSgemm, MeasureFMA), FMAKernel naming the FMA loop;
// and where the sweep has attn's GPU backend, what WGSL reaches on its
// device (gpu.Backend.Ceilings): a streaming read in GB/s and vec4 FMA
// chains in f32 and f16 in GFLOP/s, GPUNote saying how they were timed
// and why one is missing.
type Ceilings struct {
	ReadGBPS     float64 `json:"read_gbps,omitempty"`
	SgemmGFLOPS  float64 `json:"sgemm_gflops,omitempty"`
	FMAGFLOPS    float64 `json:"fma_gflops,omitempty"`
	FMAKernel    string  `json:"-"`
	AMXGFLOPS    float64 `json:"amx_gflops,omitempty"`
	AMXKernel    string  `json:"-"`
	GPUReadGBPS  float64 `json:"gpu_read_gbps,omitempty"`
	GPUFMAGFLOPS float64 `json:"gpu_fma_gflops,omitempty"`
	GPUF16GFLOPS float64 `json:"gpu_f16_fma_gflops,omitempty"`
	GPUNote      string  `json:"-"`
}

// best is c with each ceiling raised to o's where o's is higher. Another
// process, a lower clock or a page fault only ever slow a probe down, so
// the fastest of several is the nearest to what the machine can do.
func (c Ceilings) best(o Ceilings) Ceilings {
	c.ReadGBPS, c.SgemmGFLOPS = max(c.ReadGBPS, o.ReadGBPS), max(c.SgemmGFLOPS, o.SgemmGFLOPS)
	if o.FMAGFLOPS > c.FMAGFLOPS {
		c.FMAGFLOPS, c.FMAKernel = o.FMAGFLOPS, o.FMAKernel
	}
	if o.AMXGFLOPS > c.AMXGFLOPS {
		c.AMXGFLOPS, c.AMXKernel = o.AMXGFLOPS, o.AMXKernel
	}
	c.GPUReadGBPS, c.GPUFMAGFLOPS = max(c.GPUReadGBPS, o.GPUReadGBPS), max(c.GPUFMAGFLOPS, o.GPUFMAGFLOPS)
	c.GPUF16GFLOPS = max(c.GPUF16GFLOPS, o.GPUF16GFLOPS)
	if o.GPUNote != "" {
		c.GPUNote = o.GPUNote
	}
	return c
}

// rose reports whether o raises one of c's ceilings by more than
// ProbeGain.
func (c Ceilings) rose(o Ceilings) bool {
	up := func(was, now float64) bool { return now > was*(1+ProbeGain) }
	return up(c.ReadGBPS, o.ReadGBPS) || up(c.SgemmGFLOPS, o.SgemmGFLOPS) || up(c.FMAGFLOPS, o.FMAGFLOPS) ||
		up(c.GPUReadGBPS, o.GPUReadGBPS) || up(c.GPUFMAGFLOPS, o.GPUFMAGFLOPS) || up(c.GPUF16GFLOPS, o.GPUF16GFLOPS)
}

// How a Roof probes: at least ProbesBefore probes before the sweep and
// ProbesAfter after it, each phase going on while its last probe raised
// a ceiling by more than ProbeGain (the machine was busier before it),
// up to MaxProbes a phase.
const (
	ProbesBefore = 2
	ProbesAfter  = 1
	MaxProbes    = 4
	ProbeGain    = 0.05
)

// A Roof is the host's ceilings as a sweep measures them: probed
// several times before the sweep and again after it, each ceiling the
// best of every probe (Best), so that a machine busy while one probe
// ran cannot lower the roof the points are read against. Run probes it
// when Config.Roof is set; the caller reads Best and Probes afterwards.
type Roof struct {
	// Probe measures the ceilings once (MeasureReadBandwidth,
	// MeasureSgemm and MeasureFMA for those a sweep needs:
	// HostCeilings), 0 for those it did not measure.
	Probe func() Ceilings
	// Probes are every probe's ceilings, in the order taken.
	Probes []Ceilings
}

// Best is each ceiling's best over every probe.
func (r *Roof) Best() Ceilings {
	var c Ceilings
	for _, p := range r.Probes {
		c = c.best(p)
	}
	return c
}

// measure probes at least least times, and on while the last probe
// raised a ceiling by more than ProbeGain, MaxProbes times at most, or
// until ctx is done.
func (r *Roof) measure(ctx context.Context, least int) {
	for n := 0; n < MaxProbes && ctx.Err() == nil; n++ {
		was := r.Best()
		r.Probes = append(r.Probes, r.Probe())
		if n+1 >= least && (len(r.Probes) == 1 || !was.rose(r.Probes[len(r.Probes)-1])) {
			return
		}
	}
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

// readAgainst gives pt, of work flops and run at at, its fractions of
// the ceilings c, those it had cleared first: Run reads every point
// again once the probes after the sweep may have raised the roof.
func (pt *Point) readAgainst(c Ceilings, work float64, at placement) {
	pt.ReadBWFrac, pt.Intensity, pt.RooflineFrac, pt.Bound, pt.FMAFrac, pt.AMXFrac = 0, 0, 0, "", 0, 0
	pt.setCeilings(work, at, c.ReadGBPS, c.SgemmGFLOPS)
	pt.setFMAFrac(at, c.FMAGFLOPS)
	pt.setAMXFrac(at, c.AMXGFLOPS)
	pt.setGPUFracs(c)
}

// wgslImpl is the Impl of attn's GPU backend's points: the WGSL whose
// device the GPU ceilings are of. A GPU peer's kernels are not WGSL
// (CUDA's matrix units pass any FMA chain), and get no fraction of them.
const wgslImpl = "attn-gpu"

// setGPUFracs gives a point of attn's GPU backend that ran its fractions
// of the GPU ceilings c measured (0 where not): its compulsory bytes
// over its device time (GPUS, else the wall time, MedianS) against the
// read ceiling, and its flops so timed against the FMA ceiling of its
// dtype, f16's for an f16 point where measured, else f32's: bf16, q8,
// q4 and fp8 points are read against f32's, which one whose plan
// multiplies in f16 may pass (ceilingFlag says so).
func (pt *Point) setGPUFracs(c Ceilings) {
	pt.GPUReadFrac, pt.GPUFMAFrac = 0, 0
	if pt.Impl != wgslImpl || pt.GBPS <= 0 || pt.MedianS <= 0 {
		return
	}
	scale := 1.0 // from the wall time's rates to the device time's
	if pt.GPUS > 0 {
		scale = pt.MedianS / pt.GPUS
	}
	if c.GPUReadGBPS > 0 {
		pt.GPUReadFrac = pt.GBPS * scale / c.GPUReadGBPS
	}
	fma := c.GPUFMAGFLOPS
	if pt.DType == "f16" && c.GPUF16GFLOPS > 0 {
		fma = c.GPUF16GFLOPS
	}
	if fma > 0 && pt.GFLOPS > 0 {
		pt.GPUFMAFrac = pt.GFLOPS * scale / fma
	}
}

// aboveRoof reports whether pt stands above the roofline, the FMA peak
// or the read bandwidth, or its GPU's: the arithmetic no float32 kernel
// passes, a roof whose compute ceiling (Sgemm's) a kernel rarely passes,
// or traffic faster than memory, which only data in the caches gives.
func (pt *Point) aboveRoof() bool {
	return pt.RooflineFrac > 1 || pt.FMAFrac > 1 || pt.AMXFrac > 1 || pt.ReadBWFrac > 1 || pt.GPUReadFrac > 1 || pt.GPUFMAFrac > 1
}

// ceilingFlag is the flag of a point still above a ceiling once measured
// again (Point.Flag): by how much, and what may explain it, probe noise
// last: "above roof 1.03× C, FMA 1.10×: probe noise?". "" for a point
// below every ceiling.
func (pt *Point) ceilingFlag() string {
	var above, why []string
	if pt.RooflineFrac > 1 {
		above = append(above, fmt.Sprintf("roof %.2f× %s", pt.RooflineFrac, boundLetters[pt.Bound]))
		switch {
		case pt.Bound == BoundMemory:
			why = append(why, "data in cache")
		case pt.FMAFrac <= 1:
			why = append(why, "faster than Sgemm")
		}
	}
	if pt.FMAFrac > 1 {
		above = append(above, fmt.Sprintf("FMA %.2f×", pt.FMAFrac))
	}
	if pt.AMXFrac > 1 {
		above = append(above, fmt.Sprintf("AMX %.2f×", pt.AMXFrac))
	}
	if pt.ReadBWFrac > 1 {
		above = append(above, fmt.Sprintf("BW %.2f×", pt.ReadBWFrac))
		if pt.Bound != BoundMemory || pt.RooflineFrac <= 1 {
			why = append(why, "data in cache")
		}
	}
	if pt.GPUFMAFrac > 1 {
		above = append(above, fmt.Sprintf("GPU FMA %.2f×", pt.GPUFMAFrac))
	}
	if pt.GPUReadFrac > 1 {
		above = append(above, fmt.Sprintf("GPU BW %.2f×", pt.GPUReadFrac))
		if !slices.Contains(why, "data in cache") {
			why = append(why, "data in cache")
		}
	}
	if len(above) == 0 {
		return ""
	}
	// A q8, q4 or fp8 point is read against the f32 FMA ceiling, and
	// may multiply in f16 on the GPU.
	if pt.DType == "f16" || pt.DType == "bf16" || pt.GPUFMAFrac > 1 && pt.DType != "" {
		why = append(why, "half arithmetic")
	}
	why = append(why, "probe noise")
	return "above " + strings.Join(above, ", ") + ": " + strings.Join(why, " or ") + "?"
}

// amxDetail is what the CPU backend's Info().Detail, which a point's
// Version holds, says where its bfloat16 arithmetic runs on AMX's tiles.
const amxDetail = "bfloat16 arithmetic AMX-BF16"

// setAMXFrac gives pt, run at at, its fraction of the tiles' peak of amx
// GFLOP/s (0 when not measured): only a fused bfloat16 point of attn's
// CPU backend whose bfloat16 arithmetic ran on the tiles (amxDetail; the
// staged path widens), and only one that ran.
func (pt *Point) setAMXFrac(at placement, amx float64) {
	if at == hostCPU && amx > 0 && pt.GFLOPS > 0 && pt.GBPS > 0 && pt.DType == "bf16" && pt.Strategy == "fused" && strings.Contains(pt.Version, amxDetail) {
		pt.AMXFrac = pt.GFLOPS / amx
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
