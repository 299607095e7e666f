//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"time"
	"unsafe"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/wg"
)

// Device time (backend.DeviceTimer).
//
// Each command buffer encode makes gets a timestamp written on its
// encoder before its compute pass and one after it (wgpu-native 0.17 has
// WriteTimestamp between passes, not the pass-level timestamp writes;
// wgpu-native 29 has both, and attn keeps the encoder's, which its
// timestamp-query-inside-encoders feature allows), in pair i of one
// query set. DeviceTime resolves the pairs written since
// the last read into a buffer, copies it to a mapped one and sums the
// spans: an op of several submissions counts each submission's span and
// not the host's gaps between them. Nothing is read while ops run, so a
// timed op's wall time gains only the two timestamp commands.
//
// Where the device also has timestamps inside compute passes
// (wgpu-native 29's timestamp-query-inside-passes feature, which New
// requests with TimestampQuery where the adapter offers it), a
// submission's pass writes a timestamp before each dispatch and one
// after the last, into a second query set (timer.kq): consecutive ones
// bracket each kernel, whose span DeviceTime attributes to the kernel's
// name (KernelTimes). They lie between the encoder's pair, so the
// kernels' sum is at most the submission's span; what it lacks is the
// pass's own start and end. On Vulkan a timestamp is written once the
// commands before it are done (wgpu-hal writes at the bottom of the
// pipe), so on a GPU that overlaps independent dispatches a kernel's
// span is from its predecessors' end to its own.
//
// wgpu-core 0.17 resolves a timestamp query to the raw counter value
// (vkCmdCopyQueryPoolResults of 64-bit results on Vulkan); the counter's
// period, Vulkan's VkPhysicalDeviceLimits::timestampPeriod, is what
// wgpu's Queue::get_timestamp_period returns, and neither wgpu-native
// 0.17 nor 27 exports a function for it (nor the counter's valid bits). So the
// period is calibrated against the host's monotonic clock when timing is
// turned on (calibrate), and a counter that wraps is read as one of as
// many bits as the earlier value has (ticksBetween).

// timerPairs is the most submissions timed between two reads: a query
// set holds at most wg.MaxQueries queries (8192 in wgpu-core 0.17, 4096
// in 29).
const timerPairs = wg.MaxQueries / 2

// timer is the state of device timing on a Backend while it is on.
type timer struct {
	qs       *wg.QuerySet
	resolved *wg.Buffer // QueryResolve | CopySrc: the queries as resolved
	readback *wg.Buffer // MapRead | CopyDst: their copy the host maps (and kq's after them), nil while a read holds it
	n        int        // pairs written since the last read
	overflow bool       // a submission was left untimed: no pair was free
	since    time.Time  // when the count started

	// The kernels' timestamps, where the device writes them inside
	// passes (kq nil where it does not): wg.MaxQueries of them, kn
	// written since the last read, by the submissions spans lists; a
	// submission whose dispatches did not fit sets kover, and the read
	// then has no kernel times. pending is the span of the command
	// buffer being encoded, counted by finish once it exists.
	kq        *wg.QuerySet
	kresolved *wg.Buffer
	kn        int
	kover     bool
	spans     []kernelSpan
	pending   *kernelSpan
}

// kernelSpan is the kernel timestamps of one submission: from query
// first, one before each of the kernels names and one after the last.
type kernelSpan struct {
	first int
	names []string
}

// period is a calibrated timestamp period: nanoseconds a tick, and the
// relative half-width of the bracket it was taken from.
type period struct {
	ns, tol float64
}

// timingSupport says why a device cannot time its work, nil when it can:
// it needs the TimestampQuery feature, which New requests whenever the
// adapter offers it and a caller's device (NewWithDevice) may have been
// requested without.
func timingSupport(adapterHas, deviceHas, shared bool) error {
	switch {
	case deviceHas:
		return nil
	case shared && adapterHas:
		return backend.Errorf(backend.ErrUnsupported, "gpu: no device time: the caller's device was requested without the TimestampQuery feature, which its adapter offers")
	case shared:
		return backend.Errorf(backend.ErrUnsupported, "gpu: no device time: the caller's device has no TimestampQuery feature")
	}
	return backend.Errorf(backend.ErrUnsupported, "gpu: no device time: the adapter offers no TimestampQuery feature")
}

