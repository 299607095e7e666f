package kernels

import (
	"github.com/attn-go/attn/backend"
)

// Read returns sequence seq's keys and values as the cache holds them,
// in float32: k [n, KVHeads, D] and v [n, KVHeads, Dv] for its n keys,
// in the order they were appended — Append's shapes, so that what went in
// and what the cache kept compare element for element. Each value is the
// one an Attend reads: rounded to a half dtype, dequantized from a q8 or
// q4 block, an fp8 value times its head's scale, and NaN where an
// AppendBuffers into an 8-bit cache stored it so (NonFinite). Under V from
// K, v is K's first VFromK columns. The read waits for the work recorded
// before it, AppendBuffers in a step included, so a decoding loop calls
// it between steps. A sequence out of range is an error wrapping
// backend.ErrShape; a released cache backend.ErrReleased.
func (c *KVCache) Read(seq int) (k, v *Tensor, err error) {
	if err := c.live("read"); err != nil {
		return nil, nil, err
	}
	if seq < 0 || seq >= c.batch {
		return nil, nil, backend.Errorf(backend.ErrShape, "read sequence %d of a cache of %d", seq, c.batch)
	}
	n := c.lens[seq]
	return c.read(n, func(yield func(seg, size, at, rows int) error) error {
		return yield(seq, c.capacity, 0, n)
	})
}

// Read is KVCache.Read for the sequence: its keys and values, [n,
// KVHeads, D] and [n, KVHeads, Dv], as its pages hold them, shared pages
// included. It may run beside Attends of the sequence, and an Append,
// Truncate or Release of it waits for it. A released sequence or pool is
// an error wrapping backend.ErrReleased.
func (s *Seq) Read() (k, v *Tensor, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.usable("read"); err != nil {
		return nil, nil, err
	}
	p := s.pool
	return p.read(s.n, func(yield func(seg, size, at, rows int) error) error {
		for i, pg := range s.pages {
			at := i * p.pageSize
			if at >= s.n {
				break
			}
			if err := yield(pg, p.pageSize, at, min(p.pageSize, s.n-at)); err != nil {
				return err
			}
		}
		return nil
	})
}

// read gathers n keys' rows of K and V into new tensors. segs calls
// yield for each run of the sequence in storage, in order: segment seg
// (a KVCache's sequence, a pool's page) of size rows holds the
// sequence's rows at … at+rows−1 in its rows 0 … rows−1.
func (c *kv) read(n int, segs func(yield func(seg, size, at, rows int) error) error) (*Tensor, *Tensor, error) {
	heads, layout := c.cfg.KVHeads, c.cfg.Layout
	out := [2]*Tensor{}
	dims := [2]int{c.cfg.D, c.cfg.dv()}
	pitches := [2]int{c.cfg.kPitch(), c.cfg.vPitch()}
	bufs := [2]backend.Buffer{c.k, c.v}
	var scratch []float32
	for i := range out {
		dim, pitch := dims[i], pitches[i]
		t := &Tensor{Shape: []int{n, heads, dim}, Data: make([]float32, n*heads*dim)}
		if i == 1 && c.cfg.vFromK() {
			// V is K's first Dv columns, at K's scales: already read.
			k := out[0]
			for r := range n * heads {
				copy(t.Data[r*dim:][:dim], k.Data[r*k.Shape[2]:])
			}
			out[i] = t
			continue
		}
		scales := c.scalesOf(bufs[i])
		// place copies rows of pitch values (heads of one row under BNHD,
		// rows of head h under BHND) into t, dim values a row.
		place := func(src []float32, row0, h int) {
			for r := 0; r*pitch < len(src); r++ {
				at, g := row0+r, h
				if layout == BNHD {
					at, g = row0+r/heads, r%heads
				}
				dst := t.Data[(at*heads+g)*dim:][:dim]
				copy(dst, src[r*pitch:][:dim])
				if scales != nil {
					for j := range dst {
						dst[j] *= scales[g]
					}
				}
			}
		}
		err := segs(func(seg, size, at, rows int) error {
			base := seg * size * heads * pitch
			if layout == BNHD { // the rows' heads lie together: one run
				scratch = grow(scratch, rows*heads*pitch)
				if err := c.be.Read(scratch, bufs[i], base); err != nil {
					return err
				}
				place(scratch, at, 0)
				return nil
			}
			scratch = grow(scratch, rows*pitch)
			for h := range heads { // a run a head
				if err := c.be.Read(scratch, bufs[i], base+h*size*pitch); err != nil {
					return err
				}
				place(scratch, at, h)
			}
			return nil
		})
		if err != nil {
			return nil, nil, backend.Wrapf(err, "%s: read", c.what)
		}
		out[i] = t
	}
	return out[0], out[1], nil
}
