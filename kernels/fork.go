package kernels

import (
	"slices"

	"github.com/attn-go/attn/backend"
)

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
	c := p.newSeq()
	c.pages, c.n = slices.Clone(s.pages), s.n
	p.mu.Lock()
	for _, pg := range c.pages {
		p.refs[pg]++
	}
	p.mu.Unlock()
	return c, nil
}

// copyPage copies the first rows rows of page from to page to, keys and
// values: a page's elements lie together in either layout ([pages,
// page_size, KVH, D] or [pages, KVH, page_size, D]), so its first rows
// are one run under BNHD and one a head under BHND. On a backend that
// copies on the device (backend.Copier: the CPU and the GPU) the stored
// bits are copied as they are, in every dtype — an 8-bit page's codes
// and scales too, so a block a device append stored as NaN is copied as
// it is, never decoded — through a scratch page of the pool's (Copy
// takes two buffers; viaScratch, K's and V's copies one recording on a
// GPU); elsewhere through the host, a half page's bits as
// they are and the others as float32 values. The copy is ordered after
// every write of the page before it (a GPU op outside a step is
// submitted after what steps recorded), so a copy made while appends are
// recorded into a step still sees them.
func (p *PagePool) copyPage(st *staging, to, from, rows int) error {
	cp, device := p.be.(backend.Copier)
	need := 0 // the scratch: a page of the widest store
	var copies []scratchCopy
	for _, t := range p.stores() {
		heads, dim := p.cfg.KVHeads, t.dim
		page := p.pageSize * heads * dim
		runs, run, stride := 1, rows*heads*dim, 0
		if p.cfg.Layout != BNHD {
			runs, run, stride = heads, rows*dim, p.pageSize*dim
		}
		if device {
			sc := scratchCopy{buf: t.buf, in: make([]backend.CopyRange, runs), out: make([]backend.CopyRange, runs)}
			for r := range runs {
				sc.in[r] = backend.CopyRange{Dst: r * stride, Src: from*page + r*stride, N: run}
				sc.out[r] = backend.CopyRange{Dst: to*page + r*stride, Src: r * stride, N: run}
			}
			copies, need = append(copies, sc), max(need, page)
			continue
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
	if device {
		return p.viaScratch(cp, need, copies)
	}
	return nil
}
