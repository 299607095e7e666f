//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu"
)

// q4Image is what a q4 buffer of n values should hold, kept on the host
// from first principles: each block's 16 bytes of codes and its scale,
// as backend.QuantizeQ4 writes them.
type q4Image struct {
	codes  []byte
	scales []uint16
}

func newQ4Image(n int) *q4Image {
	return &q4Image{make([]byte, n/2), make([]uint16, n/backend.Q8Block)}
}

// write quantizes v into the image from element off (whole blocks).
func (m *q4Image) write(off int, v []float32) {
	if blk := backend.QuantizeQ4(m.codes[off/2:], m.scales[off/backend.Q8Block:], v); blk >= 0 {
		panic("q4Image: a block beyond Q4Max")
	}
}

// copyFrom copies elements [s, s+n) of src into [d, d+n), bits as they
// are.
func (m *q4Image) copyFrom(src *q4Image, r backend.CopyRange) {
	copy(m.codes[r.Dst/2:], src.codes[r.Src/2:(r.Src+r.N)/2])
	copy(m.scales[r.Dst/backend.Q8Block:], src.scales[r.Src/backend.Q8Block:(r.Src+r.N)/backend.Q8Block])
}

// check compares the GPU's buffer x with m, its bytes and the values
// Read widens from every whole-block range given.
func (m *q4Image) check(t *testing.T, g *gpu.Backend, x backend.Buffer, reads ...[2]int) {
	t.Helper()
	codes, scales, err := gpu.QuantStored(g, x)
	if err != nil {
		t.Fatal(err)
	}
	if i := firstDiff(codes, m.codes); i >= 0 {
		t.Fatalf("byte %d of the codes (block %d) is %#02x, want %#02x", i, i/16, codes[i], m.codes[i])
	}
	if i := firstDiff(scales, m.scales); i >= 0 {
		t.Fatalf("block %d's scale is %#04x, want %#04x", i, scales[i], m.scales[i])
	}
	for _, r := range append(reads, [2]int{0, x.Len()}) {
		got := make([]float32, r[1])
		if err := g.Read(got, x, r[0]); err != nil {
			t.Fatalf("Read(%d, %d): %v", r[0], r[1], err)
		}
		want := make([]float32, r[1])
		backend.DequantizeQ4(want, m.codes[r[0]/2:(r[0]+r[1])/2], m.scales[r[0]/backend.Q8Block:])
		if i := firstDiff(got, want); i >= 0 {
			t.Fatalf("Read(%d, %d): element %d is %g, want %g", r[0], r[1], r[0]+i, got[i], want[i])
		}
	}
}

// firstDiff is the first index where a and b differ, bit for bit, or −1.
func firstDiff[T byte | uint16 | float32](a, b []T) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i]) {
			return i
		}
	}
	return -1
}

