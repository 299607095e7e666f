package plan

import (
	"fmt"

	"github.com/attn-go/attn/gpu/internal/shaders"
)

// fuseddecode.wgsl: the hardware plan's decoding kernel on a device
// without subgroups, or under decode.lanes=1 (FusedFor; lanedecode.wgsl
// elsewhere). No cgo, as kernel.go.

const (
	// The decoding kernel, fuseddecode.wgsl (DecodeKernel), under the
	// hardware plan: DecodeWG invocations a workgroup holding at most
	// decodeMaxRows query rows (heads of one KV head × queries), for
	// steps whose sequences have at most decodeMaxNq queries; tiles of
	// decodeMaxK keys, down to decodeMinK before a workgroup holds fewer
	// rows when workgroup memory is short. Its steps split their keys
	// until they have decodeTarget workgroups (a 32768-key cache of 8 KV
	// heads: 256 workgroups of 1024 keys), splits of at least
	// decodeMinSplit keys, at most decodeMaxParts of them side by side.
	// DecodeWG is 256, the fastest of 64, 128 and 256 on an H100 over
	// 4096 and 32768 keys, f32 and f16 (docs/gpu.md, Tuning).
	DecodeWG      = 256
	decodeMaxRows = 16
	decodeMaxNq   = 16
	decodeMaxK    = 64
	decodeMinK    = 8
	// decodeTarget is 256: on an H100, 256 workgroups of longer splits
	// decode 32768 keys faster than 512 or 1024, f32 most, and 4096 keys
	// as fast (docs/gpu.md, Tuning).
	decodeTarget   = 256
	decodeMinSplit = 128
	decodeMaxParts = 256
	// decodeUnroll is how many iterations of the scores' loop over the
	// head dim one trip writes out (FusedDecodeConsts.UN;
	// ATTN_GPU_TUNE=decode.unroll=N): 1, as writing out 32 makes an
	// H100's f32 step a little faster but its f16 one much slower
	// (docs/gpu.md, Tuning).
	decodeUnroll = 1
	// decodePV is how many of an invocation's keys of a tile the P·V
	// phase writes out a trip, their V loads issued together
	// (FusedDecodeConsts.PV; ATTN_GPU_TUNE=decode.pv=N): the whole loop,
	// with which an H100 runs fuseddecode.wgsl over 32768 f32 keys
	// faster than the loop, the more so at four queries, and an f16
	// cache's within the noise (docs/gpu.md, Tuning).
	decodePV = 64
	// decodeWide caps the vec4s of a half K an invocation stages a
	// load (FusedDecodeConsts.KW; ATTN_GPU_TUNE=decode.wide=N): 4,
	// sixteen halves (32 bytes) where the head dim is whole units of 16,
	// as fused.wgsl reads them; an 8-bit or 4-bit K is then read a
	// block a load (shaders' decodeUnit). Read four values a load, the
	// H200 decoded f16 over 32768 keys in 209 µs of fuseddecode.wgsl,
	// against 185 µs a unit a load (docs/gpu.md). decode.wide=1 is the
	// narrow reading, for a GPU run's comparison.
	decodeWide = 4
	// decodeVWide is decodeWide for V, the P·V phase's loads
	// (FusedDecodeConsts.VW; ATTN_GPU_TUNE=decode.vwide=N): 1, a vec4
	// of four values a load. An invocation sums its rows × its unit's
	// vec4s in registers: read 16 halves a load (a q8 block, 32 values),
	// the H200 decoded f16 over 4096 keys in 47 µs of fuseddecode.wgsl
	// where a vec4 a load took 27 (docs/gpu.md).
	decodeVWide = 1
	// decodeAhead is the most vec4s of V an invocation of
	// fuseddecode.wgsl loads at a tile's start for its P·V phase
	// (FusedDecodeConsts.AH; ATTN_GPU_TUNE=decode.ahead=N; 1: none):
	// 16, which every dtype's unit at the H200's shapes keeps within (4
	// vec4s of f32 or f16, 8 of q8 or q4). The P·V phase issued its V
	// loads after the scores and the softmax, two barriers on: a tile's
	// loads came in two bursts with the workgroup's compute between, and
	// a decoding step has few workgroups a compute unit to cover them.
	// Not yet timed on a GPU (bench/gpu-hw.sh's decode-noahead sweep).
	decodeAhead = 16
	// decodeNext is the most vec4s of the next K tile an invocation of
	// fuseddecode.wgsl loads into registers during a tile
	// (FusedDecodeConsts.KN; ATTN_GPU_TUNE=decode.next=N; 1: none,
	// FlashAttention-2's next-tile load, as fusedtile.wgsl's tile.ahead):
	// 1. On the H200, 16 (an H200-shaped step's 4 vec4s) made no step
	// faster: over 32768 keys fuseddecode.wgsl took 156 µs in f32, 200 in
	// q8 and 174 in q4 against 144, 197 and 164 without (docs/gpu.md).
	// The kernel waits for its tile phases, not for its loads.
	decodeNext = 1
	// decodeMem is the workgroup memory a decoding workgroup keeps
	// within where its rows and a tile of decodeMinK keys allow, so that
	// several share a compute unit and their loads overlap (an H100 SM
	// holds 228 KiB: nine such workgroups).
	decodeMem = 24 << 10
)

