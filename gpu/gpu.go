//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/wg"
	"github.com/gogpu/gputypes"
)

// Backend runs attention as WGSL compute shaders on one WebGPU device. It
// is safe for concurrent use: every call into the device is serialised by
// one lock, because WebGPU's error scopes belong to the device, not to a
// goroutine; but the lock is held to record and submit work, never
// across a wait for the device (waitIdle, readChunk), so that goroutines
// sharing a Backend record while others wait.
type Backend struct {
	mu     sync.Mutex
	closed bool
	// waiting counts the goroutines waiting for the device without mu
	// (await); idle, on mu, wakes Close when the last is done, which
	// releases nothing before then.
	waiting int
	idle    sync.Cond
	inst    *wg.Instance
	adapter *wg.Adapter
	dev     *wg.Device // with attn's handle to its queue
	info    backend.Info
	lim     gputypes.Limits

	// sgSizes is the subgroup sizes measureSubgroups found, measured once
	// (WebGPU).
	sgSizes struct {
		once   sync.Once
		lo, hi uint32
	}

	bufs    map[*buffer]struct{}
	pipes   map[string]*pipeline
	specs   map[specEntry]*pipeline // pipes by their Spec value, looked up without building a key
	choices choiceMemo              // kernelFor's answers
	staging *wg.Buffer              // MapRead staging for Read, stagingBytes long, nil while a read holds it (takeStaging)
	dummyR  *wg.Buffer              // bound in place of an absent read-only operand
	dummyW  *wg.Buffer              // bound in place of an absent output

	allocated, peak int64 // bytes of live buffers attn allocated, and their maximum

	// shared is set when the device is the caller's (NewWithDevice):
	// Close then leaves the device to the caller, and inst and adapter
	// are nil.
	shared bool
	// pending is the work steps recorded and not yet submitted (step.go).
	pending recorded
	// spare is the arena of the last submission, kept for the next one
	// (record): the queue writes it after the work that read it.
	spare *arena
	// pool keeps submitted work's scratch for later ops (pool.go).
	pool scratchPool
	// groups keeps bind groups for reuse, and foreign is the buffers of
	// the caller's (Import) that no kept group may bind (groups.go).
	groups  bindGroups
	foreign map[*wg.Buffer]struct{}
	// spareCall is the last Fused call's state, its slices' room kept
	// for the next (fused.go).
	spareCall *fusedCall

	// aplan is how ops cut their work and which fused kernel runs, from
	// the adapter's type or $ATTN_GPU_PLAN (internal/plan/adapterplan.go).
	aplan plan.AdapterPlan
	// envTune is the sizes ATTN_GPU_TUNE sets, as it sets them: aplan's
	// are those of them the device runs (applyTuning).
	envTune plan.Tuning
	// target is the device ATTN_GPU_TARGET plans for, nil for the
	// adapter: its subgroup sizes, workgroup memory and invocations
	// stand in for the device's in the plan (aim), and no op
	// dispatches (submitRecorded).
	target *plan.Target

	// budget is the work, in floating-point operations, that one
	// submission may carry: enough to keep the device busy, little enough
	// that no submission runs near Poll's 5 s and a cancelled ctx is
	// noticed quickly.
	budget float64

	// Device timing (timing.go): its state while on, why the device
	// cannot time its work (nil when it can), and the calibrated period.
	timing   *timer
	noTiming error
	period   period
	kernels  map[string]time.Duration // KernelTimes: of the last DeviceTime, nil when not timed apart
}

var _ backend.Backend = (*Backend)(nil)

const stagingBytes = 16 << 20

