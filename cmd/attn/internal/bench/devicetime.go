package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/attn-go/attn/backend"
)

// deviceTime collects the device's own time of each timed run of a point
// on a backend.DeviceTimer (Point.GPUS). A nil *deviceTime, a backend
// that cannot time its device, collects nothing.
type deviceTime struct {
	t       backend.DeviceTimer
	times   []time.Duration
	err     error                      // the first run whose device time was no number
	kernels []map[string]time.Duration // each timed run's kernel times (backend.KernelTimer), nil for a run without
}

// startDeviceTime turns device timing on for a point on be; nil where be
// is no DeviceTimer or its device cannot time its work (the report's
// BackendInfo.DeviceTime says why).
func startDeviceTime(be backend.Backend) *deviceTime {
	t, ok := be.(backend.DeviceTimer)
	if !ok || t.TimeDevice(true) != nil {
		return nil
	}
	return &deviceTime{t: t}
}

// read takes the device time of the run that just ended, keeping it
// when the run was timed (after the warm-up, the count starts afresh).
func (d *deviceTime) read(timed bool) {
	if d == nil {
		return
	}
	x, err := d.t.DeviceTime()
	switch {
	case !timed:
	case err != nil:
		if d.err == nil {
			d.err = fmt.Errorf("run %d: %w", len(d.times)+1, err)
		}
	default:
		d.times = append(d.times, x)
		var ks map[string]time.Duration
		if kt, ok := d.t.(backend.KernelTimer); ok {
			ks = kt.KernelTimes()
		}
		d.kernels = append(d.kernels, ks)
	}
}

// set records the median device time of the timed runs in pt, or, when
// a run gave no number, none and why in pt.Notes: a median over some of
// the runs would be of other runs than the wall time's.
func (d *deviceTime) set(pt *Point) {
	if d == nil || len(d.times) == 0 && d.err == nil {
		return
	}
	if d.err != nil {
		note := "no gpu_s: " + oneLine(d.err.Error())
		if pt.Notes != "" {
			note = pt.Notes + "; " + note
		}
		pt.Notes = note
		return
	}
	pt.GPUS = median(d.times).Seconds()
	pt.GPUKernels = kernelMedians(d.kernels)
}

// kernelMedians is each kernel's median time over the runs, in seconds
// (a run without the kernel counting 0); nil unless every run timed its
// kernels apart, as a median over some of the runs would be of other
// runs than gpu_s's.
func kernelMedians(runs []map[string]time.Duration) map[string]float64 {
	if len(runs) == 0 {
		return nil
	}
	names := map[string]bool{}
	for _, ks := range runs {
		if ks == nil {
			return nil
		}
		for name := range ks {
			names[name] = true
		}
	}
	if len(names) == 0 {
		return nil
	}
	out := make(map[string]float64, len(names))
	xs := make([]time.Duration, len(runs))
	for name := range names {
		for i, ks := range runs {
			xs[i] = ks[name]
		}
		out[name] = median(xs).Seconds()
	}
	return out
}

func (d *deviceTime) stop() { d.t.TimeDevice(false) }

// median is the median of xs (the mean of the middle two for an even
// count); xs is sorted in place.
func median(xs []time.Duration) time.Duration {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[n/2]
}

// deviceTiming says how a backend's points record the device's own time,
// for the report (BackendInfo.DeviceTime): "" for a backend with no
// device apart from the host (the CPU), else the method and, where the
// device cannot time its work, why there is no gpu_s.
func deviceTiming(be backend.Backend) string {
	t, ok := be.(backend.DeviceTimer)
	if !ok {
		return ""
	}
	if err := t.TimeDevice(true); err != nil {
		return "none (no gpu_s): " + oneLine(err.Error())
	}
	defer t.TimeDevice(false)
	s := "gpu_s from timestamps written before and after each submission's passes, summed over an op's submissions"
	if p, ok := be.(interface{ TimestampPeriod() (ns, tol float64) }); ok {
		ns, tol := p.TimestampPeriod()
		s += fmt.Sprintf("; timestamp period calibrated against the host clock in each process, here %.4g ns ±%.2g%%", ns, 100*tol)
	}
	return s
}
