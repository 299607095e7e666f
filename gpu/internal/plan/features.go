package plan

import (
	"fmt"
	"os"
	"strings"

	"github.com/gogpu/gputypes"
)

// This file decides which optional WebGPU features the kernels use: WGSL's
// f16 type (shader-f16) and subgroup operations, each where the device
// has it unless ATTN_GPU_FEATURES turns it off. It has no cgo, so its
// tests run everywhere.

// envFeatures sets which optional features the kernels use:
// ATTN_GPU_FEATURES=f16=off,subgroups=on (each name=on, name=off or
// name=auto; on means where the device has it, auto, the default, what
// the plan chooses: planFeatures). It exists so that each path is tested
// on devices that have the features, and so that one run on a GPU
// measures each feature on and off (bench/gpu-hw.sh).
const envFeatures = "ATTN_GPU_FEATURES"

// KernelFeatures is the optional features the kernels use.
type KernelFeatures struct {
	// f16: half operands are widened by WGSL f16 conversions
	// (shaders.FusedConsts.F16), not unpack2x16float.
	f16 bool
	// subgroups: reductions across invocations use subgroup operations
	// where a kernel has them, not workgroup memory and barriers.
	subgroups bool
	// tileSubgroups: fusedtile.wgsl (the hardware plan's prefill) meets
	// each row's key groups' maxima and sums by subgroup shuffles too,
	// where subgroups is on and the groups fit the least subgroup.
	tileSubgroups bool
}

// allFeatures is every optional feature, before the device and
// ATTN_GPU_FEATURES say which are used.
var allFeatures = KernelFeatures{f16: true, subgroups: true, tileSubgroups: true}

// planFeatures is the features a plan uses by default, where the device
// has them (docs/gpu.md, "Optional features", has the measurements). The
// CPU plan leaves f16 off: lavapipe pays for WGSL's f16 conversions more
// than for unpack2x16float, and a decoding step over an f16 cache takes
// markedly longer with them. Subgroups cost nothing there and are on, so
// that CI runs them. The hardware plan uses both: on an H100 f16
// arithmetic barely moves a decoding step's device time, and subgroups
// make it faster. Except in fusedtile.wgsl: an H100 ran its prefill
// faster without them when a subgroup took a row's softmax; their use
// now (shuffles in place of workgroup memory for a row's key groups,
// still a barrier a tile) is not yet measured, so the hardware plan
// leaves tileSubgroups off.
func planFeatures(hardware bool) KernelFeatures {
	if hardware {
		return KernelFeatures{f16: true, subgroups: true}
	}
	return KernelFeatures{subgroups: true, tileSubgroups: true}
}

// featureSwitches are ATTN_GPU_FEATURES's names and the fields they set.
var featureSwitches = []struct {
	name  string
	field func(*KernelFeatures) *bool
	what  string
}{
	{"f16", func(f *KernelFeatures) *bool { return &f.f16 }, "WGSL's f16 type (shader-f16) for half K and V"},
	{"subgroups", func(f *KernelFeatures) *bool { return &f.subgroups }, "subgroup operations for the kernels' reductions"},
	{"tile-subgroups", func(f *KernelFeatures) *bool { return &f.tileSubgroups }, "subgroup shuffles in fusedtile.wgsl's row maxima and sums too (the hardware plan's prefill), where subgroups is on"},
}

// parseFeatures reads ATTN_GPU_FEATURES's value over def, a plan's
// defaults: comma-separated name=on|off|auto pairs (auto keeps def's).
// An unknown name, a repeated one or another value is an error naming
// it.
func parseFeatures(s string, def KernelFeatures) (KernelFeatures, error) {
	f := def
	names := make([]string, len(featureSwitches))
	for i, w := range featureSwitches {
		names[i] = w.name
	}
	err := parsePairs(envFeatures, s, strings.Join(names, ", "), func(i int, name, val string) error {
		switch strings.ToLower(val) {
		case "on":
			*featureSwitches[i].field(&f) = true
		case "off":
			*featureSwitches[i].field(&f) = false
		case "auto":
		default:
			return fmt.Errorf("%s: %s=%s: want on, off or auto (%s)", envFeatures, name, val, featureSwitches[i].what)
		}
		return nil
	})
	if err != nil {
		return def, err
	}
	return f, nil
}

// featuresFromEnv applies ATTN_GPU_FEATURES to plan a.
func featuresFromEnv(a AdapterPlan) (AdapterPlan, error) {
	f, err := parseFeatures(os.Getenv(envFeatures), planFeatures(a.Hardware))
	if err != nil {
		return AdapterPlan{}, err
	}
	a.Features = f
	return a, nil
}

// On is the plan for a device with features fs: each optional feature
// used only where the device has it (compilesF16: its WGSL compiler
// takes f16, which wgpu-native 0.17's does not, whatever it reports).
func (a AdapterPlan) On(fs gputypes.Features, compilesF16 bool) AdapterPlan {
	a.Features.f16 = a.Features.f16 && compilesF16 && fs.Contains(gputypes.FeatureShaderF16)
	a.Features.subgroups = a.Features.subgroups && fs.Contains(gputypes.FeatureSubgroupOperations)
	a.Features.tileSubgroups = a.Features.tileSubgroups && a.Features.subgroups
	return a
}

// String names the features used, "none" for none.
func (f KernelFeatures) String() string {
	var on []string
	for _, w := range featureSwitches {
		if *w.field(&f) {
			on = append(on, w.name)
		}
	}
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, ", ")
}
