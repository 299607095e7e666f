package backend

// Packed and Paged let one Fused call attend many sequences of different
// lengths, as a server decoding them together does: Packed lays the
// sequences' rows end to end (FlashAttention's varlen API, cu_seqlens),
// Paged reads each sequence's keys and values from a shared pool of
// fixed-size pages through a block table (vLLM's paged attention,
// FlashAttention's block_table). Both change only where rows live and
// how many there are; every variant, mask and bound means what it means
// for B separate problems of those lengths.

// Packed holds B sequences' rows end to end. Sequence b's query rows are
// rows CuQ[b] … CuQ[b+1]−1 of Q and O, and (when CuK is set) its key rows
// are rows CuK[b] … CuK[b+1]−1 of K and V. A row holds every head's
// vector, [total, heads, dim], so Packed needs the BNHD layout: Q and O
// are [CuQ[B], H, D|Dv], K and V [CuK[B], KVHeads, D|Dv]. Each list has
// B+1 entries, starts at 0 and never decreases. Nq and Nk bound the
// lengths (FlashAttention's max_seqlen): a bias or keep-mask still
// broadcasts over [B, H, Nq, Nk], indexed by a sequence's own row and key
// numbers.
//
// Sequence b has QRows(b) = CuQ[b+1] − CuQ[b] queries and KVLen(b) =
// CuK[b+1] − CuK[b] keys, and its causal alignment is bottom-right,
// KVLen(b) − QRows(b), unless CausalOffset says otherwise. CuK nil means
// K and V are not packed: dense [B, KVHeads, Nk, D] with the key lengths
// of KVLens (or Nk), or paged (Paged). The LSE of a packed problem is
// laid out [H, CuQ[B]].
type Packed struct {
	CuQ, CuK []int
}

// Paged reads K and V from a pool of Pages pages of PageSize keys each:
// key j of sequence b is row j mod PageSize of page Table[b·PerSeq +
// j/PageSize]. The pool is [Pages, PageSize, KVHeads, D|Dv] under BNHD
// (FlashAttention's layout) and [Pages, KVHeads, PageSize, D|Dv] under
// BHND. Sequence b has KVLen(b) keys (KVLens, cache lengths; Nk when
// KVLens is nil), at most Nk ≤ PerSeq·PageSize; the table entries of its
// first ⌈KVLen(b)/PageSize⌉ blocks must name pages of the pool, and the
// rest are not read (a server pads them, with −1 say). Sequences may
// share pages (a common prefix); no op writes K or V.
type Paged struct {
	PageSize int
	Pages    int
	PerSeq   int
	Table    []int
}

// QRows is batch b's query count: CuQ[b+1] − CuQ[b] when packed, else
// Nq.
func (p Problem) QRows(b int) int {
	if p.Packed != nil {
		return p.Packed.CuQ[b+1] - p.Packed.CuQ[b]
	}
	return p.Nq
}

// TotalQ is the number of query rows per head over the batch: CuQ[B]
// when packed, else B·Nq.
func (p Problem) TotalQ() int {
	if p.Packed != nil {
		return p.Packed.CuQ[p.B]
	}
	return p.B * p.Nq
}

// packedK reports whether K and V are packed (Packed with CuK).
func (p Problem) packedK() bool { return p.Packed != nil && p.Packed.CuK != nil }

// Rows locates the rows of one operand: row i of head h in batch b
// starts at element Offset(b, h, i) and its elements are contiguous.
// Dense operands are Strides alone; packed ones add each sequence's
// first row; paged ones find the row's page through the table.
type Rows struct {
	Strides
	// Cu, when set, is the packed operand's sequence starts: batch b's
	// row i is row Cu[b] + i (Batch is 0 then).
	Cu []int
	// Pages, when set, is the paged operand's pool: Strides locate a row
	// within a page (Batch is the page's size in elements).
	Pages *Paged
}

// Offset is the index of element 0 of row i of head h in batch b.
func (r Rows) Offset(b, h, i int) int {
	switch {
	case r.Cu != nil:
		return r.Strides.Offset(0, h, r.Cu[b]+i)
	case r.Pages != nil:
		ps := r.Pages.PageSize
		page := r.Pages.Table[b*r.Pages.PerSeq+i/ps]
		return r.Strides.Offset(page, h, i%ps)
	}
	return r.Strides.Offset(b, h, i)
}

// Run is how many rows from row i of batch b on lie at one stride
// (Strides.Row) from each other: up to the end of i's page when paged,
// else all of them (math.MaxInt).
func (r Rows) Run(i int) int {
	if r.Pages != nil {
		return r.Pages.PageSize - i%r.Pages.PageSize
	}
	return maxRun
}

const maxRun = int(^uint(0) >> 1)

// QRowsOf locates the rows of Q, and ORows those of O.
// Q, K and V follow their Views entries when set.
func (p Problem) QRowsOf() Rows { return p.rowsOf(p.H, p.Nq, p.D, false).viewed(p.view(0)) }

// ORowsOf locates the rows of O.
func (p Problem) ORowsOf() Rows { return p.rowsOf(p.H, p.Nq, p.Dv, false) }

// KRowsOf locates the rows of K.
func (p Problem) KRowsOf() Rows { return p.rowsOf(p.KVHeads, p.Nk, p.D, true).viewed(p.view(1)) }

