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
	c := p.NewSeq()
	c.pages, c.n = slices.Clone(s.pages), s.n
	p.mu.Lock()
	for _, pg := range c.pages {
		p.refs[pg]++
	}
	p.mu.Unlock()
	return c, nil
}

// copyPage copies the first rows rows of page from to page to, keys and
// values, through the host: a page's elements lie together in either
// layout ([pages, page_size, KVH, D] or [pages, KVH, page_size, D]), so
// its first rows are one run under BNHD and one a head under BHND.
// A half page's stored bits are copied as they are; an 8-bit page (q8,
// fp8) is read as float32 and written again, re-quantized from its
// decoded values, so a value a device append stored as NaN is refused
// by the write (backend.ErrNonFinite) and the append that needed the
// copy fails with it. Read waits for (and a GPU step submits first)
// every write of the page before it, so a copy made while appends are
// recorded into a step still sees them.
func (p *PagePool) copyPage(st *staging, to, from, rows int) error {
	for _, t := range []struct {
		buf backend.Buffer
		dim int
	}{{p.k, p.cfg.D}, {p.v, p.cfg.dv()}}[:2-btoi(p.cfg.VFromK)] { // V from K: K's page is V's
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
