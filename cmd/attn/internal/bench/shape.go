package bench

// A sweep's shapes: the problem a point runs (Shape, Variant) and the
// variants' data; its sparse inputs are workload's (RandomBlocks, TopK).

import (
	"fmt"
	"math"
	"strings"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/workload"
)

// Shape is the attention problem of a point of the sweep or of a Go
// benchmark: N keys and Nq queries (N when Nq is 0), the queries the
// last Nq positions (bottom-right causal alignment), Dv = D unless Dv
// says, V K's first Dv columns under VFromK, the layout BHND, the scale
// 1/√D, and the score variants of Variant. KVHeads < H is GQA.
type Shape struct {
	B       int `json:"b"`
	H       int `json:"h"`
	KVHeads int `json:"kv_heads"`
	N       int `json:"n"`
	// Nq is the number of query rows, 0 meaning N. Every point of a
	// sweep records it (a report written before it was recorded reads
	// as Nq = N).
	Nq     int  `json:"nq,omitempty"`
	D      int  `json:"d"`
	Causal bool `json:"causal"`
	// Dv is V's head dim, 0 meaning D (every report written before it);
	// VFromK says V is K's first Dv columns (MLA), none stored.
	Dv     int  `json:"dv,omitempty"`
	VFromK bool `json:"v_from_k,omitempty"`
	// TopK, when not 0, is the keys each query row attends, chosen at
	// random among those it may see (Config.TopK).
	TopK int `json:"topk,omitempty"`
	// BlockSize, when not 0, gives the point a random block mask of
	// blocks of BlockSize, BlockDensity of them on (Config.BlockSize).
	BlockSize    int     `json:"block_size,omitempty"`
	BlockDensity float64 `json:"block_density,omitempty"`
	Variant
	// DType is the storage dtype of Q, K, V and O: "" for float32 (as in
	// every report written before dtypes), "f16" or "bf16"; for a prefix
	// point, of K and V alone (Q and O are float32).
	DType string `json:"dtype,omitempty"`
	// Prefix, when not 0, makes the point a decoding step over a
	// kernels.PagePool whose sequences' first Prefix keys are one prompt
	// (prefix.go), Shared saying whether the pool holds it once, forked
	// into every sequence, or once a sequence.
	Prefix int  `json:"prefix,omitempty"`
	Shared bool `json:"shared,omitempty"`
	// GroupPrefix, Groups and Levels describe a tree of prefixes
	// (Config.GroupPrefix): Groups groups of sequences each sharing
	// GroupPrefix keys after the prompt, held shared by the pool down to
	// Levels levels (2: the tree; 1: the prompt alone, each sequence
	// holding its group's keys; 0 with Shared false: nothing shared).
	GroupPrefix int `json:"group_prefix,omitempty"`
	Groups      int `json:"groups,omitempty"`
	Levels      int `json:"levels,omitempty"`
	// Buffers says the step was AttendBuffers (Config.Buffers), and
	// PoolLayout is "bhnd" for a pool of BHND pages (Config.PrefixBHND;
	// "" for BNHD).
	Buffers    bool   `json:"buffers,omitempty"`
	PoolLayout string `json:"pool_layout,omitempty"`
	// Tree, when not 0, makes the point a speculative decoding step over
	// a kernels.KVCache whose last Tree keys are a draft tree verified in
	// one Attend (Config.Tree, tree.go; Nq = Tree), or with TreeChunk the
	// same rows attended as a causal chunk, the tree's baseline.
	Tree      int  `json:"tree,omitempty"`
	TreeChunk bool `json:"tree_chunk,omitempty"`
}

// Queries is the number of query rows of s: Nq, or N when Nq is 0.
func (s Shape) Queries() int {
	if s.Nq == 0 {
		return s.N
	}
	return s.Nq
}

// Decode reports whether s has fewer queries than keys: Nq new tokens
// attending over a cache of N keys.
func (s Shape) Decode() bool { return s.Queries() < s.N }

// dtype is s's storage dtype; an unknown name is float32's error.
func (s Shape) dtype() (backend.DType, error) {
	if s.DType == "" {
		return backend.Float32, nil
	}
	return backend.ParseDType(s.DType)
}

// dtypeName is what Shape.DType records for dt: "" for float32.
func dtypeName(dt backend.DType) string {
	if dt == backend.Float32 {
		return ""
	}
	return dt.String()
}

// Variant is the score variants a point ran with (backend.Variants), as a
// report records them: each is absent from the JSON when not used, so a
// report of plain attention reads as one written before variants existed.
type Variant struct {
	// Window is the sliding window [left, right] around each query's
	// position, −1 for an unbounded side (backend.Window); nil for none.
	Window *[2]int `json:"window,omitempty"`
	// Softcap caps the scaled scores at ±Softcap with tanh; 0 for none.
	Softcap float64 `json:"softcap,omitempty"`
	// ALiBi adds −m_h·|t − j| with the standard slopes m_h of
	// ALiBiSlopes(H).
	ALiBi bool `json:"alibi,omitempty"`
	// Sinks adds one sink logit per head, 0 for every head (Sinks):
	// exp(0) = 1 joins each row's softmax denominator.
	Sinks bool `json:"sinks,omitempty"`
}

