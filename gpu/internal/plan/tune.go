package plan

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// MaxPerSubmit bounds the dispatches, and so the bind groups alive at
// once, in one submission. It lives here, outside the cgo build, because
// the tuning knobs (step.flush) are parsed in every build.
const MaxPerSubmit = 1024

// envTune overrides the hardware plan's tunable sizes for measurement:
// ATTN_GPU_TUNE=decode.wg=256,decode.target=2048 (see knobs). It exists
// so that one visit to a GPU can sweep the sizes (bench/gpu-hw.sh tune)
// without a build per candidate; the defaults are the constants in
// adapterplan.go and the kernel_*.go files, each with the reason for it
// (docs/gpu.md, Tuning, has the measurements).
const envTune = "ATTN_GPU_TUNE"

// Tuning is the hardware plan's tunable sizes: the most a planner may
// choose, which it lowers where a problem or the device's workgroup
// memory needs less (DecodeKernel, tileKernel).
type Tuning struct {
	decodeWG, decodeRows, decodeKeys int // fuseddecode.wgsl's workgroup: invocations, most rows, most keys a tile
	decodeUnroll                     int // and iterations of its scores' loop over the head dim written out a trip
	decodePV                         int // and of its P·V loop over a tile's keys
	decodeWide                       int // and the most vec4s of a half K it reads a load (1: 8-bit ones a vec4 a load too)
	decodeVWide                      int // and of a half V
	decodeAhead                      int // and the most vec4s of V an invocation loads at a tile's start (1: none)
	decodeNext                       int // and of the next tile's K it loads during a tile (1: none)
	decodeLanes, decodeBatch         int // lanedecode.wgsl's lanes a key (1: fuseddecode.wgsl) and keys a team a trip
	decodeTarget, decodeSplit        int // a decoding step's workgroups wanted, fewest keys a split
	mergeLanes                       int // merge.wgsl's invocations a row
	mergeUnroll                      int // and the parts its loops over them write out a trip
	mergeGroups                      int // and its part groups a row's workgroup (1: rows of lanes)
	splitTarget                      int // the other fused kernels' workgroups wanted a step
	tileWG, tileRows, tileKeys       int // fusedtile.wgsl's workgroup: invocations, most rows, most keys a tile
	tileReg                          int // and most vec4s of an invocation's register block
	tileUnroll                       int // and iterations of its constant-trip loops written out a trip
	tileAhead                        int // and most vec4s of a K or V tile an invocation loads ahead into registers
	loopUnroll                       int // fusedloop.wgsl's iterations of its loops over the head dims written out a trip
	StepFlush                        int // the dispatches a step records before submitting them without a wait
}

// defaultTuning is the hardware plan's sizes without ATTN_GPU_TUNE.
var defaultTuning = Tuning{
	decodeWG: DecodeWG, decodeRows: decodeMaxRows, decodeKeys: decodeMaxK,
	decodeTarget: decodeTarget, decodeSplit: decodeMinSplit, decodeUnroll: decodeUnroll, decodePV: decodePV, decodeWide: decodeWide, decodeVWide: decodeVWide, decodeAhead: decodeAhead, decodeNext: decodeNext,
	decodeLanes: decodeLanes, decodeBatch: decodeBatch,
	mergeLanes: MergeLanes, mergeUnroll: mergeUnroll, mergeGroups: mergeGroups,
	splitTarget: hardwareSplitTarget,
	tileWG:      tileWG, tileRows: tileMaxRows, tileKeys: tileMaxKeys, tileReg: tileMaxReg, tileUnroll: tileUnroll, tileAhead: tileAhead,
	loopUnroll: loopUnroll,
	StepFlush:  MaxPerSubmit,
}

// knob is one setting of ATTN_GPU_TUNE: its name, the field it sets and
// the values it takes, powers of two from lo to hi. Workgroups stay
// within 256 invocations, which every device the backend opens allows
// (needs.go), and merge.wgsl's lanes divide its workgroup.
type knob struct {
	name   string
	field  func(*Tuning) *int
	lo, hi int
	what   string
}

