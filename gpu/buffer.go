//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/wg"
)

// buffer is device storage of n values of one dtype owned by one Backend:
// float32s, or halves two to a u32 word (element i in the low half of
// word i/2 when i is even, the high half when odd), ⌈n/2⌉ words, from
// byte off of a wgpu buffer. Its bytes are at least 16 (a zero-length
// binding is not allowed) and a multiple of 16, so that a kernel may read
// whole vec4s. A buffer attn allocated (off 0) is destroyed by Release
// under the device lock; an imported one (import.go) holds a reference of
// its own to the caller's wgpu buffer, which Release drops.
type buffer struct {
	owner    *Backend
	n        int
	dtype    backend.DType
	bytes    int64 // from off; for a buffer attn allocated, the wgpu buffer's size
	off      int   // byte offset of element 0 in buf: 0 unless imported
	imported bool
	pooled   bool // from the scratch pool (pool.go), which free returns it to
	buf      *wg.Buffer
	released bool // guarded by owner.mu
}

// word is the index, in buf's u32 words, of x's word w (off is a multiple
// of 4: Import checks it).
func (x *buffer) word(w int) int { return x.off/4 + w }

// wordBytes is the bytes of scratch x's n words, rounded up to 16 and
// within its buffer: what a dispatch binds of a pooled buffer, which may
// be larger than the words it holds.
func (x *buffer) wordBytes() int { return int(min(x.bytes, int64(x.n*4+15)&^15)) }

func (x *buffer) Len() int {
	if x == nil {
		return 0
	}
	return x.n
}

// DType is how the buffer stores its elements.
func (x *buffer) DType() backend.DType {
	if x == nil {
		return backend.Float32
	}
	return x.dtype
}

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

// free destroys the wgpu buffer (an imported one: drops attn's reference
// to it; a pooled one: returns it to the pool); nil is a no-op. The
// caller holds owner.mu. A buffer that recorded, not yet submitted work
// uses (step.go) is destroyed right after that work is submitted: WebGPU
// aborts a submission that uses a destroyed buffer, while destroying one
// that submitted work uses waits for it.
func (x *buffer) free() {
	if x == nil || x.released {
		return
	}
	x.released = true
	wb := x.buf
	x.buf = nil
	if x.imported {
		delete(x.owner.foreign, wb)
		x.owner.afterSubmit(wb.Release)
		return
	}
	if x.pooled {
		b, size := x.owner, x.bytes
		b.afterSubmit(func() { b.put(wb, size) })
		return
	}
	b := x.owner
	b.allocated -= x.bytes
	b.afterSubmit(func() { b.destroy(wb) })
}

// destroy drops the kept bind groups that bind wb (groups.go), then
// destroys and releases it. The caller holds b.mu.
func (b *Backend) destroy(wb *wg.Buffer) {
	b.forget(wb)
	wb.Destroy()
}

// Alloc returns zero-filled device storage for n values of dtype t
// (WebGPU zero-initialises new buffers): n·4 bytes for Float32, ⌈n/2⌉
// words for a half dtype, n bytes for FP8, ⌈n/256⌉·272 for Q8 and
// ⌈n/256⌉·144 for Q4 (n whole blocks of 32, else ErrShape;
// internal/plan/quantlayout.go).
// Caps().MaxBufferLen, the device's largest buffer in float32s, bounds n
// for every dtype.
func (b *Backend) Alloc(t backend.DType, n int) (backend.Buffer, error) {
	if n < 0 {
		return nil, backend.Errorf(backend.ErrShape, "gpu: alloc of %d elements", n)
	}
	if !t.Storable() {
		return nil, backend.Errorf(backend.ErrShape, "gpu: alloc of %v", t)
	}
	if blk := t.Block(); n%blk != 0 {
		return nil, backend.Errorf(backend.ErrShape, "gpu: alloc of %d %v elements: want whole blocks of %d", n, t, blk)
	}
	if err := b.lock(nil, "alloc"); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	if uint64(n) > b.lim.MaxBufferSize/4 {
		return nil, backend.Errorf(backend.ErrTooLarge, "gpu: alloc of %d %v elements exceeds the device's largest buffer, %d bytes, of %d float32s (Caps().MaxBufferLen, for every dtype)",
			n, t, b.lim.MaxBufferSize, b.lim.MaxBufferSize/4)
	}
	size := max(storedBytes(t, n), 16)
	size = (size + 15) &^ 15
	wb, err := b.dev.CreateBuffer("attn", size, wg.UsageStorage|wg.UsageCopyDst|wg.UsageCopySrc)
	if err != nil {
		return nil, backend.Errorf(backend.ErrTooLarge, "gpu: alloc of %d elements (%d bytes): %v", n, size, err)
	}
	x := &buffer{owner: b, n: n, dtype: t, bytes: int64(size), buf: wb}
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
		return nil, backend.Errorf(backend.ErrForeignBuffer, "gpu: %s: %s", op, name)
	}
	if x.released {
		return nil, backend.Errorf(backend.ErrReleased, "gpu: %s: the %s buffer is released", op, name)
	}
	return x, nil
}

