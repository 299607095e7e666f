//go:build (cgo || gogpu) && !nogpu

package wg

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/attn-go/attn/internal/gputest"
	"github.com/gogpu/gputypes"
)

// fill writes, at each invocation of a grid of workgroups of 2×1×1, base
// plus add's word plus the invocation's coordinates in decimal digits
// into out, at the invocation's index in the grid: a grid read in another
// order, or a binding at another slot, gives other words.
const fillWGSL = `
@group(0) @binding(0) var<uniform> base: vec4<u32>;
@group(0) @binding(1) var<storage, read> add: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(2, 1, 1)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
	let i = (g.z * n.y + g.y) * n.x * 2u + g.x;
	out[i] = base.x + add[i] + g.x + 100u * g.y + 10000u * g.z;
}
`

// double doubles each word of out, one invocation a word.
const doubleWGSL = `
@group(0) @binding(0) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
	out[g.x] = 2u * out[g.x];
}
`

// fillGrid is the grid of fill's dispatch, in workgroups.
var fillGrid = [3]uint32{3, 2, 4}

// fillWant is what fill then double leave in out.
func fillWant(base uint32, add []uint32) []uint32 {
	var want []uint32
	for z := range fillGrid[2] {
		for y := range fillGrid[1] {
			for x := range 2 * fillGrid[0] {
				i := len(want)
				want = append(want, 2*(base+add[i]+x+100*y+10000*z))
			}
		}
	}
	return want
}

// TestComputePass runs two dispatches in one pass, each with its own
// pipeline and bind group, copies the result to a buffer it maps, and
// checks every word: the shared recording (cmd.go) over the binding's
// calls. Where the device has timestamps inside passes, the same work
// runs again with them (ComputePassStamped), and they must not go back in
// time.
func TestComputePass(t *testing.T) {
	a := testAdapter(t)
	var fs []gputypes.Feature
	_, stamped := a.TimestampsInside()
	if stamped {
		fs = append(fs, gputypes.FeatureTimestampQuery)
	}
	d, err := a.RequestDevice("", fs, DefaultLimits())
	if err != nil {
		gputest.Unavailable(t, err)
	}
	t.Cleanup(d.Release)

	n := fillGrid[0] * 2 * fillGrid[1] * fillGrid[2]
	const base = 7
	add := make([]uint32, n)
	for i := range add {
		add[i] = 1000000 * uint32(i)
	}
	// buffer is a buffer of n words, with data written into it where
	// there is some.
	buffer := func(usage Usage, n int, data ...uint32) *Buffer {
		t.Helper()
		b, err := d.CreateBuffer("", uint64(4*n), usage|UsageCopyDst)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Release)
		if len(data) > 0 {
			bs := make([]byte, 0, 4*len(data))
			for _, w := range data {
				bs = binary.LittleEndian.AppendUint32(bs, w)
			}
			if err := d.WriteBuffer(b, 0, bs); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	uni := buffer(UsageUniform, 4, base, 0, 0, 0)
	in := buffer(UsageStorage, len(add), add...)
	out := buffer(UsageStorage|UsageCopySrc, int(n))
	read := buffer(UsageMapRead, int(n))
	size := out.Size()

	fill, err := d.CreatePipeline("fill", fillWGSL, "main", []BindingType{BindUniform, BindReadOnly, BindStorage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fill.Release)
	double, err := d.CreatePipeline("double", doubleWGSL, "main", []BindingType{BindStorage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(double.Release)
	fillGroup, err := d.CreateBindGroup(fill, []Entry{{uni, 0, uni.Size()}, {in, 0, in.Size()}, {out, 0, size}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fillGroup.Release)
	doubleGroup, err := d.CreateBindGroup(double, []Entry{{out, 0, size}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(doubleGroup.Release)
	ds := []Dispatch{{fill, fillGroup, fillGrid}, {double, doubleGroup, [3]uint32{n, 1, 1}}}

	run := func(record func(e *Encoder) error) []uint32 {
		t.Helper()
		return recordRead(t, d, record, out, read, size)
	}
	want := fillWant(base, add)
	check := func(what string, got []uint32) {
		t.Helper()
		for i, w := range want {
			if got[i] != w {
				t.Fatalf("%s: word %d is %d, want %d", what, i, got[i], w)
			}
		}
	}
	check("ComputePass", run(func(e *Encoder) error { return e.ComputePass(ds) }))
	if !stamped {
		t.Log("no timestamps inside passes: ComputePassStamped not run")
		return
	}
	qs, err := d.CreateTimestamps("", uint32(len(ds)+1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(qs.Release)
	stamps := buffer(UsageQueryResolve|UsageCopySrc, 2*(len(ds)+1))
	stampsRead := buffer(UsageMapRead, 2*(len(ds)+1))
	check("ComputePassStamped", run(func(e *Encoder) error {
		if err := e.ComputePassStamped(ds, qs, 0); err != nil {
			return err
		}
		if err := e.ResolveQuerySet(qs, 0, uint32(len(ds)+1), stamps, 0); err != nil {
			return err
		}
		return e.CopyBufferToBuffer(stamps, 0, stampsRead, 0, stamps.Size())
	}))
	ws := readWords(t, d, stampsRead, 0, stampsRead.Size())
	for i := 1; i <= len(ds); i++ {
		prev, at := uint64(ws[2*i-2])|uint64(ws[2*i-1])<<32, uint64(ws[2*i])|uint64(ws[2*i+1])<<32
		if at < prev {
			t.Errorf("timestamp %d is %d, before the one before it, %d", i, at, prev)
		}
	}
}

// recordRead records record into an encoder with a copy of size bytes of
// out into read after it, submits them, and returns read's words.
func recordRead(t *testing.T, d *Device, record func(e *Encoder) error, out, read *Buffer, size uint64) []uint32 {
	t.Helper()
	e, err := d.CreateEncoder()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release()
	if err := record(e); err != nil {
		t.Fatal(err)
	}
	if err := e.CopyBufferToBuffer(out, 0, read, 0, size); err != nil {
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
	return readWords(t, d, read, 0, size)
}

// readWords maps size bytes of b from offset, after the work submitted
// so far, and returns them as little-endian words.
func readWords(t *testing.T, d *Device, b *Buffer, offset, size uint64) []uint32 {
	t.Helper()
	p, err := d.MapAsync(b, MapRead, offset, size)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(0); err != nil {
		t.Fatal(err)
	}
	data := b.Mapped(offset, size)
	ws := make([]uint32, len(data)/4)
	for i := range ws {
		ws[i] = binary.LittleEndian.Uint32(data[4*i:])
	}
	if err := b.Unmap(); err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestPipelineStages: a pipeline that fails is a *StageError naming the
// step that failed, after which what was made is released.
func TestPipelineStages(t *testing.T) {
	d := testDevice(t)
	for _, c := range []struct{ src, entry, stage string }{
		{"fn main( {", "main", "compiling WGSL"},
		{doubleWGSL, "absent", "compute pipeline"},
	} {
		p, err := d.CreatePipeline("", c.src, c.entry, []BindingType{BindStorage})
		var se *StageError
		if !errors.As(err, &se) || se.Stage != c.stage {
			if p != nil {
				p.Release()
			}
			t.Errorf("CreatePipeline(entry %q) = %v; want a StageError at %q", c.entry, err, c.stage)
		}
	}
}
