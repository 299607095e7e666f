//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/wg"
)

// Import wraps n elements of dtype dt stored in the caller's buffer buf
// from byte offset as a Buffer of b, without a copy, laid out as b's own
// buffers are (package doc, Memory: halves two to a u32 word; the
// quantized dtypes as internal/plan/quantlayout.go says, n whole blocks
// for Q8 and Q4).
// Ops read and write the caller's memory in place.
//
// buf must have been created on b's device with BufferUsage_Storage (the
// kernels bind it), and hold from offset the n elements rounded up to 16
// bytes, at least 16 (the kernels read whole vec4s: Alloc's buffers are
// padded alike); offset must be a multiple of the device's
// minStorageBufferOffsetAlignment. Write and WriteBits need
// BufferUsage_CopyDst too (a write covering half a word merges it on the
// device, through the Storage binding), Read and ReadBits
// BufferUsage_CopySrc, and they refuse with ErrUnsupported without it.
// Each failure is an
// error wrapping backend.ErrShape (or ErrUnsupported, for the usage and
// the device) naming the sizes.
//
// The Buffer holds a reference of its own to buf: releasing the caller's
// handle leaves it working, and its Release drops only that reference,
// never destroying the caller's buffer. Destroying buf while attn may use
// it is the caller's error (WebGPU aborts a submission that uses a
// destroyed buffer): an op that binds a destroyed buffer fails before
// submitting, but work already recorded (Step) is beyond checking.
// Imported buffers take part in every check of attn's own: an op's
// output may share its wgpu buffer with no other operand (WebGPU forbids
// a written binding aliasing another of the same buffer in a dispatch,
// whatever the ranges), and a Buffer of another Backend is
// ErrForeignBuffer. Memory does not count imported bytes.
func (b *Backend) Import(buf *NativeBuffer, offset uint64, dt backend.DType, n int) (backend.Buffer, error) {
	if buf == nil {
		return nil, backend.Errorf(backend.ErrShape, "gpu: import: the buffer is nil")
	}
	if n < 0 || !dt.Storable() || n%dt.Block() != 0 {
		return nil, backend.Errorf(backend.ErrShape, "gpu: import of %d %v elements", n, dt)
	}
	if err := b.lock(nil, "import"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	same, err := b.dev.Owns(buf)
	if err != nil {
		return nil, backend.Errorf(backend.ErrUnavailable, "%v", err)
	}
	if !same {
		return nil, backend.Errorf(backend.ErrUnsupported, "gpu: import: the buffer belongs to another device than the backend's")
	}
	h, err := wg.Reference(buf)
	if err != nil {
		return nil, backend.Errorf(backend.ErrUnavailable, "%v", err)
	}
	fail := func(err error) (backend.Buffer, error) {
		h.Release()
		return nil, err
	}
	if u := h.Usage(); u&wg.UsageStorage == 0 {
		return fail(backend.Errorf(backend.ErrUnsupported, "gpu: import: the buffer's usage %#x lacks BufferUsage_Storage, which the kernels bind it as", uint32(u)))
	}
	align := uint64(max(b.lim.MinStorageBufferOffsetAlignment, 4))
	if offset%align != 0 {
		return fail(backend.Errorf(backend.ErrShape, "gpu: import: offset %d is not a multiple of the device's minStorageBufferOffsetAlignment, %d", offset, align))
	}
	need := (max(storedBytes(dt, n), 16) + 15) &^ 15
	size := h.Size()
	if offset > size || need > size-offset {
		return fail(backend.Errorf(backend.ErrShape, "gpu: import of %d %v elements (%d bytes, padded to 16) at offset %d of a %d-byte buffer: %d bytes short",
			n, dt, need, offset, size, offset+need-size))
	}
	x := &buffer{owner: b, n: n, dtype: dt, bytes: int64(need), off: int(offset), imported: true, buf: h}
	if b.foreign == nil {
		b.foreign = map[*wg.Buffer]struct{}{}
	}
	b.foreign[h] = struct{}{} // groups.go: no kept bind group binds it
	b.bufs[x] = struct{}{}
	return x, nil
}

// Export returns the wgpu buffer behind buf, a Buffer of a Backend of
// this package (allocated or imported), and the byte offset of its
// element 0, so that the caller's kernels read and write it in place:
// buf.Len() elements of buf.DType(), laid out as the package doc says
// (Memory), in a buffer of usage Storage, CopySrc and CopyDst where attn
// allocated it. The handle is attn's: do not release or destroy it; it
// stays valid until buf is released or its Backend closed. A Buffer of
// another backend is ErrForeignBuffer; a released one ErrReleased.
func Export(buf backend.Buffer) (*NativeBuffer, uint64, error) {
	x, ok := buf.(*buffer)
	if !ok || x == nil || x.owner == nil {
		return nil, 0, backend.Errorf(backend.ErrForeignBuffer, "gpu: export")
	}
	b := x.owner
	b.mu.Lock()
	defer b.mu.Unlock()
	if x.released || b.closed {
		return nil, 0, backend.Errorf(backend.ErrReleased, "gpu: export: the buffer is released or its backend closed")
	}
	return x.buf.Native(), uint64(x.off), nil
}

// needUsage refuses a host copy into or out of x (op "write" or "read")
// when x is an imported buffer without the usage the copy needs. The
// caller holds b.mu.
func needUsage(op string, x *buffer) error {
	if !x.imported {
		return nil
	}
	need := []wg.Usage{wg.UsageCopySrc}
	if op == "write" {
		need = []wg.Usage{wg.UsageCopyDst}
	}
	u := x.buf.Usage()
	for _, w := range need {
		if u&w == 0 {
			name := map[wg.Usage]string{wg.UsageCopySrc: "BufferUsage_CopySrc", wg.UsageCopyDst: "BufferUsage_CopyDst"}[w]
			return backend.Errorf(backend.ErrUnsupported, "gpu: %s: the imported %v buffer's usage %#x lacks %s", op, x.dtype, uint32(u), name)
		}
	}
	return nil
}
