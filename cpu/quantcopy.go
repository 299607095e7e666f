package cpu

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/magnitude"
)

// CopyQuant copies ranges of the float32 or half buffer src into the
// 8-bit buffer dst, quantized as a write into dst quantizes, an fp8
// dst's values first divided by their head's scale
// (backend.QuantCopier). A value a write refuses (NaN, an infinity,
// into q8 a magnitude of backend.Q8Max or more) is refused with
// ErrNonFinite before anything is written: the host can look first.
// The saturated values are added to q.Counts.
func (b *Backend) CopyQuant(ctx context.Context, dst, src backend.Buffer, q backend.QuantCopy, ranges ...backend.CopyRange) error {
	d, s, err := b.copyStores(ctx, dst, src)
	if err != nil {
		return err
	}
	if q.Counts != nil {
		if _, err := b.data("copy", "counts", q.Counts); err != nil {
			return err
		}
	}
	if dst == src || q.Counts != nil && (q.Counts == dst || q.Counts == src) {
		return backend.Errorf(backend.ErrShape, "cpu: copy: dst, src and counts are not three buffers")
	}
	if d.ro {
		return backend.Errorf(backend.ErrShape, "cpu: copy into a read-only wrapped buffer of %d elements", d.len())
	}
	if err := backend.CheckQuantCopy(d.t, s.t, d.len(), s.len(), q, ranges); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	// Look at every value first, so that a refusal writes nothing.
	scratch := copyScratch.Get().(*[copyChunk]float32)
	defer copyScratch.Put(scratch)
	tmp := scratch[:]
	for i, r := range ranges {
		for c := 0; c < r.N; c += copyChunk {
			n := min(copyChunk, r.N-c)
			s.widenAt(tmp[:n], r.Src+c)
			if j, ok := refused(d.t, tmp[:n]); !ok {
				return backend.Errorf(backend.ErrNonFinite, "cpu: copy range %d of %d: src element %d is %g, which a %v buffer does not hold", i, len(ranges), r.Src+c+j, tmp[j], d.t)
			}
		}
	}
	var saturated uint64
	for _, r := range ranges {
		for c := 0; c < r.N; c += copyChunk {
			n := min(copyChunk, r.N-c)
			x := tmp[:n]
			s.widenAt(x, r.Src+c)
			if d.t == backend.FP8 {
				if q.Scales != nil {
					for i := range x {
						x[i] /= q.Scales[(r.Src+c+i)/q.Dim%len(q.Scales)]
					}
				}
				if !magnitude.Below(x, math.Float32bits(backend.FP8Max)+1) {
					for _, v := range x {
						if v > backend.FP8Max || v < -backend.FP8Max {
							saturated++
						}
					}
				}
			}
			if err := quantWrite(d, r.Dst+c, x); err != nil {
				return err // not reached: refused above
			}
		}
	}
	if saturated > 0 && q.Counts != nil {
		b.addCounts(q.Counts, saturated)
	}
	return nil
}

// copyScratch holds CopyQuant's widened chunks, so that a decoding
// step's append allocates nothing.
var copyScratch = sync.Pool{New: func() any { return new([copyChunk]float32) }}

// refused returns the index of the first value of x that an 8-bit
// buffer of dtype t does not hold (NaN, an infinity; for q8 a magnitude
// of backend.Q8Max or more) and false, or true when it holds them all.
func refused(t backend.DType, x []float32) (int, bool) {
	bound := uint32(0x7f800000)
	if t == backend.Q8 {
		bound = math.Float32bits(backend.Q8Max)
	}
	if magnitude.Below(x, bound) {
		return 0, true
	}
	for i, v := range x {
		if math.Float32bits(v)&^(1<<31) >= bound {
			return i, false
		}
	}
	return 0, true
}

// addCounts adds saturated to the counts buffer (backend.QuantCopy's)
// under its lock, which Read takes too, so that a count is read whole.
func (b *Backend) addCounts(counts backend.Buffer, saturated uint64) {
	bb := counts.(*buffer) // data has checked it
	bb.mu.Lock()
	defer bb.mu.Unlock()
	if !bb.released {
		backend.AddCounts(bb.data.f32, saturated, 0)
	}
}

var _ backend.QuantCopier = (*Backend)(nil)
