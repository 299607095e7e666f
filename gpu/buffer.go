//go:build cgo && !nogpu

package gpu

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/attn-go/attn/backend"
	"github.com/rajveermalviya/go-webgpu/wgpu"
)

// buffer is device storage of n float32 values owned by one Backend. Its
// wgpu buffer is at least 16 bytes long (a zero-length binding is not
// allowed), and Release destroys it at once under the device lock.
type buffer struct {
	owner    *Backend
	n        int
	bytes    int64
	buf      *wgpu.Buffer
	released bool // guarded by owner.mu
}

func (x *buffer) Len() int {
	if x == nil {
		return 0
	}
	return x.n
}

// DType is Float32: this backend stores float32 only (Caps().Half is
// false).
func (x *buffer) DType() backend.DType { return backend.Float32 }

// Release frees the device memory; releasing twice is a no-op.
func (x *buffer) Release() {
	if x == nil {
		return
	}
	b := x.owner
	b.mu.Lock()
	defer b.mu.Unlock()
	if x.released {
		return
	}
	delete(b.bufs, x)
	x.free()
}

// free destroys the wgpu buffer; nil is a no-op. The caller holds
// owner.mu; no work that uses the buffer is in flight, because every op
// waits for its own work.
func (x *buffer) free() {
	if x == nil || x.released {
		return
	}
	x.released = true
	x.owner.allocated -= x.bytes
	x.buf.Destroy()
	x.buf.Release()
	x.buf = nil
}

// Alloc returns zero-filled device storage for n float32 values (WebGPU
// zero-initialises new buffers); a half dtype is ErrUnsupported.
func (b *Backend) Alloc(t backend.DType, n int) (backend.Buffer, error) {
	if n < 0 {
		return nil, backend.Errorf(backend.ErrShape, "gpu: alloc of %d elements", n)
	}
	if !t.Valid() {
		return nil, backend.Errorf(backend.ErrShape, "gpu: alloc of %v", t)
	}
	if t != backend.Float32 {
		return nil, backend.Errorf(backend.ErrUnsupported, "gpu: alloc of %d %v elements: this backend stores float32 only", n, t)
	}
	if err := b.lock(nil, "alloc"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	if uint64(n) > b.lim.MaxBufferSize/4 {
		return nil, backend.Errorf(backend.ErrTooLarge, "gpu: alloc of %d elements (%d bytes) exceeds the device's largest buffer, %d bytes",
			n, uint64(n)*4, b.lim.MaxBufferSize)
	}
	size := max(uint64(n)*4, 16)
	size = (size + 15) &^ 15
	wb, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{
		Label: "attn",
		Usage: wgpu.BufferUsage_Storage | wgpu.BufferUsage_CopyDst | wgpu.BufferUsage_CopySrc,
		Size:  size,
	})
	if err != nil || wb == nil {
		return nil, backend.Errorf(backend.ErrTooLarge, "gpu: alloc of %d elements (%d bytes): %v", n, size, err)
	}
	x := &buffer{owner: b, n: n, bytes: int64(size), buf: wb}
	b.bufs[x] = struct{}{}
	b.allocated += x.bytes
	b.peak = max(b.peak, b.allocated)
	return x, nil
}

// resolve checks that buf was allocated by b and is not released. The
// caller holds b.mu.
func (b *Backend) resolve(op, name string, buf backend.Buffer) (*buffer, error) {
	x, ok := buf.(*buffer)
	if !ok || x == nil || x.owner != b {
		return nil, fmt.Errorf("gpu: %s: %s: %w", op, name, backend.ErrForeignBuffer)
	}
	if x.released {
		return nil, fmt.Errorf("gpu: %s: %s buffer: %w", op, name, backend.ErrReleased)
	}
	return x, nil
}

// WriteBits writes the bits of a half buffer; this backend has none, so
// every dst is Float32 and refused.
func (b *Backend) WriteBits(dst backend.Buffer, off int, src []uint16) error {
	if err := b.checkBuffer("write", "dst", dst); err != nil {
		return err
	}
	return backend.Errorf(backend.ErrShape, "gpu: write of %d half bits into a %v buffer", len(src), dst.DType())
}

// ReadBits reads the bits of a half buffer; see WriteBits.
func (b *Backend) ReadBits(dst []uint16, src backend.Buffer, off int) error {
	if err := b.checkBuffer("read", "src", src); err != nil {
		return err
	}
	return backend.Errorf(backend.ErrShape, "gpu: read of %d half bits from a %v buffer", len(dst), src.DType())
}

