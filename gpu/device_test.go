//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/gpu/internal/wg"
	"github.com/attn-go/attn/internal/gputest"
	"github.com/gogpu/gputypes"
)

// This file tests attn inside a program of its own on the GPU: the
// caller's device (NewWithDevice), buffers both ways (Import, Export)
// and steps recorded without a host wait (Step).

// callerDevice is the test playing a program that owns its GPU: an
// instance, an adapter and a device of its own (with limits, or the
// adapter's compute limits when nil), released when the test ends,
// after anything the test's cleanups close first. Without an adapter
// the test skips, or fails under ATTN_REQUIRE_GPU=1. It makes them
// through gpu/internal/wg, so that one test serves every binding, and
// gives attn the binding's own adapter and device (Native).
func callerDevice(t testing.TB, limits *gputypes.Limits) (*gpu.NativeAdapter, *wg.Device) {
	t.Helper()
	// As attn's own instances do (instance.go): Mesa's device-select
	// layer only adds warnings on a host without a desktop.
	if _, ok := os.LookupEnv("NODEVICE_SELECT"); !ok {
		os.Setenv("NODEVICE_SELECT", "1")
	}
	inst := wg.NewInstance()
	adapter, err := inst.HighPerformanceAdapter()
	if err != nil {
		inst.Release()
		gputest.Unavailable(t, errors.Join(errors.New("no Vulkan adapter"), err))
	}
	l := wg.DefaultLimits()
	if limits != nil {
		l = *limits
	} else {
		have := adapter.Limits()
		l.MaxStorageBufferBindingSize = have.MaxStorageBufferBindingSize
		l.MaxBufferSize = have.MaxBufferSize
		l.MaxComputeWorkgroupStorageSize = have.MaxComputeWorkgroupStorageSize
		l.MinStorageBufferOffsetAlignment = have.MinStorageBufferOffsetAlignment
	}
	dev, err := adapter.RequestDevice("caller", nil, l)
	if err != nil {
		adapter.Release()
		inst.Release()
		if limits != nil {
			t.Skipf("the adapter grants no device with these limits: %v", err)
		}
		gputest.Unavailable(t, err)
	}
	t.Cleanup(func() {
		dev.Release()
		adapter.Release()
		inst.Release()
	})
	return adapter.Native(), dev
}

