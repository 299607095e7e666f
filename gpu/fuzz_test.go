//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"errors"
	"flag"
	"math"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/kernels"
)

// Flags of a fuzz input.
const (
	fzBNHD   = 1 << iota // the BNHD layout
	fzCausal             // causal masking
	fzStaged             // Scores → Softmax → Context instead of Fused
	fzNoLSE              // the GPU computes no LSE
	fzBias               // a bias, broadcast by the bias pattern
	fzKeep               // a keep-mask, broadcast by the keep pattern
	// fzIndices gives index lists (backend.Indices) of 1 + vpar%64 keys
	// a row, per KV head when vpar&64 (else one a row), drawn from vpar;
	// they take no bias, keep-mask or ALiBi (dropped) and run fused.
	fzIndices
	// fzBlocks gives a block mask (backend.BlockMask) of blocks of
	// 8·(1 + vpar>>8 & 7) rows and keys, about half on, one a head when
	// vpar&1, drawn from vpar; it runs fused (unless fzIndices wins).
	fzBlocks
)

// Variant flags of a fuzz input (its vflags), each decoded from vpar:
//
//	fzvOffset   CausalOffset = int8(vpar & 0xff): rows past the keys, or before them
//	fzvWindow   Window{Left: 8·(vpar>>8 & 0xf) − 1, Right: 8·(vpar>>12) − 1} (−1 unbounded)
//	fzvSoftcap  Softcap = 0.5 + 2·(vpar & 0xf), scale up to 64 to cap large scores
//	fzvALiBi    ALiBi slopes 2^−(h+1)
//	fzvSinks    Sinks[h] = h%5 − 2
//	fzvKVLens   KVLens[b] = one of 0, Nk, Nk/2 by (b + vpar) % 3
//	fzvPacked   packed queries (BNHD), and packed keys unless paged (fuzzSeqs)
//	fzvPaged    a paged cache (fuzzSeqs)
const (
	fzvOffset = 1 << iota
	fzvWindow
	fzvSoftcap
	fzvALiBi
	fzvSinks
	fzvKVLens
	fzvPacked
	fzvPaged
)

// fuzzDTypes are the storage an input's dtype picks, by dtype modulo
// their count: float32 (the zero DTypes) three times in eight.
var fuzzDTypes = []backendtest.DTypes{
	{},
	backendtest.Same(backend.Float16),
	backendtest.Same(backend.BFloat16),
	{K: backend.Q8, V: backend.Q8},
	{K: backend.FP8, V: backend.FP8},
	{K: backend.Q4, V: backend.Q4},
	{},
	{},
}

// Bits of an input's dtype above fuzzDTypes' index (dtype & 7).
const (
	// fzdReal gives the head dims of real models, fuzzRealDims[d % 3]
	// (dv unused), which the hardware plan runs too, whatever their
	// width: there it runs fusedtile.wgsl (64 and above), lanedecode.wgsl
	// and MLA's latent rows. In the test run only (the seeds): a fuzzing
	// worker gives an input 10 s, and each new mask, variant or dtype at
	// these head dims compiles the plan's kernels anew, seconds each on
	// lavapipe, past the 10 s under CI's load (an input of D = 64 with a
	// window, 12 × 150, 7 s alone, hung CI's worker); a worker passes
	// them by.
	fzdReal = 1 << 3
	// fzdFar multiplies the bias by 100: a row's scores hundreds apart
	// inside a tile, a team of lanes or a split, where a kernel that
	// rescales by a maximum that missed the peak overflows.
	fzdFar = 1 << 4
	// fzdGrad runs the backward pass too under the hardware plan
	// (backkv.wgsl and backq.wgsl, a key's or row's head dims over
	// subgroup lanes), against the CPU's, where the backward takes the
	// problem (no pages, V from K or 8-bit operands) and lavapipe's loop
	// cap allows (130 rows and keys). The adapter's plan's backward is
	// FuzzBackward's. Not in a fuzzing worker: the backward's kernels at
	// a head dim or operand storage the worker has not compiled take
	// lavapipe 10 to 30 s at D = 128, past the 10 s Go's fuzzer gives an
	// input (an input of D = 128, 65 × 130 keys, a bias, hung CI's
	// worker); the seeds run it, in the test run.
	fzdGrad = 1 << 5
)