// checkBuffer checks that buf is present, allocated by b and not
// released.
func (b *Backend) checkBuffer(op, name string, buf backend.Buffer) error {
	if buf == nil {
		return backend.Errorf(backend.ErrShape, "gpu: %s: %s buffer is nil", op, name)
	}
	if err := b.lock(nil, op); err != nil {
		return err
	}
	defer b.mu.Unlock()
	_, err := b.resolve(op, name, buf)
	return err
}

// writeChunk bounds the host copy wgpu makes of one WriteBuffer.
const writeChunk = 64 << 20

// Write copies src into dst from element off.
func (b *Backend) Write(dst backend.Buffer, off int, src []float32) error {
	if dst == nil {
		return backend.Errorf(backend.ErrShape, "gpu: write: dst buffer is nil")
	}
	if err := b.lock(nil, "write"); err != nil {
		return err
	}
	defer b.mu.Unlock()
	x, err := b.resolve("write", "dst", dst)
	if err != nil {
		return err
	}
	if off < 0 || off > x.n || len(src) > x.n-off {
		return backend.Errorf(backend.ErrShape, "gpu: write of %d elements at offset %d into a buffer of %d", len(src), off, x.n)
	}
	return b.write(x.buf, off, src)
}

// write uploads src at element off of wb. The caller holds b.mu.
func (b *Backend) write(wb *wgpu.Buffer, off int, src []float32) error {
	for len(src) > 0 {
		n := min(len(src), writeChunk/4)
		data := unsafe.Slice((*byte)(unsafe.Pointer(&src[0])), n*4)
		if err := b.queue.WriteBuffer(wb, uint64(off)*4, data); err != nil {
			return fmt.Errorf("gpu: write: %w", err)
		}
		src, off = src[n:], off+n
	}
	return nil
}

// fill sets n elements of wb from element off to v. The caller holds b.mu.
func (b *Backend) fill(wb *wgpu.Buffer, off, n int, v float32) error {
	chunk := make([]float32, min(n, writeChunk/4))
	for i := range chunk {
		chunk[i] = v
	}
	for n > 0 {
		m := min(n, len(chunk))
		if err := b.write(wb, off, chunk[:m]); err != nil {
			return err
		}
		off, n = off+m, n-m
	}
	return nil
}

var negInf = float32(math.Inf(-1))

// Read copies len(dst) elements of src from element off into dst, through
// the staging buffer, one chunk at a time.
func (b *Backend) Read(dst []float32, src backend.Buffer, off int) error {
	if src == nil {
		return backend.Errorf(backend.ErrShape, "gpu: read: src buffer is nil")
	}
	if err := b.lock(nil, "read"); err != nil {
		return err
	}
	defer b.mu.Unlock()
	x, err := b.resolve("read", "src", src)
	if err != nil {
		return err
	}
	if off < 0 || off > x.n || len(dst) > x.n-off {
		return backend.Errorf(backend.ErrShape, "gpu: read of %d elements at offset %d from a buffer of %d", len(dst), off, x.n)
	}
	for len(dst) > 0 {
		n := min(len(dst), stagingBytes/4)
		if err := b.readChunk(dst[:n], x.buf, off); err != nil {
			return err
		}
		dst, off = dst[n:], off+n
	}
	return nil
}

// readChunk copies len(dst) ≤ stagingBytes/4 elements. The staging buffer
// is unmapped whenever b.mu is free, so no submission ever sees it mapped.
func (b *Backend) readChunk(dst []float32, src *wgpu.Buffer, off int) error {
	size := uint64(len(dst)) * 4
	enc, err := b.dev.CreateCommandEncoder(nil)
	if err != nil {
		return fmt.Errorf("gpu: read: %w", err)
	}
	defer enc.Release()
	if err := enc.CopyBufferToBuffer(src, uint64(off)*4, b.staging, 0, size); err != nil {
		return fmt.Errorf("gpu: read: %w", err)
	}
	cmd, err := enc.Finish(nil)
	if err != nil {
		return fmt.Errorf("gpu: read: %w", err)
	}
	defer cmd.Release()
	b.queue.Submit(cmd)
	p, err := mapAsync(b.dev, b.staging, wgpu.MapMode_Read, 0, size)
	if err != nil {
		return fmt.Errorf("gpu: read: %w", err)
	}
	if err := p.wait(b.dev); err != nil {
		return fmt.Errorf("gpu: read: %w: %w", backend.ErrDeviceLost, err)
	}
	mapped := b.staging.GetMappedRange(0, uint(size))
	copy(dst, unsafe.Slice((*float32)(unsafe.Pointer(&mapped[0])), len(dst)))
	if err := b.staging.Unmap(); err != nil {
		return fmt.Errorf("gpu: read: %w", err)
	}
	return nil
}
