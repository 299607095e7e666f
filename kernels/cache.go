package kernels

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/magnitude"
	"github.com/attn-go/attn/internal/operand"
)

// A server decodes a language model one token at a time: it appends the
// new token's keys and values to a cache that stays on the device, then
// attends the new query (or a few) over everything cached. KVCache holds
// B sequences contiguously, each with room for a fixed number of keys;
// PagePool holds any number of sequences in a shared pool of fixed-size
// pages (vLLM's paged attention), each sequence (Seq) taking pages as it
// grows and giving them back when released. Appending writes only the
// new rows across the bus and checks only them; attending uploads only
// the queries and downloads only the outputs, and a steady-state step
// allocates nothing on the host (given a backend whose Fused does not:
// the CPU backend's).

// CacheConfig is the storage of a cache's keys and values.
type CacheConfig struct {
	// KVHeads is the number of key/value heads; D the head dim of keys
	// and queries; Dv that of values and outputs, 0 meaning D.
	KVHeads, D, Dv int
	// DType is how keys and values are stored: Float32, Float16 or
	// BFloat16 (on a backend with Caps.Half), or 8 bits a value, Q8 or
	// FP8 (on a backend with Caps.Quant8; see backend.Q8 and
	// backend.FP8). Appended rows are rounded to it.
	DType DType
	// KScale and VScale, for an FP8 cache, are one scale a KV head
	// (vLLM's k_scale and v_scale; nil means 1): Append stores
	// x/scale, saturating beyond ±448 (Saturated counts them), and
	// Attend reads scale·stored.
	KScale, VScale []float32
	// Layout orders the device storage and the queries: under BNHD a
	// KVCache is [B, capacity, KVHeads, D] and a page [PageSize, KVHeads,
	// D] (FlashAttention's), queries and outputs [B, Nq, H, D]; under
	// BHND [B, KVHeads, capacity, D], a page [KVHeads, PageSize, D],
	// queries [B, H, Nq, D].
	Layout Layout
}

func (c CacheConfig) dv() int {
	if c.Dv == 0 {
		return c.D
	}
	return c.Dv
}

func (c CacheConfig) check(be backend.Backend) error {
	switch {
	case be == nil:
		return backend.Errorf(backend.ErrUnavailable, "nil backend")
	case c.KVHeads < 1 || c.D < 1 || c.Dv < 0:
		return backend.Errorf(backend.ErrShape, "cache of %d KV heads, D=%d, Dv=%d: want heads and D ≥ 1, Dv ≥ 0", c.KVHeads, c.D, c.Dv)
	case !c.DType.Storable():
		return backend.Errorf(backend.ErrShape, "cache of unknown dtype %v", c.DType)
	case c.DType.Quantized() && !be.Caps().Quant8:
		return backend.Errorf(backend.ErrUnsupported, "a %v cache on the %s backend, which stores no 8-bit K and V", c.DType, be.Name())
	case c.DType == backend.Q8 && (c.D%backend.Q8Block != 0 || c.dv()%backend.Q8Block != 0):
		return backend.Errorf(backend.ErrShape, "a q8 cache of D=%d, Dv=%d: q8 blocks are %d values along the head dim, so both must be multiples of %d", c.D, c.dv(), backend.Q8Block, backend.Q8Block)
	case (c.KScale != nil || c.VScale != nil) && c.DType != backend.FP8:
		return backend.Errorf(backend.ErrShape, "K or V scales for a %v cache: only an fp8 cache takes them", c.DType)
	case c.DType.Half() && !be.Caps().Half:
		return backend.Errorf(backend.ErrUnsupported, "a %v cache on the %s backend, which stores no halves", c.DType, be.Name())
	case c.Layout != BHND && c.Layout != BNHD:
		return backend.Errorf(backend.ErrShape, "cache of unknown layout %v", c.Layout)
	case !be.Caps().Seqs && !be.Caps().Fused:
		return backend.Errorf(backend.ErrUnsupported, "the %s backend has no fused path to attend a cache with", be.Name())
	}
	if c.KScale != nil || c.VScale != nil {
		s := backend.Scales{K: c.KScale, V: c.VScale}
		if err := (backend.Problem{H: c.KVHeads, KVHeads: c.KVHeads, D: c.D, Scales: &s}).Validate(); err != nil {
			return err
		}
	}
	return nil
}

// kv is a cache's device storage.
type kv struct {
	be   backend.Backend
	cfg  CacheConfig
	k, v backend.Buffer
	// scales are an fp8 cache's K and V scales (nil without).
	scales *backend.Scales
	// saturated counts the values an fp8 cache stored as ±448 (times
	// the head's scale) that were beyond it, from Append.
	saturated atomic.Int64
	// counts, for an 8-bit cache on a backend.QuantCopier, is where the
	// device adds what AppendBuffers saturated and stored as NaN
	// (backend.QuantCopy.Counts); devSat and devNaN are what was last
	// read of it.
	counts         backend.Buffer
	devSat, devNaN atomic.Int64
}

// Saturated is how many appended values an FP8 cache has stored
// saturated, as ±448 times their head's scale, since it was made: the
// values beyond that range. Always 0 for the other dtypes, which refuse
// a value they cannot hold (q8's largest block magnitude,
// backend.Q8Max, is float16's range times 127). What Append saturated
// is counted on the host; what AppendBuffers saturated, on the device,
// and Saturated reads that count back (backend.ReadCounts): it waits for
// the work recorded before it, so a decoding loop calls it between
// steps, not inside one. Should the read fail (a lost device), the count
// last read stands in for it.
func (c *kv) Saturated() int64 {
	c.readCounts()
	return c.saturated.Load() + c.devSat.Load()
}

// NonFinite is how many values AppendBuffers has stored as NaN in an
// 8-bit cache on a device that cannot look at them before it writes
// (the GPU): NaN, infinities and, into q8, magnitudes of backend.Q8Max
// or more, which Append refuses (backend.ErrNonFinite). The device
// stores each so that it is never read as a number — a q8 block's scale
// as float16 NaN (all 32 of its values), fp8's NaN pattern — and counts
// it; nothing else of the append is changed. It reads the count back as
// Saturated does. Always 0 on the CPU, whose AppendBuffers refuses them
// (ErrNonFinite, nothing written), and for the other dtypes, whose
// caches store them as they are.
func (c *kv) NonFinite() int64 {
	c.readCounts()
	return c.devNaN.Load()
}

// readCounts reads the device's counts, if the cache has them, into
// devSat and devNaN; on an error they keep what they last held.
func (c *kv) readCounts() {
	if c.counts == nil {
		return
	}
	if sat, nan, err := backend.ReadCounts(c.be, c.counts); err == nil {
		c.devSat.Store(int64(sat))
		c.devNaN.Store(int64(nan))
	}
}

// staging is an appender's host scratch: rows gathered or widened on
// their way to the device.
type staging struct {
	f32    []float32
	bits   []uint16
	ranges []backend.CopyRange
	// saturated counts the values an append into an fp8 cache
	// saturates, added to the cache's count once the append succeeds.
	saturated int64
}

