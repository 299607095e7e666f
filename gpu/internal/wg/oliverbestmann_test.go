//go:build cgo && !nogpu && !gowebgpu && !gogpu

package wg

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/attn-go/attn/internal/gputest"
	"github.com/gogpu/gputypes"
	"github.com/oliverbestmann/webgpu/wgpu"
)

// TestLayout checks that the binding's structs still match the mirrors
// oliverbestmann.go reads C handles through, field by field as v1.36.0
// declares them (written out here, not taken from the mirrors), and that
// a mismatch is an error.
func TestLayout(t *testing.T) {
	if err := checkLayout(); err != nil {
		t.Fatal(err)
	}
	type field struct {
		name         string
		offset, size uintptr
	}
	handle := []field{{"ref", 0, 8}, {"shared", 8, 1}}
	child := []field{{"ref", 0, 8}, {"device", 8, 8}, {"shared", 16, 1}}
	for _, c := range []struct {
		typ    reflect.Type
		fields []field
	}{
		{reflect.TypeFor[wgpu.Adapter](), handle},
		{reflect.TypeFor[wgpu.Device](), handle},
		{reflect.TypeFor[wgpu.QuerySet](), handle},
		{reflect.TypeFor[wgpu.CommandBuffer](), handle},
		{reflect.TypeFor[wgpu.Buffer](), child},
		{reflect.TypeFor[wgpu.Queue](), child},
		{reflect.TypeFor[wgpu.CommandEncoder](), child},
		{reflect.TypeFor[wgpu.ComputePassEncoder](), child},
	} {
		if unsafe.Sizeof(uintptr(0)) != 8 {
			t.Skip("the offsets written here are a 64-bit platform's")
		}
		if c.typ.NumField() != len(c.fields) {
			t.Errorf("%v has %d fields, want %d", c.typ, c.typ.NumField(), len(c.fields))
			continue
		}
		for i, want := range c.fields {
			f := c.typ.Field(i)
			if f.Name != want.name || f.Offset != want.offset || f.Type.Size() != want.size {
				t.Errorf("%v field %d is %s at %d, %d bytes; want %s at %d, %d bytes",
					c.typ, i, f.Name, f.Offset, f.Type.Size(), want.name, want.offset, want.size)
			}
			if kind := f.Type.Kind(); (want.name == "shared") != (kind == reflect.Bool) || (want.name != "shared" && kind != reflect.Pointer) {
				t.Errorf("%v field %s is a %v", c.typ, f.Name, kind)
			}
		}
	}
	type moved struct {
		device, ref unsafe.Pointer
		shared      bool
	}
	type grown struct {
		ref, device unsafe.Pointer
		shared      bool
		label       string
	}
	type retyped struct {
		ref, device uintptr
		shared      bool
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[moved](), reflect.TypeFor[grown](), reflect.TypeFor[retyped](), reflect.TypeFor[handleMirror]()} {
		if err := sameLayout(typ, reflect.TypeFor[childMirror]()); err == nil {
			t.Errorf("%v accepted as the layout of wgpu.Buffer", typ)
		}
	}
}