// VRowsOf locates the rows of V: K's when VFromK.
func (p Problem) VRowsOf() Rows {
	if p.VFromK {
		return p.KRowsOf()
	}
	return p.rowsOf(p.KVHeads, p.Nk, p.Dv, true).viewed(p.view(2))
}

// viewed is r with the strides of a Views entry s, when s is set; a
// packed operand keeps Batch 0 (its rows are found through Cu).
func (r Rows) viewed(s *Strides) Rows {
	if s == nil {
		return r
	}
	r.Strides = *s
	if r.Cu != nil {
		r.Batch = 0
	}
	return r
}

func (p Problem) rowsOf(heads, n, dim int, kv bool) Rows {
	switch {
	case kv && p.Paged != nil:
		return Rows{Strides: TensorStrides(p.Layout, heads, p.Paged.PageSize, dim), Pages: p.Paged}
	case kv && p.packedK():
		return Rows{Strides: TensorStrides(BNHD, heads, 0, dim), Cu: p.Packed.CuK}
	case !kv && p.Packed != nil:
		return Rows{Strides: TensorStrides(BNHD, heads, 0, dim), Cu: p.Packed.CuQ}
	}
	return Rows{Strides: TensorStrides(p.Layout, heads, n, dim)}
}

// LSEOffset is the index of query row i of head h in batch b in the LSE:
// [B, H, Nq], or [H, CuQ[B]] when packed.
func (p Problem) LSEOffset(b, h, i int) int {
	if p.Packed != nil {
		return h*p.Packed.CuQ[p.B] + p.Packed.CuQ[b] + i
	}
	return (b*p.H+h)*p.Nq + i
}

// validateSeqs checks Packed and Paged against p's sizes (after the
// sizes themselves and the key lengths). The errors wrap ErrShape and
// name the sizes and the entry.
func (p Problem) validateSeqs() error {
	if pk := p.Packed; pk != nil {
		if p.Layout != BNHD {
			return Errorf(ErrShape, "packed sequences are [total, heads, dim]: the layout must be BNHD, not %v", p.Layout)
		}
		if err := checkCu("cu_seqlens_q", pk.CuQ, p.B, p.Nq, "Nq"); err != nil {
			return err
		}
		if pk.CuK != nil {
			if err := checkCu("cu_seqlens_k", pk.CuK, p.B, p.Nk, "Nk"); err != nil {
				return err
			}
			if p.KVLens != nil {
				return Errorf(ErrShape, "packed keys (cu_seqlens_k) and key lengths (KVLens) both set: give one")
			}
			if p.Paged != nil {
				return Errorf(ErrShape, "packed keys (cu_seqlens_k) and a paged cache both set: give one")
			}
		}
	}
	if pg := p.Paged; pg != nil {
		switch {
		case pg.PageSize < 1 || pg.Pages < 0 || pg.PerSeq < 0:
			return Errorf(ErrShape, "paged cache: page size %d, %d pages, %d blocks a sequence: want page size ≥ 1 and counts ≥ 0",
				pg.PageSize, pg.Pages, pg.PerSeq)
		case len(pg.Table) != p.B*pg.PerSeq:
			return Errorf(ErrShape, "block table: %d entries for B=%d sequences of %d blocks", len(pg.Table), p.B, pg.PerSeq)
		}
		if cap, ok := CheckedProduct(pg.PerSeq, pg.PageSize); !ok || p.Nk > cap {
			return Errorf(ErrShape, "paged cache: Nk=%d keys but %d blocks of %d keys a sequence", p.Nk, pg.PerSeq, pg.PageSize)
		}
		if _, ok := CheckedProduct(pg.Pages, pg.PageSize, p.KVHeads, max(p.D, p.Dv)); !ok {
			return Errorf(ErrTooLarge, "paged pool of %d pages of %d keys × %d heads × %d has more elements than fit in an int",
				pg.Pages, pg.PageSize, p.KVHeads, max(p.D, p.Dv))
		}
		for b := range p.B {
			n := p.KVLen(b)
			for blk := range (n + pg.PageSize - 1) / pg.PageSize {
				if e := pg.Table[b*pg.PerSeq+blk]; e < 0 || e >= pg.Pages {
					return Errorf(ErrShape, "block table: sequence %d block %d (keys %d … %d of its %d) names page %d, want 0 … %d",
						b, blk, blk*pg.PageSize, min((blk+1)*pg.PageSize, n)-1, n, e, pg.Pages-1)
				}
			}
		}
	}
	return nil
}

// checkCu checks a cu_seqlens list: B+1 entries, from 0, non-decreasing,
// no step above limit.
func checkCu(name string, cu []int, b, limit int, limitName string) error {
	if len(cu) != b+1 {
		return Errorf(ErrShape, "%s: %d entries for B=%d sequences, want %d", name, len(cu), b, b+1)
	}
	if cu[0] != 0 {
		return Errorf(ErrShape, "%s starts at %d, want 0", name, cu[0])
	}
	for i := range b {
		if n := cu[i+1] - cu[i]; n < 0 || n > limit {
			return Errorf(ErrShape, "%s: sequence %d has %d rows (%d … %d), want 0 … %s=%d",
				name, i, n, cu[i], cu[i+1], limitName, limit)
		}
	}
	return nil
}
