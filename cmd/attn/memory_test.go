package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
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
		if math.Abs(float64(o[j])-float64(float32(vals[j]))) > 1e-6 {
			t.Fatalf("row 0 = %v, want V's row 0", o[:d])
		}
	}
}