// openOn opens attn on the caller's device, closed when the test ends
// (before the device is released: cleanups run last first).
func openOn(t testing.TB, adapter *gpu.NativeAdapter, dev *wg.Device) *gpu.Backend {
	t.Helper()
	b, err := gpu.NewWithDevice(adapter, dev.Native())
	if err != nil {
		t.Fatalf("NewWithDevice: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// callerBuffer creates a buffer of the caller's of size bytes and usage,
// released when the test ends.
func callerBuffer(t testing.TB, dev *wg.Device, size uint64, usage wg.Usage) *gpu.NativeBuffer {
	t.Helper()
	wb, err := dev.CreateBuffer("caller", size, usage)
	if err != nil {
		t.Fatalf("CreateBuffer(%d bytes): %v", size, err)
	}
	t.Cleanup(wb.Release)
	return wb.Native()
}

const rw = wg.UsageStorage | wg.UsageCopySrc | wg.UsageCopyDst

// importF32 imports n float32s of wb from byte off into b, failing the
// test on error.
func importF32(t testing.TB, b *gpu.Backend, wb *gpu.NativeBuffer, off uint64, n int) backend.Buffer {
	t.Helper()
	x, err := b.Import(wb, off, backend.Float32, n)
	if err != nil {
		t.Fatalf("Import(%d float32s at %d): %v", n, off, err)
	}
	return x
}

// naive is attention in float64, BHND, no mask: the test's own answer.
func naive(p backend.Problem, q, k, v []float32) []float32 {
	p = p.Resolved()
	o := make([]float32, p.B*p.H*p.Nq*p.Dv)
	g := p.H / p.KVHeads
	for b := range p.B {
		for h := range p.H {
			kh := h / g
			for i := range p.Nq {
				qi := q[((b*p.H+h)*p.Nq+i)*p.D:][:p.D]
				s := make([]float64, p.Nk)
				m := math.Inf(-1)
				for j := range p.Nk {
					kj := k[((b*p.KVHeads+kh)*p.Nk+j)*p.D:][:p.D]
					for d := range p.D {
						s[j] += float64(qi[d]) * float64(kj[d])
					}
					s[j] *= float64(p.Scale)
					m = max(m, s[j])
				}
				var l float64
				for j := range s {
					s[j] = math.Exp(s[j] - m)
					l += s[j]
				}
				oi := o[((b*p.H+h)*p.Nq+i)*p.Dv:][:p.Dv]
				for c := range p.Dv {
					var acc float64
					for j := range p.Nk {
						acc += s[j] * float64(v[((b*p.KVHeads+kh)*p.Nk+j)*p.Dv+c])
					}
					oi[c] = float32(acc / l)
				}
			}
		}
	}
	return o
}

func randSlice(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func closeTo(t testing.TB, what string, got, want []float32, tol float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); !(d <= tol*(1+math.Abs(float64(want[i])))) {
			t.Fatalf("%s: element %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

func smallProblem(nk int) backend.Problem {
	return backend.Problem{B: 1, H: 4, KVHeads: 2, Nq: 3, Nk: nk, D: 16, Dv: 16, Scale: 0.25}
}

// TestNewWithDevice runs Fused on attn opened on the caller's device over
// the caller's buffers (two of them sharing one wgpu buffer, at an
// aligned offset), and checks that Close leaves the device, its queue
// and the caller's buffers working.
func TestNewWithDevice(t *testing.T) {
	adapter, dev := callerDevice(t, nil)
	b, err := gpu.NewWithDevice(adapter, dev.Native())
	if err != nil {
		t.Fatalf("NewWithDevice: %v", err)
	}
	if !strings.Contains(b.Info().Detail, "caller's device") {
		t.Errorf("Info().Detail = %q, want it to say the device is the caller's", b.Info().Detail)
	}
	p := smallProblem(37)
	r := rand.New(rand.NewPCG(1, 2))
	q, k, v := randSlice(r, p.QLen()), randSlice(r, p.KLen()), randSlice(r, p.VLen())
	align := uint64(dev.Limits().MinStorageBufferOffsetAlignment)
	kOff := (uint64(p.QLen())*4 + align - 1) / align * align
	// Q and K in one buffer of the caller's (read-only operands may
	// share one), V and O in buffers of their own.
	qk := callerBuffer(t, dev, kOff+uint64(p.KLen()+4)*4, rw)
	vb := callerBuffer(t, dev, uint64(p.VLen()+4)*4, rw)
	ob := callerBuffer(t, dev, uint64(p.OLen()+4)*4, rw)
	bq, bk := importF32(t, b, qk, 0, p.QLen()), importF32(t, b, qk, kOff, p.KLen())
	bv, bo := importF32(t, b, vb, 0, p.VLen()), importF32(t, b, ob, 0, p.OLen())
	for _, w := range []struct {
		x backend.Buffer
		v []float32
	}{{bq, q}, {bk, k}, {bv, v}} {
		if err := b.Write(w.x, 0, w.v); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Fused(context.Background(), backend.FusedParams{Problem: p}, bq, bk, bv, bo, nil); err != nil {
		t.Fatalf("Fused over imported buffers: %v", err)
	}
	got := make([]float32, p.OLen())
	if err := b.Read(got, bo, 0); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "O", got, naive(p, q, k, v), 1e-5)

	// Close leaves the caller's device, queue and buffers: a second
	// backend on the same device still reads what the first wrote.
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	b2 := openOn(t, adapter, dev)
	again := make([]float32, p.OLen())
	if err := b2.Read(again, importF32(t, b2, ob, 0, p.OLen()), 0); err != nil {
		t.Fatalf("reading the caller's buffer after the first backend closed: %v", err)
	}
	closeTo(t, "O after Close", again, got, 0)
	if wb, err := dev.CreateBuffer("", 16, rw); err != nil {
		t.Errorf("the device after Close: %v", err)
	} else {
		wb.Destroy()
	}
}

// TestNewWithDeviceArgs: nil arguments are refused with ErrUnavailable.
func TestNewWithDeviceArgs(t *testing.T) {
	adapter, dev := callerDevice(t, nil)
	for _, c := range []struct {
		a *gpu.NativeAdapter
		d *gpu.NativeDevice
	}{{nil, dev.Native()}, {adapter, nil}, {nil, nil}} {
		if b, err := gpu.NewWithDevice(c.a, c.d); !errors.Is(err, backend.ErrUnavailable) {
			t.Errorf("NewWithDevice(%v, %v) = %v, %v; want ErrUnavailable", c.a != nil, c.d != nil, b, err)
		}
	}
}

// TestNewWithDeviceLimits opens a device with fewer storage buffers and
// invocations than attn's kernels bind and run, where the adapter
// grants one, and wants NewWithDevice to name both.
func TestNewWithDeviceLimits(t *testing.T) {
	l := wg.DefaultLimits()
	l.MaxStorageBuffersPerShaderStage = 4
	l.MaxComputeInvocationsPerWorkgroup = 64
	adapter, dev := callerDevice(t, &l)
	b, err := gpu.NewWithDevice(adapter, dev.Native())
	if err == nil {
		b.Close()
		t.Fatal("NewWithDevice on a device of 4 storage buffers and 64 invocations succeeded")
	}
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("error %v does not wrap ErrUnavailable", err)
	}
	for _, want := range []string{"maxStorageBuffersPerShaderStage 4 < 8", "maxComputeInvocationsPerWorkgroup 64 < 256"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// WebGPU's defaults are enough for every op, the backward pass's
	// too (its kernels bind at most 8 storage buffers; the conformance
	// suite runs on such a device under ATTN_GPU_LIMITS=default).
	if !t.Failed() {
		a2, d2 := callerDevice(t, ptr(wg.DefaultLimits()))
		b := openOn(t, a2, d2)
		p := backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 2, Nk: 2, D: 4}
		var bufs [9]backend.Buffer
		for i, n := range []int{8, 8, 8, 8, 2, 8, 8, 8, 8} {
			buf, err := b.Alloc(backend.Float32, n)
			if err != nil {
				t.Fatal(err)
			}
			defer buf.Release()
			bufs[i] = buf
		}
		if err := b.CheckBackward(backend.BackwardParams{Problem: p}, bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], bufs[7], bufs[8], nil); err != nil {
			t.Errorf("CheckBackward on a device of WebGPU's default limits: %v", err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestImportErrors: each bad import is refused naming the sizes, and a
// host copy without the usage it needs is ErrUnsupported.
func TestImportErrors(t *testing.T) {
	adapter, dev := callerDevice(t, nil)
	b := openOn(t, adapter, dev)
	align := uint64(max(dev.Limits().MinStorageBufferOffsetAlignment, 4))
	good := callerBuffer(t, dev, 1024, rw)
	_, otherDev := callerDevice(t, nil)
	other := callerBuffer(t, otherDev, 1024, rw)
	cases := []struct {
		name string
		buf  *gpu.NativeBuffer
		off  uint64
		dt   backend.DType
		n    int
		want error
		says string
	}{
		{"nil", nil, 0, backend.Float32, 4, backend.ErrShape, "nil"},
		{"negative", good, 0, backend.Float32, -1, backend.ErrShape, "-1"},
		{"dtype", good, 0, backend.DType(99), 4, backend.ErrShape, ""},
		{"too small", good, 0, backend.Float32, 257, backend.ErrShape, "1040 bytes"},
		{"too small at offset", good, align, backend.Float32, 256 - int(align)/4 + 1, backend.ErrShape, "short"},
		{"offset past end", good, 2048, backend.Float32, 0, backend.ErrShape, "2048"},
		{"half too small", good, 0, backend.Float16, 513, backend.ErrShape, "1040 bytes"},
		{"not storage", callerBuffer(t, dev, 1024, wg.UsageCopyDst|wg.UsageCopySrc), 0, backend.Float32, 4, backend.ErrUnsupported, "BufferUsage_Storage"},
		{"another device", other, 0, backend.Float32, 4, backend.ErrUnsupported, "another device"},
	}
	if align > 4 {
		cases = append(cases, struct {
			name string
			buf  *gpu.NativeBuffer
			off  uint64
			dt   backend.DType
			n    int
			want error
			says string
		}{"misaligned", good, 4, backend.Float32, 4, backend.ErrShape, "minStorageBufferOffsetAlignment"})
	}
	for _, c := range cases {
		x, err := b.Import(c.buf, c.off, c.dt, c.n)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: Import = %v, %v; want an error wrapping %v that says %q", c.name, x, err, c.want, c.says)
		}
	}
	// 256 float32s fill the 1024 bytes exactly; 0 elements take 16.
	for _, n := range []int{256, 0} {
		if _, err := b.Import(good, 0, backend.Float32, n); err != nil {
			t.Errorf("Import(%d float32s of 1024 bytes): %v", n, err)
		}
	}

	// Host copies need CopyDst (writes) and CopySrc (reads).
	noDst := importF32(t, b, callerBuffer(t, dev, 64, wg.UsageStorage|wg.UsageCopySrc), 0, 16)
	noSrc := importF32(t, b, callerBuffer(t, dev, 64, wg.UsageStorage|wg.UsageCopyDst), 0, 16)
	if err := b.Write(noDst, 0, []float32{1}); !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), "CopyDst") {
		t.Errorf("Write without CopyDst: %v", err)
	}
	if err := b.Read(make([]float32, 1), noSrc, 0); !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), "CopySrc") {
		t.Errorf("Read without CopySrc: %v", err)
	}
	if err := b.Write(noSrc, 0, []float32{1}); err != nil {
		t.Errorf("Write with CopyDst: %v", err)
	}
}

// TestImportAlias: an output may share its wgpu buffer with no other
// operand, however the imports' ranges lie, and a buffer of another
// backend is foreign.
func TestImportAlias(t *testing.T) {
	adapter, dev := callerDevice(t, nil)
	b := openOn(t, adapter, dev)
	p := smallProblem(8)
	align := uint64(dev.Limits().MinStorageBufferOffsetAlignment)
	align = (uint64(p.KLen())*4 + align - 1) / align * align // a slot for each operand
	one := callerBuffer(t, dev, 4*align, rw)
	q, k := importF32(t, b, one, 0, p.QLen()), importF32(t, b, one, align, p.KLen())
	v, o := importF32(t, b, one, 2*align, p.VLen()), importF32(t, b, one, 3*align, p.OLen())
	ctx := context.Background()
	err := b.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, nil)
	if !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), "one wgpu buffer") {
		t.Errorf("Fused with O in Q's wgpu buffer: %v; want ErrShape naming the shared buffer", err)
	}
	same := importF32(t, b, one, 0, p.OLen())
	if err := b.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, same, nil); !errors.Is(err, backend.ErrShape) {
		t.Errorf("Fused with O imported over Q: %v; want ErrShape", err)
	}
	c, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cb, _ := c.Alloc(backend.Float32, p.OLen())
	if err := b.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, cb, nil); !errors.Is(err, backend.ErrForeignBuffer) {
		t.Errorf("Fused into a CPU buffer: %v; want ErrForeignBuffer", err)
	}
	if _, _, err := gpu.Export(cb); !errors.Is(err, backend.ErrForeignBuffer) {
		t.Errorf("Export of a CPU buffer: %v; want ErrForeignBuffer", err)
	}
	// The same imports on another backend of the same device are
	// foreign to this one.
	b2 := openOn(t, adapter, dev)
	o2 := importF32(t, b2, callerBuffer(t, dev, uint64(p.OLen())*4, rw), 0, p.OLen())
	if err := b.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o2, nil); !errors.Is(err, backend.ErrForeignBuffer) {
		t.Errorf("Fused into another backend's import: %v; want ErrForeignBuffer", err)
	}
}

