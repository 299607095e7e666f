package gpu

// These tests need no device (adapterplan.go has no cgo), so they run in
// every build, CGO_ENABLED=0 and -tags nogpu included.

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/shaders"
	"github.com/gogpu/gputypes"
)

// minWorkgroupStorage is the workgroup memory every WebGPU device has
// (the default maxComputeWorkgroupStorageSize).
const minWorkgroupStorage = 16384

// TestChoosePlan checks the plan of every adapter type under every
// setting of ATTN_GPU_PLAN: auto (or unset) gives the CPU plan, with its
// loop cap, to CPU-type adapters only; cpu and hardware force theirs; any
// other value is an error naming the variable and the value.
func TestChoosePlan(t *testing.T) {
	types := []gputypes.DeviceType{gputypes.DeviceTypeCPU, gputypes.DeviceTypeDiscreteGPU, gputypes.DeviceTypeIntegratedGPU,
		gputypes.DeviceTypeVirtualGPU, gputypes.DeviceTypeOther}
	for _, dt := range types {
		for _, setting := range []string{"", "auto", " Auto ", "cpu", "CPU", "hardware", "Hardware"} {
			ap, err := choosePlan(setting, dt)
			if err != nil {
				t.Errorf("choosePlan(%q, %v): %v", setting, dt, err)
				continue
			}
			s := strings.ToLower(strings.TrimSpace(setting))
			wantHW := s == "hardware" || (s != "cpu" && dt != gputypes.DeviceTypeCPU)
			if ap.hardware != wantHW {
				t.Errorf("choosePlan(%q, %v) = %v, want hardware %t", setting, dt, ap, wantHW)
			}
			if wantCap := map[bool]int{false: loopBudget, true: 0}[wantHW]; ap.loopCap != wantCap {
				t.Errorf("choosePlan(%q, %v): loop cap %d, want %d", setting, dt, ap.loopCap, wantCap)
			}
		}
		for _, bad := range []string{"gpu", "lavapipe", "1", "hard"} {
			if _, err := choosePlan(bad, dt); err == nil || !strings.Contains(err.Error(), envPlan) || !strings.Contains(err.Error(), bad) {
				t.Errorf("choosePlan(%q, %v) = %v, want an error naming %s and the value", bad, dt, err, envPlan)
			}
		}
	}
}

// fusedLoops bounds the loop iterations one invocation of fusedloop.wgsl
// runs over a chunk of keys, counting every iteration of every loop
// (lavapipe stops an invocation after about 65 535 in all):
//
//	D4 + DV4                          load q, write o
//	+ tiles·(1                        the tile loop
//	  + ⌈TK·D4/WG⌉ + ⌈TK·DV4/WG⌉      stage K and V
//	  + TK·(1 + D4 + 2·DV4))          per key: score, rescale, accumulate
func fusedLoops(tk, d, dv, keys int) int {
	d4, dv4 := ceilDiv(d, 4), ceilDiv(dv, 4)
	tiles := ceilDiv(keys, tk)
	return d4 + dv4 + tiles*(1+ceilDiv(tk*d4, fusedWG)+ceilDiv(tk*dv4, fusedWG)+tk*(1+d4+2*dv4))
}

// decodeLoops bounds the loop iterations one invocation of
// fuseddecode.wgsl runs over a split of keys (its header's count):
//
//	⌈QS/WG⌉                                load the queries
//	+ tiles·(1                             the tile loop (K staged written out)
//	  + SSTEPS·(1 + D4)                    scores
//	  + TK                                 a row's maximum
//	  + SSTEPS                             weights
//	  + ⌈TK/KG⌉)                           P·V (its rows written out)
//	+ KG                                   the key groups' sums
func decodeLoops(t decodeTile, d, dv, keys int) int {
	v := map[string]int{}
	for _, c := range shaders.Derived(t.consts(d, dv)) {
		v[c.Name] = c.Value
	}
	d4, r, kg, steps, lpr := v["D4"], v["R"], v["KG"], v["SSTEPS"], v["LPR"]
	tiles := ceilDiv(keys, t.tk)
	perTile := 1 + steps*(2+d4) + ceilDiv(t.tk, lpr) + bits.Len(uint(lpr)) - 1 + ceilDiv(t.tk, kg)
	return ceilDiv(r*d4, decodeWG) + tiles*perTile + kg
}