var knobs = []knob{
	{"decode.wg", func(t *Tuning) *int { return &t.decodeWG }, 32, 256, "fuseddecode.wgsl's invocations a workgroup"},
	{"decode.rows", func(t *Tuning) *int { return &t.decodeRows }, 1, 64, "fuseddecode.wgsl's most query rows a workgroup"},
	{"decode.keys", func(t *Tuning) *int { return &t.decodeKeys }, decodeMinK, 256, "fuseddecode.wgsl's most keys a tile"},
	{"decode.unroll", func(t *Tuning) *int { return &t.decodeUnroll }, 1, 256, "fuseddecode.wgsl's iterations of a score's loop over the head dim written out a trip"},
	{"decode.pv", func(t *Tuning) *int { return &t.decodePV }, 1, 64, "fuseddecode.wgsl's keys of a tile an invocation's P·V loop writes out a trip, their V loads issued together"},
	{"decode.wide", func(t *Tuning) *int { return &t.decodeWide }, 1, 4, "the most vec4s of a half K one fuseddecode.wgsl invocation stages a load (2: 8 halves, 4: 16), within the head dim's unit; 1 reads an 8-bit or 4-bit one a vec4 a load too"},
	{"decode.vwide", func(t *Tuning) *int { return &t.decodeVWide }, 1, 4, "decode.wide for V, the P·V phase's loads: its sums in registers grow with the unit"},
	{"decode.ahead", func(t *Tuning) *int { return &t.decodeAhead }, 1, 64, "fuseddecode.wgsl's most vec4s of V an invocation loads at a tile's start for its P·V phase, in flight through the scores and the softmax (where that phase's loop is written out whole); 1: none, the P·V phase issues them"},
	{"decode.next", func(t *Tuning) *int { return &t.decodeNext }, 1, 64, "fuseddecode.wgsl's most vec4s of the next tile's K an invocation loads into registers during a tile, in flight through its scores, softmax and P·V; 1: none, each tile's K loaded at its start"},
	{"decode.lanes", func(t *Tuning) *int { return &t.decodeLanes }, 1, 64, "lanedecode.wgsl's lanes a key, within the least subgroup size; 1: fuseddecode.wgsl decodes"},
	{"decode.batch", func(t *Tuning) *int { return &t.decodeBatch }, 1, 8, "lanedecode.wgsl's keys a team takes a trip, their loads issued together"},
	{"decode.target", func(t *Tuning) *int { return &t.decodeTarget }, 16, 1 << 16, "the workgroups a decoding step splits its keys for"},
	{"decode.split", func(t *Tuning) *int { return &t.decodeSplit }, 16, 1 << 16, "the fewest keys of a decoding step's split"},
	{"merge.lanes", func(t *Tuning) *int { return &t.mergeLanes }, 1, MergeWG, "merge.wgsl's invocations a query row"},
	{"merge.unroll", func(t *Tuning) *int { return &t.mergeUnroll }, 1, 64, "merge.wgsl's parts a trip of each of its loops over them writes out, their loads issued together"},
	{"merge.groups", func(t *Tuning) *int { return &t.mergeGroups }, 1, MergeRowWG, "merge.wgsl's groups of merge.lanes invocations a row's workgroup, each folding every merge.groups-th part (at most MergeRowWG invocations); 1: rows of merge.lanes invocations, each folding every part"},
	{"split.target", func(t *Tuning) *int { return &t.splitTarget }, 1, 1 << 16, "the workgroups a step of the other fused kernels splits its keys for"},
	{"tile.wg", func(t *Tuning) *int { return &t.tileWG }, 32, 256, "fusedtile.wgsl's invocations a workgroup"},
	{"tile.rows", func(t *Tuning) *int { return &t.tileRows }, 8, 256, "fusedtile.wgsl's most query rows a workgroup"},
	{"tile.keys", func(t *Tuning) *int { return &t.tileKeys }, 4, 256, "fusedtile.wgsl's most keys a tile"},
	{"tile.reg", func(t *Tuning) *int { return &t.tileReg }, 1, 64, "fusedtile.wgsl's most vec4s in an invocation's register block"},
	{"tile.unroll", func(t *Tuning) *int { return &t.tileUnroll }, 1, 64, "fusedtile.wgsl's iterations of a loop with a constant trip count (head dim, a tile's keys, a block of scores, staging a tile) written out a trip"},
	{"tile.ahead", func(t *Tuning) *int { return &t.tileAhead }, 1, 16, "fusedtile.wgsl's most vec4s of a K or V tile an invocation loads into registers ahead of their use (the next tile's K during a tile's scores, its V before them); 1: none, each tile loaded after the barrier before its use"},
	{"loop.unroll", func(t *Tuning) *int { return &t.loopUnroll }, 1, 256, "fusedloop.wgsl's iterations of a loop over the head dims or staging a tile written out a trip (the whole loop where it reaches the head dim's vec4s: its arrays then stay in registers)"},
	{"step.flush", func(t *Tuning) *int { return &t.StepFlush }, 1, MaxPerSubmit, "the dispatches a step records before it submits them without a wait, so that the device runs them while the host records the rest"},
}