// TestImportRelease: releasing an import leaves the caller's buffer
// working, and releasing the caller's handle leaves the import working.
func TestImportRelease(t *testing.T) {
	adapter, dev := callerDevice(t, nil)
	b := openOn(t, adapter, dev)
	want := []float32{1, 2, 3, 4, 5}
	h, err := dev.CreateBuffer("", 64, rw)
	if err != nil {
		t.Fatal(err)
	}
	wb := h.Native()
	x := importF32(t, b, wb, 0, 5)
	if err := b.Write(x, 0, want); err != nil {
		t.Fatal(err)
	}
	y := importF32(t, b, wb, 0, 5)
	x.Release()
	x.Release()
	got := make([]float32, 5)
	if err := b.Read(got, y, 0); err != nil {
		t.Fatalf("Read through a second import after releasing the first: %v", err)
	}
	closeTo(t, "after releasing an import", got, want, 0)
	h.Release() // the caller's handle: attn's own keeps the buffer
	clear(got)
	if err := b.Read(got, y, 0); err != nil {
		t.Fatalf("Read after the caller released its handle: %v", err)
	}
	closeTo(t, "after the caller's release", got, want, 0)
	if err := b.Read(got, x, 0); !errors.Is(err, backend.ErrReleased) {
		t.Errorf("Read of a released import: %v; want ErrReleased", err)
	}
	if _, _, err := gpu.Export(x); !errors.Is(err, backend.ErrReleased) {
		t.Errorf("Export of a released import: %v; want ErrReleased", err)
	}
	y.Release()
}