// mergeLoops bounds the loop iterations one invocation of merge.wgsl runs
// folding parts partial results of Dv columns with lanes invocations a
// row (its header's count).
func mergeLoops(parts, dv, lanes int) int {
	return 2*parts + max(ceilDiv(dv, 4*lanes)*(parts+1), ceilDiv(dv, lanes))
}

// kernelLoops bounds the loop iterations one invocation of the fused
// kernel c runs over keys keys, each kernel's count written apart from
// the planners' (which size its chunk).
func kernelLoops(c fusedKernel, d, dv, keys int) int {
	switch c := c.(type) {
	case kernelDecode:
		return decodeLoops(c.t, d, dv, keys)
	case kernelRows:
		return keys + 2*c.rows*(ceilDiv(d, 4)+ceilDiv(dv, 4))
	case kernelTile:
		return c.tile.Iterations(keys)
	case kernelLanes:
		// Its share of the keys; for each row the lanes' maxima and sums,
		// and its columns' sums in blocks of at most 16 vec4s.
		dv4 := ceilDiv(dv, 4)
		return ceilDiv(keys, laneWG) + c.hg*c.rows*(2*laneWG+ceilDiv(dv4, 16)*ceilDiv(min(dv4, 16), laneWG)*(laneWG+1))
	case kernelLoop:
		return fusedLoops(c.tk, d, dv, keys)
	}
	return 0
}

// planLoops bounds the loop iterations any one invocation runs for p
// under plan a on a device with mem bytes of workgroup memory: the fused
// kernel over its largest chunk, scores over its head-dim chunk, context
// over its key chunk (mmIters a step of mmStep), softmax's normalize over
// its chunks and merge over Dv. The tests that run the hardware plan on
// lavapipe keep to problems where this stays within loopBudget.
func planLoops(a adapterPlan, p backend.Problem, mem int) int {
	fused := 0
	if c := a.fusedFor(mem, shapeOf(p)); c != nil {
		_, chunk := c.keys()
		fused = kernelLoops(c, p.D, p.Dv, min(chunk, p.Nk))
	}
	scores := mmIters * ceilDiv(min(a.mmChunk(), p.D), mmStep)
	context := mmIters * ceilDiv(min(a.mmChunk(), p.Nk), mmStep)
	softmax := ceilDiv(p.Nk, smWG*smPer) + smPer + 64
	return max(fused, scores, context, softmax, p.Dv)
}

