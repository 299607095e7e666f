//go:build (cgo || gogpu) && !nogpu

package wg

import (
	"errors"
	"slices"
	"testing"
)

// sumWGSL sums 0 … out[0]−1 into out[1] in a loop whose bound it reads
// from data, and reads out[out[2]], an index from data, into out[3].
const sumWGSL = `
@group(0) @binding(0) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(1)
fn main() {
	var s = 0u;
	for (var i = 0u; i < out[0]; i++) {
		s += i;
	}
	out[1] = s;
	out[3] = out[out[2]];
}
`

// TestRuntimeChecks compiles and runs a kernel under each setting of
// RuntimeChecks this binding supports (each must give the same words),
// refuses the others with an error, and reports a WGSL error as a
// StageError under each, the trusted path's error scope included.
func TestRuntimeChecks(t *testing.T) {
	if c, err := ParseRuntimeChecks("sometimes"); err == nil {
		t.Errorf("ParseRuntimeChecks(sometimes) = %v, want an error", c)
	}
	d := testDevice(t)
	if got := d.RuntimeChecks(); got != DefaultChecks {
		t.Errorf("a new device's runtime checks are %v, want the binding's default %v", got, DefaultChecks)
	}
	supported := 0
	for _, c := range []RuntimeChecks{ChecksAll, ChecksBounds, ChecksNone} {
		if p, err := ParseRuntimeChecks(c.String()); err != nil || p != c {
			t.Errorf("ParseRuntimeChecks(%q) = %v, %v", c, p, err)
		}
		if err := d.SetRuntimeChecks(c); err != nil {
			if supportsChecks(c) == nil {
				t.Errorf("SetRuntimeChecks(%v): %v, but the binding supports it", c, err)
			}
			if d.RuntimeChecks() == c {
				t.Errorf("SetRuntimeChecks(%v) refused, but the device says %v", c, c)
			}
			continue
		}
		supported++
		if _, err := d.CreatePipeline("bad", "fn main( {", "main", []BindingType{BindStorage}); err == nil {
			t.Errorf("%v: a WGSL error compiled", c)
		} else if se := (*StageError)(nil); !errors.As(err, &se) || se.Stage != "compiling WGSL" {
			t.Errorf("%v: a WGSL error gave %v, want a StageError at compiling WGSL", c, err)
		}
		p, err := d.CreatePipeline("sum", sumWGSL, "main", []BindingType{BindStorage})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		got := runSum(t, d, p, []uint32{1000, 0, 5, 0, 0, 77})
		p.Release()
		if want := []uint32{1000, 499500, 5, 77, 0, 77}; !slices.Equal(got, want) {
			t.Errorf("%v: the kernel left %v, want %v", c, got, want)
		}
	}
	if supported == 0 {
		t.Error("the binding supports no runtime checks at all")
	}
}

func runSum(t *testing.T, d *Device, p *Pipeline, words []uint32) []uint32 {
	t.Helper()
	size := uint64(4 * len(words))
	out, err := d.CreateBuffer("out", size, UsageStorage|UsageCopySrc|UsageCopyDst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	read, err := d.CreateBuffer("read", size, UsageMapRead|UsageCopyDst)
	if err != nil {
		t.Fatal(err)
	}
	defer read.Release()
	bs := make([]byte, 0, size)
	for _, w := range words {
		bs = append(bs, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	if err := d.WriteBuffer(out, 0, bs); err != nil {
		t.Fatal(err)
	}
	g, err := d.CreateBindGroup(p, []Entry{{out, 0, size}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	return recordRead(t, d, func(e *Encoder) error {
		return e.ComputePass([]Dispatch{{p, g, [3]uint32{1, 1, 1}}})
	}, out, read, size)
}