// TestExport: the caller copies an attn buffer, found by Export, with a
// command of its own, and an imported buffer exports as itself.
func TestExport(t *testing.T) {
	adapter, dev := callerDevice(t, nil)
	b := openOn(t, adapter, dev)
	want := []float32{3, 1, 4, 1, 5, 9, 2, 6}
	a, err := b.Alloc(backend.Float32, len(want))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Write(a, 0, want); err != nil {
		t.Fatal(err)
	}
	wa, off, err := gpu.Export(a)
	if err != nil || wa == nil || off != 0 {
		t.Fatalf("Export(Alloc'd) = %v, %d, %v", wa, off, err)
	}
	dst := callerBuffer(t, dev, 64, rw)
	enc, err := dev.CreateEncoder()
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.CopyBufferToBuffer(wg.WrapBuffer(wa), off, wg.WrapBuffer(dst), 16, uint64(len(want))*4); err != nil {
		t.Fatal(err)
	}
	cmd, err := enc.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Submit(cmd); err != nil {
		t.Fatal(err)
	}
	cmd.Release()
	enc.Release()
	got := make([]float32, len(want))
	if err := b.Read(got, importF32(t, b, dst, 0, 16), 4); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "the caller's copy of an exported buffer", got, want, 0)

	align := uint64(max(dev.Limits().MinStorageBufferOffsetAlignment, 4))
	big := callerBuffer(t, dev, 2*align+64, rw)
	x := importF32(t, b, big, align, 4)
	if wx, ox, err := gpu.Export(x); err != nil || ox != align || wx == nil {
		t.Errorf("Export(import at %d) = %v, %d, %v", align, wx, ox, err)
	}
}

