package kernels

import (
	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/operand"
)

// seqs reports whether opts packs sequences or pages the keys.
func (o *Options) seqs() bool {
	return o.CuSeqlensQ != nil || o.CuSeqlensK != nil || o.BlockTable != nil
}

// checkSeqs is Shapes.check for a call with packed sequences or a paged
// cache (Options.CuSeqlensQ, CuSeqlensK, BlockTable): it reads the
// operands' sizes by those rules, checks the lists against them, and
// returns the call with backend.Problem's Packed and Paged set.
//
//	packed Q     [total, H, D], BNHD; B = len(CuSeqlensQ) − 1
//	packed K, V  [totalK, KVH, D|Dv]
//	paged K, V   pools [pages, page_size, KVH, D|Dv] (BNHD) or
//	             [pages, KVH, page_size, D|Dv] (BHND)
//	dense K, V   [B, Nk, KVH, D|Dv] (BNHD, the packed queries' layout)
//	dense Q      [B, Nq, H, D] or [B, H, Nq, D] (with a paged cache)
//
// Nq and Nk are the longest sequence's (FlashAttention's max_seqlen), or
// a table row's pages times page_size for a paged cache.
func (s Shapes) checkSeqs(opts *Options) (*call, error) {
	if err := s.seqLists(opts); err != nil {
		return nil, err
	}
	for i, shape := range [][]int{s.Q, s.K, s.V} {
		if _, err := numElems(shape); err != nil {
			return nil, backend.Wrapf(err, "%s", s.name(i))
		}
	}
	p := backend.Problem{Layout: s.Layout}
	b, h, d, err := s.seqQueries(&p, opts)
	if err != nil {
		return nil, err
	}
	var kv kvDims
	switch {
	case opts.CuSeqlensK != nil:
		kv, err = s.packedKV(&p, opts)
	case opts.BlockTable != nil:
		kv, err = s.pagedKV(&p, opts, b)
	default:
		kv, err = s.denseKV(&p, b)
	}
	if err != nil {
		return nil, err
	}
	if err := checkHeads(s.name(0), s.name(1), s.name(2), h, kv.heads, d, kv.d, kv.dv); err != nil {
		return nil, err
	}
	p.B, p.H, p.KVHeads, p.D, p.Dv = b, h, kv.heads, d, kv.dv
	return s.finish(p, len(s.Q), opts)
}

// kvDims are what K's and V's shapes say of the keys, whatever holds
// them: the KV heads and the head dims of K and V.
type kvDims struct{ heads, d, dv int }

// seqLists refuses lists that do not go together, and a layout they do
// not take.
func (s Shapes) seqLists(opts *Options) error {
	ncuQ, ncuK, ntable := s.seqName(0), s.seqName(1), s.seqName(2)
	cuQ, cuK, table := opts.CuSeqlensQ, opts.CuSeqlensK, opts.BlockTable
	switch {
	case cuK != nil && cuQ == nil:
		return backend.Errorf(backend.ErrShape, "%s packs the keys of packed queries: give %s too", ncuK, ncuQ)
	case cuK != nil && table != nil:
		return backend.Errorf(backend.ErrShape, "%s (packed keys) and %s (a paged cache) both set: give one", ncuK, ntable)
	case cuQ != nil && s.Layout != BNHD:
		return backend.Errorf(backend.ErrShape, "packed %s (%s) is [total, heads, dim]: its layout must be BNHD, not %v", s.name(0), ncuQ, s.Layout)
	case s.Layout != BHND && s.Layout != BNHD:
		return backend.Errorf(backend.ErrShape, "unknown layout %v", s.Layout)
	}
	return nil
}

// wantRank refuses an operand of another rank, saying what it holds.
func wantRank(name string, shape []int, rank int, what string) error {
	if len(shape) != rank {
		return backend.Errorf(backend.ErrShape, "%s has shape %v; %s", name, shape, what)
	}
	return nil
}

// seqQueries reads the queries, packed or dense, setting p's Nq (and
// Packed), and returns B, H and D.
func (s Shapes) seqQueries(p *backend.Problem, opts *Options) (b, h, d int, err error) {
	nq, ncuQ := s.name(0), s.seqName(0)
	cuQ := opts.CuSeqlensQ
	if cuQ == nil {
		if err := wantRank(nq, s.Q, 4, "with a paged cache ("+s.seqName(2)+") the queries are rank 4, [B, Nq, H, D] (BNHD) or [B, H, Nq, D] (BHND), or packed ("+ncuQ+")"); err != nil {
			return 0, 0, 0, err
		}
		b, h, p.Nq, d = operand.Dims(s.Q, s.Layout)
		return b, h, d, nil
	}
	if err := wantRank(nq, s.Q, 3, "packed queries ("+ncuQ+") are rank 3, [total, H, D]"); err != nil {
		return 0, 0, 0, err
	}
	if p.Nq, err = checkCuSeqlens(ncuQ, cuQ, nq, s.Q[0]); err != nil {
		return 0, 0, 0, err
	}
	p.Packed = &backend.Packed{CuQ: cuQ}
	return len(cuQ) - 1, s.Q[1], s.Q[2], nil
}

