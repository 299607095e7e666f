package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/gogpu/gputypes"
)

// TestFit holds each knob with a device bound to it: a setting past
// the bound is refused, its knob back at the default and the others
// kept, with the reason; within it, the setting stands. lavapipe is
// subgroups of 8, 1024 invocations and 32 KiB of workgroup memory;
// WebGPU's default limits 256 and 16 KiB.
func TestFit(t *testing.T) {
	hw, err := Choose("hardware", gputypes.DeviceTypeDiscreteGPU)
	if err != nil {
		t.Fatal(err)
	}
	lavapipe := DeviceBounds{Invocations: 1024, SizeX: 1024, Memory: 32 << 10}
	defaults := DeviceBounds{Invocations: 256, SizeX: 256, Memory: 16 << 10}
	sg8, sg32, sgUnknown := hw.WithSubgroupMin(8), hw.WithSubgroupMin(32), hw
	noSG := sg8
	noSG.Features.subgroups = false
	cpu, _ := Choose("cpu", gputypes.DeviceTypeCPU)
	for _, c := range []struct {
		name    string
		a       AdapterPlan
		dev     DeviceBounds
		set     string
		refused []string // the knobs refused, in order
		why     string
	}{
		{"lanes past the subgroup", sg8, lavapipe, "decode.lanes=64", []string{"decode.lanes"}, "more than the device's least subgroup size, 8"},
		{"lanes past the subgroup, others kept", sg8, lavapipe, "decode.lanes=32,decode.batch=4", []string{"decode.lanes"}, "least subgroup size, 8"},
		{"lanes within the subgroup", sg8, lavapipe, "decode.lanes=8", nil, ""},
		{"lanes of a wide subgroup", sg32, lavapipe, "decode.lanes=32", nil, ""},
		{"one lane", sg8, lavapipe, "decode.lanes=1", nil, ""},
		{"lanes without subgroups", noSG, lavapipe, "decode.lanes=4", []string{"decode.lanes"}, "the plan has no subgroups"},
		{"lanes of an unknown subgroup", sgUnknown, lavapipe, "decode.lanes=4", []string{"decode.lanes"}, "least subgroup size is unknown"},
		{"decoding workgroup past the invocations", sg8, DeviceBounds{Invocations: 64, SizeX: 1024}, "decode.wg=128", []string{"decode.wg"}, "workgroup of 128 invocations is more than the device's 64"},
		{"tile workgroup past the extent", sg8, DeviceBounds{Invocations: 1024, SizeX: 128}, "tile.wg=256", []string{"tile.wg"}, "fusedtile.wgsl's workgroup of 256 invocations is more than the device's 128"},
		{"workgroups within", sg8, defaults, "decode.wg=128,tile.wg=256", nil, ""},
		{"merge's workgroup", sg8, DeviceBounds{Invocations: 128}, "merge.lanes=64,merge.groups=4", []string{"merge.lanes"}, "merge.wgsl's workgroup of 256 invocations"},
		// tile.reg=64 lets a register block hold 128 keys' scores: under
		// the default 16 the planner lowers them to 32 whatever the memory.
		{"tile keys past the memory", sg8, lavapipe, "tile.keys=128,tile.reg=64", []string{"tile.keys"}, "32768 bytes of workgroup memory at every head dim: the planner runs 64 at most"},
		{"tile keys the registers lower", sg8, lavapipe, "tile.keys=128", nil, ""},
		{"tile keys within the memory", sg8, lavapipe, "tile.keys=64,tile.reg=64", nil, ""},
		{"tile keys within the memory with fewer rows", sg8, lavapipe, "tile.keys=128,tile.rows=8,tile.reg=64", nil, ""},
		{"tile keys past the default limits", sg8, defaults, "tile.keys=256,tile.rows=8,tile.reg=64", []string{"tile.keys"}, "16384 bytes"},
		{"decoding keys within", sg8, defaults, "decode.keys=256", nil, ""},
		{"decoding rows within", sg8, defaults, "decode.rows=64", nil, ""},
		{"decoding rows past a small memory", sg8, DeviceBounds{Memory: 2 << 10}, "decode.rows=64", []string{"decode.rows"}, "fuseddecode.wgsl's tiles"},
		{"the defaults on a small device", sg8, DeviceBounds{Invocations: 64, SizeX: 64, Memory: 2 << 10}, "", nil, ""},
		{"no bounds", sg8, DeviceBounds{}, "decode.wg=256,tile.keys=256", nil, ""},
		{"the cpu plan", cpu, lavapipe, "", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			set, err := parseTuning(c.set)
			if err != nil {
				t.Fatal(err)
			}
			got, refused := c.a.Fit(set, c.dev)
			var names []string
			want := set
			for _, r := range refused {
				names = append(names, r.Knob)
				k := knobNamed(r.Knob)
				if r.Value != *k.field(&set) || r.Default != *k.field(&defaultTuning) {
					t.Errorf("refused %+v; want the value set, %d, and the default, %d", r, *k.field(&set), *k.field(&defaultTuning))
				}
				*k.field(&want) = *k.field(&defaultTuning)
			}
			if !slices.Equal(names, c.refused) {
				t.Errorf("Fit(%s) refused %v; want %v", c.set, JoinRefusals(refused), c.refused)
			}
			if got != want {
				t.Errorf("Fit(%s) = %q; want %q", c.set, got, want)
			}
			if s := JoinRefusals(refused); c.why != "" && !strings.Contains(s, c.why) {
				t.Errorf("Fit(%s) says %q; want it to say %q", c.set, s, c.why)
			}
			if len(refused) > 0 && !strings.Contains(refused[0].String(), c.refused[0]+"=") {
				t.Errorf("%q does not name the setting", refused[0])
			}
		})
	}
}

// TestTunedFit: a tuning file's classes are fitted each alone, and each
// refusal names its class.
func TestTunedFit(t *testing.T) {
	hw, _ := Choose("hardware", gputypes.DeviceTypeDiscreteGPU)
	a := hw.WithSubgroupMin(8)
	lanes, _ := parseTuning("decode.lanes=32,decode.batch=4")
	keys, _ := parseTuning("tile.keys=64,tile.reg=64")
	c1, c2 := Class{KernelLaneDecode, 1, 4, 128, 128, 4096}, Class{KernelTile, 4096, 1, 128, 128, 4096}
	in := &Tuned{Path: "f.json", classes: map[Class]Tuning{c1: lanes, c2: keys}, order: []Class{c1, c2}}
	out, refused := in.Fit(func(t Tuning) (Tuning, []Refusal) { return a.Fit(t, DeviceBounds{Memory: 32 << 10}) })
	want := c1.String() + ": decode.batch=4; " + c2.String() + ": tile.keys=64,tile.reg=64"
	if out.String() != want || out.Path != in.Path {
		t.Errorf("fitted: %s; want %s", out, want)
	}
	if len(refused) != 1 || !strings.HasPrefix(refused[0], c1.String()+": decode.lanes=32 refused (") {
		t.Errorf("refused %q; want decode.lanes=32 of %v", refused, c1)
	}
	if in.String() != c1.String()+": decode.lanes=32,decode.batch=4; "+c2.String()+": tile.keys=64,tile.reg=64" {
		t.Errorf("Fit changed the file it fitted: %s", in)
	}
}
