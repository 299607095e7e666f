package kernels

import (
	"context"

	"github.com/attn-go/attn/backend"
)

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
	c, err := newKV(be, cfg, "KV cache", batch, capacity)
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
	if err := c.live("truncate"); err != nil {
		return err
	}
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
	if err := c.live("append"); err != nil {
		return err
	}
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
	if err := c.putKV(&c.st, c.rows(c.cfg.kPitch()), c.rows(c.cfg.vPitch()), seq, pos, k, v); err != nil {
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
// counted by Saturated where it saturates, and a value Append would
// refuse stored as NaN and counted by NonFinite, on every backend
// (NonFinite says why). From a buffer of the cache's own 8-bit dtype
// the bytes are copied as they are. The sizes are checked as Append's,
// and a full cache is backend.ErrCacheFull, before anything is copied;
// an error of the copy itself (a buffer of another backend, say) leaves
// the sequence's length as it was. Once K's copy has run, V's runs
// whatever ctx says since (under context.Background: the backends read
// no values of ctx, and WithoutCancel would allocate a step): an append
// is never left half done by a cancellation, nor K's counts without
// V's. With
// rec not nil — a recording of the
// cache's backend (backend.Recorder: a GPU step) — the copies are
// recorded into it, not waited for; with nil they run on the backend.
func (c *KVCache) AppendBuffers(ctx context.Context, rec backend.Recording, seq, n int, k, v backend.Buffer) error {
	if err := c.live("append"); err != nil {
		return err
	}
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
	if err := c.copyRows(ctx, cp, &c.st, c.k, c.rows(c.cfg.kPitch()), seq, pos, n, c.cfg.D, k); err != nil {
		return err
	}
	if c.cfg.vFromK() {
		// V is K's rows: copied above.
	} else if err := c.copyRows(context.Background(), cp, &c.st, c.v, c.rows(c.cfg.vPitch()), seq, pos, n, c.cfg.dv(), v); err != nil {
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
	if err := c.live("attend"); err != nil {
		return err
	}
	p := backend.Problem{B: c.batch, KVHeads: c.cfg.KVHeads, Nk: c.capacity, D: c.cfg.D, Dv: c.cfg.dv(), Layout: c.cfg.Layout, VFromK: c.cfg.vFromK()}
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
	if err := c.live("attend"); err != nil {
		return err
	}
	p := backend.Problem{B: c.batch, KVHeads: c.cfg.KVHeads, Nk: c.capacity, D: c.cfg.D, Dv: c.cfg.dv(), Layout: c.cfg.Layout, VFromK: c.cfg.vFromK()}
	p.KVLens = c.lens
	return (*attender)(nil).attendBuffers(ctx, rec, c.kv, p, q, out, lse, heads, nq, opts)
}

// Release frees the cache's device storage; every later call of the
// cache is then backend.ErrReleased, naming it, and a second Release
// does nothing.
func (c *KVCache) Release() {
	c.kv.release()
	c.att.release()
}
