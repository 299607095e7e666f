package bench

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/attn-go/attn/backend"
)

// Schema names the layout of Report's JSON; it changes when a field
// changes meaning.
const Schema = "attn-bench/1"

// Conventions say how each number in a report is defined; every report
// carries them.
var Conventions = map[string]string{
	"gflops":         "(2·D + 2·Dv) flops per attended query-key pair / median time; causal masking and a sliding window count only the pairs a query may see by position (causal about half of 4·B·H·N²·D, a window of W keys about 4·B·H·N·W·D), for attn and peers alike; softcap, ALiBi and sinks add no pairs",
	"bytes":          "compulsory traffic: Q, K, V read once and O written once in their storage dtype (4 bytes an element in float32, 2 in f16 and bf16, 1.0625 in q8, 1 in fp8) — Q and O of Nq rows and H heads, K and V of N keys and KV heads, so a decoding point's is mostly K and V — plus four passes over the float32 B·H·Nq·N score matrix when it is materialised (attn staged, unfused peers); a backward point's: Q, K, V, O, dO and the float32 LSE read and dQ, dK and dV written, each in its operand's dtype, and for fused+backward the forward's Q, K and V read and O and LSE written besides; gbps is bytes / median time",
	"nq":             "query rows: the last Nq positions of N keys (bottom-right alignment, so causal query i sees keys j ≤ N − Nq + i), Nq = N unless set; Nq < N is decoding Nq new tokens over a cache of N keys, which peers without a cache (all but ort-cpu-gqa, ggml-cpu and ggml-vulkan) report unavailable",
	"tokens_per_s":   "B·Nq / median time: query rows (tokens) computed a second",
	"read_gbps":      "the machine's read bandwidth, the best of repeated probes in the same run (at least 2 before the sweep and 1 after it, more while a probe raises a ceiling by 5 %; machine.ceiling_probes lists each): every thread (GOMAXPROCS goroutines) sums a contiguous share of a buffer of 8 × the last-level cache, at least 512 MiB and at most 4 GiB (or a quarter of the available memory), as 64-bit integers, its pages written first; bytes / time of the fastest of 5 passes, in 10⁹ bytes/s",
	"read_bw_frac":   "of BW: a point's gbps / the machine's read_gbps, how near the point comes to streaming its compulsory bytes at the rate the machine reads memory; none for a discrete GPU, whose memory is not the host's",
	"sgemm_gflops":   "the compute ceiling of the host's CPU, the best of repeated probes in the same run, as read_gbps is: every thread (GOMAXPROCS goroutines) multiplies square float32 matrices of orders 512, 1024 and 2048, operands of its own, with the CPU backend's Sgemm (the BLAS cpu_kernel names), all at once; 2·n³ flops a product over the time of the fastest of 5 passes at each order (about 0.1 s each), the fastest order's, in 10⁹ flop/s; float32's ceiling, for points of every dtype",
	"amx_gflops":     "the peak of AMX's tiles in bfloat16 (Sapphire Rapids and later), the best of repeated probes in the same run, as fma_gflops is: every thread runs four independent TDPBF16PS back to back on tiles loaded once (amx_kernel names the loop; 16×16 sums of 32 products, 16,384 flops each), in 10⁹ flop/s; the arithmetic no kernel on the tiles passes; none where the CPU has no tiles or Linux refuses them",
	"amx_frac":       "of AMX: a bfloat16 point of attn's CPU backend whose bfloat16 arithmetic ran on AMX's tiles: its gflops / amx_gflops; none for other points",
	"fma_gflops":     "the FMA peak of the host's CPU, the best of repeated probes in the same run, as read_gbps is: every thread (GOMAXPROCS goroutines) runs independent chains of the widest vector FMA the CPU has on registers alone (fma_kernel names it: VFMADD231PS on 16 zmm chains with AVX-512F, else on 12 ymm chains with AVX2+FMA; FMLA on 16 NEON chains on arm64), all at once; 2 flops a lane an FMA over the time of the fastest of 5 passes of about 0.1 s each, in 10⁹ flop/s; the float32 arithmetic no kernel passes, for points of every dtype; none in a -tags purego build, whose arithmetic is Go's",
	"fma_frac":       "of FMA: a point's gflops / fma_gflops, the share of the host's float32 FMA peak the point uses (flops as gflops counts them, so the softmax's exponentials and the FMAs a kernel wastes on padding are not credited); only for points on the host's CPU with fma_gflops measured; float32's peak for every dtype, so an f16 or bf16 point may pass 1 where the CPU multiplies halves faster",
	"flag":           "a point that stood above the roofline, the FMA peak or the read bandwidth, or its GPU's (roofline_frac, fma_frac, read_bw_frac, gpu_fma_frac or gpu_read_frac past 1) against the best of every probe of the ceilings, measured again after the sweep and still above: by how much (roof 1.03× C, FMA 1.10×, GPU BW 1.2×) and what may explain it, probe noise last: data in cache (left of the ridge, or past a read ceiling), a kernel faster than Sgemm (right of it, below the FMA peak), half arithmetic (f16, bf16, and q8, q4 or fp8 past the GPU's f32 FMA), or probes the machine's load slowed throughout; its fractions are not to be trusted as they stand",
	"gpu_read_gbps":  "what WGSL reads a second on the device of attn's GPU backend (gpu.Backend.Ceilings), the best of repeated probes in the same run, as read_gbps is: every invocation of a grid-stride loop sums vec4<f32>s of one buffer (512 MiB on a GPU, within its limits; 32 MiB on a CPU-type adapter, whose caches may hold part of it), each workgroup's sum written; bytes / time of the fastest of 5 passes of a few ms each (3 on a CPU-type adapter), by the device's timestamps where it has them (machine.gpu_ceilings_note says how), in 10⁹ bytes/s; on lavapipe it is the host's CPU running WGSL, never a GPU's figure",
	"gpu_fma_gflops": "the FMA rate WGSL reaches on the same device, probed as gpu_read_gbps is: every invocation runs 4 independent chains of vec4 fma in registers; 2 flops a lane an fma, in 10⁹ flop/s; machine.gpu_fma_gflops in f32 and gpu_f16_fma_gflops in vec4<f16>, absent where the device does not compile f16 (machine.gpu_ceilings_note says why); on lavapipe the host's CPU's, never a GPU's figure",
	"gpu_read_frac":  "of GPU BW: a point of attn's GPU backend's bytes / its device time (gpu_s, else the median wall time) / gpu_read_gbps, how near its kernels come to the rate WGSL streams memory on the device; none for other implementations",
	"gpu_fma_frac":   "of GPU FMA: a point of attn's GPU backend's flops (as gflops counts them) / its device time (gpu_s, else the median wall time) / the FMA rate of its dtype on the device (gpu_f16_fma_gflops for an f16 point where measured, gpu_fma_gflops otherwise), the share of what WGSL's fma chains reach that its kernels use; none for other implementations",
	"intensity":      "arithmetic intensity: a point's flops (as gflops counts them) / its bytes (compulsory traffic), in flop per byte",
	"roofline_frac":  "of roof: a point's gflops / min(sgemm_gflops, intensity × read_gbps), the roofline of the host's cores and memory, with bound the ceiling that sets it: memory (M) left of the ridge sgemm_gflops / read_gbps, compute (C) at and right of it; only for points on the host's CPU (attn-cpu, a CPU-type adapter such as lavapipe, CPU peers) with both ceilings measured: none for a GPU (an integrated GPU reads the host's memory, but its compute is its own: read_bw_frac is its fraction of the one ceiling that applies); the compute ceiling is float32 Sgemm's for every dtype, so an f16 or bf16 point (bf16 products where the CPU multiplies bfloat16) may pass 1, and so may a peer whose own kernels beat the CPU backend's Sgemm",
	"gpu_s":          "the device's own time for a point's ops, the median over the timed runs: timestamps written on the GPU before and after the passes of each submission, their difference summed over an op's submissions (the host's gaps between them not counted) and converted with the timestamp period calibrated against the host clock; beside median_s, the wall time, which adds encoding, submission and waiting; absent where not measured (the CPU, peers, an adapter without timestamps: the backend's device_time says why); results.json's gpu_kernels splits it by kernel (fuseddecode, merge, scores …), each kernel's median seconds over the timed runs from timestamps written inside the pass around each dispatch, their sum at most gpu_s (the pass's start and end not counted), where the device has timestamps inside passes (not the go-webgpu build)",
	"time":           "one warm-up run, then timed runs until the budget is spent and at least min_runs are timed; attn times the device work and Sync on inputs already uploaded, peers time their attention call on inputs already loaded",
	"peak_rss":       "peak resident memory (VmHWM) of the process that ran the point, inputs included: a process of its own per point for each peer and, when isolated (attn bench's default), for attn; otherwise attn's own process, its peak reset before each point",
	"device_peak":    "peak bytes of device buffers attn allocated during the point (GPU backends)",
	"max_rel_err":    "largest max|o − ref| / max|ref| over the checked rows, ref the float64 reference (backendtest) on the same inputs (for q8 and fp8, K and V as stored); past 1e-3 the point is marked wrong; a backward point's is the largest over dQ, dK and dV of max|g − ref| / max|ref|, ref backendtest.ReferenceGrad's on the last batch's last KV group (all of it where its float64 gradient costs at most 2²⁷ pairs × (D + Dv), else dQ of the group's last check-rows rows; checked_rows counts the query rows × heads), marked wrong past the larger of 1e-3 and the conformance suite's GradTol (1e-4 in f32, 3e-3 in f16, 2e-2 in bf16)",
	"quant_rel_err":  "q err: for K and V stored in 8 bits (q8, fp8), max_rel_err against the float64 reference on the inputs before they were quantized: what the format costs, beside max_rel_err, which measures the kernels on what is stored",
	"spread":         "range is (max − min) / median of the timed runs; IQR is (q3 − q1) / median, q1 and q3 the quartiles of the run times interpolated linearly (NumPy's default), which one slow run among five or more cannot move; the charts' error bars are the IQR, as rates",
	"cpu_kernel":     "the matrix-multiply kernel attn's CPU backend ran on, as the backend names its BLAS (Info().Adapter.Driver): attn's AVX-512 8×32 or AVX2+FMA 6×16 micro-kernel, gonum pure Go (other CPUs, -tags purego), or OpenBLAS (-tags openblas) with its core type; GODEBUG=cpu.avx512f=off selects AVX2 on an AVX-512 CPU",
	"inputs":         "Q, K, V uniform in [−1, 1), float32, BHND, scale 1/√D, one seeded draw per shape shared by attn and every peer",
	"dtype":          "the storage dtype of Q, K, V and O (f32 when absent), or of K and V alone for q8 (llama.cpp's q8_0: 32 int8 values and one float16 scale, 34 bytes for 32) and fp8 (E4M3, one byte), Q and O then float32: inputs are rounded to it, the reference is computed on the rounded values, arithmetic is float32 (bf16 products where the CPU multiplies bfloat16 and every operand is bf16), and a half output may be off by its own rounding too (2⁻¹¹ relative in f16, 2⁻⁸ in bf16; bf16 arithmetic 2⁻⁸·max|V| more) before the point is marked wrong; peers take float32 only, but ort-cpu-gqa, ggml-cpu and ggml-vulkan float16 too (ggml keeps K and V in it; its version says what it computes in)",
	"prefix":         "P, for a decoding step of B sequences of N keys over a kernels.PagePool whose first P keys are one prompt (attn bench -prefix P): shared, the prompt held once and forked into every sequence, PagePool.Attend's cascade reading its pages once for all of them and merging by LSE; own, the same keys held by each sequence; the two are the same attention, and bytes counts the K and V each must read (P + B·(N − P) keys shared, B·N own) with Q and O in float32 and K and V in the point's dtype",
	"pool_pages":     "the pages a prefix point's pool holds: the prompt's once and each sequence's own when shared, every sequence's all when not; pages of 256 keys, or the largest power of two that divides P",
	"variant":        "the score variants of a point, absent when none: window [left, right] around each query's position (−1 unbounded), softcap C (C·tanh(s/C)), alibi (the standard slopes of H heads, 2^(−8(h+1)/H) for H a power of two, BLOOM's interleave otherwise), sinks (one sink logit per head, 0 for each); peers run none of them and are reported unavailable",
}

