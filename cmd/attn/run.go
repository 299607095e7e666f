package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/kernels"
)

const runSynopsis = "attn run -q Q.npy -k K.npy -v V.npy -o OUT.npy [-bias B.npy] [-mask M.npy] [-causal] [-causal-offset N] [-window L,R] [-softcap C] [-alibi SLOPES.npy] [-sinks S.npy] [-kv-lens L.npy] [-scale S] [-backend auto|cpu|gpu] [-strategy auto|staged|fused] [-weights P.npy] [-scores S.npy [-scores-stage raw|capped|biased|masked]] [-lse L.npy] [-heatmap P.png [-heatmap-head b,h]] [-layout bhnd|bnhd] [-dtype f32|f16|bf16|q8|fp8|q4] [-allow-nonfinite] [-past-k P.npy -past-v P.npy [-present-k F.npy] [-present-v F.npy]] [-cu-seqlens-q C.npy [-cu-seqlens-k C.npy]] [-block-table T.npy [-cache-lens L.npy]] [-indices I.npy] [-block-mask M.npy -block-size S] [-tree T.npy]"

const runHelp = `Computes O = softmax(scale·Q·Kᵀ + bias, masked)·V and writes it to OUT.npy.

Q, K and V have the same rank: 2 [N, D], 3 [H, N, D] or 4 [B, H, N, D]
(with -layout bnhd: 3 [N, H, D] or 4 [B, N, H, D]; the output follows).
K and V may have fewer heads than Q when they divide its head count
(grouped-query attention); K's shape gives the KV head count. Nq may differ
from Nk, and V's last dimension from D. The bias (float) and mask (bool or
numeric, nonzero = keep) broadcast right-aligned to [B, H, Nq, Nk], each
dimension 1 or the full size. Causal masking is bottom-right aligned.

Variants, as in today's models (each combines with the others):
query row i of batch b sits at key position t = a_b + i, where a_b is
-causal-offset N when given and otherwise Lb − Nq, Lb the batch's key
length (Nk without -kv-lens): the last query sits at the last key. For
the scaled score s of query i and key j:

	-softcap C         s → C·tanh(s/C), before the bias and ALiBi (Gemma 2)
	-alibi SLOPES.npy  s → s − m_h·|t − j|, one slope m_h per query head [H]
	-causal-offset N   causal with a_b = N: query i sees key j ≤ i + N;
	                   0 is top-left; a negative N may leave rows that see
	                   no key (their output is 0)
	-window L,R        key j is seen only when t − L ≤ j ≤ t + R; −1 is an
	                   unbounded side (127,0 with -causal: Mistral's window
	                   of 128 keys)
	-kv-lens L.npy     batch b sees only its first L[b] keys ([B], int32 or
	                   int64, each 0 … Nk): key padding
	-sinks S.npy       one sink logit per query head [H]: exp(S[h]) joins
	                   each row's softmax denominator, a key with no value
	                   (gpt-oss); the LSE includes it

A cache, as ONNX's Attention takes it: -past-k P.npy and -past-v P.npy
hold the keys and values of earlier steps, in K's and V's layout and rank
with the same batch, heads and head dims; attention reads the past's rows
then K's and V's (P + N keys), and with -causal query i sits at key
position P + i (ONNX's is_causal with past_key; -causal-offset overrides).
-present-k F.npy and -present-v F.npy write those keys and values, in K's
and V's dtype (ONNX's present_key and present_value).

Packed sequences, as FlashAttention's varlen API lays them out:
-cu-seqlens-q C.npy ([B+1] int32 or int64: 0, then each sequence's end)
makes Q and the output [total, H, D] rows end to end, sequence b's rows
C[b] … C[b+1]−1, and -cu-seqlens-k does the same for K and V, [total,
KVH, D]; without it K and V are dense [B, Nk, KVH, D] (-kv-lens their
lengths) or paged. Causal masking is bottom-right per sequence; the LSE
is [H, total]. A paged cache, as flash_attn_with_kvcache takes it:
-block-table T.npy ([B, blocks] int32 or int64) makes K and V page pools
[pages, page_size, KVH, D], row b of T listing sequence b's pages in
order, and Q [B, Nq, H, D] (or packed); -cache-lens L.npy ([B]) gives each
cache's length (default: every block full), and entries past a cache's
last block are not read (−1 pads them). Both imply -layout bnhd (a paged
call may say bhnd: pools [pages, KVH, page_size, D], Q [B, H, Nq, D]), run
fused only (no -weights, -scores, -heatmap or -strategy staged), and need
a backend whose fused path takes them. Only the pool rows the table names
below each cache length are checked for NaN.

Sparse attention over chosen keys, as DeepSeek's indexer and NSA select
them: -indices I.npy ([B, Heads, Nq, K] int32 or int64; [Heads, Nq, K]
or [Nq, K] for a query of rank 3 or 2; [Heads, total, K] with
-cu-seqlens-q) names, for each query row, the positions of the keys it
attends, −1 for none; Heads is 1 (one list a row for every head) or KVH
(one a KV head). Only the named keys are read; causal masking, the
window and the key lengths still hide what they hide, and a row left
with no key outputs zeros (LSE −Inf). A position out of range or named
twice in a row is an error naming the row. It runs fused, with no
-bias, -mask or -alibi.

Block-sparse attention, as FlexAttention's BlockMask gives it:
-block-mask M.npy with -block-size S ([B|1, H|1, ⌈Nq/S⌉, ⌈Nk/S⌉] or
[⌈Nq/S⌉, ⌈Nk/S⌉], bool or integers) keeps block (I, J) of S query rows by
S keys where M is nonzero; a block that is 0 is never computed. Inside
the blocks that are on, every other mask still applies (-causal,
-window, -mask for the blocks a rule's edge crosses); a row whose blocks
are all off outputs zeros. It runs fused.

-scores S.npy writes the pre-softmax scores [B, H, Nq, Nk] (staged
strategy) at the stage -scores-stage names: raw (scale·Q·Kᵀ), capped
(after the softcap), biased (plus the bias and ALiBi: the default) or
masked (every hidden key −Inf). The slopes, sinks and key lengths are
checked against H and B before Q, K and V are read.

Inputs are float16, float32 or float64 .npy files (either byte order, C
or Fortran order). Each of Q, K, V and the bias is stored as its file's
type (float16 stays float16, float64 becomes float32), or as -dtype says
(f32, f16 or bf16, which NumPy lacks: this flag is its way in); a value
the dtype cannot hold (past ±65504 in float16) is refused, naming file
and index. attn computes in float32 whatever they are. The output has
the query's rank and dtype — a bfloat16 output is written as the float32
values it holds — and so have the weights and the scores (float16 for a
float16 query, as ONNX's qk_matmul_output; -dtype f32 keeps them
float32, with the same float32 arithmetic); the LSE is float32.
-dtype q8, fp8 or q4 rounds K and V (past included) exactly as a quantized
KV cache stores them (q8 and q4: llama.cpp's q8_0 and q4_0, blocks of 32
along the head dim, a row's last block padded with zeros; fp8: E4M3,
saturating at ±448) and
keeps Q, the bias and the output float32. Every output is written
atomically. -weights and -scores need the staged
strategy (auto picks it).

Before it reads any data (but the integer lists of packed sequences and
paged caches, which the shapes are checked against), run checks every
header and shape, creates each output's temporary file beside it (so a
missing directory, or -o naming a directory, fails at once), and
refuses a run that would need more memory than is available now
(MemAvailable, lowered to the cgroup's headroom): the inputs as float32,
the backend's copies of them where it computes in host memory (cpu, a
software GPU), the outputs and, on the staged path, the B·H·Nq·Nk
scores. SIGINT or SIGTERM stops a run with
"interrupted" and exit status 130 or 143, leaving every output as it was
and no temporary file.

-heatmap draws the weights of one head (-heatmap-head b,h, default 0,0) as
an image, its format chosen by the extension (png, jpg, tif, svg, pdf), as
"attn heatmap" does: it asks for the weights, so it needs the staged
strategy too, and it draws at most 512 queries and 512 keys (slice longer
inputs).
`

