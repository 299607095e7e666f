//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu"
	"github.com/gogpu/gputypes"
)

var _ backend.DeviceTimer = (*gpu.Backend)(nil)

// timedBackend is attn's backend with device timing on. An adapter
// without timestamp queries skips the test, with the reason, on any
// host: lavapipe, CI's adapter, has them.
func timedBackend(t *testing.T) *gpu.Backend {
	t.Helper()
	b := openGPU(t)
	if !b.Info().Features.Contains(gputypes.FeatureTimestampQuery) {
		err := b.TimeDevice(true)
		if !errors.Is(err, backend.ErrUnsupported) {
			t.Fatalf("TimeDevice(true) on a device without TimestampQuery: %v, want ErrUnsupported", err)
		}
		t.Skipf("the adapter %q has no timestamps: %v", b.Info().Adapter.Name, err)
	}
	if err := b.TimeDevice(true); err != nil {
		t.Fatalf("TimeDevice(true) with TimestampQuery on the device: %v", err)
	}
	return b
}

// TestDeviceTime: the device time of an op, of an op split over several
// submissions, and of a step's ops, is positive and no longer than the
// host's wall time around it; nothing run reads as 0; timing off reads
// as an error.
func TestDeviceTime(t *testing.T) {
	b := timedBackend(t)
	ns, tol := b.TimestampPeriod()
	t.Logf("%s: timestamp period %.6g ns ±%.2g%%", b.Info().Adapter.Name, ns, 100*tol)
	if ns <= 0 || tol < 0 || tol > 0.05 {
		t.Fatalf("timestamp period %g ns ±%g after TimeDevice(true)", ns, tol)
	}
	if b.Info().Adapter.Driver == "llvmpipe" && (ns < 1-3*tol-1e-3 || ns > 1+3*tol+1e-3) {
		t.Errorf("lavapipe's timestamps count nanoseconds (Mesa's timestampPeriod 1): calibrated %.6g ns ±%.2g%%", ns, 100*tol)
	}
	ctx := context.Background()
	p := backend.Problem{B: 1, H: 4, KVHeads: 2, Nq: 64, Nk: 512, D: 64, Dv: 64}
	ly := newLayer(t, b, p, backend.Float32, 11)
	sc, err := b.Alloc(backend.Float32, p.ScoresLen())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Release()
	budget := gpu.Budget(b)
	for _, c := range []struct {
		name  string
		spans int // submissions bracketed, at least
		run   func() error
	}{
		{"fused", 1, func() error { return b.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil) }},
		{"staged", 3, func() error {
			if err := b.Scores(ctx, backend.ScoresParams{Problem: p}, ly.q, ly.k, sc); err != nil {
				return err
			}
			if err := b.Softmax(ctx, backend.SoftmaxParams{Problem: p}, sc); err != nil {
				return err
			}
			return b.Context(ctx, backend.ContextParams{Problem: p}, sc, ly.v, ly.o)
		}},
		{"fused over several submissions", 2, func() error {
			gpu.SetBudget(b, float64(4*p.B*p.H*p.Nq*p.Nk*p.D)/4) // a quarter of the op a submission
			defer gpu.SetBudget(b, budget)
			return b.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil)
		}},
		{"step of three ops", 1, func() error { // one submission
			st := b.Record()
			for range 3 {
				if err := st.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
					return err
				}
			}
			return st.Wait()
		}},
	} {
		if _, err := b.DeviceTime(); err != nil { // the count starts here
			t.Fatalf("%s: DeviceTime before: %v", c.name, err)
		}
		t0 := time.Now()
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		spans := gpu.TimedSpans(b)
		d, err := b.DeviceTime()
		wall := time.Since(t0)
		if err != nil {
			t.Fatalf("%s: DeviceTime: %v", c.name, err)
		}
		t.Logf("%s: %d submissions, device %v of wall %v", c.name, spans, d, wall)
		if spans < c.spans {
			t.Errorf("%s: %d submissions timed, want at least %d", c.name, spans, c.spans)
		}
		if d <= 0 || float64(d) > float64(wall)*(1+tol) {
			t.Errorf("%s: device time %v, want in (0, %v], the wall time", c.name, d, wall)
		}
	}
	if d, err := b.DeviceTime(); d != 0 || err != nil {
		t.Errorf("DeviceTime with no op since the last: %v, %v; want 0, nil", d, err)
	}
	if err := b.TimeDevice(false); err != nil {
		t.Fatal(err)
	}
	if gpu.TimedSpans(b) != 0 {
		t.Error("timing off still brackets submissions")
	}
	if err := b.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
		t.Fatal(err)
	}
	if d, err := b.DeviceTime(); err == nil || !strings.Contains(err.Error(), "timing is off") {
		t.Errorf("DeviceTime with timing off: %v, %v; want an error saying timing is off", d, err)
	}
	got := make([]float32, p.OLen())
	if err := b.Read(got, ly.o, 0); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "O after timed ops", got, naive(p, ly.hq, ly.hk, ly.hv), 1e-5)
}