// newKV allocates keys and values for n groups (sequences, pages) of
// size keys each.
func newKV(be backend.Backend, cfg CacheConfig, what string, n, size int) (*kv, error) {
	if err := cfg.check(be); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	nk, ok := backend.CheckedProduct(n, size, cfg.KVHeads, cfg.D)
	nv, ok2 := backend.CheckedProduct(n, size, cfg.KVHeads, cfg.dv())
	if !ok || !ok2 {
		return nil, backend.Errorf(backend.ErrTooLarge, "%s of %d × %d keys × %d KV heads × D=%d, Dv=%d overflows int", what, n, size, cfg.KVHeads, cfg.D, cfg.dv())
	}
	c := &kv{be: be, cfg: cfg}
	if cfg.KScale != nil || cfg.VScale != nil {
		// The cache's own copies (nil stays nil: a scale of 1).
		c.scales = &backend.Scales{K: slices.Clone(cfg.KScale), V: slices.Clone(cfg.VScale)}
	}
	var err error
	if c.k, err = be.Alloc(cfg.DType, nk); err != nil {
		return nil, fmt.Errorf("%s: keys: %w", what, err)
	}
	if c.v, err = be.Alloc(cfg.DType, nv); err != nil {
		c.k.Release()
		return nil, fmt.Errorf("%s: values: %w", what, err)
	}
	if _, ok := be.(backend.QuantCopier); ok && cfg.DType.Quantized() {
		if c.counts, err = be.Alloc(Float32, backend.CountsLen); err != nil {
			c.release()
			return nil, fmt.Errorf("%s: counts: %w", what, err)
		}
	}
	return c, nil
}

func (c *kv) release() {
	c.k.Release()
	c.v.Release()
	if c.counts != nil {
		c.counts.Release()
	}
}

// checkRows checks the rows an append brings: k [n, KVHeads, D] and v [n,
// KVHeads, Dv], finite, each value one the cache's dtype holds. It
// returns n, and k and v dense: a strided one gathered into a copy of
// its rows (which the append copies anyway).
func (c *kv) checkRows(k, v *Tensor) (int, *Tensor, *Tensor, error) {
	// A bad k or v is left for checkDenseRows to name.
	if k.check("K") == nil {
		k = k.contiguous()
	}
	if v.check("V") == nil {
		v = v.contiguous()
	}
	n, err := c.checkDenseRows(k, v)
	return n, k, v, err
}

// checkDenseRows is checkRows's check of k and v once they are dense.
func (c *kv) checkDenseRows(k, v *Tensor) (int, error) {
	for _, t := range []struct {
		name, appended string // constants: a name built here would allocate every call
		t              *Tensor
		dim            int
	}{{"K", "appended K", k, c.cfg.D}, {"V", "appended V", v, c.cfg.dv()}} {
		if err := t.t.check(t.name); err != nil {
			return 0, err
		}
		if len(t.t.Shape) != 3 || t.t.Shape[1] != c.cfg.KVHeads || t.t.Shape[2] != t.dim {
			return 0, backend.Errorf(backend.ErrShape, "appended %s of shape %v, want [n, KVHeads=%d, %d]", t.name, t.t.Shape, c.cfg.KVHeads, t.dim)
		}
		dt := c.cfg.DType
		if t.t.DType == Float32 && magnitude.Below(t.t.Data, appendBound(dt)) {
			// One pass over the rows says that every value is finite
			// and at most the dtype's largest: the common case. What it
			// flags takes the checks below, which find the NaN, the
			// infinity or the overflow, or accept a value that rounds
			// down to the largest (65519 into float16).
			continue
		}
		if i, x := firstBad(t.t, false); i >= 0 {
			return 0, backend.Errorf(backend.ErrNonFinite, "appended %s of shape %v holds %v at %v", t.name, t.t.Shape, x, unravel(i, t.t.Shape))
		}
		if dt.Half() && t.t.DType != dt || dt == backend.Q8 {
			if err := fits(dt, t.appended, t.t); err != nil {
				return 0, err
			}
		}
	}
	if k.Shape[0] != v.Shape[0] {
		return 0, backend.Errorf(backend.ErrShape, "appended K of %d rows, V of %d", k.Shape[0], v.Shape[0])
	}
	return k.Shape[0], nil
}

// appendBound is the float32 bits of the smallest magnitude an append
// into dt must look at value by value: beyond a half's largest finite
// value, q8's backend.Q8Max, an infinity for float32 and fp8 (which
// saturates).
func appendBound(dt DType) uint32 {
	switch dt {
	case backend.Q8:
		return math.Float32bits(backend.Q8Max)
	case backend.FP8, Float32:
		return 0x7f800000
	}
	return math.Float32bits(dt.MaxFinite()) + 1
}

// fits checks that every value of t is one dt holds without overflow.
func fits(dt DType, name string, t *Tensor) error {
	if dt == backend.Q8 {
		return fitsQ8(name, t)
	}
	if !t.DType.Half() {
		return dt.CheckFits(name, 0, t.Data)
	}
	var one [1]float32
	for i, b := range t.Bits {
		one[0] = t.DType.Decode(b)
		if err := dt.CheckFits(name, i, one[:]); err != nil {
			return err
		}
	}
	return nil
}

// fitsQ8 checks that every magnitude of t is below backend.Q8Max, the
// largest a q8 block's float16 scale holds.
func fitsQ8(name string, t *Tensor) error {
	for i := range t.Len() {
		var x float32
		if t.DType.Half() {
			x = t.DType.Decode(t.Bits[i])
		} else {
			x = t.Data[i]
		}
		if !(x < backend.Q8Max && x > -backend.Q8Max) {
			return backend.Errorf(backend.ErrNonFinite, "%s element %d is %g, beyond a q8 block's largest magnitude %g (127 times float16's)", name, i, x, float64(backend.Q8Max))
		}
	}
	return nil
}

// putKV writes an append's keys k and values v as positions pos … of
// sequence b (put), and counts what an fp8 cache saturated once both are
// written.
func (c *kv) putKV(st *staging, rk, rv backend.Rows, b, pos int, k, v *Tensor) error {
	st.saturated = 0
	if err := c.put(st, c.k, rk, b, pos, k); err != nil {
		return err
	}
	if err := c.put(st, c.v, rv, b, pos, v); err != nil {
		return err
	}
	c.saturated.Add(st.saturated)
	return nil
}

// put writes the n rows of src ([n, KVHeads, dim]) to buf as positions
// pos … pos+n−1 of sequence b, located by rows.
func (c *kv) put(st *staging, buf backend.Buffer, rows backend.Rows, b, pos int, src *Tensor) error {
	n, heads, dim := src.Shape[0], src.Shape[1], src.Shape[2]
	for t := 0; t < n; {
		run := min(rows.Run(pos+t), n-t)
		if c.cfg.Layout == BNHD {
			// A run of tokens' rows, every head, lie together.
			if err := c.write(st, buf, rows.Offset(b, 0, pos+t), src, t*heads*dim, (t+run)*heads*dim); err != nil {
				return err
			}
		} else {
			for h := range heads {
				if err := c.writeHead(st, buf, rows.Offset(b, h, pos+t), src, t, run, h); err != nil {
					return err
				}
			}
		}
		t += run
	}
	return nil
}