// kernelDecode is fuseddecode.wgsl with workgroups shaped as t, for
// head dims d, dv, at most chunk keys a split; f16 and subgroups as
// feat says.
type kernelDecode struct {
	t     DecodeTile
	d, dv int
	chunk int
	feat  KernelFeatures
}

func (c kernelDecode) Spec(q, k, v, bias shaders.Elem) shaders.Spec {
	s := c.t.Consts(c.d, c.dv)
	s.Q, s.K, s.V, s.Bias, s.F16, s.SG = q, k, v, bias, usesF16(c.feat.f16, q, k, v, bias), c.feat.subgroups
	return s
}

func (c kernelDecode) TileRows() int           { return c.t.rows }
func (c kernelDecode) Heads() int              { return c.t.heads }
func (c kernelDecode) Keys() (tile, chunk int) { return c.t.tk, c.chunk }
func (c kernelDecode) WidensQ() bool           { return false }
func (c kernelDecode) String() string {
	return fmt.Sprintf("fuseddecode %d×%d, %d keys", c.t.heads, c.t.rows, c.t.tk)
}

// Splitting: on the hardware plan a decoding step's splits are smaller,
// and more, than the other kernels' (decodeTarget), and its merge folds
// more of them (decodeMaxParts).
func (c kernelDecode) Splitting(a AdapterPlan) (target, minSplit, parts int) {
	if a.Hardware {
		return a.Tune.decodeTarget, a.Tune.decodeSplit, decodeMaxParts
	}
	return a.prefillSplitting(c.dv)
}

// decodeFor is fuseddecode.wgsl as plan a runs a step of at most nq
// queries a sequence, g query heads a KV head and head dims d, dv on mem
// bytes of workgroup memory: DecodeKernel's tile, in splits of
// decodeChunk keys; ok is false where either says none fits.
func (a AdapterPlan) decodeFor(mem, d, dv, g, nq int) (kernelDecode, bool) {
	t, ok := a.DecodeKernel(mem, d, dv, g, nq)
	if !ok {
		return kernelDecode{}, false
	}
	chunk := a.decodeChunk(t, d, dv)
	if chunk <= 0 {
		return kernelDecode{}, false
	}
	return kernelDecode{t: t, d: d, dv: dv, chunk: chunk, feat: a.Features}, true
}

// DecodeTile is the shape of fuseddecode.wgsl's workgroups: heads query
// heads of one KV head (a divisor of G) × rows queries of each, tiles of
// tk keys, wg invocations (DecodeWG unless ATTN_GPU_TUNE says), the
// scores' loop over the head dim written out un iterations a trip
// (decodeUnroll unless ATTN_GPU_TUNE says), the P·V phase's loop over
// a tile's keys pv (decodePV unless ATTN_GPU_TUNE says) and the most
// vec4s of a half K staged a load kw (decodeWide unless ATTN_GPU_TUNE
// says), and the most vec4s of V an invocation loads ahead ah
// (decodeAhead unless ATTN_GPU_TUNE says).
type DecodeTile struct{ heads, rows, tk, wg, un, pv, kw, vw, kn, ah int }

// Consts is the kernel's specialisation for head dims d, dv (float32
// operands; the Elem fields do not change its workgroup memory). It
// loads V ahead (AH) where its P·V loop is written out whole and an
// invocation's V of a tile is at most ah vec4s, ah above 1.
func (t DecodeTile) Consts(d, dv int) shaders.FusedDecodeConsts {
	c := shaders.FusedDecodeConsts{WG: t.wg, HG: t.heads, NQ: t.rows, TK: t.tk, D: d, DV: dv, UN: t.un, PV: t.pv, KW: t.kw, VW: t.vw}
	if n := c.KNext(); t.kn > 1 && n <= t.kn {
		c.KN = 1
	}
	if n := c.VAhead(); t.ah > 1 && n > 0 && n <= t.ah {
		c.AH = 1
	}
	return c
}

