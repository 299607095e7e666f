//go:build (cgo || gogpu) && !nogpu

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/internal/gputest"
)

// TestTune runs attn tune as a user would, on lavapipe (CI's adapter)
// under the hardware plan, at one small decoding shape and a budget of
// 3 s: it must stop within the budget and write the file, the next
// process's attn devices must say the file was read, and once the file
// is corrupted, that it was ignored. Without an adapter it skips, unless
// ATTN_REQUIRE_GPU=1. (gpu's TestTuneSweep checks the winner and the
// wrong candidate; this is the command's flow.)
func TestTune(t *testing.T) {
	// Every kernel compiled afresh, as on CI's new machine: with Mesa's
	// cache warm for the defaults' kernels and cold for a candidate's
	// (a template changed since), the candidate's compile under way at
	// the budget's end outran the slack that the defaults' check sets.
	t.Setenv("MESA_SHADER_CACHE_DISABLE", "true")
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	t.Setenv("ATTN_GPU_TUNE", "")
	t.Setenv("ATTN_GPU_TUNE_FILE", "off")
	gputest.Open(t, gpu.New)
	path := filepath.Join(t.TempDir(), "tuned.json")
	t.Setenv("ATTN_GPU_TUNE_FILE", path)
	const budget = 3 * time.Second
	start := time.Now()
	code, stdout, stderr := runCmd(t, "tune", "-budget", budget.String(), "-heads", "4", "-kvheads", "1", "-d", "32", "-n", "512", "-dtype", "f16")
	took := time.Since(start)
	t.Logf("attn tune in %v:\n%s", took, stdout)
	if code != 0 {
		t.Fatalf("attn tune: exit %d: %s", code, stderr)
	}
	// The budget bounds the sweep; opening and closing the backends,
	// and a compile under way when it runs out, which cannot be
	// stopped, come on top: at most the time checking the defaults took
	// (their kernels' compiles), which the output says.
	compile := 0.0
	if m := regexp.MustCompile(`the defaults' answers,? (?:checked )?in ([0-9.]+)s`).FindStringSubmatch(stdout); m != nil {
		compile, _ = strconv.ParseFloat(m[1], 64)
	}
	if slack := 2*time.Second + time.Duration(compile*float64(time.Second)); took > budget+slack {
		t.Errorf("attn tune -budget %v took %v, past the budget by more than %v", budget, took, slack)
	}
	for _, want := range []string{"attn tune: ", "lanedecode nq≤1 g=4 d=32 dv=32 nk≤512", "wrote " + path} {
		if !strings.Contains(stdout, want) {
			t.Errorf("attn tune's output does not say %q", want)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(data, &f); err != nil || f.Format != "attn gpu tuning 2" {
		t.Errorf("the file is not a tuning file (%v): %s", err, data)
	}

	code, stdout, stderr = runCmd(t, "devices")
	if code != 0 || !strings.Contains(stdout, "tuned by "+path) {
		t.Errorf("attn devices: exit %d, %s; does not say the file was read:\n%s", code, stderr, stdout)
	}
	if err := os.WriteFile(path, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = runCmd(t, "devices")
	if code != 0 || !strings.Contains(stdout, "tuning file "+path+" ignored, the default sizes used") {
		t.Errorf("attn devices: exit %d; does not say the corrupted file was ignored:\n%s", code, stdout)
	}
}