// Report is a sweep's results with what is needed to reproduce and
// judge them: the machine, the versions, the environment and the
// configuration.
type Report struct {
	Schema string    `json:"schema"`
	Date   time.Time `json:"date"`
	// Command ran the sweep, written to be run again: go run's
	// temporary binary is recorded as the go run command (commandLine).
	Command     string            `json:"command"`
	Machine     Machine           `json:"machine"`
	Versions    map[string]string `json:"versions"`
	Env         map[string]string `json:"env"`
	Backends    []BackendInfo     `json:"backends"`
	Peers       []PeerInfo        `json:"peers,omitempty"`
	Budget      string            `json:"budget"`
	MinRuns     int               `json:"min_runs"`
	Seed        uint64            `json:"seed"`
	Conventions map[string]string `json:"conventions"`
	Points      []Point           `json:"points"`
}

// Machine describes the host.
type Machine struct {
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Kernel string `json:"kernel,omitempty"` // the operating system's
	// CPU is the model name with, on x86, its family and model numbers
	// (parseCPUInfo), which tell the generation where the name does not.
	CPU       string `json:"cpu"`
	CPUFamily int    `json:"cpu_family,omitempty"` // x86: 25 Zen 3/4, 26 Zen 5, 6 Intel Core/Xeon
	CPUModel  int    `json:"cpu_model,omitempty"`
	// CPUFeatures are the instruction-set extensions that decide which
	// kernels run (avx2, fma and avx512f for attn's; avx512_bf16 too for
	// a peer's library), as Go sees them: GODEBUG=cpu.avx512f=off makes
	// avx512f false. Absent in reports written before they were recorded.
	CPUFeatures map[string]bool `json:"cpu_features,omitempty"`
	CPUs        int             `json:"cpus"`
	GOMAXPROCS  int             `json:"gomaxprocs"`
	MemBytes    int64           `json:"mem_bytes"`
	// ReadGBPS is the read bandwidth measured in the same run
	// (MeasureReadBandwidth; Conventions["read_gbps"]), in GB/s; 0 when
	// not measured.
	ReadGBPS float64 `json:"read_gbps,omitempty"`
	// SgemmGFLOPS is the CPU backend's Sgemm rate on every thread
	// measured in the same run (MeasureSgemm;
	// Conventions["sgemm_gflops"]), in GFLOP/s: the roofline's compute
	// ceiling. 0 when not measured.
	SgemmGFLOPS float64 `json:"sgemm_gflops,omitempty"`
	// FMAGFLOPS is the host's FMA peak on every thread measured in the
	// same run (MeasureFMA; Conventions["fma_gflops"]), in GFLOP/s, and
	// FMAKernel the loop that measured it; 0 and "" when not measured
	// (a -tags purego build has none).
	FMAGFLOPS float64 `json:"fma_gflops,omitempty"`
	FMAKernel string  `json:"fma_kernel,omitempty"`
	// AMXGFLOPS is the peak of AMX's tiles in bfloat16 on every thread
	// measured in the same run (MeasureAMX; Conventions["amx_gflops"]),
	// in GFLOP/s, and AMXKernel the loop that measured it; 0 and "" where
	// the CPU has no tiles.
	AMXGFLOPS float64 `json:"amx_gflops,omitempty"`
	AMXKernel string  `json:"amx_kernel,omitempty"`
	// CeilingProbes are the ceilings each probe of the run measured
	// (Roof.Probes), in order, before and after the sweep: ReadGBPS,
	// SgemmGFLOPS and FMAGFLOPS are the best of each. Absent where the
	// run did not probe them more than once.
	CeilingProbes []Ceilings `json:"ceiling_probes,omitempty"`
	// GPUReadGBPS, GPUFMAGFLOPS and GPUF16GFLOPS are what WGSL reaches
	// on the device of the sweep's GPU backend, measured in the same run
	// (gpu.Backend.Ceilings; Conventions["gpu_read_gbps"] and
	// ["gpu_fma_gflops"]), the best of the probes; GPUCeilingsNote says
	// how they were timed and why one is missing. 0 and "" where not
	// measured: no GPU backend in the sweep, or a report written before.
	GPUReadGBPS     float64 `json:"gpu_read_gbps,omitempty"`
	GPUFMAGFLOPS    float64 `json:"gpu_fma_gflops,omitempty"`
	GPUF16GFLOPS    float64 `json:"gpu_f16_fma_gflops,omitempty"`
	GPUCeilingsNote string  `json:"gpu_ceilings_note,omitempty"`
}

