package gpu

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/shaders"
	"github.com/gogpu/gputypes"
)

// This file decides, from the adapter's type, how the backend cuts its
// work and which fused kernel it runs. It has no cgo so its tests run
// everywhere.

// Tile sizes. The same constants size the dispatch and are written into
// the WGSL (package shaders), so the two cannot disagree.
const (
	fusedWG     = 64  // invocations per workgroup of fused.wgsl and fusedloop.wgsl
	fusedMaxR   = 4   // query rows per invocation of fused.wgsl, at most
	fusedMinR   = 2   // and at least; wider heads run fusedloop.wgsl
	fusedUnroll = 128 // most R·(⌈D/4⌉ + ⌈Dv/4⌉) fused.wgsl is written out for
	fusedMaxK   = 32  // keys per tile of fusedloop.wgsl, fewer when workgroup memory is short
	mmTile      = 64  // TM = TN of the scores and context tiles
	mmStep      = 16  // TD / TJ: inner-dimension step through workgroup memory
	mmReg       = 4   // RM = RN: each invocation's register block
	smWG        = 256
	smPer       = 32 // columns per invocation per softmax chunk
	mergeWG     = 64
	// mergeLanes is merge.wgsl's invocations to a query row under the
	// hardware plan (the CPU plan's is 1: lavapipe pays for each
	// invocation's loads, whatever their addresses): a decoding step
	// folds many splits of a few rows, and each row's columns are summed
	// side by side, adjacent invocations reading adjacent elements.
	mergeLanes = 32
	// Split keys (fusedplan.go): a step's splits run side by side and
	// merge.wgsl folds their partial results; at most fusedMaxParts of
	// them, whose partial O take at most splitScratch float32s, and when
	// cut to give a decoding step workgroups enough, at least
	// fusedMinSplit keys each.
	fusedMaxParts = 64
	fusedMinSplit = 256
	splitScratch  = 1 << 22
	// The decoding kernel, fuseddecode.wgsl (decodeKernel), under the
	// hardware plan: decodeWG invocations a workgroup holding at most
	// decodeMaxRows query rows (heads of one KV head × queries), for
	// steps whose sequences have at most decodeMaxNq queries; tiles of
	// decodeMaxK keys, down to decodeMinK before a workgroup holds fewer
	// rows when workgroup memory is short. Its steps split their keys
	// until they have decodeTarget workgroups (a 32768-key cache of 8 KV
	// heads: 1024 workgroups of 256 keys), splits of at least
	// decodeMinSplit keys, at most decodeMaxParts of them side by side.
	decodeWG       = 128
	decodeMaxRows  = 16
	decodeMaxNq    = 16
	decodeMaxK     = 64
	decodeMinK     = 8
	decodeTarget   = 1024
	decodeMinSplit = 128
	decodeMaxParts = 256
	// decodeMem is the workgroup memory a decoding workgroup keeps
	// within where its rows and a tile of decodeMinK keys allow, so that
	// several share a compute unit and their loads overlap (an H100 SM
	// holds 228 KiB: nine such workgroups).
	decodeMem = 24 << 10
	// The CPU plan's decoding kernel, fused.wgsl with key lanes
	// (laneKernel): laneWG invocations a workgroup, each holding all its
	// query rows (heads of one KV head × queries), more than one only
	// while R·(⌈D/4⌉ + ⌈Dv/4⌉) stays within laneUnroll (laneLongUnroll
	// over laneLongKeys keys or more), one while ⌈D/4⌉ + ⌈Dv/4⌉ does
	// within laneMaxUnroll; split, when its steps have too few
	// workgroups, into pieces of at least laneMinKeys keys a lane. 16
	// lanes: a step of 8 heads (MHA) over 256 keys took lavapipe 0.46 ms
	// of device time with them, 0.54 with 32 and 0.63 with 8 (its lanes'
	// sums at the end cost as much as their keys there), and a step over
	// 4096 keys as long with 16 as with 32.
	laneWG         = 16
	laneUnroll     = 32
	laneLongUnroll = 128
	laneLongKeys   = 2048
	laneMaxUnroll  = 256
	laneMinKeys    = 16
	// The hardware plan's prefill kernel, fusedtile.wgsl (tileKernel):
	// tileWG invocations a workgroup, at most tileMaxRows query rows and
	// tileMaxKeys keys a tile, register blocks of at most tileMaxReg
	// vec4s (an invocation's output sums, and its block of scores).
	tileWG      = 128
	tileMaxRows = 64
	tileMaxKeys = 32
	tileMaxReg  = 16
	// hardwareSplitTarget is the workgroups a step of the hardware
	// plan's other fused kernels should have (splitTarget).
	hardwareSplitTarget = 256
)