// runFlags are the flags of attn run.
type runFlags struct {
	q, k, v, bias, mask string
	alibi, sinks        string
	kvLens              string
	out, weights, lse   string
	scores              string
	stage               backend.ScoreStage
	stageSet            bool
	// variants holds the variants the flags give directly (causal
	// offset, window, softcap); the files fill in the rest.
	variants       backend.Variants
	heatmap        string
	heatmapFormat  string
	heatmapHead    [2]int
	heatmapHeadSet bool
	causal         bool
	scale          float64
	scaleSet       bool
	backendName    string
	strategy       kernels.Strategy
	allowNonFinite bool
	layout         kernels.Layout
	layoutSet      bool
	// Packed sequences, paged caches and a past: the integer files'
	// paths, and the past's and present's .npy files.
	cuQ, cuK, table, cacheLens string
	// indices are the index lists of sparse attention (-indices).
	indices string
	// blockMask and blockSize are a block-sparse mask (-block-mask,
	// -block-size).
	blockMask string
	blockSize int
	// tree is a speculative draft's tree over the last Nq keys (-tree).
	tree               string
	pastK, pastV       string
	presentK, presentV string
	// vFromK, when > 0, takes V as K's first vFromK columns (-v-from-k).
	vFromK int
	// dtype stores Q, K, V and the bias as it says whatever their files
	// hold (-dtype); nil keeps each file's own: float16 as float16,
	// float32 and float64 as float32.
	dtype *kernels.DType
}

