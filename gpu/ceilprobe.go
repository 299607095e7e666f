//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/wg"
	"github.com/gogpu/gputypes"
)

// The probes of Ceilings are WGSL of their own, apart from the kernel
// registry (package shaders): they are no attention kernel, take no
// Params, and their sources change with nothing the plan decides.

// probeWG is the probes' workgroup size: WebGPU's default limit of
// invocations a workgroup, which every device runs.
const probeWG = 256

// The FMA probe's loop: fmaChains independent vec4 accumulators an
// invocation, each stepped fmaDepth times a trip. Four chains of four
// lanes are 16 independent fmas in flight an invocation, more than a
// GPU's FMA latency needs beside its other resident invocations, and
// few enough registers (16 floats) that no driver spills them; a trip's
// 32 fmas make the loop's own counting (naga bounds every loop with a
// counter of its own) a small part of it.
const (
	fmaChains = 4
	fmaDepth  = 8
)

// How long a timed pass runs at least, and how many of them a probe
// takes, the fastest counting: a GPU's pass is long beside the
// dispatch's ramp and its timestamps' resolution; lavapipe's is short,
// so that the three probes finish in well under a second, and long
// beside the host's scheduling. Without timestamps a pass is timed on
// the host's clock, submission and wait included, and runs longer so
// that the round trip is a small part of it.
const (
	passGPU       = 3 * time.Millisecond
	passCPU       = 15 * time.Millisecond
	passWall      = 25 * time.Millisecond
	passesGPU     = 5
	passesCPU     = 3
	maxSizeRounds = 6 // a probe's passes that size its work, at most
)

// readBytesGPU is the read probe's buffer on a GPU: well past most
// GPUs' last-level caches (an H200's L2 is 50 MB), within the device's
// limits; readBytesCPU on a CPU-type adapter (lavapipe), where a pass
// of more would take too long, and the host's caches may hold part of
// it.
const (
	readBytesGPU = 512 << 20
	readBytesCPU = 32 << 20
)

// Ceilings measures the rates WGSL reaches on the backend's device: a
// streaming read's bytes a second and the FMA rate in f32 and, where
// the device compiles f16, in f16. Each probe sizes its work to the
// device (a few milliseconds a pass on a GPU), and reports the fastest
// of several passes, timed by the device's timestamps where it has them
// (calibrating their period first, as TimeDevice does) and else by the
// host's clock. The probes count in no DeviceTime or KernelTimes and in
// no Memory: their buffers are their own, up to 512 MiB on a GPU, and
// are freed before Ceilings returns. Work other goroutines submit
// meanwhile slows them down; run it on an otherwise idle backend.
func (b *Backend) Ceilings(ctx context.Context) (Ceilings, error) {
	pr, err := b.newProbe(ctx)
	if err != nil {
		return Ceilings{}, backend.Wrapf(err, "gpu: ceilings")
	}
	defer pr.close()
	rd, err := pr.read(ctx, pr.readBytes())
	if err != nil {
		return Ceilings{}, backend.Wrapf(err, "gpu: ceilings: streaming read")
	}
	f32, err := pr.fma(ctx, false, 0)
	if err != nil {
		return Ceilings{}, backend.Wrapf(err, "gpu: ceilings: f32 FMA")
	}
	c := Ceilings{ReadGBPS: rd.rate, FMAGFLOPS: f32.rate}
	notes := []string{pr.clock()}
	if pr.cpu {
		notes = append(notes, "a CPU-type adapter: the host's CPU running WGSL, no GPU's ceilings")
	}
	if why := pr.noF16(); why != "" {
		notes = append(notes, "f16 FMA not measured: "+why)
	} else {
		f16, err := pr.fma(ctx, true, 0)
		if err != nil {
			return Ceilings{}, backend.Wrapf(err, "gpu: ceilings: f16 FMA")
		}
		c.F16GFLOPS = f16.rate
	}
	c.Note = strings.Join(notes, "; ")
	return c, nil
}