// TestPlanFusedTile checks fusedTile under both plans for every pair of
// head dims and three sizes of workgroup memory: the tile fits and is the
// largest power of two up to fusedMaxK that does; under the CPU plan the
// chunk is whole tiles and keeps an invocation within loopBudget, under
// the hardware plan it is unbounded; and (0, 0) comes back exactly when
// not even one key fits.
func TestPlanFusedTile(t *testing.T) {
	dims := []int{1, 2, 3, 4, 5, 16, 31, 32, 64, 80, 96, 128, 160, 256, 512, 1000, 1024, 4096, 1 << 14, 1 << 16}
	for _, setting := range []string{"cpu", "hardware"} {
		ap, _ := choosePlan(setting, gputypes.DeviceTypeOther)
		for _, mem := range []int{minWorkgroupStorage, 32768, 65536} {
			for _, d := range dims {
				for _, dv := range dims {
					tk, chunk := ap.fusedTile(mem, d, dv)
					perKey := (ceilDiv(d, 4) + ceilDiv(dv, 4)) * 16 // bytes of K and V a key stages
					if tk == 0 {
						if chunk != 0 {
							t.Errorf("%s: fusedTile(%d, %d, %d) = 0, %d; want 0, 0", setting, mem, d, dv, chunk)
						}
						if perKey <= mem && (ap.hardware || fusedLoops(1, d, dv, 1) <= loopBudget) {
							t.Errorf("%s: fusedTile(%d, %d, %d) = 0, 0, but a tile of one key fits (%d bytes, %d loop iterations)",
								setting, mem, d, dv, perKey, fusedLoops(1, d, dv, 1))
						}
						if d <= 256 && dv <= 256 {
							t.Errorf("%s: fusedTile(%d, %d, %d) fits no tile", setting, mem, d, dv)
						}
						continue
					}
					if tk > fusedMaxK || tk&(tk-1) != 0 {
						t.Errorf("%s: fusedTile(%d, %d, %d): TK = %d, want a power of two ≤ %d", setting, mem, d, dv, tk, fusedMaxK)
					}
					if tk*perKey > mem {
						t.Errorf("%s: fusedTile(%d, %d, %d): TK = %d stages %d bytes", setting, mem, d, dv, tk, tk*perKey)
					}
					if tk < fusedMaxK && 2*tk*perKey <= mem {
						t.Errorf("%s: fusedTile(%d, %d, %d): TK = %d, but %d fits", setting, mem, d, dv, tk, 2*tk)
					}
					if ap.hardware {
						if chunk != unbounded {
							t.Errorf("hardware: fusedTile(%d, %d, %d): chunk %d, want unbounded", mem, d, dv, chunk)
						}
						continue
					}
					if chunk < tk || chunk%tk != 0 {
						t.Errorf("cpu: fusedTile(%d, %d, %d): chunk %d is not a positive multiple of TK = %d", mem, d, dv, chunk, tk)
					}
					if n := fusedLoops(tk, d, dv, chunk); n > loopBudget {
						t.Errorf("cpu: fusedTile(%d, %d, %d) = %d, %d: an invocation runs %d loop iterations, more than %d", mem, d, dv, tk, chunk, n, loopBudget)
					}
				}
			}
		}
	}
}

