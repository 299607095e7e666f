//go:build (cgo || gogpu) && !nogpu

package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/internal/gputest"
)

// TestBenchGPUCeilings: a sweep of the GPU backend probes what WGSL
// reaches on its device before and after it (the real probes; the
// host's are left out, as they take seconds each), says so on stderr,
// and records the ceilings and each point's fractions of them in
// results.json and results.md. On lavapipe, CI's adapter, the note says
// the figures are the host's CPU's. Without an adapter it skips, unless
// ATTN_REQUIRE_GPU=1.
func TestBenchGPUCeilings(t *testing.T) {
	gputest.Open(t, gpu.New)
	was := newCeilingProbe
	t.Cleanup(func() { newCeilingProbe = was })
	probed := false
	newCeilingProbe = func(w io.Writer, _, _ bool, dev wgslDevice) func() bench.Ceilings {
		probed = dev != nil
		return was(w, false, false, dev)
	}
	out := filepath.Join(t.TempDir(), "results")
	code, _, stderr := runCmd(t, "bench", "-backend", "gpu", "-n", "64", "-heads", "2", "-kvheads", "1", "-d", "8",
		"-dtype", "f32,f16", "-budget", "1ms", "-min-runs", "2", "-isolate=false", "-out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !probed {
		t.Fatal("the sweep's probe was given no GPU")
	}
	for _, want := range []string{"attn bench: probe 1 of the GPU's ceilings: read ", "attn bench: GPU ceilings measured in the run (the best of "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	r := readResults(t, out)
	m := r.Machine
	t.Logf("%s", bench.GPUCeilingsLine(bench.Ceilings{GPUReadGBPS: m.GPUReadGBPS, GPUFMAGFLOPS: m.GPUFMAGFLOPS, GPUF16GFLOPS: m.GPUF16GFLOPS, GPUNote: m.GPUCeilingsNote}, len(m.CeilingProbes)))
	if !(m.GPUReadGBPS > 0) || !(m.GPUFMAGFLOPS > 0) || m.GPUCeilingsNote == "" || len(m.CeilingProbes) < bench.ProbesBefore+bench.ProbesAfter {
		t.Errorf("machine: GPU read %v GB/s, FMA %v GFLOP/s, note %q, %d probes", m.GPUReadGBPS, m.GPUFMAGFLOPS, m.GPUCeilingsNote, len(m.CeilingProbes))
	}
	if strings.Contains(r.Backends[0].Device, "llvmpipe") && !strings.Contains(m.GPUCeilingsNote, "the host's CPU running WGSL") {
		t.Errorf("lavapipe's ceilings are not marked as the host CPU's: %q", m.GPUCeilingsNote)
	}
	for _, pt := range r.Points {
		if pt.Status != bench.StatusOK || !(pt.GPUReadFrac > 0) || !(pt.GPUFMAFrac > 0) {
			t.Errorf("%s %s: %s, of GPU BW %v, of GPU FMA %v", pt.Impl, pt.DType, pt.Status, pt.GPUReadFrac, pt.GPUFMAFrac)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil || !strings.Contains(string(md), "GPU ceilings measured in the run") || !strings.Contains(string(md), " GPU FMA") {
		t.Errorf("results.md lacks the GPU's ceilings (%v):\n%s", err, md)
	}
}