// checkBuffers checks the n rows an AppendBuffers brings: k holding at
// least [n, KVHeads, D] elements and v [n, KVHeads, Dv], on a backend
// that copies on the device (and, into an 8-bit cache, quantizes there:
// checkQuant), and returns the copier: rec when it is not nil, else the
// backend.
func (c *kv) checkBuffers(rec backend.Recording, n int, k, v backend.Buffer) (backend.Copier, error) {
	cp, ok := c.be.(backend.Copier)
	if !ok {
		return nil, backend.Errorf(backend.ErrUnsupported, "append from buffers on the %s backend, which copies no buffers on the device (backend.Copier)", c.be.Name())
	}
	if rec != nil {
		cp = rec
	}
	if n < 0 {
		return nil, backend.Errorf(backend.ErrShape, "append of %d rows", n)
	}
	for _, t := range []struct {
		name, what string // constants: a name built here would allocate every call
		buf        backend.Buffer
		dim        int
	}{{"K", "appended K [n, KVHeads, dim]", k, c.cfg.D}, {"V", "appended V [n, KVHeads, dim]", v, c.cfg.dv()}} {
		need, ok := backend.CheckedProduct(n, c.cfg.KVHeads, t.dim)
		if !ok {
			return nil, backend.Errorf(backend.ErrShape, "appended %s of %d rows × %d KV heads × %d overflows int", t.name, n, c.cfg.KVHeads, t.dim)
		}
		if err := backend.CheckBuffer(t.what, t.buf, need); err != nil {
			return nil, err
		}
		if err := c.checkQuant(cp, t.name, t.buf); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

// checkQuant checks that cp can append buf's rows into an 8-bit cache:
// bytes as they are from a buffer of the cache's own dtype, quantized
// (backend.QuantCopier) from float32 or a half.
func (c *kv) checkQuant(cp backend.Copier, name string, buf backend.Buffer) error {
	dt, src := c.cfg.DType, buf.DType()
	switch {
	case !dt.Quantized() || src == dt:
		return nil
	case src.Quantized():
		return backend.Errorf(backend.ErrUnsupported, "append of %s from a %v buffer into a %v cache: from float32, a half or the cache's own dtype", name, src, dt)
	}
	if _, ok := cp.(backend.QuantCopier); !ok {
		return backend.Errorf(backend.ErrUnsupported, "append of %s from a %v buffer into a %v cache on the %s backend, which quantizes no copies on the device (backend.QuantCopier)", name, src, dt, c.be.Name())
	}
	return nil
}

// copyRows copies n rows ([n, KVHeads, dim] from element 0 of src) to
// buf as positions pos … pos+n−1 of sequence b, located by rows, on the
// device: one range a run of rows under BNHD, one a row and head under
// BHND; into an 8-bit cache from another dtype quantized there
// (CopyQuant, checkQuant having checked cp), an fp8 row divided by its
// head's scale, the counts added to the cache's.
func (c *kv) copyRows(ctx context.Context, cp backend.Copier, st *staging, buf backend.Buffer, rows backend.Rows, b, pos, n, dim int, src backend.Buffer) error {
	heads := c.cfg.KVHeads
	st.ranges = st.ranges[:0]
	for t := 0; t < n; {
		run := min(rows.Run(pos+t), n-t)
		if c.cfg.Layout == BNHD {
			st.ranges = append(st.ranges, backend.CopyRange{Dst: rows.Offset(b, 0, pos+t), Src: t * heads * dim, N: run * heads * dim})
		} else {
			for i := range run {
				for h := range heads {
					st.ranges = append(st.ranges, backend.CopyRange{Dst: rows.Offset(b, h, pos+t+i), Src: ((t+i)*heads + h) * dim, N: dim})
				}
			}
		}
		t += run
	}
	if dt := c.cfg.DType; dt.Quantized() && src.DType() != dt {
		q := backend.QuantCopy{Scales: c.scalesOf(buf), Dim: dim, Counts: c.counts}
		return cp.(backend.QuantCopier).CopyQuant(ctx, buf, src, q, st.ranges...)
	}
	return cp.Copy(ctx, buf, src, st.ranges...)
}

// write copies elements lo … hi−1 of src to buf from off, as bits when
// the dtypes agree, else through float32 (rounded by Write); into an fp8
// cache with scales through float32 always, divided by the head's scale
// (toFP8), and without them from float32 rows as they are.
func (c *kv) write(st *staging, buf backend.Buffer, off int, src *Tensor, lo, hi int) error {
	dt := c.cfg.DType
	switch {
	case src.DType == dt && dt.Half():
		return c.be.WriteBits(buf, off, src.Bits[lo:hi])
	case !src.DType.Half() && dt != backend.FP8:
		return c.be.Write(buf, off, src.Data[lo:hi])
	case !src.DType.Half() && c.scalesOf(buf) == nil:
		// An unscaled fp8 cache stores the rows as they are.
		st.saturated += beyondFP8(src.Data[lo:hi])
		return c.be.Write(buf, off, src.Data[lo:hi])
	}
	st.f32 = grow(st.f32, hi-lo)
	if src.DType.Half() {
		for i, b := range src.Bits[lo:hi] {
			st.f32[i] = src.DType.Decode(b)
		}
	} else {
		copy(st.f32, src.Data[lo:hi])
	}
	if dt == backend.FP8 {
		st.saturated += toFP8(st.f32[:hi-lo], c.scalesOf(buf), src.Shape[1], src.Shape[2], -1)
	}
	return c.be.Write(buf, off, st.f32[:hi-lo])
}

// writeHead writes head h of src's rows t … t+run−1 (BHND: a head's rows
// lie together on the device, not in src) from off.
func (c *kv) writeHead(st *staging, buf backend.Buffer, off int, src *Tensor, t, run, h int) error {
	heads, dim := src.Shape[1], src.Shape[2]
	n := run * dim
	if src.DType == c.cfg.DType && src.DType.Half() {
		st.bits = grow(st.bits, n)
		for i := range run {
			copy(st.bits[i*dim:(i+1)*dim], src.Bits[((t+i)*heads+h)*dim:])
		}
		return c.be.WriteBits(buf, off, st.bits[:n])
	}
	st.f32 = grow(st.f32, n)
	for i := range run {
		at := ((t+i)*heads + h) * dim
		dst := st.f32[i*dim : (i+1)*dim]
		if src.DType.Half() {
			for j, b := range src.Bits[at : at+dim] {
				dst[j] = src.DType.Decode(b)
			}
		} else {
			copy(dst, src.Data[at:at+dim])
		}
	}
	if c.cfg.DType == backend.FP8 {
		st.saturated += toFP8(st.f32[:n], c.scalesOf(buf), heads, dim, h)
	}
	return c.be.Write(buf, off, st.f32[:n])
}

// scalesOf is the fp8 scales of buf, the cache's K or V (nil: all 1).
func (c *kv) scalesOf(buf backend.Buffer) []float32 {
	if c.scales == nil {
		return nil
	}
	if buf == c.k {
		return c.scales.K
	}
	return c.scales.V
}

// toFP8 divides rows of heads × dim values (or, with h ≥ 0, rows of head
// h alone) by their head's scale (none when scales is nil), the values
// an fp8 cache stores, and returns how many are beyond ±backend.FP8Max,
// which the store saturates. len(x) is whole rows of dim.
func toFP8(x, scales []float32, heads, dim, h int) int64 {
	if scales != nil {
		for i := 0; i < len(x); i += dim {
			g := h
			if g < 0 {
				g = i / dim % heads
			}
			s, row := scales[g], x[i:i+dim]
			for j := range row {
				row[j] /= s
			}
		}
	}
	return beyondFP8(x)
}

// beyondFP8 is how many values of x are beyond ±backend.FP8Max (a NaN is
// not), in one pass by the bits (magnitude.Below) when none is.
func beyondFP8(x []float32) int64 {
	if magnitude.Below(x, math.Float32bits(backend.FP8Max)+1) {
		return 0
	}
	var n int64
	for _, a := range x {
		if a > backend.FP8Max || a < -backend.FP8Max {
			n++
		}
	}
	return n
}

// grow returns b with length n, reallocated only when its capacity is
// short.
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// KVCache is a contiguous cache of keys and values on a backend for B
// sequences, each with room for a fixed number of keys. It is not safe
// for concurrent use; a PagePool is, for different sequences.
type KVCache struct {
	*kv
	batch, capacity int
	lens            []int
	st              staging
	att             attender
}

// NewKVCache allocates a cache for batch sequences of up to capacity
// keys each on be, empty.
func NewKVCache(be backend.Backend, batch, capacity int, cfg CacheConfig) (*KVCache, error) {
	if batch < 0 || capacity < 0 {
		return nil, backend.Errorf(backend.ErrShape, "cache of %d sequences of %d keys: want ≥ 0", batch, capacity)
	}
	c, err := newKV(be, cfg, "cache", batch, capacity)
	if err != nil {
		return nil, err
	}
	return &KVCache{kv: c, batch: batch, capacity: capacity, lens: make([]int, batch)}, nil
}

// Len is how many keys sequence seq holds (0 for a sequence out of
// range).
func (c *KVCache) Len(seq int) int {
	if seq < 0 || seq >= c.batch {
		return 0
	}
	return c.lens[seq]
}

// Truncate drops sequence seq's keys from n on (0 empties it), so that
// the sequence can be rewritten, as after a rejected speculative token.
func (c *KVCache) Truncate(seq, n int) error {
	if seq < 0 || seq >= c.batch || n < 0 || n > c.lens[seq] {
		return backend.Errorf(backend.ErrShape, "truncate sequence %d of %d to %d keys: it holds %d", seq, c.batch, n, c.Len(seq))
	}
	c.lens[seq] = n
	return nil
}

// rows locates the cache's rows.
func (c *KVCache) rows(dim int) backend.Rows {
	return backend.Rows{Strides: backend.TensorStrides(c.cfg.Layout, c.cfg.KVHeads, c.capacity, dim)}
}

// Append adds k ([n, KVHeads, D]) and v ([n, KVHeads, Dv]), n new
// tokens' keys and values in any dtype, to the end of sequence seq,
// writing only them. A sequence out of range or shapes that do not match
// (backend.ErrShape), a NaN or infinity, or a value the cache's dtype
// cannot hold (backend.ErrNonFinite) is an error naming the sizes, and
// so is more keys than the capacity leaves (backend.ErrCacheFull: the
// call is right but the cache full); the cache is unchanged.
func (c *KVCache) Append(seq int, k, v *Tensor) error {
	if seq < 0 || seq >= c.batch {
		return backend.Errorf(backend.ErrShape, "append to sequence %d of a cache of %d", seq, c.batch)
	}
	n, k, v, err := c.checkRows(k, v)
	if err != nil {
		return err
	}
	if pos := c.lens[seq]; n > c.capacity-pos {
		return backend.Errorf(backend.ErrCacheFull, "append %d keys to sequence %d, which holds %d of its capacity %d", n, seq, pos, c.capacity)
	}
	pos := c.lens[seq]
	if err := c.putKV(&c.st, c.rows(c.cfg.D), c.rows(c.cfg.dv()), seq, pos, k, v); err != nil {
		return err
	}
	c.lens[seq] = pos + n
	return nil
}

// AppendBuffers is Append for n tokens' keys and values already on the
// cache's backend — a GPU program's K and V projections, say: k holds
// [n, KVHeads, D] and v [n, KVHeads, Dv] from their element 0, in any
// dtype, and they are copied on the device (backend.Copier; other
// backends refuse with backend.ErrUnsupported), rounded to the cache's
// dtype as an op stores its output (a value beyond a half's range
// saturates). The values are the device's and unchecked: a NaN or an
// infinity is appended as it is. Into an 8-bit cache from float32 or a
// half they are quantized on the device (backend.QuantCopier) into the
// bytes Append stores, an fp8 value divided by its head's scale and
// counted by Saturated where it saturates; a value Append would refuse
// the CPU refuses too (backend.ErrNonFinite), and the GPU, which cannot
// look first, stores as NaN and counts (NonFinite). From a buffer of
// the cache's own 8-bit dtype the bytes are copied as they are. The
// sizes are checked as Append's, and
// a full cache is backend.ErrCacheFull, before anything is copied; an
// error of the copy itself (a buffer of another backend, say) leaves
// the sequence's length as it was. With rec not nil — a recording of the
// cache's backend (backend.Recorder: a GPU step) — the copies are
// recorded into it, not waited for; with nil they run on the backend.
func (c *KVCache) AppendBuffers(ctx context.Context, rec backend.Recording, seq, n int, k, v backend.Buffer) error {
	if seq < 0 || seq >= c.batch {
		return backend.Errorf(backend.ErrShape, "append to sequence %d of a cache of %d", seq, c.batch)
	}
	cp, err := c.checkBuffers(rec, n, k, v)
	if err != nil {
		return err
	}
	pos := c.lens[seq]
	if n > c.capacity-pos {
		return backend.Errorf(backend.ErrCacheFull, "append %d keys to sequence %d, which holds %d of its capacity %d", n, seq, pos, c.capacity)
	}
	if err := c.copyRows(ctx, cp, &c.st, c.k, c.rows(c.cfg.D), seq, pos, n, c.cfg.D, k); err != nil {
		return err
	}
	if err := c.copyRows(ctx, cp, &c.st, c.v, c.rows(c.cfg.dv()), seq, pos, n, c.cfg.dv(), v); err != nil {
		return err
	}
	c.lens[seq] = pos + n
	return nil
}

// Attend computes, for every sequence b, O[b] = softmax(scale·Q[b]·Kᵀ)·V
// over the keys b holds, with q's Nq queries at its last Nq positions
// (key positions Len(b) − Nq + i: append the new tokens first, as ONNX's
// past_key rule and FlashAttention's kvcache API do) and causal masking,
// the window, softcap, ALiBi and sinks as opts says. q is [B, Nq, H, D]
// (BNHD) or [B, H, Nq, D] (BHND) in the cache's layout and any dtype; out
// has q's shape with Dv and receives O in its own dtype; lse, when not
// nil, is a Float32 [B, H, Nq] tensor that receives the log-sum-exp.
// opts.KVLens, when set, attends only the first KVLens[b] ≤ Len(b) keys
// of each sequence, the queries then at that prefix's last positions.
func (c *KVCache) Attend(ctx context.Context, q, out, lse *Tensor, opts *AttendOptions) error {
	p := backend.Problem{B: c.batch, KVHeads: c.cfg.KVHeads, Nk: c.capacity, D: c.cfg.D, Dv: c.cfg.dv(), Layout: c.cfg.Layout}
	p.KVLens = c.lens
	return c.att.attend(ctx, c.kv, p, q, out, lse, opts)
}

// AttendBuffers is Attend for queries and outputs already on the cache's
// backend, as a GPU program has them: q holds B·heads·nq·D elements laid
// out as Attend's q ([B, nq, heads, D] under BNHD, [B, heads, nq, D]
// under BHND) in any dtype, out receives O laid out alike with Dv in its
// own dtype, and lse, when not nil, is a Float32 buffer that receives
// the [B, heads, nq] log-sum-exp. Nothing crosses the bus. The queries
// are the device's and unchecked (AllowNonFinite is moot); a buffer too
// short, or out sharing a buffer with q or the LSE, is an error wrapping
// backend.ErrShape, as the backend's Fused says. With rec not nil (as
// AppendBuffers says) the attention is recorded into it, not waited for;
// it reads the cache as it stands when recorded, with every append
// recorded before it.
func (c *KVCache) AttendBuffers(ctx context.Context, rec backend.Recording, q, out, lse backend.Buffer, heads, nq int, opts *AttendOptions) error {
	p := backend.Problem{B: c.batch, KVHeads: c.cfg.KVHeads, Nk: c.capacity, D: c.cfg.D, Dv: c.cfg.dv(), Layout: c.cfg.Layout}
	p.KVLens = c.lens
	return attendBuffers(ctx, rec, c.kv, p, q, out, lse, heads, nq, opts)
}

// Release frees the cache's device storage.
func (c *KVCache) Release() {
	c.kv.release()
	c.att.release()
}

// PagePool is a pool of fixed-size pages of keys and values on a
// backend, shared by sequences of any length (Seq): each takes pages as
// it grows and gives them back when released. Several goroutines may
// append to, attend, fork and release sequences over one pool at once:
// an Attend holds its sequences, so that an Append, Truncate or Release
// of one of them waits for it.
//
// Sequences may share pages: Seq.Fork makes a sequence that shares every
// page of its parent (a prompt's n samples, beams, a shared system
// prompt), and a page goes back to the pool only when the last sequence
// holding it lets it go (Truncate, Release). A shared page is never
// written: an Append to a sequence whose last page is shared and partly
// full first copies that page's rows to a page of its own
// (copy-on-write), so no other sequence sees its keys.
type PagePool struct {
	*kv
	pageSize, pages int
	ids             atomic.Uint64 // the last Seq's id
	mu              sync.Mutex
	free            []int       // pages no sequence holds, taken from the end
	refs            []int32     // how many sequences hold each page: 0 for a free one
	atts            []*attender // idle attenders, one taken per Attend
}

// NewPagePool allocates pages pages of pageSize keys each on be, all free.
func NewPagePool(be backend.Backend, pageSize, pages int, cfg CacheConfig) (*PagePool, error) {
	if pageSize < 1 || pages < 0 {
		return nil, backend.Errorf(backend.ErrShape, "pool of %d pages of %d keys: want a page size ≥ 1 and pages ≥ 0", pages, pageSize)
	}
	c, err := newKV(be, cfg, "page pool", pages, pageSize)
	if err != nil {
		return nil, err
	}
	p := &PagePool{kv: c, pageSize: pageSize, pages: pages, free: make([]int, pages), refs: make([]int32, pages)}
	for i := range p.free {
		p.free[i] = pages - 1 - i // page 0 first
	}
	return p, nil
}

// Free is how many pages no sequence holds.
func (p *PagePool) Free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// Shared is how many pages more than one sequence holds (Seq.Fork): the
// pool holds Pages − Free pages in all, and without sharing would need
// one more for each extra holder of a shared page.
func (p *PagePool) Shared() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.refs {
		if r > 1 {
			n++
		}
	}
	return n
}

// Seq is one sequence's keys and values in a PagePool: its pages, in
// order, and its length. Its methods may be called from several
// goroutines: Append, Truncate and Release hold it alone, and
// PagePool.Attend shares it with other Attends for the whole call, so
// that the pages it reads are neither rewritten nor given back under it.
type Seq struct {
	pool     *PagePool
	id       uint64 // the order Attend takes sequences in
	pages    []int
	n        int
	released bool
	st       staging
	pg       backend.Paged // the block table extend hands its put (a field: no allocation a call)
	// mu is written by Append, Truncate and Release, read by Attend
	// (several at once) and by Len and Pages.
	mu sync.RWMutex
}

// NewSeq returns an empty sequence of the pool.
func (p *PagePool) NewSeq() *Seq { return &Seq{pool: p, id: p.ids.Add(1)} }

// Fork returns a new sequence of the pool that holds the same keys as s,
// sharing every page of s rather than copying it: no page is taken and
// nothing is written. The two then grow apart: an Append to either one
// copies its last page first if that page is shared and partly full
// (PagePool says how), taking one more page for it. A fork of a fork,
// and of an empty sequence, work alike; a released s is
// backend.ErrReleased. Fork may run beside Attends of s.
func (s *Seq) Fork() (*Seq, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.usable("fork"); err != nil {
		return nil, err
	}
	p := s.pool
	c := p.NewSeq()
	c.pages, c.n = slices.Clone(s.pages), s.n
	p.mu.Lock()
	for _, pg := range c.pages {
		p.refs[pg]++
	}
	p.mu.Unlock()
	return c, nil
}

// Len is how many keys the sequence holds (0 once released).
func (s *Seq) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.n
}