// TestPlanKernels checks what each plan runs: the CPU plan fused.wgsl
// (R rows, fusedChunk keys) for heads it can write out and fusedloop.wgsl
// for wider ones, every chunk within its loop cap; the hardware plan
// fusedtile.wgsl where its tiles fit and fusedloop.wgsl elsewhere (and
// everywhere under ATTN_GPU_PREFILL=loop), no chunk bounded by loops.
func TestPlanKernels(t *testing.T) {
	cpu, _ := choosePlan("", gputypes.DeviceTypeCPU)
	hw, _ := choosePlan("", gputypes.DeviceTypeDiscreteGPU)
	for _, d := range []int{1, 5, 16, 63, 64, 80, 128, 200, 256} {
		for _, dv := range []int{1, 7, 16, 64, 128, 256} {
			c := cpu.prefillKernel(32768, d, dv)
			rk, isRows := c.(kernelRows)
			if want := cpu.fusedRows(d, dv); rk.rows != want || isRows != (want > 0) {
				t.Errorf("cpu: prefillKernel(%d, %d) = %v, want %d rows", d, dv, c, want)
			}
			if tk, chunk := c.keys(); isRows && (tk != 1 || chunk != fusedChunk || chunk > loopBudget) {
				t.Errorf("cpu: prefillKernel(%d, %d) = %v, %d, %d: want TK 1 and %d keys a chunk", d, dv, c, tk, chunk, fusedChunk)
			}
			if isRows && rk.rows*(ceilDiv(d, 4)+ceilDiv(dv, 4)) > fusedUnroll {
				t.Errorf("cpu: prefillKernel(%d, %d): R = %d writes out more than %d", d, dv, rk.rows, fusedUnroll)
			}
			c = hw.prefillKernel(32768, d, dv)
			_, isTile := c.(kernelTile)
			_, isLoop := c.(kernelLoop)
			_, tileFits := defaultTuning.tileKernel(32768, d, dv)
			if tk, chunk := c.keys(); isTile != tileFits || isLoop == tileFits || tk == 0 || chunk != unbounded {
				t.Errorf("hardware: prefillKernel(%d, %d) = %v, %d keys a chunk; want fusedtile.wgsl %t, unbounded", d, dv, c, chunk, tileFits)
			}
			loop := hw
			loop.loopPrefill = true
			c = loop.prefillKernel(32768, d, dv)
			if _, isLoop := c.(kernelLoop); !isLoop {
				t.Errorf("hardware, ATTN_GPU_PREFILL=loop: prefillKernel(%d, %d) = %v; want fusedloop.wgsl", d, dv, c)
			} else if _, chunk := c.keys(); chunk != unbounded {
				t.Errorf("hardware, ATTN_GPU_PREFILL=loop: prefillKernel(%d, %d) = %v, %d keys a chunk; want unbounded", d, dv, c, chunk)
			}
		}
	}
	if cpu.fusedRows(64, 64) != fusedMaxR {
		t.Errorf("cpu: fusedRows(64, 64) = %d, want %d", cpu.fusedRows(64, 64), fusedMaxR)
	}
	// Scores and context: each invocation of a chunk within the cap.
	if c := cpu.mmChunk(); c < mmStep || c%mmStep != 0 || mmIters*c/mmStep > loopBudget || mmIters*(c/mmStep+1) <= loopBudget {
		t.Errorf("cpu: mmChunk %d: %d loop iterations of %d, want the most whole steps within it", c, mmIters*c/mmStep, loopBudget)
	}
	if c := cpu.softmaxChunks(); c < 1 || c+smPer+64 > loopBudget {
		t.Errorf("cpu: softmaxChunks %d, want within %d", c, loopBudget)
	}
	if hw.mmChunk() != unbounded || hw.softmaxChunks() != unbounded {
		t.Errorf("hardware: mmChunk %d, softmaxChunks %d; want unbounded", hw.mmChunk(), hw.softmaxChunks())
	}
	if got := chunks(10, unbounded); len(got) != 1 || got[0] != [2]int{0, 10} {
		t.Errorf("chunks(10, unbounded) = %v, want one chunk", got)
	}
	if unbounded != math.MaxInt {
		t.Error("unbounded is not MaxInt")
	}
	// The CPU plan keeps every problem within the cap.
	for _, p := range []backend.Problem{
		{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 1 << 20, D: 64, Dv: 64},
		{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 1 << 20, D: 256, Dv: 256},
		{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 100, D: 4096, Dv: 16},
	} {
		if n := planLoops(cpu, p, 32768); n > loopBudget {
			t.Errorf("cpu: %+v runs %d loop iterations an invocation, more than %d", p, n, loopBudget)
		}
	}
}

