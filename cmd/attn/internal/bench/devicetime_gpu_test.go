//go:build (cgo || gogpu) && !nogpu

package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/internal/gputest"
	"github.com/attn-go/attn/kernels"
	"github.com/gogpu/gputypes"
)

// On a GPU with timestamps (lavapipe, CI's adapter, has them) every
// point of attn-gpu records gpu_s, positive and no longer than its wall
// time, and the report says how it was measured; on one without, no
// point has gpu_s and the report says why.
func TestGPUPointsDeviceTime(t *testing.T) {
	be := gputest.Open(t, gpu.New)
	cfg := bench.Config{
		Ns: []int{64}, Nqs: []int{0, 1}, Batches: []int{1}, Heads: []int{4}, KVHeads: []int{2}, Dims: []int{32},
		Causal:     []bool{false},
		Strategies: []kernels.Strategy{kernels.Fused, kernels.Staged},
		Budget:     time.Millisecond, MinRuns: 3, Seed: 1, CheckRows: 2,
	}
	points, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, tol := be.TimestampPeriod()
	has := be.Info().Features.Contains(gputypes.FeatureTimestampQuery)
	for _, pt := range points {
		if pt.Status != bench.StatusOK {
			t.Fatalf("%s Nq=%d: %s %s", pt.Strategy, pt.Queries(), pt.Status, pt.Error)
		}
		t.Logf("%s Nq=%d: gpu_s %.3g of median %.3g", pt.Strategy, pt.Queries(), pt.GPUS, pt.MedianS)
		switch {
		case has && (pt.GPUS <= 0 || pt.GPUS > pt.MedianS*(1+tol)):
			t.Errorf("%s Nq=%d: gpu_s %g, want in (0, %g], the median wall time", pt.Strategy, pt.Queries(), pt.GPUS, pt.MedianS)
		case !has && pt.GPUS != 0:
			t.Errorf("%s Nq=%d: gpu_s %g on a device without timestamps", pt.Strategy, pt.Queries(), pt.GPUS)
		}
		// gpu_kernels: where the device times kernels apart, each of the
		// point's kernels, positive and within gpu_s, their sum within
		// 1.5·gpu_s; elsewhere none. Each is a median over the runs, as
		// gpu_s is, and medians do not add: on a loaded host (this
		// package's tests beside ./cpu's) the staged op's three summed to
		// a little more than gpu_s, each run's own kernels within its own
		// time.
		var sum float64
		for name, x := range pt.GPUKernels {
			if x <= 0 || x > pt.GPUS*(1+tol)+2e-6 {
				t.Errorf("%s Nq=%d: gpu_kernels[%s] = %g, want in (0, gpu_s %g]", pt.Strategy, pt.Queries(), name, x, pt.GPUS)
			}
			sum += x
		}
		t.Logf("%s Nq=%d: gpu_kernels %v", pt.Strategy, pt.Queries(), pt.GPUKernels)
		if !be.WebGPU().TimestampsInPasses {
			if pt.GPUKernels != nil {
				t.Errorf("%s Nq=%d: gpu_kernels %v on a device without timestamps inside passes", pt.Strategy, pt.Queries(), pt.GPUKernels)
			}
		} else if len(pt.GPUKernels) == 0 || sum > 1.5*pt.GPUS*(1+tol)+2e-6*float64(len(pt.GPUKernels)) {
			t.Errorf("%s Nq=%d: gpu_kernels %v (sum %g), want kernels summing within 1.5·gpu_s %g", pt.Strategy, pt.Queries(), pt.GPUKernels, sum, pt.GPUS)
		}
	}
	r := bench.NewReport(cfg, []backend.Backend{be}, nil, points)
	want := "gpu_s from timestamps"
	if !has {
		want = "none (no gpu_s): "
	}
	if got := r.Backends[0].DeviceTime; !strings.HasPrefix(got, want) {
		t.Errorf("the report's device_time %q, want it to start %q", got, want)
	}
	if !has {
		t.Skipf("the adapter %q has no timestamps: %s", be.Info().Adapter.Name, r.Backends[0].DeviceTime)
	}
}