// BackendInfo describes one backend attn ran on.
type BackendInfo struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Device  string `json:"device"`
	Threads int    `json:"threads,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// CPUKernel is CPUKernel of a CPU backend's Info; "" for others.
	CPUKernel string `json:"cpu_kernel,omitempty"`
	// DeviceTime says how the backend's points measured gpu_s, or why
	// they have none (an adapter without timestamp queries); "" for a
	// backend with no device apart from the host (deviceTiming).
	DeviceTime string `json:"device_time,omitempty"`
}

// PeerInfo describes one peer: its version, or why it could not run.
type PeerInfo struct {
	Name        string `json:"name"`
	Version     string `json:"version,omitempty"`
	Unavailable string `json:"unavailable,omitempty"`
}

// NewReport describes this machine, this build and its environment, the
// backends and peers, around points.
func NewReport(cfg Config, backends []backend.Backend, peers []Peer, points []Point) *Report {
	build, _ := debug.ReadBuildInfo()
	r := &Report{
		Schema: Schema, Date: time.Now().UTC().Truncate(time.Second),
		Command: commandLine(os.Args, build), Machine: machine(), Versions: versions(),
		Env:    map[string]string{},
		Budget: cfg.Budget.String(), MinRuns: cfg.MinRuns, Seed: cfg.Seed,
		Conventions: Conventions, Points: points,
	}
	ceil := cfg.ceilings()
	if cfg.Roof != nil {
		ceil = ceil.best(cfg.Roof.Best())
		r.Machine.CeilingProbes = cfg.Roof.Probes
	}
	r.Machine.ReadGBPS, r.Machine.SgemmGFLOPS = ceil.ReadGBPS, ceil.SgemmGFLOPS
	if ceil.FMAGFLOPS > 0 {
		r.Machine.FMAGFLOPS, r.Machine.FMAKernel = ceil.FMAGFLOPS, ceil.FMAKernel
	}
	if ceil.AMXGFLOPS > 0 {
		r.Machine.AMXGFLOPS, r.Machine.AMXKernel = ceil.AMXGFLOPS, ceil.AMXKernel
	}
	r.Machine.GPUReadGBPS, r.Machine.GPUFMAGFLOPS, r.Machine.GPUF16GFLOPS = ceil.GPUReadGBPS, ceil.GPUFMAGFLOPS, ceil.GPUF16GFLOPS
	r.Machine.GPUCeilingsNote = ceil.GPUNote
	// GODEBUG can turn CPU features off (cpu.avx512f=off), and with them
	// the kernel the CPU backend picks.
	for _, k := range []string{"OPENBLAS_CORETYPE", "GOMAXPROCS", "GODEBUG", "ATTN_BACKEND", "ATTN_ADAPTER"} {
		v, ok := os.LookupEnv(k)
		if !ok {
			v = "(unset)"
		}
		r.Env[k] = v
	}
	for _, be := range backends {
		info := be.Info()
		r.Backends = append(r.Backends, BackendInfo{Name: be.Name(), Kind: info.Kind.String(),
			Device: backendVersion(be), Threads: info.Threads, Detail: info.Detail, CPUKernel: CPUKernel(info),
			DeviceTime: deviceTiming(be)})
	}
	for _, p := range peers {
		r.Peers = append(r.Peers, PeerInfo{Name: p.Name, Version: p.Version, Unavailable: p.Unavailable})
	}
	return r
}

func machine() Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUFeatures: cpuFeatures(),
		CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), MemBytes: procField("/proc/meminfo", "MemTotal:")}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPU, m.CPUFamily, m.CPUModel = parseCPUInfo(string(b))
	}
	if m.CPU == "" {
		m.CPU = runtime.GOARCH
	}
	return m
}

// parseCPUInfo reads the first processor's model name and, on x86, its
// family and model numbers from /proc/cpuinfo. Cloud machines often name
// only the brand ("AMD EPYC"), which hides the generation that decides
// the FMA width (Zen 4 runs AVX-512 on 256-bit units, Zen 5 on 512-bit
// ones): the family and model go into the name so that every table and
// chart carries them.
func parseCPUInfo(info string) (name string, family, model int) {
	family, model = -1, -1
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			if name != "" {
				break // the end of the first processor's block
			}
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name":
			if name == "" {
				name = v
			}
		case "cpu family":
			if n, err := strconv.Atoi(v); err == nil && family < 0 {
				family = n
			}
		case "model":
			if n, err := strconv.Atoi(v); err == nil && model < 0 {
				model = n
			}
		}
	}
	if name != "" && family >= 0 && model >= 0 {
		name = fmt.Sprintf("%s (family %d model %d)", name, family, model)
	}
	return name, max(family, 0), max(model, 0)
}

// versions records Go, attn's revision and the modules attn's numbers
// depend on.
func versions() map[string]string {
	v := map[string]string{"go": runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision", "vcs.modified", "-tags", "CGO_ENABLED":
				v[s.Key] = s.Value
			}
		}
		for _, d := range bi.Deps {
			switch d.Path {
			case "gonum.org/v1/gonum", "gonum.org/v1/plot",
				"github.com/oliverbestmann/webgpu", "github.com/rajveermalviya/go-webgpu/wgpu": // the WebGPU binding, by build
				if d.Replace != nil {
					d = d.Replace
				}
				v[d.Path] = d.Version
			}
		}
	}
	if _, ok := v["vcs.revision"]; !ok {
		// go run does not stamp VCS data; ask git when run in a clone.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty", "--abbrev=12").Output(); err == nil {
			v["vcs.revision"] = strings.TrimSpace(string(out))
		}
	}
	return v
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadReport reads a report written by WriteJSON.
func ReadReport(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("bench: reading a report: %w", err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("bench: report schema %q, want %q", r.Schema, Schema)
	}
	return &r, nil
}

// csvHeader names the columns of WriteCSV. Every row carries the date,
// machine and revision, so rows of several runs can be concatenated.
// cpu_kernel is KernelName (empty for implementations other than
// attn-cpu); cpu_features the machine's, space-separated; q1_s and q3_s
// are empty for reports that did not record them; gpu_s (Point.GPUS) is
// empty where not measured; window ("left,right")
// and softcap are empty for points without them; dtype is f32, f16 or
// bf16; layers is L for a step of L layers (Point.Layers), empty for a
// single call; nq is the query rows (N for reports that did not record it);
// read_gbps is the machine's measured read bandwidth and read_bw_frac
// gbps over it, both empty when it was not measured; sgemm_gflops is the
// machine's measured compute ceiling, empty when not measured;
// intensity, roofline_frac and bound are the point's (Point.Intensity,
// RooflineFrac, Bound), empty where it has none; gpu_read_gbps,
// gpu_fma_gflops and gpu_f16_fma_gflops are the GPU backend's device's
// ceilings, and gpu_read_frac and gpu_fma_frac a point's fractions of
// them (Point.GPUReadFrac, GPUFMAFrac), empty where not measured; flag
// is Point.Flag, empty for a point below every ceiling; tokens_per_s is
// empty for points that did not run.
var csvHeader = []string{"date", "cpu", "cpu_features", "cpus", "revision", "impl", "strategy", "version", "cpu_kernel",
	"b", "h", "kv_heads", "n", "nq", "d", "causal", "window", "softcap", "alibi", "sinks", "dtype", "layers", "runs", "warmup_s", "median_s", "min_s", "max_s", "q1_s", "q3_s", "gpu_s",
	"gflops", "bytes", "gbps", "tokens_per_s", "read_gbps", "sgemm_gflops", "read_bw_frac", "intensity", "roofline_frac", "bound", "fma_gflops", "fma_frac",
	"gpu_read_gbps", "gpu_fma_gflops", "gpu_f16_fma_gflops", "gpu_read_frac", "gpu_fma_frac", "flag",
	"peak_rss_bytes", "device_peak_bytes", "max_rel_err", "quant_rel_err", "checked_rows", "status", "error", "openblas_coretype"}

// optFloat is *x in f's format, empty when x is nil.
func optFloat(x *float64, f func(float64) string) string {
	if x == nil {
		return ""
	}
	return f(*x)
}

// layersCSV is a point's Layers in the CSV: empty for a single call.
func layersCSV(l int) string {
	if l == 0 {
		return ""
	}
	return strconv.Itoa(l)
}

// WriteCSV writes one row per point under csvHeader.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	measured := func(x float64) string { // empty where not measured (0)
		if x <= 0 {
			return ""
		}
		return f(x)
	}
	i := strconv.Itoa
	for _, pt := range r.Points {
		maxErr := ""
		if pt.MaxErr != nil {
			maxErr = f(*pt.MaxErr)
		}
		window, softcap := "", ""
		if w := pt.Window; w != nil {
			window = fmt.Sprintf("%d,%d", w[0], w[1])
		}
		if pt.Softcap != 0 {
			softcap = f(pt.Softcap)
		}
		tokens, readGBPS, frac := "", "", ""
		if pt.Runs > 0 {
			tokens = f(pt.tokensPerS())
		}
		if bw := r.Machine.ReadGBPS; bw > 0 {
			readGBPS = f(bw)
			if pt.Runs > 0 {
				frac = f(pt.GBPS / bw)
			}
		}
		q1, q3 := "", ""
		if pt.hasQuartiles() {
			q1, q3 = f(pt.Q1S), f(pt.Q3S)
		}
		sgemm, intensity, roof := measured(r.Machine.SgemmGFLOPS), measured(pt.Intensity), measured(pt.RooflineFrac)
		fma, fmaFrac := measured(r.Machine.FMAGFLOPS), measured(pt.FMAFrac)
		row := []string{r.Date.Format(time.RFC3339), r.Machine.CPU, featureList(r.Machine.CPUFeatures), i(r.Machine.CPUs), r.Versions["vcs.revision"],
			pt.Impl, pt.Strategy, pt.Version, pt.KernelName(),
			i(pt.B), i(pt.H), i(pt.KVHeads), i(pt.N), i(pt.Queries()), i(pt.D), strconv.FormatBool(pt.Causal),
			window, softcap, strconv.FormatBool(pt.ALiBi), strconv.FormatBool(pt.Sinks), pt.dtypeLabel(), layersCSV(pt.Layers),
			i(pt.Runs), f(pt.WarmupS), f(pt.MedianS), f(pt.MinS), f(pt.MaxS), q1, q3, measured(pt.GPUS),
			f(pt.GFLOPS), strconv.FormatInt(pt.Bytes, 10), f(pt.GBPS), tokens, readGBPS, sgemm, frac, intensity, roof, pt.Bound, fma, fmaFrac,
			measured(r.Machine.GPUReadGBPS), measured(r.Machine.GPUFMAGFLOPS), measured(r.Machine.GPUF16GFLOPS), measured(pt.GPUReadFrac), measured(pt.GPUFMAFrac), pt.Flag,
			strconv.FormatInt(pt.PeakRSS, 10), strconv.FormatInt(pt.DeviceBytes, 10), maxErr, optFloat(pt.QuantErr, f), i(pt.CheckedRows),
			string(pt.Status), pt.Error, r.Env["OPENBLAS_CORETYPE"]}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// layersString is a point's Layers in a table: "-" for a single call.
func layersString(l int) string {
	if l == 0 {
		return "-"
	}
	return strconv.Itoa(l)
}

// tableColumns says which of the optional columns a table of points
// shows.
func tableColumns(points []Point) (decode, ofBW, ofRoof, gpuTime, ofFMA, variants, dtypes bool) {
	has := func(f func(Point) bool) bool { return slices.ContainsFunc(points, f) }
	return has(Point.Decode), has(func(pt Point) bool { return pt.ReadBWFrac > 0 }),
		has(func(pt Point) bool { return pt.RooflineFrac > 0 }), has(func(pt Point) bool { return pt.GPUS > 0 }),
		has(func(pt Point) bool { return pt.FMAFrac > 0 }), has(func(pt Point) bool { return pt.Variant.Any() }),
		has(func(pt Point) bool { return pt.DType != "" })
}

// ofGPUColumns says whether a table of points shows the columns of the
// GPU's ceilings, "of GPU BW" and "of GPU FMA".
func ofGPUColumns(points []Point) bool {
	return slices.ContainsFunc(points, func(pt Point) bool { return pt.GPUReadFrac > 0 || pt.GPUFMAFrac > 0 })
}

// WriteTable prints the points as an aligned table, one row per point,
// under a line naming the CPU kernel attn-cpu ran on (when it ran), and
// one line under it that says where its columns are defined (results.md,
// which ends with GlossaryKeys' definitions, and attn bench -h). A
// variant column names the score variants of each point when any point
// has one.
func WriteTable(w io.Writer, points []Point) error {
	if ks := cpuKernels(points); len(ks) > 0 {
		if _, err := fmt.Fprintf(w, "attn-cpu kernel: %s\n", strings.Join(ks, ", ")); err != nil {
			return err
		}
	}
	decode, ofBW, ofRoof, gpuTime, ofFMA, variants, dtypes := tableColumns(points)
	layers := slices.ContainsFunc(points, func(pt Point) bool { return pt.Layers > 0 })
	prefixes := slices.ContainsFunc(points, func(pt Point) bool { return pt.Prefix > 0 })
	sparse := slices.ContainsFunc(points, func(pt Point) bool { return pt.TopK > 0 || pt.BlockSize > 0 || pt.Tree > 0 })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// The status is the last cell of a row and ends without a tab, so
	// that a long reason does not widen every row.
	head := "impl\tstrategy\tB\tH\tKVH\tN\t"
	if decode {
		head += "Nq\t"
	}
	head += "D\tcausal\t"
	if variants {
		head += "variant\t"
	}
	if dtypes {
		head += "dtype\t"
	}
	if layers {
		head += "layers\t"
	}
	if prefixes {
		head += "prefix\tpages\t"
	}
	if sparse {
		head += "sparse\t"
	}
	head += "runs\tmedian\t"
	if gpuTime {
		head += "GPU time\t"
	}
	head += "range\tIQR\tGFLOP/s\tmoved\tGB/s\t"
	if ofBW {
		head += "of BW\t"
	}
	if ofRoof {
		head += "of roof\t"
	}
	if ofFMA {
		head += "of FMA\t"
	}
	ofGPU := ofGPUColumns(points)
	if ofGPU {
		head += "of GPU BW\tof GPU FMA\t"
	}
	qerr := quantErrs(points)
	head += "tok/s\tpeak RSS\tdevice\tmax err\t"
	if qerr {
		head += "q err\t"
	}
	fmt.Fprintln(tw, head+"  status")
	for _, pt := range points {
		row := fmt.Sprintf("%s\t%s\t%d\t%d\t%d\t%d\t", pt.Impl, pt.Strategy, pt.B, pt.H, pt.KVHeads, pt.N)
		if decode {
			row += fmt.Sprintf("%d\t", pt.Queries())
		}
		row += fmt.Sprintf("%d\t%v\t", pt.D, pt.Causal)
		if variants {
			v := pt.Variant.String()
			if v == "" {
				v = "-"
			}
			row += v + "\t"
		}
		if dtypes {
			row += pt.dtypeLabel() + "\t"
		}
		if layers {
			row += layersString(pt.Layers) + "\t"
		}
		if prefixes {
			row += prefixString(pt) + "\t" + strconv.Itoa(pt.PoolPages) + "\t"
		}
		if sparse {
			row += sparseString(pt) + "\t"
		}
		if pt.Runs == 0 {
			row += strings.Repeat("-\t", 7)
			if gpuTime {
				row += "-\t"
			}
			if ofBW {
				row += "-\t"
			}
			if ofRoof {
				row += "-\t"
			}
			if ofFMA {
				row += "-\t"
			}
			if ofGPU {
				row += "-\t-\t"
			}
			if qerr {
				row += "-\t" // no q err column cell of its own before the status
			}
			fmt.Fprintf(tw, "%s-\t%s\t-\t-\t  %s: %s\n", row, memString(pt.PeakRSS), pt.Status, pt.Error)
			continue
		}
		spread, iqr := "-", "-"
		if pt.MedianS > 0 {
			spread = fmt.Sprintf("%.0f%%", 100*(pt.MaxS-pt.MinS)/pt.MedianS)
			if pt.hasQuartiles() {
				iqr = fmt.Sprintf("%.0f%%", 100*(pt.Q3S-pt.Q1S)/pt.MedianS)
			}
		}
		maxErr := "-"
		if pt.MaxErr != nil {
			maxErr = fmt.Sprintf("%.1e", *pt.MaxErr)
		}
		status := string(pt.Status)
		if pt.Status == StatusWrong && pt.MaxErr == nil {
			status += ": " + pt.Error
		}
		if pt.Flag != "" {
			status += ", flag: " + pt.Flag
		}
		row += fmt.Sprintf("%d\t%s\t", pt.Runs, roundDuration(time.Duration(pt.MedianS*float64(time.Second))))
		if gpuTime {
			row += gpuString(pt.GPUS) + "\t"
		}
		row += fmt.Sprintf("%s\t%s\t%.2f\t%s\t%.2f\t", spread, iqr, pt.GFLOPS, memString(pt.Bytes), pt.GBPS)
		if ofBW {
			row += fracString(pt.ReadBWFrac) + "\t"
		}
		if ofRoof {
			row += roofString(pt) + "\t"
		}
		if ofFMA {
			row += fracString(pt.FMAFrac) + "\t"
		}
		if ofGPU {
			row += fracString(pt.GPUReadFrac) + "\t" + fracString(pt.GPUFMAFrac) + "\t"
		}
		if qerr {
			maxErr += "\t-"
			if pt.QuantErr != nil {
				maxErr = fmt.Sprintf("%s\t%.1e", maxErr[:len(maxErr)-2], *pt.QuantErr)
			}
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t  %s\n", row, rateString(pt.tokensPerS()),
			memString(pt.PeakRSS), memString(pt.DeviceBytes), maxErr, status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "(the columns are defined at the end of results.md and by attn bench -h)")
	return err
}

// quantErrs says whether any point has a QuantErr (a q err column).
func quantErrs(points []Point) bool {
	return slices.ContainsFunc(points, func(pt Point) bool { return pt.QuantErr != nil })
}

// GlossaryKeys are the Conventions that define the columns a table of
// points shows, in the table's order.
func GlossaryKeys(points []Point) []string {
	decode, ofBW, ofRoof, gpuTime, ofFMA, variants, dtypes := tableColumns(points)
	keys := []string{"gflops", "spread", "bytes", "tokens_per_s", "peak_rss", "max_rel_err"}
	if quantErrs(points) {
		keys = append(keys, "quant_rel_err")
	}
	if decode {
		keys = append(keys, "nq")
	}
	if ofBW {
		keys = append(keys, "read_gbps", "read_bw_frac")
	}
	if ofRoof {
		keys = append(keys, "sgemm_gflops", "intensity", "roofline_frac")
	}
	if gpuTime {
		keys = append(keys, "gpu_s")
	}
	if ofFMA {
		keys = append(keys, "fma_gflops", "fma_frac")
	}
	if ofGPUColumns(points) {
		keys = append(keys, "gpu_read_gbps", "gpu_read_frac", "gpu_fma_gflops", "gpu_fma_frac")
	}
	if slices.ContainsFunc(points, func(pt Point) bool { return pt.Flag != "" }) {
		keys = append(keys, "flag")
	}
	if variants {
		keys = append(keys, "variant")
	}
	if dtypes {
		keys = append(keys, "dtype")
	}
	if slices.ContainsFunc(points, func(pt Point) bool { return pt.Prefix > 0 }) {
		keys = append(keys, "prefix", "pool_pages")
	}
	return keys
}

// WriteGlossary writes the definition of each of keys (Conventions), one
// a line, as "key: definition", or with markdown as a list item.
func WriteGlossary(w io.Writer, keys []string, markdown bool) error {
	for _, k := range keys {
		format := "%s: %s\n"
		if markdown {
			format = "- **%s**: %s\n"
		}
		if _, err := fmt.Fprintf(w, format, k, Conventions[k]); err != nil {
			return err
		}
	}
	return nil
}

// AllGlossaryKeys are every Convention's key, in a fixed order: those a
// table may show first, as GlossaryKeys orders them, then the rest.
func AllGlossaryKeys() []string {
	keys := []string{"gflops", "spread", "bytes", "tokens_per_s", "peak_rss", "max_rel_err", "quant_rel_err", "nq", "read_gbps", "read_bw_frac",
		"sgemm_gflops", "intensity", "roofline_frac", "gpu_s", "fma_gflops", "fma_frac",
		"gpu_read_gbps", "gpu_read_frac", "gpu_fma_gflops", "gpu_fma_frac", "flag", "variant", "dtype", "prefix", "pool_pages"}
	var rest []string
	for k := range Conventions {
		if !slices.Contains(keys, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(keys, rest...)
}

// sparseString is a point's sparse column: the keys a row attends of an
// index list (top 2048), a block mask's size and the fraction of its
// blocks on (blocks 128 at 0.107), a draft tree's tokens (tree 32) or
// its causal baseline's (chunk 32), or - for a dense point.
func sparseString(pt Point) string {
	switch {
	case pt.Tree > 0:
		return treeLabel(pt.Tree, pt.TreeChunk)
	case pt.TopK > 0:
		return "top " + strconv.Itoa(pt.TopK)
	case pt.BlockSize > 0:
		return fmt.Sprintf("blocks %d at %.3g", pt.BlockSize, pt.BlockDensity)
	}
	return "-"
}

// prefixString is a prefix point's prefix column: P, whether the pool
// shares it, "bhnd" for a pool of BHND pages and "(buffers)" for
// AttendBuffers.
func prefixString(pt Point) string {
	if pt.Prefix == 0 {
		return "-"
	}
	if pt.GroupPrefix > 0 {
		return strings.TrimSpace(pt.prefixSpec().label()[len(" prefix "):])
	}
	s := strconv.Itoa(pt.Prefix) + " own"
	if pt.Shared {
		s = strconv.Itoa(pt.Prefix) + " shared"
	}
	if pt.PoolLayout != "" {
		s += " " + pt.PoolLayout
	}
	if pt.Buffers {
		s += " (buffers)"
	}
	return s
}

// tokensPerS is TokensPerS, or B·Nq over the median time for a point of
// a report written before it was recorded.
func (pt Point) tokensPerS() float64 {
	if pt.TokensPerS > 0 || pt.MedianS <= 0 {
		return pt.TokensPerS
	}
	return float64(pt.B) * float64(pt.Queries()) / pt.MedianS
}

// gpuString prints a device time in seconds as the table's durations
// are printed, "-" when not measured.
func gpuString(s float64) string {
	if s <= 0 {
		return "-"
	}
	return roundDuration(time.Duration(s * float64(time.Second))).String()
}

// fracString prints a fraction of the read bandwidth as a percentage,
// "-" when not measured.
func fracString(f float64) string {
	if f <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

// roofString prints a point's fraction of the roofline as a percentage
// and the ceiling that bounds it, C (compute) or M (memory): "86% C";
// "-" when it has none.
func roofString(pt Point) string {
	if pt.RooflineFrac <= 0 {
		return "-"
	}
	return strings.TrimSpace(fracString(pt.RooflineFrac) + " " + boundLetters[pt.Bound])
}

// boundLetters abbreviate the ceilings in the table and results.md.
var boundLetters = map[string]string{BoundCompute: "C", BoundMemory: "M"}

// rateString prints a rate with three significant digits or more:
// 12.3, 4560, 1.23e+06 past a million.
func rateString(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.3g", x)
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

// dtypeLabel is the point's storage dtype as the table names it: f32
// for the "" that reports record for float32.
func (pt Point) dtypeLabel() string {
	if pt.DType == "" {
		return "f32"
	}
	return pt.DType
}

func memString(n int64) string {
	if n == 0 {
		return "-"
	}
	return sizeString(n)
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d > 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d > time.Second:
		return d.Round(10 * time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(100 * time.Nanosecond)
}
