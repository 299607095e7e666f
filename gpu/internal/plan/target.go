package plan

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// This file is ATTN_GPU_TARGET: the planner plans for a named device's
// subgroup sizes, workgroup memory and invocations on whatever adapter
// runs, so that the kernels that device would run are compiled (and
// counted: internal/cmd/spirvmix, internal/cmd/aco) on any machine. The
// backend then compiles and never dispatches (gpu's doc): the kernels'
// answers would be wrong on an adapter of other subgroup sizes.

// envTarget names the device the planner plans for (Targets).
const envTarget = "ATTN_GPU_TARGET"

// Target is a device the planner can plan for on any adapter: its least
// and greatest subgroup sizes, its workgroup memory in bytes and its
// invocations a workgroup (and extent along x).
type Target struct {
	Name                     string
	SubgroupMin, SubgroupMax int
	Memory                   int
	Invocations              int
}

// Targets are the devices ATTN_GPU_TARGET names. H100's and H200's
// workgroup memory is WebGPU's maxComputeWorkgroupStorageSize there,
// 48 KiB (the H200 measured it on 2026-11-28: ../shared/hw/), not the
// SM's shared memory; RDNA3 runs compute in wave32 or wave64, so its
// subgroups are 32 at least and 64 at most, with 64 KiB of LDS a
// workgroup; Apple's GPUs (Metal) have SIMD groups of 32 and 32 KiB of
// threadgroup memory. Each has 1024 invocations a workgroup.
var Targets = []Target{
	{Name: "h100", SubgroupMin: 32, SubgroupMax: 32, Memory: 48 << 10, Invocations: 1024},
	{Name: "h200", SubgroupMin: 32, SubgroupMax: 32, Memory: 48 << 10, Invocations: 1024},
	{Name: "rdna3", SubgroupMin: 32, SubgroupMax: 64, Memory: 64 << 10, Invocations: 1024},
	{Name: "apple", SubgroupMin: 32, SubgroupMax: 32, Memory: 32 << 10, Invocations: 1024},
}

// TargetNamed is the target called name (case aside).
func TargetNamed(name string) (Target, bool) {
	i := slices.IndexFunc(Targets, func(t Target) bool { return strings.EqualFold(t.Name, strings.TrimSpace(name)) })
	if i < 0 {
		return Target{}, false
	}
	return Targets[i], true
}

// TargetFromEnv is the target $ATTN_GPU_TARGET names: ok false where it
// is unset or empty (the adapter is planned for), an error where it
// names none of Targets.
func TargetFromEnv() (t Target, ok bool, err error) {
	v := strings.TrimSpace(os.Getenv(envTarget))
	if v == "" {
		return Target{}, false, nil
	}
	if t, ok := TargetNamed(v); ok {
		return t, true, nil
	}
	names := make([]string, len(Targets))
	for i, t := range Targets {
		names[i] = t.Name
	}
	return Target{}, false, fmt.Errorf("%s=%q: want one of %s", envTarget, v, strings.Join(names, ", "))
}

// Bounds is what of t bounds the plan's knobs (Fit).
func (t Target) Bounds() DeviceBounds {
	return DeviceBounds{Invocations: t.Invocations, SizeX: t.Invocations, Memory: t.Memory}
}

// String describes t, for the backend's Info.
func (t Target) String() string {
	sg := fmt.Sprint(t.SubgroupMin)
	if t.SubgroupMax != t.SubgroupMin {
		sg = fmt.Sprintf("%d to %d", t.SubgroupMin, t.SubgroupMax)
	}
	return fmt.Sprintf("target %s (%s=%s: subgroups of %s, %d KiB of workgroup memory, %d invocations a workgroup; compiles only, dispatches nothing)",
		t.Name, envTarget, t.Name, sg, t.Memory>>10, t.Invocations)
}