// Any reports whether v sets any variant.
func (v Variant) Any() bool { return v.Window != nil || v.Softcap != 0 || v.ALiBi || v.Sinks }

// String names the variants v sets, "" for none: "window 127,0 softcap 30
// alibi sinks".
func (v Variant) String() string {
	var parts []string
	if w := v.Window; w != nil {
		parts = append(parts, fmt.Sprintf("window %d,%d", w[0], w[1]))
	}
	if v.Softcap != 0 {
		parts = append(parts, fmt.Sprintf("softcap %g", v.Softcap))
	}
	if v.ALiBi {
		parts = append(parts, "alibi")
	}
	if v.Sinks {
		parts = append(parts, "sinks")
	}
	return strings.Join(parts, " ")
}

// variants is v for a problem of h query heads.
func (v Variant) variants(h int) backend.Variants {
	var bv backend.Variants
	if w := v.Window; w != nil {
		bv.Window = &backend.Window{Left: w[0], Right: w[1]}
	}
	bv.Softcap = float32(v.Softcap)
	if v.ALiBi {
		bv.ALiBi = ALiBiSlopes(h)
	}
	if v.Sinks {
		bv.Sinks = Sinks(h)
	}
	return bv
}

// variantOf is the Variant of p's variants.
func variantOf(p backend.Problem) Variant {
	var v Variant
	if w := p.Window; w != nil {
		v.Window = &[2]int{w.Left, w.Right}
	}
	v.Softcap = float64(p.Softcap)
	v.ALiBi, v.Sinks = p.ALiBi != nil, p.Sinks != nil
	return v
}

// ALiBiSlopes are the standard ALiBi slopes of h heads (Press et al.,
// as BLOOM's build_alibi_tensor and FlashAttention's tests compute
// them): for h a power of two,
//
//	m_k = 2^(−8(k+1)/h),  k = 0 … h−1
//
// and otherwise, with p the largest power of two below h, the p slopes of
// p heads followed by the first h − p slopes of 2p heads at odd
// positions: 2^(−4(2k+1)/p), k = 0 … h−p−1.
func ALiBiSlopes(h int) []float32 {
	if h < 1 {
		return nil
	}
	p := 1
	for 2*p <= h {
		p *= 2
	}
	m := make([]float32, 0, h)
	for k := range p {
		m = append(m, float32(math.Exp2(-8*float64(k+1)/float64(p))))
	}
	for k := range h - p {
		m = append(m, float32(math.Exp2(-4*float64(2*k+1)/float64(p))))
	}
	return m
}

// Sinks are the sink logits a sweep with sinks uses: 0 for each of h
// heads, a sink worth one key of score 0 in each row's denominator. Only
// whether the sinks exist changes the work; their values do not.
func Sinks(h int) []float32 { return make([]float32, h) }

// Problem is the attention problem s describes.
func (s Shape) Problem() backend.Problem {
	dv := s.Dv
	if dv == 0 {
		dv = s.D
	}
	p := backend.Problem{B: s.B, H: s.H, KVHeads: s.KVHeads, Nq: s.Queries(), Nk: s.N, D: s.D, Dv: dv,
		Scale: float32(1 / math.Sqrt(float64(s.D))), Causal: s.Causal, Variants: s.variants(s.H), VFromK: s.VFromK}
	if s.TopK > 0 {
		p.Indices = workload.TopK(p, s.TopK)
	}
	if s.BlockSize > 0 {
		p.Blocks = workload.RandomBlocks(p, s.BlockSize, s.BlockDensity)
	}
	return p
}

// shapeOf is the Shape of a problem of the sweep (Nq ≤ Nk), with Nq
// recorded whatever it is, and Dv where it is not D.
func shapeOf(p backend.Problem) Shape {
	s := Shape{B: p.B, H: p.H, KVHeads: p.KVHeads, N: p.Nk, Nq: p.Nq, D: p.D, Causal: p.Causal, Variant: variantOf(p), VFromK: p.VFromK}
	if p.Indices != nil {
		s.TopK = p.Indices.PerRow
	}
	if bm := p.Blocks; bm != nil {
		s.BlockSize = bm.Size
		on := 0
		for _, k := range bm.Keep {
			if k {
				on++
			}
		}
		s.BlockDensity = float64(on) / float64(max(len(bm.Keep), 1))
	}
	if p.Dv != p.D {
		s.Dv = p.Dv
	}
	return s
}