// TestQ4Buffers checks the GPU's q4 buffers against the host's q4_0,
// bit for bit: writes of whole blocks at offsets inside superblocks and
// across them store backend.QuantizeQ4's bytes (codes and scales, the
// rest kept), Read widens exactly (DequantizeQ4) over any whole-block
// range, Copy between q4 buffers moves the bytes as they are, and the
// refusals: lengths, offsets and ranges not whole blocks (ErrShape), a
// block at ±Q4Max, NaN or an infinity (ErrNonFinite, nothing written),
// a block just below Q4Max stored, WriteBits, ReadBits (ErrShape), and
// copies between q4 and another dtype (ErrUnsupported).
func TestQ4Buffers(t *testing.T) {
	g := openGPU(t)
	ctx := context.Background()
	const n = 1600 // 6.25 superblocks
	x, y := alloc(t, g, backend.Q4, n), alloc(t, g, backend.Q4, n)
	mx, my := newQ4Image(n), newQ4Image(n)
	mx.check(t, g, x) // zero-filled: codes 0, scales 0 (values 0)
	for i, w := range [][2]int{{0, n}, {32, 32}, {224, 96}, {480, 576}, {1568, 32}, {256, 256}, {288, 32}} {
		v := quantValues(uint64(i), w[1])
		if err := g.Write(x, w[0], v); err != nil {
			t.Fatalf("Write(%d, %d): %v", w[0], w[1], err)
		}
		mx.write(w[0], v)
		mx.check(t, g, x, [2]int{96, 64}, [2]int{224, 320})
	}
	v := quantValues(9, n)
	if err := g.Write(y, 0, v); err != nil {
		t.Fatal(err)
	}
	my.write(0, v)
	ranges := []backend.CopyRange{{Dst: 0, Src: 256, N: 64}, {Dst: 96, Src: 1024, N: 544}, {Dst: 1504, Src: 32, N: 96}, {Dst: 1440, Src: 1440, N: 32}}
	if err := g.Copy(ctx, x, y, ranges...); err != nil {
		t.Fatalf("Copy: %v", err)
	}
	for _, r := range ranges {
		mx.copyFrom(my, r)
	}
	mx.check(t, g, x)

	// The largest block a q4 scale holds, and those it does not.
	top := quantValues(3, 64)
	below := math.Nextafter32(backend.Q4Max, 0)
	top[5], top[40] = -below, below
	if err := g.Write(x, 64, top); err != nil {
		t.Fatalf("Write of ±%g: %v", below, err)
	}
	mx.write(64, top)
	mx.check(t, g, x)
	for _, bad := range []float32{backend.Q4Max, -backend.Q4Max, 1e30, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		v := quantValues(4, 64)
		v[33] = bad
		if err := g.Write(x, 64, v); !errors.Is(err, backend.ErrNonFinite) {
			t.Errorf("Write of %g: %v, want ErrNonFinite", bad, err)
		}
	}
	mx.check(t, g, x) // nothing written

	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"Write at 16", g.Write(x, 16, make([]float32, 32)), backend.ErrShape},
		{"Write of 48", g.Write(x, 0, make([]float32, 48)), backend.ErrShape},
		{"Read of 31", g.Read(make([]float32, 31), x, 0), backend.ErrShape},
		{"Read at 8", g.Read(make([]float32, 32), x, 8), backend.ErrShape},
		{"Copy from 8", g.Copy(ctx, x, y, backend.CopyRange{Dst: 0, Src: 8, N: 32}), backend.ErrShape},
		{"Copy of 16", g.Copy(ctx, x, y, backend.CopyRange{Dst: 0, Src: 0, N: 16}), backend.ErrShape},
		{"WriteBits", g.WriteBits(x, 0, make([]uint16, 32)), backend.ErrShape},
		{"ReadBits", g.ReadBits(make([]uint16, 32), x, 0), backend.ErrShape},
		{"Copy from f32", g.Copy(ctx, x, alloc(t, g, backend.Float32, n), backend.CopyRange{N: 32}), backend.ErrUnsupported},
		{"Copy into f16", g.Copy(ctx, alloc(t, g, backend.Float16, n), x, backend.CopyRange{N: 32}), backend.ErrUnsupported},
		{"Copy from q8", g.Copy(ctx, x, alloc(t, g, backend.Q8, n), backend.CopyRange{N: 32}), backend.ErrUnsupported},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if _, err := g.Alloc(backend.Q4, 33); !errors.Is(err, backend.ErrShape) {
		t.Errorf("Alloc(q4, 33): %v, want ErrShape", err)
	}
	mx.check(t, g, x) // nothing written
}

// TestQ4Layout pins the device layout of a q4 buffer by hand
// (shaders.Q4, plan's quantlayout.go): superblocks of 256 values in 144
// bytes, block c's 16 bytes of codes at byte 16c of its superblock —
// element i's code in byte i's low nibble, element i+16's in its high
// one — and its float16 scale at byte 128 + 2c.
func TestQ4Layout(t *testing.T) {
	g := openGPU(t)
	x := alloc(t, g, backend.Q4, 512)
	// Block 9 (superblock 1, block 1): m = 8, so d = −1, id = −1, and a
	// code is trunc(8.5 − x): 8 → 0, 0 → 8, −7 → 15, 1 → 7, 3.25 → 5.
	v := make([]float32, 32)
	v[0], v[16], v[2], v[18], v[15], v[31] = 8, -7, 1, 3.25, -6.5, 0.5
	if err := g.Write(x, 288, v); err != nil {
		t.Fatal(err)
	}
	img, err := gpu.QuantImage(g, x)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 288)
	copy(want[144+16:], []byte{0xf0, 0x88, 0x57, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x8f})
	want[144+128+2], want[144+128+3] = 0x00, 0xbc // float16 −1
	// −6.5 → 15.0 → 15, 0.5 → trunc(8.0) = 8: byte 15 = 0x8f.
	if !slices.Equal(img[:288], want) {
		for i := range want {
			if img[i] != want[i] {
				t.Fatalf("byte %d is %#02x, want %#02x", i, img[i], want[i])
			}
		}
	}
}
