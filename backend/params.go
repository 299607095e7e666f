package backend

import (
	"fmt"
	"math"
	"slices"
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
	// FusedIndexed on a backend with Caps.Indices.
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

// Validate checks the sizes, scale and variants of p with its defaults
// resolved (Resolved). The error wraps ErrShape (or ErrTooLarge when an operand's
// element count overflows int) and names the offending sizes.
func (p Problem) Validate() error {
	p = p.Resolved()
	switch {
	case p.B < 0 || p.Nq < 0 || p.Nk < 0:
		return Errorf(ErrShape, "negative size: B=%d Nq=%d Nk=%d", p.B, p.Nq, p.Nk)
	case p.H < 1 || p.KVHeads < 1:
		return Errorf(ErrShape, "heads must be ≥ 1: H=%d KVHeads=%d", p.H, p.KVHeads)
	case p.H%p.KVHeads != 0:
		return Errorf(ErrShape, "H=%d is not a multiple of KVHeads=%d", p.H, p.KVHeads)
	case p.D < 1 || p.Dv < 1:
		return Errorf(ErrShape, "head dims must be ≥ 1: D=%d Dv=%d", p.D, p.Dv)
	case p.Layout != BHND && p.Layout != BNHD:
		return Errorf(ErrShape, "unknown layout %v", p.Layout)
	case math.IsNaN(float64(p.Scale)) || math.IsInf(float64(p.Scale), 0):
		return Errorf(ErrShape, "scale %v is not finite", p.Scale)
	}
	if err := p.validateVariants(); err != nil {
		return err
	}
	if err := p.validateSeqs(); err != nil {
		return err
	}
	if err := p.validateViews(); err != nil {
		return err
	}
	if err := p.Scales.validate(p.KVHeads); err != nil {
		return err
	}
	if err := p.validateVFromK(); err != nil {
		return err
	}
	if err := p.validateIndices(); err != nil {
		return err
	}
	if err := p.validateBlocks(); err != nil {
		return err
	}
	// Rows of each operand: B·N, or a packed total (one factor, the
	// other 1), or a paged pool's pages × page size.
	qRows, kvRows := [2]int{p.B, p.Nq}, [2]int{p.B, p.Nk}
	if p.Packed != nil {
		qRows = [2]int{p.Packed.CuQ[p.B], 1}
		if p.packedK() {
			kvRows = [2]int{p.Packed.CuK[p.B], 1}
		}
	}
	if p.Paged != nil {
		kvRows = [2]int{p.Paged.Pages, p.Paged.PageSize}
	}
	// The shapes in a fixed array: Validate runs on every call of a
	// decoding loop, which must not allocate.
	shapes := [5]struct {
		name string
		dims [4]int
	}{
		{"Q", [4]int{qRows[0], qRows[1], p.H, p.D}},
		{"K", [4]int{kvRows[0], kvRows[1], p.KVHeads, p.D}},
		{"V", [4]int{kvRows[0], kvRows[1], p.KVHeads, p.Dv}},
		{"O", [4]int{qRows[0], qRows[1], p.H, p.Dv}},
		{"scores", [4]int{p.B, p.H, p.Nq, p.Nk}},
	}
	for _, op := range shapes {
		if _, ok := CheckedProduct(op.dims[:]...); !ok {
			return Errorf(ErrTooLarge, "%s of shape %v has more elements than fit in an int", op.name, op.dims)
		}
	}
	return nil
}

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

// MaxPosition bounds a causal offset and a window's sides: 2⁴⁰, more keys
// than any machine holds, so that positions computed from them never wrap
// an int. Use −1 for an unbounded window side.
const MaxPosition = 1 << 40

// Check reports the variant values that are wrong at any size: a causal
// offset beyond ±MaxPosition, a window side below −1 or above
// MaxPosition, a softcap below 0 or not finite, an ALiBi slope or a sink
// that is not finite. The error wraps ErrShape and names the value.
// Problem.Validate calls it before checking the counts against H and B
// and the key lengths against Nk; a caller holding variants before the
// sizes are known (a command line's flags) calls it alone.
func (v Variants) Check() error {
	if o := v.CausalOffset; o != nil && (*o > MaxPosition || *o < -MaxPosition) {
		return Errorf(ErrShape, "causal offset %d is beyond ±2⁴⁰", *o)
	}
	if w := v.Window; w != nil && (w.Left < -1 || w.Right < -1) {
		return Errorf(ErrShape, "window (%d, %d): each side must be ≥ 0, or −1 for unbounded", w.Left, w.Right)
	}
	if w := v.Window; w != nil && (w.Left > MaxPosition || w.Right > MaxPosition) {
		return Errorf(ErrShape, "window (%d, %d): a side is beyond 2⁴⁰; −1 is unbounded", w.Left, w.Right)
	}
	if c := float64(v.Softcap); c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
		return Errorf(ErrShape, "softcap %v must be finite and > 0 (0 for none)", v.Softcap)
	}
	for _, vec := range []struct {
		name string
		x    []float32
	}{{"ALiBi slopes", v.ALiBi}, {"sinks", v.Sinks}} {
		for h, x := range vec.x {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return Errorf(ErrShape, "%s: head %d is %v, want finite", vec.name, h, x)
			}
		}
	}
	return nil
}