// Pages is the pool pages the sequence holds, in order (its block table
// row).
func (s *Seq) Pages() []int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]int(nil), s.pages...)
}

// usable returns an error wrapping backend.ErrReleased once s is
// released; what names the call. s.mu is held.
func (s *Seq) usable(what string) error {
	if s.released {
		return backend.Errorf(backend.ErrReleased, "%s a released sequence: its pages are back in the pool", what)
	}
	return nil
}

// Append adds k ([n, KVHeads, D]) and v ([n, KVHeads, Dv]) to the end of
// the sequence, taking pages from the pool as it needs them and writing
// only the new rows. Bad rows (as KVCache.Append says) or too few free
// pages (backend.ErrCacheFull: evict or preempt a sequence, then try
// again) are an error naming the sizes, and the sequence and the pool
// are unchanged. A released sequence takes no rows (backend.ErrReleased).
func (s *Seq) Append(k, v *Tensor) error {
	p := s.pool
	n, k, v, err := p.checkRows(k, v)
	if err != nil {
		return err
	}
	return s.extend(n, func(pg *backend.Paged) error {
		return p.putKV(&s.st, p.rows(p.cfg.D, pg), p.rows(p.cfg.dv(), pg), 0, s.n, k, v)
	})
}

// AppendBuffers is Append for n tokens' keys and values already on the
// pool's backend, copied on the device, or recorded into rec, as
// KVCache.AppendBuffers says.
func (s *Seq) AppendBuffers(ctx context.Context, rec backend.Recording, n int, k, v backend.Buffer) error {
	p := s.pool
	cp, err := p.checkBuffers(rec, n, k, v)
	if err != nil {
		return err
	}
	return s.extend(n, func(pg *backend.Paged) error {
		if err := p.copyRows(ctx, cp, &s.st, p.k, p.rows(p.cfg.D, pg), 0, s.n, n, p.cfg.D, k); err != nil {
			return err
		}
		return p.copyRows(ctx, cp, &s.st, p.v, p.rows(p.cfg.dv(), pg), 0, s.n, n, p.cfg.dv(), v)
	})
}

