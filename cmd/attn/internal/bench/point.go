package bench

// A measured point: its fields, its status and its times.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/attn-go/attn/backend"
)

// Point is one measured configuration: an implementation (attn on a
// backend with a strategy, or a peer) on one problem. A point that could
// not run carries a Status other than StatusOK and an Error; such points
// are reported, not dropped.
type Point struct {
	Impl     string `json:"impl"`     // "attn-cpu", "attn-gpu", or a peer such as "ort-cpu-mha"
	Strategy string `json:"strategy"` // attn's "fused" or "staged"; a peer's "flash" or "unfused"
	Version  string `json:"version"`  // the backend's device and libraries, or the peer's
	// CPUKernel is the matrix-multiply kernel attn's CPU backend ran the
	// point on (CPUKernel of the backend that measured it); "" for other
	// implementations and in reports written before it was recorded, for
	// which KernelName reads it from Version.
	CPUKernel string `json:"cpu_kernel,omitempty"`
	Shape
	// Layers is L for a point measured as a step of L layers
	// (Config.Layers); 0 for a single call. Its times are the step's,
	// and its Bytes, GFLOPS and GBPS count all L calls.
	Layers int `json:"layers,omitempty"`
	// PoolPages is the pages a prefix point's pool holds (Shape.Prefix):
	// the prompt's once and each sequence's own when shared, every
	// sequence's all when not.
	PoolPages int `json:"pool_pages,omitempty"`

	Runs    int     `json:"runs"`
	WarmupS float64 `json:"warmup_s"`
	MedianS float64 `json:"median_s"`
	MinS    float64 `json:"min_s"`
	MaxS    float64 `json:"max_s"`
	// Q1S and Q3S are the first and third quartiles of the run times
	// (quantile), between which half the runs fall: the spread the charts
	// draw, which one slow run among many (a GC, a preemption) cannot
	// stretch as it does MaxS. Both are 0 in reports written before they
	// were recorded.
	Q1S float64 `json:"q1_s,omitempty"`
	Q3S float64 `json:"q3_s,omitempty"`
	// GPUS is the median over the timed runs of the device's own time
	// for the run's ops (backend.DeviceTimer: from a timestamp before each
	// submission's passes to one after them, summed over the op's
	// submissions), beside MedianS, the wall time. 0, and absent from the
	// JSON, where it was not measured: on the CPU, for peers, and on an
	// adapter without timestamps (BackendInfo.DeviceTime says why), or
	// when a run's timestamps gave no number (Notes says why).
	GPUS float64 `json:"gpu_s,omitempty"`
	// GPUKernels is, where the device times an op's kernels apart
	// (backend.KernelTimer: timestamps inside the compute pass around
	// each kernel), each kernel's median time in seconds over the timed
	// runs, by the kernel's name ("fuseddecode", "merge", "scores" …);
	// their sum is at most GPUS. Absent where not measured: wherever
	// GPUS is, and on a device without timestamps inside passes.
	GPUKernels map[string]float64 `json:"gpu_kernels,omitempty"`
	// GFLOPS is Flops/MedianS/1e9; Bytes is the compulsory traffic
	// (BytesOf, in the point's storage dtype) and GBPS Bytes/MedianS/1e9.
	GFLOPS float64 `json:"gflops"`
	Bytes  int64   `json:"bytes"`
	GBPS   float64 `json:"gbps"`
	// TokensPerS is B·Nq/MedianS: the query rows (tokens) of every batch
	// computed per second. 0 in reports written before it was recorded.
	TokensPerS float64 `json:"tokens_per_s,omitempty"`
	// ReadBWFrac is GBPS over the read bandwidth measured in the same
	// run (Machine.ReadGBPS): how close the point comes to streaming its
	// bytes at the machine's rate. 0 when not measured, and on a
	// discrete GPU, whose memory is not the host's (inHostMemory).
	ReadBWFrac float64 `json:"read_bw_frac,omitempty"`
	// Intensity is the point's arithmetic intensity, Flops over Bytes
	// (flop per compulsory byte), for every point that ran; 0 in
	// reports written before it was recorded.
	Intensity float64 `json:"intensity,omitempty"`
	// RooflineFrac is GFLOPS over the roofline at Intensity,
	// min(Machine.SgemmGFLOPS, Intensity × Machine.ReadGBPS), and Bound
	// the ceiling that sets it there (BoundCompute, BoundMemory). Only
	// for points on the host's CPU (the CPU backend, a CPU-type adapter,
	// a CPU peer) when both ceilings were measured; 0 and "" otherwise.
	// The ceiling is float32 Sgemm's whatever the dtype, so a half point
	// may pass 1.
	RooflineFrac float64 `json:"roofline_frac,omitempty"`
	Bound        string  `json:"bound,omitempty"`
	// FMAFrac is GFLOPS over the host's FMA peak (Machine.FMAGFLOPS):
	// the share of the cores' float32 arithmetic the point uses, the
	// ceiling no float32 kernel passes, for points on the host's CPU when
	// it was measured; 0 otherwise. Like RooflineFrac it is float32's
	// for every dtype.
	FMAFrac float64 `json:"fma_frac,omitempty"`
	// AMXFrac is GFLOPS over the tiles' peak (Machine.AMXGFLOPS), for a
	// bfloat16 point of attn's CPU backend whose bfloat16 arithmetic ran
	// on AMX's tiles, when the peak was measured; 0 otherwise.
	AMXFrac float64 `json:"amx_frac,omitempty"`
	// GPUReadFrac and GPUFMAFrac are a point of attn's GPU backend's
	// fractions of the ceilings of WGSL on its device measured in the
	// same run (Machine.GPUReadGBPS, GPUFMAGFLOPS, GPUF16GFLOPS): its
	// bytes and its flops over its device time (GPUS, else MedianS)
	// against the streaming read's rate and the FMA chains' of its dtype
	// (f16's for f16 points, f32's for the rest). 0 for other points, and
	// where not measured.
	GPUReadFrac float64 `json:"gpu_read_frac,omitempty"`
	GPUFMAFrac  float64 `json:"gpu_fma_frac,omitempty"`
	// Flag, when not "", says the point stood above the roofline, the FMA
	// peak or the read bandwidth, or its GPU's (RooflineFrac, FMAFrac,
	// ReadBWFrac, GPUFMAFrac or GPUReadFrac past 1) even once measured again
	// after the sweep, by how much, and what may explain it, probe noise
	// last: "above roof 1.03× C, FMA 1.10×: probe noise?".
	Flag string `json:"flag,omitempty"`
	// PeakRSS is the peak resident memory of the process that ran the
	// point, in bytes, inputs included: the peer's own process, attn's own
	// process for a point measured in one of its own (Config.Spawn), or
	// else this process, its peak reset before the point. 0 means unknown:
	// a process that ended within about 10 ms, before it was read.
	PeakRSS int64 `json:"peak_rss_bytes"`
	// DeviceBytes is the peak of the device memory attn allocated during
	// the point, on backends that count it (the GPU); 0 elsewhere.
	DeviceBytes int64 `json:"device_peak_bytes,omitempty"`
	// MaxErr is the largest max-norm relative error of a checked row of
	// the output against the float64 reference: max|o − ref| / max|ref|.
	// Nil when no row was checked, and when the output held NaN or an
	// infinity the reference does not (the point is then wrong, and
	// Error says so).
	MaxErr *float64 `json:"max_rel_err,omitempty"`
	// QuantErr, for K and V stored in 8 bits (q8, fp8), is MaxErr
	// against the reference on the inputs before they were quantized:
	// what the format costs (MaxErr's reference reads the stored
	// values). Nil for the other dtypes.
	QuantErr    *float64 `json:"quant_rel_err,omitempty"`
	CheckedRows int      `json:"checked_rows"`

	Status Status `json:"status"`
	Error  string `json:"error,omitempty"`
	Notes  string `json:"notes,omitempty"`
}

