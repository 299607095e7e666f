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
// is 1). Causal masking is bottom-right aligned: query i sees key j when
//
//	j ≤ i + (Nk − Nq)
//
// so that with Nq == Nk it is the usual lower triangle and a single
// decoding query (Nq = 1) sees every key.
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
	Causal        bool
}

// Resolved returns p with its zero defaults filled in:
//
//	KVHeads 0 → H,  Dv 0 → D,  Scale 0 → 1/√D
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
	return p
}

// Mask is a broadcastable [B|1, H|1, Nq|1, Nk|1] operand stored densely
// row-major in Buf over Shape. A bias is added to the scaled scores
// (−Inf allowed); a keep-mask holds 0 for "masked" and any other value
// for "keep".
type Mask struct {
	Buf   Buffer
	Shape [4]int
}

// ScoresParams parameterises Backend.Scores.
type ScoresParams struct {
	Problem
	Bias *Mask // optional
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

// QStrides and the others give each operand's strides under p.Layout.
func (p Problem) QStrides() Strides { return TensorStrides(p.Layout, p.H, p.Nq, p.D) }

// KStrides are the strides of K.
func (p Problem) KStrides() Strides { return TensorStrides(p.Layout, p.KVHeads, p.Nk, p.D) }

// VStrides are the strides of V.
func (p Problem) VStrides() Strides { return TensorStrides(p.Layout, p.KVHeads, p.Nk, p.Dv) }

// OStrides are the strides of O.
func (p Problem) OStrides() Strides { return TensorStrides(p.Layout, p.H, p.Nq, p.Dv) }

// QLen and the other *Len methods give each operand's length in
// elements. Validate has checked that none overflows.
func (p Problem) QLen() int { return p.B * p.H * p.Nq * p.D }

// KLen is the length of K.
func (p Problem) KLen() int { return p.B * p.KVHeads * p.Nk * p.D }

// VLen is the length of V.
func (p Problem) VLen() int { return p.B * p.KVHeads * p.Nk * p.Dv }

// OLen is the length of O.
func (p Problem) OLen() int { return p.B * p.H * p.Nq * p.Dv }

// ScoresLen is the length of the scores and weights.
func (p Problem) ScoresLen() int { return p.B * p.H * p.Nq * p.Nk }

// LSELen is the length of the log-sum-exp.
func (p Problem) LSELen() int { return p.B * p.H * p.Nq }

// KeyLimit is the number of keys query i may see under causal masking
// (all Nk when not causal), clamped to [0, Nk]: keys 0 … KeyLimit(i)−1.
func (p Problem) KeyLimit(i int) int {
	if !p.Causal {
		return p.Nk
	}
	n := i + 1 + p.Nk - p.Nq
	return min(max(n, 0), p.Nk)
}

// Validate checks the sizes and scale of p with its defaults resolved
// (Resolved). The error wraps ErrShape (or ErrTooLarge when an operand's
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
	for _, op := range []struct {
		name string
		dims []int
	}{
		{"Q", []int{p.B, p.H, p.Nq, p.D}},
		{"K", []int{p.B, p.KVHeads, p.Nk, p.D}},
		{"V", []int{p.B, p.KVHeads, p.Nk, p.Dv}},
		{"O", []int{p.B, p.H, p.Nq, p.Dv}},
		{"scores", []int{p.B, p.H, p.Nq, p.Nk}},
	} {
		if _, ok := CheckedProduct(op.dims...); !ok {
			return Errorf(ErrTooLarge, "%s of shape %v has more elements than fit in an int", op.name, op.dims)
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
	if err := p.Problem.Validate(); err != nil {
		return err
	}
	if err := p.CheckMask("bias", p.Bias); err != nil {
		return err
	}
	return checkAll(
		CheckBuffer("Q", q, p.QLen()),
		CheckBuffer("K", k, p.KLen()),
		CheckBuffer("scores", s, p.ScoresLen()),
	)
}

// Validate resolves p's defaults in place and checks p, its keep-mask and
// the buffers of a Softmax call.
func (p *SoftmaxParams) Validate(s Buffer) error {
	p.Problem = p.Problem.Resolved()
	if err := p.Problem.Validate(); err != nil {
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
	return CheckBuffer("scores", s, p.ScoresLen())
}

// Validate resolves p's defaults in place and checks p and the buffers of
// a Context call.
func (p *ContextParams) Validate(pm, v, o Buffer) error {
	p.Problem = p.Problem.Resolved()
	if err := p.Problem.Validate(); err != nil {
		return err
	}
	return checkAll(
		CheckBuffer("weights", pm, p.ScoresLen()),
		CheckBuffer("V", v, p.VLen()),
		CheckBuffer("O", o, p.OLen()),
	)
}

// Validate resolves p's defaults in place and checks p, its masks and the
// buffers of a Fused call; lse may be nil.
func (p *FusedParams) Validate(q, k, v, o, lse Buffer) error {
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
	return checkAll(
		CheckBuffer("Q", q, p.QLen()),
		CheckBuffer("K", k, p.KLen()),
		CheckBuffer("V", v, p.VLen()),
		CheckBuffer("O", o, p.OLen()),
	)
}

func checkAll(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