// probe is the state of one Ceilings call: it holds b.mu from newProbe
// to close, but while it waits for the device (waitIdle).
type probe struct {
	b      *Backend
	cpu    bool // a CPU-type adapter
	passes int  // timed passes a probe takes
	target time.Duration
	why    string // why passes are timed by the host's clock, "" where by timestamps

	qs                 *wg.QuerySet // nil where passes are timed by the host's clock
	resolved, readback *wg.Buffer
	params             *wg.Buffer // the uniform: a pass's trips or repetitions
	out                *wg.Buffer // a sum a workgroup
	outBytes           uint64
	pipes              []*wg.Pipeline
	groups             []*wg.BindGroup
	bufs               []*wg.Buffer
}

// newProbe calibrates the timestamp period where the device has
// timestamps and it is not calibrated yet, and returns a probe holding
// b.mu, with the work steps recorded before it submitted (untimed).
func (b *Backend) newProbe(ctx context.Context) (*probe, error) {
	if err := b.lock(ctx, "ceilings"); err != nil {
		return nil, err
	}
	why := ""
	if b.noTiming != nil {
		why = b.noTiming.Error()
	}
	calibrate := why == "" && b.period.ns == 0
	b.mu.Unlock()
	if calibrate {
		p, err := b.calibrate()
		if err := b.lock(ctx, "ceilings"); err != nil {
			return nil, err
		}
		switch {
		case err != nil:
			why = "calibrating the timestamp period: " + err.Error()
		case b.period.ns == 0: // else another goroutine's calibration came first
			b.period = p
		}
		b.mu.Unlock()
	}
	if err := b.lock(ctx, "ceilings"); err != nil {
		return nil, err
	}
	pr := &probe{b: b, cpu: b.info.Adapter.DeviceType == gputypes.DeviceTypeCPU, why: why,
		passes: passesGPU, target: passGPU}
	if pr.cpu {
		pr.passes, pr.target = passesCPU, passCPU
	}
	if why != "" {
		pr.target = passWall
	}
	err := b.flush()
	if err == nil && why == "" {
		if pr.qs, err = b.dev.CreateTimestamps("attn ceilings", 2); err == nil {
			pr.resolved, err = b.dev.CreateBuffer("attn ceilings resolved", 16, wg.UsageQueryResolve|wg.UsageCopySrc)
		}
	}
	if err == nil {
		pr.params, err = b.dev.CreateBuffer("attn ceilings params", 16, wg.UsageUniform|wg.UsageCopyDst)
	}
	if err == nil {
		pr.outBytes = 4 * uint64(pr.maxGroups())
		pr.out, err = b.dev.CreateBuffer("attn ceilings sums", pr.outBytes, wg.UsageStorage|wg.UsageCopySrc)
	}
	if err != nil {
		pr.close()
		return nil, err
	}
	return pr, nil
}

// close releases what the probe made and lets go of b.mu.
func (pr *probe) close() {
	b := pr.b
	for _, g := range pr.groups {
		g.Release()
	}
	for _, p := range pr.pipes {
		p.Release()
	}
	for _, x := range append(pr.bufs, pr.params, pr.out, pr.resolved, pr.readback) {
		if x != nil {
			b.destroy(x)
		}
	}
	if pr.qs != nil {
		pr.qs.Release()
	}
	b.mu.Unlock()
}

// clock says how the probe timed its passes.
func (pr *probe) clock() string {
	if pr.why != "" {
		return fmt.Sprintf("the fastest of %d passes on the host's clock, submission and wait included (no timestamps: %s)", pr.passes, pr.why)
	}
	return fmt.Sprintf("the fastest of %d passes by the device's timestamps", pr.passes)
}

// noF16 says why the device does not compile the f16 probe, "" where
// it does.
func (pr *probe) noF16() string {
	switch {
	case !pr.b.info.Features.Contains(gputypes.FeatureShaderF16):
		return "the device has no shader-f16 feature"
	case !wg.CompilesF16:
		return "this binding's WGSL compiler has no f16"
	}
	return ""
}

// maxGroups is the most workgroups a probe dispatches: WebGPU's least
// limit of a grid's dimension, or the device's where lower.
func (pr *probe) maxGroups() int {
	return int(min(65535, pr.b.lim.MaxComputeWorkgroupsPerDimension))
}

