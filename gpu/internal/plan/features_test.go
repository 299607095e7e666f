package plan

import (
	"strings"
	"testing"

	"github.com/attn-go/attn/gpu/internal/shaders"
	"github.com/gogpu/gputypes"
)

// TestParseFeatures checks ATTN_GPU_FEATURES's syntax: name=on|off pairs
// over every feature on, names and values in any case, and an error
// naming the variable and the pair for an unknown or repeated name or
// another value.
func TestParseFeatures(t *testing.T) {
	for _, c := range []struct {
		in   string
		def  KernelFeatures
		want KernelFeatures
		err  string
	}{
		{in: "", def: allFeatures, want: allFeatures},
		{in: " , ", def: KernelFeatures{}, want: KernelFeatures{}},
		{in: "f16=off", def: allFeatures, want: KernelFeatures{subgroups: true, tileSubgroups: true}},
		{in: " Subgroups = OFF ,", def: allFeatures, want: KernelFeatures{f16: true, tileSubgroups: true}},
		{in: "f16=off,subgroups=off,tile-subgroups=off", def: allFeatures, want: KernelFeatures{}},
		{in: "f16=on,subgroups=off", def: KernelFeatures{}, want: KernelFeatures{f16: true}},
		{in: "f16=auto,subgroups=on", def: KernelFeatures{}, want: KernelFeatures{subgroups: true}},
		{in: "TILE-subgroups=on", def: KernelFeatures{}, want: KernelFeatures{tileSubgroups: true}},
		{in: "f16=auto", def: allFeatures, want: allFeatures},
		{in: "f16", err: `"f16" is not name=value with a name of f16, subgroups, tile-subgroups`},
		{in: "fp16=off", err: `"fp16=off"`},
		{in: "f16=no", err: "f16=no: want on, off or auto"},
		{in: "f16=off,f16=on", err: "f16 is set twice"},
	} {
		got, err := parseFeatures(c.in, c.def)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), envFeatures) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseFeatures(%q) = %v, %v; want an error naming %s and %q", c.in, got, err, envFeatures, c.err)
			}
		case err != nil:
			t.Errorf("parseFeatures(%q): %v", c.in, err)
		case got != c.want:
			t.Errorf("parseFeatures(%q) = %+v; want %+v", c.in, got, c.want)
		}
	}
}