// DecodeKernel is how fuseddecode.wgsl runs a step of at most nq queries
// a sequence, g query heads a KV head and head dims d, dv on mem bytes of
// workgroup memory: a workgroup holds every query row of a KV head's
// group that decodeMaxRows allows — the most heads of the group (a
// divisor of g), then the queries of each in balanced tiles — and keys in
// tiles of decodeMaxK, halved down to decodeMinK, then fewer rows, until
// they fit decodeMem (mem, when nothing does); ok is false where fusedloop.wgsl runs the step instead:
// for more than decodeMaxNq queries (fusedloop.wgsl's workgroup of
// decodeMaxNq or more rows of one head has work enough), for value heads
// wider than 4·DecodeWG (a P·V invocation owns one column vec4) and when
// not even a tile of one key and one row fits.
//
// Decoding is memory-bound: fusedloop.wgsl gives a query row an
// invocation, so a decoding step's workgroup computes with one of its
// invocations, and the G heads that share a KV head read its K and V G
// times; fuseddecode.wgsl reads them once for the group, with every
// invocation computing (flash-decoding, as ONNX Runtime's WebGPU
// flash_attention_decode kernels and FlashAttention's split-KV do).
func (a AdapterPlan) DecodeKernel(mem, d, dv, g, nq int) (DecodeTile, bool) {
	wg, most, un, pv, kw, vw, kn, ah := a.Tune.decodeWG, min(a.Tune.decodeRows, a.Tune.decodeWG), a.Tune.decodeUnroll, a.Tune.decodePV, a.Tune.decodeWide, a.Tune.decodeVWide, a.Tune.decodeNext, a.Tune.decodeAhead
	if nq < 1 || nq > decodeMaxNq || CeilDiv(dv, 4) > wg || g < 1 {
		return DecodeTile{}, false
	}
	// Within decodeMem first, within all of mem when that fits nothing.
	for _, budget := range []int{min(mem, decodeMem), mem} {
		fits := func(t DecodeTile) bool {
			c := t.Consts(d, dv)
			return c.WorkgroupBytes() <= budget && shaders.Check(c) == nil
		}
		var t DecodeTile
		if groupTiles(g, nq, most, func(hg, rows int) bool {
			for tk := a.Tune.decodeKeys; tk >= decodeMinK; tk /= 2 {
				if t = (DecodeTile{hg, rows, tk, wg, un, pv, kw, vw, kn, ah}); fits(t) {
					return true
				}
			}
			return false
		}) {
			return t, true
		}
		for tk := decodeMinK / 2; tk >= 1; tk /= 2 {
			if t := (DecodeTile{1, 1, tk, wg, un, pv, kw, vw, kn, ah}); fits(t) {
				return t, true
			}
		}
	}
	return DecodeTile{}, false
}

// groupTiles offers try the workgroup shapes of a decoding kernel for
// g query heads a KV head and nq queries a sequence, in the order the
// planners prefer them, until try takes one: the most heads of the group
// (a divisor of g, at most most), then the queries of each in balanced
// tiles of at most most/heads, then of half that …, so that 5 queries
// under a cap of 4 are tiles of 3 and 2. It says whether try took one.
func groupTiles(g, nq, most int, try func(heads, rows int) bool) bool {
	for hg := min(g, most); hg >= 1; hg-- {
		if g%hg != 0 {
			continue
		}
		for per := most / hg; per >= 1; per /= 2 {
			if try(hg, CeilDiv(nq, CeilDiv(nq, per))) {
				return true
			}
		}
	}
	return false
}

// decodeChunk is the most keys one split of fuseddecode.wgsl with tile t
// may cover: whole tiles within the loop cap (unbounded without one), 0
// when not even one tile fits it.
func (a AdapterPlan) decodeChunk(t DecodeTile, d, dv int) int {
	if a.loopCap == 0 {
		return Unbounded
	}
	c := t.Consts(d, dv)
	setup, perTile := c.Iterations(0), c.Iterations(1)-c.Iterations(0)
	return max(0, (a.loopCap-setup)/perTile) * t.tk
}
