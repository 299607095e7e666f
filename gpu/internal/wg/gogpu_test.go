//go:build gogpu && !nogpu

package wg

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/gogpu/gputypes"
	"github.com/gogpu/wgpu"
)

// TestLayout: the binding's Buffer still has the fields of the mirror
// gogpu_layout.go reads, and a struct that differs in order, size or a
// field's type is refused.
func TestLayout(t *testing.T) {
	if err := checkLayout(); err != nil {
		t.Fatal(err)
	}
	type moved struct {
		device   *wgpu.Device
		core     *wgpu.Buffer
		cleanup  runtime.Cleanup
		released *atomic.Bool
	}
	type grown struct {
		bufferMirror
		label string
	}
	type retyped struct {
		core     *wgpu.Device
		device   *wgpu.Device
		cleanup  runtime.Cleanup
		released *atomic.Bool
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[moved](), reflect.TypeFor[grown](), reflect.TypeFor[retyped]()} {
		if err := sameTypes(typ, reflect.TypeFor[bufferMirror]()); err == nil {
			t.Errorf("%v accepted as the layout of wgpu.Buffer", typ)
		}
	}
}

// TestUsageBits: wg's usage flags are gputypes', which the binding takes
// as they are.
func TestUsageBits(t *testing.T) {
	for u, g := range map[Usage]gputypes.BufferUsage{
		UsageMapRead: gputypes.BufferUsageMapRead, UsageMapWrite: gputypes.BufferUsageMapWrite,
		UsageCopySrc: gputypes.BufferUsageCopySrc, UsageCopyDst: gputypes.BufferUsageCopyDst,
		UsageUniform: gputypes.BufferUsageUniform, UsageStorage: gputypes.BufferUsageStorage,
		UsageQueryResolve: gputypes.BufferUsageQueryResolve,
	} {
		if uint64(u) != uint64(g) {
			t.Errorf("usage %#x is gputypes' %#x", uint64(u), uint64(g))
		}
	}
	if uint32(MapRead) != uint32(wgpu.MapModeRead) || uint32(MapWrite) != uint32(wgpu.MapModeWrite) {
		t.Errorf("map modes %d, %d are the binding's %d, %d", MapRead, MapWrite, wgpu.MapModeRead, wgpu.MapModeWrite)
	}
}