// readBytes is the read probe's buffer: readBytesGPU, or readBytesCPU on
// a CPU-type adapter, within the device's largest buffer and binding,
// in whole vec4s.
func (pr *probe) readBytes() uint64 {
	size := uint64(readBytesGPU)
	if pr.cpu {
		size = readBytesCPU
	}
	size = min(size, pr.b.lim.MaxBufferSize, pr.b.lim.MaxStorageBufferBindingSize)
	return size &^ 15
}

// pipeline compiles entry main of src, binding a buffer of each type in
// binds; the probe releases it.
func (pr *probe) pipeline(label, src string, binds ...wg.BindingType) (*wg.Pipeline, error) {
	p, err := pr.b.dev.CreatePipeline(label, src, "main", binds)
	if err != nil {
		return nil, err
	}
	pr.pipes = append(pr.pipes, p)
	return p, nil
}

// group binds entries to p's slots; the probe releases it.
func (pr *probe) group(p *wg.Pipeline, entries ...wg.Entry) (*wg.BindGroup, error) {
	g, err := pr.b.dev.CreateBindGroup(p, entries)
	if err != nil {
		return nil, err
	}
	pr.groups = append(pr.groups, g)
	return g, nil
}

// setParam writes the uniform's first word, which the next submission
// reads (the queue writes it before the work submitted after it).
func (pr *probe) setParam(x uint32) error {
	var w [16]byte
	binary.LittleEndian.PutUint32(w[:], x)
	return pr.b.dev.WriteBuffer(pr.params, 0, w[:])
}

// run submits d alone, waits for it and returns its time: between the
// timestamps written before and after its pass, or on the host's clock
// from the submission to the wait's end. The device is idle when it
// starts, so that nothing submitted before counts.
func (pr *probe) run(d wg.Dispatch) (time.Duration, error) {
	b := pr.b
	enc, err := b.dev.CreateEncoder()
	if err != nil {
		return 0, err
	}
	defer enc.Release()
	if pr.qs != nil {
		if err := enc.WriteTimestamp(pr.qs, 0); err != nil {
			return 0, err
		}
	}
	if err := enc.ComputePass([]wg.Dispatch{d}); err != nil {
		return 0, err
	}
	if pr.qs != nil {
		if err := enc.WriteTimestamp(pr.qs, 1); err != nil {
			return 0, err
		}
	}
	cmd, err := enc.Finish()
	if err != nil {
		return 0, err
	}
	defer cmd.Release()
	if err := b.flush(); err != nil {
		return 0, err
	}
	if err := b.waitIdle(); err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := b.dev.Submit(cmd); err != nil {
		return 0, err
	}
	if err := b.waitIdle(); err != nil {
		return 0, err
	}
	wall := time.Since(t0)
	if pr.qs == nil {
		return wall, nil
	}
	ticks, err := b.readStamps([]stampSource{{pr.qs, pr.resolved, 2}}, &pr.readback)
	if err != nil {
		return 0, err
	}
	return spanOf(ticksBetween(ticks[0], ticks[1]), b.period, wall)
}

// best sizes the work of d's passes and returns the fastest of the
// probe's timed passes and the param it ran them with. A first pass at
// param warms the pipeline up, untimed (a driver may finish compiling
// it on its first dispatch); then passes scale param (setParam) until
// one takes half the target at least, or param reaches most, and that
// pass is the first of those timed.
func (pr *probe) best(ctx context.Context, d wg.Dispatch, param, most uint32) (time.Duration, uint32, error) {
	run := func() (time.Duration, error) {
		t, err := pr.run(d)
		if err == nil {
			err = ctx.Err()
		}
		return t, err
	}
	if err := pr.setParam(param); err != nil {
		return 0, 0, err
	}
	if _, err := run(); err != nil {
		return 0, 0, err
	}
	fastest := time.Duration(math.MaxInt64)
	for round := 1; ; round++ {
		t, err := run()
		if err != nil {
			return 0, 0, err
		}
		if t >= pr.target/2 || param >= most || round >= maxSizeRounds {
			fastest = t
			break
		}
		scale := 64.0
		if t > 0 {
			scale = min(max(float64(pr.target)/float64(t), 1.5), 64)
		}
		param = uint32(min(math.Ceil(float64(param)*scale), float64(most)))
		if err := pr.setParam(param); err != nil {
			return 0, 0, err
		}
	}
	for range pr.passes - 1 {
		t, err := run()
		if err != nil {
			return 0, 0, err
		}
		fastest = min(fastest, t)
	}
	if fastest <= 0 {
		return 0, 0, fmt.Errorf("the fastest of %d passes took no measurable time", pr.passes)
	}
	return fastest, param, nil
}