func runRun(c *cmdEnv, args []string) error {
	var f runFlags
	fs := flag.NewFlagSet("attn run", flag.ContinueOnError)
	fs.StringVar(&f.q, "q", "", "queries `Q.npy` (required)")
	fs.StringVar(&f.k, "k", "", "keys `K.npy` (required)")
	fs.StringVar(&f.v, "v", "", "values `V.npy` (required, but with -v-from-k)")
	fs.IntVar(&f.vFromK, "v-from-k", 0, "V is K's first `DV` columns, as MLA's latent cache stores them: give -k and no -v")
	fs.StringVar(&f.out, "o", "", "output `OUT.npy` (required)")
	f.variantFlags(fs)
	fs.Func("strategy", "`strategy`: auto, staged or fused", func(s string) error {
		st, err := kernels.ParseStrategy(s)
		f.strategy = st
		return err
	})
	fs.StringVar(&f.weights, "weights", "", "also write the attention weights to `P.npy` (staged only)")
	fs.StringVar(&f.scores, "scores", "", "also write the pre-softmax scores to `S.npy` (staged only), at the -scores-stage stage")
	fs.Func("scores-stage", "`stage` of the -scores output: raw, capped, biased or masked (default biased)", func(s string) error {
		st, err := backend.ParseScoreStage(strings.TrimSpace(s))
		f.stage, f.stageSet = st, true
		return err
	})
	fs.StringVar(&f.lse, "lse", "", "also write the per-row log-sum-exp to `L.npy`")
	fs.StringVar(&f.heatmap, "heatmap", "", "also draw the weights of one head as an image `P.png` (staged only; Nq, Nk ≤ 512)")
	fs.Func("heatmap-head", "the batch and head `b,h` -heatmap draws (default 0,0; h alone means 0,h)", func(s string) error {
		hd, err := parseHead(s)
		f.heatmapHead, f.heatmapHeadSet = hd, true
		return err
	})
	fs.StringVar(&f.pastK, "past-k", "", "a cache's past keys `P.npy`, in K's layout and rank: the keys are the past's then K's (ONNX's past_key); needs -past-v")
	fs.StringVar(&f.pastV, "past-v", "", "a cache's past values `P.npy`, in V's layout and rank: the values are the past's then V's (ONNX's past_value)")
	fs.StringVar(&f.presentK, "present-k", "", "also write the keys attention read, past then new, to `F.npy` in K's dtype (ONNX's present_key)")
	fs.StringVar(&f.presentV, "present-v", "", "also write the values attention read, past then new, to `F.npy` in V's dtype (ONNX's present_value)")
	fs.StringVar(&f.table, "block-table", "", "a paged cache: `T.npy`, [B, blocks] int32 or int64 page numbers; K and V are page pools [pages, page_size, KVH, D]")
	fs.StringVar(&f.blockMask, "block-mask", "", "block-sparse mask `M.npy`, [B|1, H|1, ⌈Nq/S⌉, ⌈Nk/S⌉] (or [⌈Nq/S⌉, ⌈Nk/S⌉]) bool or integers: a block that is 0 is never computed (needs -block-size)")
	fs.IntVar(&f.blockSize, "block-size", 0, "the block mask's blocks: `S` query rows by S keys")
	fs.StringVar(&f.tree, "tree", "", "a speculative draft's tree `T.npy` over the last Nq keys, [Nq, Nq] or [B, Nq, Nq] bool or integers: query i sees every key before the draft and the draft keys j with T[i][j] (T[i][i] set, none after i); causal implied")
	fs.StringVar(&f.indices, "indices", "", "sparse attention over chosen keys: `I.npy`, [B, Heads, Nq, K] int32 or int64 key positions a query row attends (Heads 1 or KVH; −1 none); runs fused, with no bias, mask or ALiBi")
	fs.StringVar(&f.cacheLens, "cache-lens", "", "the paged caches' lengths `L.npy`, [B] int32 or int64 (with -block-table; default: every block full)")
	if err := c.parseFlags(fs, runSynopsis, runHelp, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	return interruptible(func(ctx context.Context) error { return c.attention(ctx, &f) })
}

// variantFlags registers the flags attn run and attn grad share: the
// bias and keep-mask, the variants, the scale, the backend, the dtype
// and layout, packed sequences and -allow-nonfinite.
func (f *runFlags) variantFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.bias, "bias", "", "additive bias `B.npy`, broadcast to [B, H, Nq, Nk]; -Inf hides a key")
	fs.StringVar(&f.mask, "mask", "", "keep-mask `M.npy`, broadcast to [B, H, Nq, Nk]; nonzero keeps a key")
	fs.BoolVar(&f.causal, "causal", false, "causal masking, bottom-right aligned")
	fs.Func("causal-offset", "causal masking with query row i at key position `N` + i (implies -causal; 0 is top-left, N may be negative)", func(s string) error {
		o, err := parseOffset(s)
		f.variants.CausalOffset = o
		return err
	})
	fs.Func("window", "sliding window `L,R`: a query sees the keys from L before its position to R after it; -1 is unbounded", func(s string) error {
		w, err := parseWindow(s)
		f.variants.Window = w
		return err
	})
	fs.Func("softcap", "cap the scaled scores at ±`C` with C·tanh(s/C) (C > 0)", func(s string) error {
		c, err := parseSoftcap(s)
		f.variants.Softcap = c
		return err
	})
	fs.StringVar(&f.alibi, "alibi", "", "ALiBi slopes `SLOPES.npy`, [H] float: the score of key j gains −slope·|t − j|")
	fs.StringVar(&f.sinks, "sinks", "", "attention sink logits `S.npy`, [H] float: exp(S[h]) joins each row's softmax denominator")
	fs.StringVar(&f.kvLens, "kv-lens", "", "per-batch key lengths `L.npy`, [B] int32 or int64: batch b sees only its first L[b] keys")
	fs.Func("scale", "multiply Q·Kᵀ by `S`; 0 means 1/√D, the default, as everywhere in attn", func(s string) error {
		v, err := parseScale(s)
		f.scale, f.scaleSet = v, true
		return err
	})
	fs.StringVar(&f.backendName, "backend", "auto", "`name` of the backend: auto, cpu or gpu (auto honours $ATTN_BACKEND)")
	fs.BoolVar(&f.allowNonFinite, "allow-nonfinite", false, "do not reject NaN or infinite inputs")
	fs.Func("dtype", "store Q, K, V and the bias as `dtype` f32, f16 or bf16 whatever their files hold (default: each file's own, float16 kept, float64 as f32); the output takes Q's; q8, fp8 or q4 rounds K and V as a quantized cache stores them (q8, q4: blocks of 32 along the head dim; fp8: E4M3, saturating at ±448), with Q, the bias and the output float32", func(s string) error {
		dt, err := backend.ParseDType(s)
		f.dtype = &dt
		return err
	})
	fs.Func("layout", "`order` of the dimensions of q, k, v and the output: bhnd [B, H, N, D] or bnhd [B, N, H, D] (default bhnd)", func(s string) error {
		l, err := parseLayout(s)
		f.layout, f.layoutSet = l, true
		return err
	})
	fs.StringVar(&f.cuQ, "cu-seqlens-q", "", "packed sequences: `C.npy`, [B+1] int32 or int64 row offsets into Q, whose rows are [total, H, D]")
	fs.StringVar(&f.cuK, "cu-seqlens-k", "", "packed keys: `C.npy`, [B+1] int32 or int64 row offsets into K and V, [total, KVH, D] (with -cu-seqlens-q)")
}