// TimeDevice turns device timing on or off (backend.DeviceTimer). The
// first time it is turned on it calibrates the timestamp period, which
// takes 50 ms to 0.25 s of waiting on an idle host, and at most 1.55 s on
// a busy one (calRounds), during which other goroutines' ops run
// (untimed).
func (b *Backend) TimeDevice(on bool) error {
	if err := b.lock(nil, "time device"); err != nil {
		return err
	}
	defer b.mu.Unlock()
	if !on {
		b.stopTiming()
		return nil
	}
	if b.noTiming != nil {
		return b.noTiming
	}
	if b.timing != nil {
		return nil
	}
	// Work recorded before timing was on is not timed.
	if err := b.flush(); err != nil {
		return backend.Wrapf(err, "gpu: time device")
	}
	if b.period.ns == 0 {
		// Calibration waits and sleeps for some 0.2 s, with its own
		// queries and without holding b.mu between its submissions.
		b.mu.Unlock()
		p, err := b.calibrate()
		b.mu.Lock()
		if err != nil {
			return backend.Wrapf(err, "gpu: time device: calibrating the timestamp period")
		}
		if b.closed {
			return backend.Errorf(backend.ErrReleased, "gpu: time device: the backend is closed (Close was called)")
		}
		if b.period.ns == 0 { // else another goroutine's calibration came first
			b.period = p
		}
		if b.timing != nil {
			return nil
		}
		if err := b.flush(); err != nil {
			return backend.Wrapf(err, "gpu: time device")
		}
	}
	t, err := b.newTimer()
	if err != nil {
		return backend.Wrapf(err, "gpu: time device")
	}
	b.timing = t
	t.since = time.Now()
	return nil
}

// TimestampPeriod is the timestamp period DeviceTime converts ticks
// with, in nanoseconds a tick, and the relative uncertainty of its
// calibration; 0, 0 before device timing was first turned on.
func (b *Backend) TimestampPeriod() (ns, tol float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.period.ns, b.period.tol
}

// newTimer makes the query set and buffers of device timing. The caller
// holds b.mu.
func (b *Backend) newTimer() (*timer, error) {
	qs, err := b.dev.CreateTimestamps("attn timestamps", 2*timerPairs)
	if err != nil {
		return nil, err
	}
	t := &timer{qs: qs}
	size := uint64(16 * timerPairs)
	if _, passes := b.dev.TimestampsInside(); passes {
		if t.kq, err = b.dev.CreateTimestamps("attn kernel timestamps", wg.MaxQueries); err != nil {
			t.release()
			return nil, err
		}
		if t.kresolved, err = b.dev.CreateBuffer("attn kernel timestamps resolved", 8*wg.MaxQueries, wg.UsageQueryResolve|wg.UsageCopySrc); err != nil {
			t.release()
			return nil, err
		}
	}
	if t.resolved, err = b.dev.CreateBuffer("attn timestamps resolved", size, wg.UsageQueryResolve|wg.UsageCopySrc); err == nil {
		rsize := size
		if t.kq != nil {
			rsize += 8 * wg.MaxQueries
		}
		t.readback, err = b.dev.CreateBuffer("attn timestamps read", rsize, wg.UsageMapRead|wg.UsageCopyDst)
	}
	if err != nil {
		t.release()
		return nil, err
	}
	return t, nil
}

func (t *timer) release() {
	for _, x := range []*wg.Buffer{t.resolved, t.readback, t.kresolved} {
		if x != nil {
			x.Destroy()
		}
	}
	t.qs.Release()
	if t.kq != nil {
		t.kq.Release()
	}
}

// stopTiming turns timing off, submitting first the recorded work whose
// command buffers write into the query set. The caller holds b.mu.
func (b *Backend) stopTiming() {
	if b.timing == nil {
		return
	}
	b.flush() // a failure is among the steps' errors
	b.timing.release()
	b.timing = nil
}

// stampBefore writes the timestamp that opens the span of the command
// buffer enc records, when timing is on and a pair is free. The caller
// holds b.mu.
func (b *Backend) stampBefore(enc *wg.Encoder) error {
	t := b.timing
	if t == nil {
		return nil
	}
	t.pending = nil
	if t.n >= timerPairs {
		t.overflow = true
		return nil
	}
	return enc.WriteTimestamp(t.qs, uint32(2*t.n))
}

// finish writes the timestamp that closes enc's span, finishes enc, and
// counts the pair only once the command buffer exists, so that every
// pair counted is submitted (recorded work is submitted by the next
// flush at the latest) and no read waits on a query never written. The
// caller holds b.mu.
func (b *Backend) finish(enc *wg.Encoder) (*wg.CommandBuffer, error) {
	t := b.timing
	stamped := t != nil && t.n < timerPairs
	if stamped {
		if err := enc.WriteTimestamp(t.qs, uint32(2*t.n+1)); err != nil {
			return nil, err
		}
	}
	cmd, err := enc.Finish()
	if err == nil && stamped {
		t.n++
		if k := t.pending; k != nil {
			t.spans = append(t.spans, *k)
			t.kn = k.first + len(k.names) + 1
		}
	}
	if t != nil {
		t.pending = nil
	}
	return cmd, err
}