// TestPlanDecode checks decodeKernel for every pair of head dims, groups,
// query counts and sizes of workgroup memory: the same tile under both
// plans, the CPU plan's splits the most whole tiles within its loop cap
// (the hardware plan's unbounded); for up to decodeMaxNq queries and value heads
// of up to 4·decodeWG, with a tile that fits the memory (decodeMem when
// one fits there), heads dividing the group, at most decodeMaxRows rows
// in balanced tiles of queries, a kernel whose constants the shaders
// accept (on lavapipe's memory), and never where fusedloop.wgsl would not fit (FusedSupports
// asks only that); the H100's decoding shape gets all 4 heads of a group
// and tiles of 32 keys.
func TestPlanDecode(t *testing.T) {
	cpu, _ := choosePlan("cpu", gputypes.DeviceTypeOther)
	hw, _ := choosePlan("hardware", gputypes.DeviceTypeOther)
	dims := []int{1, 5, 16, 33, 64, 128, 256, 512, 513, 4096}
	generated := map[shaders.FusedDecodeConsts]bool{}
	for _, mem := range []int{minWorkgroupStorage, 32768, 49152} {
		for _, d := range dims {
			for _, dv := range dims {
				for _, g := range []int{1, 2, 3, 4, 8, 32} {
					for _, nq := range []int{0, 1, 3, 5, 16, 17} {
						dt, ok := hw.decodeKernel(mem, d, dv, g, nq)
						where := fmt.Sprintf("hardware: decodeKernel(%d, %d, %d, %d, %d) = %+v, %t", mem, d, dv, g, nq, dt, ok)
						if cdt, cok := cpu.decodeKernel(mem, d, dv, g, nq); cdt != dt || cok != ok {
							t.Fatalf("cpu: decodeKernel(%d, %d, %d, %d, %d) = %+v, %t; want the hardware plan's", mem, d, dv, g, nq, cdt, cok)
						}
						if ok {
							chunk := cpu.decodeChunk(dt, d, dv)
							if chunk%dt.tk != 0 || decodeLoops(dt, d, dv, chunk) > loopBudget || (chunk > 0 && decodeLoops(dt, d, dv, chunk+dt.tk) <= loopBudget) {
								t.Errorf("cpu: decodeChunk(%+v, %d, %d) = %d: %d loop iterations, want the most whole tiles within %d", dt, d, dv, chunk, decodeLoops(dt, d, dv, chunk), loopBudget)
							}
							if c := hw.decodeChunk(dt, d, dv); c != unbounded {
								t.Errorf("hardware: decodeChunk(%+v, %d, %d) = %d, want unbounded", dt, d, dv, c)
							}
						}
						if nq < 1 || nq > decodeMaxNq || ceilDiv(dv, 4) > decodeWG {
							if ok {
								t.Fatalf("%s: want fusedloop.wgsl", where)
							}
							continue
						}
						if !ok {
							if d <= 256 && dv <= 256 {
								t.Fatalf("%s: no tile fits", where)
							}
							continue
						}
						c := dt.consts(d, dv)
						bytes := c.WorkgroupBytes()
						if bytes > mem || (bytes > decodeMem && dt.tk >= decodeMinK && mem > decodeMem && d <= 256 && dv <= 256) {
							t.Errorf("%s: %d bytes of workgroup memory", where, bytes)
						}
						if g%dt.heads != 0 || dt.heads*dt.rows > decodeMaxRows || dt.rows > nq || dt.tk < 1 || dt.tk > decodeMaxK {
							t.Errorf("%s: not a tile of the group", where)
						}
						if tiles := ceilDiv(nq, dt.rows); ceilDiv(nq, tiles) != dt.rows {
							t.Errorf("%s: %d queries in unbalanced tiles of %d", where, nq, dt.rows)
						}
						if mem == 32768 && !generated[c] {
							generated[c] = true
							if _, err := shaders.FusedDecode.Generate(c); err != nil {
								t.Errorf("%s: %v", where, err)
							}
						}
						if hw.prefillKernel(mem, d, dv) == nil {
							t.Errorf("%s, but no prefill kernel fits", where)
						}
					}
				}
			}
		}
	}
	if dt, ok := hw.decodeKernel(49152, 128, 128, 4, 1); !ok || dt != (decodeTile{4, 1, 32, decodeWG}) {
		t.Errorf("hardware: the H100's decoding shape: decodeKernel(49152, 128, 128, 4, 1) = %+v, %t; want 4 heads, 1 query, 32 keys", dt, ok)
	}
	// A problem's step decodes by its longest sequence's queries.
	p := backend.Problem{B: 3, H: 8, KVHeads: 2, Nq: 40, Nk: 100, D: 64, Dv: 64,
		Packed: &backend.Packed{CuQ: []int{0, 1, 18, 20}}, Layout: backend.BNHD}
	if c, ok := hw.fusedFor(32768, shapeOf(p)).(kernelDecode); ok {
		t.Errorf("hardware: a packed step of 16 and 17 queries runs %v, want a prefill kernel", c)
	}
	p.Packed.CuQ = []int{0, 1, 17, 19}
	if c, ok := hw.fusedFor(32768, shapeOf(p)).(kernelDecode); !ok || c.t.heads != 4 || c.t.rows != 4 {
		t.Errorf("hardware: a packed step of at most 16 queries runs %v, want fuseddecode.wgsl, 4 heads × 4 queries", c)
	}
}