// TestConformanceImported runs the conformance suite with every buffer
// the caller's: imported, never allocated by attn, at an offset. It is a
// long check (ATTN_LONG=1; CI's step of long checks): the suite's cases
// again, about a minute on lavapipe, where TestImport* and
// TestConformance/Views cover the imported buffers' own rules.
func TestConformanceImported(t *testing.T) {
	skipUnlessLong(t)
	backendtest.Run(t, openImporting)
}

// importing is the gpu backend on a device of the caller's whose Alloc
// creates a wgpu buffer of the caller's, at an aligned offset past the
// start, and imports it, as a program that owns its buffers would.
type importing struct {
	*gpu.Backend
	dev *wg.Device
}

func openImporting(t testing.TB) backend.Backend {
	adapter, dev := callerDevice(t, nil)
	b, err := gpu.NewWithDevice(adapter, dev.Native())
	if err != nil {
		t.Fatalf("NewWithDevice: %v", err)
	}
	return importing{b, dev}
}

func (x importing) Alloc(t backend.DType, n int) (backend.Buffer, error) {
	if n < 0 || !t.Storable() || n%t.Block() != 0 {
		return nil, backend.Errorf(backend.ErrShape, "importing: alloc of %d %v elements", n, t)
	}
	if n > x.Caps().MaxBufferLen {
		return nil, backend.Errorf(backend.ErrTooLarge, "importing: alloc of %d elements", n)
	}
	bytes := uint64(n) * 4
	switch {
	case t.Half():
		bytes = uint64(n+1) / 2 * 4
	case t == backend.FP8:
		bytes = uint64(n)
	case t == backend.Q8: // superblocks of 256 values in 272 bytes
		bytes = uint64(n+255) / 256 * 272
	case t == backend.Q4: // superblocks of 256 values in 144 bytes
		bytes = uint64(n+255) / 256 * 144
	}
	off := uint64(x.dev.Limits().MinStorageBufferOffsetAlignment)
	wb, err := x.dev.CreateBuffer("caller", off+alignUp(max(bytes, 16), 16), rw)
	if err != nil {
		return nil, backend.Errorf(backend.ErrTooLarge, "importing: %v", err)
	}
	// The import holds a reference of its own: the buffer lives until it
	// is released.
	defer wb.Release()
	return x.Import(wb.Native(), off, t, n)
}

