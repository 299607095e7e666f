package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/internal/gputest"
	"github.com/attn-go/attn/internal/spirvmix"
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
	needCapture(t)
	w, _ := findWorkload("fused-gqa")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := captureMix(ctx, testExe(t), w, "")
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

// TestCaptureGogpu runs the causal GQA workload under the hardware plan
// (fusedloop.wgsl and merge.wgsl) in the pure-Go build (-tags gogpu, no
// cgo; spirvmix -binding gogpu) and in this one, and checks what
// gogpu/naga hands the driver beside wgpu-native's naga: every module
// named, the same kernels, no loop-bounding counter in any loop
// (wgpu-native's has one in each), no more index clamps in any kernel
// (those left are attn's own min()) and fewer in all. It needs what
// TestCapture does, and skips as it does.
func TestCaptureGogpu(t *testing.T) {
	needCapture(t)
	exe, err := childExe("gogpu")
	if err != nil {
		t.Fatal(err)
	}
	w, _ := findWorkload("fused-gqa-hw")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := captureMix(ctx, exe, w, "")
	if err != nil {
		t.Fatal(err)
	}
	native, err := captureMix(ctx, testExe(t), w, "")
	if err != nil {
		t.Fatal(err)
	}
	clamps := map[string]int{}
	all := 0
	for _, k := range native.Kernels {
		clamps[k.Label] = k.Mix.Module.Clamps
		all += k.Mix.Module.Clamps
	}
	if (res.Note != "" && !strings.Contains(res.Note, "the binding's own")) || len(res.Kernels) != len(native.Kernels) {
		t.Fatalf("gogpu: %d kernels, note %q; wgpu-native: %d", len(res.Kernels), res.Note, len(native.Kernels))
	}
	for _, k := range res.Kernels {
		c, ok := clamps[k.Label]
		if !ok {
			t.Errorf("gogpu's module %s is %q, which wgpu-native's build did not compile", k.Module, k.Label)
			continue
		}
		if len(k.Mix.Loops) == 0 || k.Mix.Module.Counters != 0 {
			t.Errorf("%s: %d loops, %d counters; want loops and no counter", k.Label, len(k.Mix.Loops), k.Mix.Module.Counters)
		}
		if k.Mix.Module.Clamps > c {
			t.Errorf("%s: %d index clamps, wgpu-native's %d", k.Label, k.Mix.Module.Clamps, c)
		}
		t.Logf("%s: %d loops, no counter, %d clamps (wgpu-native's: %d)", k.Label, len(k.Mix.Loops), k.Mix.Module.Clamps, c)
		all -= k.Mix.Module.Clamps
	}
	if all <= 0 {
		t.Errorf("gogpu's kernels have as many index clamps as wgpu-native's, or more (%d fewer)", all)
	}
}

// testExe is the child for wgpu-native's SPIR-V, which the tests count:
// the test binary itself (TestMain) unless it is the gogpu build.
func testExe(t *testing.T) string {
	t.Helper()
	exe, err := childExe("wgpu-native")
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestDecodeMix holds the decoding kernel's structure at the H200
// benchmark's shape (32 over 8 heads, D = 128, the hardware plan) to what
// a GPU needs of it, counted in the SPIR-V its driver receives: its key
// tile loop (the outermost loop of the hot path) meets at most three
// barriers a tile with subgroups; a half, 8-bit or 4-bit K is staged a
// unit a load, so that its tile loop issues fewer storage loads than a
// float32 cache's (its K's and, loaded at the tile's start, its V's,
// which stay a vec4 a load: decode.vwide says why); and a q4 cache's
// loads bring fewer bytes than a q8 one's. Lavapipe's subgroups
// put the kernels in their subgroup form, as on a GPU. It needs the tools
// TestCapture does, and skips as it does.
func TestDecodeMix(t *testing.T) {
	needCapture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tile := map[string]spirvmix.Counts{}
	for _, name := range []string{"decode-f32", "decode-f16", "decode-q8", "decode-q4"} {
		w, ok := findWorkload(name)
		if !ok {
			t.Fatalf("no workload %s", name)
		}
		res, err := captureMix(ctx, testExe(t), w, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range res.Kernels {
			if !strings.HasPrefix(k.Label, "fuseddecode ") {
				continue
			}
			hot := k.Mix.Hot()
			if len(hot) == 0 {
				t.Fatalf("%s: %s has no loop", name, k.Label)
			}
			if !strings.Contains(k.Label, " sg") {
				t.Errorf("%s: %s is not the subgroup form", name, k.Label)
			}
			tile[name] = hot[len(hot)-1].Counts
		}
		if _, ok := tile[name]; !ok {
			t.Fatalf("%s: no fuseddecode kernel among %d modules", name, len(res.Kernels))
		}
	}
	f32 := tile["decode-f32"]
	for name, c := range tile {
		if c.Barriers > 3 {
			t.Errorf("%s: %d barriers a tile, want at most 3", name, c.Barriers)
		}
		if name == "decode-f32" {
			continue
		}
		if c.GlobalLoads == 0 || c.GlobalLoads >= f32.GlobalLoads {
			t.Errorf("%s: the tile loop's %d storage loads of %d bytes in all; want fewer than float32's %d",
				name, c.GlobalLoads, c.GlobalLoadBytes, f32.GlobalLoads)
		}
	}
	if q4, q8 := tile["decode-q4"], tile["decode-q8"]; q4.GlobalLoadBytes >= q8.GlobalLoadBytes {
		t.Errorf("q4's tile loop loads %d bytes, q8's %d: want fewer", q4.GlobalLoadBytes, q8.GlobalLoadBytes)
	}
}

// needCapture skips t where the capture cannot run, saying why: without
// gfxreconstruct and spirv-tools (except under CI, where .ci/deps
// installs them and their absence fails t), or without a WebGPU adapter,
// as gputest says.
func needCapture(t *testing.T) {
	t.Helper()
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
}