// validateVariants checks p's variants: their values (Variants.Check),
// then their counts and the key lengths against p's sizes.
func (p Problem) validateVariants() error {
	if err := p.Variants.Check(); err != nil {
		return err
	}
	for _, v := range []struct {
		name string
		x    []float32
	}{{"ALiBi slopes", p.ALiBi}, {"sinks", p.Sinks}} {
		if v.x != nil && len(v.x) != p.H {
			return Errorf(ErrShape, "%s: %d values for H=%d query heads", v.name, len(v.x), p.H)
		}
	}
	if p.KVLens != nil {
		if len(p.KVLens) != p.B {
			return Errorf(ErrShape, "key lengths: %d values for B=%d batches", len(p.KVLens), p.B)
		}
		for b, n := range p.KVLens {
			if n < 0 || n > p.Nk {
				return Errorf(ErrShape, "key lengths: batch %d has %d, want 0 … Nk=%d", b, n, p.Nk)
			}
		}
	}
	return nil
}

// CheckedProduct multiplies non-negative sizes, reporting false on
// overflow.
func CheckedProduct(dims ...int) (int, bool) {
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
	}
	if slices.Contains(dims, 0) {
		return 0, true
	}
	n := 1
	for _, d := range dims {
		if n > math.MaxInt/d {
			return 0, false
		}
		n *= d
	}
	return n, true
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

// CheckMask checks that m broadcasts to [B, H, Nq, Nk] and that its buffer
// holds it. name ("bias", "mask") goes into the error.
func (p Problem) CheckMask(name string, m *Mask) error {
	if m == nil {
		return nil
	}
	if m.Buf == nil {
		return Errorf(ErrShape, "%s has no buffer", name)
	}
	full := [4]int{p.B, p.H, p.Nq, p.Nk}
	for d, s := range m.Shape {
		if s != 1 && s != full[d] {
			return Errorf(ErrShape, "%s of shape %v does not broadcast to [B=%d H=%d Nq=%d Nk=%d]: dim %d is %d, want 1 or %d",
				name, m.Shape, p.B, p.H, p.Nq, p.Nk, d, s, full[d])
		}
	}
	n, ok := CheckedProduct(m.Shape[:]...)
	if !ok {
		return Errorf(ErrTooLarge, "%s of shape %v overflows int", name, m.Shape)
	}
	if m.Buf.Len() < n {
		return Errorf(ErrShape, "%s of shape %v needs %d elements, its buffer has %d", name, m.Shape, n, m.Buf.Len())
	}
	return nil
}

// CheckBuffer checks that buf is present and holds at least n elements.
func CheckBuffer(name string, buf Buffer, n int) error {
	if buf == nil {
		return Errorf(ErrShape, "%s buffer is nil", name)
	}
	if buf.Len() < n {
		return Errorf(ErrShape, "%s needs %d elements, its buffer has %d", name, n, buf.Len())
	}
	return nil
}

// Validate resolves p's defaults in place (Problem.Resolved) and checks
// p, its bias and the buffers of a Scores call. Every backend's Scores
// calls it first, so the zero defaults mean the same on every backend.
func (p *ScoresParams) Validate(q, k, s Buffer) error {
	p.Problem = p.Problem.Resolved()
	if err := p.Problem.validateStaged(); err != nil {
		return err
	}
	if err := p.CheckMask("bias", p.Bias); err != nil {
		return err
	}
	if err := p.CheckMask("mask", p.Keep); err != nil {
		return err
	}
	if p.Stage < StageBiased || p.Stage > StageMasked {
		return Errorf(ErrShape, "unknown score stage %v", p.Stage)
	}
	return checkAll(
		checkStagedUnquantized("Q", q),
		checkStagedUnquantized("K", k),
		CheckBuffer("Q", q, p.QLen()),
		CheckBuffer("K", k, p.KLen()),
		CheckBuffer("scores", s, p.ScoresLen()),
		checkFloat32("scores", s),
		checkKeepDType(p.Keep),
	)
}