// packedKV reads packed keys and values ([totalK, KVH, D|Dv]) against
// CuSeqlensK, setting p's Nk and Packed.CuK.
func (s Shapes) packedKV(p *backend.Problem, opts *Options) (kvDims, error) {
	nk, nv, ncuQ, ncuK := s.name(1), s.name(2), s.seqName(0), s.seqName(1)
	cuK := opts.CuSeqlensK
	for i, shape := range [][]int{s.K, s.V} {
		if err := wantRank(s.name(i+1), shape, 3, "packed keys and values ("+ncuK+") are rank 3, [total, KVH, D]"); err != nil {
			return kvDims{}, err
		}
	}
	switch {
	case len(cuK) != len(opts.CuSeqlensQ):
		return kvDims{}, backend.Errorf(backend.ErrShape, "%s has %d entries, %s %d: one entry more than the B sequences each", ncuK, len(cuK), ncuQ, len(opts.CuSeqlensQ))
	case s.V[0] != s.K[0]:
		return kvDims{}, backend.Errorf(backend.ErrShape, "key counts differ: %s has %d rows but %s has %d", nk, s.K[0], nv, s.V[0])
	}
	most, err := checkCuSeqlens(ncuK, cuK, nk, s.K[0])
	if err != nil {
		return kvDims{}, err
	}
	if s.V[1] != s.K[1] {
		return kvDims{}, backend.Errorf(backend.ErrShape, "KV head counts differ: %s has %d heads but %s has %d", nk, s.K[1], nv, s.V[1])
	}
	p.Nk = most
	p.Packed.CuK = cuK
	return kvDims{s.K[1], s.K[2], s.V[2]}, nil
}

// pagedKV reads page pools against the block table and the cache
// lengths (KVLens) of b sequences, setting p's Nk and Paged.
func (s Shapes) pagedKV(p *backend.Problem, opts *Options, b int) (kvDims, error) {
	nq, nk, nv, ntable := s.name(0), s.name(1), s.name(2), s.seqName(2)
	table := opts.BlockTable
	for i, shape := range [][]int{s.K, s.V} {
		if err := wantRank(s.name(i+1), shape, 4, "a paged cache ("+ntable+") is a pool of rank 4, [pages, page_size, KVH, D] (BNHD) or [pages, KVH, page_size, D] (BHND)"); err != nil {
			return kvDims{}, err
		}
	}
	pages, kh, size, kd := operand.Dims(s.K, s.Layout)
	vpages, vh, vsize, vd := operand.Dims(s.V, s.Layout)
	switch {
	case vpages != pages || vsize != size:
		return kvDims{}, backend.Errorf(backend.ErrShape, "page pools differ: %s has %d pages of %d keys, %s %d pages of %d", nk, pages, size, nv, vpages, vsize)
	case vh != kh:
		return kvDims{}, backend.Errorf(backend.ErrShape, "KV head counts differ: %s has %d heads but %s has %d", nk, kh, nv, vh)
	case size < 1:
		return kvDims{}, backend.Errorf(backend.ErrShape, "%s is a pool of pages of %d keys (shape %v); want a page size ≥ 1", nk, size, s.K)
	case len(table) != b:
		return kvDims{}, backend.Errorf(backend.ErrShape, "%s has %d rows for B=%d sequences of %s", ntable, len(table), b, nq)
	}
	per := 0
	if b > 0 {
		per = len(table[0])
	}
	flat := make([]int, 0, b*per)
	for i, row := range table {
		if len(row) != per {
			return kvDims{}, backend.Errorf(backend.ErrShape, "%s row %d has %d entries, row 0 has %d: every row has one sequence's pages, padded to one length", ntable, i, len(row), per)
		}
		flat = append(flat, row...)
	}
	n, ok := backend.CheckedProduct(per, size)
	if !ok {
		return kvDims{}, backend.Errorf(backend.ErrTooLarge, "%s rows of %d pages of %d keys overflow int", ntable, per, size)
	}
	if err := s.cacheLens(opts.KVLens, table, b, pages, size, n); err != nil {
		return kvDims{}, err
	}
	p.Nk = n
	p.Paged = &backend.Paged{PageSize: size, Pages: pages, PerSeq: per, Table: flat}
	return kvDims{kh, kd, vd}, nil
}