// TestTileKernel checks fusedtile.wgsl's shapes: for every head dim pair
// and workgroup memory from WebGPU's default 16 KiB to an NVIDIA GPU's
// 48 KiB, a shape that passes the kernel's own check, fits the memory and
// keeps an invocation's registers within tileMaxReg, or none only where
// not even the smallest tile fits; the tiles an H100 gets at D = 64 and
// 128 (rows first, then keys); and ATTN_GPU_PREFILL's settings.
func TestTileKernel(t *testing.T) {
	for _, mem := range []int{16384, 32768, 49152} {
		for _, d := range []int{1, 3, 5, 16, 63, 64, 80, 128, 200, 256, 512} {
			for _, dv := range []int{1, 7, 64, 128, 256, 512} {
				c, ok := defaultTuning.tileKernel(mem, d, dv)
				where := fmt.Sprintf("defaultTuning.tileKernel(%d, %d, %d)", mem, d, dv)
				if !ok {
					least := shaders.FusedTileConsts{WG: tileWG, BR: 8, BC: 16, RM: 1, RN: 1, D: d, DV: dv} // 8 row groups, 16 key groups
					if least.WorkgroupBytes() <= mem && ceilDiv(ceilDiv(dv, 4), 16) <= tileMaxReg {
						t.Errorf("%s: none, but %+v fits", where, least)
					}
					continue
				}
				if _, err := shaders.FusedTile.Generate(c); err != nil {
					t.Errorf("%s = %+v: %v", where, c, err)
				}
				nkg := tileWG / (c.BR / c.RM)
				if c.WorkgroupBytes() > mem || c.RM*ceilDiv(ceilDiv(dv, 4), nkg) > tileMaxReg || c.RM*c.RN > tileMaxReg ||
					c.BR > tileMaxRows || c.BC > tileMaxKeys || c.D != d || c.DV != dv {
					t.Errorf("%s = %+v (%d bytes): past a bound", where, c, c.WorkgroupBytes())
				}
			}
		}
	}
	for _, c := range []struct {
		mem, d, br, bc int
	}{{49152, 64, 64, 32}, {49152, 128, 64, 16}, {32768, 64, 64, 16}, {32768, 128, 32, 16}} {
		if got, ok := defaultTuning.tileKernel(c.mem, c.d, c.d); !ok || got.BR != c.br || got.BC != c.bc || got.RM != 4 {
			t.Errorf("defaultTuning.tileKernel(%d, %d, %d) = %+v, %t; want %d rows of 4 a block, %d keys", c.mem, c.d, c.d, got, ok, c.br, c.bc)
		}
	}
	for _, c := range []struct {
		setting string
		loop    bool
		fails   bool
	}{{"", false, false}, {"tile", false, false}, {" Loop ", true, false}, {"fast", false, true}} {
		t.Setenv(envPrefill, c.setting)
		a, err := planFromEnv(gputypes.DeviceTypeDiscreteGPU)
		if (err != nil) != c.fails || (err != nil && !strings.Contains(err.Error(), envPrefill)) || a.loopPrefill != c.loop {
			t.Errorf("%s=%q: plan %v, %v; want loop prefill %t, failing %t", envPrefill, c.setting, a, err, c.loop, c.fails)
		}
	}
}