// extend takes the pages n more keys need, calls put with the sequence's
// block table to write the keys and values at positions s.n …, and
// counts them; when put fails it gives the new pages back, leaving the
// sequence as it was. A last page that is shared and partly full is
// first copied to a new page of the sequence's own (copy-on-write), so
// that put never writes a page another sequence holds; the sequence lets
// the shared page go only once put has succeeded.
func (s *Seq) extend(n int, put func(pg *backend.Paged) error) error {
	p := s.pool
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable("append to"); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	grow := (s.n+n+p.pageSize-1)/p.pageSize - len(s.pages)
	rows := s.n % p.pageSize // of the last page, when partly full
	p.mu.Lock()
	cow := rows != 0 && p.refs[s.pages[len(s.pages)-1]] > 1
	need := grow
	if cow {
		need++
	}
	if need > len(p.free) {
		free := len(p.free)
		p.mu.Unlock()
		what := ""
		if cow {
			what = " (one to copy its shared last page)"
		}
		return backend.Errorf(backend.ErrCacheFull, "append %d keys to a sequence of %d: it needs %d more pages of %d keys%s, the pool has %d free of %d",
			n, s.n, need, p.pageSize, what, free, p.pages)
	}
	pop := func() int {
		pg := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		p.refs[pg] = 1
		return pg
	}
	held, shared, own := len(s.pages), -1, -1
	if cow {
		shared, own = s.pages[held-1], pop()
	}
	for range grow {
		s.pages = append(s.pages, pop())
	}
	p.mu.Unlock()
	if cow {
		err := p.copyPage(&s.st, own, shared, rows)
		if err == nil {
			s.pages[held-1] = own
		} else {
			p.give(s.pages[held:])
			p.give1(own)
			s.pages = s.pages[:held]
			return fmt.Errorf("append %d keys to a sequence of %d: copying its shared last page: %w", n, s.n, err)
		}
	}
	s.pg = backend.Paged{PageSize: p.pageSize, Pages: p.pages, PerSeq: len(s.pages), Table: s.pages}
	if err := put(&s.pg); err != nil {
		p.give(s.pages[held:])
		if cow {
			s.pages[held-1] = shared
			p.give1(own)
		}
		s.pages = s.pages[:held]
		return err
	}
	if cow {
		p.give1(shared)
	}
	s.n += n
	return nil
}

