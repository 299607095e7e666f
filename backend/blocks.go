package backend

// BlockMask is a keep-mask at the granularity of blocks of Size query
// rows by Size keys (FlexAttention's BlockMask: document masks,
// prefix-LM, streaming, random block sparsity): block (I, J) covers
// query rows I·Size … (I+1)·Size − 1 and keys J·Size … (J+1)·Size − 1 of
// each sequence (the last block of each axis may be partial). A block
// that is off is never computed: not its scores, its exponentials, nor
// its reads of K and V. A block that is on is computed in full under
// whatever else hides keys (key lengths, causal masking, the window, the
// keep-mask and a −Inf bias), so those give the element-level rule
// inside the blocks that straddle it. A row whose blocks are all off
// outputs zeros with LSE −Inf (the sink's logit with a sink), as a fully
// masked row does.
//
// Keep is row-major over Shape, [B or 1, H or 1, ⌈Nq/Size⌉, ⌈Nk/Size⌉]
// (a dimension of 1 broadcasts), indexed by a sequence's own row and key
// numbers when the sequences are packed or paged. The block dimensions
// may stop at the longest sequence's blocks (its query rows, its key
// length: KVLen), which is all a cache's caller knows: a block past them
// holds no row or key. Problem.Validate refuses (ErrShape) a size below
// 1 and a shape or length that does not match. Only Fused takes a block
// mask, on a backend with Caps.Blocks.
type BlockMask struct {
	Size  int
	Shape [4]int
	Keep  []bool
}

// strides are the element strides of Keep over [B, H, blocks of Nq,
// blocks of Nk], 0 on a broadcast dimension: a Mask's over that shape.
func (m *BlockMask) strides() [4]int { return (&Mask{Shape: m.Shape}).Strides() }

// Row returns the blocks of query row i of head h in batch b: the
// ⌈Nk/Size⌉ entries of its block row, key block J at element J.
func (m *BlockMask) Row(b, h, i int) []bool {
	s := m.strides()
	at := b*s[0] + h*s[1] + i/m.Size*s[2]
	return m.Keep[at : at+m.Shape[3]]
}

// On reports whether block mask m keeps element (b, h, i, j): query row
// i's block against key j's.
func (m *BlockMask) On(b, h, i, j int) bool {
	s := m.strides()
	return i/m.Size < m.Shape[2] && j/m.Size < m.Shape[3] && m.Keep[b*s[0]+h*s[1]+i/m.Size*s[2]+j/m.Size*s[3]]
}

// AnyOn reports whether some row i0 … i1−1 of some head h0 … h1−1 of
// batch b has a block on among the keys j0 … j1−1: a tile of those rows
// and keys that m leaves wholly off is skipped.
func (m *BlockMask) AnyOn(b, h0, h1, i0, i1, j0, j1 int) bool {
	if i0 >= i1 || j0 >= j1 {
		return false
	}
	s := m.strides()
	if s[1] == 0 {
		h1 = h0 + 1
	}
	for h := h0; h < h1; h++ {
		for bi := i0 / m.Size; bi <= min((i1-1)/m.Size, m.Shape[2]-1); bi++ {
			row := m.Keep[b*s[0]+h*s[1]+bi*s[2]:]
			for bj := j0 / m.Size; bj <= min((j1-1)/m.Size, m.Shape[3]-1); bj++ {
				if row[bj*s[3]] {
					return true
				}
			}
		}
	}
	return false
}

// validateBlocks checks Blocks against p's sizes.
func (p Problem) validateBlocks() error {
	m := p.Blocks
	if m == nil {
		return nil
	}
	if m.Size < 1 {
		return Errorf(ErrShape, "block mask of blocks of %d: want a size ≥ 1", m.Size)
	}
	// The fewest blocks: the longest sequence's rows and keys.
	rows, keys := 0, 0
	for b := range p.B {
		rows, keys = max(rows, p.QRows(b)), max(keys, p.KVLen(b))
	}
	want := [4]int{p.B, p.H, (p.Nq + m.Size - 1) / m.Size, (p.Nk + m.Size - 1) / m.Size}
	least := [4]int{p.B, p.H, (rows + m.Size - 1) / m.Size, (keys + m.Size - 1) / m.Size}
	for d, n := range m.Shape {
		if n > want[d] || n < least[d] && (d > 1 || n != 1) {
			return Errorf(ErrShape, "block mask of shape %v with blocks of %d: want [B=%d or 1, H=%d or 1, ⌈Nq/%d⌉=%d, ⌈Nk/%d⌉=%d] for Nq=%d Nk=%d",
				m.Shape, m.Size, p.B, p.H, m.Size, want[2], m.Size, want[3], p.Nq, p.Nk)
		}
	}
	if n, ok := CheckedProduct(m.Shape[:]...); !ok || len(m.Keep) != n {
		return Errorf(ErrShape, "block mask of shape %v has %d entries, want %d", m.Shape, len(m.Keep), n)
	}
	return nil
}