// storedBytes is the bytes n elements of t take: 4 each for Float32, ⌈n/2⌉
// words for a half dtype, a quantized dtype's as
// internal/plan/quantlayout.go lays it out.
func storedBytes(t backend.DType, n int) uint64 {
	if t.Quantized() {
		return plan.QuantBytes(t, n)
	}
	if t.Half() {
		return uint64(n+1) / 2 * 4
	}
	return uint64(n) * 4
}

// WriteBits copies src, the bits of dst's half dtype, into dst from
// element off, as they are. A Float32 dst is ErrShape.
func (b *Backend) WriteBits(dst backend.Buffer, off int, src []uint16) error {
	x, err := b.lockRange("write", "dst", dst, off, len(src))
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	if !x.dtype.Half() {
		return backend.Errorf(backend.ErrShape, "gpu: write of %d half bits into a %v buffer", len(src), x.dtype)
	}
	return b.writeHalves(x, off, src)
}

// ReadBits copies len(dst) stored elements of the half buffer src, from
// element off, as bits. A Float32 src is ErrShape.
func (b *Backend) ReadBits(dst []uint16, src backend.Buffer, off int) error {
	x, err := b.lockRange("read", "src", src, off, len(dst))
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	if !x.dtype.Half() {
		return backend.Errorf(backend.ErrShape, "gpu: read of %d half bits from a %v buffer", len(dst), x.dtype)
	}
	return b.readHalves(dst, x, off)
}

// lockRange takes the device lock for op (write or read), resolves buf
// and checks that elements [off, off+n) lie in it: on success the caller
// holds b.mu and must unlock it.
func (b *Backend) lockRange(op, name string, buf backend.Buffer, off, n int) (*buffer, error) {
	if buf == nil {
		return nil, backend.Errorf(backend.ErrShape, "gpu: %s: %s buffer is nil", op, name)
	}
	if err := b.lock(nil, op); err != nil {
		return nil, err
	}
	x, err := b.resolve(op, name, buf)
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	if err := needUsage(op, x); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	// Recorded work goes to the queue first, so that a read sees it and a
	// write lands after it, as the calls were made (step.go).
	if err := b.flush(); err != nil {
		b.mu.Unlock()
		return nil, backend.Wrapf(err, "gpu: %s", op)
	}
	if off < 0 || off > x.n || n > x.n-off {
		b.mu.Unlock()
		dir := "into"
		if op == "read" {
			dir = "from"
		}
		return nil, backend.Errorf(backend.ErrShape, "gpu: %s of %d elements at offset %d %s a buffer of %d", op, n, off, dir, x.n)
	}
	return x, nil
}

