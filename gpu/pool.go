//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"math"
	"math/bits"

	"github.com/attn-go/attn/gpu/internal/testhook"
	"github.com/attn-go/attn/gpu/internal/wg"
)

// The scratch pool keeps the scratch buffers of submitted work for later
// ops, as PyTorch's caching allocator keeps CUDA memory: a model's step
// asks for the same scratch every layer and every token (a decoding
// step's partial outputs and LSEs, a block table too large to inline),
// and creating and destroying a wgpu buffer costs the host time on every
// op (three a decoding layer under the hardware plan: docs/gpu.md), besides
// wgpu's clearing of every new buffer that a kernel may read before it
// is written. A buffer goes back to the pool once the work that uses it is
// submitted, never before: work recorded into one submission never
// shares a pooled buffer, so the device need not wait between two
// layers' dispatches for it, while a later submission, which the queue
// runs after, may take it.
//
// Pooled buffers hold what their last use left, not zeros: only scratch
// that its op writes in full before reading it comes from the pool
// (pooledScratch's callers say why each does), and attn's GPU tests
// fill every buffer the pool hands out with NaNs (testhook.PoisonScratch)
// so that a read of an element no kernel wrote fails them.

// poolBytes bounds the bytes the pool keeps: a 32-layer decoding step
// over 4096 keys, 32 query heads of 128, takes 2 MiB of partial outputs
// a layer. A buffer over poolLargest is never pooled.
const (
	poolBytes   = 256 << 20
	poolLargest = poolBytes / 4
)

// scratchPool is the free buffers by size, the longest-kept first. Their
// bytes count in Backend.allocated: they are device memory attn holds.
type scratchPool struct {
	free  map[uint64][]*wg.Buffer
	bytes int64
}

// poolSize is the size of the pooled buffer that holds n float32s: a
// power of two, at least 256 bytes, so that a decoding step whose splits
// change as its cache grows finds its buffers again.
func poolSize(n int) uint64 {
	return max(256, uint64(1)<<bits.Len64(uint64(max(n, 1))*4-1))
}

// pooledScratch returns scratch of n float32s as scratch does, from the
// pool when it has a buffer of poolSize(n) bytes. The caller must write
// every element it reads before reading it. The caller holds b.mu.
func (b *Backend) pooledScratch(n int) (*buffer, error) {
	size := poolSize(n)
	if size > poolLargest || size > b.lim.MaxBufferSize {
		return b.scratch(n)
	}
	var wb *wg.Buffer
	if l := b.pool.free[size]; len(l) > 0 {
		wb = l[0]
		l[0] = nil
		b.pool.free[size] = l[1:]
		b.pool.bytes -= int64(size)
	} else {
		x, err := b.scratch(int(size / 4))
		if err != nil {
			return nil, err
		}
		wb = x.buf
	}
	x := &buffer{owner: b, n: n, bytes: int64(size), buf: wb, pooled: true}
	if testhook.PoisonScratch {
		if err := b.fill(wb, 0, int(size/4), float32(math.NaN())); err != nil {
			x.free()
			return nil, err
		}
	}
	return x, nil
}

// put keeps wb, a pooled buffer of size bytes whose work is submitted,
// for a later pooledScratch, or destroys it when the pool is full. The
// caller holds b.mu.
func (b *Backend) put(wb *wg.Buffer, size int64) {
	if b.closed || b.pool.bytes+size > poolBytes {
		b.allocated -= size
		b.destroy(wb)
		return
	}
	if b.pool.free == nil {
		b.pool.free = map[uint64][]*wg.Buffer{}
	}
	b.pool.free[uint64(size)] = append(b.pool.free[uint64(size)], wb)
	b.pool.bytes += size
}

// Trim destroys the scratch buffers the backend keeps for reuse, so that
// Memory reports only the buffers in use. An op after it creates its
// scratch again.
func (b *Backend) Trim() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trim()
}

// trim is Trim with b.mu held.
func (b *Backend) trim() {
	for size, l := range b.pool.free {
		for _, wb := range l {
			b.destroy(wb)
		}
		delete(b.pool.free, size)
	}
	b.allocated -= b.pool.bytes
	b.pool.bytes = 0
}