// copyPage copies the first rows rows of page from to page to, keys and
// values, through the host: a page's elements lie together in either
// layout ([pages, page_size, KVH, D] or [pages, KVH, page_size, D]), so
// its first rows are one run under BNHD and one a head under BHND.
// Stored bits are copied as they are. Read waits for (and a GPU step
// submits first) every write of the page before it, so a copy made while
// appends are recorded into a step still sees them.
func (p *PagePool) copyPage(st *staging, to, from, rows int) error {
	for _, t := range []struct {
		buf backend.Buffer
		dim int
	}{{p.k, p.cfg.D}, {p.v, p.cfg.dv()}} {
		heads, dim := p.cfg.KVHeads, t.dim
		page := p.pageSize * heads * dim
		runs, run, stride := 1, rows*heads*dim, 0
		if p.cfg.Layout != BNHD {
			runs, run, stride = heads, rows*dim, p.pageSize*dim
		}
		for r := range runs {
			src, dst := from*page+r*stride, to*page+r*stride
			if p.cfg.DType.Half() {
				st.bits = grow(st.bits, run)
				if err := p.be.ReadBits(st.bits[:run], t.buf, src); err != nil {
					return err
				}
				if err := p.be.WriteBits(t.buf, dst, st.bits[:run]); err != nil {
					return err
				}
				continue
			}
			st.f32 = grow(st.f32, run)
			if err := p.be.Read(st.f32[:run], t.buf, src); err != nil {
				return err
			}
			if err := p.be.Write(t.buf, dst, st.f32[:run]); err != nil {
				return err
			}
		}
	}
	return nil
}

// Truncate drops the sequence's keys from n on (as after a rejected
// speculative token), giving back the pages it no longer needs.
func (s *Seq) Truncate(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable("truncate"); err != nil {
		return err
	}
	if n < 0 || n > s.n {
		return backend.Errorf(backend.ErrShape, "truncate a sequence of %d keys to %d", s.n, n)
	}
	keep := (n + s.pool.pageSize - 1) / s.pool.pageSize
	s.pool.give(s.pages[keep:])
	s.pages, s.n = s.pages[:keep], n
	return nil
}

// Release gives the sequence's pages back to the pool, after any Attend
// that holds the sequence has returned; the sequence is then empty and
// used no more: Append, Truncate and Attend refuse it
// (backend.ErrReleased), and a second Release does nothing. To empty a
// sequence and keep it, Truncate it to 0.
func (s *Seq) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return
	}
	s.pool.give(s.pages)
	s.pages, s.n, s.released = nil, 0, true
}

// give lets go of one hold of each of pages: a page no sequence holds
// any more goes back to the free list.
func (p *PagePool) give(pages []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(pages) - 1; i >= 0; i-- {
		p.unref(pages[i])
	}
}

// give1 is give of one page.
func (p *PagePool) give1(pg int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unref(pg)
}

// unref lets go of one hold of pg; p.mu is held.
func (p *PagePool) unref(pg int) {
	if p.refs[pg]--; p.refs[pg] == 0 {
		p.free = append(p.free, pg)
	}
}

// rows locates the rows of one sequence (batch 0 of pg) in the pool.
func (p *PagePool) rows(dim int, pg *backend.Paged) backend.Rows {
	return backend.Rows{Strides: backend.TensorStrides(p.cfg.Layout, p.cfg.KVHeads, p.pageSize, dim), Pages: pg}
}