// sums reads the first n words of the probe's output, each a
// workgroup's sum in f32, and adds them.
func (pr *probe) sums(n int) (float64, error) {
	words, err := pr.outWords(n)
	total := 0.0
	for _, w := range words {
		total += float64(math.Float32frombits(w))
	}
	return total, err
}

// sumsU32 is sums for the read probe's sums, u32s added modulo 2³².
func (pr *probe) sumsU32(n int) (uint32, error) {
	words, err := pr.outWords(n)
	var total uint32
	for _, w := range words {
		total += w
	}
	return total, err
}

// outWords reads the first n words of the probe's output.
func (pr *probe) outWords(n int) ([]uint32, error) {
	b := pr.b
	if 4*uint64(n) > pr.outBytes {
		return nil, fmt.Errorf("%d workgroups' sums, more than the %d bytes of the probe's output hold", n, pr.outBytes)
	}
	size := 4 * uint64(n)
	st, err := b.takeStaging(size)
	if err != nil {
		return nil, err
	}
	if err := pr.copyOut(st, size); err != nil {
		b.putStaging(st)
		return nil, err
	}
	p, err := b.dev.MapAsync(st, wg.MapRead, 0, size)
	if err != nil {
		b.putStaging(st)
		return nil, err
	}
	if err := b.await(p); err != nil {
		b.destroy(st)
		return nil, fmt.Errorf("%w: %w", backend.ErrDeviceLost, err)
	}
	mapped := st.Mapped(0, size)
	words := make([]uint32, n)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(mapped[4*i:])
	}
	err = st.Unmap()
	b.putStaging(st)
	return words, err
}

// copyOut submits a copy of the output's first size bytes to st.
func (pr *probe) copyOut(st *wg.Buffer, size uint64) error {
	enc, err := pr.b.dev.CreateEncoder()
	if err != nil {
		return err
	}
	defer enc.Release()
	if err := enc.CopyBufferToBuffer(pr.out, 0, st, 0, size); err != nil {
		return err
	}
	cmd, err := enc.Finish()
	if err != nil {
		return err
	}
	defer cmd.Release()
	return pr.b.dev.Submit(cmd)
}

// measured is one probe's result: its rate (GB/s, GFLOP/s), the work
// of a pass (bytes, flops) and the fastest pass's time it is of, what
// its workgroups summed in the last pass (sums), the uniform it ran
// with (a pass's repetitions or trips) and its workgroups.
type measured struct {
	rate, work, sum float64
	t               time.Duration
	param           uint32
	groups          int
}

// newMeasured is the result of passes of work units each, the fastest
// taking t.
func newMeasured(work float64, t time.Duration, sum float64, param uint32, groups int) measured {
	return measured{rate(work, t), work, sum, t, param, groups}
}

// read measures the streaming read of a buffer of size bytes (a
// multiple of 16). Its sum is the buffer's (readSum) times the
// repetitions a pass made, unless the kernel skipped loads.
func (pr *probe) read(ctx context.Context, size uint64) (measured, error) {
	b := pr.b
	lim := min(b.lim.MaxBufferSize, b.lim.MaxStorageBufferBindingSize, 1<<32-16)
	if size < 16*probeWG || size%16 != 0 || size > lim {
		return measured{}, fmt.Errorf("a read probe of %d bytes: want a multiple of 16 from %d to %d", size, 16*probeWG, lim)
	}
	src, err := b.dev.CreateBuffer("attn ceilings read", size, wg.UsageStorage)
	if err != nil {
		return measured{}, err
	}
	pr.bufs = append(pr.bufs, src)
	fill, err := pr.pipeline("attn ceilings fill", fillSource, wg.BindStorage)
	if err != nil {
		return measured{}, err
	}
	fg, err := pr.group(fill, wg.Entry{Buffer: src, Size: size})
	if err != nil {
		return measured{}, err
	}
	vecs := size / 16
	groups := uint32(min(uint64(pr.maxGroups()), max(vecs/(probeWG*readLoads), 1)))
	if _, err := pr.run(wg.Dispatch{Pipeline: fill, Group: fg, Grid: [3]uint32{groups, 1, 1}}); err != nil {
		return measured{}, err
	}
	rp, err := pr.pipeline("attn ceilings read", readSource, wg.BindReadOnly, wg.BindStorage, wg.BindUniform)
	if err != nil {
		return measured{}, err
	}
	rg, err := pr.group(rp, wg.Entry{Buffer: src, Size: size}, wg.Entry{Buffer: pr.out, Size: pr.outBytes}, wg.Entry{Buffer: pr.params, Size: 16})
	if err != nil {
		return measured{}, err
	}
	// Each repetition sums the whole buffer again, which is past a GPU's
	// caches.
	t, reps, err := pr.best(ctx, wg.Dispatch{Pipeline: rp, Group: rg, Grid: [3]uint32{groups, 1, 1}}, 1, 256)
	if err != nil {
		return measured{}, err
	}
	sum, err := pr.sumsU32(int(groups))
	if err != nil {
		return measured{}, err
	}
	return newMeasured(float64(size)*float64(reps), t, float64(sum), reps, int(groups)), nil
}

