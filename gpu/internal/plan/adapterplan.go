package plan

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"

	"github.com/gogpu/gputypes"

	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file decides, from the adapter's type, how the backend cuts its
// work; which fused kernel runs is the plan's choice in kernel.go
// (FusedFor), each kernel in a kernel_*.go file of its own. It has no
// cgo so its tests run everywhere.

// Tile sizes. The same constants size the dispatch and are written into
// the WGSL (package shaders), so the two cannot disagree.
const (
	FusedWG = 64 // invocations per workgroup of fused.wgsl and fusedloop.wgsl
	MmTile  = 64 // TM = TN of the scores and context tiles
	MmStep  = 16 // TD / TJ: inner-dimension step through workgroup memory
	MmReg   = 4  // RM = RN: each invocation's register block
	SmWG    = 256
	SmPer   = 32 // columns per invocation per softmax chunk
	MergeWG = 64
	// MergeLanes is merge.wgsl's invocations to a query row under the
	// hardware plan (the CPU plan's is 1: lavapipe pays for each
	// invocation's loads, whatever their addresses): a decoding step
	// folds many splits of a few rows, and each row's columns are summed
	// side by side, adjacent invocations reading adjacent elements.
	MergeLanes = 32
	// mergeUnroll is how many parts each of merge.wgsl's loops over them
	// writes out a trip under the hardware plan (MergeConsts.UN;
	// ATTN_GPU_TUNE=merge.unroll=N). Each part is a dependent load, and
	// a decoding step has few rows to hide them: as loops, merge.wgsl
	// takes a large part of a 4096-key step on an H100; 8 a trip cuts
	// its time well down, 4 and 16 no further (docs/gpu.md, Tuning).
	mergeUnroll = 8
	// mergeGroups is how many groups of MergeLanes invocations share a
	// row's parts under the hardware plan, a workgroup a row
	// (MergeConsts.PG; ATTN_GPU_TUNE=merge.groups=N; 1: rows of lanes
	// folding every part each). A decoding step of 32 query heads over
	// 32768 keys folds 256 parts into 32 rows: rows of lanes make 16
	// workgroups whose invocations each wait for 256 parts' loads, UN at
	// a time, where 8 groups make 32 workgroups of 256 invocations, each
	// folding 32 parts.
	mergeGroups = 8
	// MergeRowWG is the most invocations of merge.wgsl's workgroup of
	// one row (PG > 1).
	MergeRowWG = 256
	// Split keys (fusedplan.go): a step's splits run side by side and
	// merge.wgsl folds their partial results; at most fusedMaxParts of
	// them, whose partial O take at most SplitScratch float32s, and when
	// cut to give a decoding step workgroups enough, at least
	// fusedMinSplit keys each.
	fusedMaxParts = 64
	fusedMinSplit = 256
	SplitScratch  = 1 << 22
	// hardwareSplitTarget is the workgroups a step of the hardware
	// plan's other fused kernels should have (splitTarget).
	hardwareSplitTarget = 256
)

// LoopBudget is the most loop iterations the CPU plan lets one shader
// invocation run. Lavapipe silently stops an invocation after about 65 535
// in total (all loops, nested ones included), so under that plan every key
// range, head dimension chunk and column chunk is sized to stay well under
// it.
const LoopBudget = 32768

// mmIters is the loop iterations a scores or context invocation runs per
// step of MmStep along the inner dimension.
const mmIters = MmStep*(2*MmReg+MmReg*MmReg) + 2*MmTile*MmStep/((MmTile/MmReg)*(MmTile/MmReg)) + 2

// envPlan forces a plan: ATTN_GPU_PLAN=cpu, hardware or auto (the
// default, from the adapter's type).
const envPlan = "ATTN_GPU_PLAN"

// envPrefill forces the hardware plan's kernel for steps that do not
// decode: ATTN_GPU_PREFILL=tile (fusedtile.wgsl) or loop (fusedloop.wgsl),
// so that the two can be measured side by side on a GPU; auto (or unset)
// leaves the choice to the head dims (Prefill).
const envPrefill = "ATTN_GPU_PREFILL"

// Prefill is the hardware plan's kernel for steps that do not decode.
type Prefill uint8

const (
	// PrefillAuto, the default: fusedloop.wgsl where both head dims are
	// at most LoopPrefillMaxD, fusedtile.wgsl past them where its tiles
	// fit.
	PrefillAuto Prefill = iota
	// PrefillTile: fusedtile.wgsl where its tiles fit (ATTN_GPU_PREFILL=tile).
	PrefillTile
	// PrefillLoop: fusedloop.wgsl (ATTN_GPU_PREFILL=loop).
	PrefillLoop
)