// check validates the flags on their own, before any file is opened.
func (f *runFlags) check() error {
	var missing []string
	for _, r := range []struct{ name, val string }{{"-q", f.q}, {"-k", f.k}, {"-v", f.v}, {"-o", f.out}} {
		if r.val == "" && (r.name != "-v" || f.vFromK == 0) {
			missing = append(missing, r.name)
		}
	}
	if len(missing) > 0 {
		return usagef("missing required flag %s", strings.Join(missing, ", "))
	}
	switch {
	case f.vFromK < 0:
		return usagef("-v-from-k %d: want V's head dim, ≥ 1", f.vFromK)
	case f.vFromK > 0 && f.v != "":
		return usagef("-v-from-k takes V from K: give no -v")
	case f.vFromK > 0 && (f.pastK != "" || f.pastV != "" || f.presentK != "" || f.presentV != ""):
		return usagef("-v-from-k takes no past or present K and V: give the whole K with -k")
	case f.blockMask != "" && f.blockSize < 1:
		return usagef("-block-mask needs -block-size S ≥ 1, its blocks' rows and keys")
	case f.blockMask == "" && f.blockSize != 0:
		return usagef("-block-size %d without -block-mask", f.blockSize)
	}
	if err := f.checkSeqFlags(); err != nil {
		return err
	}
	if f.weights != "" && f.strategy == kernels.Fused {
		return usagef("-weights needs the staged strategy; -strategy fused never materialises the weights (use -strategy staged or auto)")
	}
	if f.scores != "" && f.strategy == kernels.Fused {
		return usagef("-scores needs the staged strategy; -strategy fused never materialises the scores (use -strategy staged or auto)")
	}
	if f.stageSet && f.scores == "" {
		return usagef("-scores-stage picks the stage of the -scores output; give -scores too")
	}
	if f.heatmap != "" && f.strategy == kernels.Fused {
		return usagef("-heatmap draws the weights, which need the staged strategy; -strategy fused never materialises them (use -strategy staged or auto)")
	}
	if f.heatmapHeadSet && f.heatmap == "" {
		return usagef("-heatmap-head picks the head -heatmap draws; give -heatmap too")
	}
	if f.heatmap != "" {
		format, err := imageFormat("-heatmap", f.heatmap)
		if err != nil {
			return err
		}
		f.heatmapFormat = format
	}
	if err := checkBackendName(f.backendName); err != nil {
		return err
	}
	// An output may not replace an input or another output.
	ins := map[string]string{"-q": f.q, "-k": f.k, "-v": f.v, "-bias": f.bias, "-mask": f.mask,
		"-alibi": f.alibi, "-sinks": f.sinks, "-kv-lens": f.kvLens, "-past-k": f.pastK, "-past-v": f.pastV,
		"-cu-seqlens-q": f.cuQ, "-cu-seqlens-k": f.cuK, "-block-table": f.table, "-cache-lens": f.cacheLens, "-indices": f.indices, "-block-mask": f.blockMask, "-tree": f.tree}
	outs := []struct{ name, path string }{{"-o", f.out}, {"-weights", f.weights}, {"-scores", f.scores}, {"-lse", f.lse}, {"-heatmap", f.heatmap},
		{"-present-k", f.presentK}, {"-present-v", f.presentV}}
	for i, o := range outs {
		if o.path == "" {
			continue
		}
		for _, in := range []string{"-q", "-k", "-v", "-bias", "-mask", "-alibi", "-sinks", "-kv-lens", "-past-k", "-past-v",
			"-cu-seqlens-q", "-cu-seqlens-k", "-block-table", "-cache-lens", "-indices", "-block-mask", "-tree"} {
			if ins[in] != "" && samePath(o.path, ins[in]) {
				return usagef("%s %s would overwrite the input %s %s", o.name, o.path, in, ins[in])
			}
		}
		for _, p := range outs[:i] {
			if p.path != "" && samePath(o.path, p.path) {
				return usagef("%s and %s both name %s", p.name, o.name, o.path)
			}
		}
	}
	return nil
}

