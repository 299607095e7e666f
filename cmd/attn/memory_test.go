package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/kernels"
)

// TestFusedLongRSS runs `attn run -strategy fused` at N = 32768 (B = H = 1,
// D = 64) as a separate process and checks its peak resident memory: one
// N×N float32 score matrix alone would be 4 GiB, the fused path must stay
// under 1 GiB. About a minute on 2 cores, so it runs only with ATTN_LONG=1.
func TestFusedLongRSS(t *testing.T) {
	if os.Getenv("ATTN_LONG") == "" {
		t.Skip("set ATTN_LONG=1 for the N=32768 peak-memory check")
	}
	const n, d = 32768, 64
	dir := t.TempDir()
	bin := filepath.Join(dir, "attn")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	vals := make([]float64, n*d)
	for i := range vals {
		vals[i] = math.Sin(float64(i) * 0.618)
	}
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{1, 1, n, d}, vals)
	out := filepath.Join(dir, "o.npy")
	cmd := exec.Command(bin, "run", "-backend", "cpu", "-strategy", "fused", "-causal", "-q", q, "-k", q, "-v", q, "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("attn run: %v\n%s", err, b)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("no rusage on this platform")
	}
	peak := ru.Maxrss * 1024 // kilobytes on Linux
	t.Logf("peak RSS %d MiB", peak>>20)
	if peak >= 1<<30 {
		t.Errorf("peak RSS %d MiB, want under 1 GiB", peak>>20)
	}
	shape, o := readOutput(t, out)
	if len(shape) != 4 || shape[2] != n || shape[3] != d {
		t.Fatalf("output shape %v", shape)
	}
	// Causal: query 0 sees only key 0, so its output is V's row 0.
	for j := 0; j < d; j++ {
		if backendtest.Exceeds(math.Abs(float64(o[j])-float64(float32(vals[j]))), 1e-6) {
			t.Fatalf("row 0 = %v, want V's row 0", o[:d])
		}
	}
}

// TestRunMemoryEstimate pins down what attn run's memory check counts,
// on a GQA problem with Dv ≠ D: Q [2, 3, 100, 8], K [2, 1, 50, 8],
// V [2, 1, 50, 16], so 600 query rows, 30 000 scores, O of 9 600. Each
// case says whether the call runs staged, as kernels' Strategy.Choose
// (tested there) decides for it.
func TestRunMemoryEstimate(t *testing.T) {
	files := map[string]*npyFile{
		"q": {shape: []int{2, 3, 100, 8}, n: 4800},
		"k": {shape: []int{2, 1, 50, 8}, n: 800},
		"v": {shape: []int{2, 1, 50, 16}, n: 1600},
	}
	withMask := map[string]*npyFile{"mask": {shape: []int{100, 50}, n: 5000}}
	withVariants := map[string]*npyFile{"alibi": {shape: []int{3}, n: 3}, "sinks": {shape: []int{3}, n: 3}, "kvlens": {shape: []int{2}, n: 2}}
	// A past of 25 keys, read as float32 and copied with K's and V's rows
	// into the keys and values attention reads; the lists of packed
	// sequences are read as ints.
	withPast := map[string]*npyFile{"pastk": {shape: []int{2, 1, 25, 8}, n: 400}, "pastv": {shape: []int{2, 1, 25, 16}, n: 800},
		"cuq": {shape: []int{3}, n: 3}}
	for k, v := range files {
		withMask[k] = v
		withVariants[k] = v
		withPast[k] = v
	}
	const past, present = 4 * 1200, 4 * (1200 + 800 + 1600)
	const qkv, o, scores, lse = 4 * 7200, 4 * 9600, 4 * 30000, 4 * 600
	for _, tc := range []struct {
		name                string
		f                   runFlags
		files               map[string]*npyFile
		hostBuffers, staged bool
		inputs, be, outs    float64
		scoreBytes, total   float64
	}{
		// 30 000 scores are under auto's 65 536: the CPU runs staged.
		{"cpu auto", runFlags{}, files, true, true, qkv, qkv + o + scores, o, scores, qkv + qkv + o + scores + o},
		{"cpu fused", runFlags{strategy: kernels.Fused}, files, true, false, qkv, qkv + o, o, 0, qkv + qkv + o + o},
		// A discrete GPU holds its buffers in its own memory and runs
		// fused under auto.
		{"gpu auto", runFlags{}, files, false, false, qkv, 0, o, 0, qkv + o},
		// A software GPU's buffers are host memory.
		{"software gpu auto", runFlags{}, files, true, false, qkv, qkv + o, o, 0, qkv + qkv + o + o},
		// The weights are read back: a second score matrix; the mask is
		// read as bools and uploaded as float32.
		{"cpu weights lse mask", runFlags{weights: "w.npy", lse: "l.npy"}, withMask, true, true,
			qkv + 5*5000, qkv + 4*5000 + o + lse + scores, o + lse + scores, 2 * scores,
			qkv + 5*5000 + qkv + 4*5000 + o + lse + scores + o + lse + scores},
		// The scores are read back like the weights, and make auto run
		// staged even on a GPU.
		{"gpu scores", runFlags{scores: "s.npy"}, files, false, true, qkv, 0, o + scores, scores, qkv + o + scores},
		{"cpu weights and scores", runFlags{weights: "w.npy", scores: "s.npy"}, files, true, true,
			qkv, qkv + o + scores, o + 2*scores, 3 * scores, qkv + qkv + o + scores + o + 2*scores},
		// The slopes and sinks are read as float32, the key lengths as
		// ints; the backend keeps them in the problem, not in buffers.
		{"cpu fused variant files", runFlags{strategy: kernels.Fused}, withVariants, true, false,
			qkv + 4*6 + 8*2, qkv + o, o, 0, qkv + 4*6 + 8*2 + qkv + o + o},
		{"cpu fused past", runFlags{strategy: kernels.Fused}, withPast, true, false,
			qkv + past + present + 8*3, 4*4800 + present + o, o, 0, qkv + past + present + 8*3 + 4*4800 + present + o + o},
	} {
		m := runMemory(&tc.f, tc.files, tc.hostBuffers, tc.staged)
		if m.inputs != tc.inputs || m.backend != tc.be || m.outputs != tc.outs || m.scores != tc.scoreBytes || m.total() != tc.total {
			t.Errorf("%s: inputs %v, backend %v, outputs %v, scores %v, total %v; want %v, %v, %v, %v, %v",
				tc.name, m.inputs, m.backend, m.outputs, m.scores, m.total(), tc.inputs, tc.be, tc.outs, tc.scoreBytes, tc.total)
		}
	}
}
