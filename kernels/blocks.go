package kernels

import "github.com/attn-go/attn/backend"

// BlockMask is a keep-mask at the granularity of blocks of Size query
// rows by Size keys (Options.Blocks, AttendOptions.Blocks; see
// backend.BlockMask): a block that is off is never computed. The
// helpers below build the common ones, [1, 1, ⌈Nq/Size⌉, ⌈Nk/Size⌉]
// (shared by every batch and head), at block granularity: a block is on
// when some element of it is kept. Inside the blocks the rule's edge
// crosses, the element-level rule is the call's other masks (Causal, a
// Window, a keep-mask): each helper says which reproduce it exactly.
//
// Every helper returns an error wrapping backend.ErrShape, naming the
// argument and its value, for a bad argument (a size, row or key count
// below 1, a negative count, a nil rule, a cumulative list that is
// empty, does not start at 0 or decreases), and one wrapping
// backend.ErrTooLarge for a mask of more blocks than an int or the
// memory available holds (NewTensor's rule); it never panics on its
// arguments. Its fields:
//
//	Size  int
//	Shape [4]int // [B|1, H|1, ⌈Nq/Size⌉, ⌈Nk/Size⌉]
//	Keep  []bool // row-major over Shape
//
// Shape is a [4]int where Mask's is a right-aligned []int: a BlockMask
// is backend.BlockMask, which the backend reads as it is, with all four
// dimensions (Mask has why).
type BlockMask = backend.BlockMask

// ElementBlocks is the block mask of an element-level rule (keep(i, j)
// for query row i and key j), as FlexAttention's create_block_mask
// makes one from a mask_mod; GridBlocks takes a rule over the blocks
// themselves. Block (I, J) of nq query rows by nk keys is on when
// keep(i, j) holds for some row i and key j in it. It calls keep at
// most nq·nk times (an nq·nk past an int is ErrTooLarge); the caller
// gives the same rule as a keep-mask (Options.Mask) where it needs the
// element rule inside the blocks, or a causal mask or window that is
// it.
func ElementBlocks(nq, nk, size int, keep func(i, j int) bool) (*BlockMask, error) {
	if keep == nil {
		return nil, backend.Errorf(backend.ErrShape, "ElementBlocks: keep is nil")
	}
	if err := checkBlocks("ElementBlocks", nq, nk, size); err != nil {
		return nil, err
	}
	if _, ok := backend.CheckedProduct(nq, nk); !ok {
		return nil, backend.Errorf(backend.ErrTooLarge, "ElementBlocks: nq=%d × nk=%d elements overflow int", nq, nk)
	}
	m, err := newBlocks("ElementBlocks", nq, nk, size)
	if err != nil {
		return nil, err
	}
	nb := m.Shape[3]
	for i := range nq {
		for j := range nk {
			if at := i/size*nb + j/size; !m.Keep[at] && keep(i, j) {
				m.Keep[at] = true
			}
		}
	}
	return m, nil
}

// DocumentBlocks is the block mask of document masking over one packed
// sequence: query row i of document d (rows cuQ[d] … cuQ[d+1]−1) sees
// the keys of document d (keys cuK[d] … cuK[d+1]−1; cuK nil: the rows'
// own, self-attention). A block is on when a document has rows and keys
// in it. The lists are cu_seqlens: they start at 0, never decrease and
// end at the rows' (keys') total, at least 1; cuK has cuQ's length.
//
// The mask it returns is exact on its own: every block it keeps holds
// the rows and keys of one document alone. So a document with rows and
// keys must start on a block boundary and end on one (or at the total:
// the last block may be partial), on both axes; a document that starts
// or ends inside a block is refused (ErrShape, naming the document and
// its offset), where its blocks would be kept whole and let it see the
// next document's keys. Documents of any lengths are exact, and as
// cheap, packed instead (Options.CuSeqlensQ and CuSeqlensK), or as
// ElementBlocks of the document rule with the same rule as a keep-mask
// (Options.Mask). With cuK nil, Causal on top of it is the causal
// document mask exactly.
func DocumentBlocks(cuQ, cuK []int, size int) (*BlockMask, error) {
	if size < 1 {
		return nil, backend.Errorf(backend.ErrShape, "DocumentBlocks: blocks of %d: want a size ≥ 1", size)
	}
	if err := checkCu("cuQ", "row", cuQ); err != nil {
		return nil, err
	}
	if cuK == nil {
		cuK = cuQ
	} else {
		if len(cuK) != len(cuQ) {
			return nil, backend.Errorf(backend.ErrShape, "DocumentBlocks: cuK has %d offsets (%d documents), cuQ %d (%d documents)", len(cuK), len(cuK)-1, len(cuQ), len(cuQ)-1)
		}
		if err := checkCu("cuK", "key", cuK); err != nil {
			return nil, err
		}
	}
	for d := range len(cuQ) - 1 {
		if cuQ[d] == cuQ[d+1] || cuK[d] == cuK[d+1] {
			continue // no block holds it: it sees nothing or is seen by nothing
		}
		if err := checkEdges("cuQ", "row", cuQ, d, size); err != nil {
			return nil, err
		}
		if err := checkEdges("cuK", "key", cuK, d, size); err != nil {
			return nil, err
		}
	}
	m, err := newBlocks("DocumentBlocks", cuQ[len(cuQ)-1], cuK[len(cuK)-1], size)
	if err != nil {
		return nil, err
	}
	nb := m.Shape[3]
	for d := range len(cuQ) - 1 {
		if cuQ[d] == cuQ[d+1] || cuK[d] == cuK[d+1] {
			continue
		}
		for bi := cuQ[d] / size; bi <= (cuQ[d+1]-1)/size; bi++ {
			for bj := cuK[d] / size; bj <= (cuK[d+1]-1)/size; bj++ {
				m.Keep[bi*nb+bj] = true
			}
		}
	}
	return m, nil
}