// writeHalves stores the half bits src as elements off … of x, exactly
// (WriteBits promises the bits as they are, a NaN's payload included,
// which no kernel's float arithmetic keeps). A word that src covers only
// half of (an odd off, or an odd end) keeps its other half: the device
// merges it (writeSpans), so writes by several goroutines into the two
// halves of one word both land. The caller holds b.mu.
func (b *Backend) writeHalves(x *buffer, off int, src []uint16) error {
	if len(src) == 0 {
		return nil
	}
	end := off + len(src)
	w0, w1 := off/2, (end+1)/2
	words := make([]uint32, w1-w0)
	for i, h := range src {
		e := off + i
		words[e/2-w0] |= uint32(h) << (16 * (e % 2))
	}
	img := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 4*len(words))
	return b.writeSpans(x, w0, img, [][2]int{{2 * (off - 2*w0), 2 * (end - 2*w0)}})
}

// readHalves reads len(dst) half bits of x from element off. The caller
// holds b.mu (released while it waits: readChunk).
func (b *Backend) readHalves(dst []uint16, x *buffer, off int) error {
	for len(dst) > 0 {
		// Whole words, at most a staging buffer's worth a chunk.
		n := min(len(dst), stagingBytes/2-2)
		w0, w1 := off/2, (off+n+1)/2
		words := make([]uint32, w1-w0)
		if err := b.readWords(words, x, w0); err != nil {
			return err
		}
		for i := range n {
			e := off + i
			dst[i] = uint16(words[e/2-w0] >> (16 * (e % 2)))
		}
		dst, off = dst[n:], off+n
	}
	return nil
}

// writeChunk bounds the host copy wgpu makes of one WriteBuffer.
const writeChunk = 64 << 20

// Write copies src into dst from element off, rounded to a half dst's
// dtype (backend.DType.Encode) on the host after DType.CheckFits has
// refused a value that would overflow it (ErrNonFinite, nothing
// written). A quantized dst is quantized on the host as the CPU backend
// does (writeQuant).
func (b *Backend) Write(dst backend.Buffer, off int, src []float32) error {
	x, err := b.lockRange("write", "dst", dst, off, len(src))
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	if x.dtype.Quantized() {
		return b.writeQuant(x, off, src)
	}
	if !x.dtype.Half() {
		return b.write(x.buf, x.word(off), src)
	}
	if err := x.dtype.CheckFits("gpu: write: src", off, src); err != nil {
		return err
	}
	bits := make([]uint16, len(src))
	for i, v := range src {
		bits[i] = x.dtype.Encode(v)
	}
	return b.writeHalves(x, off, bits)
}

// write uploads src at element off of wb, a float32 buffer. The caller
// holds b.mu.
func (b *Backend) write(wb *wg.Buffer, off int, src []float32) error {
	for len(src) > 0 {
		n := min(len(src), writeChunk/4)
		data := unsafe.Slice((*byte)(unsafe.Pointer(&src[0])), n*4)
		if err := b.dev.WriteBuffer(wb, uint64(off)*4, data); err != nil {
			return backend.Wrapf(err, "gpu: write")
		}
		src, off = src[n:], off+n
	}
	return nil
}

// writeWords uploads words at word off of wb. The caller holds b.mu.
func (b *Backend) writeWords(wb *wg.Buffer, off int, words []uint32) error {
	return b.write(wb, off, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(words))), len(words)))
}

// readWords reads len(dst) words of x from its word off. The caller
// holds b.mu (released while it waits: readChunk).
func (b *Backend) readWords(dst []uint32, x *buffer, off int) error {
	for len(dst) > 0 {
		n := min(len(dst), stagingBytes/4)
		if err := b.readChunk(unsafe.Slice((*float32)(unsafe.Pointer(&dst[0])), n), x, off); err != nil {
			return err
		}
		dst, off = dst[n:], off+n
	}
	return nil
}

