//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/wg"
	"github.com/attn-go/attn/internal/gputest"
	"github.com/gogpu/gputypes"
)

// requireAdapter skips the test, with the reason, when this host has no
// adapter the backend would choose ($ATTN_ADAPTER included), and fails it
// instead when $ATTN_REQUIRE_GPU is 1.
func requireAdapter(t testing.TB) {
	t.Helper()
	testAdapter(t)
}

// mustInstance is newInstance, failing t where it fails.
func mustInstance(t testing.TB) *wg.Instance {
	t.Helper()
	inst, err := newInstance()
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// testAdapter returns the instance and the adapter chooseAdapter picks,
// released when the test ends; it skips or fails as requireAdapter does
// when there is none.
func testAdapter(t testing.TB) (*wg.Instance, *wg.Adapter) {
	t.Helper()
	inst := mustInstance(t)
	a, err := chooseAdapter(inst)
	if err != nil {
		inst.Release()
		gputest.Unavailable(t, err)
	}
	t.Cleanup(func() {
		a.Release()
		inst.Release()
	})
	return inst, a
}

func TestSetupLoggingDisablesDeviceSelect(t *testing.T) {
	inst := mustInstance(t)
	inst.Release()
	_, nds := os.LookupEnv("NODEVICE_SELECT")
	_, mds := os.LookupEnv("MESA_VK_DEVICE_SELECT")
	if !nds && !mds {
		t.Error("NODEVICE_SELECT is still unset after newInstance")
	}
}

func TestChooseAdapterNoMatch(t *testing.T) {
	const want = "no-such-adapter-Zq9"
	t.Setenv(envAdapter, want)
	inst := mustInstance(t)
	defer inst.Release()
	a, err := chooseAdapter(inst)
	if err == nil {
		a.Release()
		t.Fatalf("chooseAdapter with %s=%q succeeded", envAdapter, want)
	}
	if a != nil {
		t.Errorf("chooseAdapter returned an adapter with its error %v", err)
	}
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("error %v does not wrap ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), envAdapter) || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s=%q", err, envAdapter, want)
	}
	// The names on offer are listed, when there are any.
	if infos, _ := Adapters(); len(infos) > 0 && !strings.Contains(err.Error(), infos[0].Adapter.Name) {
		t.Errorf("error %q does not list the adapter %q", err, infos[0].Adapter.Name)
	}
}

func TestChooseAdapterMatch(t *testing.T) {
	t.Setenv(envAdapter, "")
	requireAdapter(t)
	infos, err := Adapters()
	if err != nil {
		t.Fatalf("chooseAdapter found an adapter but Adapters() = %v", err)
	}
	for _, info := range infos {
		name := info.Adapter.Name
		// A piece of the name in another case still picks an adapter
		// whose name holds it.
		want := strings.ToUpper(name[:min(len(name), 8)])
		t.Run(want, func(t *testing.T) {
			t.Setenv(envAdapter, want)
			_, a := testAdapter(t)
			if got := a.Info().Name; !strings.Contains(strings.ToUpper(got), want) {
				t.Errorf("%s=%q chose %q", envAdapter, want, got)
			}
		})
	}
	if strings.Contains(strings.ToLower(infos[0].Adapter.Name), "llvmpipe") {
		t.Setenv(envAdapter, "llvmpipe")
		_, a := testAdapter(t)
		if got := a.Info().Name; !strings.Contains(got, "llvmpipe") {
			t.Errorf("%s=llvmpipe chose %q", envAdapter, got)
		}
	}
}