// LoopPrefillMaxD is the widest head dims the hardware plan's prefill
// runs through fusedloop.wgsl, a query row an invocation with its loops
// over the head dims written out (loopUnroll), rather than through
// fusedtile.wgsl: on an H100, f32 prefill at D = 64 runs faster through
// fusedloop.wgsl written out than through fusedtile.wgsl at its best,
// and at D = 128 fusedtile.wgsl is much the faster (docs/gpu.md, "Which
// kernel runs where").
const LoopPrefillMaxD = 64

// AdapterPlan is how the backend cuts its work and which fused kernel it
// runs, chosen from the adapter's type (Choose). A CPU-type adapter
// (lavapipe) stops an invocation silently after about 65 535 loop
// iterations and pays for every load lane by lane: its plan bounds each
// invocation by LoopBudget and runs fused.wgsl (key lanes to decode,
// LaneKernel). A hardware adapter has no cap and pays for device-memory
// loads: its plan cuts work only where bindings, grids and the
// submission budget say, and runs fusedtile.wgsl (tileKernel),
// fuseddecode.wgsl (DecodeKernel) or fusedloop.wgsl. docs/gpu.md ("Which
// kernel runs where") tells why, with the measurements.
type AdapterPlan struct {
	Hardware bool
	// loopCap is the most loop iterations one invocation may run in
	// all; 0: no bound.
	loopCap int
	// Prefill is the hardware plan's kernel for steps that do not
	// decode: by the head dims, or what ATTN_GPU_PREFILL forces.
	Prefill Prefill
	// Tune is the hardware plan's kernel sizes: defaultTuning, or what
	// ATTN_GPU_TUNE sets (tune.go).
	Tune Tuning
	// File is the sizes a tuning file sets for the shape classes a
	// sweep measured (tuned.go; ForShape applies them), nil without
	// one.
	File *Tuned
	// Features is the optional WebGPU features the kernels use: those
	// of the device that ATTN_GPU_FEATURES leaves on (features.go).
	Features KernelFeatures
	// subgroupMin is the device's least subgroup size (WithSubgroupMin),
	// 0 where unknown: lanedecode.wgsl's teams of lanes stay within it.
	subgroupMin int
}

// WithSubgroupMin is a with the device's least subgroup size n, which
// the binding reports or the backend measured; 0: unknown.
func (a AdapterPlan) WithSubgroupMin(n int) AdapterPlan {
	a.subgroupMin = n
	return a
}

// WantsSubgroupMin says whether a has a kernel that needs the device's
// least subgroup size: the hardware plan with subgroups on.
func (a AdapterPlan) WantsSubgroupMin() bool { return a.Hardware && a.Features.subgroups }

// String describes the plan, for the backend's Info and for logs.
func (a AdapterPlan) String() string {
	if !a.Hardware {
		return fmt.Sprintf("cpu (at most %d loop iterations an invocation; features: %v)", a.loopCap, a.Features)
	}
	s := "hardware (K/V tiles in workgroup memory, no loop cap"
	switch a.Prefill {
	case PrefillTile:
		s += "; prefill by fusedtile.wgsl"
	case PrefillLoop:
		s += "; prefill by fusedloop.wgsl"
	}
	if t := a.Tune.String(); t != "" {
		s += "; tuned " + t
	}
	return s + "; features: " + a.Features.String() + ")"
}

// Choose picks the plan for an adapter of type t, unless setting
// ($ATTN_GPU_PLAN) forces one: "cpu" or "hardware"; "" and "auto" leave
// the choice to t, the CPU plan for gputypes.DeviceTypeCPU and the
// hardware plan for every other type. Any other setting is an error.
func Choose(setting string, t gputypes.DeviceType) (AdapterPlan, error) {
	cpu := AdapterPlan{loopCap: LoopBudget, Tune: defaultTuning, Features: planFeatures(false)}
	hw := AdapterPlan{Hardware: true, Tune: defaultTuning, Features: planFeatures(true)}
	switch strings.ToLower(strings.TrimSpace(setting)) {
	case "", "auto":
		if t == gputypes.DeviceTypeCPU {
			return cpu, nil
		}
		return hw, nil
	case "cpu":
		return cpu, nil
	case "hardware":
		return hw, nil
	}
	return AdapterPlan{}, fmt.Errorf("%s=%q: want auto, cpu or hardware", envPlan, setting)
}