// fill sets n elements of wb from element off to v. The caller holds b.mu.
func (b *Backend) fill(wb *wg.Buffer, off, n int, v float32) error {
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
// the staging buffer, one chunk at a time; a half src is widened exactly
// on the host (backend.DType.Decode), a quantized one too (readQuant).
func (b *Backend) Read(dst []float32, src backend.Buffer, off int) error {
	x, err := b.lockRange("read", "src", src, off, len(dst))
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	if x.dtype.Quantized() {
		return b.readQuant(dst, x, off)
	}
	if x.dtype.Half() {
		bits := make([]uint16, len(dst))
		if err := b.readHalves(bits, x, off); err != nil {
			return err
		}
		for i, h := range bits {
			dst[i] = x.dtype.Decode(h)
		}
		return nil
	}
	for len(dst) > 0 {
		n := min(len(dst), stagingBytes/4)
		if err := b.readChunk(dst[:n], x, off); err != nil {
			return err
		}
		dst, off = dst[n:], off+n
	}
	return nil
}

// readChunk copies len(dst) ≤ stagingBytes/4 words of x from its word
// off, through a staging buffer the read has to itself (takeStaging):
// the copy is submitted and the staging buffer's mapping asked for under
// b.mu, which the caller holds; readChunk releases it while it waits for
// the mapping (await), so that other goroutines record and submit
// meanwhile, and holds it again to copy the words out and unmap. No
// submission uses a staging buffer that is mapped: none but its read's
// own copy uses it at all.
func (b *Backend) readChunk(dst []float32, x *buffer, off int) error {
	if x.released { // by another goroutine while an earlier chunk waited
		return backend.Errorf(backend.ErrReleased, "gpu: read: the source buffer is released")
	}
	size := uint64(len(dst)) * 4
	if x.imported {
		if err := b.dev.Alive(x.buf, uint64(x.off), uint64(x.bytes)); err != nil {
			return backend.Wrapf(err, "gpu: read: src buffer")
		}
	}
	st, err := b.takeStaging(size)
	if err != nil {
		return backend.Wrapf(err, "gpu: read")
	}
	enc, err := b.dev.CreateEncoder()
	if err != nil {
		b.putStaging(st)
		return backend.Wrapf(err, "gpu: read")
	}
	defer enc.Release()
	if err := enc.CopyBufferToBuffer(x.buf, uint64(x.word(off))*4, st, 0, size); err != nil {
		b.putStaging(st)
		return backend.Wrapf(err, "gpu: read")
	}
	cmd, err := enc.Finish()
	if err != nil {
		b.putStaging(st)
		return backend.Wrapf(err, "gpu: read")
	}
	defer cmd.Release()
	if err := b.dev.Submit(cmd); err != nil {
		b.putStaging(st)
		return backend.Wrapf(err, "gpu: read")
	}
	p, err := b.dev.MapAsync(st, wg.MapRead, 0, size)
	if err != nil {
		b.putStaging(st)
		return backend.Wrapf(err, "gpu: read")
	}
	if err := b.await(p); err != nil {
		b.destroy(st) // its mapping failed: it serves no other read
		return fmt.Errorf("gpu: read: %w: %w", backend.ErrDeviceLost, err)
	}
	mapped := st.Mapped(0, size)
	copy(dst, unsafe.Slice((*float32)(unsafe.Pointer(&mapped[0])), len(dst)))
	err = st.Unmap()
	b.putStaging(st)
	if err != nil {
		return backend.Wrapf(err, "gpu: read")
	}
	return nil
}

// takeStaging returns a MapRead buffer of at least size bytes for one
// read: the kept one (stagingBytes) when no other read holds it, else
// one of its own, made for this read and destroyed by putStaging, so
// that reads of several goroutines each map their own. The caller holds
// b.mu.
func (b *Backend) takeStaging(size uint64) (*wg.Buffer, error) {
	if st := b.staging; st != nil {
		b.staging = nil
		return st, nil
	}
	return b.dev.CreateBuffer("attn staging", (size+15)&^15, wg.UsageMapRead|wg.UsageCopyDst)
}

// putStaging gives back st, unmapped, from takeStaging: it is kept when
// it is the kept one and the Backend is open, else destroyed. The
// caller holds b.mu.
func (b *Backend) putStaging(st *wg.Buffer) {
	if st.Size() == stagingBytes && b.staging == nil && !b.closed {
		b.staging = st
		return
	}
	b.destroy(st)
}