// checkCu checks cu, DocumentBlocks's list called name of what (rows or
// keys): cu_seqlens of at least one document and one row.
func checkCu(name, what string, cu []int) error {
	if len(cu) < 2 {
		return backend.Errorf(backend.ErrShape, "DocumentBlocks: %s %v has %d offsets: want at least 2 (0, then each document's end)", name, cu, len(cu))
	}
	if cu[0] != 0 {
		return backend.Errorf(backend.ErrShape, "DocumentBlocks: %s[0] = %d: want 0", name, cu[0])
	}
	for d := 1; d < len(cu); d++ {
		if cu[d] < cu[d-1] {
			return backend.Errorf(backend.ErrShape, "DocumentBlocks: %s[%d] = %d after %s[%d] = %d: want offsets that never decrease", name, d, cu[d], name, d-1, cu[d-1])
		}
	}
	if total := cu[len(cu)-1]; total < 1 {
		return backend.Errorf(backend.ErrShape, "DocumentBlocks: %s ends at %d: want at least 1 %s", name, total, what)
	}
	return nil
}

// checkEdges refuses document d of cu (DocumentBlocks's list called
// name, of what) where it starts or ends inside a block of size.
func checkEdges(name, what string, cu []int, d, size int) error {
	at, edge := d, "starts"
	switch {
	case cu[d]%size != 0:
	case cu[d+1]%size != 0 && cu[d+1] != cu[len(cu)-1]:
		at, edge = d+1, "ends"
	default:
		return nil
	}
	return backend.Errorf(backend.ErrShape, "DocumentBlocks: document %d (%ss %d … %d) %s at %s %d (%s[%d]), inside block %d of %d %ss, "+
		"which would hold two documents' %ss; start and end documents on block boundaries, or pack them (Options.CuSeqlensQ, CuSeqlensK), or give ElementBlocks's rule as a keep-mask too (Options.Mask)",
		d, what, cu[d], cu[d+1]-1, edge, what, cu[at], name, at, cu[at]/size, size, what, what)
}

// PrefixLMBlocks is the block mask of a prefix language model over n
// tokens: every row sees the first prefix keys (bidirectional; a prefix
// past n is every key), and key j ≤ i after them (causal). A block is on
// when it holds a prefix key or lies on or below the diagonal. The
// element rule inside the diagonal blocks past the prefix is causal
// masking's, and inside the prefix it sees every key: exact with a
// keep-mask of the rule, or with Causal where the prefix is empty.
func PrefixLMBlocks(n, prefix, size int) (*BlockMask, error) {
	if n < 1 {
		return nil, backend.Errorf(backend.ErrShape, "PrefixLMBlocks: n = %d tokens: want ≥ 1", n)
	}
	if prefix < 0 {
		return nil, backend.Errorf(backend.ErrShape, "PrefixLMBlocks: prefix %d: want ≥ 0", prefix)
	}
	return blocksOf("PrefixLMBlocks", n, n, size, func(r, k span) bool {
		return k.lo < prefix || k.lo <= r.hi
	})
}

