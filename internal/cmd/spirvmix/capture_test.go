package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/internal/gputest"
	"github.com/attn-go/attn/kernels"
)

// TestMain lets the test binary be the capture's child, as the command
// is its own.
func TestMain(m *testing.M) {
	if name := os.Getenv(envChild); name != "" {
		os.Exit(child(name, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestCapture runs the causal GQA fused forward under the capture layer
// and checks that every shader module came back named by its kernel,
// with naga's loop-bounding counter in each loop. It needs gfxreconstruct
// and spirv-tools, and skips without them, except under CI, where
// .ci/deps installs them; and a WebGPU adapter, as gputest says.
func TestCapture(t *testing.T) {
	if err := checkTools(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %v", err)
		}
		t.Skipf("%v", err)
	}
	be, err := kernels.Open("gpu")
	if err != nil {
		gputest.Unavailable(t, err)
	}
	be.Close()
	w, _ := findWorkload("fused-gqa")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := captureMix(ctx, w, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Note != "" || len(res.Kernels) == 0 {
		t.Fatalf("%d kernels, note %q", len(res.Kernels), res.Note)
	}
	var fused bool
	for _, k := range res.Kernels {
		if k.Label == "" {
			t.Errorf("module %s has no kernel name", k.Module)
			continue
		}
		fused = fused || strings.HasPrefix(k.Label, "fused")
		// wgpu-native 29's naga bounds every loop with a counter.
		if n, c := len(k.Mix.Loops), k.Mix.Module.Counters; n == 0 || c != n {
			t.Errorf("%s: %d loops, %d counters; want as many, at least one", k.Label, n, c)
		}
		hot := k.Mix.Hot()
		if len(hot) == 0 || hot[0].Counts.FMA == 0 {
			t.Errorf("%s: no loop with FMAs: %+v", k.Label, k.Mix.Loops)
		}
	}
	if !fused {
		t.Errorf("no fused kernel among %d modules", len(res.Kernels))
	}
}
