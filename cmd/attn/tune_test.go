package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu"
)

// TestTuneUsage: bad flags and shapes are usage errors (exit status 2)
// naming the value, found before any adapter is opened. A build without
// the gpu backend (no cgo, -tags nogpu) reads the shapes in gpu.Tune no
// more than it runs it: there a bad shape is the backend's absence
// (exit status 1).
func TestTuneUsage(t *testing.T) {
	t.Setenv("ATTN_GPU_TUNE_FILE", filepath.Join(t.TempDir(), "never.json"))
	_, err := gpu.Tune(context.Background(), time.Second, nil, "heads=6,kvheads=4")
	built := !errors.Is(err, backend.ErrUnavailable)
	for _, c := range []struct {
		args  []string
		want  string
		shape bool // found by gpu.Tune
	}{
		{[]string{"-budget", "0s"}, "-budget 0s: want a positive duration", false},
		{[]string{"-set", "train"}, `-set "train": want decode, prefill`, false},
		{[]string{"-dtype", "f64"}, `-dtype "f64"`, false},
		{[]string{"-n", "0"}, `-n "0": want positive integers`, false},
		{[]string{"-heads", "6", "-kvheads", "4"}, "heads=6 is not a multiple of kvheads=4", true},
		{[]string{"decode"}, `unexpected argument "decode"`, false},
	} {
		code, _, stderr := runCmd(t, append([]string{"tune"}, c.args...)...)
		wantCode, want := 2, c.want
		if c.shape && !built {
			wantCode, want = 1, "no WebGPU backend"
		}
		if code != wantCode || !strings.Contains(stderr, want) {
			t.Errorf("attn tune %s: exit %d, %q; want %d and %q", strings.Join(c.args, " "), code, stderr, wantCode, want)
		}
	}
	if _, err := os.Stat(os.Getenv("ATTN_GPU_TUNE_FILE")); err == nil {
		t.Error("a refused attn tune wrote its file")
	}
}