// samePath reports whether a and b name the same file, existing or not.
func samePath(a, b string) bool {
	if sa, err := os.Stat(a); err == nil {
		if sb, err := os.Stat(b); err == nil {
			return os.SameFile(sa, sb)
		}
	}
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == ab
}

// attention reads and checks the inputs, runs attention and writes the
// outputs. Before any data is read it checks every header and shape
// (planRun), reserves every output (reserveOutputs: the directory
// exists, the temporary file is created) and checks that the inputs and
// outputs fit in the memory available (checkMemory); every temporary
// file is removed on every path that does not commit it.
func (c *cmdEnv) attention(ctx context.Context, f *runFlags) error {
	files := map[string]*npyFile{}
	defer func() {
		for _, nf := range files {
			nf.f.Close()
		}
	}()
	if err := openRunInputs(f, files); err != nil {
		return err
	}
	plan, err := planRun(ctx, f, files)
	if err != nil {
		return err
	}
	outs, err := reserveOutputs(f)
	defer outs.discard()
	if err != nil {
		return err
	}

	be, err := c.openBackend(f.backendName)
	if err != nil {
		return err
	}
	defer be.Close()
	if err := checkMemory(f, files, be, plan.prob); err != nil {
		return err
	}
	// The per-head and per-batch values, before Q, K and V: a wrong
	// count or value fails here, with nothing written.
	if err := applyVariantFiles(ctx, plan.prob, files, plan.opts); err != nil {
		return err
	}
	qkv, err := readQKV(ctx, f, files, plan.prob)
	if err != nil {
		return err
	}
	if err := readBiasMask(ctx, f, files, plan.prob, plan.opts); err != nil {
		return err
	}
	res, err := kernels.Attention(ctx, be, qkv[0], qkv[1], qkv[2], plan.opts)
	if err != nil {
		return poolError(f, plan.prob, err)
	}
	written, err := outs.write(f, plan, res, qkv)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, p := range written {
		if err := p.commit(); err != nil {
			return err
		}
	}
	outs.report(c.stdout, f, plan, be.Name(), res, qkv)
	return nil
}