// readLoads is the vec4 loads an invocation of the read probe makes
// a pass at least, where the buffer is large enough: four chains of
// loads in flight, each of a few.
const readLoads = 16

// fmaGroups is the FMA probe's grid: as many workgroups as a grid's
// dimension takes on a GPU, so that the last of many waves of them is
// a small part of the whole, and a few a core of the host on a
// CPU-type adapter, which runs each on one thread.
func (pr *probe) fmaGroups() int {
	if pr.cpu {
		return max(16, 4*runtime.NumCPU())
	}
	return pr.maxGroups()
}

// fma measures the FMA probe, in f16 where f16 is set. trips, when not
// 0, fixes a pass's trips of its loop (tests); else they are sized to
// the probe's target.
func (pr *probe) fma(ctx context.Context, f16 bool, trips uint32) (measured, error) {
	src, label := fmaSource(false), "attn ceilings fma f32"
	if f16 {
		src, label = fmaSource(true), "attn ceilings fma f16"
	}
	p, err := pr.pipeline(label, src, wg.BindStorage, wg.BindUniform)
	if err != nil {
		return measured{}, err
	}
	g, err := pr.group(p, wg.Entry{Buffer: pr.out, Size: pr.outBytes}, wg.Entry{Buffer: pr.params, Size: 16})
	if err != nil {
		return measured{}, err
	}
	groups := pr.fmaGroups()
	first, most := uint32(16), uint32(1<<20)
	if trips > 0 {
		first, most = trips, trips
	}
	t, trips, err := pr.best(ctx, wg.Dispatch{Pipeline: p, Group: g, Grid: [3]uint32{uint32(groups), 1, 1}}, first, most)
	if err != nil {
		return measured{}, err
	}
	sum, err := pr.sums(groups)
	if err != nil {
		return measured{}, err
	}
	return newMeasured(fmaFlops(groups, probeWG, int(trips), fmaChains, fmaDepth, 4), t, sum, trips, groups), nil
}

// reduceWGSL is the probes' end: each invocation's value v, of type t
// (out's element), summed over the workgroup in workgroup memory, and
// the sum written to out at the workgroup's index, so that no load or
// fma the sum depends on is dead.
func reduceWGSL(t string) string {
	return strings.ReplaceAll(reduceTmpl, "ELEM", t)
}

const reduceTmpl = `
var<workgroup> part: array<ELEM, WG>;

fn reduce(l: u32, v: ELEM, w: u32) {
    part[l] = v;
    for (var h = WG / 2u; h > 0u; h /= 2u) {
        workgroupBarrier();
        if (l < h) {
            part[l] += part[l + h];
        }
    }
    if (l == 0u) {
        out[w] = part[0];
    }
}
`