// The CPU plan runs fused.wgsl with key lanes (laneKernel) for a step
// of at most cpuDecodeMaxNq queries a sequence over at least
// cpuDecodeMinKeys keys, with head dims that are multiples of 4 (its
// vec4 loads): a model's decoding step (one token, or a few drafted ones)
// over a cache worth splitting. Elsewhere the row kernels' sequential keys
// cost little, and each specialisation of a decoding kernel costs
// lavapipe's compiler more than one of them: run for every short problem,
// as 702e030 did with fuseddecode.wgsl, it took CI's GPU suite on Mesa
// 25's lavapipe from a cold shader cache from about 12 to 36 minutes, the
// many small problems of the tests each compiling one.
const (
	cpuDecodeMaxNq   = 4
	cpuDecodeMinKeys = 128
)

// cpuDecodes says the CPU plan runs p (of at most nq queries a sequence)
// through its decoding kernel, fused.wgsl's key lanes.
func cpuDecodes(p backend.Problem, nq int) bool {
	return nq <= cpuDecodeMaxNq && p.Nk >= cpuDecodeMinKeys && p.D%4 == 0 && p.Dv%4 == 0
}

// loopBudget is the most loop iterations the CPU plan lets one shader
// invocation run. Lavapipe silently stops an invocation after about 65 535
// in total (all loops, nested ones included), so under that plan every key
// range, head dimension chunk and column chunk is sized to stay well under
// it.
const loopBudget = 32768

// mmIters is the loop iterations a scores or context invocation runs per
// step of mmStep along the inner dimension.
const mmIters = mmStep*(2*mmReg+mmReg*mmReg) + 2*mmTile*mmStep/((mmTile/mmReg)*(mmTile/mmReg)) + 2

// fusedChunk is the keys per chunk of fused.wgsl. It loops once per key,
// so loopBudget keys (less a margin for the loops lavapipe's compiler
// might add) would be the most; fewer keep a chunk's K and V in the CPU's
// cache while every query tile of the head reads them. Measured on
// lavapipe (Mesa 22.3, 2 cores), B=1 H=8 D=64, GFLOP/s at N = 4096 and
// 16384: chunks of 32704 keys 11.6 and 6.9, 4096 keys 13.1 and 13.1, 2048
// keys 13.1 and 12.9.
const fusedChunk = 4096

// envPlan forces a plan: ATTN_GPU_PLAN=cpu, hardware or auto (the
// default, from the adapter's type).
const envPlan = "ATTN_GPU_PLAN"

// envPrefill picks the hardware plan's kernel for steps that do not
// decode: ATTN_GPU_PREFILL=tile (fusedtile.wgsl, the default) or loop
// (fusedloop.wgsl, the kernel before it), so that the two can be measured
// side by side on a GPU.
const envPrefill = "ATTN_GPU_PREFILL"

// adapterPlan is how the backend cuts its work and which fused kernel it
// runs, chosen from the adapter's type (choosePlan). A CPU-type adapter
// (lavapipe) stops an invocation silently after about 65 535 loop
// iterations and pays for every load lane by lane: its plan bounds each
// invocation by loopBudget and runs fused.wgsl (key lanes to decode,
// laneKernel). A hardware adapter has no cap and pays for device-memory
// loads: its plan cuts work only where bindings, grids and the
// submission budget say, and runs fusedtile.wgsl (tileKernel),
// fuseddecode.wgsl (decodeKernel) or fusedloop.wgsl. docs/gpu.md ("Which
// kernel runs where") tells why, with the measurements.
type adapterPlan struct {
	hardware bool
	// loopCap is the most loop iterations one invocation may run in
	// all; 0: no bound.
	loopCap int
	// loopPrefill: the hardware plan runs fusedloop.wgsl where it would
	// run fusedtile.wgsl (ATTN_GPU_PREFILL=loop).
	loopPrefill bool
	// tune is the hardware plan's kernel sizes: defaultTuning, or what
	// ATTN_GPU_TUNE sets (tune.go).
	tune tuning
	// features is the optional WebGPU features the kernels use: those
	// of the device that ATTN_GPU_FEATURES leaves on (features.go).
	features kernelFeatures
}

