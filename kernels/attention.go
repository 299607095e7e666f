package kernels

import (
	"context"
	"fmt"
	"strings"

	"github.com/attn-go/attn/backend"
)

// Strategy chooses how attention is computed.
type Strategy int

// The strategies.
const (
	// Auto picks Staged when the weights or scores are asked for, on a
	// CPU backend when the problem is small, or when the backend's Fused
	// cannot run the problem (backend.FusedSupports); Fused otherwise.
	Auto Strategy = iota
	// Staged materialises the B·H·Nq·Nk scores: Scores, Softmax, Context.
	Staged
	// Fused streams key tiles with an online softmax in O(N) memory.
	Fused
)

// stagedAutoLimit is the largest B·H·Nq·Nk for which Auto picks the staged
// path on a CPU backend without being asked: 256 KiB of scores, where
// three simple passes cost less than the fused tile loop's bookkeeping. On
// a GPU backend Auto picks fused unless the weights or scores are asked
// for.
const stagedAutoLimit = 1 << 16

func (s Strategy) String() string {
	switch s {
	case Auto:
		return "auto"
	case Staged:
		return "staged"
	case Fused:
		return "fused"
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// ParseStrategy reads "auto", "staged" or "fused".
func ParseStrategy(s string) (Strategy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return Auto, nil
	case "staged":
		return Staged, nil
	case "fused":
		return Fused, nil
	}
	return Auto, fmt.Errorf("unknown strategy %q (want auto, staged or fused)", s)
}

// Options are the optional parts of an Attention call. The zero value
// (or a nil *Options) is plain non-causal attention with scale 1/√D.
//
// The fields down to AllowNonFinite are what every attention computes,
// whatever it runs over; AttendOptions (attention over a KV cache) has
// the same ones with the same meaning. The rest are what only attention
// over tensors has: packed sequences, paged caches given as tensors, a
// bias or mask, the staged path's matrices, the LSE and the output
// dtypes. Scalars are float64, as a caller computes them (1/√D, a
// model's config); the per-head slices ALiBi and Sinks are []float32,
// as a Tensor's Data is, since the kernels read them as they are.
type Options struct {
	// Scale multiplies Q·Kᵀ. 0 means 1/√D, as a zero scale does in every
	// layer of attn (backend.Problem, the CLI's -scale); any other
	// finite float32 value is used as given (the tutorials use 1).
	Scale float64
	// Causal hides key j from query i when j > a_b + i, where the
	// alignment a_b is CausalOffset when set and KVLens[b] − Nq (Nk − Nq
	// without key lengths) otherwise: bottom-right aligned, as
	// FlashAttention and ONNX Runtime do.
	Causal bool
	// CausalOffset, with Causal, aligns query row i at key position
	// *CausalOffset + i in every batch: query i sees key j iff
	// j ≤ i + *CausalOffset. 0 is top-left alignment (ONNX's is_causal
	// without a cache); a negative offset may leave rows that see no
	// key. It refines Causal and does not turn it on: an offset without
	// Causal is an error wrapping backend.ErrShape.
	CausalOffset *int
	// Window, when set, is a sliding window: query row i, at key
	// position t = a_b + i, sees key j only when t − Left ≤ j ≤ t +
	// Right; a side of −1 is unbounded. {Left: W−1, Right: 0} with
	// Causal is the causal window of W keys (Mistral's).
	Window *Window
	// Softcap, when > 0, caps the scaled scores at ±Softcap with
	// Softcap·tanh(s/Softcap), before the bias, ALiBi and masks (Gemma 2,
	// ONNX's softcap); it must be a finite float32. 0 is none.
	Softcap float64
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
	// With BlockTable they are the cache lengths.
	KVLens []int
	// AllowNonFinite skips the check that Q, K and V hold no NaN or
	// infinity (and the bias no NaN or +Inf). Such a value then makes the
	// outputs it reaches unspecified (NaN or zero, by backend); rows it
	// does not reach are unaffected.
	AllowNonFinite bool
	// Indices, when set, names for each query row the keys it attends:
	// sparse attention over chosen keys (DeepSeek's indexer, NSA's
	// selected blocks), reading only those keys. Idx holds int32 key
	// positions of the row's sequence, PerRow a row, −1 for none, laid
	// out [B, Heads, Nq, PerRow] ([Heads, total, PerRow] with
	// CuSeqlensQ), Heads 1 (one list shared by every head) or KVH (one a
	// KV head). A position out of range or named twice in a row is an
	// error wrapping backend.ErrShape that names the row; causal masking,
	// the window and KVLens still hide the keys they hide; a row left
	// with no key outputs zeros (LSE −Inf). It runs fused only, with no
	// bias, mask or ALiBi (backend.Indices has the rules).
	Indices *Indices
	// Blocks, when set, is a block-sparse keep-mask ([B|1, H|1, ⌈Nq/S⌉,
	// ⌈Nk/S⌉] booleans for blocks of S rows by S keys; BlockMask and its
	// helpers: documents, prefix-LM, streaming): a block that is off is
	// never computed, one that is on is computed under every other mask.
	// A row whose blocks are all off outputs zeros (LSE −Inf). It runs
	// fused only, on a backend with Caps.Blocks.
	Blocks *BlockMask
	// Tree, when set, is a speculative draft's tree over the last Nq
	// keys (Tree has its layout and rules): query i sees every key
	// before the draft and, of the draft's, its ancestors and itself;
	// causal masking is implied. Over tensors it becomes a keep-mask
	// over the last Nq keys of each sequence; it takes no Mask beside
	// it, nor a window, ALiBi, key lengths, a causal offset, index
	// lists, a block mask or packed or paged sequences (ErrUnsupported).
	Tree *Tree
	// VFromK, when > 0, takes V from K, as multi-head latent attention
	// (MLA: DeepSeek V2/V3, Kimi K2) does with its latent cache: V is the
	// first VFromK columns of K's head dim (Dv = VFromK ≤ D), and Attention
	// takes v nil. A backend with Caps.VFromK reads V in K's buffer (no V
	// is uploaded or stored); another gets V as a view of K. The scale
	// stays Scale's (MLA's is 1/√192 for D = 576: set it).
	VFromK int

	// CuSeqlensQ, when set, packs B = len(CuSeqlensQ) − 1 sequences'
	// queries end to end (FlashAttention's varlen cu_seqlens_q):
	// sequence b's queries are rows CuSeqlensQ[b] … CuSeqlensQ[b+1] − 1
	// of Q, which is rank 3 [total, H, D] in the BNHD layout, and so are
	// Out's; the list starts at 0, never decreases and ends at total. Nq
	// is the longest sequence's length, and a bias or mask broadcasts
	// over [B, H, Nq, Nk] indexed by a sequence's own row and key
	// numbers. Causal masking is bottom-right per sequence: query i of
	// sequence b sits at key position KVLen(b) − rows(b) + i (or
	// CausalOffset + i). The LSE is [H, total]. Packed sequences and
	// paged caches run fused only, on a backend with Caps.Seqs: the
	// weights and scores are not formed.
	CuSeqlensQ []int
	// CuSeqlensK, with CuSeqlensQ, packs the keys the same way: K and V
	// are rank 3 [totalK, KVH, D|Dv], sequence b's keys rows
	// CuSeqlensK[b] … CuSeqlensK[b+1] − 1, and KVLens must be nil. With
	// CuSeqlensQ alone, K and V are dense [B, Nk, KVH, D|Dv] (BNHD; key
	// lengths from KVLens, or Nk) or paged (BlockTable).
	CuSeqlensK []int
	// BlockTable, when set, makes K and V a paged cache
	// (FlashAttention's flash_attn_with_kvcache block_table, vLLM's
	// paged attention): pools [pages, page_size, KVH, D|Dv] under BNHD
	// ([pages, KVH, page_size, D|Dv] under BHND), and row b of the
	// table lists the pages of sequence b's keys in order: key j is row
	// j mod page_size of page BlockTable[b][j / page_size]. Every row
	// has one length, so Nk = len(row)·page_size. KVLens are the cache
	// lengths (FlashAttention's cache_seqlens): sequence b has
	// KVLens[b] keys (Nk when KVLens is nil), and only the table entries
	// of its first ⌈KVLens[b]/page_size⌉ blocks are read, each naming a
	// page of the pool; the rest may hold anything (−1, say). Sequences
	// may share pages. Q is [B, Nq, H, D] (or [B, H, Nq, D] under BHND),
	// or packed (CuSeqlensQ); causal masking is aligned to each cache's
	// length, query i at key position KVLens[b] − Nq + i. Only the rows
	// the table names below each cache length are checked for NaN and
	// infinities: the rest of a pool is never read.
	BlockTable [][]int
	// Bias is added to the scaled scores. Its shape broadcasts,
	// right-aligned, to [B, H, Nq, Nk]: each dimension is 1 or the full
	// size. −Inf hides a key; NaN and +Inf are rejected.
	Bias *Tensor
	// Mask is a boolean keep-mask with the same broadcasting as Bias.
	Mask *Mask
	// Strategy forces the staged or fused path; Auto chooses.
	Strategy Strategy
	// Weights asks for the attention weights P (staged path only).
	Weights bool
	// Scores asks for the pre-softmax scores (staged path only), at the
	// stage ScoresStage names: by default the biased scores
	// softcap(scale·Q·Kᵀ) + bias + ALiBi, before any masking.
	Scores bool
	// ScoresStage is the stage of the Scores result: StageBiased (the
	// zero value), StageRaw, StageCapped or StageMasked
	// (backend.ScoreStage). ONNX's qk_matmul_output_mode 0, 1 and 2 are
	// raw, capped and masked; its mode 3 is Weights.
	ScoresStage ScoreStage
	// LSE asks for the per-row log-sum-exp of the visible scores: −Inf for
	// a row that sees no key. Partial results over disjoint key ranges
	// merge exactly with it.
	LSE bool
	// OutDType is the dtype of Result.Out; nil means the query's. Float16
	// output of values beyond ±65504 is saturated to ±65504
	// (backend.DType.Saturate), never infinite. The LSE is always
	// Float32.
	OutDType *DType
	// MatrixDType is the dtype of Result.Weights and Result.Scores; nil
	// means the query's, as ONNX's qk_matmul_output has it. Every
	// backend forms them in float32: Float32 returns them as formed, a
	// half dtype rounds them to nearest even as O is rounded, a finite
	// score past its range saturated and −Inf kept.
	MatrixDType *DType
}

// Result holds what Attention computed.
type Result struct {
	// Out has the query's rank and layout with the last dimension Dv.
	Out *Tensor
	// Weights and Scores are [B, H, Nq, Nk] when asked for, with the
	// leading dimensions the query lacks dropped: [Nq, Nk] for a rank-2
	// query, [H, Nq, Nk] for rank 3; in Options.MatrixDType, the query's
	// dtype by default.
	Weights, Scores *Tensor
	// LSE is [B, H, Nq] when asked for, dropped to the query's rank the
	// same way; [H, total] for packed queries (Options.CuSeqlensQ).
	// Float32.
	LSE *Tensor
	// Strategy is the strategy that ran.
	Strategy Strategy
}

// Attention computes
//
//	O = softmax(scale · Q·Kᵀ + bias, masked) · V
//
// on be. q, k and v have the same rank (2, 3 or 4) and layout; K and V
// may have fewer heads than Q (GQA) when they divide H, Nk may differ from
// Nq, and V's head dim may differ from Q's. The inputs are never modified.
// With Options.CuSeqlensQ, CuSeqlensK or BlockTable the ranks are those
// of packed sequences ([total, heads, dim]) and paged caches (pools of
// pages) instead, as the options say.
//
// Every problem with the inputs is an error wrapping backend.ErrShape,
// backend.ErrNonFinite, backend.ErrTooLarge or backend.ErrUnsupported that
// names the sizes involved. ctx is honoured between tiles.
func Attention(ctx context.Context, be backend.Backend, q, k, v *Tensor, opts *Options) (*Result, error) {
	if opts == nil {
		opts = &Options{}
	}
	if be == nil {
		return nil, backend.Errorf(backend.ErrUnavailable, "nil backend")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := vFromK(k, v, opts.VFromK)
	if err != nil {
		return nil, err
	}
	if opts.Tree != nil {
		if opts, err = treeMask(q, k, opts); err != nil {
			return nil, err
		}
	}
	c, err := plan(q, k, v, opts)
	if err != nil {
		return nil, err
	}
	c.prob.VFromK = opts.VFromK > 0
	if c.strategy, err = opts.Strategy.Choose(be, c.prob, opts.Weights || opts.Scores); err != nil {
		return nil, err
	}
	return c.run(ctx, be, q, k, v, opts)
}

// Choose is the strategy s runs as for problem p on be, or the error
// Attention returns for it; it is the one place the strategy is decided.
//
//	Staged  runs staged.
//	Fused   runs fused; an error wrapping backend.ErrUnsupported when the
//	        weights or scores are wanted (wantsMatrix), which the fused
//	        path never forms, or when be's Fused cannot run p
//	        (backend.FusedSupports: say, head dims too wide for a GPU's
//	        workgroup memory).
//	Auto    runs staged when the weights or scores are wanted, on a CPU
//	        backend when B·H·Nq·Nk is at most stagedAutoLimit, or when
//	        be's Fused cannot run p; fused otherwise. It never fails,
//	        but for packed sequences and paged caches.
//
// Packed sequences and paged caches (p.Packed, p.Paged) run fused only:
// Auto and Fused run them fused on a backend with Caps.Seqs whose Fused
// can run p; Staged, the weights or scores, or a backend without
// Caps.Seqs are an error wrapping backend.ErrUnsupported.
//
// On a GPU the three staged ops cost three rounds of submissions for what
// one fused dispatch does, so small problems gain nothing there. p is a
// valid problem (Problem.Validate). A caller can ask Choose what an Auto
// call will run: attn run sizes its memory check by it.
func (s Strategy) Choose(be backend.Backend, p backend.Problem, wantsMatrix bool) (Strategy, error) {
	if err := s.check(); err != nil {
		return s, err
	}
	if p.Packed != nil || p.Paged != nil || p.Indices != nil || p.Blocks != nil {
		return s.chooseSeqs(be, p, wantsMatrix)
	}
	switch s {
	case Staged:
		return Staged, nil
	case Fused:
		if wantsMatrix {
			return Fused, backend.Errorf(backend.ErrUnsupported, "the weights and scores exist only on the staged path; the fused strategy never forms them")
		}
		if err := backend.FusedSupports(be, p); err != nil {
			return Fused, err
		}
		return Fused, nil
	case Auto:
		if wantsMatrix || be.Info().Kind != backend.KindGPU && p.ScoresLen() <= stagedAutoLimit {
			return Staged, nil
		}
		if backend.FusedSupports(be, p) != nil {
			return Staged, nil
		}
	}
	return Fused, nil
}

// check refuses a strategy that is none of the constants: the one check
// of it, shared by Choose and a cache's Attend (which runs fused without
// asking Choose).
func (s Strategy) check() error {
	switch s {
	case Auto, Staged, Fused:
		return nil
	}
	return backend.Errorf(backend.ErrShape, "unknown strategy %v (want auto, staged or fused)", s)
}

// chooseSeqs is Choose for packed sequences and paged caches, which only
// a fused path with Caps.Seqs runs: Auto and Fused run fused there, and
// every other case is an error wrapping backend.ErrUnsupported.
func (s Strategy) chooseSeqs(be backend.Backend, p backend.Problem, wantsMatrix bool) (Strategy, error) {
	what := "packed sequences"
	switch {
	case p.Blocks != nil:
		what = "block masks"
		if !be.Caps().Blocks {
			return Fused, backend.Errorf(backend.ErrUnsupported, "the %s backend takes no block masks (Caps.Blocks)", be.Name())
		}
	case p.Indices != nil:
		what = "index lists"
		if !be.Caps().Indices {
			return Fused, backend.Errorf(backend.ErrUnsupported, "the %s backend takes no index lists (Caps.Indices)", be.Name())
		}
	case p.Packed != nil && p.Paged != nil:
		what = "packed sequences over paged caches"
	case p.Paged != nil:
		what = "paged caches"
	}
	switch s {
	case Staged:
		return Staged, backend.Errorf(backend.ErrUnsupported, "the staged strategy takes no %s (B=%d Nq=%d Nk=%d): auto and fused run them fused", what, p.B, p.Nq, p.Nk)
	}
	if wantsMatrix {
		return Fused, backend.Errorf(backend.ErrUnsupported, "the weights and scores exist only on the staged path, which takes no %s", what)
	}
	if err := backend.FusedSupports(be, p); err != nil { // Caps.Seqs included
		return Fused, err
	}
	return Fused, nil
}

// devBufs are the device buffers of one call, released together.
type devBufs []backend.Buffer

func (d *devBufs) alloc(be backend.Backend, name string, dt DType, n int) (backend.Buffer, error) {
	buf, err := be.Alloc(dt, n)
	if err != nil {
		return nil, backend.Wrapf(err, "allocating %s (%d %v elements)", name, n, dt)
	}
	*d = append(*d, buf)
	return buf, nil
}

func (d *devBufs) upload(be backend.Backend, name string, data []float32) (backend.Buffer, error) {
	buf, err := d.alloc(be, name, Float32, len(data))
	if err != nil {
		return nil, err
	}
	if err := be.Write(buf, 0, data); err != nil {
		return nil, backend.Wrapf(err, "writing %s", name)
	}
	return buf, nil
}

// release frees every buffer allocated so far; deferred as
// bufs.release(), it sees the buffers appended after the defer.
func (d *devBufs) release() {
	for _, b := range *d {
		b.Release()
	}
	*d = nil
}

func (c *call) run(ctx context.Context, be backend.Backend, q, k, v *Tensor, opts *Options) (*Result, error) {
	p := c.prob
	var bufs devBufs
	defer bufs.release()
	// Q, K and V go to the backend in place where it takes them (put):
	// their strides, if any, reach it through p.Views.
	qb, qv, err := bufs.put(be, "Q", q, true)
	if err != nil {
		return nil, err
	}
	kb, kv, err := bufs.put(be, "K", k, p.Paged == nil)
	if err != nil {
		return nil, err
	}
	var vb backend.Buffer
	var vv *backend.Strides
	if p.VFromK && be.Caps().VFromK {
		vb = kb // V is read in K's buffer, at K's strides
	} else {
		if p.VFromK && p.Paged != nil {
			return nil, backend.Errorf(backend.ErrUnsupported, "V from K over a paged cache needs a backend with Caps.VFromK; this %v backend has none", be.Info().Kind)
		}
		p.VFromK = false // V is a view of K, uploaded as any V
		if vb, vv, err = bufs.put(be, "V", v, p.Paged == nil); err != nil {
			return nil, err
		}
	}
	if qv != nil || kv != nil || vv != nil {
		p.Views = &backend.Views{Q: qv, K: kv, V: vv}
	}
	bias, keep, err := c.masks(be, &bufs, opts)
	if err != nil {
		return nil, err
	}
	outDT := q.DType
	if opts.OutDType != nil {
		outDT = *opts.OutDType
	}
	// O is stored in its own dtype where the backend stores halves, and
	// otherwise computed in float32 and rounded here, by the same rule.
	devDT := outDT
	if !be.Caps().Half {
		devDT = Float32
	}
	// On a backend that wraps host memory O is written straight into
	// the result's storage (outData, outBits), else read back below.
	ob, outData, outBits, err := bufs.outBuffer(be, "O", devDT, p.OLen())
	if err != nil {
		return nil, err
	}
	var lseb backend.Buffer
	if opts.LSE {
		if lseb, err = bufs.alloc(be, "LSE", Float32, p.LSELen()); err != nil {
			return nil, err
		}
	}

	matDT := q.DType
	if opts.MatrixDType != nil {
		matDT = *opts.MatrixDType
	}
	res := &Result{Strategy: c.strategy}
	if c.strategy == Fused {
		err := be.Fused(ctx, backend.FusedParams{Problem: p, Bias: bias, Keep: keep}, qb, kb, vb, ob, lseb)
		if err != nil {
			return nil, err
		}
	} else {
		sb, err := bufs.alloc(be, "scores", Float32, p.ScoresLen())
		if err != nil {
			return nil, err
		}
		stage := backend.StageBiased
		if opts.Scores {
			stage = opts.ScoresStage
		}
		sp := backend.ScoresParams{Problem: p, Bias: bias, Stage: stage, Keep: keep}
		if err := be.Scores(ctx, sp, qb, kb, sb); err != nil {
			return nil, err
		}
		if opts.Scores {
			if res.Scores, err = c.readMatrix(be, sb, p.ScoresLen(), p.Nk, matDT); err != nil {
				return nil, err
			}
		}
		if stage == backend.StageRaw || stage == backend.StageCapped {
			// Softmax reads biased (or masked) scores: the earlier
			// stages are recomputed rather than kept beside them.
			sp.Stage = backend.StageBiased
			if err := be.Scores(ctx, sp, qb, kb, sb); err != nil {
				return nil, err
			}
		}
		if err := be.Softmax(ctx, backend.SoftmaxParams{Problem: p, Keep: keep, LSE: lseb}, sb); err != nil {
			return nil, err
		}
		if opts.Weights {
			if res.Weights, err = c.readMatrix(be, sb, p.ScoresLen(), p.Nk, matDT); err != nil {
				return nil, err
			}
		}
		if err := be.Context(ctx, backend.ContextParams{Problem: p}, sb, vb, ob); err != nil {
			return nil, err
		}
	}
	shape := append([]int(nil), q.Shape...)
	shape[len(shape)-1] = p.Dv
	res.Out = &Tensor{Shape: shape, Layout: q.Layout, DType: outDT}
	if outData != nil || outBits != nil {
		res.Out.Data, res.Out.Bits = outData, outBits
	} else if res.Out.Bits, res.Out.Data, err = readOut(be, "O", ob, outDT, p.OLen()); err != nil {
		return nil, err
	}
	if lseb != nil {
		if res.LSE, err = c.readMatrix(be, lseb, p.LSELen(), 0, Float32); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// masks uploads opts' bias (in its dtype, or Float32 where be stores no
// halves) and keep-mask (Float32: 1 keep, 0 hide) into bufs, nil for
// those opts has not.
func (c *call) masks(be backend.Backend, bufs *devBufs, opts *Options) (bias, keep *backend.Mask, err error) {
	if opts.Bias != nil {
		buf, _, err := bufs.put(be, "bias", opts.Bias, false)
		if err != nil {
			return nil, nil, err
		}
		bias = &backend.Mask{Buf: buf, Shape: c.biasShape}
	}
	if opts.Mask != nil {
		data := make([]float32, len(opts.Mask.Keep))
		for i, keepIt := range opts.Mask.Keep {
			if keepIt {
				data[i] = 1
			}
		}
		buf, err := bufs.upload(be, "mask", data)
		if err != nil {
			return nil, nil, err
		}
		keep = &backend.Mask{Buf: buf, Shape: c.keepShape}
	}
	return bias, keep, nil
}

// readOut reads n elements of output name (O) from buf as dtype dt: the bits of a half
// buffer, or float32 values, rounded to dt here (saturated, as a backend
// stores them) when dt is half and buf is not.
func readOut(be backend.Backend, name string, buf backend.Buffer, dt DType, n int) ([]uint16, []float32, error) {
	if dt.Half() && buf.DType() == dt {
		bits := make([]uint16, n)
		if err := be.ReadBits(bits, buf, 0); err != nil {
			return nil, nil, backend.Wrapf(err, "reading %s", name)
		}
		return bits, nil, nil
	}
	bits, out, err := readRounded(be, buf, dt, n)
	if err != nil {
		return nil, nil, backend.Wrapf(err, "reading %s", name)
	}
	return bits, out, nil
}

// readRounded reads n float32 elements of buf: as they are when dt is
// Float32, else rounded to half dtype dt as a backend stores an output
// (saturated: backend.DType.Saturate), a block at a time, so that no
// float32 copy of the whole is held beside the bits.
func readRounded(be backend.Backend, buf backend.Buffer, dt DType, n int) ([]uint16, []float32, error) {
	if !dt.Half() {
		out := make([]float32, n)
		if err := be.Read(out, buf, 0); err != nil {
			return nil, nil, err
		}
		return nil, out, nil
	}
	bits := make([]uint16, n)
	block := make([]float32, min(n, 1<<16))
	for off := 0; off < n; off += len(block) {
		part := block[:min(len(block), n-off)]
		if err := be.Read(part, buf, off); err != nil {
			return nil, nil, err
		}
		for i, x := range part {
			bits[off+i] = dt.Encode(dt.Saturate(x))
		}
	}
	return bits, nil, nil
}

// readMatrix reads a [B, H, Nq(, last)] result as dtype dt and shapes it
// to the query's rank; last == 0 means the result has no trailing
// dimension.
func (c *call) readMatrix(be backend.Backend, buf backend.Buffer, n, last int, dt DType) (*Tensor, error) {
	bits, data, err := readRounded(be, buf, dt, n)
	if err != nil {
		return nil, backend.Wrapf(err, "reading result")
	}
	shape := []int{c.prob.B, c.prob.H, c.prob.Nq}
	if last > 0 {
		shape = append(shape, last)
	}
	shape = shape[4-c.rank:]
	if c.prob.Packed != nil { // the LSE; packed problems have no matrices
		shape = []int{c.prob.H, c.prob.TotalQ()}
	}
	return &Tensor{Shape: shape, Layout: BHND, DType: dt, Bits: bits, Data: data}, nil
}

// vFromK is Attention's V: v itself, or where Options.VFromK is dv > 0,
// the view of K's first dv columns (v must then be nil).
func vFromK(k, v *Tensor, dv int) (*Tensor, error) {
	switch {
	case dv == 0:
		return v, nil
	case dv < 0:
		return nil, backend.Errorf(backend.ErrShape, "Options.VFromK is %d: want V's head dim, ≥ 1 (0 for a V of its own)", dv)
	case v != nil:
		return nil, backend.Errorf(backend.ErrShape, "Options.VFromK takes V from K (its first %d columns): v must be nil, not of shape %v", dv, v.Shape)
	case k == nil:
		return nil, nil // plan names the missing K
	}
	if err := k.check("K"); err != nil || len(k.Shape) == 0 {
		return k, err // plan names a K of rank 0
	}
	if d := k.Shape[len(k.Shape)-1]; dv > d {
		return nil, backend.Errorf(backend.ErrShape, "Options.VFromK takes V as K's first %d columns: K of shape %v has %d", dv, k.Shape, d)
	}
	return k.Slice(len(k.Shape)-1, 0, dv)
}