// TestFeaturesOn checks that a plan uses a feature only where the device
// has it (f16 only where the binding compiles it too) and
// ATTN_GPU_FEATURES leaves it on (the CPU plan leaves f16 off unless it
// says on), that the plan's description says which,
// and that the kernels' specialisations follow: f16 where an operand is
// float16, subgroups in the key lanes, fuseddecode.wgsl and fusedtile.wgsl
// only.
func TestFeaturesOn(t *testing.T) {
	var both gputypes.Features
	both.Insert(gputypes.FeatureShaderF16)
	both.Insert(gputypes.FeatureSubgroupOperations)
	for _, c := range []struct {
		env      string
		fs       gputypes.Features
		compiles bool
		want     KernelFeatures
	}{
		{"", both, true, allFeatures},
		{"", both, false, KernelFeatures{subgroups: true, tileSubgroups: true}},
		{"", 0, true, KernelFeatures{}},
		{"subgroups=off", both, true, KernelFeatures{f16: true}},
		{"subgroups=off,tile-subgroups=on", both, true, KernelFeatures{f16: true}},
		{"f16=off,subgroups=off", both, true, KernelFeatures{}},
		{"f16=on", both, true, allFeatures},
		{"tile-subgroups=on", both, true, allFeatures},
		{"tile-subgroups=off", both, true, KernelFeatures{f16: true, subgroups: true}},
	} {
		t.Setenv(envPlan, "")
		t.Setenv(envFeatures, c.env)
		for _, dt := range []gputypes.DeviceType{gputypes.DeviceTypeCPU, gputypes.DeviceTypeDiscreteGPU} {
			a, err := FromEnv(dt)
			if err != nil {
				t.Fatal(err)
			}
			a = a.On(c.fs, c.compiles)
			want := c.want
			if !a.Hardware && !strings.Contains(c.env, "f16=on") {
				want.f16 = false // the CPU plan's default (planFeatures)
			}
			if a.Hardware && !strings.Contains(c.env, "tile-subgroups=on") {
				want.tileSubgroups = false // the hardware plan's default (planFeatures)
			}
			if a.Features != want || !strings.Contains(a.String(), "features: "+want.String()+")") {
				t.Errorf("%s=%q, device %v (compiles f16 %v): plan %q, features %+v; want %+v", envFeatures, c.env, c.fs, c.compiles, a, a.Features, want)
			}
		}
	}
	t.Setenv(envFeatures, "f16=maybe")
	if _, err := FromEnv(gputypes.DeviceTypeCPU); err == nil || !strings.Contains(err.Error(), envFeatures) {
		t.Errorf("%s=f16=maybe: %v; want an error naming it", envFeatures, err)
	}

	mem := 32 << 10
	f16, f32 := shaders.F16, shaders.F32
	cpu, _ := Choose("cpu", gputypes.DeviceTypeCPU)
	hw, _ := Choose("hardware", gputypes.DeviceTypeDiscreteGPU)
	// Each kernel as a plan with features f chooses it: the features
	// are the choice's.
	lanes := func(f KernelFeatures) FusedKernel {
		a := cpu
		a.Features = f
		k, ok := a.LaneKernel(mem, 128, 128, 4, 1, 4096)
		if !ok {
			t.Fatal("no key lanes for D = 128, 4 heads a KV head")
		}
		return k
	}
	decode := func(f KernelFeatures) FusedKernel {
		a := hw
		a.Features = f
		k, ok := a.decodeFor(mem, 128, 128, 4, 1)
		if !ok {
			t.Fatal("no decoding kernel for D = 128, 4 heads a KV head")
		}
		return k
	}
	// fusedtile.wgsl at D = 128 here has 16 key groups a row: they meet
	// by shuffles on subgroups of 32, not of 8.
	prefillOn := func(sgMin int) func(KernelFeatures) FusedKernel {
		return func(f KernelFeatures) FusedKernel {
			a := hw.WithSubgroupMin(sgMin)
			a.Features = f
			return a.PrefillKernel(mem, 128, 128)
		}
	}
	prefill := prefillOn(32)
	loop := func(f KernelFeatures) FusedKernel {
		a := hw
		a.Features = f
		return a.PrefillKernel(mem, 64, 64)
	}
	for _, c := range []struct {
		name     string
		choice   func(KernelFeatures) FusedKernel
		f        KernelFeatures
		k        shaders.Elem
		f16, sgs bool
	}{
		{"lanes f16", lanes, allFeatures, f16, true, true},
		{"lanes f32", lanes, allFeatures, f32, false, true},
		{"lanes off", lanes, KernelFeatures{}, f16, false, false},
		{"decode f16", decode, allFeatures, f16, true, true},
		{"decode subgroups off", decode, KernelFeatures{f16: true}, f16, true, false},
		{"tile", prefill, allFeatures, f16, true, true},
		{"tile subgroups off", prefill, KernelFeatures{f16: true, tileSubgroups: true}, f16, true, false},
		{"tile's subgroups off", prefill, KernelFeatures{f16: true, subgroups: true}, f16, true, false},
		{"tile's key groups past the subgroup", prefillOn(8), allFeatures, f16, true, false},
		{"loop", loop, allFeatures, f16, false, false},
		{"rows", func(f KernelFeatures) FusedKernel {
			a := cpu
			a.Features = f
			return a.PrefillKernel(mem, 64, 64)
		}, allFeatures, f16, true, false},
	} {
		s := c.choice(c.f).Spec(f32, c.k, c.k, f32)
		if shaders.EnablesF16(s) != c.f16 || shaders.UsesSubgroups(s) != c.sgs {
			t.Errorf("%s: %s; want f16 %v, subgroups %v", c.name, s.Kernel().Key(s), c.f16, c.sgs)
		}
	}
}