// fuzzRealDims are the head dims fzdReal picks: D = Dv = 64 and 128, and
// MLA's latent rows (576, V their first 512 columns).
var fuzzRealDims = []struct {
	d, dv  int
	vFromK bool
}{{64, 64, false}, {128, 128, false}, {576, 512, true}}

// fuzzMaxWork caps B·H·Nq·Nk·(D+Dv), the multiply-adds of one input, so
// that an input costs tens of milliseconds on lavapipe; fuzzRefWork is the
// size up to which backendtest.Reference also judges the GPU.
const (
	fuzzMaxWork = 20_000_000
	fuzzRefWork = 2_000_000
	// fuzzHWMaxD is the widest head dim an input runs under the hardware
	// plan too. Go's fuzz worker gives an input 10 s, and a head dim the
	// process has not met yet is compiled then, on lavapipe in LLVM at the
	// first dispatch: the hardware plan's kernels, their loops written
	// out, took most of an input's time at D = 63, Dv = 97 with Mesa's
	// cache empty, the CPU plan's and the staged ones the rest, and the
	// whole came near the limit.
	fuzzHWMaxD = 32
)

// fuzzCase decodes a fuzz input into a problem, its mask shapes and the
// options of the run:
//
//	B = 1 + b%3, KVHeads = 1 + kv%3, H = KVHeads·(1 + group%4)
//	Nq = nq%301, Nk = nk%301, D = 1 + d%160, Dv = 1 + dv%160
//	scale = remainder(scale, 4) ∈ [−2, 2], or 1/√D when not finite
//
// (D and Dv from fuzzRealDims under dtype's fzdReal; V from K, MLA's,
// capped at fuzzRefWork, for the reference judges it)
// and flags as above, the variants of vflags and vpar (fuzzVariants), and
// packed sequences or a paged cache (fuzzSeqs). Bit i of a pattern (i = 0 … 3 for B, H, Nq, Nk)
// makes that mask dimension full rather than 1. A problem over
// fuzzMaxWork loses batches, then query heads per KV head, then KV heads,
// then half its queries, until it fits.
func fuzzCase(b, kv, group, nq, nk, d, dv uint16, flags, biasPat, keepPat uint8, scale float32, vflags uint8, vpar uint16, dtype uint8) (p backend.Problem, bias, keep *[4]int) {
	g := 1 + int(group)%4
	p = backend.Problem{
		B: 1 + int(b)%3, KVHeads: 1 + int(kv)%3,
		Nq: int(nq) % 301, Nk: int(nk) % 301,
		D: 1 + int(d)%160, Dv: 1 + int(dv)%160,
		Causal: flags&fzCausal != 0,
	}
	maxWork := fuzzMaxWork
	if dtype&fzdReal != 0 {
		r := fuzzRealDims[int(d)%len(fuzzRealDims)]
		p.D, p.Dv, p.VFromK = r.d, r.dv, r.vFromK
		if p.VFromK {
			maxWork = fuzzRefWork
		}
	}
	p.H = p.KVHeads * g
	if flags&fzBNHD != 0 {
		p.Layout = backend.BNHD
	}
	p.Scale = float32(math.Remainder(float64(scale), 4))
	if math.IsNaN(float64(scale)) || math.IsInf(float64(scale), 0) {
		p.Scale = float32(1 / math.Sqrt(float64(p.D)))
	}
	work := func() int { return p.B * p.H * p.Nq * p.Nk * (p.D + p.Dv) }
	for work() > maxWork {
		switch {
		case p.B > 1:
			p.B--
		case p.H > p.KVHeads:
			p.H -= p.KVHeads
		case p.KVHeads > 1:
			p.KVHeads--
			p.H = p.KVHeads
		default:
			p.Nq /= 2
		}
	}
	pat := func(bits uint8) *[4]int {
		full := [4]int{p.B, p.H, p.Nq, p.Nk}
		s := [4]int{1, 1, 1, 1}
		for i := range s {
			if bits&(1<<i) != 0 {
				s[i] = full[i]
			}
		}
		return &s
	}
	fuzzVariants(&p, vflags, vpar)
	fuzzSeqs(&p, vflags, vpar)
	if flags&fzIndices != 0 {
		heads := 1
		if vpar&64 != 0 {
			heads = p.KVHeads
		}
		p.ALiBi = nil
		p = backendtest.WithIndices(newRand(uint64(vpar)), p, heads, 1+int(vpar)%64)
		return p, nil, nil
	}
	if flags&fzBlocks != 0 {
		p = backendtest.WithBlocks(newRand(uint64(vpar)+1), p, 8*(1+int(vpar>>8&7)), 0.5, vpar&1 != 0)
	}
	if flags&fzBias != 0 {
		bias = pat(biasPat)
	}
	if flags&fzKeep != 0 {
		keep = pat(keepPat)
	}
	return p, bias, keep
}