// Validate resolves p's defaults in place and checks p, its keep-mask and
// the buffers of a Softmax call.
func (p *SoftmaxParams) Validate(s Buffer) error {
	p.Problem = p.Problem.Resolved()
	if err := p.Problem.validateStaged(); err != nil {
		return err
	}
	if err := p.CheckMask("mask", p.Keep); err != nil {
		return err
	}
	if p.LSE != nil {
		if err := CheckBuffer("LSE", p.LSE, p.LSELen()); err != nil {
			return err
		}
	}
	return checkAll(
		CheckBuffer("scores", s, p.ScoresLen()),
		checkFloat32("scores", s),
		checkFloat32("LSE", p.LSE),
		checkKeepDType(p.Keep),
	)
}

// Validate resolves p's defaults in place and checks p and the buffers of
// a Context call.
func (p *ContextParams) Validate(pm, v, o Buffer) error {
	p.Problem = p.Problem.Resolved()
	if err := p.Problem.validateStaged(); err != nil {
		return err
	}
	return checkAll(
		checkStagedUnquantized("V", v),
		checkStagedUnquantized("O", o),
		CheckBuffer("weights", pm, p.ScoresLen()),
		CheckBuffer("V", v, p.VLen()),
		CheckBuffer("O", o, p.OLen()),
		checkFloat32("weights", pm),
	)
}

// Validate resolves p's defaults in place and checks p, its masks and the
// buffers of a Fused call; lse may be nil.
//
// A problem with an index list (Indices) is ErrUnsupported here: a
// backend that takes them calls FusedIndexed, which lowers the list to
// a problem without one, so that a backend unaware of them refuses
// them rather than attending every key.
//
// A block mask (Blocks) is ErrUnsupported here too: a backend that skips
// its blocks (Caps.Blocks) validates with ValidateBlocks.
func (p *FusedParams) Validate(q, k, v, o, lse Buffer) error {
	if p.Blocks != nil {
		return Errorf(ErrUnsupported, "a block mask (B=%d Nq=%d Nk=%d, blocks of %d): this backend's Fused does not take one (Caps.Blocks)", p.B, p.Nq, p.Nk, p.Blocks.Size)
	}
	return p.ValidateBlocks(q, k, v, o, lse)
}

// ValidateBlocks is Validate for a backend whose Fused takes block masks
// (Caps.Blocks).
func (p *FusedParams) ValidateBlocks(q, k, v, o, lse Buffer) error {
	if p.Indices != nil {
		return Errorf(ErrUnsupported, "an index list (B=%d Nq=%d Nk=%d, %d keys a row): this backend's Fused does not take one (Caps.Indices)", p.B, p.Nq, p.Nk, p.Indices.K)
	}
	if err := p.validate(q, k, v, o, lse); err != nil {
		return err
	}
	if p.Pads(k, v) {
		return Errorf(ErrUnsupported, "a q8 K or V of head dims D=%d, Dv=%d, not whole blocks of %d: this backend's Fused does not pad them (FusedLowered)", p.D, p.Dv, Q8Block)
	}
	return nil
}

// validate is Validate without its refusal of an index list.
func (p *FusedParams) validate(q, k, v, o, lse Buffer) error {
	p.Problem = p.Problem.Resolved()
	if err := p.Problem.Validate(); err != nil {
		return err
	}
	if err := p.CheckMask("bias", p.Bias); err != nil {
		return err
	}
	if err := p.CheckMask("mask", p.Keep); err != nil {
		return err
	}
	if lse != nil {
		if err := CheckBuffer("LSE", lse, p.LSELen()); err != nil {
			return err
		}
	}
	// A q8 K's and V's rows are whole blocks: their lengths are those of
	// the problem whose head dims are the pitches.
	kv := p.Problem
	if k != nil && v != nil {
		kv = kv.Pitched(k.DType(), v.DType())
	}
	return checkAll(
		CheckBuffer("Q", q, p.QLen()),
		CheckBuffer("K", k, kv.KLen()),
		CheckBuffer("V", v, kv.VLen()),
		CheckBuffer("O", o, p.OLen()),
		checkFloat32("LSE", lse),
		checkKeepDType(p.Keep),
		checkUnquantized("Q", q),
		checkUnquantized("O", o),
		p.checkQuantized("K", k),
		p.checkQuantized("V", v),
		p.checkVFromK(k, v),
	)
}

