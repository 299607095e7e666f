package kernels

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/lower"
	"github.com/attn-go/attn/internal/magnitude"
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
	// and queries; Dv that of values and outputs, 0 meaning D (or
	// VFromK where that is set).
	KVHeads, D, Dv int
	// DType is how keys and values are stored: Float32, Float16 or
	// BFloat16 (on a backend with Caps.Half), 8 bits a value, Q8 or
	// FP8 (on a backend with Caps.Quant8; see backend.Q8 and
	// backend.FP8), or 4, Q4 (Caps.Quant4; backend.Q4). Appended rows
	// are rounded to it.
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
	// VFromK, when > 0, stores no V: V is the first VFromK columns of
	// K's rows (Dv = VFromK ≤ D; Dv is then 0 or the same), as
	// multi-head latent attention (MLA: DeepSeek V2/V3, Kimi K2) caches
	// one latent row a token, 576 values of which V is the first 512
	// (VFromK: 512). It is Options.VFromK's spelling: V's head dim, 0 for
	// a V of its own. Append and AppendBuffers take v nil; an fp8
	// cache's V is read at K's scales (VScale must be nil). It needs a
	// backend with Caps.VFromK.
	VFromK int
}

// dv is V's head dim: VFromK's, Dv's or D.
func (c CacheConfig) dv() int {
	switch {
	case c.VFromK > 0:
		return c.VFromK
	case c.Dv == 0:
		return c.D
	}
	return c.Dv
}

// vFromK says the cache stores no V (VFromK > 0).
func (c CacheConfig) vFromK() bool { return c.VFromK > 0 }

// kPitch and vPitch are the elements a row of K and of V takes in the
// cache's storage: D and Dv, rounded up to whole blocks in a q8 or q4 cache
// (backend's DType.Pitch: the last block padded with zeros); V's rows
// are K's under VFromK.
func (c CacheConfig) kPitch() int { return c.DType.Pitch(c.D) }

func (c CacheConfig) vPitch() int {
	if c.vFromK() {
		return c.kPitch()
	}
	return c.DType.Pitch(c.dv())
}