// New opens the adapter chosen by ATTN_ADAPTER (by name) or, without it,
// the high-performance Vulkan adapter, and a device with the adapter's
// own limits (WebGPU's defaults under ATTN_GPU_LIMITS=default), planning
// work for the adapter's type unless ATTN_GPU_PLAN says otherwise. Under
// the hardware plan it reads the tuning file Tune wrote for this adapter,
// driver, binding and kernels (ATTN_GPU_TUNE_FILE), whichever module
// version of attn wrote it, and runs the shape classes it tunes with
// their sizes, the defaults elsewhere; a file it cannot use whole is
// ignored, and a setting the device cannot run refused (its default
// runs), each with one warning on stderr a process. The
// error wraps backend.ErrUnavailable when there is no usable adapter or
// ATTN_GPU_PLAN or ATTN_GPU_LIMITS names no choice.
func New() (*Backend, error) { return newBackend(true) }

// newBackend is New, reading the tuning file where readTuned says (a
// sweep starts from the plan's own sizes).
func newBackend(readTuned bool) (*Backend, error) {
	inst, err := newInstance()
	if err != nil {
		return nil, err
	}
	adapter, err := chooseAdapter(inst)
	if err != nil {
		inst.Release()
		return nil, err
	}
	info := describeAdapter(adapter)
	aplan, err := plan.FromEnv(info.Adapter.DeviceType)
	if err != nil {
		adapter.Release()
		inst.Release()
		return nil, backend.Errorf(backend.ErrUnavailable, "gpu: %v", err)
	}
	limits, defaults, err := askLimits(adapter)
	if err != nil {
		adapter.Release()
		inst.Release()
		return nil, backend.Errorf(backend.ErrUnavailable, "gpu: %v", err)
	}
	dev, err := adapter.RequestDevice("attn", requiredFeatures(adapter), limits)
	if err != nil {
		adapter.Release()
		inst.Release()
		return nil, backend.Errorf(backend.ErrUnavailable, "gpu: requesting a device: %v", err)
	}
	b := open(dev, info, aplan)
	b.inst, b.adapter = inst, adapter
	if defaults {
		b.info.Detail += "; WebGPU's default limits (" + envLimits + ")"
	}
	if err := b.aim(); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.init(); err != nil {
		b.Close()
		return nil, err
	}
	b.applyTuning(readTuned)
	return b, nil
}

// open makes the Backend of device dev, of an adapter info describes,
// that plans as aplan says; the caller sets what else it owns and calls
// init, then applyTuning.
func open(dev *wg.Device, info backend.Info, aplan plan.AdapterPlan) *Backend {
	b := &Backend{
		dev:   dev,
		info:  info,
		lim:   dev.Limits(),
		aplan: aplan,
		bufs:  map[*buffer]struct{}{},
		pipes: map[string]*pipeline{},
	}
	b.idle.L = &b.mu
	b.info.Limits = b.lim
	adapterTimes := info.Features.Contains(gputypes.FeatureTimestampQuery)
	b.info.Features = dev.Features()
	b.aplan = aplan.On(b.info.Features, wg.CompilesF16)
	b.noTiming = timingSupport(adapterTimes, b.info.Features.Contains(gputypes.FeatureTimestampQuery), false)
	b.budget = 4e11
	if b.info.Adapter.DeviceType == gputypes.DeviceTypeCPU {
		b.budget = 1.5e9
	}
	return b
}

func (b *Backend) init() error {
	if err := b.applyChecks(); err != nil {
		return err
	}
	var err error
	usage := wg.UsageStorage | wg.UsageCopyDst | wg.UsageCopySrc
	if b.dummyR, err = b.dev.CreateBuffer("attn dummy read", 256, usage); err != nil {
		return backend.Errorf(backend.ErrUnavailable, "gpu: creating a buffer: %v", err)
	}
	if b.dummyW, err = b.dev.CreateBuffer("attn dummy write", 256, usage); err != nil {
		return backend.Errorf(backend.ErrUnavailable, "gpu: creating a buffer: %v", err)
	}
	b.staging, err = b.dev.CreateBuffer("attn staging", stagingBytes, wg.UsageMapRead|wg.UsageCopyDst)
	if err != nil {
		return backend.Errorf(backend.ErrUnavailable, "gpu: creating the staging buffer: %v", err)
	}
	if b.aplan.WantsSubgroupMin() {
		// lanedecode.wgsl's teams of lanes must lie within a subgroup:
		// the least size the binding reports, else measured once (a
		// small kernel's compile and run); unknown leaves the plan on
		// fuseddecode.wgsl. A target's is its own.
		if b.target != nil {
			b.aplan = b.aplan.WithSubgroupMin(b.target.SubgroupMin)
		} else if f := b.WebGPU(); f.SubgroupMinSize > 0 {
			b.aplan = b.aplan.WithSubgroupMin(int(f.SubgroupMinSize))
		}
	}
	return nil
}

