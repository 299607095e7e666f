package plan

import (
	"fmt"
	"math"
	"strings"
)

// This file holds the knobs to what one device runs. The knobs' ranges
// (tune.go) are what any device may be asked; a value within them that
// this device cannot run as set (lanes past its least subgroup size, a
// workgroup past its invocations, tiles that its workgroup memory holds
// at no head dim) would be lowered by the planners without a word and
// named as applied. Fit refuses it instead: its knob back at the
// default, with the reason, which the backend says in Info().Detail
// (gpu/tuned.go), for ATTN_GPU_TUNE and for a tuning file's classes.

// DeviceBounds is what of a device bounds the knobs' values: a
// workgroup's most invocations (maxComputeInvocationsPerWorkgroup) and
// extent (maxComputeWorkgroupSizeX: the tuned kernels' workgroups are
// one-dimensional), and its workgroup memory in bytes
// (maxComputeWorkgroupStorageSize). 0 is no bound. The least subgroup
// size is the plan's (WithSubgroupMin).
type DeviceBounds struct {
	Invocations, SizeX int
	Memory             int
}

// Refusal is one setting Fit refused: the knob, the value asked, the
// default it falls back to, and why the device cannot run the value.
type Refusal struct {
	Knob           string
	Value, Default int
	Why            string
}

func (r Refusal) String() string {
	return fmt.Sprintf("%s=%d refused (%s), its default %d used", r.Knob, r.Value, r.Why, r.Default)
}

// JoinRefusals lists rs as Info().Detail says them.
func JoinRefusals(rs []Refusal) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, "; ")
}

// Fit is t within what plan a's device runs, bounded as dev says: each
// setting (a value other than the default) that the device cannot run
// as set is back at its default, and refused says which and why. The
// knobs with such a bound:
//
//   - decode.lanes: lanedecode.wgsl's teams of lanes lie within a
//     subgroup, so at most the device's least subgroup size, and none
//     where the plan has no subgroups or knows no size (fuseddecode.wgsl
//     decodes there; decode.lanes=1 asks for it and is never refused).
//   - decode.wg, tile.wg, and merge.wgsl's workgroup (merge.lanes ×
//     merge.groups): at most the device's invocations and extent.
//   - decode.wg, decode.rows, decode.keys, tile.wg, tile.rows, tile.keys:
//     the tiles they size in workgroup memory. The planners lower rows
//     and keys a shape at a time to fit, so these are a most; a value is
//     refused where the device's memory lowers it at every shape, that
//     is at the one that favours it most (head dims of 4, one query of
//     as many heads as the rows allow), where it runs whole with memory
//     unbounded.
//
// The CPU plan runs none of the tuned kernels: Fit leaves t to it.
func (a AdapterPlan) Fit(t Tuning, dev DeviceBounds) (Tuning, []Refusal) {
	if !a.Hardware {
		return t, nil
	}
	var refused []Refusal
	refuse := func(name, why string) {
		k := knobNamed(name)
		refused = append(refused, Refusal{Knob: name, Value: *k.field(&t), Default: *k.field(&defaultTuning), Why: why})
		*k.field(&t) = *k.field(&defaultTuning)
	}
	set := func(name string) bool {
		k := knobNamed(name)
		return *k.field(&t) != *k.field(&defaultTuning)
	}

	if l := t.decodeLanes; set("decode.lanes") && l > 1 {
		switch {
		case !a.Features.subgroups:
			refuse("decode.lanes", "lanedecode.wgsl's lanes share a key by subgroup shuffles, and the plan has no subgroups (the device lacks them or ATTN_GPU_FEATURES turns them off): fuseddecode.wgsl decodes")
		case a.subgroupMin < 1:
			refuse("decode.lanes", "the device's least subgroup size is unknown, which a team of lanes must lie within: fuseddecode.wgsl decodes")
		case l > a.subgroupMin:
			refuse("decode.lanes", fmt.Sprintf("more than the device's least subgroup size, %d, which a team of lanes must lie within", a.subgroupMin))
		}
	}

	if most := boundOf(dev.Invocations, dev.SizeX); most > 0 {
		for _, w := range []struct {
			knob   string
			kernel string
			wg     func(Tuning) int
		}{
			{"decode.wg", "fuseddecode.wgsl's and lanedecode.wgsl's", func(t Tuning) int { return t.decodeWG }},
			{"merge.lanes", "merge.wgsl's", func(t Tuning) int { return a.WithTune(t).mergeWG() }},
			{"merge.groups", "merge.wgsl's", func(t Tuning) int { return a.WithTune(t).mergeWG() }},
			{"tile.wg", "fusedtile.wgsl's", func(t Tuning) int { return t.tileWG }},
		} {
			if set(w.knob) && w.wg(t) > most {
				refuse(w.knob, fmt.Sprintf("%s workgroup of %d invocations is more than the device's %d", w.kernel, w.wg(t), most))
			}
		}
	}

	if dev.Memory > 0 {
		for _, p := range memProbes {
			if !set(p.knob) {
				continue
			}
			u := a.WithTune(t)
			whole, ok := p.size(u, math.MaxInt)
			got, fits := p.size(u, dev.Memory)
			switch {
			case !ok || fits && got >= whole:
			case !fits:
				refuse(p.knob, fmt.Sprintf("%s's tiles under it take more than the device's %d bytes of workgroup memory at every head dim", p.kernel, dev.Memory))
			default:
				refuse(p.knob, fmt.Sprintf("%s's tiles under it take more than the device's %d bytes of workgroup memory at every head dim: the planner runs %d at most", p.kernel, dev.Memory, got))
			}
		}
	}
	return t, refused
}

