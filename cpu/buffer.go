package cpu

import (
	"unsafe"

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
	data     store
	released bool
}

// store is a buffer's elements: f32 for a Float32 buffer, h (the stored
// bits) for a Float16 or BFloat16 one. An op's operands reach it as a
// store, whatever their dtype; the ops widen a half operand tile by tile
// as they read it and narrow a half output as they write it (half.go).
type store struct {
	t   backend.DType
	f32 []float32
	h   []uint16
	// A quantized store (quant.go, quant4.go): q8's values and block
	// scales, fp8's bits, or q4's codes (two a byte) and block scales.
	q8 []int8
	sc []uint16
	f8 []uint8
	q4 []uint8
	// ro marks a read-only wrapped buffer (Backend.Wrap): a caller's
	// input, which no op and no Write may change.
	ro bool
}

// len is the number of elements.
func (s store) len() int {
	switch {
	case s.t.Half():
		return len(s.h)
	case s.t == backend.Q8:
		return len(s.q8)
	case s.t == backend.FP8:
		return len(s.f8)
	case s.t == backend.Q4:
		return 2 * len(s.q4)
	}
	return len(s.f32)
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
	b.data = store{}
	b.mu.Unlock()
}

// Alloc returns a zero-filled buffer of n values of dtype t: a []float32
// for Float32, the bits of each value in a []uint16 for the half dtypes.
// The memory checks count t.Size() bytes a value.
func (b *Backend) Alloc(t backend.DType, n int) (backend.Buffer, error) {
	if err := b.checkOpen("alloc"); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, backend.Errorf(backend.ErrShape, "cpu: alloc of %d elements", n)
	}
	if !t.Storable() {
		return nil, backend.Errorf(backend.ErrShape, "cpu: alloc of %v", t)
	}
	if n%t.Block() != 0 {
		return nil, backend.Errorf(backend.ErrShape, "cpu: alloc of %d %v elements: want whole blocks of %d", n, t, t.Block())
	}
	size := uint64(t.Size())
	if n > maxAllocBytes/t.Size() {
		return nil, backend.Errorf(backend.ErrTooLarge, "cpu: alloc of %d %v elements (%d bytes) exceeds %d bytes", n, t, uint64(n)*size, uint64(maxAllocBytes))
	}
	if n > b.maxLen {
		return nil, backend.Errorf(backend.ErrTooLarge, "cpu: alloc of %d %v elements needs %.1f GiB but %.1f GiB of memory is available (Caps().MaxBufferLen, measured when the backend opened)",
			n, t, float64(n)*float64(size)/(1<<30), float64(b.maxLen)*4/(1<<30))
	}
	if bytes := uint64(n) * size; bytes >= checkedAllocBytes {
		if avail, ok := availableMemory(); ok && bytes > avail {
			return nil, backend.Errorf(backend.ErrTooLarge, "cpu: alloc of %d %v elements needs %.1f GiB but %.1f GiB of memory is available",
				n, t, float64(bytes)/(1<<30), float64(avail)/(1<<30))
		}
	}
	buf := &buffer{owner: b, n: n, dtype: t, data: store{t: t}}
	switch {
	case t.Quantized():
		buf.data = allocQuant(t, n)
	case t.Half():
		buf.data.h = make([]uint16, n)
		if n > 0 {
			hugePages(unsafe.Pointer(&buf.data.h[0]), 2*n)
		}
	default:
		buf.data.f32 = make([]float32, n)
		if n > 0 {
			hugePages(unsafe.Pointer(&buf.data.f32[0]), 4*n)
		}
	}
	return buf, nil
}

// Write copies src into dst starting at element off, rounded to dst's
// dtype (to nearest, ties to even); a finite value beyond a half dtype's
// range is refused first (ErrNonFinite), writing nothing. An 8-bit dst
// stores src as its dtype does (backend.Q8, backend.FP8, backend.Q4).
func (b *Backend) Write(dst backend.Buffer, off int, src []float32) error {
	data, err := b.data("write", "dst", dst)
	if err != nil {
		return err
	}
	if data.ro {
		return backend.Errorf(backend.ErrShape, "cpu: write of %d elements into a read-only wrapped buffer", len(src))
	}
	if n := data.len(); off < 0 || off > n || len(src) > n-off {
		return backend.Errorf(backend.ErrShape, "cpu: write of %d elements at offset %d into a buffer of %d", len(src), off, n)
	}
	if data.t.Quantized() {
		return quantWrite(data, off, src)
	}
	if !data.t.Half() {
		copy(data.f32[off:], src)
		return nil
	}
	if err := data.t.CheckFits("cpu: write: src", off, src); err != nil {
		return err
	}
	// Nothing overflows now, so saturating is rounding (DType.Encode).
	narrow(data.t, data.h[off:off+len(src)], src)
	return nil
}