// TestHeadersMatchBinding: include/ holds the binding's own webgpu.h and
// wgpu.h, byte for byte, of the version go.mod requires (include/README).
func TestHeadersMatchBinding(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", BindingModule).Output()
	if err != nil {
		t.Skipf("go list -m %s: %v", BindingModule, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Skipf("%s is not in the module cache (go mod download)", BindingModule)
	}
	for _, name := range []string{"webgpu.h", "wgpu.h"} {
		ours, err := os.ReadFile(filepath.Join("include", name))
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := os.ReadFile(filepath.Join(dir, "wgpu", "lib", "linux", "amd64", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ours, theirs) {
			t.Errorf("include/%s differs from %s's %s: copy the binding's (include/README)", name, filepath.Base(dir), name)
		}
	}
}

// A wgpu-native of another major release than include/'s headers is
// refused, naming both.
func TestNativeOf(t *testing.T) {
	if got := nativeVersion(uint32(wgpu.GetVersion())); !strings.HasPrefix(got, fmt.Sprint(nativeMajor, ".")) {
		t.Errorf("the linked wgpu-native is %s, want %d.x", got, nativeMajor)
	}
	if err := nativeOf(uint32(wgpu.GetVersion())); err != nil {
		t.Fatalf("nativeOf(the linked library) = %v", err)
	}
	for _, v := range []uint32{0, 0x1b000200, 0x1e000000} {
		err := nativeOf(v)
		if err == nil || !strings.Contains(err.Error(), nativeVersion(v)) || !strings.Contains(err.Error(), fmt.Sprint("wgpu-native ", nativeMajor, "'s headers")) {
			t.Errorf("nativeOf(%#x) = %v; want an error naming %s and %d", v, err, nativeVersion(v), nativeMajor)
		}
	}
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
	a := testAdapter(t)
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
// their Release drops at once (the binding's v1.36.0 does; v1.0.0 left it
// to a finalizer), or a closed device would stay in memory until a
// collection came. Reference gives its handle a reference of its own
// too.
func TestReleaseDropsDeviceRefs(t *testing.T) {
	a := testAdapter(t)
	d, err := a.RequestDevice("", nil, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	mirror := func(p unsafe.Pointer) *childMirror { return (*childMirror)(p) }
	held := map[string]*childMirror{"queue": mirror(unsafe.Pointer(d.queue))}
	b, err := d.CreateBuffer("", 256, UsageStorage|UsageCopyDst)
	if err != nil {
		t.Fatal(err)
	}
	held["buffer"] = mirror(unsafe.Pointer(b.raw))
	r, err := Reference(b.Native())
	if err != nil {
		t.Fatal(err)
	}
	held["reference"] = mirror(unsafe.Pointer(r.raw))
	e, err := d.CreateEncoder()
	if err != nil {
		t.Fatal(err)
	}
	held["encoder"] = mirror(unsafe.Pointer(e.raw))
	for what, m := range held {
		if m.device != unsafe.Pointer(deviceRef(d.raw)) {
			t.Errorf("the %s holds device %p, want %p", what, m.device, deviceRef(d.raw))
		}
	}
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
	if ok, err := d.Owns(r.Native()); !ok || err != nil {
		t.Errorf("d.Owns(reference) = %v, %v; want true", ok, err)
	}
	other.Release()
	b.Release()
	if r.Size() != 256 {
		t.Errorf("the reference's buffer is %d bytes after the first handle's Release", r.Size())
	}
	r.Destroy()
	d.Release()
	for what, m := range held {
		if m.ref != nil || m.device != nil {
			t.Errorf("the %s's handle or its reference to the device outlives its Release", what)
		}
	}
	if handleOf(d.raw) != nil {
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
	a := testAdapter(t)
	enc, adapterPasses := a.TimestampsInside()
	if a.HasFeature(gputypes.FeatureTimestampQuery) != enc {
		t.Errorf("the adapter has TimestampQuery %v but timestamps inside encoders %v", a.HasFeature(gputypes.FeatureTimestampQuery), enc)
	}
	lo, hi := a.SubgroupSize()
	if lo > hi || hi&(hi-1) != 0 || lo&(lo-1) != 0 || (lo == 0) != (hi == 0) {
		t.Errorf("SubgroupSize() = %d, %d; want powers of two, the first at most the second, or 0, 0", lo, hi)
	}
	t.Logf("adapter: subgroup sizes %d to %d", lo, hi)
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
		{reflect.TypeFor[wgpu.Adapter](), reflect.TypeFor[handleMirror]()},
		{reflect.TypeFor[wgpu.Buffer](), reflect.TypeFor[handleMirror]()},
	}
	err := layoutOf(bad)
	if err == nil || !strings.Contains(err.Error(), "wgpu.Buffer") || !strings.Contains(err.Error(), Versions()) {
		t.Errorf("layoutOf a mismatched mirror = %v; want an error naming wgpu.Buffer and %q", err, Versions())
	}
}

// TestRefusalWords: a device request wgpu-native refuses comes back with
// its words, where the binding's error says only "failed to request
// device".
func TestRefusalWords(t *testing.T) {
	a := testAdapter(t)
	l := DefaultLimits()
	l.MaxComputeInvocationsPerWorkgroup = 1 << 30
	d, err := a.RequestDevice("", nil, l)
	if err == nil {
		d.Release()
		t.Fatal("a device of 2^30 invocations a workgroup was granted")
	}
	if msg := err.Error(); strings.Contains(msg, "failed to request device") || !strings.Contains(strings.ToLower(msg), "limit") {
		t.Errorf("the refusal says %q; want wgpu-native's words about the limit", msg)
	}
	t.Logf("refused: %v", err)
}

// TestCoopMatrix: cooperative matrices are asked for where the adapter
// offers them and end granted or refused with wgpu-native's words; the
// log says which, and what wgpu-native says to a request for them on an
// adapter that does not offer them (docs/gpu.md records it for
// lavapipe). Under ATTN_COOP_OFFERED=1 (CI's step on Mesa 26's
// lavapipe, .ci/mesa26.sh) some adapter must offer them, so that the
// offered branch is run, not only read.
func TestCoopMatrix(t *testing.T) {
	adapters := testInstance(t).Adapters()
	if len(adapters) == 0 {
		gputest.Unavailable(t, errors.New("no adapter"))
	}
	offered := false
	for _, a := range adapters {
		name := a.Info().Name
		c := a.ProbeCoopMatrix()
		offered = offered || c.Offered
		switch {
		case !c.Offered && (c.Requested || c.Granted || c.Refused != ""):
			t.Errorf("%s: %+v: asked for cooperative matrices the adapter does not offer", name, c)
		case c.Offered && c.Granted == (c.Refused != ""):
			t.Errorf("%s: %+v: want granted or refused with words", name, c)
		}
		d, err := a.RequestDevice("", nil, DefaultLimits())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := d.CoopMatrix(); got.Offered != c.Offered || got.Granted != c.Granted {
			t.Errorf("%s: the device's %+v, the probe's %+v", name, got, c)
		}
		d.Release()
		t.Logf("%s: cooperative matrices %+v", name, c)
		if !c.Offered {
			_, err := a.requestDevice(&wgpu.DeviceDescriptor{
				RequiredFeatures: []wgpu.FeatureName{wgpu.NativeFeatureCooperativeMatrix},
				RequiredLimits:   ptr(nativeLimits(DefaultLimits())),
			})
			t.Logf("%s: asked for them anyway: %v", name, err)
		}
		a.Release()
	}
	if os.Getenv("ATTN_COOP_OFFERED") == "1" && !offered {
		t.Error("ATTN_COOP_OFFERED=1, but no adapter offers cooperative matrices")
	}
}
