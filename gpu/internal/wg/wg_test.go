//go:build (cgo || gogpu) && !nogpu

package wg

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/attn-go/attn/internal/gputest"
	"github.com/gogpu/gputypes"
)

func TestLogLevel(t *testing.T) {
	for in, want := range map[string]LogLevel{
		"off": LogOff, "error": LogError, "warn": LogWarn,
		"info": LogInfo, "debug": LogDebug, "trace": LogTrace,
		" Trace ": LogTrace, "INFO": LogInfo, "1": LogWarn, "yes": LogWarn,
	} {
		if got := ParseLogLevel(in); got != want {
			t.Errorf("ParseLogLevel(%q) = %v, want %v", in, got, want)
		}
	}
}

// testInstance is an instance on the Vulkan backend, released when the
// test ends, with wgpu-native quiet and Mesa's device selection layer
// off unless the environment says otherwise.
func testInstance(t *testing.T) *Instance {
	t.Helper()
	if _, ok := os.LookupEnv("NODEVICE_SELECT"); !ok {
		t.Setenv("NODEVICE_SELECT", "1")
	}
	SetLogLevel(LogOff)
	inst := NewInstance()
	t.Cleanup(inst.Release)
	return inst
}

// testAdapter is the high-performance Vulkan adapter; the test skips
// without one, and fails under ATTN_REQUIRE_GPU=1 (gputest).
func testAdapter(t *testing.T) *Adapter {
	t.Helper()
	a, err := testInstance(t).HighPerformanceAdapter()
	if err != nil {
		gputest.Unavailable(t, err)
	}
	t.Cleanup(a.Release)
	return a
}

// testDevice is a device of the default limits and no features on
// testAdapter's adapter.
func testDevice(t *testing.T) *Device {
	t.Helper()
	d, err := testAdapter(t).RequestDevice("", nil, DefaultLimits())
	if err != nil {
		gputest.Unavailable(t, err)
	}
	t.Cleanup(d.Release)
	return d
}

func TestNativeVersion(t *testing.T) {
	for v, want := range map[uint32]string{
		0:          "(version not recorded in the library)",
		0x00110002: "0.17.0.2",
		0x01020304: "1.2.3.4",
		0x1b000200: "27.0.2.0",
		0x1d000101: "29.0.1.1",
	} {
		if got := nativeVersion(v); got != want {
			t.Errorf("nativeVersion(%#x) = %q, want %q", v, got, want)
		}
	}
	if got := linked(); !strings.HasPrefix(got, linkedName+" ") {
		t.Errorf("linked() = %q, want %s's version", got, linkedName)
	}
	t.Logf("linked: %s", linked())
}

// TestBindingVersion: bindingVersion is the binding's release that
// go.mod requires, and Versions names it.
func TestBindingVersion(t *testing.T) {
	mod, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Skipf("go.mod: %v", err)
	}
	const path = BindingModule + " "
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require ")); len(f) >= 2 && f[0]+" " == path {
			if f[1] != bindingVersion {
				t.Errorf("bindingVersion = %s, but go.mod requires %s", bindingVersion, f[1])
			}
			if want := bindingName + " " + f[1] + ", " + linkedName + " "; !strings.HasPrefix(Versions(), want) {
				t.Errorf("Versions() = %q, want it to begin %q", Versions(), want)
			}
			return
		}
	}
	t.Errorf("go.mod does not require %s", path)
}

// TestLimitsRoundTrip: every limit limitNames lists, and push constants,
// go into the binding's request and come back from its report unchanged,
// each in its own field (distinct values, some beyond 32 bits); the
// limits it leaves out come back 0.
func TestLimitsRoundTrip(t *testing.T) {
	var in gputypes.Limits
	v := reflect.ValueOf(&in).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Uint64 {
			f.SetUint(1<<40 + uint64(i))
		} else {
			f.SetUint(1000 + uint64(i))
		}
	}
	want := gputypes.Limits{MaxPushConstantSize: in.MaxPushConstantSize}
	w := reflect.ValueOf(&want).Elem()
	for _, name := range limitNames {
		w.FieldByName(name).Set(v.FieldByName(name))
	}
	if got := convertLimits(nativeLimits(in)); got != want {
		t.Errorf("convertLimits(nativeLimits(l))\n got %+v\nwant %+v", got, want)
	}
}

// TestFeatureNames: a device request names each feature the binding's
// table pairs with a flag, and drops one it does not.
func TestFeatureNames(t *testing.T) {
	for n, g := range featureMap {
		if got := featureNames(featureMap, []gputypes.Feature{g}); len(got) != 1 || got[0] != n {
			t.Errorf("featureNames(%v) = %v, want [%v]", g, got, n)
		}
		if set := featureSet(featureMap, featureNames(featureMap, []gputypes.Feature{g})); set != gputypes.Features(g) {
			t.Errorf("%v comes back as %#x", g, uint64(set))
		}
	}
	if got := featureNames(featureMap, []gputypes.Feature{1 << 63}); len(got) != 0 {
		t.Errorf("featureNames(a flag gputypes does not name) = %v, want none", got)
	}
}

// TestDescribeAdapter describes the adapter through the binding: an
// instance on Vulkan only gives Vulkan adapters, and the vendor is named
// after the vendor id.
func TestDescribeAdapter(t *testing.T) {
	info := testAdapter(t).Info()
	if info.Backend != gputypes.BackendVulkan || info.Name == "" || info.Vendor != VendorName(info.VendorID) {
		t.Errorf("the adapter is described as %+v; want a named Vulkan adapter whose vendor is VendorName(%#x), %q", info, info.VendorID, VendorName(info.VendorID))
	}
	t.Logf("%+v", info)
}