// parseTuning reads ATTN_GPU_TUNE's value: comma-separated name=value
// pairs over defaultTuning; "" is defaultTuning. An unknown name, a
// repeated one or a value that is not a power of two within the knob's
// range is an error naming it.
func parseTuning(s string) (Tuning, error) { return parseTuningIn(envTune, s) }

// parseTuningIn is parseTuning for settings read from where, which its
// errors name: ATTN_GPU_TUNE, or a tuning file's entry (tuned.go).
func parseTuningIn(where, s string) (Tuning, error) {
	t := defaultTuning
	err := parsePairs(where, s, knobNames(), func(i int, name, val string) error {
		k := knobs[i]
		v, err := strconv.Atoi(val)
		if err != nil || v < k.lo || v > k.hi || v&(v-1) != 0 {
			return fmt.Errorf("%s: %s=%s: want a power of two from %d to %d (%s)", where, name, val, k.lo, k.hi, k.what)
		}
		*k.field(&t) = v
		return nil
	})
	if err != nil {
		return defaultTuning, err
	}
	return t, nil
}

// parsePairs reads s, the value of the environment variable env, as
// comma-separated name=value pairs, names in any case and spaces
// allowed, and calls set with each name's index in names, the name and
// its value, trimmed; an unknown name, a repeated one, a pair without =
// or set's error is the error.
func parsePairs(env, s, names string, set func(i int, name, val string) error) error {
	list := strings.Split(names, ", ")
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		name, val, ok := strings.Cut(kv, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		i := slices.Index(list, name)
		if !ok || i < 0 {
			return fmt.Errorf("%s: %q is not name=value with a name of %s", env, kv, names)
		}
		if seen[name] {
			return fmt.Errorf("%s: %s is set twice", env, name)
		}
		seen[name] = true
		if err := set(i, name, strings.TrimSpace(val)); err != nil {
			return err
		}
	}
	return nil
}

func knobNames() string {
	names := make([]string, len(knobs))
	for i, k := range knobs {
		names[i] = k.name
	}
	return strings.Join(names, ", ")
}

// String is the settings where t differs from defaultTuning, as
// ATTN_GPU_TUNE writes them; "" for the defaults.
func (t Tuning) String() string {
	var set []string
	for _, k := range knobs {
		if v := *k.field(&t); v != *k.field(&defaultTuning) {
			set = append(set, fmt.Sprintf("%s=%d", k.name, v))
		}
	}
	return strings.Join(set, ",")
}

// tuneFromEnv applies ATTN_GPU_TUNE to plan a. Only the hardware plan
// runs the kernels it sizes, so setting it for the CPU plan is an error
// rather than a silent no-op.
func tuneFromEnv(a AdapterPlan) (AdapterPlan, error) {
	s := os.Getenv(envTune)
	t, err := parseTuning(s)
	if err != nil {
		return AdapterPlan{}, err
	}
	if t != defaultTuning && !a.Hardware {
		return AdapterPlan{}, fmt.Errorf("%s=%q sizes the hardware plan's kernels, and this adapter runs the cpu plan (%s=hardware forces the other)", envTune, s, envPlan)
	}
	a.Tune = t
	return a, nil
}
