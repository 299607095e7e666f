package kernels

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/attn-go/attn/backend"
)

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

// Free is how many pages no sequence holds: 0 once the pool is
// released (Release), whose pages are gone with its storage, as a
// released sequence's Len is 0.
func (p *PagePool) Free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released.Load() {
		return 0
	}
	return len(p.free)
}

// Shared is how many pages more than one sequence holds (Seq.Fork): the
// pool holds Pages − Free pages in all, and without sharing would need
// one more for each extra holder of a shared page. It is 0 once the pool
// is released.
func (p *PagePool) Shared() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released.Load() {
		return 0
	}
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

// NewSeq returns an empty sequence of the pool. It takes no page: the
// sequence takes them as it grows (Seq.Append). Once the pool is
// released (PagePool.Release) NewSeq is an error wrapping
// backend.ErrReleased, and a sequence made before then is released
// with its pool: its every call is that error.
func (p *PagePool) NewSeq() (*Seq, error) {
	if err := p.live("NewSeq"); err != nil {
		return nil, err
	}
	return p.newSeq(), nil
}

// newSeq is NewSeq past its check, for Fork, which holds a live
// sequence of the pool.
func (p *PagePool) newSeq() *Seq {
	return &Seq{pool: p, id: p.ids.Add(1), released: p.released.Load()}
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
	if s.pool.released.Load() {
		return s.pool.live(what + " a sequence") // no concatenation on the way that succeeds
	}
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
		return p.putKV(&s.st, p.rows(p.cfg.kPitch(), pg), p.rows(p.cfg.vPitch(), pg), 0, s.n, k, v)
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
		if err := p.copyRows(ctx, cp, &s.st, p.k, p.rows(p.cfg.kPitch(), pg), 0, s.n, n, p.cfg.D, k); err != nil {
			return err
		}
		if p.cfg.vFromK() {
			return nil // V is K's rows: copied above
		}
		return p.copyRows(context.Background(), cp, &s.st, p.v, p.rows(p.cfg.vPitch(), pg), 0, s.n, n, p.cfg.dv(), v) // as KVCache.AppendBuffers's
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
			return backend.Wrapf(err, "append %d keys to a sequence of %d: copying its shared last page", n, s.n)
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
	return p.attend(seqs, func(a *attender, pr backend.Problem) error {
		a.pages = seqPages(a.pages, seqs)
		defer func() { clear(a.pages); a.pages = a.pages[:0] }()
		return a.attendBuffers(ctx, rec, p.kv, pr, q, out, lse, heads, nq, opts)
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
	if err := p.live("attend"); err != nil {
		return err
	}
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
	pr := backend.Problem{B: len(seqs), KVHeads: p.cfg.KVHeads, Nk: per * p.pageSize, D: p.cfg.D, Dv: p.cfg.dv(), Layout: p.cfg.Layout, Paged: &a.paged, VFromK: p.cfg.vFromK()}
	pr.KVLens = a.lens
	return run(a, pr)
}

// Release frees the pool's device storage. Every later call of the
// pool and of its sequences (NewSeq's included) is then
// backend.ErrReleased, naming the pool; a second Release does nothing.
func (p *PagePool) Release() {
	p.kv.release()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.atts {
		a.release()
	}
	p.atts = nil
}