func TestAdapters(t *testing.T) {
	requireAdapter(t)
	infos, err := Adapters()
	if err != nil || len(infos) == 0 {
		t.Fatalf("Adapters() = %d adapters, %v; want at least one", len(infos), err)
	}
	for _, info := range infos {
		a, l := info.Adapter, info.Limits
		if info.Kind != backend.KindGPU || a.Backend != gputypes.BackendVulkan || a.Name == "" || info.Threads != 0 {
			t.Errorf("Adapters() gave %+v; want a named Vulkan GPU", info)
		}
		if l.MaxStorageBufferBindingSize < 128<<20 || l.MaxBufferSize < l.MaxStorageBufferBindingSize/2 ||
			l.MaxComputeInvocationsPerWorkgroup < 256 || l.MaxComputeWorkgroupStorageSize < 16<<10 ||
			l.MaxComputeWorkgroupsPerDimension < 65535 || l.MaxStorageBuffersPerShaderStage < 8 {
			t.Errorf("%s: limits below WebGPU's minimums: %+v", a.Name, l)
		}
		if info.Detail != wg.Versions() {
			t.Errorf("%s: Detail = %q, want the library versions %q", a.Name, info.Detail, wg.Versions())
		}
		if a.DeviceType == gputypes.DeviceTypeCPU && !strings.Contains(a.Name, "llvmpipe") {
			t.Logf("%s: a CPU adapter other than lavapipe", a.Name)
		}
	}
}

// TestNoDriver hides every Vulkan driver from the loader: Adapters and
// chooseAdapter must then fail with ErrUnavailable and the hint, not
// panic.
func TestNoDriver(t *testing.T) {
	nowhere := t.TempDir() + "/none.json"
	t.Setenv("VK_ICD_FILENAMES", nowhere)
	t.Setenv("VK_DRIVER_FILES", nowhere)
	t.Setenv(envAdapter, "")
	infos, err := Adapters()
	if len(infos) != 0 || !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), "mesa-vulkan-drivers") {
		t.Errorf("Adapters() without a driver = %v, %v; want none and ErrUnavailable with the hint", infos, err)
	}
	inst := mustInstance(t)
	defer inst.Release()
	a, err := chooseAdapter(inst)
	if a != nil || !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), "no Vulkan adapter") {
		t.Errorf("chooseAdapter without a driver = %v, %v; want ErrUnavailable", a, err)
	}
	t.Setenv(envAdapter, "llvmpipe")
	a, err = chooseAdapter(inst)
	if a != nil || !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), `"llvmpipe"`) {
		t.Errorf("chooseAdapter(%s=llvmpipe) without a driver = %v, %v; want ErrUnavailable naming it", envAdapter, a, err)
	}
}

// TestRequiredLimits checks that a device asked for requiredLimits gets
// the adapter's compute limits rather than WebGPU's minimums.
func TestRequiredLimits(t *testing.T) {
	_, a := testAdapter(t)
	have := a.Limits()
	req := requiredLimits(a)
	def := wg.DefaultLimits()

	compute := []string{
		"MaxStorageBufferBindingSize", "MaxBufferSize", "MaxUniformBufferBindingSize",
		"MaxComputeWorkgroupStorageSize", "MaxComputeInvocationsPerWorkgroup",
		"MaxComputeWorkgroupSizeX", "MaxComputeWorkgroupSizeY", "MaxComputeWorkgroupSizeZ",
		"MaxComputeWorkgroupsPerDimension", "MaxStorageBuffersPerShaderStage", "MaxUniformBuffersPerShaderStage",
		"MaxBindGroups", "MaxBindingsPerBindGroup",
		"MaxDynamicUniformBuffersPerPipelineLayout", "MaxDynamicStorageBuffersPerPipelineLayout",
		"MinStorageBufferOffsetAlignment", "MinUniformBufferOffsetAlignment",
	}
	isCompute := map[string]bool{}
	hv, rv, dv := reflect.ValueOf(have), reflect.ValueOf(req), reflect.ValueOf(def)
	for _, name := range compute {
		isCompute[name] = true
		if h, r := hv.FieldByName(name).Uint(), rv.FieldByName(name).Uint(); h != 0 && r != definedU64(h) {
			t.Errorf("requiredLimits.%s = %d, want the adapter's %d", name, r, h)
		}
	}
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		if !isCompute[name] && rv.Field(i).Uint() != dv.Field(i).Uint() {
			t.Errorf("requiredLimits.%s = %d, want the default %d", name, rv.Field(i).Uint(), dv.Field(i).Uint())
		}
	}

	dev, err := a.RequestDevice("attn requiredLimits test", nil, req)
	if err != nil {
		t.Fatalf("RequestDevice with requiredLimits: %v", err)
	}
	defer dev.Release()
	got := dev.Limits()
	gv := reflect.ValueOf(got)
	for _, name := range compute {
		g, h, d := gv.FieldByName(name).Uint(), hv.FieldByName(name).Uint(), dv.FieldByName(name).Uint()
		switch {
		case g == definedU64(h):
		case h >= 1<<31 && g < h && g >= d:
			// wgpu grants a limit the adapter reports as all but
			// unbounded at its own cap (an NVIDIA adapter's 4294967295
			// bindings a group come as 1000): still past WebGPU's
			// default, which is all attn's kernels need.
			t.Logf("device %s = %d, the adapter's %d capped", name, g, h)
		default:
			t.Errorf("device %s = %d, want the adapter's %d", name, g, h)
		}
	}
}