// Read copies len(dst) elements of src, starting at element off, into
// dst, widened exactly from src's dtype.
func (b *Backend) Read(dst []float32, src backend.Buffer, off int) error {
	data, err := b.data("read", "src", src)
	if err != nil {
		return err
	}
	if n := data.len(); off < 0 || off > n || len(dst) > n-off {
		return backend.Errorf(backend.ErrShape, "cpu: read of %d elements at offset %d from a buffer of %d", len(dst), off, n)
	}
	if data.t.Block() > 1 {
		if err := checkBlocks(data.t, "read", off, len(dst)); err != nil {
			return err
		}
	}
	// Under the buffer's lock: a quantizing copy's counts are added
	// under it (CopyQuant), and read whole.
	bb := src.(*buffer)
	bb.mu.Lock()
	data.widenAt(dst, off)
	bb.mu.Unlock()
	return nil
}

// WriteBits copies src, the bits of dst's half dtype, into dst from
// element off, as they are. A Float32 dst is ErrShape.
func (b *Backend) WriteBits(dst backend.Buffer, off int, src []uint16) error {
	data, err := b.data("write", "dst", dst)
	if err != nil {
		return err
	}
	if !data.t.Half() {
		return backend.Errorf(backend.ErrShape, "cpu: write of %d half bits into a %v buffer", len(src), data.t)
	}
	if data.ro {
		return backend.Errorf(backend.ErrShape, "cpu: write of %d elements into a read-only wrapped buffer", len(src))
	}
	if n := data.len(); off < 0 || off > n || len(src) > n-off {
		return backend.Errorf(backend.ErrShape, "cpu: write of %d elements at offset %d into a buffer of %d", len(src), off, n)
	}
	copy(data.h[off:], src)
	return nil
}

// ReadBits copies len(dst) stored elements of the half buffer src, from
// element off, as bits. A Float32 src is ErrShape.
func (b *Backend) ReadBits(dst []uint16, src backend.Buffer, off int) error {
	data, err := b.data("read", "src", src)
	if err != nil {
		return err
	}
	if !data.t.Half() {
		return backend.Errorf(backend.ErrShape, "cpu: read of %d half bits from a %v buffer", len(dst), data.t)
	}
	if n := data.len(); off < 0 || off > n || len(dst) > n-off {
		return backend.Errorf(backend.ErrShape, "cpu: read of %d elements at offset %d from a buffer of %d", len(dst), off, n)
	}
	copy(dst, data.h[off:])
	return nil
}

// data returns the storage of buf after checking that this backend is
// open, that it allocated buf and that buf is not released. A nil buf
// yields an empty store and no error: the validators have already reported the
// operands that may not be nil.
func (b *Backend) data(op, name string, buf backend.Buffer) (store, error) {
	if err := b.checkOpen(op); err != nil {
		return store{}, err
	}
	if buf == nil {
		if op == "write" || op == "read" {
			return store{}, backend.Errorf(backend.ErrShape, "cpu: %s: %s buffer is nil", op, name)
		}
		return store{}, nil
	}
	bb, ok := buf.(*buffer)
	if !ok || bb == nil || bb.owner != b {
		return store{}, backend.Errorf(backend.ErrForeignBuffer, "cpu: %s: %s", op, name)
	}
	bb.mu.Lock()
	defer bb.mu.Unlock()
	if bb.released {
		return store{}, backend.Errorf(backend.ErrReleased, "cpu: %s: the %s buffer is released", op, name)
	}
	return bb.data, nil
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
// Wrapped buffers (Wrap) are checked by their memory: a read-only one may
// not be an output, and an output may not overlap another operand.
func (b *Backend) operands(op string, ops ...operand) ([]store, error) {
	out := make([]store, len(ops))
	if err := b.fetch(out, op, ops...); err != nil {
		return nil, err
	}
	return out, nil
}

// fetch is operands into out (len(ops) long), for an op that must not
// allocate.
func (b *Backend) fetch(out []store, op string, ops ...operand) error {
	for i, o := range ops {
		d, err := b.data(op, o.name, o.buf)
		if err != nil {
			return err
		}
		out[i] = d
	}
	for i, o := range ops {
		if !o.output || o.buf == nil {
			continue
		}
		if out[i].ro {
			return backend.Errorf(backend.ErrShape, "cpu: %s: %s is a read-only wrapped buffer", op, o.name)
		}
		for j, p := range ops {
			if j != i && p.buf != nil && (p.buf == o.buf || out[i].overlaps(out[j])) {
				return backend.Errorf(backend.ErrShape, "cpu: %s: %s and %s share memory", op, o.name, p.name)
			}
		}
	}
	return nil
}