func (a adapterPlan) String() string {
	if !a.hardware {
		return fmt.Sprintf("cpu (at most %d loop iterations an invocation; features: %v)", a.loopCap, a.features)
	}
	s := "hardware (K/V tiles in workgroup memory, no loop cap"
	if a.loopPrefill {
		s += "; prefill by fusedloop.wgsl"
	}
	if t := a.tune.String(); t != "" {
		s += "; tuned " + t
	}
	return s + "; features: " + a.features.String() + ")"
}

// choosePlan picks the plan for an adapter of type t, unless setting
// ($ATTN_GPU_PLAN) forces one: "cpu" or "hardware"; "" and "auto" leave
// the choice to t, the CPU plan for gputypes.DeviceTypeCPU and the
// hardware plan for every other type. Any other setting is an error.
func choosePlan(setting string, t gputypes.DeviceType) (adapterPlan, error) {
	cpu := adapterPlan{loopCap: loopBudget, tune: defaultTuning, features: planFeatures(false)}
	hw := adapterPlan{hardware: true, tune: defaultTuning, features: planFeatures(true)}
	switch strings.ToLower(strings.TrimSpace(setting)) {
	case "", "auto":
		if t == gputypes.DeviceTypeCPU {
			return cpu, nil
		}
		return hw, nil
	case "cpu":
		return cpu, nil
	case "hardware":
		return hw, nil
	}
	return adapterPlan{}, fmt.Errorf("%s=%q: want auto, cpu or hardware", envPlan, setting)
}

// planFromEnv is choosePlan for an adapter of type t under $ATTN_GPU_PLAN,
// with the prefill kernel $ATTN_GPU_PREFILL names: "tile" (or unset) or
// "loop", and the sizes $ATTN_GPU_TUNE sets (tuneFromEnv); any other
// setting is an error.
func planFromEnv(t gputypes.DeviceType) (adapterPlan, error) {
	a, err := choosePlan(os.Getenv(envPlan), t)
	if err != nil {
		return a, err
	}
	switch s := os.Getenv(envPrefill); strings.ToLower(strings.TrimSpace(s)) {
	case "", "tile":
	case "loop":
		a.loopPrefill = true
	default:
		return adapterPlan{}, fmt.Errorf("%s=%q: want tile or loop", envPrefill, s)
	}
	if a, err = featuresFromEnv(a); err != nil {
		return a, err
	}
	return tuneFromEnv(a)
}

// splitTarget is the workgroups a fused step should have for the adapter
// to be busy: a step with fewer (a decoding query or a few, few heads)
// splits its keys further. A CPU-type adapter runs workgroups on the
// host's threads, two each; a hardware adapter's count of compute units
// is not in WebGPU's limits, and 256 workgroups (hardwareSplitTarget,
// unless ATTN_GPU_TUNE's split.target says) fill a large GPU.
func (a adapterPlan) splitTarget() int {
	if a.hardware {
		return a.tune.splitTarget
	}
	return 2 * runtime.NumCPU()
}

// mergeParts is the most partial results merge.wgsl may fold at once for
// value head dim dv within the loop cap.
func (a adapterPlan) mergeParts(dv int) int {
	if a.loopCap == 0 {
		return fusedMaxParts
	}
	return max(1, min(fusedMaxParts, (a.loopCap-dv)/(dv+2)))
}

// mergeRowLanes is merge.wgsl's invocations to a query row (its L).
func (a adapterPlan) mergeRowLanes() int {
	if a.hardware {
		return a.tune.mergeLanes
	}
	return 1
}

// unbounded stands for "no bound" in a chunk size: chunks(n, unbounded)
// is one chunk.
const unbounded = math.MaxInt

// mmChunk is the inner-dimension length (head dim for scores, keys for
// context) one scores or context dispatch covers.
func (a adapterPlan) mmChunk() int {
	if a.loopCap == 0 {
		return unbounded
	}
	return a.loopCap / mmIters * mmStep
}

// softmaxChunks bounds the chunks of smWG·smPer columns in one row:
// normalize loops over all of them.
func (a adapterPlan) softmaxChunks() int {
	if a.loopCap == 0 {
		return unbounded
	}
	return a.loopCap - smPer - 64
}