// Status says whether a point ran and whether its answers were right.
type Status string

const (
	StatusOK          Status = "ok"
	StatusWrong       Status = "wrong"         // ran, but a checked row is off by more than WrongErr
	StatusTooLarge    Status = "too-large"     // ErrTooLarge, or more memory than the machine has
	StatusOutOfMemory Status = "out-of-memory" // killed or refused while allocating
	StatusUnavailable Status = "unavailable"   // the backend or peer cannot run this point here
	StatusFailed      Status = "failed"        // any other error
	StatusCancelled   Status = "cancelled"
)

// WrongErr is the relative error past which a point's answers are marked
// wrong. Float32 attention, however long the rows, stays orders of
// magnitude below it (attn measures about 1e-6 at N = 16384).
const WrongErr = 1e-3

// newPoint is a point of impl on p with nothing measured yet.
func newPoint(impl, strategy, version string, p backend.Problem) Point {
	return Point{Impl: impl, Strategy: strategy, Version: version, Shape: shapeOf(p), Status: StatusOK}
}

// attnPoint is a point of attn on be with nothing measured yet.
func attnPoint(be backend.Backend, strategy string, p backend.Problem) Point {
	pt := newPoint("attn-"+be.Name(), strategy, backendVersion(be), p)
	pt.CPUKernel = backendKernel(be)
	return pt
}