// aim makes b plan for the device ATTN_GPU_TARGET names, if it names
// one (plan.TargetFromEnv): its workgroup memory and invocations in
// place of the device's limits where the plan reads them, its least
// subgroup size in place of the device's (init), and no dispatch
// (submitRecorded). The kernels are compiled as that device would
// compile them, to be counted; their answers are not computed. Called
// between open and init.
func (b *Backend) aim() error {
	t, ok, err := plan.TargetFromEnv()
	if err != nil {
		return backend.Errorf(backend.ErrUnavailable, "gpu: %v", err)
	}
	if !ok {
		return nil
	}
	b.target = &t
	b.lim.MaxComputeWorkgroupStorageSize = uint32(t.Memory)
	b.lim.MaxComputeInvocationsPerWorkgroup = uint32(t.Invocations)
	b.lim.MaxComputeWorkgroupSizeX = uint32(t.Invocations)
	b.info.Detail += "; " + t.String()
	return nil
}

// envChecks names the variable that sets which of naga's runtime checks
// the kernels keep (wg.RuntimeChecks): on (wgpu's own: index clamps and
// loop counters), bounds (the clamps alone, the default build's
// default), off (neither: wgpu-native's trusted modules). The gogpu
// build compiles with neither, go-webgpu's with both, and each refuses
// the others.
const envChecks = "ATTN_GPU_CHECKS"

// applyChecks sets the device's runtime checks from ATTN_GPU_CHECKS
// before any kernel compiles, and says which in Info().Detail.
func (b *Backend) applyChecks() error {
	if v := strings.TrimSpace(os.Getenv(envChecks)); v != "" {
		c, err := wg.ParseRuntimeChecks(v)
		if err == nil {
			err = b.dev.SetRuntimeChecks(c)
		}
		if err != nil {
			return backend.Errorf(backend.ErrUnavailable, "gpu: %s: %v", envChecks, err)
		}
	}
	b.info.Detail += "; runtime checks " + b.dev.RuntimeChecks().String()
	return nil
}

// Name returns "gpu".
func (b *Backend) Name() string { return "gpu" }

// Info describes the adapter in gputypes terms.
func (b *Backend) Info() backend.Info { return b.info }

// Caps reports the full contract, the half dtypes included; the largest
// buffer is the device's maxBufferSize in float32s, for every dtype.
// Float32 subnormals may flush to zero: WGSL leaves that to the device,
// and NVIDIA's (the H100's Vulkan driver) flushes them where lavapipe
// keeps them.
func (b *Backend) Caps() backend.Caps {
	return backend.Caps{
		Staged: true, Fused: true, Bias: true, KeepMask: true, Causal: true,
		Variants: true, GQA: true, BNHD: true, LSE: true, Half: true, Quant8: true, Quant4: true, Seqs: true, VFromK: true, Indices: true, Blocks: true,
		BackwardBlocks: true, BackwardIndices: true, FlushesSubnormals: true,
		MaxBufferLen: int(b.lim.MaxBufferSize / 4),
	}
}

// Memory reports the bytes of device memory held by live buffers this
// backend allocated (inputs, outputs, the scratch of its ops and the
// scratch it keeps for reuse, which Trim gives back), now and at their
// peak since the backend opened or ResetPeak last ran.
func (b *Backend) Memory() (live, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.allocated, b.peak
}