// boundOf is the least of the positive bounds xs, 0 for none.
func boundOf(xs ...int) int {
	b := 0
	for _, x := range xs {
		if x > 0 && (b == 0 || x < b) {
			b = x
		}
	}
	return b
}

// knobNamed is the knob called name, which must be one.
func knobNamed(name string) knob {
	for _, k := range knobs {
		if k.name == name {
			return k
		}
	}
	panic("plan: no knob " + name)
}

// mergeWG is merge.wgsl's workgroup under a.
func (a AdapterPlan) mergeWG() int {
	c, _ := a.Merge()
	return c.WG
}

// memProbes are the knobs whose sizes workgroup memory bounds, each with
// the size the planner gives it on mem bytes at the shape that favours
// it most: head dims of 4, the least (for lanedecode.wgsl 4 a lane, so
// that every lane of a team has a share), one query a head and as many
// heads as the rows allow; ok is false where the kernel does not run
// there at all (no subgroups for lanedecode.wgsl, or no tile fits).
var memProbes = []struct {
	knob, kernel string
	size         func(a AdapterPlan, mem int) (size int, ok bool)
}{
	{"decode.wg", "fuseddecode.wgsl", func(a AdapterPlan, mem int) (int, bool) { t, ok := a.decodeProbe(mem); return t.wg, ok }},
	{"decode.wg", "lanedecode.wgsl", func(a AdapterPlan, mem int) (int, bool) { c, ok := a.laneProbe(mem); return c.wg, ok }},
	{"decode.rows", "fuseddecode.wgsl", func(a AdapterPlan, mem int) (int, bool) {
		t, ok := a.decodeProbe(mem)
		return t.heads * t.rows, ok
	}},
	{"decode.rows", "lanedecode.wgsl", func(a AdapterPlan, mem int) (int, bool) {
		c, ok := a.laneProbe(mem)
		return c.heads * c.rows, ok
	}},
	{"decode.keys", "fuseddecode.wgsl", func(a AdapterPlan, mem int) (int, bool) { t, ok := a.decodeProbe(mem); return t.tk, ok }},
	{"tile.wg", "fusedtile.wgsl", func(a AdapterPlan, mem int) (int, bool) { c, ok := a.Tune.tileKernel(mem, 4, 4); return c.WG, ok }},
	{"tile.rows", "fusedtile.wgsl", func(a AdapterPlan, mem int) (int, bool) { c, ok := a.Tune.tileKernel(mem, 4, 4); return c.BR, ok }},
	{"tile.keys", "fusedtile.wgsl", func(a AdapterPlan, mem int) (int, bool) { c, ok := a.Tune.tileKernel(mem, 4, 4); return c.BC, ok }},
}

// decodeProbe is fuseddecode.wgsl under a on mem bytes at head dims of
// 4, one query of each of as many heads as its rows allow.
func (a AdapterPlan) decodeProbe(mem int) (DecodeTile, bool) {
	return a.DecodeKernel(mem, 4, 4, min(a.Tune.decodeRows, a.Tune.decodeWG), 1)
}

// laneProbe is lanedecode.wgsl under a on mem bytes at head dims of 4
// a lane, one query of each of as many heads as its rows allow.
func (a AdapterPlan) laneProbe(mem int) (kernelLaneDecode, bool) {
	l := min(a.Tune.decodeLanes, a.subgroupMin)
	if l < 2 {
		return kernelLaneDecode{}, false
	}
	return a.LaneDecodeKernel(mem, 4*l, 4*l, min(a.Tune.decodeRows, a.Tune.decodeWG, laneDecodeRows), 1)
}

// Fit is t with each class's sizes within what the device runs (fit,
// plan a's Fit): refused lists each setting it set back, by class.
func (t *Tuned) Fit(fit func(Tuning) (Tuning, []Refusal)) (out *Tuned, refused []string) {
	if t == nil {
		return nil, nil
	}
	out = &Tuned{Path: t.Path, classes: make(map[Class]Tuning, len(t.classes)), order: t.order}
	for _, c := range t.order {
		tn, rs := fit(t.classes[c])
		out.classes[c] = tn
		if len(rs) > 0 {
			refused = append(refused, c.String()+": "+JoinRefusals(rs))
		}
	}
	return out, refused
}