// A backward kernel binds float16 operands as f16 arrays only where the
// plan's f16 is on and one of its operands is float16, as the forward's
// kernels do (usesF16).
func TestBackwardUsesF16(t *testing.T) {
	on, off := BackwardPlan{F16: true}, BackwardPlan{}
	for _, c := range []struct {
		bp    BackwardPlan
		elems []shaders.Elem
		want  bool
	}{
		{on, []shaders.Elem{shaders.F32, shaders.F16}, true},
		{on, []shaders.Elem{shaders.F32, shaders.BF16}, false},
		{off, []shaders.Elem{shaders.F16, shaders.F16}, false},
	} {
		if got := c.bp.UsesF16(c.elems...); got != c.want {
			t.Errorf("F16 %v, operands %v: UsesF16 %v, want %v", c.bp.F16, c.elems, got, c.want)
		}
	}
	if got := (AdapterPlan{Features: KernelFeatures{f16: true}}); !func() bool { bp, ok := got.Backward(16384, 64, 64); return ok && bp.F16 }() {
		t.Error("a plan with f16 on plans a backward without it")
	}
}

// TestBackwardLanes checks how many invocations share a key of
// backkv.wgsl and a row of backq.wgsl: one under the CPU plan and
// without subgroups; under the hardware plan the fewest that bring an
// invocation's arrays within backLaneRegs vec4s, each a power of two
// dividing both head dims' vec4s, within the least subgroup size and 4.
func TestBackwardLanes(t *testing.T) {
	mem := 48 << 10
	cpu, _ := Choose("cpu", gputypes.DeviceTypeCPU)
	hw, _ := Choose("hardware", gputypes.DeviceTypeDiscreteGPU)
	noSG := hw.WithSubgroupMin(32)
	noSG.Features.subgroups = false
	for _, c := range []struct {
		name  string
		a     AdapterPlan
		d, dv int
		kv, q int
	}{
		{"cpu plan", cpu.WithSubgroupMin(32), 128, 128, 1, 1},
		{"no subgroups", noSG, 128, 128, 1, 1},
		{"D = 32", hw.WithSubgroupMin(32), 32, 32, 1, 1},
		{"D = 64", hw.WithSubgroupMin(32), 64, 64, 2, 2},
		{"D = 72, 18 vec4s", hw.WithSubgroupMin(32), 72, 72, 2, 2},
		{"D = 128", hw.WithSubgroupMin(32), 128, 128, 4, 4},
		{"D = 128, Dv = 64", hw.WithSubgroupMin(32), 128, 64, 4, 4},
		{"D = 64, Dv = 32", hw.WithSubgroupMin(32), 64, 32, 2, 2},
		{"D = 256, at most 4", hw.WithSubgroupMin(32), 256, 256, 4, 4},
		{"subgroups of 2", hw.WithSubgroupMin(2), 128, 128, 2, 2},
		{"D = 68, 17 vec4s", hw.WithSubgroupMin(32), 68, 68, 1, 1},
	} {
		bp, ok := c.a.Backward(mem, c.d, c.dv)
		if !ok {
			t.Fatalf("%s: no backward plan", c.name)
		}
		kv, q := bp.KV(c.d, c.dv), bp.Q(c.d, c.dv)
		if kv.L != c.kv || q.L != c.q || kv.WG != BackWG*c.kv || q.WG != BackWG*c.q || kv.SG != (c.kv > 1) || q.SG != (c.q > 1) {
			t.Errorf("%s: backkv L = %d (WG %d, SG %v), backq L = %d (WG %d, SG %v); want %d and %d", c.name, kv.L, kv.WG, kv.SG, q.L, q.WG, q.SG, c.kv, c.q)
		}
		for _, s := range []shaders.Spec{kv, q} {
			if err := shaders.Check(s); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		}
	}
}