// computePass records ds, the dispatches of the kernels names, in one
// compute pass of enc, with a timestamp before each dispatch and one
// after the last where kernels are timed and their queries fit (finish
// counts them). The caller holds b.mu and called stampBefore.
func (b *Backend) computePass(enc *wg.Encoder, ds []wg.Dispatch, names []string) error {
	t := b.timing
	if t == nil || t.kq == nil || t.n >= timerPairs {
		return enc.ComputePass(ds)
	}
	if t.kn+len(ds)+1 > wg.MaxQueries {
		t.kover = true
		return enc.ComputePass(ds)
	}
	if err := enc.ComputePassStamped(ds, t.kq, uint32(t.kn)); err != nil {
		return err
	}
	t.pending = &kernelSpan{first: t.kn, names: names}
	return nil
}

// KernelTimes returns the device time of each kernel, by its name
// (shaders.Kernel.Name: "fuseddecode", "merge", "scores", "copy" …),
// summed over the ops whose device time the last DeviceTime returned
// (backend.KernelTimer); nil when they were not timed apart: a device
// without timestamps inside passes (the go-webgpu build's), or more
// dispatches since the read before than a query set holds.
func (b *Backend) KernelTimes() map[string]time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.kernels)
}

// DeviceTime submits what steps recorded, waits for the device, and
// returns the device time of the ops since timing was turned on or last
// read (backend.DeviceTimer).
func (b *Backend) DeviceTime() (time.Duration, error) {
	if err := b.lock(nil, "device time"); err != nil {
		return 0, err
	}
	defer b.mu.Unlock()
	t := b.timing
	if t == nil {
		if b.noTiming != nil {
			return 0, b.noTiming
		}
		return 0, errors.New("gpu: device time: timing is off (TimeDevice)")
	}
	if err := b.flush(); err != nil {
		return 0, backend.Wrapf(err, "gpu: device time")
	}
	n, overflow, since := t.n, t.overflow, t.since
	kn, kover, spans := t.kn, t.kover, t.spans
	t.n, t.overflow, t.since = 0, false, time.Now()
	t.kn, t.kover, t.spans = 0, false, nil
	b.kernels = nil
	if overflow {
		return 0, fmt.Errorf("gpu: device time: more than %d submissions since the last read; the later ones were not timed", timerPairs)
	}
	if n == 0 {
		return 0, nil
	}
	// The resolves run after every submission that wrote the queries, in
	// queue order, and before any later one writes them again, so the
	// queries are free for later ops from here on; readStamps waits for
	// them without b.mu.
	srcs := []stampSource{{t.qs, t.resolved, 2 * n}}
	if t.kq != nil && kn > 0 && !kover {
		srcs = append(srcs, stampSource{t.kq, t.kresolved, kn})
	}
	ticks, err := b.readStamps(srcs, &t.readback)
	if b.timing != t && t.readback != nil { // timing stopped while it read
		b.destroy(t.readback)
		t.readback = nil
	}
	if err != nil {
		return 0, backend.Wrapf(err, "gpu: device time")
	}
	now := time.Now()
	var sum uint64
	for i := 0; i < n; i++ {
		sum += ticksBetween(ticks[2*i], ticks[2*i+1])
	}
	d, err := spanOf(sum, b.period, now.Sub(since))
	if err == nil && len(srcs) > 1 {
		b.kernels = kernelTimes(ticks[2*n:], spans, b.period)
	}
	return d, err
}

// kernelTimes sums each kernel's spans, by name, from the kernel
// timestamps ticks that spans wrote, converted with period p.
func kernelTimes(ticks []uint64, spans []kernelSpan, p period) map[string]time.Duration {
	sums := map[string]uint64{}
	for _, s := range spans {
		for i, name := range s.names {
			sums[name] += ticksBetween(ticks[s.first+i], ticks[s.first+i+1])
		}
	}
	out := make(map[string]time.Duration, len(sums))
	for name, x := range sums {
		out[name] = time.Duration(math.Round(float64(x) * p.ns))
	}
	return out
}