// fusedRows is the query rows per invocation of fused.wgsl for head dims
// d, dv, or 0 when fusedloop.wgsl runs them: always under the hardware
// plan, and under the CPU plan for heads too wide to unroll. fused.wgsl's
// code, and lavapipe's time to compile it, grow as R·(⌈d/4⌉ + ⌈dv/4⌉);
// fusedUnroll bounds that product and fusedMaxR the rows. Measured on
// lavapipe at N = 1024, D = 64 (GFLOP/s, and the driver's compile time):
// R = 1 about 4, R = 2 about 7, R = 4 about 13.5 (2.7 s), R = 8 about 17
// (6.7 s), R = 16 about 21 (over 10 s); each vec4 of K and V loaded serves
// R rows, and loads are what lavapipe pays for.
func (a adapterPlan) fusedRows(d, dv int) int {
	if a.hardware {
		return 0
	}
	r := fusedMaxR
	for r >= fusedMinR && r*(ceilDiv(d, 4)+ceilDiv(dv, 4)) > fusedUnroll {
		r /= 2
	}
	if r < fusedMinR {
		return 0
	}
	return r
}

// fusedTile returns the keys per tile of fusedloop.wgsl that fit mem bytes
// of workgroup memory for head dims d, dv, and the keys per chunk that
// keep one invocation within the loop cap (unbounded without one); 0, 0
// when no tile fits.
func (a adapterPlan) fusedTile(mem, d, dv int) (tk, chunk int) {
	d4, dv4 := ceilDiv(d, 4), ceilDiv(dv, 4)
	tk = fusedMaxK
	for tk > 0 && tk*(d4+dv4)*16 > mem {
		tk /= 2
	}
	if tk == 0 {
		return 0, 0
	}
	if a.loopCap == 0 {
		return tk, unbounded
	}
	perTile := ceilDiv(tk*d4, fusedWG) + ceilDiv(tk*dv4, fusedWG) + tk*(1+d4+2*dv4) + 2
	tiles := (a.loopCap - d4 - dv4) / perTile
	if tiles < 1 {
		return 0, 0
	}
	return tk, tiles * tk
}

// fusedKernel is how Fused runs head dims d, dv with mem bytes of
// workgroup memory when it does not decode (decodeKernel): fused.wgsl
// with rows query rows an invocation, one key a tile, or fusedloop.wgsl
// with tiles of tk keys; chunk is the most keys one dispatch covers
// before the binding limit cuts it. Its kind is noKernel when neither
// fits.
func (a adapterPlan) fusedKernel(mem, d, dv int) fusedChoice {
	if a.hardware && !a.loopPrefill {
		if t, ok := a.tune.tileKernel(mem, d, dv); ok {
			return fusedChoice{kind: kernelTile, tk: t.BC, chunk: unbounded, tile: t}
		}
	}
	if rows := a.fusedRows(d, dv); rows > 0 {
		return fusedChoice{kind: kernelFused, rows: rows, tk: 1, chunk: fusedChunk}
	}
	if tk, chunk := a.fusedTile(mem, d, dv); tk > 0 {
		return fusedChoice{kind: kernelLoop, tk: tk, chunk: chunk}
	}
	return fusedChoice{}
}

// tileKernel is the shape of fusedtile.wgsl's workgroups for head dims
// d, dv on mem bytes of workgroup memory: t.tileWG invocations (tileWG
// by default), the most query rows (up to t.tileRows: tileMaxRows), then
// the largest register block of rows, then the most keys a tile (up to
// t.tileKeys: tileMaxKeys) that fit mem, with each invocation's output
// sums (RM·CN vec4s) and block of scores (RM·RN) within t.tileReg
// (tileMaxReg); ok is false when none fits, and fusedloop.wgsl runs.
// Rows first: each K and V tile staged serves them all. The order is a
// first choice, to be tuned on hardware (bench/gpu-hw.sh measures
// ATTN_GPU_PREFILL=loop beside it).
func (t tuning) tileKernel(mem, d, dv int) (shaders.FusedTileConsts, bool) {
	for br := min(t.tileRows, t.tileWG); br >= 8; br /= 2 {
		for rm := 4; rm >= 1; rm /= 2 {
			nrg := br / rm
			if br%rm != 0 || t.tileWG%nrg != 0 {
				continue
			}
			nkg := t.tileWG / nrg
			for bc := t.tileKeys; bc >= nkg; bc /= 2 {
				c := shaders.FusedTileConsts{WG: t.tileWG, BR: br, BC: bc, RM: rm, RN: bc / nkg, D: d, DV: dv}
				cn := ceilDiv(ceilDiv(dv, 4), nkg)
				if bc%nkg != 0 || rm*cn > t.tileReg || rm*c.RN > t.tileReg || c.WorkgroupBytes() > mem || shaders.Check(c) != nil {
					continue
				}
				return c, true
			}
		}
	}
	return shaders.FusedTileConsts{}, false
}