// TestImportDestroyed: a buffer the caller destroyed while attn holds an
// import of it fails the ops that use it with an error, in a step too,
// never a WebGPU abort, and the backend goes on working. (Destroying it
// after an op was recorded and before Submit is beyond checking.)
func TestImportDestroyed(t *testing.T) {
	adapter, dev := callerDevice(t, nil)
	b := openOn(t, adapter, dev)
	p := smallProblem(8)
	mk := func(n int) (*gpu.NativeBuffer, backend.Buffer) {
		wb := callerBuffer(t, dev, uint64(n)*4+16, rw)
		return wb, importF32(t, b, wb, 0, n)
	}
	_, q := mk(p.QLen())
	_, k := mk(p.KLen())
	_, v := mk(p.VLen())
	ob, o := mk(p.OLen())
	_, good := mk(p.OLen())
	ctx := context.Background()
	// A call that binds them before: no bind group of it may outlive it
	// (groups.go), or the next call would submit the destroyed buffer.
	if err := b.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, nil); err != nil {
		t.Fatal(err)
	}
	wg.WrapBuffer(ob).DestroyOnly()
	if err := b.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, nil); err == nil || !strings.Contains(err.Error(), "destroyed") {
		t.Errorf("Fused into a destroyed buffer: %v; want an error saying so", err)
	}
	st := b.Record()
	if err := st.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, nil); err == nil {
		t.Errorf("recording Fused into a destroyed buffer succeeded")
	}
	if err := st.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, good, nil); err != nil {
		t.Errorf("recording Fused after a failed op: %v", err)
	}
	if err := st.Wait(); err == nil || !strings.Contains(err.Error(), "op 1 (fused)") {
		t.Errorf("Wait = %v; want the first op's error", err)
	}
	if err := b.Read(make([]float32, 4), o, 0); err == nil {
		t.Errorf("Read of a destroyed buffer succeeded")
	}
	if err := b.Write(o, 0, make([]float32, 4)); err == nil {
		t.Errorf("Write to a destroyed buffer succeeded")
	}
	if err := b.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, good, nil); err != nil {
		t.Errorf("Fused after the failures: %v", err)
	}
}

// TestStepCallerRelease: the caller may release its handles to buffers
// a step uses before the step is submitted; attn's imports keep them.
func TestStepCallerRelease(t *testing.T) {
	adapter, dev := callerDevice(t, nil)
	b := openOn(t, adapter, dev)
	p := smallProblem(12)
	r := rand.New(rand.NewPCG(4, 4))
	hq, hk, hv := randSlice(r, p.QLen()), randSlice(r, p.KLen()), randSlice(r, p.VLen())
	var bufs []backend.Buffer
	var handles []*wg.Buffer
	for _, h := range [][]float32{hq, hk, hv, make([]float32, p.OLen())} {
		wb, err := dev.CreateBuffer("", uint64(len(h))*4+16, rw)
		if err != nil {
			t.Fatal(err)
		}
		x := importF32(t, b, wb.Native(), 0, len(h))
		if err := b.Write(x, 0, h); err != nil {
			t.Fatal(err)
		}
		bufs, handles = append(bufs, x), append(handles, wb)
	}
	st := b.Record()
	if err := st.Fused(context.Background(), backend.FusedParams{Problem: p}, bufs[0], bufs[1], bufs[2], bufs[3], nil); err != nil {
		t.Fatal(err)
	}
	for _, wb := range handles {
		wb.Release() // the caller's handles, before the submission
	}
	for _, x := range bufs[:3] {
		x.Release() // and attn's imports of the inputs
	}
	if err := st.Wait(); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, p.OLen())
	if err := b.Read(got, bufs[3], 0); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "O", got, naive(p, hq, hk, hv), 1e-5)
}