// fuzzVariants sets p's variants from vflags and vpar (see fzvOffset).
func fuzzVariants(p *backend.Problem, vflags uint8, vpar uint16) {
	if vflags&fzvOffset != 0 {
		o := int(int8(vpar & 0xff))
		p.CausalOffset = &o
	}
	if vflags&fzvWindow != 0 {
		p.Window = &backend.Window{Left: 8*int(vpar>>8&0xf) - 1, Right: 8*int(vpar>>12) - 1}
	}
	if vflags&fzvSoftcap != 0 {
		p.Softcap = 0.5 + 2*float32(vpar&0xf)
		p.Scale *= 32
	}
	if vflags&fzvALiBi != 0 {
		p.ALiBi = make([]float32, p.H)
		for h := range p.ALiBi {
			p.ALiBi[h] = float32(math.Exp2(-float64(h + 1)))
		}
	}
	if vflags&fzvSinks != 0 {
		p.Sinks = make([]float32, p.H)
		for h := range p.Sinks {
			p.Sinks[h] = float32(h%5 - 2)
		}
	}
	if vflags&fzvKVLens != 0 {
		p.KVLens = make([]int, p.B)
		for b := range p.KVLens {
			p.KVLens[b] = []int{0, p.Nk, p.Nk / 2}[(b+int(vpar))%3]
		}
	}
}

// fuzzSeqs makes p's batches sequences of their own lengths: under
// fzvPacked their queries packed (the BNHD layout), query counts
//
//	Nq − b·(1 + vpar&15) mod (Nq+1)
//
// and their keys packed too unless fzvPaged (key lengths replaced), under
// fzvPaged a cache in pages of 1 + (vpar>>8) mod 17 keys with two spare
// pages, sequence 1 sharing sequence 0's first page when vpar is odd;
// key counts, packed or paged,
//
//	Nk − b·(1 + vpar>>4) mod (Nk+1)
//
// (sequence 0 the longest, Nq and Nk staying the bounds).
func fuzzSeqs(p *backend.Problem, vflags uint8, vpar uint16) {
	packed, paged := vflags&fzvPacked != 0, vflags&fzvPaged != 0
	if !packed && !paged {
		return
	}
	var qs, ks []int
	for b := range p.B {
		qs = append(qs, p.Nq-b*(1+int(vpar&15))%(p.Nq+1))
		ks = append(ks, p.Nk-b*(1+int(vpar>>4))%(p.Nk+1))
	}
	if paged {
		*p = backendtest.PagedProblem(*p, 1+int(vpar>>8)%17, 2, ks, vpar&1 != 0)
		ks = nil
	}
	if packed {
		if ks != nil {
			p.KVLens = nil
		}
		*p = backendtest.PackedProblem(*p, qs, ks)
	}
}