// StreamingBlocks is the block mask of streaming attention (StreamingLLM:
// attention sinks plus a sliding window) over n tokens: row i sees the
// first sinks keys (all of them where sinks ≥ n) and the window keys
// i − window + 1 … i, window ≥ 1 (the row's own key at least). A block
// is on when it holds a sink key or a key of some row's window. Inside
// the window's blocks, Causal with Window{Left: window − 1, Right: 0} is
// the element rule exactly; the sink keys need a keep-mask where they
// lie outside the window (or sinks a whole number of blocks, whose
// blocks the window's mask would hide: give the rule as a keep-mask
// then).
func StreamingBlocks(n, sinks, window, size int) (*BlockMask, error) {
	if n < 1 {
		return nil, backend.Errorf(backend.ErrShape, "StreamingBlocks: n = %d tokens: want ≥ 1", n)
	}
	if sinks < 0 {
		return nil, backend.Errorf(backend.ErrShape, "StreamingBlocks: sinks %d: want ≥ 0", sinks)
	}
	if window < 1 {
		return nil, backend.Errorf(backend.ErrShape, "StreamingBlocks: window %d: want ≥ 1 (a row sees its own key; Window{Left: window − 1} is the rule)", window)
	}
	return blocksOf("StreamingBlocks", n, n, size, func(r, k span) bool {
		// Some pair with 0 ≤ i − j < window: the block's differences
		// i − j run from r.lo − k.hi to r.hi − k.lo.
		return k.lo < sinks || k.lo <= r.hi && r.lo-k.hi < window
	})
}

// GridBlocks is the block mask whose block (I, J) of the block grid is
// on when on(I, J) holds, for nq query rows and nk keys in blocks of
// size: a block-level rule (random block sparsity, a model's chosen
// blocks) in ⌈nq/size⌉·⌈nk/size⌉ calls; ElementBlocks takes a rule over
// rows and keys.
func GridBlocks(nq, nk, size int, on func(bi, bj int) bool) (*BlockMask, error) {
	if on == nil {
		return nil, backend.Errorf(backend.ErrShape, "GridBlocks: on is nil")
	}
	m, err := newBlocks("GridBlocks", nq, nk, size)
	if err != nil {
		return nil, err
	}
	nb := m.Shape[3]
	for bi := range m.Shape[2] {
		for bj := range nb {
			m.Keep[bi*nb+bj] = on(bi, bj)
		}
	}
	return m, nil
}

// span is the rows (or keys) lo … hi of one block.
type span struct{ lo, hi int }

// blocksOf is the block mask whose block is on when on holds for its
// rows and keys, what naming the helper in its errors.
func blocksOf(what string, nq, nk, size int, on func(rows, keys span) bool) (*BlockMask, error) {
	m, err := newBlocks(what, nq, nk, size)
	if err != nil {
		return nil, err
	}
	nb := m.Shape[3]
	for bi := range m.Shape[2] {
		lo := bi * size
		r := span{lo, lo + min(size, nq-lo) - 1} // no overflow past nq
		for bj := range nb {
			lo := bj * size
			m.Keep[bi*nb+bj] = on(r, span{lo, lo + min(size, nk-lo) - 1})
		}
	}
	return m, nil
}

// checkBlocks is newBlocks's error for nq, nk or size below 1; what
// names the helper.
func checkBlocks(what string, nq, nk, size int) error {
	if nq < 1 || nk < 1 || size < 1 {
		return backend.Errorf(backend.ErrShape, "%s: %d query rows, %d keys, blocks of %d: want each ≥ 1", what, nq, nk, size)
	}
	return nil
}

// newBlocks is an all-off block mask [1, 1, ⌈nq/size⌉, ⌈nk/size⌉], or
// checkBlocks's error, or ErrTooLarge for a mask that an int or the
// memory available cannot hold; what names the helper.
func newBlocks(what string, nq, nk, size int) (*BlockMask, error) {
	if err := checkBlocks(what, nq, nk, size); err != nil {
		return nil, err
	}
	rows, cols := (nq-1)/size+1, (nk-1)/size+1 // ⌈n/size⌉ without n+size overflowing
	n, ok := backend.CheckedProduct(rows, cols)
	if !ok {
		return nil, backend.Errorf(backend.ErrTooLarge, "%s: %d × %d blocks of %d (nq=%d, nk=%d) overflow int", what, rows, cols, size, nq, nk)
	}
	if why := hostRoom(n, 1); why != "" {
		return nil, backend.Errorf(backend.ErrTooLarge, "%s: a block mask of %d × %d blocks of %d (nq=%d, nk=%d) %s", what, rows, cols, size, nq, nk, why)
	}
	return &BlockMask{Size: size, Shape: [4]int{1, 1, rows, cols}, Keep: make([]bool, n)}, nil
}