// decodeTile is the shape of fuseddecode.wgsl's workgroups: heads query
// heads of one KV head (a divisor of G) × rows queries of each, tiles of
// tk keys, wg invocations (decodeWG unless ATTN_GPU_TUNE says; the key
// lanes' tiles, which only name heads and rows, leave it 0).
type decodeTile struct{ heads, rows, tk, wg int }

// consts is the kernel's specialisation for head dims d, dv (float32
// operands; the Elem fields do not change its workgroup memory).
func (t decodeTile) consts(d, dv int) shaders.FusedDecodeConsts {
	return shaders.FusedDecodeConsts{WG: t.wg, HG: t.heads, NQ: t.rows, TK: t.tk, D: d, DV: dv}
}

// decodeKernel is how fuseddecode.wgsl runs a step of at most nq queries
// a sequence, g query heads a KV head and head dims d, dv on mem bytes of
// workgroup memory: a workgroup holds every query row of a KV head's
// group that decodeMaxRows allows — the most heads of the group (a
// divisor of g), then the queries of each in balanced tiles — and keys in
// tiles of decodeMaxK, halved down to decodeMinK, then fewer rows, until
// they fit decodeMem (mem, when nothing does); ok is false where fusedloop.wgsl runs the step instead:
// for more than decodeMaxNq queries (fusedloop.wgsl's workgroup of
// decodeMaxNq or more rows of one head has work enough), for value heads
// wider than 4·decodeWG (a P·V invocation owns one column vec4) and when
// not even a tile of one key and one row fits.
//
// Decoding is memory-bound: fusedloop.wgsl gives a query row an
// invocation, so a decoding step's workgroup computes with one of its
// invocations, and the G heads that share a KV head read its K and V G
// times; fuseddecode.wgsl reads them once for the group, with every
// invocation computing (flash-decoding, as ONNX Runtime's WebGPU
// flash_attention_decode kernels and FlashAttention's split-KV do).
func (a adapterPlan) decodeKernel(mem, d, dv, g, nq int) (decodeTile, bool) {
	wg, most := a.tune.decodeWG, min(a.tune.decodeRows, a.tune.decodeWG)
	if nq < 1 || nq > decodeMaxNq || ceilDiv(dv, 4) > wg || g < 1 {
		return decodeTile{}, false
	}
	// Within decodeMem first, within all of mem when that fits nothing.
	for _, budget := range []int{min(mem, decodeMem), mem} {
		fits := func(t decodeTile) bool {
			c := t.consts(d, dv)
			return c.WorkgroupBytes() <= budget && shaders.Check(c) == nil
		}
		for hg := min(g, most); hg >= 1; hg-- {
			if g%hg != 0 {
				continue
			}
			// Queries in tiles of at most most/hg (decodeMaxRows/hg by
			// default), then half that …, balanced: 5 queries under a
			// cap of 4 are tiles of 3 and 2.
			for per := most / hg; per >= 1; per /= 2 {
				rows := ceilDiv(nq, ceilDiv(nq, per))
				for tk := a.tune.decodeKeys; tk >= decodeMinK; tk /= 2 {
					if t := (decodeTile{hg, rows, tk, wg}); fits(t) {
						return t, true
					}
				}
			}
		}
		for tk := decodeMinK / 2; tk >= 1; tk /= 2 {
			if t := (decodeTile{1, 1, tk, wg}); fits(t) {
				return t, true
			}
		}
	}
	return decodeTile{}, false
}

// fusedKind is which fused kernel runs a problem. It is decided once,
// in fusedFor (or fusedKernel), and what differs between the kernels is
// asked of the choice's methods, so that each difference is written in
// one place.
type fusedKind uint8

const (
	noKernel     fusedKind = iota // none fits the device's workgroup memory
	kernelFused                   // fused.wgsl
	kernelLoop                    // fusedloop.wgsl
	kernelDecode                  // fuseddecode.wgsl
	kernelLanes                   // fused.wgsl with key lanes (laneKernel)
	kernelTile                    // fusedtile.wgsl (tileKernel)
)