// TestCheckCopy: a copy the binding would record unchecked is refused
// for each of WebGPU's reasons, and one within the rules passes.
func TestCheckCopy(t *testing.T) {
	const src, dst = gputypes.BufferUsageCopySrc, gputypes.BufferUsageCopyDst
	for _, c := range []struct {
		name              string
		su                gputypes.BufferUsage
		ssize, soff       uint64
		du                gputypes.BufferUsage
		dsize, doff, size uint64
		want              string
	}{
		{"fits", src, 64, 16, dst, 32, 0, 32, ""},
		{"whole", src, 64, 0, dst, 64, 0, 64, ""},
		{"no CopySrc", dst, 64, 0, dst, 64, 0, 4, "CopySrc"},
		{"no CopyDst", src, 64, 0, src, 64, 0, 4, "CopyDst"},
		{"unaligned offset", src, 64, 2, dst, 64, 0, 4, "multiples of 4"},
		{"unaligned size", src, 64, 0, dst, 64, 0, 6, "multiples of 4"},
		{"source overrun", src, 64, 48, dst, 64, 0, 32, "source"},
		{"offset past source", src, 64, 68, dst, 64, 0, 0, "source"},
		{"destination overrun", src, 64, 0, dst, 16, 4, 16, "destination"},
	} {
		err := checkCopy(c.su, c.ssize, c.soff, c.du, c.dsize, c.doff, c.size)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}

// TestWithinLimits: a request beyond the adapter's maximum, or below its
// alignment, is refused, naming the limit.
func TestWithinLimits(t *testing.T) {
	have := DefaultLimits()
	for _, c := range []struct {
		name string
		edit func(*gputypes.Limits)
		want string
	}{
		{"same", func(*gputypes.Limits) {}, ""},
		{"less", func(l *gputypes.Limits) { l.MaxBufferSize /= 2 }, ""},
		{"coarser alignment", func(l *gputypes.Limits) { l.MinStorageBufferOffsetAlignment *= 2 }, ""},
		{"more", func(l *gputypes.Limits) { l.MaxComputeWorkgroupStorageSize++ }, "MaxComputeWorkgroupStorageSize"},
		{"finer alignment", func(l *gputypes.Limits) { l.MinUniformBufferOffsetAlignment /= 2 }, "MinUniformBufferOffsetAlignment"},
		{"push constants", func(l *gputypes.Limits) { l.MaxPushConstantSize = have.MaxPushConstantSize + 4 }, "MaxPushConstantSize"},
	} {
		req := have
		c.edit(&req)
		err := withinLimits(req, have)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}

// TestRequestRefused: the binding grants any request unchecked, so wg
// refuses a feature the adapter does not offer and a limit beyond its.
func TestRequestRefused(t *testing.T) {
	a := testAdapter(t)
	over := a.Limits()
	over.MaxBufferSize++
	for _, c := range []struct {
		name string
		fs   []gputypes.Feature
		l    gputypes.Limits
		want string
	}{
		{"timestamps", []gputypes.Feature{gputypes.FeatureTimestampQuery}, DefaultLimits(), "does not offer"},
		{"limits", nil, over, "MaxBufferSize"},
	} {
		d, err := a.RequestDevice("", c.fs, c.l)
		if err == nil {
			d.Release()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a refusal saying %q", c.name, err, c.want)
		}
	}
}

// TestNoTimestamps: the binding has no timestamp queries, so none are
// offered and every timestamp call fails, saying so.
func TestNoTimestamps(t *testing.T) {
	d := testDevice(t)
	if enc, pass := d.TimestampsInside(); enc || pass || d.Features().Contains(gputypes.FeatureTimestampQuery) {
		t.Errorf("the device offers timestamps (%v, %v, %v)", enc, pass, d.Features())
	}
	if _, err := d.CreateTimestamps("", 2); !errors.Is(err, errNoTimestamps) {
		t.Errorf("CreateTimestamps: %v", err)
	}
	e, err := d.CreateEncoder()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release()
	for name, err := range map[string]error{
		"WriteTimestamp":     e.WriteTimestamp(nil, 0),
		"ComputePassStamped": e.ComputePassStamped(nil, nil, 0),
		"ResolveQuerySet":    e.ResolveQuerySet(nil, 0, 0, nil, 0),
	} {
		if !errors.Is(err, errNoTimestamps) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestReference: a second handle to a buffer keeps it alive after the
// first is released, is the same buffer (Same, Owns) with its contents,
// and a destroyed buffer is found (Alive) and not mapped.
func TestReference(t *testing.T) {
	d := testDevice(t)
	b, err := d.CreateBuffer("", 16, UsageStorage|UsageCopySrc|UsageCopyDst)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteBuffer(b, 0, []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	r, err := Reference(b.Native())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !Same(b, r) || r.Native() == b.Native() {
		t.Errorf("the reference is not another handle to the same buffer")
	}
	if ok, err := d.Owns(r.Native()); !ok || err != nil {
		t.Errorf("d.Owns(reference) = %v, %v; want true", ok, err)
	}
	b.Release()
	if _, err := Reference(b.Native()); err == nil {
		t.Errorf("Reference of a released handle succeeded")
	}
	if err := d.Alive(r, 0, 16); err != nil {
		t.Fatalf("the buffer died with its first handle: %v", err)
	}
	read, err := d.CreateBuffer("", 16, UsageMapRead|UsageCopyDst)
	if err != nil {
		t.Fatal(err)
	}
	defer read.Release()
	e, err := d.CreateEncoder()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release()
	if err := e.CopyBufferToBuffer(r, 0, read, 0, 16); err != nil {
		t.Fatal(err)
	}
	cmd, err := e.Finish()
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Release()
	if err := d.Submit(cmd); err != nil {
		t.Fatal(err)
	}
	if got := readWords(t, d, read, 0, 16); !reflect.DeepEqual(got, []uint32{1, 2, 3, 4}) {
		t.Errorf("through the reference: %v, want [1 2 3 4]", got)
	}
	r.DestroyOnly()
	if err := d.Alive(r, 0, 16); err == nil || !strings.Contains(err.Error(), "destroyed") {
		t.Errorf("Alive(destroyed) = %v; want an error saying so", err)
	}
}

// TestCopyChecked: CopyBufferToBuffer refuses a copy within one buffer,
// which the binding would record.
func TestCopyChecked(t *testing.T) {
	d := testDevice(t)
	b, err := d.CreateBuffer("", 16, UsageCopySrc|UsageCopyDst)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	e, err := d.CreateEncoder()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release()
	if err := e.CopyBufferToBuffer(b, 0, b, 8, 8); err == nil {
		t.Error("a copy within one buffer was recorded")
	}
}

// TestNewBuffersZeroed: a new buffer reads zero, as WebGPU has it, on
// each of createBuffer's two ways (cleared on the queue, mapped at
// creation), where the binding would hand out memory a freed buffer
// wrote.
func TestNewBuffersZeroed(t *testing.T) {
	d := testDevice(t)
	const size = 4096
	ones := make([]byte, size)
	for i := range ones {
		ones[i] = 0xff
	}
	for _, usage := range []Usage{UsageStorage | UsageCopySrc | UsageCopyDst, UsageMapWrite | UsageCopySrc} {
		// Fill and free buffers of the size, so that the next one's
		// memory is likely theirs.
		for range 4 {
			b, err := d.CreateBuffer("", size, UsageStorage|UsageCopyDst)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.WriteBuffer(b, 0, ones); err != nil {
				t.Fatal(err)
			}
			flush(t, d)
			b.Release()
		}
		b, err := d.CreateBuffer("", size, usage)
		if err != nil {
			t.Fatal(err)
		}
		read, err := d.CreateBuffer("", size, UsageMapRead|UsageCopyDst)
		if err != nil {
			t.Fatal(err)
		}
		e, err := d.CreateEncoder()
		if err != nil {
			t.Fatal(err)
		}
		if err := e.CopyBufferToBuffer(b, 0, read, 0, size); err != nil {
			t.Fatal(err)
		}
		cmd, err := e.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Submit(cmd); err != nil {
			t.Fatal(err)
		}
		cmd.Release()
		e.Release()
		for i, w := range readWords(t, d, read, 0, size) {
			if w != 0 {
				t.Errorf("usage %#x: word %d of a new buffer is %#x, want 0", uint64(usage), i, w)
				break
			}
		}
		read.Release()
		b.Release()
	}
}

// flush submits an empty command buffer, which carries the queue's
// pending writes, and waits for it.
func flush(t *testing.T, d *Device) {
	t.Helper()
	e, err := d.CreateEncoder()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release()
	cmd, err := e.Finish()
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Release()
	if err := d.Submit(cmd); err != nil {
		t.Fatal(err)
	}
	p, err := d.OnWorkDone()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(0); err != nil {
		t.Fatal(err)
	}
}

// TestCompilerGaps pins the WGSL that gogpu/naga refuses where Rust naga
// takes it, beside the rewrite attn's kernels use: a refusal wraps
// backend.ErrUnsupported (createModule). When a new naga takes the
// refused forms, this test says so, and the kernels' rewrites can go.
func TestCompilerGaps(t *testing.T) {
	d := testDevice(t)
	const out = "@group(0) @binding(0) var<storage, read_write> o: array<f32>;\n"
	for _, c := range []struct {
		name, src string
		refused   bool
	}{
		{"a module constant named only inside bitcast, declared after the function",
			out + "@compute @workgroup_size(1) fn main() { let x = bitcast<f32>(K); o[0] = x; }\nconst K: u32 = 0xff800000u;\n", true},
		{"the constant named outside bitcast too",
			out + "@compute @workgroup_size(1) fn main() { let k = K; let x = bitcast<f32>(k); o[0] = x; }\nconst K: u32 = 0xff800000u;\n", false},
		{"a compound assignment through a pointer",
			out + "fn f(p: ptr<function, u32>) { *p += 2u; }\n@compute @workgroup_size(1) fn main() { var b = 0u; f(&b); o[0] = f32(b); }\n", true},
		{"the assignment written out",
			out + "fn f(p: ptr<function, u32>) { *p = *p + 2u; }\n@compute @workgroup_size(1) fn main() { var b = 0u; f(&b); o[0] = f32(b); }\n", false},
	} {
		m, err := d.createModule(c.name, c.src)
		if err == nil {
			m.Release()
		}
		switch {
		case c.refused && !errors.Is(err, backend.ErrUnsupported):
			t.Errorf("%s: %v; want the compiler's refusal, wrapping ErrUnsupported", c.name, err)
		case !c.refused && err != nil:
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestWriteThenRelease: a buffer released while a write into it waits
// for the next submission stays alive for the write (the binding's
// queue would copy into freed memory, and the driver kill the process),
// and the reference wg holds for it goes once the write has run.
func TestWriteThenRelease(t *testing.T) {
	d := testDevice(t)
	for i := range 4 {
		b, err := d.CreateBuffer("", 64, UsageStorage|UsageCopyDst)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.WriteBuffer(b, 0, make([]byte, 8)); err != nil {
			t.Fatal(err)
		}
		b.Release()
		if i%2 == 1 {
			flush(t, d)
		}
	}
	flush(t, d)
	flush(t, d) // drops the references held through the first
	d.wmu.Lock()
	n := len(d.held)
	d.wmu.Unlock()
	if n != 0 {
		t.Errorf("%d references held after the writes ran", n)
	}
}

// leadingBitsWGSL writes countLeadingZeros and firstLeadingBit of each
// input word.
const leadingBitsWGSL = `
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
	out[2u * g.x] = countLeadingZeros(x[g.x]);
	out[2u * g.x + 1u] = firstLeadingBit(x[g.x]);
}
`

// TestLeadingBits: the binding's compiler computes firstLeadingBit as
// WGSL has it, which quant8.wgsl uses, and countLeadingZeros wrong (as
// firstLeadingBit), so no kernel may use that: when a new naga computes
// it right, the test says so, and the kernels may use it again.
func TestLeadingBits(t *testing.T) {
	d := testDevice(t)
	in := []uint32{0, 1, 2, 3, 0xff, 0x100, 0x12345678, 0x7fffffff, 0x80000000, 0xffffffff}
	mk := func(usage Usage, words int) *Buffer {
		b, err := d.CreateBuffer("", uint64(4*words), usage|UsageCopyDst)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Release)
		return b
	}
	xb, ob, rb := mk(UsageStorage, len(in)), mk(UsageStorage|UsageCopySrc, 2*len(in)), mk(UsageMapRead, 2*len(in))
	bs := make([]byte, 0, 4*len(in))
	for _, w := range in {
		bs = binary.LittleEndian.AppendUint32(bs, w)
	}
	if err := d.WriteBuffer(xb, 0, bs); err != nil {
		t.Fatal(err)
	}
	p, err := d.CreatePipeline("leading bits", leadingBitsWGSL, "main", []BindingType{BindReadOnly, BindStorage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Release)
	g, err := d.CreateBindGroup(p, []Entry{{xb, 0, xb.Size()}, {ob, 0, ob.Size()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Release)
	e, err := d.CreateEncoder()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release()
	if err := e.ComputePass([]Dispatch{{p, g, [3]uint32{uint32(len(in)), 1, 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.CopyBufferToBuffer(ob, 0, rb, 0, ob.Size()); err != nil {
		t.Fatal(err)
	}
	cmd, err := e.Finish()
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Release()
	if err := d.Submit(cmd); err != nil {
		t.Fatal(err)
	}
	got := readWords(t, d, rb, 0, rb.Size())
	clzRight := true
	for i, x := range in {
		if want := uint32(31 - bits.LeadingZeros32(x)); got[2*i+1] != want {
			t.Errorf("firstLeadingBit(%#x) = %#x, want %#x", x, got[2*i+1], want)
		}
		clzRight = clzRight && got[2*i] == uint32(bits.LeadingZeros32(x))
	}
	if clzRight {
		t.Errorf("countLeadingZeros is right in this naga: quant8.wgsl's q4_code may use it again; this test expects the old answer")
		return
	}
	srcs, _ := filepath.Glob("../shaders/*.wgsl")
	libs, _ := filepath.Glob("../shaders/lib/*.wgsl")
	for _, f := range append(srcs, libs...) {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "countLeadingZeros(") {
			t.Errorf("%s uses countLeadingZeros, which this build computes wrong", f)
		}
	}
}