func (c CacheConfig) check(be backend.Backend) error {
	switch {
	case be == nil:
		return backend.Errorf(backend.ErrUnavailable, "nil backend")
	case c.KVHeads < 1 || c.D < 1 || c.Dv < 0 || c.VFromK < 0:
		return backend.Errorf(backend.ErrShape, "cache of %d KV heads, D=%d, Dv=%d, VFromK=%d: want heads and D ≥ 1, Dv and VFromK ≥ 0", c.KVHeads, c.D, c.Dv, c.VFromK)
	case !c.DType.Storable():
		return backend.Errorf(backend.ErrShape, "cache of unknown dtype %v", c.DType)
	case c.DType == backend.Q4 && !be.Caps().Quant4:
		return backend.Errorf(backend.ErrUnsupported, "a q4 cache on the %s backend, which stores no 4-bit K and V", be.Name())
	case c.DType.Quantized() && c.DType != backend.Q4 && !be.Caps().Quant8:
		return backend.Errorf(backend.ErrUnsupported, "a %v cache on the %s backend, which stores no 8-bit K and V", c.DType, be.Name())
	case (c.KScale != nil || c.VScale != nil) && c.DType != backend.FP8:
		return backend.Errorf(backend.ErrShape, "K or V scales for a %v cache: only an fp8 cache takes them", c.DType)
	case c.DType.Half() && !be.Caps().Half:
		return backend.Errorf(backend.ErrUnsupported, "a %v cache on the %s backend, which stores no halves", c.DType, be.Name())
	case c.Layout != BHND && c.Layout != BNHD:
		return backend.Errorf(backend.ErrShape, "cache of unknown layout %v", c.Layout)
	case !be.Caps().Seqs && !be.Caps().Fused:
		return backend.Errorf(backend.ErrUnsupported, "the %s backend has no fused path to attend a cache with", be.Name())
	case c.vFromK() && c.Dv != 0 && c.Dv != c.VFromK:
		return backend.Errorf(backend.ErrShape, "a cache with V from K (VFromK=%d, V's head dim) and Dv=%d: want Dv 0 or the same", c.VFromK, c.Dv)
	case c.vFromK() && c.VFromK > c.D:
		return backend.Errorf(backend.ErrShape, "a cache with V from K (its first VFromK columns): VFromK=%d is more than D=%d", c.VFromK, c.D)
	case c.vFromK() && c.VScale != nil:
		return backend.Errorf(backend.ErrShape, "a cache with V from K reads V at K's scales: VScale %v", c.VScale)
	case c.vFromK() && !be.Caps().VFromK:
		return backend.Errorf(backend.ErrUnsupported, "a cache with V from K on the %s backend, which reads no V in K's buffer (Caps.VFromK)", be.Name())
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
	// what names the cache in errors ("KV cache", "page pool"), and
	// released says its storage is freed: every later call is
	// backend.ErrReleased naming it (live).
	what     string
	released atomic.Bool
	// cowMu guards cow, the scratch that copies within the cache's
	// storage go through on the device (Copy takes two buffers): a
	// pool's copy-on-write of a page (copyPage), a sequence's kept rows
	// (moveRows); one copy at a time.
	cowMu sync.Mutex
	cow   backend.Buffer
	// padMu guards pads, a q8 cache's scratch for AppendBuffers of rows
	// that are not whole blocks, a buffer a source dtype and row width
	// (K's and V's may differ): their rows laid out at the pitch, zeros
	// past them, before CopyQuant quantizes whole blocks (padRows). A
	// scratch outgrown is released at once (a Recording keeps it until
	// the copies that read it have run).
	padMu sync.Mutex
	pads  map[padKey]backend.Buffer
}

// Saturated is how many appended values an FP8 cache has stored
// saturated, as ±448 times their head's scale, since it was made: the
// finite values beyond that range. Always 0 for the other dtypes. What
// Append saturated is counted on the host; what AppendBuffers saturated,
// on the backend, and Saturated reads that count back
// (backend.ReadCounts): it waits for the work recorded before it, so a
// decoding loop calls it between steps, not inside one. Should the read
// fail (a lost device, a released cache), the error says so, and the
// count is the one last read.
func (c *kv) Saturated() (int64, error) {
	err := c.readCounts()
	return c.saturated.Load() + c.devSat.Load(), err
}

// NonFinite is how many values AppendBuffers has stored as NaN in an
// 8-bit cache, on every backend: NaN, infinities and, into q8,
// magnitudes of backend.Q8Max or more, which the host's Append refuses
// (backend.ErrNonFinite, nothing written). AppendBuffers's values are
// the device's, unchecked (a GPU cannot look at them without a round
// trip to the host that would stall every step), so it stores each
// such value so that it is never read as a number — a q8 block's scale
// as float16 NaN (all 32 of its values), fp8's NaN pattern — and counts
// it; nothing else of the append changes. A serving loop reads it
// between steps, as Saturated, and drops or recomputes the sequences
// whose outputs turned NaN. Always 0 for the other dtypes, whose caches
// store such values as they are. An error is as Saturated's.
func (c *kv) NonFinite() (int64, error) {
	err := c.readCounts()
	return c.devNaN.Load(), err
}

// readCounts reads the backend's counts, if the cache has them, into
// devSat and devNaN; on an error they keep what they last held.
func (c *kv) readCounts() error {
	if c.counts == nil {
		return nil
	}
	if err := c.live("read the counts"); err != nil {
		return err
	}
	sat, nan, err := backend.ReadCounts(c.be, c.counts)
	if err != nil {
		return backend.Wrapf(err, "%s: reading the counts", c.what)
	}
	c.devSat.Store(int64(sat))
	c.devNaN.Store(int64(nan))
	return nil
}

// storeRows is one of a cache's buffers and the pitch of its rows.
type storeRows struct {
	buf backend.Buffer
	dim int
}

// stores are the cache's K and V buffers with their rows' pitches; K's
// alone under V from K, whose rows are V's too.
func (c *kv) stores() []storeRows {
	s := []storeRows{{c.k, c.cfg.kPitch()}, {c.v, c.cfg.vPitch()}}
	return s[:2-btoi(c.cfg.vFromK())]
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
		return nil, backend.Wrapf(err, "%s", what)
	}
	nk, ok := backend.CheckedProduct(n, size, cfg.KVHeads, cfg.kPitch())
	nv, ok2 := backend.CheckedProduct(n, size, cfg.KVHeads, cfg.vPitch())
	if !ok || !ok2 {
		return nil, backend.Errorf(backend.ErrTooLarge, "%s of %d × %d keys × %d KV heads × D=%d, Dv=%d overflows int", what, n, size, cfg.KVHeads, cfg.D, cfg.dv())
	}
	c := &kv{be: be, cfg: cfg, what: what}
	if cfg.KScale != nil || cfg.VScale != nil {
		// The cache's own copies (nil stays nil: a scale of 1).
		c.scales = &backend.Scales{K: slices.Clone(cfg.KScale), V: slices.Clone(cfg.VScale)}
		if cfg.vFromK() {
			c.scales.V = c.scales.K
		}
	}
	var err error
	if c.k, err = be.Alloc(cfg.DType, nk); err != nil {
		return nil, backend.Wrapf(err, "%s: keys", what)
	}
	if cfg.vFromK() {
		c.v = c.k // V is K's first Dv columns
	} else if c.v, err = be.Alloc(cfg.DType, nv); err != nil {
		c.k.Release()
		return nil, backend.Wrapf(err, "%s: values", what)
	}
	if _, ok := be.(backend.QuantCopier); ok && cfg.DType.Quantized() {
		if c.counts, err = be.Alloc(Float32, backend.CountsLen); err != nil {
			c.release()
			return nil, backend.Wrapf(err, "%s: counts", what)
		}
	}
	return c, nil
}