// Attend is KVCache.Attend over the sequences seqs, in order (q's batch
// is len(seqs)): each attends its own pages. It holds the sequences for
// the whole call, so that an Append, Truncate or Release of one of them
// waits until it returns; other Attends may share them, and a sequence
// may appear more than once. A sequence of another pool is an error
// wrapping backend.ErrShape, a released one backend.ErrReleased.
func (p *PagePool) Attend(ctx context.Context, seqs []*Seq, q, out, lse *Tensor, opts *AttendOptions) error {
	return p.attend(seqs, func(a *attender, pr backend.Problem) error {
		a.pages = seqPages(a.pages, seqs)
		defer func() { clear(a.pages); a.pages = a.pages[:0] }()
		return a.attend(ctx, p.kv, pr, q, out, lse, opts)
	})
}

// AttendBuffers is Attend for queries and outputs already on the pool's
// backend, as KVCache.AttendBuffers says. Recorded into rec, the attention
// runs after the call has let go of the sequences: it
// still reads their pages as they stood, because every later change of
// them — a host Append (which submits the step's recorded work first) or
// an AppendBuffers recorded after it — reaches the device's queue after
// it.
func (p *PagePool) AttendBuffers(ctx context.Context, rec backend.Recording, seqs []*Seq, q, out, lse backend.Buffer, heads, nq int, opts *AttendOptions) error {
	return p.attend(seqs, func(_ *attender, pr backend.Problem) error {
		return attendBuffers(ctx, rec, p.kv, pr, q, out, lse, heads, nq, opts)
	})
}

// attend holds seqs, builds the problem of their pages and lengths in an
// idle attender and calls run with both.
func (p *PagePool) attend(seqs []*Seq, run func(a *attender, pr backend.Problem) error) error {
	p.mu.Lock()
	var a *attender
	if n := len(p.atts); n > 0 {
		a, p.atts = p.atts[n-1], p.atts[:n-1]
	} else {
		a = new(attender)
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.atts = append(p.atts, a)
		p.mu.Unlock()
	}()
	for i, s := range seqs {
		if s == nil || s.pool != p {
			return backend.Errorf(backend.ErrShape, "sequence %d of %d is not of this pool", i, len(seqs))
		}
	}
	a.hold(seqs)
	defer a.unhold()
	per := 0
	for i, s := range seqs {
		if s.released {
			return backend.Errorf(backend.ErrReleased, "attend sequence %d of %d: it is released (its pages are back in the pool)", i, len(seqs))
		}
		per = max(per, len(s.pages))
	}
	a.lens = grow(a.lens, len(seqs))
	a.table = grow(a.table, len(seqs)*per)
	for i, s := range seqs {
		a.lens[i] = s.n
		row := a.table[i*per : (i+1)*per]
		copy(row, s.pages)
		for j := len(s.pages); j < per; j++ {
			row[j] = -1
		}
	}
	a.paged = backend.Paged{PageSize: p.pageSize, Pages: p.pages, PerSeq: per, Table: a.table}
	pr := backend.Problem{B: len(seqs), KVHeads: p.cfg.KVHeads, Nk: per * p.pageSize, D: p.cfg.D, Dv: p.cfg.dv(), Layout: p.cfg.Layout, Paged: &a.paged}
	pr.KVLens = a.lens
	return run(a, pr)
}

// Release frees the pool's device storage.
func (p *PagePool) Release() {
	p.kv.release()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.atts {
		a.release()
	}
	p.atts = nil
}

// attender holds one caller's device buffers for the queries, the
// outputs and the LSE (grown as needed, kept between calls) and its
// block table and lengths.
type attender struct {
	q, o, lse backend.Buffer
	lens      []int
	table     []int
	paged     backend.Paged
	held      []*Seq // the sequences read-locked, each once, by id
	// pages is each sequence's pages in a PagePool.Attend (nil
	// otherwise), for the cascade (cascade.go), and the rest its
	// scratch: the suffix pass's table and lengths, the device buffers
	// of both passes and their host copies.
	pages                  [][]int
	stable, slens          []int
	taken                  []bool
	qg, op, lp, os, ls     backend.Buffer
	hop, hlp, hos, hls, hq []float32
	hqb                    []uint16
}

// hold read-locks each distinct sequence of seqs once, in the order of
// their ids: every Attend takes its locks in that one order, so that
// Attends over overlapping sequences cannot deadlock with each other or
// with an Append, Truncate or Release (each holds one sequence).
func (a *attender) hold(seqs []*Seq) {
	a.held = append(a.held[:0], seqs...)
	slices.SortFunc(a.held, func(x, y *Seq) int { return cmp.Compare(x.id, y.id) })
	a.held = slices.Compact(a.held)
	for _, s := range a.held {
		s.mu.RLock()
	}
}

// unhold unlocks what hold locked.
func (a *attender) unhold() {
	for _, s := range a.held {
		s.mu.RUnlock()
	}
	clear(a.held) // no sequence kept alive by an idle attender
	a.held = a.held[:0]
}

func (a *attender) release() {
	for _, b := range []backend.Buffer{a.q, a.o, a.lse, a.qg, a.op, a.lp, a.os, a.ls} {
		if b != nil {
			b.Release()
		}
	}
	a.q, a.o, a.lse = nil, nil, nil
	a.qg, a.op, a.lp, a.os, a.ls = nil, nil, nil, nil, nil
}

// buffer returns *buf if it holds n elements of dt, else a new one.
func (a *attender) buffer(be backend.Backend, buf *backend.Buffer, dt DType, n int) (backend.Buffer, error) {
	if b := *buf; b != nil && b.DType() == dt && b.Len() >= n {
		return b, nil
	}
	if *buf != nil {
		(*buf).Release()
		*buf = nil
	}
	b, err := be.Alloc(dt, max(n, 1))
	if err != nil {
		return nil, err
	}
	*buf = b
	return b, nil
}