// decodeChunk is the most keys one split of fuseddecode.wgsl with tile t
// may cover: whole tiles within the loop cap (unbounded without one), 0
// when not even one tile fits it.
func (a adapterPlan) decodeChunk(t decodeTile, d, dv int) int {
	if a.loopCap == 0 {
		return unbounded
	}
	c := t.consts(d, dv)
	setup, perTile := c.Iterations(0), c.Iterations(1)-c.Iterations(0)
	return max(0, (a.loopCap-setup)/perTile) * t.tk
}

// fusedChoice is the fused kernel Fused runs for a problem and the shape
// of its workgroups: fused.wgsl's rows query rows an invocation,
// fusedloop.wgsl's tiles of tk keys, fuseddecode.wgsl's dec (and its tk),
// fusedtile.wgsl's tile (its BC in tk); chunk is the most keys one split
// covers (the loop cap).
type fusedChoice struct {
	kind            fusedKind
	rows, tk, chunk int
	dec             decodeTile
	tile            shaders.FusedTileConsts
}

// fusedFor is the fused kernel for p (resolved) on mem bytes of workgroup
// memory: the decoding kernel where decodeKernel takes p's step, the
// one fusedKernel says otherwise.
func (a adapterPlan) fusedFor(mem int, p backend.Problem) fusedChoice {
	nq := mostQRows(p)
	if !a.hardware {
		if cpuDecodes(p, nq) {
			if c, ok := a.laneKernel(mem, p.D, p.Dv, p.Group(), nq, p.Nk); ok {
				return c
			}
		}
		return a.fusedKernel(mem, p.D, p.Dv)
	}
	if dec, ok := a.decodeKernel(mem, p.D, p.Dv, p.Group(), nq); ok {
		if chunk := a.decodeChunk(dec, p.D, p.Dv); chunk > 0 {
			return fusedChoice{kind: kernelDecode, tk: dec.tk, chunk: chunk, dec: dec}
		}
	}
	return a.fusedKernel(mem, p.D, p.Dv)
}

// mostQRows is the most query rows of one sequence of p.
func mostQRows(p backend.Problem) int {
	nq := 0
	for b := range p.B {
		nq = max(nq, p.QRows(b))
	}
	return nq
}

// laneKernel is how the CPU plan runs a decoding step of at most nq
// queries a sequence, g query heads a KV head and head dims d, dv on mem
// bytes of workgroup memory: fused.wgsl with key lanes, a workgroup
// holding the most heads of the group (a divisor of g) whose rows
// (heads × nq queries, then balanced tiles of half as many queries …)
// keep R·(⌈d/4⌉ + ⌈dv/4⌉) within laneUnroll, or laneLongUnroll over a
// cache of nk ≥ laneLongKeys keys; ok is false when a row's head dims
// pass laneMaxUnroll, or the lanes' sums do not fit mem.
//
// Each query row a lane holds costs lavapipe's compiler time: a kernel
// of R·(⌈d/4⌉ + ⌈dv/4⌉) = 64 takes Mesa 22.3 2–4 s, 128 about 10 s and
// 256 about 24 s on a 2-core Xeon, and Mesa 25 several times that (R = 1
// at D = 64: 10.6 s, R = 2: 26 s; fuseddecode.wgsl 7–17 s), and every
// dtype mix is a kernel of its own; each K and V row a lane loads serves
// its R rows. At 32 query heads over 8 KV heads, D = 128, 4096 keys, a
// step took 39–49 ms with R = 1, 24–27 with R = 2 and 20–23 with R = 4
// (float32; float16 K and V 26–34, 19–21 and 16–20). So a short cache,
// whose steps are short, gets the quick compile and a long one two rows
// a lane.
//
// On a CPU-type adapter every load an invocation makes is paid for
// lane by lane, and fuseddecode.wgsl makes many: each score reads its
// query and key from workgroup memory a vec4 at a time, each P·V
// invocation reads every weight of its rows. Here each lane loads a key's
// K and V rows once, a vec4 at a time, straight from k and v, for all
// its rows, whose queries and sums stay in its registers: about
// ⌈d/4⌉ + ⌈dv/4⌉ loads a key, against R·⌈d/4⌉·2 for the scores alone.
func (a adapterPlan) laneKernel(mem, d, dv, g, nq, nk int) (fusedChoice, bool) {
	d4, dv4 := ceilDiv(d, 4), ceilDiv(dv, 4)
	unroll := laneUnroll
	if nk >= laneLongKeys {
		unroll = laneLongUnroll
	}
	if nq < 1 || g < 1 || d4+dv4 > laneMaxUnroll || (shaders.FusedConsts{WG: laneWG, R: 1, D: d, DV: dv, NQ: 1}).WorkgroupBytes() > mem {
		return fusedChoice{}, false
	}
	for hg := g; hg >= 1; hg-- {
		if g%hg != 0 {
			continue
		}
		for most := nq; most >= 1; most /= 2 {
			rows := ceilDiv(nq, ceilDiv(nq, most))
			if hg*rows > 1 && hg*rows*(d4+dv4) > unroll {
				continue
			}
			c := fusedChoice{kind: kernelLanes, rows: hg * rows, tk: 1, dec: decodeTile{heads: hg, rows: rows}}
			fc := shaders.FusedConsts{WG: laneWG, R: hg * rows, D: d, DV: dv, NQ: rows}
			if perLane := a.loopCap - fc.Iterations(0); a.loopCap == 0 {
				c.chunk = unbounded
			} else if perLane > 0 {
				c.chunk = perLane * laneWG
			} else {
				continue
			}
			return c, true
		}
	}
	return fusedChoice{}, false
}

