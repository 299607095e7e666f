package cpu

import (
	"fmt"
	"sync"

	"github.com/attn-go/attn/backend"
)

// buffer is host memory owned by one Backend. Release drops the slice so
// the garbage collector can take it; an op that already fetched the slice
// keeps it alive until it returns, so releasing a buffer in use is not a
// memory error, only a caller's mistake.
type buffer struct {
	owner *Backend
	n     int
	dtype backend.DType

	mu       sync.Mutex
	data     []float32
	released bool
}

// Len and Release accept a nil *buffer, which the validators may meet
// inside a non-nil Buffer interface.
func (b *buffer) Len() int {
	if b == nil {
		return 0
	}
	return b.n
}

func (b *buffer) DType() backend.DType {
	if b == nil {
		return backend.Float32
	}
	return b.dtype
}

func (b *buffer) Release() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.released = true
	b.data = nil
	b.mu.Unlock()
}

// Alloc returns a zero-filled buffer of n values of dtype t.
func (b *Backend) Alloc(t backend.DType, n int) (backend.Buffer, error) {
	if err := b.checkOpen("alloc"); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, backend.Errorf(backend.ErrShape, "cpu: alloc of %d elements", n)
	}
	if !t.Valid() {
		return nil, backend.Errorf(backend.ErrShape, "cpu: alloc of %v", t)
	}
	if t != backend.Float32 {
		return nil, backend.Errorf(backend.ErrUnsupported, "cpu: alloc of %d %v elements: this backend stores float32 only", n, t)
	}
	if n > maxAllocBytes/4 {
		return nil, backend.Errorf(backend.ErrTooLarge, "cpu: alloc of %d elements (%d bytes) exceeds %d bytes", n, uint64(n)*4, uint64(maxAllocBytes))
	}
	if n > b.maxLen {
		return nil, backend.Errorf(backend.ErrTooLarge, "cpu: alloc of %d elements needs %.1f GiB but %.1f GiB of memory is available (Caps().MaxBufferLen, measured when the backend opened)",
			n, float64(n)*4/(1<<30), float64(b.maxLen)*4/(1<<30))
	}
	if bytes := uint64(n) * 4; bytes >= checkedAllocBytes {
		if avail, ok := availableMemory(); ok && bytes > avail {
			return nil, backend.Errorf(backend.ErrTooLarge, "cpu: alloc of %d elements needs %.1f GiB but %.1f GiB of memory is available",
				n, float64(bytes)/(1<<30), float64(avail)/(1<<30))
		}
	}
	return &buffer{owner: b, n: n, data: make([]float32, n)}, nil
}

// Write copies src into dst starting at element off.
func (b *Backend) Write(dst backend.Buffer, off int, src []float32) error {
	data, err := b.data("write", "dst", dst)
	if err != nil {
		return err
	}
	if off < 0 || off > len(data) || len(src) > len(data)-off {
		return backend.Errorf(backend.ErrShape, "cpu: write of %d elements at offset %d into a buffer of %d", len(src), off, len(data))
	}
	copy(data[off:], src)
	return nil
}

// Read copies len(dst) elements of src, starting at element off, into dst.
func (b *Backend) Read(dst []float32, src backend.Buffer, off int) error {
	data, err := b.data("read", "src", src)
	if err != nil {
		return err
	}
	if off < 0 || off > len(data) || len(dst) > len(data)-off {
		return backend.Errorf(backend.ErrShape, "cpu: read of %d elements at offset %d from a buffer of %d", len(dst), off, len(data))
	}
	copy(dst, data[off:])
	return nil
}

// WriteBits writes the bits of a half buffer; this backend has none
// (Caps().Half is false), so every dst is Float32 and refused.
func (b *Backend) WriteBits(dst backend.Buffer, off int, src []uint16) error {
	if _, err := b.data("write", "dst", dst); err != nil {
		return err
	}
	return backend.Errorf(backend.ErrShape, "cpu: write of %d half bits into a %v buffer", len(src), dst.DType())
}

// ReadBits reads the bits of a half buffer; see WriteBits.
func (b *Backend) ReadBits(dst []uint16, src backend.Buffer, off int) error {
	if _, err := b.data("read", "src", src); err != nil {
		return err
	}
	return backend.Errorf(backend.ErrShape, "cpu: read of %d half bits from a %v buffer", len(dst), src.DType())
}

// data returns the storage of buf after checking that this backend is
// open, that it allocated buf and that buf is not released. A nil buf
// yields nil data and no error: the validators have already reported the
// operands that may not be nil.
func (b *Backend) data(op, name string, buf backend.Buffer) ([]float32, error) {
	if err := b.checkOpen(op); err != nil {
		return nil, err
	}
	if buf == nil {
		if op == "write" || op == "read" {
			return nil, backend.Errorf(backend.ErrShape, "cpu: %s: %s buffer is nil", op, name)
		}
		return nil, nil
	}
	bb, ok := buf.(*buffer)
	if !ok || bb == nil || bb.owner != b {
		return nil, fmt.Errorf("cpu: %s: %s: %w", op, name, backend.ErrForeignBuffer)
	}
	bb.mu.Lock()
	defer bb.mu.Unlock()
	if bb.released {
		return nil, fmt.Errorf("cpu: %s: %s buffer: %w", op, name, backend.ErrReleased)
	}
	return bb.data, nil
}

// maskBuf is the buffer of an optional mask operand, nil when there is no
// mask.
func maskBuf(m *backend.Mask) backend.Buffer {
	if m == nil {
		return nil
	}
	return m.Buf
}

// operand is one buffer argument of an op.
type operand struct {
	name   string
	buf    backend.Buffer
	output bool
}

// operands fetches the data of every operand, in order, after checking
// ownership and release, and refuses an output that shares its buffer with
// any other operand: the ops read inputs while other workers write the
// output, so aliasing would give wrong answers (and WebGPU forbids it too).
func (b *Backend) operands(op string, ops ...operand) ([][]float32, error) {
	out := make([][]float32, len(ops))
	for i, o := range ops {
		d, err := b.data(op, o.name, o.buf)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	for i, o := range ops {
		if !o.output || o.buf == nil {
			continue
		}
		for j, p := range ops {
			if j != i && p.buf != nil && p.buf == o.buf {
				return nil, backend.Errorf(backend.ErrShape, "cpu: %s: %s and %s share one buffer", op, o.name, p.name)
			}
		}
	}
	return out, nil
}