// fillSource writes word e of the read probe's buffer as fillHash(e),
// through a grid-stride loop.
var fillSource = fmt.Sprintf(`const WG = %du;
@group(0) @binding(0) var<storage, read_write> src: array<vec4<u32>>;

// hash4 is fillHash of each lane.
fn hash4(x0: vec4<u32>) -> vec4<u32> {
    var x = x0;
    x ^= x >> vec4<u32>(16u);
    x *= vec4<u32>(0x7feb352du);
    x ^= x >> vec4<u32>(15u);
    x *= vec4<u32>(0x846ca68bu);
    x ^= x >> vec4<u32>(16u);
    return x;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let n = arrayLength(&src);
    for (var i = g.x; i < n; i += nw.x * WG) {
        let e = 4u * i;
        src[i] = hash4(vec4<u32>(e, e + 1u, e + 2u, e + 3u));
    }
}
`, probeWG)

// readSource is the streaming read: P.x passes over the buffer, each a
// grid-stride loop of coalesced vec4 loads into four accumulators (four
// loads in flight an invocation), then the workgroup's sum. It adds the
// words as u32s, modulo 2³², so that its sum is exact whatever the
// buffer's size and the passes (f32 sums of a hash were not).
var readSource = fmt.Sprintf(`const WG = %du;
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> P: vec4<u32>;

%s
@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) l: u32, @builtin(workgroup_id) w: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let n = arrayLength(&src);
    let stride = nw.x * WG;
    var s0 = vec4<u32>();
    var s1 = vec4<u32>();
    var s2 = vec4<u32>();
    var s3 = vec4<u32>();
    for (var r = 0u; r < P.x; r++) {
        // Each pass starts each workgroup at another one's place, so that
        // no pass's loads repeat another's at the same invocation: a
        // compiler may otherwise load once for every pass (NVIDIA's read
        // 24 TB/s of HBM3e's 4.8 on an H200 before this).
        var i = ((w.x + r) %% nw.x) * WG + l;
        for (; i + 3u * stride < n; i += 4u * stride) {
            s0 += src[i];
            s1 += src[i + stride];
            s2 += src[i + 2u * stride];
            s3 += src[i + 3u * stride];
        }
        for (; i < n; i += stride) {
            s0 += src[i];
        }
    }
    let s = (s0 + s1) + (s2 + s3);
    reduce(l, (s.x + s.y) + (s.z + s.w), w.x);
}
`, probeWG, reduceWGSL("u32"))

// fmaSource is the FMA probe in f32, or f16 where f16 is set: fmaChains
// accumulators, each of its own start (the invocation's index, so that
// nothing folds to a constant), stepped P.x trips of fmaDepth fmas
// a = a·¾ + ¼ (which keeps them in [0, 1], towards 1), then summed
// over the workgroup.
func fmaSource(f16 bool) string {
	t, enable := "f32", ""
	if f16 {
		t, enable = "f16", "enable f16;\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%sconst WG = %du;\n", enable, probeWG)
	b.WriteString("@group(0) @binding(0) var<storage, read_write> out: array<f32>;\n")
	b.WriteString("@group(0) @binding(1) var<uniform> P: vec4<u32>;\n")
	b.WriteString(reduceWGSL("f32"))
	b.WriteString("\n@compute @workgroup_size(WG)\n")
	b.WriteString("fn main(@builtin(local_invocation_index) l: u32, @builtin(workgroup_id) w: vec3<u32>) {\n")
	fmt.Fprintf(&b, "    let m = vec4<%s>(0.75);\n    let c = vec4<%s>(0.25);\n", t, t)
	for k := range fmaChains {
		fmt.Fprintf(&b, "    var a%d = vec4<%s>(vec4<u32>(l + %du, l + %du, l + %du, l + %du) & vec4<u32>(15u)) * %s(0.0625);\n",
			k, t, 4*k, 4*k+1, 4*k+2, 4*k+3, t)
	}
	b.WriteString("    for (var i = 0u; i < P.x; i++) {\n")
	for range fmaDepth {
		for k := range fmaChains {
			fmt.Fprintf(&b, "        a%d = fma(a%d, m, c);\n", k, k)
		}
	}
	b.WriteString("    }\n")
	b.WriteString("    let s = ")
	for k := range fmaChains {
		if k > 0 {
			b.WriteString(" + ")
		}
		fmt.Fprintf(&b, "vec4<f32>(a%d)", k)
	}
	b.WriteString(";\n    reduce(l, (s.x + s.y) + (s.z + s.w), w.x);\n}\n")
	return b.String()
}