// validateVFromK checks a problem that takes V from K (VFromK): V is
// K's first Dv columns, so Dv ≤ D, V has no strides of its own, and V's
// scales, where K has scales, are K's.
func (p Problem) validateVFromK() error {
	if !p.VFromK {
		return nil
	}
	switch {
	case p.Dv > p.D:
		return Errorf(ErrShape, "V from K is K's first Dv columns: Dv=%d is more than D=%d", p.Dv, p.D)
	case p.Views != nil && p.Views.V != nil:
		return Errorf(ErrShape, "V from K is read at K's strides: V strides %+v of its own", *p.Views.V)
	}
	if s := p.Scales; s != nil && s.K != nil {
		if s.V == nil {
			return Errorf(ErrShape, "V from K has K's values: K has scales %v, V none", s.K)
		}
		for g := range s.K {
			if s.V[g] != s.K[g] {
				return Errorf(ErrShape, "V from K has K's values: V's scale of KV head %d is %v, K's %v", g, s.V[g], s.K[g])
			}
		}
	}
	return nil
}

// checkVFromK checks that a problem that takes V from K gets K's buffer
// as V.
func (p Problem) checkVFromK(k, v Buffer) error {
	if p.VFromK && v != k {
		return Errorf(ErrShape, "V from K (D=%d, Dv=%d): the V buffer must be K's", p.D, p.Dv)
	}
	return nil
}

// checkUnquantized refuses an 8-bit buffer as an operand other than
// Fused's K and V.
func checkUnquantized(name string, buf Buffer) error {
	if buf != nil && buf.DType().Quantized() {
		return Errorf(ErrShape, "%s is %v: only a K or V of Fused may be 8-bit", name, buf.DType())
	}
	return nil
}

// checkStagedUnquantized refuses an 8-bit operand of a staged op
// (ErrUnsupported: Fused takes an 8-bit K and V).
func checkStagedUnquantized(name string, buf Buffer) error {
	if buf != nil && buf.DType().Quantized() {
		return Errorf(ErrUnsupported, "%s is %v: the staged ops take no 8-bit operand; Fused takes an 8-bit K and V", name, buf.DType())
	}
	return nil
}

// checkQuantized checks an 8-bit K or V of Fused: it is read in place
// (no Views). Its rows are whole blocks (padded.go).
func (p Problem) checkQuantized(name string, buf Buffer) error {
	if buf == nil || !buf.DType().Quantized() {
		return nil
	}
	t := buf.DType()
	if p.Views != nil {
		return Errorf(ErrUnsupported, "%s is %v: views take no 8-bit operand", name, t)
	}
	return nil
}

// validateStaged is Validate for a staged op, which refuses packed and
// paged problems: their scores would be ragged [B, H, Nq, Nk] slices of
// different sequences, and Fused computes them without the scores.
func (p Problem) validateStaged() error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.Scales != nil {
		return Errorf(ErrUnsupported, "the staged ops take no K or V scales: Fused does")
	}
	if p.Packed != nil || p.Paged != nil {
		return Errorf(ErrUnsupported, "the staged ops take no packed or paged problem (B=%d Nq=%d Nk=%d): Fused does", p.B, p.Nq, p.Nk)
	}
	if p.Indices != nil {
		return Errorf(ErrUnsupported, "the staged ops take no index list (B=%d Nq=%d Nk=%d): Fused does", p.B, p.Nq, p.Nk)
	}
	if p.Blocks != nil {
		return Errorf(ErrUnsupported, "the staged ops take no block mask (B=%d Nq=%d Nk=%d): Fused skips its blocks", p.B, p.Nq, p.Nk)
	}
	return nil
}

// checkFloat32 refuses a buffer (when not nil) that is not Float32: the
// scores, weights, keep-mask and LSE are Float32 whatever the operands'
// dtypes.
func checkFloat32(name string, buf Buffer) error {
	if buf == nil {
		return nil
	}
	return CheckDType(name, buf, Float32)
}

func checkKeepDType(keep *Mask) error {
	if keep == nil {
		return nil
	}
	return checkFloat32("mask", keep.Buf)
}

func checkAll(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
