package plan

import (
	"strings"
	"testing"

	"github.com/gogpu/gputypes"
)

// TestTarget: ATTN_GPU_TARGET names one of Targets (case and spaces
// aside) with the sizes issue 101 gives each; under it FromEnv plans
// the hardware plan on any adapter, lavapipe's CPU type included, and
// refuses ATTN_GPU_PLAN=cpu; an unknown name is an error naming the
// targets; unset, nothing changes.
func TestTarget(t *testing.T) {
	want := map[string]Target{
		"h100":  {"h100", 32, 32, 48 << 10, 1024},
		"h200":  {"h200", 32, 32, 48 << 10, 1024},
		"rdna3": {"rdna3", 32, 64, 64 << 10, 1024},
		"apple": {"apple", 32, 32, 32 << 10, 1024},
	}
	if len(Targets) != len(want) {
		t.Errorf("%d targets, want %d", len(Targets), len(want))
	}
	for name, w := range want {
		t.Setenv(envTarget, " "+strings.ToUpper(name)+" ")
		got, ok, err := TargetFromEnv()
		if err != nil || !ok || got != w {
			t.Errorf("%s: TargetFromEnv() = %+v, %t, %v; want %+v", name, got, ok, err, w)
		}
		if b := got.Bounds(); b.Memory != w.Memory || b.Invocations != 1024 || b.SizeX != 1024 {
			t.Errorf("%s: Bounds() = %+v", name, b)
		}
		for _, setting := range []string{"", "auto", "hardware"} {
			t.Setenv(envPlan, setting)
			a, err := FromEnv(gputypes.DeviceTypeCPU)
			if err != nil || !a.Hardware {
				t.Errorf("%s, %s=%q: FromEnv(CPU) = %v, %v; want the hardware plan", name, envPlan, setting, a, err)
			}
		}
		t.Setenv(envPlan, "cpu")
		if _, err := FromEnv(gputypes.DeviceTypeCPU); err == nil || !strings.Contains(err.Error(), envTarget) {
			t.Errorf("%s, %s=cpu: FromEnv err = %v; want it refused", name, envPlan, err)
		}
		t.Setenv(envPlan, "")
	}
	t.Setenv(envTarget, "b200")
	if _, _, err := TargetFromEnv(); err == nil || !strings.Contains(err.Error(), "h100, h200, rdna3, apple") {
		t.Errorf("b200: err = %v; want the targets named", err)
	}
	if _, err := FromEnv(gputypes.DeviceTypeDiscreteGPU); err == nil {
		t.Error("FromEnv under ATTN_GPU_TARGET=b200: no error")
	}
	t.Setenv(envTarget, "")
	if _, ok, err := TargetFromEnv(); ok || err != nil {
		t.Errorf("unset: ok %t, err %v", ok, err)
	}
	if a, err := FromEnv(gputypes.DeviceTypeCPU); err != nil || a.Hardware {
		t.Errorf("unset: FromEnv(CPU) = %v, %v; want the cpu plan", a, err)
	}
	// A target's workgroup memory sizes the tiles as a device's would:
	// fusedtile.wgsl's at D = 128 fit the target's memory and are larger
	// at rdna3's 64 KiB than at h200's 48.
	h200, _ := TargetNamed("h200")
	rdna3, _ := TargetNamed("rdna3")
	a, _ := defaultTuning.tileKernel(h200.Memory, 128, 128)
	b, _ := defaultTuning.tileKernel(rdna3.Memory, 128, 128)
	if a.BR*a.BC >= b.BR*b.BC || b.WorkgroupBytes() > rdna3.Memory {
		t.Errorf("tiles at h200's memory %+v, at rdna3's %+v; want rdna3's larger, within its memory", a, b)
	}
}
