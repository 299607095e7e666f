//go:build (cgo || gogpu) && !nogpu

package conformance_test

import (
	"os"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/gpu/internal/testhook"
	"github.com/attn-go/attn/internal/gputest"
)

func TestMain(m *testing.M) {
	// Every op runs with poisoned scratch, as in package gpu's tests: a
	// kernel that reads an element of pooled scratch that no kernel of its
	// op wrote reads NaN.
	testhook.PoisonScratch = true
	os.Exit(m.Run())
}

// TestConformance holds the GPU backend to the float64 reference over
// the whole suite: every op, layout, variant and storage dtype. It opens
// a backend as package gpu's tests do (gputest.Open: required under
// ATTN_REQUIRE_GPU=1, else skipped where no adapter opens).
func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t testing.TB) backend.Backend { return gputest.Open(t, gpu.New) })
}

// TestConformanceHardwarePlan runs the suite's sections whose answers
// depend on the kernels (backendtest.RunKernels) under the plan every
// hardware GPU gets (ATTN_GPU_PLAN=hardware): on lavapipe, whose own plan
// TestConformance runs, the kernels a real GPU runs (lanedecode.wgsl,
// fusedtile.wgsl, fusedloop.wgsl, merge.wgsl, the backward's lanes, f16
// arithmetic). The README's test command runs the sections that reach
// each of those kernels (hardwareQuick); CI's hardware-plan step
// (ATTN_GPU_PLAN=hardware) and ATTN_LONG=1 run them all. On a hardware
// adapter it is the plan TestConformance ran already.
func TestConformanceHardwarePlan(t *testing.T) {
	var only []string
	if os.Getenv("ATTN_GPU_PLAN") != "hardware" && os.Getenv("ATTN_LONG") != "1" {
		only = hardwareQuick
	}
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	backendtest.RunKernels(t, func(t testing.TB) backend.Backend { return gputest.Open(t, gpu.New) }, only...)
}

// hardwareQuick are the sections the README's test command runs under
// the hardware plan: scores far apart in every group a kernel reduces
// over (the decoding kernels' teams and splits, prefill's tiles), packed
// and paged sequences, and the backward pass (backkv.wgsl's and
// backq.wgsl's lanes). Package gpu's quick rows run the rest there: the
// variants and half operands (TestDecodeParity, TestParityHardwarePlan)
// and the 8-bit and 4-bit caches' reads of a lane's part of a block
// (TestQ4DecodeAccuracy).
var hardwareQuick = []string{"FarScores", "Seqs", "Backward"}