// openRunInputs opens every input file f names into files, by key, and
// checks its header for the type its role needs; files holds what was
// opened even on an error, for the caller to close.
func openRunInputs(f *runFlags, files map[string]*npyFile) error {
	for _, in := range []struct{ key, path string }{{"q", f.q}, {"k", f.k}, {"v", f.v}, {"bias", f.bias}, {"mask", f.mask},
		{"alibi", f.alibi}, {"sinks", f.sinks}, {"kvlens", f.kvLens}, {"pastk", f.pastK}, {"pastv", f.pastV},
		{"cuq", f.cuQ}, {"cuk", f.cuK}, {"table", f.table}, {"cachelens", f.cacheLens}, {"indices", f.indices}, {"blocks", f.blockMask}, {"tree", f.tree}} {
		if in.path == "" {
			continue
		}
		nf, err := openNpy(in.path)
		if err != nil {
			return err
		}
		files[in.key] = nf
		check := nf.checkFloat
		switch in.key {
		case "mask":
			check = nf.checkKeep
		case "blocks":
			check = func() error {
				if r := len(nf.shape); r != 2 && r != 4 {
					return fmt.Errorf("-block-mask %s has shape %s; want [B|1, H|1, ⌈Nq/S⌉, ⌈Nk/S⌉] or [⌈Nq/S⌉, ⌈Nk/S⌉]", nf.path, operand.NpyShape(nf.shape))
				}
				// Bool or integers, as the help says: a float block
				// mask is more likely a bias or an element mask given
				// to the wrong flag than blocks that are on or off.
				if t := nf.dtype; t.kind != 'b' && t.kind != 'i' && t.kind != 'u' {
					return fmt.Errorf("-block-mask %s: dtype %s (%s); want bool or integers (a block that is 0 is never computed)", nf.path, t.name(), t.descr)
				}
				return nil
			}
		case "tree":
			check = func() error {
				if r := len(nf.shape); r != 2 && r != 3 {
					return fmt.Errorf("-tree %s has shape %s; want [Nq, Nq] or [B, Nq, Nq]", nf.path, operand.NpyShape(nf.shape))
				}
				if t := nf.dtype; t.kind != 'b' && t.kind != 'i' && t.kind != 'u' {
					return fmt.Errorf("-tree %s: dtype %s (%s); want bool or integers", nf.path, t.name(), t.descr)
				}
				return nil
			}
		case "alibi", "sinks", "kvlens":
			check = func() error { return checkVariantHeader(in.key, nf) }
		case "cuq", "cuk", "table", "cachelens", "indices":
			check = func() error { return checkSeqHeader(in.key, nf) }
		}
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// runPlan is what attn run knows before it reads Q, K and V: the
// problem the headers describe and the options kernels.Attention runs
// with, built up as the run goes (the variant files, then the bias and
// mask, are added once their data is read).
type runPlan struct {
	prob backend.Problem
	// full is [B, H, Nq, Nk], the shape of the weights and scores.
	full [4]int
	opts *kernels.Options
}

// planRun checks the shapes in the headers, with the variants the flags
// give and the sequences' lists (small integer files, read now); the
// other files' values come later. With a past, K and V are the past's
// rows then the new ones, and causal masking is ONNX's: query i at key
// position P + i. The options hold everything the flags ask for; only
// Shapes.Check's part of them is read here.
func planRun(ctx context.Context, f *runFlags, files map[string]*npyFile) (*runPlan, error) {
	// The past's offset below goes to opts, not to f.variants, which the
	// heatmap's title reads as the flags gave it. -causal-offset implies
	// -causal, where the library's CausalOffset refines Causal: a flag
	// named so says what it wants.
	fv := f.variants
	opts := &kernels.Options{
		Scale: f.scale, Causal: f.causal || fv.CausalOffset != nil, CausalOffset: fv.CausalOffset,
		Window: fv.Window, Softcap: float64(fv.Softcap),
	}
	opts.ScoresStage = f.stage
	opts.Strategy = f.strategy
	opts.Weights = f.weights != "" || f.heatmap != ""
	opts.Scores = f.scores != ""
	opts.LSE = f.lse != ""
	opts.AllowNonFinite = f.allowNonFinite
	if err := seqOptions(ctx, files, opts); err != nil {
		return nil, err
	}
	opts.VFromK = f.vFromK
	if f.vFromK > 0 {
		if err := vFromKFile(f, files); err != nil {
			return nil, err
		}
	}
	q, k, v := files["q"], files["k"], files["v"]
	s, err := headerShapes(q, k, v, files["bias"], files["mask"], f.layout)
	if err != nil {
		return nil, err
	}
	if pk := files["pastk"]; pk != nil {
		var past int
		if s.K, s.V, past, err = presentShapes(pk, files["pastv"], k, v, f.layout); err != nil {
			return nil, err
		}
		if f.causal && opts.CausalOffset == nil {
			opts.CausalOffset = &past
		}
	}
	seqNames(files, &s.Names)
	prob, err := s.Check(opts)
	if err != nil {
		return nil, indicesError(f, s, opts, err)
	}
	full := [4]int{prob.B, prob.H, prob.Nq, prob.Nk}
	if f.heatmap != "" {
		if err := checkHead(f.heatmapHead, full[0], full[1], q.path, q.shape); err != nil {
			return nil, fmt.Errorf("-heatmap-head: %v", err)
		}
		if err := checkHeatmapSize(full[2], full[3]); err != nil {
			return nil, fmt.Errorf("-heatmap: %v", err)
		}
	}
	return &runPlan{prob: prob, full: full, opts: opts}, nil
}

// readQKV reads Q, K and V, each file checked for NaN and infinities
// unless -allow-nonfinite but a paged pool's. A past goes before K's and
// V's rows.
func readQKV(ctx context.Context, f *runFlags, files map[string]*npyFile, prob backend.Problem) ([3]*kernels.Tensor, error) {
	var tensors [3]*kernels.Tensor
	for i, in := range []struct {
		flag string
		nf   *npyFile
		past *npyFile
	}{{"-q", files["q"], nil}, {"-k", files["k"], files["pastk"]}, {"-v", files["v"], files["pastv"]}} {
		if i == 2 && f.vFromK > 0 {
			break // V is K's first columns: kernels.Attention takes it from K
		}
		a, err := in.nf.readFloats(ctx)
		if err != nil {
			return tensors, err
		}
		// A paged pool is left to kernels.Attention, which checks only
		// the rows the table names below each cache length; see
		// poolError.
		if !f.allowNonFinite && (i == 0 || prob.Paged == nil) {
			if err := a.checkFinite(false); err != nil {
				return tensors, err
			}
		}
		if tensors[i], err = a.tensor(f.layout, f.elemDType()); err != nil {
			return tensors, err
		}
		if in.past == nil {
			continue
		}
		pa, err := in.past.readFloats(ctx)
		if err != nil {
			return tensors, err
		}
		if !f.allowNonFinite {
			if err := pa.checkFinite(false); err != nil {
				return tensors, err
			}
		}
		pt, err := pa.tensor(f.layout, f.elemDType())
		if err != nil {
			return tensors, err
		}
		if tensors[i], err = kernels.ConcatSeq(pt, tensors[i]); err != nil {
			return tensors, fmt.Errorf("-past-%s %s: %w", in.flag[1:], in.past.path, err)
		}
	}
	if f.dtype != nil && f.dtype.Quantized() {
		for i, flag := range []string{"-k", "-v"} {
			if tensors[i+1] == nil {
				continue // V from K
			}
			if err := quantize(*f.dtype, tensors[i+1]); err != nil {
				return tensors, fmt.Errorf("%s with -dtype %v: %w", flag, *f.dtype, err)
			}
		}
	}
	return tensors, nil
}

// elemDType is the dtype the tensors are stored in: -dtype's, float32
// under an 8-bit -dtype (which rounds K and V alone: quantize), nil
// (each file's own) without one.
func (f *runFlags) elemDType() *kernels.DType {
	if f.dtype != nil && f.dtype.Quantized() {
		dt := kernels.Float32
		return &dt
	}
	return f.dtype
}

// quantize rounds t, a float32 K or V, to what a cache of the quantized
// dt stores, in place: q8 and q4 by blocks along its last dim (the head dim; a
// row's last block padded with zeros), fp8 value by value.
func quantize(dt kernels.DType, t *kernels.Tensor) error {
	return dt.RoundRows(t.Data, t.Data, t.Shape[len(t.Shape)-1])
}

// poolError names the files of a paged cache's pools in err, an error
// of kernels.Attention. Its check of the pools' rows is the only one
// (the rows it reads are the table's pages below each cache length, a
// walk that lives in kernels alone), and it names the operand, K or V,
// and the sequence, key and page, but not the file; Q and the bias were
// checked as they were read, so a non-finite input here is a pool's.
func poolError(f *runFlags, prob backend.Problem, err error) error {
	if prob.Paged == nil || !errors.Is(err, backend.ErrNonFinite) {
		return err
	}
	return fmt.Errorf("the page pools -k %s (K) and -v %s (V): %w; attn rejects NaN and infinite inputs in the rows it reads (pass -allow-nonfinite to skip this check)", f.k, f.v, err)
}

// indicesError names the -indices file in err, an error of s.Check(opts),
// when the index list is what it refuses: the library's message names
// the batch, head, row and entry, not the file. The list is the culprit
// when the same shapes pass without it.
func indicesError(f *runFlags, s kernels.Shapes, opts *kernels.Options, err error) error {
	if opts.Indices == nil {
		return err
	}
	without := *opts
	without.Indices = nil
	if _, err2 := s.Check(&without); err2 != nil {
		return err
	}
	return fmt.Errorf("-indices %s: %w", f.indices, err)
}

// readBiasMask reads the bias (checked for NaN and +Inf unless
// -allow-nonfinite: −Inf hides a key), the mask and the block mask into
// opts; prob is the problem planRun checked, against which the block
// mask's shape is checked here, so that its error names its file.
func readBiasMask(ctx context.Context, f *runFlags, files map[string]*npyFile, prob backend.Problem, opts *kernels.Options) error {
	if nf := files["bias"]; nf != nil {
		a, err := nf.readFloats(ctx)
		if err != nil {
			return err
		}
		if !f.allowNonFinite {
			if err := a.checkFinite(true); err != nil {
				return err
			}
		}
		if opts.Bias, err = a.tensor(kernels.BHND, f.elemDType()); err != nil {
			return err
		}
	}
	if nf := files["mask"]; nf != nil {
		keep, err := nf.readKeep(ctx)
		if err != nil {
			return err
		}
		opts.Mask = &kernels.Mask{Shape: nf.shape, Keep: keep}
	}
	if nf := files["tree"]; nf != nil {
		keep, err := nf.readKeep(ctx)
		if err != nil {
			return err
		}
		n := nf.shape[len(nf.shape)-1]
		tr := &kernels.Tree{B: 1, N: n, Keep: keep}
		if len(nf.shape) == 3 {
			tr.B = nf.shape[0]
		}
		if nf.shape[len(nf.shape)-2] != n {
			return fmt.Errorf("-tree %s has shape %s: want [Nq, Nq] or [B, Nq, Nq]", nf.path, operand.NpyShape(nf.shape))
		}
		if err := tr.Check(prob.B, prob.Nq); err != nil {
			return fmt.Errorf("-tree %s: %w", nf.path, err)
		}
		opts.Tree = tr
	}
	if nf := files["blocks"]; nf != nil {
		keep, err := nf.readKeep(ctx)
		if err != nil {
			return err
		}
		bm := &kernels.BlockMask{Size: f.blockSize, Shape: [4]int{1, 1, nf.shape[0], nf.shape[1]}, Keep: keep}
		if len(nf.shape) == 4 {
			copy(bm.Shape[:], nf.shape)
		}
		// The rest of prob passed planRun's check: an error now is the
		// block mask's.
		prob.Blocks = bm
		if err := prob.Validate(); err != nil {
			return fmt.Errorf("-block-mask %s: %w", nf.path, err)
		}
		opts.Blocks = bm
	}
	return nil
}

// checkHeaders has kernels check the shapes in the headers of q, k, v
// and the optional bias and mask (nil for none) with opts, as
// kernels.Attention will check them (Shapes.Check), so that a call that
// cannot run fails before any data is read; each error names the file.
// It returns the problem they describe. attn also refuses an empty Q, K
// or V, which kernels allows.
func checkHeaders(q, k, v, bias, mask *npyFile, layout kernels.Layout, opts *kernels.Options) (backend.Problem, error) {
	s, err := headerShapes(q, k, v, bias, mask, layout)
	if err != nil {
		return backend.Problem{}, err
	}
	return s.Check(opts)
}

// headerShapes are the shapes checkHeaders checks, each named by its
// file; an empty Q, K or V is refused here.
func headerShapes(q, k, v, bias, mask *npyFile, layout kernels.Layout) (kernels.Shapes, error) {
	s := kernels.Shapes{Q: q.shape, K: k.shape, V: v.shape, Layout: layout,
		Names: kernels.OperandNames{Q: q.path, K: k.path, V: v.path}}
	if bias != nil {
		s.Bias, s.Names.Bias = bias.shape, "bias "+bias.path
	}
	if mask != nil {
		s.Mask, s.Names.Mask = mask.shape, "mask "+mask.path
	}
	for _, nf := range []*npyFile{q, k, v} {
		if nf.n == 0 {
			return s, fmt.Errorf("%s is empty: shape %s", nf.path, operand.NpyShape(nf.shape))
		}
	}
	return s, nil
}

// vFromKFile stands V's file in for -v-from-k DV: K's header with a last
// dimension of DV, read from no file (readQKV reads no V), so that the
// shapes and the memory estimate see the V that kernels.Attention takes
// from K.
func vFromKFile(f *runFlags, files map[string]*npyFile) error {
	k := files["k"]
	if len(k.shape) == 0 {
		return fmt.Errorf("-v-from-k: %s is a scalar", k.path)
	}
	d := k.shape[len(k.shape)-1]
	if f.vFromK > d {
		return fmt.Errorf("-v-from-k %d: %s of shape %s has a head dim of %d", f.vFromK, k.path, operand.NpyShape(k.shape), d)
	}
	shape := append([]int(nil), k.shape...)
	shape[len(shape)-1] = f.vFromK
	n := 0
	if d > 0 {
		n = k.n / d * f.vFromK
	}
	files["v"] = &npyFile{path: fmt.Sprintf("%s[..., :%d]", k.path, f.vFromK), dtype: k.dtype, shape: shape, n: n}
	return nil
}