// fail marks pt as not run, with the status err calls for.
func (pt *Point) fail(err error) {
	pt.Error = oneLine(err.Error())
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		pt.Status = StatusCancelled
	case errors.Is(err, backend.ErrTooLarge), errors.As(err, new(*errNoMemory)):
		pt.Status = StatusTooLarge
	case errors.Is(err, backend.ErrUnsupported), errors.Is(err, backend.ErrUnavailable):
		pt.Status = StatusUnavailable
	default:
		pt.Status = StatusFailed
	}
}

// setTimes fills the timing fields of pt from the timed runs.
func (pt *Point) setTimes(warmup time.Duration, times []time.Duration, p backend.Problem, dt backend.DType, materialised bool) {
	slices.Sort(times)
	n := len(times)
	med := times[n/2]
	if n%2 == 0 {
		med = (times[n/2-1] + times[n/2]) / 2
	}
	pt.Runs = n
	pt.WarmupS = warmup.Seconds()
	pt.MedianS, pt.MinS, pt.MaxS = med.Seconds(), times[0].Seconds(), times[n-1].Seconds()
	pt.Q1S, pt.Q3S = quantile(times, 0.25), quantile(times, 0.75)
	pt.Bytes = BytesOf(p, dt, materialised)
	if pt.MedianS > 0 {
		pt.GFLOPS = Flops(p) / pt.MedianS / 1e9
		pt.GBPS = float64(pt.Bytes) / pt.MedianS / 1e9
		pt.TokensPerS = float64(p.B) * float64(p.Nq) / pt.MedianS
	}
}

// hasQuartiles reports whether pt recorded the quartiles of its runs.
func (pt *Point) hasQuartiles() bool { return pt.Runs > 0 && pt.Q1S > 0 }

// quantile is the q-quantile of sorted in seconds, interpolated linearly
// between the two nearest runs (Hyndman and Fan's type 7, NumPy's and R's
// default): with n runs the quartiles ignore the slowest and fastest
// ⌈n/4⌉ − 1 entirely, so from n = 5 one outlier cannot move them.
func quantile(sorted []time.Duration, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1].Seconds()
	}
	lo, hi := sorted[i].Seconds(), sorted[i+1].Seconds()
	return lo + (pos-float64(i))*(hi-lo)
}