// ResetPeak starts a new peak at the bytes live now, so a caller can
// measure the peak of one stretch of work.
func (b *Backend) ResetPeak() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.peak = b.allocated
}

// Sync submits the work steps have recorded and waits until the device
// has finished all submitted work (on a shared device, the caller's
// too). Every op outside a step already waits for its own work, so this
// only matters for Write and steps.
func (b *Backend) Sync() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return backend.Errorf(backend.ErrReleased, "gpu: sync: the backend is closed (Close was called)")
	}
	if err := b.flush(); err != nil {
		return backend.Wrapf(err, "gpu: sync")
	}
	return b.waitIdle()
}

// waitIdle waits for the queue to drain: for everything submitted so far,
// whose completion it asks the queue to report (onWorkDone). The caller
// holds b.mu, which waitIdle releases while it waits (await) and holds
// again on return.
func (b *Backend) waitIdle() error {
	p, err := b.dev.OnWorkDone()
	if err != nil {
		return backend.Wrapf(err, "gpu")
	}
	if err := b.await(p); err != nil {
		return fmt.Errorf("%w: %w", backend.ErrDeviceLost, err)
	}
	return nil
}

// await waits for p's callback without holding b.mu, so that other
// goroutines record and submit meanwhile: the caller holds b.mu, which
// await releases for the wait and holds again on return. Whoever waits
// polls the device; wgpu-core's poll is safe from several threads, and
// the callbacks it runs only store into p's C memory (wg's wait). Close
// releases nothing while a wait is under way.
func (b *Backend) await(p *wg.Pending) error {
	spin := spinFor(b.aplan)
	b.waiting++
	b.mu.Unlock()
	err := p.Wait(spin)
	b.mu.Lock()
	if b.waiting--; b.waiting == 0 {
		b.idle.Broadcast()
	}
	return err
}

// Close submits what steps recorded, waits for the device and for the
// waits of other goroutines under way, and releases
// every buffer, pipeline and the device itself — on a device of the
// caller's (NewWithDevice) only what attn created: its buffers (imported
// ones drop attn's reference only), pipelines and its handle to the
// queue, never the device or the adapter. Later calls return
// ErrReleased; closing twice is a no-op.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	var err error
	if b.dev != nil {
		err = errors.Join(b.flush(), b.waitIdle())
	}
	// Waits begun before Close (an op's, a Read's) end on the device
	// and its buffers, which stay until then.
	for b.waiting > 0 {
		b.idle.Wait()
	}
	b.stopTiming()
	b.dropGroups() // nothing is pending: released now
	for buf := range b.bufs {
		buf.free()
	}
	clear(b.bufs)
	for _, p := range b.pipes {
		p.release()
	}
	clear(b.pipes)
	clear(b.specs)
	for _, x := range []*wg.Buffer{b.staging, b.dummyR, b.dummyW} {
		if x != nil {
			b.destroy(x)
		}
	}
	b.staging, b.dummyR, b.dummyW = nil, nil, nil
	b.runAfter() // what free postponed, in case a flush failed to run it
	b.trim()
	if b.spare != nil {
		b.destroy(b.spare.buf)
		b.spare = nil
	}
	if b.dev != nil {
		b.dev.Release() // on a caller's device (shared), only attn's handle to the queue
	}
	if b.adapter != nil {
		b.adapter.Release()
	}
	if b.inst != nil {
		b.inst.Release()
	}
	b.dev, b.adapter, b.inst = nil, nil, nil
	b.allocated = 0
	return err
}

// lock takes the device lock for op after checking ctx and that the
// backend is open; the caller unlocks.
func (b *Backend) lock(ctx context.Context, op string) error {
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return backend.Wrapf(err, "gpu: %s", op)
		}
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return backend.Errorf(backend.ErrReleased, "gpu: %s: the backend is closed (Close was called)", op)
	}
	return nil
}
