package main

import (
	"context"
	"os"
	"slices"
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

// TestCapture runs the causal GQA fused forward under the hardware plan
// and the capture layer,
// under each of ATTN_GPU_CHECKS's settings, and checks that every shader
// module came back named by its kernel, with naga's loop-bounding
// counter in each loop under on alone, and its index clamps under on and
// bounds, none under off: the SPIR-V wgpu-native hands the driver
// through its trusted modules. It needs gfxreconstruct and spirv-tools,
// and skips without them, except under CI, where .ci/deps installs them;
// and a WebGPU adapter, as gputest says.
func TestCapture(t *testing.T) {
	needCapture(t)
	w, _ := findWorkload("fused-gqa-hw") // fusedloop.wgsl and merge.wgsl, clamps in both
	for _, checks := range []string{"on", "bounds", "off"} {
		t.Run(checks, func(t *testing.T) {
			t.Setenv("ATTN_GPU_CHECKS", checks)
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
			clamps := 0
			for _, k := range res.Kernels {
				if k.Label == "" {
					t.Errorf("module %s has no kernel name", k.Module)
					continue
				}
				if strings.HasPrefix(k.Label, "subgroups") {
					continue // the plan's probe of the subgroup size: no loop
				}
				fused = fused || strings.HasPrefix(k.Label, "fused")
				want := 0
				if checks == "on" {
					want = len(k.Mix.Loops)
				}
				if n, c := len(k.Mix.Loops), k.Mix.Module.Counters; n == 0 || c != want {
					t.Errorf("%s: %d loops, %d counters; want %d", k.Label, n, c, want)
				}
				clamps += k.Mix.Module.Clamps
				hot := k.Mix.Hot()
				if len(hot) == 0 || hot[0].Counts.FMA == 0 {
					t.Errorf("%s: no loop with FMAs: %+v", k.Label, k.Mix.Loops)
				}
			}
			if (clamps > 0) != (checks != "off") {
				t.Errorf("%d index clamps in all under ATTN_GPU_CHECKS=%s", clamps, checks)
			}
			if !fused {
				t.Errorf("no fused kernel among %d modules", len(res.Kernels))
			}
		})
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
	// The wgpu-native build's hardware plan measures lavapipe's subgroup
	// sizes at open (subgroups.wgsl), which the gogpu build, without
	// subgroups, has no use for.
	native.Kernels = slices.DeleteFunc(native.Kernels, func(k kernel) bool { return strings.HasPrefix(k.Label, "subgroups ") })
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

// TestDecodeMix holds the decoding kernels' structure at the H200
// benchmark's shape (32 over 8 heads, D = 128, 4096 keys, the hardware
// plan) to what a GPU needs of it, counted in the SPIR-V its driver
// receives, in each cache dtype (the workloads decode-*):
//
//   - lanedecode.wgsl, the plan's kernel with subgroups: its key loop
//     (the hot loop) meets no barrier and reads no workgroup memory,
//     sums a team's shares by subgroup shuffles, issues fewer storage
//     loads of fewer bytes for a half, 8-bit or 4-bit cache than for a
//     float32 one, and at least 8 FMAs a storage load in float32 (the
//     counts are static: both arms of the masks' and the paged lookups'
//     branches, whose loads a plain step never issues);
//   - fuseddecode.wgsl (decode.lanes=1): its key tile loop (the
//     outermost loop of the hot path) meets at most three barriers a
//     tile with subgroups; a half, 8-bit or 4-bit K is staged a unit a
//     load, so that its tile loop issues fewer storage loads than a
//     float32 cache's; and a q4 cache's loads bring fewer bytes than a
//     q8 one's.
//
// Lavapipe's subgroups put the kernels in their subgroup form, as on a
// GPU. It needs the tools TestCapture does, and skips as it does.
func TestDecodeMix(t *testing.T) {
	needCapture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, kernel := range []string{"lanedecode", "fuseddecode"} {
		tile := map[string]spirvmix.Counts{}
		for _, name := range []string{"decode-f32", "decode-f16", "decode-q8", "decode-q4"} {
			w, ok := findWorkload(name)
			if !ok {
				t.Fatalf("no workload %s", name)
			}
			if kernel == "fuseddecode" {
				w.Env = append(append([]string(nil), w.Env...), "ATTN_GPU_TUNE=decode.lanes=1")
			}
			res, err := captureMix(ctx, testExe(t), w, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range res.Kernels {
				if !strings.HasPrefix(k.Label, kernel+" ") {
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
				t.Fatalf("%s: no %s kernel among %d modules", name, kernel, len(res.Kernels))
			}
		}
		f32 := tile["decode-f32"]
		for name, c := range tile {
			switch {
			case kernel == "lanedecode" && (c.Barriers > 0 || c.WorkgroupLoads+c.WorkgroupStores > 0 || c.Subgroup == 0):
				t.Errorf("%s, %s: its key loop meets %d barriers, %d workgroup loads and stores, %d subgroup operations; want none, none and some",
					name, kernel, c.Barriers, c.WorkgroupLoads+c.WorkgroupStores, c.Subgroup)
			case kernel == "fuseddecode" && c.Barriers > 3:
				t.Errorf("%s, %s: %d barriers a tile, want at most 3", name, kernel, c.Barriers)
			}
			if name == "decode-f32" {
				continue
			}
			if c.GlobalLoads == 0 || c.GlobalLoads >= f32.GlobalLoads || c.GlobalLoadBytes >= f32.GlobalLoadBytes {
				t.Errorf("%s, %s: the key loop's %d storage loads of %d bytes in all; want fewer, and fewer bytes, than float32's %d of %d",
					name, kernel, c.GlobalLoads, c.GlobalLoadBytes, f32.GlobalLoads, f32.GlobalLoadBytes)
			}
		}
		if kernel == "lanedecode" && f32.FMA < 8*f32.GlobalLoads {
			t.Errorf("decode-f32, %s: %d FMAs over %d storage loads, want at least 8 a load", kernel, f32.FMA, f32.GlobalLoads)
		}
		// lanedecode.wgsl's q4 lanes load a block's whole code vec4 for
		// their half of it, as its q8 lanes load theirs, so only
		// fuseddecode.wgsl's q4 loads fewer bytes.
		if q4, q8 := tile["decode-q4"], tile["decode-q8"]; q4.GlobalLoadBytes > q8.GlobalLoadBytes || kernel == "fuseddecode" && q4.GlobalLoadBytes == q8.GlobalLoadBytes {
			t.Errorf("%s: q4's key loop loads %d bytes, q8's %d: want fewer", kernel, q4.GlobalLoadBytes, q8.GlobalLoadBytes)
		}
		for _, name := range []string{"decode-f32", "decode-f16", "decode-q8", "decode-q4"} {
			c := tile[name]
			t.Logf("%s, %s: key loop fma %d, storage loads %d (%d B), workgroup loads %d, barriers %d, subgroup ops %d",
				name, kernel, c.FMA, c.GlobalLoads, c.GlobalLoadBytes, c.WorkgroupLoads, c.Barriers, c.Subgroup)
		}
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

// TestPrefillMix holds fusedtile.wgsl's loops, in the prefill benchmark's
// kernel at D = 128 (the hardware plan, tiles sized for lavapipe's
// 32 KiB of workgroup memory), to what a GPU's FMA units need:
//   - its P·V loop (the loop with the most FMAs) makes at least 16 FMAs
//     a workgroup load: a vec4 of four rows' weights and the V vec4s
//     serve RM·CN products;
//   - its tile loop meets at most four barriers a tile, and the two of
//     the block mask's uniform load;
//   - the softmax is every invocation's: no loop in the tile loop stores
//     to workgroup memory what it did not load from storage (only the K
//     and V tiles' staging loops store), where a row's invocation wrote
//     its weights over the tile's keys in a loop.
//
// It needs the tools TestCapture does, and skips as it does.
func TestPrefillMix(t *testing.T) {
	needCapture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w, ok := findWorkload("prefill-d128")
	if !ok {
		t.Fatal("no workload prefill-d128")
	}
	res, err := captureMix(ctx, testExe(t), w, "")
	if err != nil {
		t.Fatal(err)
	}
	var seen bool
	for _, k := range res.Kernels {
		if !strings.HasPrefix(k.Label, "fusedtile ") {
			continue
		}
		seen = true
		hot := k.Mix.Hot()
		if len(hot) < 2 {
			t.Fatalf("%s: hot path %+v, want a loop in the tile loop", k.Label, hot)
		}
		pv, tile := hot[0].Counts, hot[len(hot)-1]
		if pv.WorkgroupLoads == 0 || pv.FMA < 16*pv.WorkgroupLoads {
			t.Errorf("%s: P·V loop makes %d FMAs over %d workgroup loads, want at least 16 a load", k.Label, pv.FMA, pv.WorkgroupLoads)
		}
		if tile.Counts.Barriers > 6 {
			t.Errorf("%s: %d barriers a tile, want at most 6", k.Label, tile.Counts.Barriers)
		}
		for _, l := range k.Mix.Loops {
			if l.Parent == tile.Name && l.Counts.WorkgroupStores > 0 && l.Counts.GlobalLoads == 0 {
				t.Errorf("%s: %s in the tile loop stores %d values to workgroup memory and loads none from storage", k.Label, l.Name, l.Counts.WorkgroupStores)
			}
		}
		t.Logf("%s: P·V fma %d, workgroup loads %d; tile loop barriers %d", k.Label, pv.FMA, pv.WorkgroupLoads, tile.Counts.Barriers)
	}
	if !seen {
		t.Fatalf("no fusedtile kernel among %d modules", len(res.Kernels))
	}
}
