//go:build cgo && !nogpu && !gowebgpu

package wg

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/attn-go/attn/gpu/gputest"
	"github.com/gogpu/gputypes"
	"github.com/oliverbestmann/webgpu/wgpu"
)

// TestWaitLayout checks that the binding's structs still match the
// mirrors v27.go reads C handles through, and that a mismatch is an
// error.
func TestWaitLayout(t *testing.T) {
	if err := checkLayout(); err != nil {
		t.Fatal(err)
	}
	type moved struct{ device, ref unsafe.Pointer }
	type grown struct {
		ref, device unsafe.Pointer
		label       string
	}
	type retyped struct{ ref, device uintptr }
	for _, typ := range []reflect.Type{reflect.TypeFor[moved](), reflect.TypeFor[grown](), reflect.TypeFor[retyped]()} {
		if err := sameLayout(typ, reflect.TypeFor[bufferMirror]()); err == nil {
			t.Errorf("%v accepted as the layout of wgpu.Buffer", typ)
		}
	}
}

func TestNativeVersion(t *testing.T) {
	for v, want := range map[uint32]string{
		0:          "(version not recorded in the library)",
		0x1b000200: "27.0.2.0",
	} {
		if got := nativeVersion(v); got != want {
			t.Errorf("nativeVersion(%#x) = %q, want %q", v, got, want)
		}
	}
	if got := nativeVersion(uint32(wgpu.GetVersion())); !strings.HasPrefix(got, "27.") {
		t.Errorf("the linked wgpu-native is %s, want 27.x", got)
	}
}

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
			if want := "oliverbestmann/webgpu " + f[1] + ", wgpu-native "; !strings.HasPrefix(Versions(), want) {
				t.Errorf("Versions() = %q, want it to begin %q", Versions(), want)
			}
			return
		}
	}
	t.Errorf("go.mod does not require %s", path)
}

// TestConvertFeatures: TimestampQuery counts only with timestamps inside
// encoders, where attn writes them; subgroups and f16 are named.
func TestConvertFeatures(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []wgpu.FeatureName
		want gputypes.Features
	}{
		{"none", nil, 0},
		{"timestamps alone", []wgpu.FeatureName{wgpu.FeatureNameTimestampQuery}, 0},
		{"timestamps in encoders", []wgpu.FeatureName{wgpu.FeatureNameTimestampQuery, wgpu.NativeFeatureTimestampQueryInsideEncoders},
			gputypes.Features(gputypes.FeatureTimestampQuery)},
		{"f16 and subgroups", []wgpu.FeatureName{wgpu.FeatureNameShaderF16, wgpu.NativeFeatureSubgroup, wgpu.NativeFeatureSubgroupBarrier},
			gputypes.Features(gputypes.FeatureShaderF16 | gputypes.FeatureSubgroupOperations | gputypes.FeatureSubgroupBarrier)},
		{"no counterpart", []wgpu.FeatureName{wgpu.NativeFeatureRayQuery, wgpu.FeatureName(0x7fff)}, 0},
	} {
		if got := convertFeatures(tc.in); got != tc.want {
			t.Errorf("%s: convertFeatures(%v) = %#x, want %#x", tc.name, tc.in, uint64(got), uint64(tc.want))
		}
	}
	seen := map[gputypes.Feature]wgpu.FeatureName{}
	for w, g := range featureMap {
		if prev, ok := seen[g]; ok {
			t.Errorf("%v and %v both map to %v", prev, w, g)
		}
		seen[g] = w
	}
}