// attend checks q, out and lse against p (B, KVHeads, Nk, dims, layout,
// key lengths and pages set) and opts, uploads q, runs Fused over the
// cache c and reads O (and the LSE) back.
func (a *attender) attend(ctx context.Context, c *kv, p backend.Problem, q, out, lse *Tensor, opts *AttendOptions) error {
	if opts == nil {
		opts = &AttendOptions{}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := q.check("Q"); err != nil {
		return err
	}
	if err := out.check("out"); err != nil {
		return err
	}
	if !out.isDense() || lse != nil && lse.check("LSE") == nil && !lse.isDense() {
		return backend.Errorf(backend.ErrShape, "out of shape %s or the LSE is strided: the outputs must be dense", viewName(out))
	}
	out = out.contiguous() // its own storage, without a tail past its elements
	if q.Layout != c.cfg.Layout {
		return backend.Errorf(backend.ErrShape, "Q of shape %v in layout %v over a cache in layout %v: want Q in the cache's layout, %s",
			q.Shape, q.Layout, c.cfg.Layout, queryDims(c.cfg.Layout))
	}
	if len(q.Shape) != 4 {
		return backend.Errorf(backend.ErrShape, "Q of shape %v (rank %d) in layout %v: want rank 4, %s", q.Shape, len(q.Shape), q.Layout, queryDims(q.Layout))
	}
	b, h, nq, d := operand.Dims(q.Shape, q.Layout)
	if b != p.B || d != p.D || h%p.KVHeads != 0 {
		return backend.Errorf(backend.ErrShape, "Q of shape %v for %d sequences of %d KV heads, D=%d: want B=%d, D=%d and a multiple of %d heads",
			q.Shape, p.B, p.KVHeads, p.D, p.B, p.D, p.KVHeads)
	}
	p, err := attendProblem(p, h, nq, opts)
	if err != nil {
		return err
	}
	p.Scales = c.scales
	if ob, oh, on, od := operand.Dims(out.Shape, out.Layout); len(out.Shape) != 4 || out.Layout != q.Layout || ob != b || oh != h || on != nq || od != p.Dv {
		return backend.Errorf(backend.ErrShape, "out of shape %v in %v, want Q's %v in %v with Dv=%d", out.Shape, out.Layout, q.Shape, q.Layout, p.Dv)
	}
	if lse != nil {
		if err := lse.check("LSE"); err != nil {
			return err
		}
		lse = lse.contiguous()
		if lse.DType != Float32 || len(lse.Shape) != 3 || lse.Shape[0] != b || lse.Shape[1] != h || lse.Shape[2] != nq {
			return backend.Errorf(backend.ErrShape, "LSE of shape %v, %v: want float32 [%d, %d, %d]", lse.Shape, lse.DType, b, h, nq)
		}
	}
	if !opts.AllowNonFinite {
		if i, x := firstBad(q, false); i >= 0 {
			return backend.Errorf(backend.ErrNonFinite, "Q of shape %v holds %v at %v", q.Shape, x, unravel(i, q.Shape))
		}
	}
	be := c.be
	if q.DType.Half() && !be.Caps().Half || out.DType.Half() && !be.Caps().Half {
		return backend.Errorf(backend.ErrUnsupported, "half queries or outputs on the %s backend, which stores no halves", be.Name())
	}
	qb, err := a.buffer(be, &a.q, q.DType, p.QLen())
	if err != nil {
		return err
	}
	ob, err := a.buffer(be, &a.o, out.DType, p.OLen())
	if err != nil {
		return err
	}
	var lb backend.Buffer
	if lse != nil {
		if lb, err = a.buffer(be, &a.lse, Float32, p.LSELen()); err != nil {
			return err
		}
	}
	// A strided q is gathered into the dense buffer: the queries of a
	// decoding step are few, and the buffer is reused.
	if err := writeDense(be, qb, q); err != nil {
		return err
	}
	if p.Paged != nil && a.pages != nil {
		if groups := a.cascadeGroups(a.pages, p.KVLens, nq, p.Paged.PageSize, opts); groups != nil {
			return a.cascade(ctx, c, p, groups, qb, q.contiguous(), out, lse)
		}
	}
	if err := be.Fused(ctx, backend.FusedParams{Problem: p}, qb, c.k, c.v, ob, lb); err != nil {
		return err
	}
	if out.DType.Half() {
		err = be.ReadBits(out.Bits, ob, 0)
	} else {
		err = be.Read(out.Data, ob, 0)
	}
	if err == nil && lse != nil {
		err = be.Read(lse.Data, lb, 0)
	}
	return err
}

// attendProblem completes p (B, KVHeads, Nk, dims, layout, key lengths
// and pages set) for h query heads of nq queries each as opts says, and
// validates it.
func attendProblem(p backend.Problem, h, nq int, opts *AttendOptions) (backend.Problem, error) {
	lens := p.KVLens
	p.H, p.Nq = h, nq
	if err := opts.params().problem(&p); err != nil {
		return p, err
	}
	if p.KVLens == nil {
		p.KVLens = lens
	} else if err := prefixLens(p.KVLens, lens); err != nil {
		return p, err
	}
	if err := p.Validate(); err != nil {
		return p, err
	}
	return p.Resolved(), nil
}

// attendBuffers runs Fused over the cache c for queries, outputs and LSE
// already on its backend: q holding [B, H, Nq, D] (BHND) or [B, Nq, H, D]
// (BNHD) in the cache's layout, out the same with Dv, lse Float32 [B, H,
// Nq] or nil; Fused checks their lengths. It runs on c's backend, or
// records into rec when that is not nil.
func attendBuffers(ctx context.Context, rec backend.Recording, c *kv, p backend.Problem, q, out, lse backend.Buffer, heads, nq int, opts *AttendOptions) error {
	if opts == nil {
		opts = &AttendOptions{}
	}
	if heads < 1 || heads%p.KVHeads != 0 || nq < 0 {
		return backend.Errorf(backend.ErrShape, "attend %d query heads of %d queries over %d KV heads: want a positive multiple of the KV heads and Nq ≥ 0", heads, nq, p.KVHeads)
	}
	p, err := attendProblem(p, heads, nq, opts)
	if err != nil {
		return err
	}
	p.Scales = c.scales
	fused := c.be.Fused
	if rec != nil {
		fused = rec.Fused
	}
	return fused(ctx, backend.FusedParams{Problem: p}, q, c.k, c.v, out, lse)
}

// queryDims names the dimensions of a cache's queries in layout l.
func queryDims(l Layout) string {
	if l == BNHD {
		return "[B, Nq, H, D]"
	}
	return "[B, H, Nq, D]"
}

// prefixLens checks the key lengths a cache's Attend was given against
// the sequences' lengths: one a sequence, each in 0 … its length.
func prefixLens(want, have []int) error {
	if len(want) != len(have) {
		return backend.Errorf(backend.ErrShape, "AttendOptions.KVLens: %d key lengths for %d sequences", len(want), len(have))
	}
	for b, n := range want {
		if n < 0 || n > have[b] {
			return backend.Errorf(backend.ErrShape, "AttendOptions.KVLens: sequence %d attends %d keys, want 0 … %d (its length)", b, n, have[b])
		}
	}
	return nil
}

// AttendOptions are the options of a cache's Attend: what every
// attention computes, the fields Options begins with and with their
// meaning, and nothing else, for a cache's attention runs fused over its
// own lengths and pages, with no bias, mask or staged matrices. The
// output dtype is the out tensor's and the LSE is asked for by passing a
// tensor for it. The zero value (or a nil *AttendOptions) is plain
// non-causal attention with scale 1/√D.
type AttendOptions struct {
	// Scale multiplies Q·Kᵀ; 0 means 1/√D.
	Scale float64
	// Causal masks bottom-right at each sequence's own length (at
	// KVLens[b] when set): query i of Nq sits at key position
	// len_b − Nq + i.
	Causal bool
	// CausalOffset, with Causal, puts query i at key position
	// *CausalOffset + i instead; without Causal it is an error.
	CausalOffset *int
	// Window, Softcap, ALiBi and Sinks are Options' sliding window,
	// softcap (a finite float32; 0 is none), per-head ALiBi slopes and
	// per-head sink logits.
	Window  *Window
	Softcap float64
	ALiBi   []float32
	Sinks   []float32
	// KVLens, when set, attends only the first KVLens[b] (at most
	// sequence b's length) keys of sequence b, as if the rest were not
	// there.
	KVLens []int
	// AllowNonFinite skips the check that the queries hold no NaN or
	// infinity (the cache checked its rows as they were appended).
	AllowNonFinite bool
}