// TestDeviceTimeUnsupported: on a caller's device requested without
// TimestampQuery there is no device time, with the reason, and ops run
// as before.
func TestDeviceTimeUnsupported(t *testing.T) {
	adapter, dev := callerDevice(t, nil) // no features requested
	b := openOn(t, adapter, dev)
	err := b.TimeDevice(true)
	if !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), "TimestampQuery") {
		t.Fatalf("TimeDevice(true) on a device without TimestampQuery: %v; want ErrUnsupported naming the feature", err)
	}
	if d, err2 := b.DeviceTime(); d != 0 || !errors.Is(err2, backend.ErrUnsupported) {
		t.Errorf("DeviceTime: %v, %v; want 0 and the reason", d, err2)
	}
	p := smallProblem(9)
	ly := newLayer(t, b, p, backend.Float32, 3)
	if err := b.Fused(context.Background(), backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
		t.Fatal(err)
	}
	ly.checkO(t, b, "O", p)
}

var _ backend.KernelTimer = (*gpu.Backend)(nil)

// TestKernelTimes: a decoding step whose keys are split (the hardware
// plan's fuseddecode.wgsl, then merge.wgsl) reports both kernels, each
// with a positive time, their sum positive and within the op's device
// time, where the device writes timestamps inside passes; elsewhere (the
// go-webgpu build) no kernel times, and the op's device time as before.
func TestKernelTimes(t *testing.T) {
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	b := timedBackend(t)
	ctx := context.Background()
	p := prob(1, 8, 2, 1, 3000, 64, 64)
	k, s := gpu.FusedKernel(b, p), gpu.FusedSplits(b, p)
	if !isDecoder(k) || s < 2 {
		t.Fatalf("%s runs %s in %d splits; want a decoding kernel over split keys", caseName(p, nil, nil), k, s)
	}
	decoder, _, _ := strings.Cut(k, " ")
	ly := newLayer(t, b, p, backend.Float32, 12)
	if _, err := b.DeviceTime(); err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // the first compiles the pipelines
		if err := b.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
			t.Fatal(err)
		}
		d, err := b.DeviceTime()
		if err != nil {
			t.Fatal(err)
		}
		ks := b.KernelTimes()
		t.Logf("round %d: device time %v, kernels %v", round, d, ks)
		if !b.WebGPU().TimestampsInPasses {
			if ks != nil {
				t.Errorf("kernel times %v on a device without timestamps inside passes", ks)
			}
			if d <= 0 {
				t.Errorf("device time %v", d)
			}
			continue
		}
		var sum time.Duration
		for _, name := range []string{decoder, "merge"} {
			if ks[name] <= 0 {
				t.Errorf("kernel %s: %v, want a positive time", name, ks[name])
			}
		}
		for _, x := range ks {
			sum += x
		}
		_, tol := b.TimestampPeriod()
		if len(ks) != 2 || sum <= 0 || float64(sum) > float64(d)*(1+tol)+float64(time.Microsecond) {
			t.Errorf("kernel times %v (sum %v) of an op of %v: want fuseddecode and merge, their sum in (0, %v]", ks, sum, d, d)
		}
	}
	if d, err := b.DeviceTime(); d != 0 || err != nil || b.KernelTimes() != nil {
		t.Errorf("a read with no op since the last: %v, %v, kernels %v; want 0, nil, nil", d, err, b.KernelTimes())
	}
	got := make([]float32, p.OLen())
	if err := b.Read(got, ly.o, 0); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "O after timed ops", got, naive(p, ly.hq, ly.hk, ly.hv), 1e-5)
}

// The subgroup probe (WebGPU's first call) runs untimed without turning
// the backend's timing off for others: a TimeDevice(false) of another
// goroutine while the probe waits for its submission stays off, and
// TimeDevice(true) stays on. Run under -race in CI.
func TestSubgroupProbeKeepsTiming(t *testing.T) {
	b := timedBackend(t)
	if !b.WebGPU().Subgroups {
		t.Skipf("the device %q has no subgroups: no probe runs", b.Info().Adapter.Name)
	}
	for i := range 40 {
		on := i%2 == 1
		if err := b.TimeDevice(!on); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var probeErr, timeErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, _, probeErr = gpu.MeasureSubgroups(b)
		}()
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i%8) * 100 * time.Microsecond)
			timeErr = b.TimeDevice(on)
		}()
		wg.Wait()
		if probeErr != nil || timeErr != nil {
			t.Fatalf("probe: %v; TimeDevice(%v): %v", probeErr, on, timeErr)
		}
		if _, err := b.DeviceTime(); (err == nil) != on {
			t.Fatalf("round %d: TimeDevice(%v) beside the probe, then DeviceTime: %v", i, on, err)
		}
	}
}