func (c *kv) release() {
	if c.released.Swap(true) {
		return
	}
	c.k.Release()
	if c.v != c.k {
		c.v.Release()
	}
	if c.counts != nil {
		c.counts.Release()
	}
	c.cowMu.Lock()
	if c.cow != nil {
		c.cow.Release()
		c.cow = nil
	}
	c.cowMu.Unlock()
	c.padMu.Lock()
	defer c.padMu.Unlock()
	for _, b := range c.pads {
		b.Release()
	}
}

// live returns an error wrapping backend.ErrReleased, naming the cache
// and op, once the cache's storage is freed.
func (c *kv) live(op string) error {
	if c.released.Load() {
		return backend.Errorf(backend.ErrReleased, "%s: the %s is released: its device storage is freed", op, c.what)
	}
	return nil
}

// checkRows checks the rows an append brings: k [n, KVHeads, D] and v [n,
// KVHeads, Dv], finite, each value one the cache's dtype holds. It
// returns n, and k and v dense: a strided one gathered into a copy of
// its rows (which the append copies anyway).
func (c *kv) checkRows(k, v *Tensor) (int, *Tensor, *Tensor, error) {
	if c.cfg.vFromK() && v != nil {
		return 0, nil, nil, backend.Errorf(backend.ErrShape, "appended V of shape %v into a cache with V from K (K's first %d columns): v must be nil", v.Shape, c.cfg.dv())
	}
	// A bad k or v is left for checkDenseRows to name.
	if k.check("K") == nil {
		k = k.contiguous()
	}
	if c.cfg.vFromK() {
		v = k
	} else if v.check("V") == nil {
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
	}{{"K", "appended K", k, c.cfg.D}, {"V", "appended V", v, c.cfg.dv()}}[:2-btoi(c.cfg.vFromK())] {
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
		if dt.Half() && t.t.DType != dt || dt.Block() > 1 {
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
// value, q8's backend.Q8Max and q4's backend.Q4Max, an infinity for
// float32 and fp8 (which saturates).
func appendBound(dt DType) uint32 {
	switch dt {
	case backend.Q8, backend.Q4:
		return math.Float32bits(dt.MaxFinite())
	case backend.FP8, Float32:
		return 0x7f800000
	}
	return math.Float32bits(dt.MaxFinite()) + 1
}

// fits checks that every value of t is one dt holds without overflow.
func fits(dt DType, name string, t *Tensor) error {
	if dt.Block() > 1 {
		return fitsBlocks(dt, name, t)
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

// fitsBlocks checks that every magnitude of t is below the largest a
// block of dt (Q8, Q4) holds under its float16 scale: backend.Q8Max,
// backend.Q4Max.
func fitsBlocks(dt DType, name string, t *Tensor) error {
	m := dt.MaxFinite()
	for i := range t.Len() {
		var x float32
		if t.DType.Half() {
			x = t.DType.Decode(t.Bits[i])
		} else {
			x = t.Data[i]
		}
		if !(x < m && x > -m) {
			return backend.Errorf(backend.ErrNonFinite, "%s element %d is %g, beyond a %v block's largest magnitude %g", name, i, x, dt, float64(m))
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
	if c.cfg.vFromK() {
		// V is K's rows: written above.
	} else if err := c.put(st, c.v, rv, b, pos, v); err != nil {
		return err
	}
	c.saturated.Add(st.saturated)
	return nil
}

// put writes the n rows of src ([n, KVHeads, dim]) to buf as positions
// pos … pos+n−1 of sequence b, located by rows.
func (c *kv) put(st *staging, buf backend.Buffer, rows backend.Rows, b, pos int, src *Tensor) error {
	n, heads, dim := src.Shape[0], src.Shape[1], src.Shape[2]
	if pitch := c.cfg.DType.Pitch(dim); pitch != dim {
		return c.putPitched(st, buf, rows, b, pos, src, pitch)
	}
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

// putPitched is put into a q8 cache whose rows of dim are not whole
// blocks: each row written at the pitch (as float32 values, quantized
// by Write), zeros past dim, a run of rows at a time.
func (c *kv) putPitched(st *staging, buf backend.Buffer, rows backend.Rows, b, pos int, src *Tensor, pitch int) error {
	n, heads, dim := src.Shape[0], src.Shape[1], src.Shape[2]
	// row widens src's row r (of heads × dim) into dst.
	row := func(dst []float32, r int) {
		if src.DType.Half() {
			for j, x := range src.Bits[r*dim : (r+1)*dim] {
				dst[j] = src.DType.Decode(x)
			}
		} else {
			copy(dst, src.Data[r*dim:(r+1)*dim])
		}
	}
	for t := 0; t < n; {
		run := min(rows.Run(pos+t), n-t)
		if c.cfg.Layout == BNHD {
			st.f32 = grow(st.f32, run*heads*pitch)
			clear(st.f32)
			for r := range run * heads {
				row(st.f32[r*pitch:r*pitch+dim], t*heads+r)
			}
			if err := c.be.Write(buf, rows.Offset(b, 0, pos+t), st.f32); err != nil {
				return err
			}
		} else {
			st.f32 = grow(st.f32, run*pitch)
			clear(st.f32)
			for h := range heads {
				for i := range run {
					row(st.f32[i*pitch:i*pitch+dim], (t+i)*heads+h)
				}
				if err := c.be.Write(buf, rows.Offset(b, h, pos+t), st.f32); err != nil {
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
	if c.cfg.vFromK() && v != nil {
		return nil, backend.Errorf(backend.ErrShape, "append of a V buffer into a cache with V from K (K's first %d columns): v must be nil", c.cfg.dv())
	}
	for _, t := range []struct {
		name, what string // constants: a name built here would allocate every call
		buf        backend.Buffer
		dim        int
	}{{"K", "appended K [n, KVHeads, dim]", k, c.cfg.D}, {"V", "appended V [n, KVHeads, dim]", v, c.cfg.dv()}}[:2-btoi(c.cfg.vFromK())] {
		// A q8 buffer's rows are whole blocks (its pitch).
		dim := t.dim
		if t.buf != nil {
			dim = t.buf.DType().Pitch(dim)
		}
		need, ok := backend.CheckedProduct(n, c.cfg.KVHeads, dim)
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
	if pitch := c.cfg.DType.Pitch(dim); pitch != dim {
		// Rows that are not whole q8 blocks: a q8 source's are at the
		// pitch already; another's are laid out there first.
		if src.DType() != c.cfg.DType {
			c.padMu.Lock()
			defer c.padMu.Unlock()
			var err error
			if src, err = c.padRows(ctx, cp, st, src, n*heads, dim, pitch); err != nil {
				return err
			}
		}
		dim = pitch
	}
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

// padRows copies rows rows of dim values (from element 0 of src) into
// the cache's scratch of src's dtype and dim, on the device, and
// returns the scratch; its columns past dim stay zero (it is allocated
// zeroed, and only rows of dim at this pitch are copied into it). The caller holds c.padMu
// until the rows are quantized out of it.
func (c *kv) padRows(ctx context.Context, cp backend.Copier, st *staging, src backend.Buffer, rows, dim, pitch int) (backend.Buffer, error) {
	key := padKey{src.DType(), dim}
	pad := c.pads[key]
	if need := rows * pitch; pad == nil || pad.Len() < need {
		nb, err := c.be.Alloc(key.t, max(need, 2*lenOf(pad)))
		if err != nil {
			return nil, err
		}
		if pad != nil {
			pad.Release()
		}
		if c.pads == nil {
			c.pads = map[padKey]backend.Buffer{}
		}
		pad, c.pads[key] = nb, nb
	}
	st.ranges = lower.PitchRanges(st.ranges[:0], rows, dim, pitch, true)
	return pad, cp.Copy(ctx, pad, src, st.ranges...)
}

// padKey names one of a cache's pads: its dtype and the width of the
// rows copied into it (the pitch follows from it).
type padKey struct {
	t   backend.DType
	dim int
}

// lenOf is b's length, 0 for nil.
func lenOf(b backend.Buffer) int {
	if b == nil {
		return 0
	}
	return b.Len()
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

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
