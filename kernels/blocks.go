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
type BlockMask = backend.BlockMask

// MaskBlocks is the block mask of an element-level rule, as
// FlexAttention's create_block_mask makes one from a mask_mod: block
// (I, J) of nq query rows by nk keys is on when keep(i, j) holds for
// some row i and key j in it. It calls keep nq·nk times; the caller
// gives the same rule as a keep-mask (Options.Mask) where it needs the
// element rule inside the blocks, or a causal mask or window that is it.
func MaskBlocks(nq, nk, size int, keep func(i, j int) bool) *BlockMask {
	m := newBlocks(nq, nk, size)
	nb := m.Shape[3]
	for i := range nq {
		for j := range nk {
			if at := i/size*nb + j/size; !m.Keep[at] && keep(i, j) {
				m.Keep[at] = true
			}
		}
	}
	return m
}

// DocumentBlocks is the block mask of document masking over one packed
// sequence: query row i of document d (rows cuQ[d] … cuQ[d+1]−1) sees
// the keys of document d (keys cuK[d] … cuK[d+1]−1; cuK nil: the rows'
// own, self-attention). A block is on when a document has rows and keys
// in it. Documents that start and end on block boundaries make it exact;
// otherwise the blocks that straddle a boundary need the keep-mask of
// the documents inside them (or pack the documents instead, CuSeqlensQ
// and CuSeqlensK: exact, and as cheap).
func DocumentBlocks(cuQ, cuK []int, size int) *BlockMask {
	if cuK == nil {
		cuK = cuQ
	}
	nq, nk := cuQ[len(cuQ)-1], cuK[len(cuK)-1]
	m := newBlocks(nq, nk, size)
	nb := m.Shape[3]
	for d := 0; d+1 < len(cuQ) && d+1 < len(cuK); d++ {
		if cuQ[d] >= cuQ[d+1] || cuK[d] >= cuK[d+1] {
			continue
		}
		for bi := cuQ[d] / size; bi <= (cuQ[d+1]-1)/size; bi++ {
			for bj := cuK[d] / size; bj <= (cuK[d+1]-1)/size; bj++ {
				m.Keep[bi*nb+bj] = true
			}
		}
	}
	return m
}

// PrefixLMBlocks is the block mask of a prefix language model over n
// tokens: every row sees the first prefix keys (bidirectional), and key
// j ≤ i after them (causal). A block is on when it holds a prefix key or
// lies on or below the diagonal. The element rule inside the diagonal
// blocks past the prefix is causal masking's, and inside the prefix it
// sees every key: exact with a keep-mask of the rule, or with Causal
// where the prefix is empty.
func PrefixLMBlocks(n, prefix, size int) *BlockMask {
	return MaskBlocksOf(n, n, size, func(bi, bj int) bool {
		return bj*size < prefix || bj <= bi
	})
}

// StreamingBlocks is the block mask of streaming attention (StreamingLLM:
// attention sinks plus a sliding window) over n tokens: row i sees the
// first sinks keys and the window keys i − window + 1 … i. A block is on
// when it holds a sink key or a key of some row's window. Inside the
// window's blocks, Causal with Window{Left: window − 1, Right: 0} is the
// element rule exactly; the sink keys need a keep-mask where they lie
// outside the window (or sinks a whole number of blocks, whose blocks
// the window's mask would hide: give the rule as a keep-mask then).
func StreamingBlocks(n, sinks, window, size int) *BlockMask {
	return MaskBlocksOf(n, n, size, func(bi, bj int) bool {
		lo, hi := bi*size, min((bi+1)*size, n)-1 // the block's rows
		return bj*size < sinks || bj <= bi && (bj+1)*size-1 >= lo-window+1 && bj*size <= hi
	})
}

// MaskBlocksOf is the block mask whose block (I, J) is on when on(I, J)
// holds, for nq query rows and nk keys in blocks of size: a block-level
// rule (random block sparsity, a model's chosen blocks) in
// ⌈nq/size⌉·⌈nk/size⌉ calls.
func MaskBlocksOf(nq, nk, size int, on func(bi, bj int) bool) *BlockMask {
	m := newBlocks(nq, nk, size)
	nb := m.Shape[3]
	for bi := range m.Shape[2] {
		for bj := range nb {
			m.Keep[bi*nb+bj] = on(bi, bj)
		}
	}
	return m
}

// newBlocks is an all-off block mask [1, 1, ⌈nq/size⌉, ⌈nk/size⌉]; a
// size below 1 leaves it empty for Validate to refuse.
func newBlocks(nq, nk, size int) *BlockMask {
	m := &BlockMask{Size: size, Shape: [4]int{1, 1, 0, 0}}
	if size >= 1 {
		m.Shape[2], m.Shape[3] = (nq+size-1)/size, (nk+size-1)/size
	}
	m.Keep = make([]bool, m.Shape[2]*m.Shape[3])
	return m
}
