package cpu

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
)

// halfDTypes are the half dtypes, the ones these tests are about.
var halfDTypes = []backend.DType{backend.Float16, backend.BFloat16}

// TestHalfBuffers: a half buffer stores bits; Write rounds to nearest
// even after refusing overflow, Read widens exactly, WriteBits and
// ReadBits move bits and refuse a Float32 buffer, and without Caps.Half
// a half Alloc is ErrUnsupported.
func TestHalfBuffers(t *testing.T) {
	be := newBackend(t, withHalf(true))
	if !be.Caps().Half {
		t.Fatal("withHalf(true): Caps().Half is false")
	}
	off := newBackend(t, withHalf(false))
	src := []float32{0, -0, 1, -2.5, 1.0009765625, 3.14159, 65504, 65519.99, 1e-7, 6e-8, 1e-30, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for _, dt := range halfDTypes {
		if _, err := off.Alloc(dt, 4); !errors.Is(err, backend.ErrUnsupported) {
			t.Errorf("%v: Alloc without Caps.Half: %v, want ErrUnsupported", dt, err)
		}
		if _, err := be.Alloc(dt, maxAllocBytes/2+1); !errors.Is(err, backend.ErrTooLarge) {
			t.Errorf("%v: Alloc(maxAllocBytes/2+1): %v, want ErrTooLarge", dt, err)
		}
		buf, err := be.Alloc(dt, len(src)+2)
		if err != nil {
			t.Fatal(err)
		}
		if buf.DType() != dt || buf.Len() != len(src)+2 {
			t.Fatalf("%v: DType %v, Len %d", dt, buf.DType(), buf.Len())
		}
		bits := make([]uint16, buf.Len())
		if err := be.ReadBits(bits, buf, 0); err != nil {
			t.Fatal(err)
		}
		for i, h := range bits {
			if h != 0 {
				t.Fatalf("%v: a new buffer's element %d is %#04x", dt, i, h)
			}
		}
		if err := be.Write(buf, 1, src); err != nil {
			t.Fatalf("%v: Write: %v", dt, err)
		}
		if err := be.ReadBits(bits, buf, 0); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, len(src))
		if err := be.Read(got, buf, 1); err != nil {
			t.Fatal(err)
		}
		for i, x := range src {
			if want := dt.Encode(x); bits[i+1] != want {
				t.Errorf("%v: Write(%g) stored %#04x, want %#04x", dt, x, bits[i+1], want)
			}
			if want := dt.Decode(dt.Encode(x)); math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Errorf("%v: Read after Write(%g) = %g, want %g", dt, x, got[i], want)
			}
		}
		// A finite value that would overflow is refused, and nothing of
		// the write lands.
		big := float32(70000)
		if dt == backend.BFloat16 {
			big = math.MaxFloat32
		}
		err = be.Write(buf, 0, []float32{5, big})
		if !errors.Is(err, backend.ErrNonFinite) || !strings.Contains(err.Error(), "element 1") {
			t.Errorf("%v: Write(%g): %v, want ErrNonFinite naming element 1", dt, big, err)
		}
		after := make([]uint16, buf.Len())
		be.ReadBits(after, buf, 0)
		if after[0] != 0 {
			t.Errorf("%v: a refused Write changed element 0 to %#04x", dt, after[0])
		}
		// Bits go in and out as they are, NaN payloads too.
		in := []uint16{0x0001, 0x8000, 0x7c01, 0xffff, 0x3c00}
		if err := be.WriteBits(buf, 2, in); err != nil {
			t.Fatal(err)
		}
		out := make([]uint16, len(in))
		if err := be.ReadBits(out, buf, 2); err != nil {
			t.Fatal(err)
		}
		for i := range in {
			if out[i] != in[i] {
				t.Errorf("%v: ReadBits after WriteBits: element %d %#04x, want %#04x", dt, i, out[i], in[i])
			}
		}
		n := buf.Len()
		for _, r := range [][2]int{{-1, 1}, {n, 1}, {n - 1, 2}} {
			if err := be.WriteBits(buf, r[0], make([]uint16, r[1])); !errors.Is(err, backend.ErrShape) {
				t.Errorf("%v: WriteBits(%d at %d) into %d: %v", dt, r[1], r[0], n, err)
			}
			if err := be.ReadBits(make([]uint16, r[1]), buf, r[0]); !errors.Is(err, backend.ErrShape) {
				t.Errorf("%v: ReadBits(%d at %d) from %d: %v", dt, r[1], r[0], n, err)
			}
			if err := be.Write(buf, r[0], make([]float32, r[1])); !errors.Is(err, backend.ErrShape) {
				t.Errorf("%v: Write(%d at %d) into %d: %v", dt, r[1], r[0], n, err)
			}
		}
		if err := be.WriteBits(buf, n, nil); err != nil {
			t.Errorf("%v: an empty WriteBits at Len: %v", dt, err)
		}
		buf.Release()
		if err := be.ReadBits(out, buf, 0); !errors.Is(err, backend.ErrReleased) {
			t.Errorf("%v: ReadBits after Release: %v", dt, err)
		}
	}
	f, _ := be.Alloc(backend.Float32, 4)
	if err := be.WriteBits(f, 0, []uint16{1}); !errors.Is(err, backend.ErrShape) {
		t.Errorf("WriteBits into Float32: %v", err)
	}
	if err := be.ReadBits(make([]uint16, 1), f, 0); !errors.Is(err, backend.ErrShape) {
		t.Errorf("ReadBits from Float32: %v", err)
	}
}