// FuzzParity decodes a problem from its input (see fuzzCase), fills it
// with random data from seed, runs it on the GPU and on the CPU backend
// and compares them under the criterion of parity_test.go, on the fused
// path also under the hardware plan where lavapipe's loop cap allows
// (gpu.FusedLoops); for small
// problems it also judges the GPU against backendtest.Reference with
// backendtest's runners, which also check that the inputs come back
// unchanged and that nothing is written past an output. Its dtype picks
// K's and V's storage (fuzzDTypes: float32, float16 or bfloat16
// throughout, or K and V in q8, fp8 or q4): other than float32, each
// backend (and the hardware plan) is judged against the reference over
// the values as stored, fused, since parity's float32 criterion is not
// the bound of the CPU's integer q8 kernels; a problem too large for the
// reference runs in float32 whatever its dtype. The backends are opened
// once, not per input.
//
//	go test -run XXX -fuzz FuzzParity -fuzztime 60s ./gpu/
func FuzzParity(f *testing.F) {
	type in struct {
		b, kv, group, nq, nk, d, dv uint16
		flags, biasPat, keepPat     uint8
		scale                       float32
		seed                        uint64
		vflags                      uint8
		vpar                        uint16
		dtype                       uint8
	}
	inf := float32(math.Inf(1))
	for _, x := range []in{
		// The smallest problem.
		{0, 0, 0, 1, 1, 0, 0, 0, 0, 0, inf, 1, 0, 0, 0},
		// GQA, causal, BNHD, one past a tile both ways, a full bias, staged.
		{1, 1, 1, 65, 33, 63, 63, fzBNHD | fzCausal | fzStaged | fzBias, 0xf, 0, inf, 2, 0, 0, 0},
		// MQA decoding over 300 keys, D ≠ Dv, a key-padding mask.
		{0, 0, 3, 1, 300, 127, 15, fzKeep, 0, 0b1001, inf, 3, 0, 0, 0},
		// More queries than keys under causal masking: rows that see no
		// key; a bias and a mask broadcast over different dimensions.
		{2, 0, 1, 200, 7, 2, 4, fzCausal | fzBias | fzKeep, 0b1100, 0b0011, 1, 4, 0, 0, 0},
		// The widest head dims (fewer keys per fused tile), scale 1.
		{0, 1, 0, 70, 129, 159, 159, 0, 0, 0, 1, 5, 0, 0, 0},
		// No keys: zero outputs and LSE −Inf, staged.
		{0, 0, 0, 5, 0, 7, 9, fzStaged | fzKeep, 0, 0b1111, inf, 6, 0, 0, 0},
		// Scale 0: uniform weights but for the bias.
		{1, 2, 0, 40, 50, 31, 47, fzStaged | fzBias, 0b1010, 0, 0, 7, 0, 0, 0},
		// A negative scale, BNHD, the GPU without LSE.
		{0, 2, 1, 64, 64, 79, 79, fzBNHD | fzNoLSE, 0, 0, -1, 8, 0, 0, 0},
		// No queries.
		{0, 0, 0, 0, 17, 15, 15, fzCausal, 0, 0, inf, 9, 0, 0, 0},
		// A window of 7 keys each side (no causal masking), GQA, fused
		// over 300 keys.
		{0, 1, 1, 200, 300, 63, 63, 0, 0, 0, inf, 10, fzvWindow, 0x1100, 0},
		// A negative causal offset (−20: the first rows see no key) with
		// sinks and a keep-mask, staged.
		{1, 0, 2, 70, 70, 15, 9, fzStaged | fzKeep, 0, 0b1111, inf, 11, fzvOffset | fzvSinks, 0xffec, 0},
		// Softcap 14.5 over scores scaled by 32, with ALiBi, BNHD.
		{0, 2, 0, 65, 129, 31, 31, fzBNHD, 0, 0, inf, 12, fzvSoftcap | fzvALiBi, 7, 0},
		// Key lengths 0, Nk and Nk/2 with causal masking, a bias, no LSE.
		{2, 0, 0, 33, 130, 7, 5, fzCausal | fzBias | fzNoLSE, 0b1111, 0, inf, 13, fzvKVLens, 0, 0},
		// Everything at once on fusedloop.wgsl, staged.
		{1, 1, 1, 40, 200, 159, 100, fzStaged | fzBias | fzKeep, 0b0101, 0b1010, 1, 14, 0x3f, 0x3305, 0},
		// Speculative decoding, packed: 3 sequences of up to 2 queries
		// (4 heads of 2 KV heads) over packed keys, causal, a bias.
		{2, 1, 1, 2, 300, 63, 63, fzCausal | fzBias, 0b1111, 0, inf, 15, fzvPacked, 0x0123, 0},
		// Decoding over a paged cache in pages of 4 keys, MQA of 4 heads,
		// sinks, a keep-mask, BNHD, a shared first page.
		{1, 0, 3, 1, 280, 31, 15, fzBNHD | fzKeep, 0, 0b0011, inf, 16, fzvPaged | fzvSinks, 0x0305, 0},
		// Packed queries over a paged cache with a window, softcap and
		// ALiBi, odd head dims, no LSE.
		{2, 2, 0, 5, 150, 4, 8, fzNoLSE, 0, 0, inf, 17, fzvPacked | fzvPaged | fzvWindow | fzvSoftcap | fzvALiBi, 0x2a07, 0},
		// Sparse decoding: index lists of 40 keys a KV head over a paged
		// cache, GQA, sinks.
		{1, 1, 1, 1, 280, 63, 63, fzIndices, 0, 0, inf, 18, fzvPaged | fzvSinks, 0x0368, 0},
		// Index lists of 17 keys a row shared by the heads, causal
		// prefill in BHND (through scratch), a window, key lengths.
		{1, 2, 1, 40, 120, 31, 17, fzIndices | fzCausal, 0, 0, inf, 19, fzvWindow | fzvKVLens, 0x2110, 0},
		// Packed queries over packed keys with lists, BNHD, softcap.
		{2, 0, 2, 9, 90, 16, 16, fzIndices | fzBNHD, 0, 0, inf, 20, fzvPacked | fzvSoftcap, 0x0049, 0},
		// A block mask of 16 × 16 blocks, one a head, causal prefill with
		// a bias and a keep-mask, GQA, the sizes past whole blocks.
		{1, 1, 1, 70, 150, 31, 31, fzBlocks | fzCausal | fzBias | fzKeep, 0b0110, 0b1001, inf, 21, 0, 0x0101, 0},
		// Blocks of 64 over a paged cache, decoding with sinks, BNHD.
		{2, 0, 2, 1, 280, 63, 63, fzBlocks | fzBNHD, 0, 0, inf, 22, fzvPaged | fzvSinks, 0x0700, 0},
		// Blocks of 40 over packed sequences with a window, staged asked
		// (fused runs).
		{1, 2, 0, 60, 200, 16, 16, fzBlocks | fzStaged, 0, 0, inf, 23, fzvPacked | fzvWindow, 0x2413, 0},
		// Speculative decoding in q4 over a paged cache, GQA, odd head
		// dims (rows padded to q4's blocks), sinks.
		{1, 1, 1, 3, 200, 39, 23, fzCausal, 0, 0, inf, 24, fzvPaged | fzvSinks, 0x0305, 5},
		// q8 prefill under a block mask with a keep-mask; fp8 decoding
		// over index lists of 40 keys a KV head; bfloat16 throughout,
		// BNHD, causal with a bias; float16 throughout, packed, staged
		// asked (fused runs).
		{0, 1, 0, 40, 90, 31, 31, fzBlocks | fzKeep | fzCausal, 0, 0b1001, inf, 25, 0, 0x0101, 3},
		{1, 1, 1, 1, 280, 63, 63, fzIndices, 0, 0, inf, 26, fzvSinks, 0x0368, 4},
		{1, 0, 1, 33, 65, 16, 8, fzBNHD | fzCausal | fzBias, 0b0101, 0, inf, 27, 0, 0, 2},
		{2, 1, 0, 9, 70, 24, 24, fzStaged, 0, 0, inf, 28, fzvPacked, 0x0123, 1},
		// The kernels at real head dims (fzdReal), the review's failures
		// of 2026-11-29 among them: decoding at D = 128 over 300 keys
		// with a full bias 100 times as wide (the peaks hundreds above
		// the rest, in any team), in float32, q8 and q4 (a lane's part of
		// a block); prefill at D = 64 under a window of 7 keys behind
		// (rows whose span a split's end must clamp); prefill and the
		// backward at D = 128, causal with a far bias; MLA's latent rows
		// decoded, dense and over pages of 16.
		{1, 1, 1, 1, 300, 1, 0, fzBias, 0b1111, 0, inf, 29, 0, 0, fzdReal | fzdFar},
		{1, 1, 1, 1, 300, 1, 0, fzBias, 0b1111, 0, inf, 30, 0, 0, fzdReal | fzdFar | 3},
		{0, 1, 3, 2, 290, 1, 0, fzCausal, 0, 0, inf, 31, fzvSinks, 0, fzdReal | 5},
		{0, 0, 1, 70, 150, 0, 0, fzCausal, 0, 0, inf, 32, fzvWindow, 0x0100, fzdReal},
		{0, 0, 1, 65, 130, 1, 0, fzCausal | fzBias, 0b1111, 0, inf, 33, 0, 0, fzdReal | fzdFar | fzdGrad},
		{0, 1, 0, 33, 70, 0, 0, fzBNHD | fzCausal, 0, 0, inf, 34, fzvALiBi, 0, fzdReal | fzdGrad},
		{0, 0, 3, 1, 200, 2, 0, 0, 0, 0, inf, 35, 0, 0, fzdReal},
		{1, 0, 3, 1, 120, 2, 0, 0, 0, 0, inf, 36, fzvPaged, 0x0f00, fzdReal},
	} {
		f.Add(x.b, x.kv, x.group, x.nq, x.nk, x.d, x.dv, x.flags, x.biasPat, x.keepPat, x.scale, x.seed, x.vflags, x.vpar, x.dtype)
	}

	g := openGPU(f)
	c := openCPU(f)
	// The hardware plan's kernels too (fuseddecode.wgsl for a few queries
	// a sequence), on inputs within lavapipe's loop cap.
	f.Setenv("ATTN_GPU_PLAN", "hardware")
	hw := openGPU(f)
	ctx := context.Background()
	fl := flag.Lookup("test.fuzzworker")
	fuzzWorker := fl != nil && fl.Value.String() == "true"
	body := func(t testing.TB, b, kv, group, nq, nk, d, dv uint16, flags, biasPat, keepPat uint8, scale float32, seed uint64, vflags uint8, vpar uint16, dtype uint8) {
		p, bias, keep := fuzzCase(b, kv, group, nq, nk, d, dv, flags, biasPat, keepPat, scale, vflags, vpar, dtype)
		cs := backendtest.RandomCase(newRand(seed), p, bias, keep)
		if dtype&fzdFar != 0 && cs.Bias != nil {
			for i := range cs.Bias.Data {
				cs.Bias.Data[i] *= 100
			}
		}
		// The hardware plan runs the fused path too where lavapipe's
		// loop cap allows, at head dims it compiles quickly.
		runHW := (p.D <= fuzzHWMaxD && p.Dv <= fuzzHWMaxD || dtype&fzdReal != 0) && gpu.FusedLoops(hw, p) <= gpu.LoopBudget
		gb := g
		if dtype&fzdReal != 0 {
			// Real head dims are for the hardware plan's kernels: they
			// run there in g's place (the adapter's plan compiling its
			// own at these dims too took inputs past the fuzzer's 10 s
			// from a cold shader cache), fused, within lavapipe's loop
			// cap.
			if !runHW {
				return
			}
			gb = hw
		}
		if dt := fuzzDTypes[int(dtype)%len(fuzzDTypes)]; (dt != (backendtest.DTypes{}) || p.VFromK) && p.B*p.H*p.Nq*p.Nk*(p.D+p.Dv) <= fuzzRefWork {
			// Other storage than float32, and V from K (which parity's
			// runner does not bind), against the reference.
			cs = cs.WithDTypes(dt)
			bes := []backend.Backend{gb, c}
			if runHW && gb != hw {
				bes = append(bes, hw)
			}
			for _, be := range bes {
				if backend.FusedSupports(be, p) != nil {
					continue
				}
				if err := backendtest.RunFused(ctx, be, cs, flags&fzNoLSE == 0); err != nil {
					t.Errorf("%s against the reference: %v", be.Name(), err)
				}
			}
			return
		}
		s := kernels.Fused
		// The staged ops take no packed or paged problem, nor an index
		// list.
		if flags&fzStaged != 0 && p.Packed == nil && p.Paged == nil && p.Indices == nil && p.Blocks == nil && gb != hw {
			s = kernels.Staged
		}
		withLSE := flags&fzNoLSE == 0

		// What FusedSupports predicts is what Fused does: a problem it
		// refuses fails with ErrUnsupported (kernels' Auto runs it
		// staged), one it accepts runs and agrees with the CPU. The
		// staged ops have no such limit.
		var refused error
		if s == kernels.Fused {
			refused = backend.FusedSupports(gb, p)
		}
		got, err := run(ctx, gb, cs, s, withLSE)
		switch {
		case refused != nil && !errors.Is(err, backend.ErrUnsupported):
			t.Fatalf("%v %v: FusedSupports refuses it (%v), but Fused returned %v; want ErrUnsupported", s, cs, refused, err)
		case refused == nil && err != nil:
			t.Fatalf("%v %v: FusedSupports accepts it, but: %v", s, cs, err)
		}
		want, err := run(ctx, c, cs, s, true)
		if err != nil {
			t.Fatalf("%v %v: cpu: %v", s, cs, err)
		}
		if refused == nil {
			if _, err := agree(cs, got, want); err != nil {
				t.Errorf("%v %v (LSE %t): gpu and cpu disagree:\n%v", s, cs, withLSE, err)
			}
		}
		if s == kernels.Fused && runHW && gb != hw {
			refused := backend.FusedSupports(hw, p)
			got, err := run(ctx, hw, cs, s, withLSE)
			switch {
			case refused != nil:
				if !errors.Is(err, backend.ErrUnsupported) {
					t.Fatalf("%v %v: hardware plan: FusedSupports refuses it (%v), but Fused returned %v; want ErrUnsupported", s, cs, refused, err)
				}
			case err != nil:
				t.Fatalf("%v %v: hardware plan: FusedSupports accepts it, but: %v", s, cs, err)
			default:
				if _, err := agree(cs, got, want); err != nil {
					t.Errorf("%v %v (LSE %t): gpu under the hardware plan (%s) and cpu disagree:\n%v", s, cs, withLSE, gpu.FusedKernel(hw, p), err)
				}
			}
		}

		if refused == nil && p.B*p.H*p.Nq*p.Nk*(p.D+p.Dv) <= fuzzRefWork {
			runRef := backendtest.RunFused
			if s == kernels.Staged {
				runRef = backendtest.RunStaged
			}
			if err := runRef(ctx, gb, cs, withLSE); err != nil {
				t.Errorf("gpu against the reference: %v", err)
			}
		}
		if dtype&fzdGrad != 0 && !fuzzWorker && p.Paged == nil && p.Nq <= 130 && p.Nk <= 130 && backend.FusedSupports(hw, p) == nil && backend.FusedSupports(g, p) == nil {
			rng := newRand(seed + 1)
			dO := randomDO(rng, p)
			checkGrads(t, backwardOn(t, hw, cs, dO), backwardOn(t, c, cs, dO), nil, backendtest.Tol)
		}
	}
	f.Fuzz(func(t *testing.T, b, kv, group, nq, nk, d, dv uint16, flags, biasPat, keepPat uint8, scale float32, seed uint64, vflags uint8, vpar uint16, dtype uint8) {
		if dtype&fzdReal != 0 && fuzzWorker {
			return // the test run's (fzdReal)
		}
		body(t, b, kv, group, nq, nk, d, dv, flags, biasPat, keepPat, scale, seed, vflags, vpar, dtype)
	})
}
