package kernels

import (
	"context"
	"errors"

	"github.com/attn-go/attn/backend"
)

// Keep keeps the verified path of a speculative draft: of the
// sequence's last n rows (the draft an Attend verified, AttendOptions),
// the rows rows (indices 0 … n−1 into the draft, each at most once, in
// the order given) become its next rows, and the rest are dropped. Its
// length becomes Len − n + len(rows), and its row Len − n + t holds what
// draft row rows[t] held: K's and V's stored bits as they are, in every
// dtype (an 8-bit row's codes and scales too), copied on the device where
// the backend copies (backend.Copier: the CPU and the GPU), through the
// host elsewhere. Only the rows that move are copied (rows[t] ≠ t); a
// page the sequence shares with a fork is copied to one of its own first
// (copy-on-write), so no other sequence sees the change, and pages the
// shorter sequence no longer needs go back to the pool.
//
// n outside [0, Len] or a row outside the draft or named twice is an
// error wrapping backend.ErrShape, with nothing changed; out of free
// pages for a copy-on-write, backend.ErrCacheFull, with nothing changed.
// Keep waits for the Attends that hold the sequence, as Append does.
func (s *Seq) Keep(n int, rows []int) error {
	p := s.pool
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable("keep rows of"); err != nil {
		return err
	}
	if err := checkKeep(s.n, n, rows); err != nil {
		return err
	}
	base, end := s.n-n, s.n-n+len(rows)
	// The moves: draft row rows[t] to row base+t, where they differ.
	var moves [][2]int // {to, from} rows
	for t, r := range rows {
		if r != t {
			moves = append(moves, [2]int{base + t, base + r})
		}
	}
	if len(moves) > 0 {
		// The pages rows base … end−1 lie on, each the sequence's own
		// before it is written: a shared one is copied first.
		first, last := base/p.pageSize, (end-1)/p.pageSize
		var shared []int // indices into s.pages
		p.mu.Lock()
		for i := first; i <= last; i++ {
			if p.refs[s.pages[i]] > 1 {
				shared = append(shared, i)
			}
		}
		if len(shared) > len(p.free) {
			free := len(p.free)
			p.mu.Unlock()
			return backend.Errorf(backend.ErrCacheFull, "keep %d of a sequence's last %d rows: %d of its pages are shared with a fork and need copies, the pool has %d free of %d",
				len(rows), n, len(shared), free, p.pages)
		}
		own := make([]int, len(shared))
		for x := range own {
			own[x] = p.free[len(p.free)-1]
			p.free = p.free[:len(p.free)-1]
			p.refs[own[x]] = 1
		}
		p.mu.Unlock()
		for x, i := range shared {
			full := min(p.pageSize, s.n-i*p.pageSize) // the rows page i holds
			if err := p.copyPage(&s.st, own[x], s.pages[i], full); err != nil {
				for _, pg := range own {
					p.give1(pg)
				}
				return backend.Wrapf(err, "keep %d of a sequence's last %d rows: copying a shared page", len(rows), n)
			}
		}
		for x, i := range shared {
			p.give1(s.pages[i])
			s.pages[i] = own[x]
		}
		if err := p.moveRows(&s.st, moves, p.rowAt(s.pages)); err != nil {
			return backend.Wrapf(err, "keep %d of a sequence's last %d rows", len(rows), n)
		}
	}
	keepPages := (end + p.pageSize - 1) / p.pageSize
	p.give(s.pages[keepPages:])
	s.pages, s.n = s.pages[:keepPages], end
	return nil
}

// checkKeep checks Keep's arguments against a sequence of length have.
func checkKeep(have, n int, rows []int) error {
	if n < 0 || n > have {
		return backend.Errorf(backend.ErrShape, "keep rows of the last %d rows of a sequence of %d", n, have)
	}
	seen := make(map[int]bool, len(rows))
	for t, r := range rows {
		if r < 0 || r >= n {
			return backend.Errorf(backend.ErrShape, "keep: rows[%d] is %d, outside the draft of %d rows", t, r, n)
		}
		if seen[r] {
			return backend.Errorf(backend.ErrShape, "keep: rows[%d] names draft row %d a second time", t, r)
		}
		seen[r] = true
	}
	return nil
}