// FromEnv is Choose for an adapter of type t under $ATTN_GPU_PLAN,
// with the prefill kernel $ATTN_GPU_PREFILL names: "auto" (or unset),
// "tile" or "loop", and the sizes $ATTN_GPU_TUNE sets (tuneFromEnv); any other
// setting is an error. Under $ATTN_GPU_TARGET (target.go) the plan is
// the hardware plan whatever t is, and ATTN_GPU_PLAN=cpu an error.
func FromEnv(t gputypes.DeviceType) (AdapterPlan, error) {
	setting := os.Getenv(envPlan)
	if tg, ok, err := TargetFromEnv(); err != nil {
		return AdapterPlan{}, err
	} else if ok {
		if s := strings.ToLower(strings.TrimSpace(setting)); s != "" && s != "auto" && s != "hardware" {
			return AdapterPlan{}, fmt.Errorf("%s=%s plans for a hardware device, and %s=%q is not the hardware plan", envTarget, tg.Name, envPlan, setting)
		}
		setting = "hardware"
	}
	a, err := Choose(setting, t)
	if err != nil {
		return a, err
	}
	switch s := os.Getenv(envPrefill); strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
	case "tile":
		a.Prefill = PrefillTile
	case "loop":
		a.Prefill = PrefillLoop
	default:
		return AdapterPlan{}, fmt.Errorf("%s=%q: want auto, tile or loop", envPrefill, s)
	}
	if a, err = featuresFromEnv(a); err != nil {
		return a, err
	}
	return tuneFromEnv(a)
}

// splitTarget is the workgroups a fused step should have for the adapter
// to be busy: a step with fewer (a decoding query or a few, few heads)
// splits its keys further. A CPU-type adapter runs workgroups on the
// host's threads, two each; a hardware adapter's count of compute units
// is not in WebGPU's limits, and 256 workgroups (hardwareSplitTarget,
// unless ATTN_GPU_TUNE's split.target says) fill a large GPU.
func (a AdapterPlan) splitTarget() int {
	if a.Hardware {
		return a.Tune.splitTarget
	}
	return 2 * runtime.NumCPU()
}

// mergeParts is the most partial results merge.wgsl may fold at once for
// value head dim dv within the loop cap.
func (a AdapterPlan) mergeParts(dv int) int {
	if a.loopCap == 0 {
		return fusedMaxParts
	}
	return max(1, min(fusedMaxParts, (a.loopCap-dv)/(dv+2)))
}

// MergeRowLanes is merge.wgsl's invocations to a query row (its L).
func (a AdapterPlan) MergeRowLanes() int {
	if a.Hardware {
		return a.Tune.mergeLanes
	}
	return 1
}

// Merge is merge.wgsl's specialisation under plan a, and how many query
// rows one of its workgroups folds: PG groups of lanes a row where the
// hardware plan's merge.groups and merge.lanes make more than one group
// within MergeRowWG invocations, else MergeWG/L rows of L lanes.
func (a AdapterPlan) Merge() (shaders.MergeConsts, int) {
	lanes, un := a.MergeRowLanes(), a.MergeUnroll()
	if a.Hardware {
		if g := min(a.Tune.mergeGroups, MergeRowWG/lanes); g > 1 {
			return shaders.MergeConsts{WG: g * lanes, L: lanes, UN: max(un, 1), PG: g}, 1
		}
	}
	return shaders.MergeConsts{WG: MergeWG, L: lanes, UN: un}, MergeWG / lanes
}

// MergeUnroll is how many parts merge.wgsl's loops over them write out a
// trip (its UN): the CPU plan keeps the loops.
func (a AdapterPlan) MergeUnroll() int {
	if a.Hardware {
		return a.Tune.mergeUnroll
	}
	return 1
}

// Unbounded stands for "no bound" in a chunk size: Chunks(n, Unbounded)
// is one chunk.
const Unbounded = math.MaxInt

// MmChunk is the inner-dimension length (head dim for scores, keys for
// context) one scores or context dispatch covers.
func (a AdapterPlan) MmChunk() int {
	if a.loopCap == 0 {
		return Unbounded
	}
	return a.loopCap / mmIters * MmStep
}

// SoftmaxChunks bounds the chunks of SmWG·SmPer columns in one row:
// normalize loops over all of them.
func (a AdapterPlan) SoftmaxChunks() int {
	if a.loopCap == 0 {
		return Unbounded
	}
	return a.loopCap - SmPer - 64
}