// cacheLens checks the cache lengths of b sequences over rows of the
// block table holding n keys each: each length in 0 … n, and each entry
// of the blocks a cache fills naming a page of the pool (backend.Paged's
// rule, checked here to name the lists).
func (s Shapes) cacheLens(lens []int, table [][]int, b, pages, size, n int) error {
	ntable, nlens := s.seqName(2), s.seqName(3)
	if lens != nil && len(lens) != b {
		return backend.Errorf(backend.ErrShape, "%s: %d cache lengths for B=%d sequences", nlens, len(lens), b)
	}
	for i := range b {
		l := n
		if lens != nil {
			l = lens[i]
		}
		if l < 0 || l > n {
			return backend.Errorf(backend.ErrShape, "%s: cache length %d of sequence %d is beyond its %d pages of %d keys (%s rows of %d entries hold 0 … %d keys)",
				nlens, l, i, n/size, size, ntable, n/size, n)
		}
		for blk := range (l + size - 1) / size {
			if e := table[i][blk]; e < 0 || e >= pages {
				return backend.Errorf(backend.ErrShape, "%s: sequence %d block %d (keys %d … %d of its %d) names page %d, want 0 … %d (%s has %d pages)",
					ntable, i, blk, blk*size, min((blk+1)*size, l)-1, l, e, pages-1, s.name(1), pages)
			}
		}
	}
	return nil
}

// denseKV reads dense keys and values of packed queries, [B, Nk, KVH,
// D|Dv], setting p's Nk.
func (s Shapes) denseKV(p *backend.Problem, b int) (kvDims, error) {
	nk, nv := s.name(1), s.name(2)
	for i, shape := range [][]int{s.K, s.V} {
		if err := wantRank(s.name(i+1), shape, 4, "keys and values of packed queries are dense rank 4, [B, Nk, KVH, D], packed (CuSeqlensK) or paged (BlockTable)"); err != nil {
			return kvDims{}, err
		}
	}
	kb, kvh, kn, dk := operand.Dims(s.K, s.Layout)
	vb, vh, vn, vd := operand.Dims(s.V, s.Layout)
	switch {
	case kb != b || vb != b:
		return kvDims{}, backend.Errorf(backend.ErrShape, "batch sizes differ: CuSeqlensQ has B=%d sequences, %s has B=%d, %s B=%d", b, nk, kb, nv, vb)
	case vn != kn:
		return kvDims{}, backend.Errorf(backend.ErrShape, "key counts differ: %s has N=%d keys but %s has N=%d values", nk, kn, nv, vn)
	case vh != kvh:
		return kvDims{}, backend.Errorf(backend.ErrShape, "KV head counts differ: %s has %d heads but %s has %d", nk, kvh, nv, vh)
	}
	p.Nk = kn
	return kvDims{kvh, dk, vd}, nil
}

// checkCuSeqlens checks a cu_seqlens list against the total rows of the
// tensor it packs: at least one entry, from 0, never decreasing, ending
// at total. It returns the longest sequence.
func checkCuSeqlens(name string, cu []int, tensor string, total int) (int, error) {
	if len(cu) == 0 {
		return 0, backend.Errorf(backend.ErrShape, "%s is empty: it needs B+1 entries, 0 first and %s's %d rows last", name, tensor, total)
	}
	if cu[0] != 0 {
		return 0, backend.Errorf(backend.ErrShape, "%s starts at %d, want 0", name, cu[0])
	}
	most := 0
	for i := 1; i < len(cu); i++ {
		if cu[i] < cu[i-1] {
			return 0, backend.Errorf(backend.ErrShape, "%s decreases: entry %d is %d, entry %d is %d (sequence %d would have %d rows)",
				name, i-1, cu[i-1], i, cu[i], i-1, cu[i]-cu[i-1])
		}
		most = max(most, cu[i]-cu[i-1])
	}
	if last := cu[len(cu)-1]; last != total {
		return 0, backend.Errorf(backend.ErrShape, "%s ends at %d but %s has %d rows: the last entry is the total", name, last, tensor, total)
	}
	return most, nil
}

// seqsFinite is checkFinite for a call with packed sequences or a paged
// cache: Q and packed or dense K and V are checked whole (every row of a
// packed tensor belongs to a sequence), a paged pool only where the
// table names a page for a key below its sequence's length, the rows
// Fused reads; the rest of a pool may hold anything.
func seqsFinite(p backend.Problem, q, k, v, bias *Tensor) error {
	if p.Paged == nil {
		return checkFinite(q, k, v, bias)
	}
	if err := checkFinite(q, nil, nil, bias); err != nil {
		return err
	}
	pg := p.Paged
	ops := []struct {
		name string
		t    *Tensor
		rows backend.Rows
		dim  int
	}{{"K", k, p.KRowsOf(), p.D}, {"V", v, p.VRowsOf(), p.Dv}}
	read := make([]bool, pg.Pages*pg.PageSize)
	for b := range p.B {
		for j := range p.KVLen(b) {
			page := pg.Table[b*pg.PerSeq+j/pg.PageSize]
			slot := page*pg.PageSize + j%pg.PageSize
			if read[slot] {
				continue // a shared page, checked already
			}
			read[slot] = true
			for _, op := range ops {
				for h := range p.KVHeads {
					off := op.rows.Offset(b, h, j)
					if i, x := firstBadIn(op.t, off, off+op.dim, false); i >= 0 {
						return backend.Errorf(backend.ErrNonFinite, "%s of shape %v holds %v at %v (sequence %d's key %d, on page %d)",
							op.name, op.t.Shape, x, unravel(i, op.t.Shape), b, j, page)
					}
				}
			}
		}
	}
	return nil
}
