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
// ReadBits move bits and refuse a Float32 buffer.
func TestHalfBuffers(t *testing.T) {
	be := newBackend(t)
	if !be.Caps().Half {
		t.Fatal("Caps().Half is false")
	}
	src := []float32{0, -0, 1, -2.5, 1.0009765625, 3.14159, 65504, 65519.99, 1e-7, 6e-8, 1e-30, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for _, dt := range halfDTypes {
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

// halfImpl is one implementation of the conversions: Go, or a vector
// loop that takes lengths in multiples of lanes.
type halfImpl struct {
	name   string
	lanes  int
	has    func(backend.DType) bool
	widen  func(backend.DType, []float32, []uint16)
	narrow func(backend.DType, []uint16, []float32)
}

// goImpl and dispatch are the implementations every build has: the Go
// loops, and widen and narrow themselves (vector loops, then Go for the
// tail), at any length.
var (
	always   = func(backend.DType) bool { return true }
	goImpl   = halfImpl{"Go", 1, always, widenGo, narrowGo}
	dispatch = halfImpl{"widen/narrow", 1, always, widen, narrow}
)

// implsFor is the implementations this CPU has for dtype t; it logs the
// others.
func implsFor(t *testing.T, dt backend.DType) []halfImpl {
	var out []halfImpl
	for _, im := range halfImpls() {
		if im.has(dt) {
			out = append(out, im)
		} else {
			t.Logf("%s %v: this CPU does not have it", im.name, dt)
		}
	}
	return out
}

// halfPatterns is every 16-bit pattern.
func halfPatterns() []uint16 {
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	return all
}

// TestWiden: every implementation widens each of the 65536 patterns of
// each half dtype to DType.Decode's bits (subnormals exact, NaN as
// Decode quiets it), and the dispatch does so at every length to 40 from
// several offsets, leaving tails to the Go loop.
func TestWiden(t *testing.T) {
	src := halfPatterns()
	for _, dt := range halfDTypes {
		for _, im := range implsFor(t, dt) {
			dst := make([]float32, len(src))
			im.widen(dt, dst, src)
			for i, h := range src {
				if got, want := math.Float32bits(dst[i]), math.Float32bits(dt.Decode(h)); got != want {
					t.Fatalf("%s %v: %#04x widened to %#08x, want %#08x", im.name, dt, h, got, want)
				}
			}
		}
	}
	for _, dt := range halfDTypes {
		for off := range 3 {
			for n := range 41 {
				s := src[0x3c00+off*1111 : 0x3c00+off*1111+n]
				dst := make([]float32, n+1)
				dst[n] = 42
				widen(dt, dst, s)
				for i, h := range s {
					if math.Float32bits(dst[i]) != math.Float32bits(dt.Decode(h)) {
						t.Fatalf("%v: widen of %d from %d: element %d is %v, want %v", dt, n, off, i, dst[i], dt.Decode(h))
					}
				}
				if dst[n] != 42 {
					t.Fatalf("%v: widen of %d wrote past its end", dt, n)
				}
			}
		}
	}
}

// narrowValues are float32 values for the narrowing tests of dtype t:
// every finite value of t, the midpoints between neighbours (ties, which
// go to even) and a float32 unit either side of each, float32
// subnormals, values about t's overflow threshold, infinities, NaNs with
// payloads and a million random bit patterns.
func narrowValues(t backend.DType) []float32 {
	var xs []float32
	for h := range 1 << 16 {
		a := t.Decode(uint16(h))
		if math.IsInf(float64(a), 0) || a != a {
			continue
		}
		xs = append(xs, a)
		if b := t.Decode(uint16(h + 1)); h&0x7fff != 0x7fff && b == b {
			m := float32((float64(a) + float64(b)) / 2)
			xs = append(xs, m, math.Nextafter32(m, float32(math.Inf(1))), math.Nextafter32(m, float32(math.Inf(-1))))
		}
	}
	for b := uint32(1); b < 1<<23; b = b*3 + 1 {
		xs = append(xs, math.Float32frombits(b), -math.Float32frombits(b))
	}
	for _, b := range []uint32{0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001, 0x47800000, 0x7f7f0000, 0x7f7f7fff, 0x7f7f8000, 0x7f7f8001, 0x7f7fffff, 0x7f800000, 0x7f800001, 0x7f802000, 0x7fc00000, 0x7fffffff, 0x7fbfffff} {
		xs = append(xs, math.Float32frombits(b), math.Float32frombits(b|0x80000000))
	}
	rng := uint64(0x9e3779b97f4a7c15)
	for range 1 << 20 {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		xs = append(xs, math.Float32frombits(uint32(rng>>16)))
	}
	for len(xs)%16 != 0 {
		xs = append(xs, 1)
	}
	return xs
}

// TestNarrow: narrow1 is DType.Saturate's value, in Encode's bits where
// Encode does not overflow; every implementation agrees with it bit for
// bit, and the dispatch does at every length to 40, leaving tails.
func TestNarrow(t *testing.T) {
	for _, dt := range halfDTypes {
		xs := narrowValues(dt)
		want := make([]uint16, len(xs))
		for i, x := range xs {
			want[i] = narrow1(dt, x)
			got := dt.Decode(want[i])
			if s := dt.Saturate(x); x == x && math.Float32bits(got) != math.Float32bits(s) {
				t.Fatalf("%v: narrow1(%g) = %g, Saturate %g", dt, x, got, s)
			}
			if e := dt.Encode(x); e&0x7fff != infBits(dt) || math.IsInf(float64(x), 0) {
				if want[i] != e {
					t.Fatalf("%v: narrow1(%g) = %#04x, Encode %#04x", dt, x, want[i], e)
				}
			}
		}
		for _, im := range implsFor(t, dt) {
			got := make([]uint16, len(xs))
			im.narrow(dt, got, xs)
			for i, x := range xs {
				if got[i] != want[i] {
					t.Fatalf("%s %v: %g (%#08x) narrowed to %#04x, want %#04x", im.name, dt, x, math.Float32bits(x), got[i], want[i])
				}
			}
		}
		for off := range 3 {
			for n := range 41 {
				s := xs[off*7777 : off*7777+n]
				dst := make([]uint16, n+1)
				dst[n] = 42
				narrow(dt, dst[:n], s)
				for i := range s {
					if dst[i] != want[off*7777+i] {
						t.Fatalf("%v: narrow of %d from %d: element %d is %#04x, want %#04x", dt, n, off, i, dst[i], want[off*7777+i])
					}
				}
				if dst[n] != 42 {
					t.Fatalf("%v: narrow of %d wrote past its end", dt, n)
				}
			}
		}
	}
}
