//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
)

// quants are the quantized dtypes the GPU stores: backend.Quants, with
// Q4 added where that list lacks it. A test that compares with the CPU
// skips its q4 part where the CPU stores none.
var quants = func() []backend.DType {
	if slices.Contains(backend.Quants, backend.Q4) {
		return backend.Quants
	}
	return append(slices.Clip(backend.Quants), backend.Q4)
}()

// cpuStores says whether the CPU backend c stores dt, or skips t.
func cpuStores(t *testing.T, c backend.Backend, dt backend.DType) {
	t.Helper()
	if dt == backend.Q4 && !c.Caps().Quant4 {
		t.Skip("the CPU backend stores no q4 yet (TestQ4Buffers and TestCopyQuant check the GPU's q4 against the host's quantizer)")
	}
}

// quantValues are n values of both signs over a few decades, some beyond
// fp8's ±448, and a zero block (q8's zero scale) at [64, 96).
func quantValues(seed uint64, n int) []float32 {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32((rng.Float64()*2 - 1) * math.Exp2(float64(rng.IntN(14)-6)))
	}
	for i := 0; i < n; i += 37 {
		x[i] *= 600
	}
	if n >= 96 {
		clear(x[64:96])
	}
	return x
}

// TestQuantBuffers checks the GPU's quantized buffers against the CPU
// backend's, which the conformance suite checks: writes of whole blocks
// (q8, q4) or any range (fp8) at offsets that meet superblocks and words
// in part, reads of any whole-block range, Copy between buffers of one
// quantized dtype over several ranges (bytes as they are: the same
// values), and the refusals — a q8 or q4 length or range not whole
// blocks (ErrShape), a block at Q8Max or Q4Max (ErrNonFinite, nothing
// written), WriteBits and ReadBits (ErrShape), a copy between a
// quantized buffer and another dtype (ErrUnsupported) — and Memory
// counting the stored bytes.
func TestQuantBuffers(t *testing.T) {
	g := openGPU(t)
	if !g.Caps().Quant8 || !g.Caps().Quant4 {
		t.Fatalf("Caps().Quant8 is %v, Quant4 %v", g.Caps().Quant8, g.Caps().Quant4)
	}
	c, err := cpu.New()
	if err != nil {
		t.Fatalf("cpu.New: %v", err)
	}
	defer c.Close()
	ctx := context.Background()
	const n = 1600 // 6.25 superblocks
	for _, dt := range quants {
		t.Run(dt.String(), func(t *testing.T) {
			cpuStores(t, c, dt)
			blk := dt.Block()
			alloc := func(be backend.Backend) backend.Buffer {
				x, err := be.Alloc(dt, n)
				if err != nil {
					t.Fatalf("%s: Alloc(%v, %d): %v", be.Name(), dt, n, err)
				}
				t.Cleanup(x.Release)
				return x
			}
			gx, cx, gy, cy := alloc(g), alloc(c), alloc(g), alloc(c)
			// Writes: the whole buffer, then ranges over it.
			writes := []struct{ off, n int }{{0, n}, {32, 32}, {224, 96}, {480, 576}, {1568, 32}, {256, 256}}
			if dt == backend.FP8 {
				writes = append(writes, struct{ off, n int }{3, 6}, struct{ off, n int }{17, 1}, struct{ off, n int }{1001, 598})
			}
			for i, w := range writes {
				v := quantValues(uint64(i), w.n)
				for _, p := range []struct {
					be backend.Backend
					x  backend.Buffer
				}{{g, gx}, {c, cx}, {g, gy}, {c, cy}} {
					if err := p.be.Write(p.x, w.off, v); err != nil {
						t.Fatalf("%s: Write(%d, %d): %v", p.be.Name(), w.off, w.n, err)
					}
				}
				same(t, g, c, gx, cx, 0, n)
			}
			same(t, g, c, gx, cx, 96, 64)
			// A copy of several ranges, between buffers of one dtype.
			ranges := []backend.CopyRange{{Dst: 0, Src: 256, N: 64}, {Dst: 96, Src: 1024, N: 544}, {Dst: 1504, Src: 32, N: 96}}
			if dt == backend.FP8 {
				ranges = append(ranges, backend.CopyRange{Dst: 65, Src: 3, N: 13}, backend.CopyRange{Dst: 1403, Src: 1200, N: 7})
			}
			for _, p := range []struct {
				be   backend.Copier
				d, s backend.Buffer
			}{{g, gx, gy}, {c, cx, cy}} {
				// Another source first, so that the copy is seen.
				if err := p.be.(backend.Backend).Write(p.s, 0, quantValues(9, n)); err != nil {
					t.Fatal(err)
				}
				if err := p.be.Copy(ctx, p.d, p.s, ranges...); err != nil {
					t.Fatalf("Copy: %v", err)
				}
			}
			same(t, g, c, gx, cx, 0, n)
			// Small ranges that share dispatches: a block and the next
			// share a scale word (blocks 20 and 21, 22 and 23), fp8
			// ranges a word, so that they take two layers.
			ranges = []backend.CopyRange{{Dst: 640, Src: 32, N: 32}, {Dst: 672, Src: 320, N: 64}, {Dst: 736, Src: 1088, N: 32}, {Dst: 800, Src: 0, N: 96}}
			if dt == backend.FP8 {
				ranges = append(ranges, backend.CopyRange{Dst: 901, Src: 5, N: 6}, backend.CopyRange{Dst: 907, Src: 100, N: 3}, backend.CopyRange{Dst: 910, Src: 200, N: 1})
			}
			for _, p := range []struct {
				be   backend.Copier
				d, s backend.Buffer
			}{{g, gx, gy}, {c, cx, cy}} {
				if err := p.be.Copy(ctx, p.d, p.s, ranges...); err != nil {
					t.Fatalf("Copy: %v", err)
				}
			}
			same(t, g, c, gx, cx, 0, n)

			// Refusals.
			if blk > 1 {
				if _, err := g.Alloc(dt, 33); !errors.Is(err, backend.ErrShape) {
					t.Errorf("Alloc(%v, 33): %v, want ErrShape", dt, err)
				}
				if err := g.Write(gx, 16, make([]float32, 32)); !errors.Is(err, backend.ErrShape) {
					t.Errorf("Write at 16: %v, want ErrShape", err)
				}
				if err := g.Read(make([]float32, 31), gx, 0); !errors.Is(err, backend.ErrShape) {
					t.Errorf("Read of 31: %v, want ErrShape", err)
				}
				if err := g.Copy(ctx, gx, gy, backend.CopyRange{Dst: 0, Src: 8, N: 32}); !errors.Is(err, backend.ErrShape) {
					t.Errorf("Copy from 8: %v, want ErrShape", err)
				}
				v := quantValues(3, 64)
				v[40] = dt.MaxFinite() // Q8Max, Q4Max
				if err := g.Write(gx, 64, v); !errors.Is(err, backend.ErrNonFinite) {
					t.Errorf("Write of %g: %v, want ErrNonFinite", v[40], err)
				}
				same(t, g, c, gx, cx, 0, n) // nothing written
			}
			// A NaN or an infinity: q8 and q4 blocks and fp8 (no
			// infinity, and a NaN pattern the kernels read as ±480) refuse
			// both, on both backends, writing nothing.
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
				v := quantValues(4, 64)
				v[33] = bad
				for _, w := range []struct {
					be backend.Backend
					x  backend.Buffer
				}{{g, gx}, {c, cx}} {
					if err := w.be.Write(w.x, 64, v); !errors.Is(err, backend.ErrNonFinite) {
						t.Errorf("%s: Write of %g: %v, want ErrNonFinite", w.be.Name(), bad, err)
					}
				}
				same(t, g, c, gx, cx, 0, n) // nothing written
			}
			if err := g.WriteBits(gx, 0, make([]uint16, blk)); !errors.Is(err, backend.ErrShape) {
				t.Errorf("WriteBits: %v, want ErrShape", err)
			}
			if err := g.ReadBits(make([]uint16, blk), gx, 0); !errors.Is(err, backend.ErrShape) {
				t.Errorf("ReadBits: %v, want ErrShape", err)
			}
			f, err := g.Alloc(backend.Float32, n)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Release()
			if err := g.Copy(ctx, gx, f, backend.CopyRange{N: 32}); !errors.Is(err, backend.ErrUnsupported) {
				t.Errorf("Copy from f32: %v, want ErrUnsupported", err)
			}
			if err := g.Copy(ctx, f, gx, backend.CopyRange{N: 32}); !errors.Is(err, backend.ErrUnsupported) {
				t.Errorf("Copy into f32: %v, want ErrUnsupported", err)
			}
			// Memory: the stored bytes, padded to 16.
			live, _ := g.Memory()
			x, err := g.Alloc(dt, 512)
			if err != nil {
				t.Fatal(err)
			}
			after, _ := g.Memory()
			x.Release()
			want := map[backend.DType]int64{backend.FP8: 512, backend.Q8: 544, backend.Q4: 288}[dt]
			if after-live != want {
				t.Errorf("Alloc(%v, 512) took %d bytes, want %d", dt, after-live, want)
			}
		})
	}
}

// same checks that n elements from off of the GPU's x and the CPU's y
// read the same.
func same(t *testing.T, g, c backend.Backend, x, y backend.Buffer, off, n int) {
	t.Helper()
	a, b := make([]float32, n), make([]float32, n)
	if err := g.Read(a, x, off); err != nil {
		t.Fatalf("gpu Read: %v", err)
	}
	if err := c.Read(b, y, off); err != nil {
		t.Fatalf("cpu Read: %v", err)
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("element %d: gpu %v, cpu %v", off+i, a[i], b[i])
		}
	}
}
