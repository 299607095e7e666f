package cpu

import (
	"context"
	"math"
	"sync"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/magnitude"
)

// CopyQuant copies ranges of the float32 or half buffer src into the
// 8-bit buffer dst, quantized as a write into dst quantizes, an fp8
// dst's values first divided by their head's scale
// (backend.QuantCopier). A value a write refuses (NaN, an infinity,
// into q8 a magnitude of backend.Q8Max or more) is stored as NaN and
// counted, as the GPU stores and counts it: fp8's NaN pattern
// S.1111.111, or its q8 block's scale as float16 NaN (0x7e00) with
// codes 0. The values this device holds are its own, unchecked, as
// the GPU's are: the host's Write is what refuses. The saturated and
// the NaN-stored values are added to q.Counts.
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
		return backend.Wrapf(err, "cpu")
	}
	scratch := copyScratch.Get().(*[copyChunk]float32)
	defer copyScratch.Put(scratch)
	tmp := scratch[:]
	var saturated, nan uint64
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
			nan += storeQuant(d, r.Dst+c, x)
		}
	}
	if q.Counts != nil && saturated+nan > 0 {
		b.addCounts(q.Counts, saturated, nan)
	}
	return nil
}

// storeQuant stores x into the 8-bit store d from element off (q8:
// whole blocks) as quantWrite does, but a value quantWrite refuses is
// stored as NaN (CopyQuant says how) instead, and counted: it returns
// how many were. An infinity beyond fp8's range is among them, not
// among the saturated values, as on the GPU.
func storeQuant(d store, off int, x []float32) (nan uint64) {
	if _, ok := refused(d.t, x); ok {
		quantWrite(d, off, x) // nothing to refuse: no error
		return 0
	}
	if d.t == backend.FP8 {
		for i, v := range x {
			if bits := math.Float32bits(v); bits&^(1<<31) >= 0x7f800000 {
				d.f8[off+i] = uint8(bits>>24)&0x80 | 0x7f
				nan++
				continue
			}
			d.f8[off+i], _ = backend.EncodeFP8(v)
		}
		return nan
	}
	for blk := 0; blk < len(x); blk += backend.Q8Block {
		xb := x[blk : blk+backend.Q8Block]
		if _, ok := refused(d.t, xb); ok {
			quantWrite(d, off+blk, xb)
			continue
		}
		if d.t == backend.Q4 {
			clear(d.q4[(off+blk)/2 : (off+blk+backend.Q8Block)/2])
		} else {
			clear(d.q8[off+blk : off+blk+backend.Q8Block])
		}
		d.sc[(off+blk)/backend.Q8Block] = 0x7e00 // float16 NaN: the block reads as NaN
		for _, v := range xb {
			if m := d.t.MaxFinite(); !(v < m && v > -m) {
				nan++
			}
		}
	}
	return nan
}

// copyScratch holds CopyQuant's widened chunks, so that a decoding
// step's append allocates nothing.
var copyScratch = sync.Pool{New: func() any { return new([copyChunk]float32) }}

// refused returns the index of the first value of x that an 8-bit
// buffer of dtype t does not hold (NaN, an infinity; for q8 a magnitude
// of backend.Q8Max or more) and false, or true when it holds them all.
func refused(t backend.DType, x []float32) (int, bool) {
	bound := uint32(0x7f800000)
	if t.Block() > 1 {
		bound = math.Float32bits(t.MaxFinite()) // Q8Max, Q4Max
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

// addCounts adds saturated and nan to the counts buffer
// (backend.QuantCopy's) under its lock, which Read takes too, so that a
// count is read whole.
func (b *Backend) addCounts(counts backend.Buffer, saturated, nan uint64) {
	bb := counts.(*buffer) // data has checked it
	bb.mu.Lock()
	defer bb.mu.Unlock()
	if !bb.released {
		backend.AddCounts(bb.data.f32, saturated, nan)
	}
}

var _ backend.QuantCopier = (*Backend)(nil)
