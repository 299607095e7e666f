package backend

import (
	"fmt"
	"math"
)

// Layout is the memory order of Q, K, V and O. Scores, weights, masks and
// LSE are always [B, H, Nq, Nk] (or [B, H, Nq]) whatever the layout.
type Layout int

// The layouts. Both are dense row-major float32.
const (
	// BHND is [batch, head, token, dim]: one head's rows are contiguous.
	BHND Layout = iota
	// BNHD is [batch, token, head, dim]: what most model code stores, the
	// heads of one token contiguous.
	BNHD
)

func (l Layout) String() string {
	switch l {
	case BHND:
		return "BHND"
	case BNHD:
		return "BNHD"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// Problem is the shape of one attention call, shared by every op.
//
// Query head h reads key/value head h/(H/KVHeads) (GQA; MQA when KVHeads
// is 1).
//
// Positions: query row i of batch b sits at key position a_b + i, where
// the alignment a_b is *CausalOffset when that is set and otherwise
// KVLen(b) − Nq (bottom-right: the last query sits at the last valid key).
// Causal masking, the sliding window and ALiBi all measure from there.
// With Nq == Nk and no key lengths, causal masking is the usual lower
// triangle, and a single decoding query (Nq = 1) sees every key.
//
// A zero KVHeads, Dv or Scale means its default, as everywhere in attn
// (see the package doc): KVHeads = H, Dv = D, Scale = 1/√D. Every op
// resolves them (Resolved) before it reads the problem.
type Problem struct {
	B, H, KVHeads int
	Nq, Nk        int
	D, Dv         int // head dim of Q and K; head dim of V and O
	Layout        Layout
	Scale         float32 // multiplies Q·Kᵀ; 0 means 1/√D
	// Causal hides key j from query row i when j > a_b + i.
	Causal bool
	Variants
	// Packed, when set, lays B sequences of different lengths end to end
	// (cu_seqlens); Paged, when set, reads K and V from a paged pool
	// through a block table (see seqs.go). Only Fused takes them, on a
	// backend with Caps.Seqs; the staged ops refuse them.
	Packed *Packed
	Paged  *Paged
	// Views, when set, gives Q, K or V strides of their own (see
	// Views); only a backend with Caps.Strides takes them.
	Views *Views
	// Scales, when set, multiply the stored K and V per KV head (an fp8
	// cache's k_scale and v_scale); only Fused takes them.
	Scales *Scales
	// VFromK, when set, takes V from K: V's row j is the first Dv
	// columns of K's row j (Dv ≤ D), read from K's buffer at K's strides
	// (packed, paged and strided alike), as a multi-head latent attention
	// (MLA) cache stores one latent row a token (DeepSeek V2/V3: D = 576,
	// Dv = 512). The ops' V argument is then K's buffer itself; no V is
	// stored. An 8-bit K needs Dv a multiple of its block, and where K
	// has scales (Scales.K), Scales.V must hold the same values: V is
	// K's values. Only a backend with Caps.VFromK takes it.
	VFromK bool
	// Indices, when set, names for each query row the keys it attends
	// (sparse attention over chosen keys: DeepSeek's indexer, NSA's
	// selected blocks): see Indices. Only Fused takes them, through
	// attn's package internal/lower on a backend with Caps.Indices.
	Indices *Indices
	// Blocks, when set, is a block-sparse keep-mask (see BlockMask):
	// blocks of query rows and keys that are off are never computed.
	// Only Fused takes it, on a backend with Caps.Blocks.
	Blocks *BlockMask
}

// Variants are the score modifications of today's models beyond scale,
// bias and masks. The zero value is none of them. For query row i of
// batch b at position t = a_b + i (see Problem), with the scaled score
// s = scale·q_i·k_j:
//
//	s  → Softcap·tanh(s/Softcap)            when Softcap > 0
//	s  → s + bias[b,h,i,j] − ALiBi[h]·|t − j|
//	key j is hidden when j ≥ KVLen(b), when causal and j > t, outside
//	the window [t − Left, t + Right], or where the keep-mask is 0
//	softmax denominator += exp(Sinks[h])
//
// Key tiles that every row of a tile hides by position (causal, window,
// key length) are skipped, so a window of W keys costs O(Nq·W).
type Variants struct {
	// CausalOffset, when set, puts query row i at key position
	// *CausalOffset + i in every batch, and implies Causal: query i sees
	// key j iff j ≤ i + *CausalOffset. 0 is top-left alignment (ONNX's
	// is_causal without a cache); a negative offset may leave rows that
	// see no key.
	CausalOffset *int
	// Window, when set, is a sliding window around each query's position.
	Window *Window
	// Softcap, when > 0, caps the scaled scores at ±Softcap with
	// Softcap·tanh(s/Softcap), before the bias, ALiBi and masks (Gemma 2,
	// ONNX's softcap). 0 is none.
	Softcap float32
	// ALiBi, when set, holds one slope m_h per query head ([H]); the
	// score gains −m_h·|t − j|, computed in the kernel.
	ALiBi []float32
	// Sinks, when set, holds one sink logit per query head ([H]): a
	// virtual key with no value whose exp(Sinks[h]) joins the softmax
	// denominator (gpt-oss). The LSE includes it; a row that sees no key
	// outputs zeros with LSE = Sinks[h].
	Sinks []float32
	// KVLens, when set, holds each batch's valid key count ([B], each in
	// [0, Nk]): keys j ≥ KVLens[b] are hidden (key padding; ONNX's
	// nonpad_kv_seqlen), and the default alignment is KVLens[b] − Nq.
	KVLens []int
}

// Window is a sliding window: query row i of batch b, at key position
// t = a_b + i (see Problem), sees key j only when
//
//	t − Left ≤ j ≤ t + Right
//
// A side of −1 is unbounded. {Left: W−1, Right: 0} with Causal is the
// causal window of W keys (Mistral's sliding window).
type Window struct {
	Left, Right int
}

// Any reports whether v sets any variant.
func (v Variants) Any() bool {
	return v.CausalOffset != nil || v.Window != nil || v.Softcap != 0 ||
		v.ALiBi != nil || v.Sinks != nil || v.KVLens != nil
}

// ScoreStage is how far Backend.Scores carries the scores: each stage is
// the one before it plus one step.
type ScoreStage int

// The score stages. The zero value, StageBiased, is what Softmax reads.
const (
	// StageBiased is the capped scores plus the bias and ALiBi.
	StageBiased ScoreStage = iota
	// StageRaw is scale·Q·Kᵀ.
	StageRaw
	// StageCapped is the raw scores after softcap (the raw scores when
	// there is no softcap).
	StageCapped
	// StageMasked is the biased scores with every hidden key −Inf: by
	// position (causal, window, key length) or by the keep-mask.
	StageMasked
)

func (s ScoreStage) String() string {
	switch s {
	case StageBiased:
		return "biased"
	case StageRaw:
		return "raw"
	case StageCapped:
		return "capped"
	case StageMasked:
		return "masked"
	}
	return fmt.Sprintf("ScoreStage(%d)", int(s))
}

// ParseScoreStage reads "raw", "capped", "biased" or "masked".
func ParseScoreStage(s string) (ScoreStage, error) {
	for _, st := range []ScoreStage{StageRaw, StageCapped, StageBiased, StageMasked} {
		if s == st.String() {
			return st, nil
		}
	}
	return StageBiased, Errorf(ErrShape, "unknown score stage %q (want raw, capped, biased or masked)", s)
}

// Resolved returns p with its zero defaults filled in:
//
//	KVHeads 0 → H,  Dv 0 → D,  Scale 0 → 1/√D,  CausalOffset set → Causal
//
// Negative sizes and a non-finite scale are left for Validate to report.
func (p Problem) Resolved() Problem {
	if p.KVHeads == 0 {
		p.KVHeads = p.H
	}
	if p.Dv == 0 {
		p.Dv = p.D
	}
	if p.Scale == 0 && p.D > 0 {
		p.Scale = float32(1 / math.Sqrt(float64(p.D)))
	}
	if p.CausalOffset != nil {
		p.Causal = true
	}
	return p
}

// KVLen is batch b's valid key count: KVLens[b], the length of its
// packed keys (Packed.CuK), or Nk.
func (p Problem) KVLen(b int) int {
	switch {
	case p.KVLens != nil:
		return p.KVLens[b]
	case p.packedK():
		return p.Packed.CuK[b+1] - p.Packed.CuK[b]
	}
	return p.Nk
}

// Align is a_b, the key position of batch b's query row 0:
// *CausalOffset, or KVLen(b) − QRows(b) (bottom-right).
func (p Problem) Align(b int) int {
	if p.CausalOffset != nil {
		return *p.CausalOffset
	}
	return p.KVLen(b) - p.QRows(b)
}

// KeyRange is the range [lo, hi) of keys that query row i of batch b may
// see by position: below its key length, not after it when causal, inside
// its window. The keep-mask, a −Inf bias and a −Inf score hide more keys
// inside the range; none outside it is ever seen. 0 ≤ lo ≤ hi ≤ Nk, and
// both are non-decreasing in i, so the keys a tile of rows i0 … i1 may
// see lie in [KeyRange(b, i0).lo, KeyRange(b, i1).hi).
func (p Problem) KeyRange(b, i int) (lo, hi int) {
	hi = p.KVLen(b)
	if !p.Causal && p.Window == nil {
		return 0, hi
	}
	// Validate bounds the offset and the window's sides by MaxPosition;
	// with Nk and Nq below 2⁶⁰ (their operands fit in memory) nothing
	// here wraps.
	t := p.Align(b) + i
	if p.Causal {
		hi = min(hi, t+1)
	}
	if w := p.Window; w != nil {
		if w.Right >= 0 {
			hi = min(hi, t+w.Right+1)
		}
		if w.Left >= 0 {
			lo = max(0, t-w.Left)
		}
	}
	hi = max(hi, 0)
	return min(lo, hi), hi
}

// Mask is a broadcastable [B|1, H|1, Nq|1, Nk|1] operand stored densely
// row-major in Buf over Shape. A bias is added to the scaled scores
// (−Inf allowed); a keep-mask holds 0 for "masked" and any other value
// for "keep".
type Mask struct {
	Buf   Buffer
	Shape [4]int
}

// Buffer is m's buffer, nil for a nil m.
func (m *Mask) Buffer() Buffer {
	if m == nil {
		return nil
	}
	return m.Buf
}

// ScoresParams parameterises Backend.Scores.
type ScoresParams struct {
	Problem
	Bias *Mask // optional
	// Stage is how far the scores are carried; the zero value,
	// StageBiased, is what Softmax reads.
	Stage ScoreStage
	// Keep is the keep-mask StageMasked applies (optional, read by no
	// other stage).
	Keep *Mask
}

// SoftmaxParams parameterises Backend.Softmax.
type SoftmaxParams struct {
	Problem
	Keep *Mask  // optional
	LSE  Buffer // optional, [B, H, Nq]
}

// ContextParams parameterises Backend.Context.
type ContextParams struct {
	Problem
}

// FusedParams parameterises Backend.Fused.
type FusedParams struct {
	Problem
	Bias *Mask // optional
	Keep *Mask // optional
}

// Strides locate row i of head h in batch b of a Q, K, V or O tensor:
// the row starts at b·Batch + h·Head + i·Row and its elements are
// contiguous.
type Strides struct {
	Batch, Head, Row int
}

// Offset is the index of element 0 of row i of head h in batch b.
func (s Strides) Offset(b, h, i int) int { return b*s.Batch + h*s.Head + i*s.Row }

// TensorStrides returns the strides of a tensor of heads×rows×dim in
// layout l.
func TensorStrides(l Layout, heads, rows, dim int) Strides {
	if l == BNHD {
		return Strides{Batch: rows * heads * dim, Head: dim, Row: heads * dim}
	}
	return Strides{Batch: heads * rows * dim, Head: rows * dim, Row: dim}
}

// Group is H/KVHeads, the number of query heads sharing one KV head.
func (p Problem) Group() int { return p.H / p.KVHeads }

// QStrides and the others give each operand's strides: its Views entry
// when set, else the dense strides of p.Layout.
func (p Problem) QStrides() Strides {
	if s := p.view(0); s != nil {
		return *s
	}
	return TensorStrides(p.Layout, p.H, p.Nq, p.D)
}

// KStrides are the strides of K.
func (p Problem) KStrides() Strides {
	if s := p.view(1); s != nil {
		return *s
	}
	return TensorStrides(p.Layout, p.KVHeads, p.Nk, p.D)
}

// VStrides are the strides of V: K's when VFromK.
func (p Problem) VStrides() Strides {
	if p.VFromK {
		return p.KStrides()
	}
	if s := p.view(2); s != nil {
		return *s
	}
	return TensorStrides(p.Layout, p.KVHeads, p.Nk, p.Dv)
}

// OStrides are the strides of O.
func (p Problem) OStrides() Strides { return TensorStrides(p.Layout, p.H, p.Nq, p.Dv) }

// QLen and the other *Len methods give each operand's length in
// elements: packed Q and O hold TotalQ rows, packed K and V CuK[B], a
// paged K and V the whole pool; an operand with a Views entry spans its
// extent, the last element of its last row plus one. Validate has
// checked that none overflows.
func (p Problem) QLen() int {
	if s := p.view(0); s != nil {
		n, _ := p.viewExtent(0, *s)
		return n
	}
	return p.TotalQ() * p.H * p.D
}

// KLen is the length of K.
func (p Problem) KLen() int {
	if s := p.view(1); s != nil {
		n, _ := p.viewExtent(1, *s)
		return n
	}
	return p.kvRows() * p.KVHeads * p.D
}

// VLen is the length of V: K's when VFromK (V is K's buffer).
func (p Problem) VLen() int {
	if p.VFromK {
		return p.KLen()
	}
	if s := p.view(2); s != nil {
		n, _ := p.viewExtent(2, *s)
		return n
	}
	return p.kvRows() * p.KVHeads * p.Dv
}

// kvRows is how many rows of every KV head K and V hold.
func (p Problem) kvRows() int {
	switch {
	case p.Paged != nil:
		return p.Paged.Pages * p.Paged.PageSize
	case p.packedK():
		return p.Packed.CuK[p.B]
	}
	return p.B * p.Nk
}

// OLen is the length of O.
func (p Problem) OLen() int { return p.TotalQ() * p.H * p.Dv }

// ScoresLen is the length of the scores and weights.
func (p Problem) ScoresLen() int { return p.B * p.H * p.Nq * p.Nk }

// LSELen is the length of the log-sum-exp.
func (p Problem) LSELen() int { return p.TotalQ() * p.H }

// Band is the most keys any query row may see by its window and causal
// masking: Left + Right + 1 with causal masking capping Right at 0, or
// math.MaxInt when a side is unbounded (no window, or −1).
func (p Problem) Band() int {
	w := p.Window
	if w == nil || w.Left < 0 {
		return math.MaxInt
	}
	right := w.Right
	if p.Causal {
		right = 0
	}
	if right < 0 {
		return math.MaxInt
	}
	return w.Left + right + 1
}

// Strides returns the element strides of a mask over [B, H, Nq, Nk], 0 on
// every broadcast dimension, so that element (b, h, i, j) is at
// b·s[0] + h·s[1] + i·s[2] + j·s[3].
func (m *Mask) Strides() [4]int {
	var s [4]int
	n := 1
	for d := 3; d >= 0; d-- {
		if m.Shape[d] != 1 {
			s[d] = n
		}
		n *= m.Shape[d]
	}
	return s
}

// Len is the number of elements the mask stores.
func (m *Mask) Len() int {
	n, _ := CheckedProduct(m.Shape[:]...)
	return n
}