// fits says some kernel fits.
func (c fusedChoice) fits() bool { return c.kind != noKernel }

// spec is the kernel's specialisation for head dims d, dv and operands
// stored as q, k, v and bias; nil when no kernel fits.
//
// The kernels use the features f says (kernelFeatures): WGSL's f16 where
// an operand is float16, and subgroups for the decoding kernels'
// reductions (fused.wgsl's key lanes, fuseddecode.wgsl's row maxima).
func (c fusedChoice) spec(f kernelFeatures, d, dv int, q, k, v, bias shaders.Elem) shaders.Spec {
	f16 := f.f16 && slices.Contains([]shaders.Elem{q, k, v, bias}, shaders.F16)
	switch c.kind {
	case kernelFused:
		return shaders.FusedConsts{WG: fusedWG, R: c.rows, D: d, DV: dv, Q: q, K: k, V: v, Bias: bias, F16: f16}
	case kernelLoop:
		return shaders.FusedLoopConsts{WG: fusedWG, TK: c.tk, D: d, DV: dv, Q: q, K: k, V: v, Bias: bias}
	case kernelLanes:
		return shaders.FusedConsts{WG: laneWG, R: c.rows, D: d, DV: dv, NQ: c.dec.rows, Q: q, K: k, V: v, Bias: bias, F16: f16, SG: f.subgroups}
	case kernelDecode:
		s := c.dec.consts(d, dv)
		s.Q, s.K, s.V, s.Bias, s.F16, s.SG = q, k, v, bias, f16, f.subgroups
		return s
	case kernelTile:
		s := c.tile
		s.Q, s.K, s.V, s.Bias, s.F16 = q, k, v, bias, f16
		return s
	}
	return nil
}

// tileRows is the query rows of each of its heads one workgroup covers.
func (c fusedChoice) tileRows() int {
	switch c.kind {
	case kernelDecode, kernelLanes:
		return c.dec.rows
	case kernelFused:
		return fusedWG * c.rows
	case kernelTile:
		return c.tile.BR
	}
	return fusedWG
}

// heads is the query heads one workgroup covers.
func (c fusedChoice) heads() int {
	if c.kind == kernelDecode || c.kind == kernelLanes {
		return c.dec.heads
	}
	return 1
}

// splitting is how a step through the kernel splits its keys on plan a
// (stepPlan's target, minSplit and parts) for value heads of dv: the
// decoding kernel wants more workgroups, and smaller, than the others,
// and its merge folds more parts (decodeTarget).
func (c fusedChoice) splitting(a adapterPlan, dv int) (target, minSplit, parts int) {
	if c.kind == kernelDecode && a.hardware {
		return a.tune.decodeTarget, a.tune.decodeSplit, decodeMaxParts
	}
	if c.kind == kernelLanes {
		return a.splitTarget(), laneWG * laneMinKeys, a.mergeParts(dv)
	}
	return a.splitTarget(), fusedMinSplit, a.mergeParts(dv)
}