// moveRows copies, for each move {to, from}, row from of a sequence to
// its row to, K and V, at(row, h, dim) locating a head's row in a
// buffer of rows dim wide: every source is read before any destination
// is written (through the cache's scratch on a backend that copies on
// the device, through the host elsewhere), so moves may overlap and come
// in any order. Each row is its KVH heads' rows: one run under BNHD, one
// a head under BHND.
func (c *kv) moveRows(st *staging, moves [][2]int, at func(row, h, dim int) int) error {
	if cp, ok := c.be.(backend.Copier); ok {
		return c.moveDevice(cp, moves, at)
	}
	for _, t := range c.stores() {
		runs, run := c.rowRuns(t.dim)
		locate := func(row, h int) int { return at(row, h, t.dim) }
		// Through the host: every source row read, then written.
		half := c.cfg.DType.Half()
		n := len(moves) * runs * run
		if half {
			st.bits = grow(st.bits, n)
		} else {
			st.f32 = grow(st.f32, n)
		}
		for pass := range 2 {
			for m, mv := range moves {
				for h := range runs {
					x := (m*runs + h) * run
					var err error
					switch {
					case pass == 0 && half:
						err = c.be.ReadBits(st.bits[x:x+run], t.buf, locate(mv[1], h))
					case pass == 0:
						err = c.be.Read(st.f32[x:x+run], t.buf, locate(mv[1], h))
					case half:
						err = c.be.WriteBits(t.buf, locate(mv[0], h), st.bits[x:x+run])
					default:
						err = c.be.Write(t.buf, locate(mv[0], h), st.f32[x:x+run])
					}
					if err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// rowRuns is how a row dim wide a head lies in a buffer: its KVH heads'
// rows, one run under BNHD, one a head under BHND.
func (c *kv) rowRuns(dim int) (runs, run int) {
	if c.cfg.Layout == BNHD {
		return 1, c.cfg.KVHeads * dim
	}
	return c.cfg.KVHeads, dim
}

// moveDevice is moveRows on the device: for each buffer, the sources
// into the cache's scratch, then the scratch into the destinations
// (viaScratch).
func (c *kv) moveDevice(cp backend.Copier, moves [][2]int, at func(row, h, dim int) int) error {
	need := 0
	var copies []scratchCopy
	for _, t := range c.stores() {
		runs, run := c.rowRuns(t.dim)
		need = max(need, len(moves)*runs*run)
		sc := scratchCopy{buf: t.buf, in: make([]backend.CopyRange, 0, len(moves)*runs), out: make([]backend.CopyRange, 0, len(moves)*runs)}
		for m, mv := range moves {
			for h := range runs {
				x := (m*runs + h) * run
				sc.in = append(sc.in, backend.CopyRange{Dst: x, Src: at(mv[1], h, t.dim), N: run})
				sc.out = append(sc.out, backend.CopyRange{Dst: at(mv[0], h, t.dim), Src: x, N: run})
			}
		}
		copies = append(copies, sc)
	}
	return c.viaScratch(cp, need, copies)
}

// scratchCopy is one buffer's trip through the cache's scratch: in
// copies ranges of buf into the scratch, then out the scratch into buf.
type scratchCopy struct {
	buf     backend.Buffer
	in, out []backend.CopyRange
}

// viaScratch runs copies in order, each buffer's in and then its out,
// through the cache's scratch grown to need elements (cowMu held
// throughout: one trip at a time). On a backend.Recorder (a GPU) they
// are one recording, waited for once, where each Copy would wait for its
// own (four waits for K and V); the recording is submitted after what
// other steps recorded before it, as a Copy of the backend's own is.
func (c *kv) viaScratch(cp backend.Copier, need int, copies []scratchCopy) (err error) {
	c.cowMu.Lock()
	defer c.cowMu.Unlock()
	if err := c.scratchOf(need); err != nil {
		return err
	}
	if r, ok := c.be.(backend.Recorder); ok {
		rec := r.Begin()
		defer func() {
			// Wait whatever was recorded, and report its errors after
			// the first recorded op's.
			err = errors.Join(err, rec.Wait())
		}()
		cp = rec
	}
	ctx := context.Background()
	for _, sc := range copies {
		if err := cp.Copy(ctx, c.cow, sc.buf, sc.in...); err != nil {
			return err
		}
		if err := cp.Copy(ctx, sc.buf, c.cow, sc.out...); err != nil {
			return err
		}
	}
	return nil
}

// scratchOf makes the cache's scratch (cow) hold n elements at least,
// in its dtype. The caller holds cowMu.
func (c *kv) scratchOf(n int) error {
	if c.cow != nil && c.cow.Len() >= n {
		return nil
	}
	if c.cow != nil {
		c.cow.Release()
		c.cow = nil
	}
	sc, err := c.be.Alloc(c.cfg.DType, n)
	if err != nil {
		return err
	}
	c.cow = sc
	return nil
}

// rowAt locates, for a sequence whose block table is pages, the first
// element of a head's row in a buffer of rows dim wide: pages are
// [page_size, KVH, dim] (BNHD) or [KVH, page_size, dim].
func (p *PagePool) rowAt(pages []int) func(row, h, dim int) int {
	return func(row, h, dim int) int {
		page := p.pageSize * p.cfg.KVHeads * dim
		pg, i := pages[row/p.pageSize], row%p.pageSize
		if p.cfg.Layout == BNHD {
			return pg*page + (i*p.cfg.KVHeads+h)*dim
		}
		return pg*page + (h*p.pageSize+i)*dim
	}
}

// Keep is Seq.Keep for sequence seq of the cache: of its last n rows
// (a draft), the rows rows (indices 0 … n−1, each at most once, in the
// order given) become its next rows, their stored bits copied as they
// are on the device (through the host on a backend that does not copy),
// and the rest are dropped. A sequence out of range, n outside [0,
// Len(seq)] or a row outside the draft or named twice is an error
// wrapping backend.ErrShape, with nothing changed.
func (c *KVCache) Keep(seq, n int, rows []int) error {
	if err := c.live("keep rows of"); err != nil {
		return err
	}
	if seq < 0 || seq >= c.batch {
		return backend.Errorf(backend.ErrShape, "keep rows of sequence %d of a cache of %d", seq, c.batch)
	}
	if err := checkKeep(c.lens[seq], n, rows); err != nil {
		return err
	}
	base := c.lens[seq] - n
	var moves [][2]int
	for t, r := range rows {
		if r != t {
			moves = append(moves, [2]int{base + t, base + r})
		}
	}
	if len(moves) > 0 {
		at := func(row, h, dim int) int { return c.rows(dim).Offset(seq, h, row) }
		if err := c.moveRows(&c.st, moves, at); err != nil {
			return backend.Wrapf(err, "keep %d of sequence %d's last %d rows", len(rows), seq, n)
		}
	}
	c.lens[seq] = base + len(rows)
	return nil
}