// spanOf converts a sum of ticks to a duration with period p, refusing
// a result the host's clock shows cannot be right: the spans lie within
// the host's elapsed time (less the period's uncertainty), and a device
// that times nothing at all (a counter that does not advance) wrote
// equal stamps.
func spanOf(ticks uint64, p period, elapsed time.Duration) (time.Duration, error) {
	if ticks == 0 {
		return 0, errors.New("gpu: device time: every timestamp pair was equal; the device's counter does not advance")
	}
	ns := float64(ticks) * p.ns
	if ns*(1-p.tol) > float64(elapsed) {
		return 0, fmt.Errorf("gpu: device time: %d ticks of %.4g ns are %v, more than the %v that passed on the host (a counter wrapped, or the period is wrong)",
			ticks, p.ns, time.Duration(ns), elapsed)
	}
	return time.Duration(math.Round(ns)), nil
}

// ticksBetween is the ticks from timestamp t0 to a later t1. A counter
// of fewer than 64 valid bits wraps to 0 past its largest value, and
// wgpu-native 0.17 does not say how many bits it has: a t1 below t0 is
// read as a wrap of a counter with as many bits as t0 has (t0 ≥ half
// the counter's range, as it is near a wrap unless the span is longer
// than half the range).
func ticksBetween(t0, t1 uint64) uint64 {
	if t1 >= t0 {
		return t1 - t0
	}
	k := bits.Len64(t0)
	if k == 64 {
		return t1 - t0 // modulo 2⁶⁴
	}
	return 1<<k - t0 + t1
}

// stampSource is the first count queries of a query set, and the buffer
// they are resolved into.
type stampSource struct {
	qs       *wg.QuerySet
	resolved *wg.Buffer
	count    int
}

// readStamps resolves the queries of each source into its resolved
// buffer and reads them back, one source's after another's, through
// *readback, which it holds (nil) for the read, or through a buffer of
// its own when another read holds it. It submits the resolves, in one
// command buffer, under b.mu, which the caller holds, releases b.mu
// while it waits for the mapping (await), and holds it again on return.
func (b *Backend) readStamps(srcs []stampSource, readback **wg.Buffer) ([]uint64, error) {
	count := 0
	for _, s := range srcs {
		count += s.count
	}
	size := uint64(8 * count)
	rb := *readback
	*readback = nil
	if rb == nil {
		var err error
		if rb, err = b.dev.CreateBuffer("attn timestamps read", (size+15)&^15, wg.UsageMapRead|wg.UsageCopyDst); err != nil {
			return nil, err
		}
	}
	done := func() { // keep rb for the next read unless another took its place
		if *readback == nil && !b.closed {
			*readback = rb
		} else {
			b.destroy(rb)
		}
	}
	enc, err := b.dev.CreateEncoder()
	if err != nil {
		done()
		return nil, err
	}
	defer enc.Release()
	at := uint64(0)
	for _, s := range srcs {
		if err := enc.ResolveQuerySet(s.qs, 0, uint32(s.count), s.resolved, 0); err != nil {
			done()
			return nil, err
		}
		if err := enc.CopyBufferToBuffer(s.resolved, 0, rb, at, uint64(8*s.count)); err != nil {
			done()
			return nil, err
		}
		at += uint64(8 * s.count)
	}
	cmd, err := enc.Finish()
	if err != nil {
		done()
		return nil, err
	}
	defer cmd.Release()
	if err := b.dev.Submit(cmd); err != nil {
		done()
		return nil, err
	}
	p, err := b.dev.MapAsync(rb, wg.MapRead, 0, size)
	if err != nil {
		done()
		return nil, err
	}
	if err := b.await(p); err != nil {
		b.destroy(rb)
		return nil, fmt.Errorf("%w: %w", backend.ErrDeviceLost, err)
	}
	mapped := rb.Mapped(0, size)
	out := make([]uint64, count)
	copy(out, unsafe.Slice((*uint64)(unsafe.Pointer(&mapped[0])), count))
	err = rb.Unmap()
	done()
	if err != nil {
		return nil, err
	}
	return out, nil
}