// TestDefinedU64 checks that a limit the adapter leaves unbounded
// (webgpu.h's undefined value) is asked for as one less, and every other
// as it is.
func TestDefinedU64(t *testing.T) {
	for _, c := range [][2]uint64{{0, 0}, {1, 1}, {256 << 20, 256 << 20}, {math.MaxUint64 - 1, math.MaxUint64 - 1}, {math.MaxUint64, math.MaxUint64 - 1}} {
		if got := definedU64(c[0]); got != c[1] {
			t.Errorf("definedU64(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}

// A binding the shim was not written for (wg.Check fails) makes New,
// Adapters, DescribeAdapters and NewWithDevice refuse with
// ErrUnavailable, saying why, instead of opening with no adapter.
func TestBindingCheckRefuses(t *testing.T) {
	inst, a := testAdapter(t)
	_ = inst
	dev, err := a.RequestDevice("", nil, wg.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Release()
	const why = "gpu: the WebGPU binding (test) is not one attn was built for"
	restore := wg.SetCheck(errors.New(why))
	defer restore()
	_, errNew := New()
	_, errAdapters := Adapters()
	_, errDescribe := DescribeAdapters()
	_, errWith := NewWithDevice(a.Native(), dev.Native())
	for name, err := range map[string]error{"New": errNew, "Adapters": errAdapters, "DescribeAdapters": errDescribe, "NewWithDevice": errWith} {
		if !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), why) {
			t.Errorf("%s with a failing binding check: %v; want ErrUnavailable saying %q", name, err, why)
		}
	}
}

// ATTN_GPU_LIMITS=default opens a device of WebGPU's default limits (Info
// says so), adapter or unset the adapter's, and any other value is
// refused with ErrUnavailable naming it.
func TestLimitsEnv(t *testing.T) {
	requireAdapter(t)
	def := wg.DefaultLimits()
	for _, c := range []struct {
		env      string
		defaults bool
	}{{"", false}, {"adapter", false}, {"default", true}} {
		t.Setenv(envLimits, c.env)
		b, err := New()
		if err != nil {
			t.Fatalf("%s=%q: %v", envLimits, c.env, err)
		}
		lim, detail := b.Info().Limits, b.Info().Detail
		b.Close()
		if said := strings.Contains(detail, "default limits"); said != c.defaults {
			t.Errorf("%s=%q: Detail %q says default limits: %v", envLimits, c.env, detail, said)
		}
		if c.defaults && (lim.MaxStorageBuffersPerShaderStage != def.MaxStorageBuffersPerShaderStage || lim.MaxStorageBufferBindingSize != def.MaxStorageBufferBindingSize ||
			lim.MaxComputeWorkgroupStorageSize != def.MaxComputeWorkgroupStorageSize) {
			t.Errorf("%s=default: device limits %d storage buffers, %d-byte bindings, %d bytes of workgroup memory; want WebGPU's defaults",
				envLimits, lim.MaxStorageBuffersPerShaderStage, lim.MaxStorageBufferBindingSize, lim.MaxComputeWorkgroupStorageSize)
		}
	}
	t.Setenv(envLimits, "max")
	if b, err := New(); !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), `"max"`) {
		if err == nil {
			b.Close()
		}
		t.Errorf("%s=max: %v, want ErrUnavailable naming it", envLimits, err)
	}
}
