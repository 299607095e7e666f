package plan

import (
	"math"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file lays out the variant data the kernels read from their vars
// binding (internal/shaders/lib/vars.wgsl). It has no cgo so its tests run
// everywhere.

// maxVarPos bounds the positions the kernels compute in i32: Nq, Nk and
// an ALiBi alignment must stay below it so that a_b + i − j and the key
// range bases plus i never wrap.
const maxVarPos = 1 << 30

// VarsLayout is the variant data of one call: for H heads and B batches,
// as i32 (float values as their bits),
//
//	[0, H)          ALiBi slopes m_h (0 without ALiBi)
//	[H, 2H)         sink logits (0 without sinks)
//	2H + 4b + 0     KVLen(b)
//	2H + 4b + 1     hb: query row i sees no key j ≥ hb + i (causal, window's right side)
//	2H + 4b + 2     lb: query row i sees no key j < lb + i (window's left side)
//	2H + 4b + 3     a_b, the alignment ALiBi measures from
//
// hb and lb are clamped to [−Nq−1, Nk+1]: for 0 ≤ i < Nq the clamped
// key_range (lib/vars.wgsl) is the same, and no sum wraps an i32. With
// neither side bounded hb is Nk + 1 and lb is −Nq − 1.
func VarsLayout(p backend.Problem) []uint32 {
	out := make([]uint32, 2*p.H+4*p.B)
	for h := range p.H {
		if p.ALiBi != nil {
			out[h] = math.Float32bits(p.ALiBi[h])
		}
		if p.Sinks != nil {
			out[p.H+h] = math.Float32bits(p.Sinks[h])
		}
	}
	clamp := func(x int) int { return min(max(x, -p.Nq-1), p.Nk+1) }
	for b := range p.B {
		a := p.Align(b)
		hb, lb := p.Nk+1, -p.Nq-1
		if p.Causal {
			hb = min(hb, clamp(a+1))
		}
		if w := p.Window; w != nil {
			if w.Right >= 0 {
				hb = min(hb, clamp(a+w.Right+1))
			}
			if w.Left >= 0 {
				lb = clamp(a - w.Left)
			}
		}
		at := 2*p.H + 4*b
		out[at] = uint32(int32(p.KVLen(b)))
		out[at+1] = uint32(int32(hb))
		out[at+2] = uint32(int32(lb))
		out[at+3] = uint32(int32(min(max(a, -maxVarPos), maxVarPos)))
	}
	return out
}

// SeqsLayout is VarsLayout(p) followed by what lib/seqs.wgsl and
// lib/pages.wgsl read of a packed or paged problem, and where that
// starts: from seq, three i32 for batch b,
//
//	seq + 3b + 0    the row where its queries start in Q, O and the LSE (CuQ[b]; 0 unless packed)
//	seq + 3b + 1    its query count, QRows(b)
//	seq + 3b + 2    the row where its keys start in K and V (CuK[b]; 0 unless packed keys)
//
// and from table the block table of a paged cache, as it is (entries
// the kernels never read, −1 say, included). A problem neither packed
// nor paged has neither (seq = table = len(data)).
func SeqsLayout(p backend.Problem) (data []uint32, seq, table int) {
	data = VarsLayout(p)
	seq = len(data)
	if p.Packed == nil && p.Paged == nil {
		return data, seq, seq
	}
	for b := range p.B {
		var q0, k0 int
		if pk := p.Packed; pk != nil {
			q0 = pk.CuQ[b]
			if pk.CuK != nil {
				k0 = pk.CuK[b]
			}
		}
		data = append(data, uint32(int32(q0)), uint32(int32(p.QRows(b))), uint32(int32(k0)))
	}
	table = len(data)
	if pg := p.Paged; pg != nil {
		for _, e := range pg.Table {
			data = append(data, uint32(int32(e)))
		}
	}
	return data, seq, table
}

// rangeVariants reports whether p restricts keys by position
// (Problem.KeyRange is not [0, Nk) for every row): packed keys give each
// sequence its own length.
func rangeVariants(p backend.Problem) bool {
	return p.Causal || p.Window != nil || p.KVLens != nil || (p.Packed != nil && p.Packed.CuK != nil)
}

// KernelFlags is the one place a problem's variants, masks, sequences
// and outputs become the bits of the kernels' flags field: every bit p
// (with a bias, a keep mask and an LSE to write, as given) asks for. Each
// op keeps the bits its kernel, or the stage it runs, applies: Softmax
// those of SoftmaxFlags, Scores those of ScoreStageFlags, Fused all but
// the sink past a row's first step.
func KernelFlags(p backend.Problem, bias, keep, lse bool) shaders.Flag {
	var f shaders.Flag
	set := func(bit shaders.Flag, on bool) {
		if on {
			f |= bit
		}
	}
	set(shaders.FlagRange, rangeVariants(p))
	set(shaders.FlagBias, bias)
	set(shaders.FlagKeep, keep)
	set(shaders.FlagLSE, lse)
	set(shaders.FlagSoftcap, p.Softcap > 0)
	set(shaders.FlagALiBi, p.ALiBi != nil)
	set(shaders.FlagSink, p.Sinks != nil)
	set(shaders.FlagPackQ, p.Packed != nil)
	set(shaders.FlagPackK, p.Packed != nil && p.Packed.CuK != nil)
	set(shaders.FlagPaged, p.Paged != nil)
	set(shaders.FlagScales, p.Scales != nil)
	set(shaders.FlagBlocks, p.Blocks != nil)
	return f
}

// VarsFlags are the bits whose kernels read the vars binding: a call
// uploads its variant data only when it sets one of them.
const VarsFlags = shaders.FlagRange | shaders.FlagALiBi | shaders.FlagSink |
	shaders.FlagPackQ | shaders.FlagPackK | shaders.FlagPaged | shaders.FlagScales | shaders.FlagBlocks

// BlockWords lays out block mask m of p as vars holds it for
// lib/blocks.wgsl's block_on: one word a block (1 on, 0 off), over
// [B or 1, H or 1, ⌈Nq/S⌉, ⌈Nk/S⌉] whatever blocks m stops at (those past
// it off), and the strides of batch, head, query block and key block (0
// on a broadcast dimension).
func BlockWords(p backend.Problem, m *backend.BlockMask) (words []uint32, strides [4]int) {
	qb, kb := (p.Nq+m.Size-1)/m.Size, (p.Nk+m.Size-1)/m.Size
	strides = [4]int{0, 0, kb, 1}
	if m.Shape[1] > 1 {
		strides[1] = qb * kb
	}
	if m.Shape[0] > 1 {
		strides[0] = m.Shape[1] * qb * kb
	}
	words = make([]uint32, m.Shape[0]*m.Shape[1]*qb*kb)
	for b := range m.Shape[0] {
		for h := range m.Shape[1] {
			for i := range m.Shape[2] {
				row := m.Row(b, h, i*m.Size)
				at := b*strides[0] + h*strides[1] + i*kb
				for j, on := range row {
					if on {
						words[at+j] = 1
					}
				}
			}
		}
	}
	return words, strides
}

// SoftmaxFlags are the bits softmax.wgsl applies.
const SoftmaxFlags = shaders.FlagRange | shaders.FlagKeep | shaders.FlagLSE | shaders.FlagSink

// ScoreStageFlags are the bits scores.wgsl applies to carry the scores
// to stage s: each stage's include the one's before it.
func ScoreStageFlags(s backend.ScoreStage) shaders.Flag {
	capped := shaders.FlagSoftcap
	biased := capped | shaders.FlagBias | shaders.FlagALiBi
	switch s {
	case backend.StageRaw:
		return 0
	case backend.StageCapped:
		return capped
	case backend.StageBiased:
		return biased
	}
	return biased | shaders.FlagRange | shaders.FlagKeep
}

// CheckVars refuses a problem whose positions the kernels' i32
// arithmetic cannot hold: ErrTooLarge when Nq or Nk reach 2³⁰ with
// positions in play, ErrUnsupported when ALiBi measures from an alignment
// beyond ±2³⁰ (a causal offset that far from the keys).
func CheckVars(op string, p backend.Problem) error {
	// The rows and pages of packed and paged problems are i32 in vars.
	if pk := p.Packed; pk != nil && (pk.CuQ[p.B] >= maxVarPos || (pk.CuK != nil && pk.CuK[p.B] >= maxVarPos)) {
		return backend.Errorf(backend.ErrTooLarge, "gpu: %s: packed sequences of %d query rows (and %d key rows): the kernels need both below 2³⁰",
			op, pk.CuQ[p.B], p.KLen()/max(1, p.KVHeads*p.D))
	}
	if pg := p.Paged; pg != nil && (pg.Pages >= maxVarPos || len(pg.Table) >= maxVarPos) {
		return backend.Errorf(backend.ErrTooLarge, "gpu: %s: a paged cache of %d pages and %d table entries: the kernels need both below 2³⁰", op, pg.Pages, len(pg.Table))
	}
	if !rangeVariants(p) && p.ALiBi == nil {
		return nil
	}
	if p.Nq >= maxVarPos || p.Nk >= maxVarPos {
		return backend.Errorf(backend.ErrTooLarge, "gpu: %s: Nq=%d Nk=%d: the kernels compute key positions in 32 bits, which need both below 2³⁰", op, p.Nq, p.Nk)
	}
	if p.ALiBi != nil {
		for b := range p.B {
			if a := p.Align(b); a > maxVarPos || a < -maxVarPos {
				return backend.Errorf(backend.ErrUnsupported, "gpu: %s: ALiBi with batch %d's query row 0 at key position %d (beyond ±2³⁰; Nq=%d Nk=%d)", op, b, a, p.Nq, p.Nk)
			}
		}
	}
	return nil
}