// TestDeviceNoFeatures reads the features and limits of a device
// requested with none, where the binding's own GetFeatures crashes.
func TestDeviceNoFeatures(t *testing.T) {
	if _, ok := os.LookupEnv("NODEVICE_SELECT"); !ok {
		t.Setenv("NODEVICE_SELECT", "1")
	}
	SetLogLevel(LogOff)
	inst := NewInstance()
	defer inst.Release()
	a, err := inst.HighPerformanceAdapter()
	if err != nil {
		gputest.Unavailable(t, err)
	}
	defer a.Release()
	d, err := a.RequestDevice("", nil, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	if fs := d.Features(); fs.Contains(gputypes.FeatureTimestampQuery) {
		t.Errorf("a device asked for no features has %#x", uint64(fs))
	}
	if l := d.Limits(); l.MaxStorageBuffersPerShaderStage != 8 || l.MaxComputeInvocationsPerWorkgroup != 256 {
		t.Errorf("a device of the default limits has %+v", l)
	}
	t.Logf("adapter: %+v; features %#x; %s", a.Info(), uint64(a.Features()), Versions())
}

// TestReleaseDropsDeviceRefs: the binding's queues, buffers, encoders and
// compute passes each hold a reference of their own to the device, which
// their Release leaves to a finalizer; wg's Releases drop it at once, or
// a closed device stays in memory until a collection comes (v27.go's
// mirrors say more). Reference gives its handle a reference of its own
// too.
func TestReleaseDropsDeviceRefs(t *testing.T) {
	if _, ok := os.LookupEnv("NODEVICE_SELECT"); !ok {
		t.Setenv("NODEVICE_SELECT", "1")
	}
	SetLogLevel(LogOff)
	inst := NewInstance()
	defer inst.Release()
	a, err := inst.HighPerformanceAdapter()
	if err != nil {
		gputest.Unavailable(t, err)
	}
	defer a.Release()
	d, err := a.RequestDevice("", nil, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	held := func(what string, p unsafe.Pointer) *wgpu.Device {
		t.Helper()
		if p == nil {
			t.Fatalf("%s holds no device", what)
		}
		return (*wgpu.Device)(p)
	}
	devs := map[string]*wgpu.Device{"queue": held("queue", (*queueMirror)(unsafe.Pointer(d.queue)).device)}
	b, err := d.CreateBuffer("", 256, UsageStorage|UsageCopyDst)
	if err != nil {
		t.Fatal(err)
	}
	devs["buffer"] = held("buffer", (*bufferMirror)(unsafe.Pointer(b.raw)).device)
	r, err := Reference(b.Native())
	if err != nil {
		t.Fatal(err)
	}
	devs["reference"] = held("reference", (*bufferMirror)(unsafe.Pointer(r.raw)).device)
	if devs["reference"] == devs["buffer"] {
		t.Error("Reference shares the buffer's reference to the device")
	}
	e, err := d.CreateEncoder()
	if err != nil {
		t.Fatal(err)
	}
	devs["encoder"] = held("encoder", (*encoderMirror)(unsafe.Pointer(e.raw)).device)
	if err := e.ComputePass(nil); err != nil {
		t.Fatal(err)
	}
	e.Release()
	other, err := d.CreateBuffer("", 256, UsageStorage|UsageCopyDst)
	if err != nil {
		t.Fatal(err)
	}
	if !Same(r, b) || !Same(b, r) || Same(r, other) {
		t.Errorf("Same(reference, its buffer) = %v, Same(reference, another buffer) = %v; want true, false", Same(r, b), Same(r, other))
	}
	other.Release()
	b.Release()
	if r.Size() != 256 {
		t.Errorf("the reference's buffer is %d bytes after the first handle's Release", r.Size())
	}
	r.Destroy()
	d.Release()
	for what, dev := range devs {
		if (*deviceMirror)(unsafe.Pointer(dev)).ref != nil {
			t.Errorf("the %s's reference to the device outlives its Release", what)
		}
	}
	if (*deviceMirror)(unsafe.Pointer(d.raw)).ref != nil {
		t.Error("the device outlives its Release")
	}
}

// TestTimestampsInside: where timestamps may be written, as the adapter
// offers and a device asked for TimestampQuery (which brings timestamps
// inside encoders, and inside passes where the adapter offers those) or
// for nothing has them.
func TestTimestampsInside(t *testing.T) {
	for _, c := range []struct {
		fs                  []wgpu.FeatureName
		wantEnc, wantPasses bool
	}{
		{nil, false, false},
		{[]wgpu.FeatureName{wgpu.FeatureNameTimestampQuery}, false, false},
		{[]wgpu.FeatureName{wgpu.NativeFeatureTimestampQueryInsideEncoders}, true, false},
		{[]wgpu.FeatureName{wgpu.FeatureNameShaderF16, wgpu.NativeFeatureTimestampQueryInsidePasses, wgpu.NativeFeatureTimestampQueryInsideEncoders}, true, true},
	} {
		if enc, passes := timestampsInside(c.fs); enc != c.wantEnc || passes != c.wantPasses {
			t.Errorf("timestampsInside(%v) = %v, %v; want %v, %v", c.fs, enc, passes, c.wantEnc, c.wantPasses)
		}
	}
	if _, ok := os.LookupEnv("NODEVICE_SELECT"); !ok {
		t.Setenv("NODEVICE_SELECT", "1")
	}
	SetLogLevel(LogOff)
	inst := NewInstance()
	defer inst.Release()
	a, err := inst.HighPerformanceAdapter()
	if err != nil {
		gputest.Unavailable(t, err)
	}
	defer a.Release()
	enc, adapterPasses := a.TimestampsInside()
	if a.HasFeature(gputypes.FeatureTimestampQuery) != enc {
		t.Errorf("the adapter has TimestampQuery %v but timestamps inside encoders %v", a.HasFeature(gputypes.FeatureTimestampQuery), enc)
	}
	if lo, hi := a.SubgroupSize(); lo != 0 || hi != 0 || SubgroupSizeUnreported == "" {
		t.Errorf("SubgroupSize() = %d, %d (%q); wgpu-native 27 reports none", lo, hi, SubgroupSizeUnreported)
	}
	t.Logf("adapter: timestamps inside encoders %v, inside passes %v", enc, adapterPasses)
	for _, fs := range [][]gputypes.Feature{nil, {gputypes.FeatureTimestampQuery}} {
		if len(fs) > 0 && !enc {
			continue
		}
		d, err := a.RequestDevice("", fs, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if enc, passes := d.TimestampsInside(); enc != (len(fs) > 0) || passes != (len(fs) > 0 && adapterPasses) {
			t.Errorf("a device asked for %v has timestamps inside encoders %v, inside passes %v", fs, enc, passes)
		}
		d.Release()
	}
}

// The layout check passes for this build's binding and fails, naming the
// versions and the struct, for a mirror that does not match (a binding
// whose Buffer lost its device field, as an adapter's mirror has it).
func TestLayoutCheck(t *testing.T) {
	if err := Check(); err != nil {
		t.Fatalf("Check() = %v for the binding go.mod names", err)
	}
	bad := []struct{ real, mirror reflect.Type }{
		{reflect.TypeFor[wgpu.Instance](), reflect.TypeFor[instanceMirror]()},
		{reflect.TypeFor[wgpu.Buffer](), reflect.TypeFor[adapterMirror]()},
	}
	err := layoutOf(bad)
	if err == nil || !strings.Contains(err.Error(), "wgpu.Buffer") || !strings.Contains(err.Error(), Versions()) {
		t.Errorf("layoutOf a mismatched mirror = %v; want an error naming wgpu.Buffer and %q", err, Versions())
	}
}