// calibrate measures the timestamp period against the host's monotonic
// clock: a submission writes a stamp, the host waits calGap, another
// submission writes a second. The device wrote the first between the
// host's submit and the end of its wait, and the second likewise, so
// the ticks between them span at least the host's time from the first
// wait's end to the second submit and at most the time from the first
// submit to the second wait's end. The narrowest such bracket gives the
// period, its midpoint, with its half-width as the uncertainty: a
// submission's round trip over the gap, a small part of calGap even on
// lavapipe on a busy host (less on a discrete GPU, whose round trip is
// shorter). Its stamps go to a query set of its own, so that other
// goroutines' timed work, submitted meanwhile, neither disturbs nor is
// disturbed by them. The caller does not hold b.mu: calibrate takes it
// to submit and read, never across a wait or the sleep.
func (b *Backend) calibrate() (period, error) {
	if err := b.lock(nil, "calibrate"); err != nil {
		return period{}, err
	}
	qs, err := b.dev.CreateTimestamps("attn calibration", 2)
	if err != nil {
		b.mu.Unlock()
		return period{}, err
	}
	resolved, err := b.dev.CreateBuffer("attn calibration resolved", 16, wg.UsageQueryResolve|wg.UsageCopySrc)
	b.mu.Unlock()
	if err != nil {
		qs.Release()
		return period{}, err
	}
	var readback *wg.Buffer
	defer func() {
		b.mu.Lock()
		for _, x := range []*wg.Buffer{resolved, readback} {
			if x != nil {
				b.destroy(x)
			}
		}
		qs.Release()
		b.mu.Unlock()
	}()
	best := period{tol: math.Inf(1)}
	gap := calGap
	for round := 0; round < calRounds && best.tol > calGoodTol; round++ {
		var h [4]time.Time
		h[0] = time.Now()
		if err := b.stampAlone(qs, 0); err != nil {
			return period{}, err
		}
		h[1] = time.Now()
		time.Sleep(gap)
		h[2] = time.Now()
		if err := b.stampAlone(qs, 1); err != nil {
			return period{}, err
		}
		h[3] = time.Now()
		if err := b.lock(nil, "calibrate"); err != nil {
			return period{}, err
		}
		ts, err := b.readStamps([]stampSource{{qs, resolved, 2}}, &readback)
		b.mu.Unlock()
		if err != nil {
			return period{}, err
		}
		p, err := bracket(ticksBetween(ts[0], ts[1]), h[2].Sub(h[1]), h[3].Sub(h[0]))
		if err != nil {
			return period{}, err
		}
		if p.tol < best.tol {
			best = p
		}
		if p.tol > calMaxTol {
			gap *= 2
		}
	}
	if best.tol > calMaxTol {
		return period{}, fmt.Errorf("the narrowest of %d brackets, of %v to %v, is ±%.1f%%, wider than ±%.0f%%: the host was too busy to time the device's clock", calRounds, calGap, gap/2, 100*best.tol, 100*calMaxTol)
	}
	return best, nil
}

// Calibration: brackets of calGap until one is within calGoodTol,
// calRounds at most; if none is within calMaxTol there is no period.
// After a bracket wider than calMaxTol the gap doubles: a bracket's
// width is a submission's round trip, whatever the gap, so a busy
// host's gaps of up to 800 ms (1.55 s in all) bring it within calMaxTol
// unless every round trip took more than 40 ms, when the host cannot
// time its device anyway. An idle host waits 50 to 250 ms, as before.
const (
	calRounds  = 5
	calGap     = 50 * time.Millisecond
	calGoodTol = 0.0025
	calMaxTol  = 0.05
)

// bracket is the period of ticks that took at least lo and at most hi.
func bracket(ticks uint64, lo, hi time.Duration) (period, error) {
	if ticks == 0 {
		return period{}, fmt.Errorf("two timestamps %v apart are equal: the device's counter does not advance", lo)
	}
	if lo <= 0 || hi < lo {
		return period{}, fmt.Errorf("the host's bracket [%v, %v] is empty", lo, hi)
	}
	a, z := float64(lo)/float64(ticks), float64(hi)/float64(ticks)
	mid := (a + z) / 2
	return period{ns: mid, tol: (z - a) / 2 / mid}, nil
}

// stampAlone submits, after the recorded work, a command buffer that
// writes only the timestamp of query i of qs, and waits for it. The
// caller does not hold b.mu: stampAlone takes it to submit, and waits
// without it.
func (b *Backend) stampAlone(qs *wg.QuerySet, i uint32) error {
	if err := b.lock(nil, "calibrate"); err != nil {
		return err
	}
	defer b.mu.Unlock()
	enc, err := b.dev.CreateEncoder()
	if err != nil {
		return err
	}
	defer enc.Release()
	if err := enc.WriteTimestamp(qs, i); err != nil {
		return err
	}
	cmd, err := enc.Finish()
	if err != nil {
		return err
	}
	defer cmd.Release()
	if err := b.flush(); err != nil {
		return err
	}
	if err := b.dev.Submit(cmd); err != nil {
		return err
	}
	return b.waitIdle()
}
