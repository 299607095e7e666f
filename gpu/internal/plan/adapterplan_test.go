package plan

// These tests need no device (adapterplan.go has no cgo), so they run in
// every build, CGO_ENABLED=0 and -tags nogpu included.

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/shaders"
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
			ap, err := Choose(setting, dt)
			if err != nil {
				t.Errorf("choosePlan(%q, %v): %v", setting, dt, err)
				continue
			}
			s := strings.ToLower(strings.TrimSpace(setting))
			wantHW := s == "hardware" || (s != "cpu" && dt != gputypes.DeviceTypeCPU)
			if ap.Hardware != wantHW {
				t.Errorf("choosePlan(%q, %v) = %v, want hardware %t", setting, dt, ap, wantHW)
			}
			if wantCap := map[bool]int{false: LoopBudget, true: 0}[wantHW]; ap.loopCap != wantCap {
				t.Errorf("choosePlan(%q, %v): loop cap %d, want %d", setting, dt, ap.loopCap, wantCap)
			}
		}
		for _, bad := range []string{"gpu", "lavapipe", "1", "hard"} {
			if _, err := Choose(bad, dt); err == nil || !strings.Contains(err.Error(), envPlan) || !strings.Contains(err.Error(), bad) {
				t.Errorf("choosePlan(%q, %v) = %v, want an error naming %s and the value", bad, dt, err, envPlan)
			}
		}
	}
}

// TestPlanFusedTile checks fusedTile under both plans for every pair of
// head dims and three sizes of workgroup memory: the tile fits and is the
// largest power of two up to fusedMaxK that does; under the CPU plan the
// chunk is whole tiles and keeps an invocation within LoopBudget, under
// the hardware plan it is unbounded; and (0, 0) comes back exactly when
// not even one key fits.
func TestPlanFusedTile(t *testing.T) {
	dims := []int{1, 2, 3, 4, 5, 16, 31, 32, 64, 80, 96, 128, 160, 256, 512, 1000, 1024, 4096, 1 << 14, 1 << 16}
	for _, setting := range []string{"cpu", "hardware"} {
		ap, _ := Choose(setting, gputypes.DeviceTypeOther)
		for _, mem := range []int{minWorkgroupStorage, 32768, 65536} {
			for _, d := range dims {
				for _, dv := range dims {
					tk, chunk := ap.fusedTile(mem, d, dv)
					perKey := (CeilDiv(d, 4) + CeilDiv(dv, 4)) * 16 // bytes of K and V a key stages
					if tk == 0 {
						if chunk != 0 {
							t.Errorf("%s: fusedTile(%d, %d, %d) = 0, %d; want 0, 0", setting, mem, d, dv, chunk)
						}
						if perKey <= mem && (ap.Hardware || fusedLoops(1, d, dv, 1) <= LoopBudget) {
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
					if ap.Hardware {
						if chunk != Unbounded {
							t.Errorf("hardware: fusedTile(%d, %d, %d): chunk %d, want unbounded", mem, d, dv, chunk)
						}
						continue
					}
					if chunk < tk || chunk%tk != 0 {
						t.Errorf("cpu: fusedTile(%d, %d, %d): chunk %d is not a positive multiple of TK = %d", mem, d, dv, chunk, tk)
					}
					if n := fusedLoops(tk, d, dv, chunk); n > LoopBudget {
						t.Errorf("cpu: fusedTile(%d, %d, %d) = %d, %d: an invocation runs %d loop iterations, more than %d", mem, d, dv, tk, chunk, n, LoopBudget)
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
	cpu, _ := Choose("", gputypes.DeviceTypeCPU)
	hw, _ := Choose("", gputypes.DeviceTypeDiscreteGPU)
	for _, d := range []int{1, 5, 16, 63, 64, 80, 128, 200, 256} {
		for _, dv := range []int{1, 7, 16, 64, 128, 256} {
			c := cpu.PrefillKernel(32768, d, dv)
			rk, isRows := c.(kernelRows)
			if want := cpu.fusedRows(d, dv); rk.rows != want || isRows != (want > 0) {
				t.Errorf("cpu: prefillKernel(%d, %d) = %v, want %d rows", d, dv, c, want)
			}
			if tk, chunk := c.Keys(); isRows && (tk != 1 || chunk != fusedChunk || chunk > LoopBudget) {
				t.Errorf("cpu: prefillKernel(%d, %d) = %v, %d, %d: want TK 1 and %d keys a chunk", d, dv, c, tk, chunk, fusedChunk)
			}
			if isRows && rk.rows*(CeilDiv(d, 4)+CeilDiv(dv, 4)) > fusedUnroll {
				t.Errorf("cpu: prefillKernel(%d, %d): R = %d writes out more than %d", d, dv, rk.rows, fusedUnroll)
			}
			c = hw.PrefillKernel(32768, d, dv)
			_, isTile := c.(kernelTile)
			_, isLoop := c.(kernelLoop)
			_, tileFits := defaultTuning.tileKernel(32768, d, dv)
			wantTile := tileFits && max(d, dv) > LoopPrefillMaxD
			if tk, chunk := c.Keys(); isTile != wantTile || isLoop == wantTile || tk == 0 || chunk != Unbounded {
				t.Errorf("hardware: prefillKernel(%d, %d) = %v, %d keys a chunk; want fusedtile.wgsl %t, unbounded", d, dv, c, chunk, wantTile)
			}
			if l, ok := c.(kernelLoop); ok && l.un != loopUnroll {
				t.Errorf("hardware: prefillKernel(%d, %d) writes fusedloop.wgsl's loops out %d a trip; want %d", d, dv, l.un, loopUnroll)
			}
			if l, ok := cpu.PrefillKernel(32768, d, dv).(kernelLoop); ok && l.un != 1 {
				t.Errorf("cpu: prefillKernel(%d, %d) writes fusedloop.wgsl's loops out %d a trip; want them kept", d, dv, l.un)
			}
			tile := hw
			tile.Prefill = PrefillTile
			if _, isTile := tile.PrefillKernel(32768, d, dv).(kernelTile); isTile != tileFits {
				t.Errorf("hardware, ATTN_GPU_PREFILL=tile: prefillKernel(%d, %d) runs fusedtile.wgsl %t; want %t", d, dv, isTile, tileFits)
			}
			loop := hw
			loop.Prefill = PrefillLoop
			c = loop.PrefillKernel(32768, d, dv)
			if _, isLoop := c.(kernelLoop); !isLoop {
				t.Errorf("hardware, ATTN_GPU_PREFILL=loop: prefillKernel(%d, %d) = %v; want fusedloop.wgsl", d, dv, c)
			} else if _, chunk := c.Keys(); chunk != Unbounded {
				t.Errorf("hardware, ATTN_GPU_PREFILL=loop: prefillKernel(%d, %d) = %v, %d keys a chunk; want unbounded", d, dv, c, chunk)
			}
		}
	}
	if cpu.fusedRows(64, 64) != fusedMaxR {
		t.Errorf("cpu: fusedRows(64, 64) = %d, want %d", cpu.fusedRows(64, 64), fusedMaxR)
	}
	// Scores and context: each invocation of a chunk within the cap.
	if c := cpu.MmChunk(); c < MmStep || c%MmStep != 0 || mmIters*c/MmStep > LoopBudget || mmIters*(c/MmStep+1) <= LoopBudget {
		t.Errorf("cpu: mmChunk %d: %d loop iterations of %d, want the most whole steps within it", c, mmIters*c/MmStep, LoopBudget)
	}
	if c := cpu.SoftmaxChunks(); c < 1 || c+SmPer+64 > LoopBudget {
		t.Errorf("cpu: softmaxChunks %d, want within %d", c, LoopBudget)
	}
	if hw.MmChunk() != Unbounded || hw.SoftmaxChunks() != Unbounded {
		t.Errorf("hardware: mmChunk %d, softmaxChunks %d; want unbounded", hw.MmChunk(), hw.SoftmaxChunks())
	}
	if got := Chunks(10, Unbounded); len(got) != 1 || got[0] != [2]int{0, 10} {
		t.Errorf("chunks(10, unbounded) = %v, want one chunk", got)
	}
	if Unbounded != math.MaxInt {
		t.Error("unbounded is not MaxInt")
	}
	// The CPU plan keeps every problem within the cap.
	for _, p := range []backend.Problem{
		{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 1 << 20, D: 64, Dv: 64},
		{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 1 << 20, D: 256, Dv: 256},
		{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 100, D: 4096, Dv: 16},
	} {
		if n := Loops(cpu, p, 32768); n > LoopBudget {
			t.Errorf("cpu: %+v runs %d loop iterations an invocation, more than %d", p, n, LoopBudget)
		}
	}
}

// TestPlanDecode checks DecodeKernel for every pair of head dims, groups,
// query counts and sizes of workgroup memory: the same tile under both
// plans, the CPU plan's splits the most whole tiles within its loop cap
// (the hardware plan's unbounded); for up to decodeMaxNq queries and value heads
// of up to 4·DecodeWG, with a tile that fits the memory (decodeMem when
// one fits there), heads dividing the group, at most decodeMaxRows rows
// in balanced tiles of queries, a kernel whose constants the shaders
// accept (on lavapipe's memory), and never where fusedloop.wgsl would not fit (FusedSupports
// asks only that); the H100's decoding shape gets all 4 heads of a group
// and tiles of 32 keys.
func TestPlanDecode(t *testing.T) {
	cpu, _ := Choose("cpu", gputypes.DeviceTypeOther)
	hw, _ := Choose("hardware", gputypes.DeviceTypeOther)
	dims := []int{1, 5, 16, 33, 64, 128, 256, 512, 513, 4096}
	generated := map[shaders.FusedDecodeConsts]bool{}
	for _, mem := range []int{minWorkgroupStorage, 32768, 49152} {
		for _, d := range dims {
			for _, dv := range dims {
				for _, g := range []int{1, 2, 3, 4, 8, 32} {
					for _, nq := range []int{0, 1, 3, 5, 16, 17} {
						dt, ok := hw.DecodeKernel(mem, d, dv, g, nq)
						where := fmt.Sprintf("hardware: decodeKernel(%d, %d, %d, %d, %d) = %+v, %t", mem, d, dv, g, nq, dt, ok)
						if cdt, cok := cpu.DecodeKernel(mem, d, dv, g, nq); cdt != dt || cok != ok {
							t.Fatalf("cpu: decodeKernel(%d, %d, %d, %d, %d) = %+v, %t; want the hardware plan's", mem, d, dv, g, nq, cdt, cok)
						}
						if ok {
							chunk := cpu.decodeChunk(dt, d, dv)
							if chunk%dt.tk != 0 || decodeLoops(dt, d, dv, chunk) > LoopBudget || (chunk > 0 && decodeLoops(dt, d, dv, chunk+dt.tk) <= LoopBudget) {
								t.Errorf("cpu: decodeChunk(%+v, %d, %d) = %d: %d loop iterations, want the most whole tiles within %d", dt, d, dv, chunk, decodeLoops(dt, d, dv, chunk), LoopBudget)
							}
							if c := hw.decodeChunk(dt, d, dv); c != Unbounded {
								t.Errorf("hardware: decodeChunk(%+v, %d, %d) = %d, want unbounded", dt, d, dv, c)
							}
						}
						if nq < 1 || nq > decodeMaxNq || CeilDiv(dv, 4) > DecodeWG {
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
						c := dt.Consts(d, dv)
						bytes := c.WorkgroupBytes()
						if bytes > mem || (bytes > decodeMem && dt.tk >= decodeMinK && mem > decodeMem && d <= 256 && dv <= 256) {
							t.Errorf("%s: %d bytes of workgroup memory", where, bytes)
						}
						if g%dt.heads != 0 || dt.heads*dt.rows > decodeMaxRows || dt.rows > nq || dt.tk < 1 || dt.tk > decodeMaxK {
							t.Errorf("%s: not a tile of the group", where)
						}
						if tiles := CeilDiv(nq, dt.rows); CeilDiv(nq, tiles) != dt.rows {
							t.Errorf("%s: %d queries in unbalanced tiles of %d", where, nq, dt.rows)
						}
						if mem == 32768 && !generated[c] {
							generated[c] = true
							if _, err := shaders.FusedDecode.Generate(c); err != nil {
								t.Errorf("%s: %v", where, err)
							}
						}
						if hw.PrefillKernel(mem, d, dv) == nil {
							t.Errorf("%s, but no prefill kernel fits", where)
						}
					}
				}
			}
		}
	}
	if dt, ok := hw.DecodeKernel(49152, 128, 128, 4, 1); !ok || dt != (DecodeTile{4, 1, 32, DecodeWG, decodeUnroll, decodePV, decodeWide, decodeVWide, decodeNext, decodeAhead}) {
		t.Errorf("hardware: the H100's decoding shape: decodeKernel(49152, 128, 128, 4, 1) = %+v, %t; want 4 heads, 1 query, 32 keys", dt, ok)
	}
	// A problem's step decodes by its longest sequence's queries.
	p := backend.Problem{B: 3, H: 8, KVHeads: 2, Nq: 40, Nk: 100, D: 64, Dv: 64,
		Packed: &backend.Packed{CuQ: []int{0, 1, 18, 20}}, Layout: backend.BNHD}
	if c, ok := hw.FusedFor(32768, ShapeOf(p)).(kernelDecode); ok {
		t.Errorf("hardware: a packed step of 16 and 17 queries runs %v, want a prefill kernel", c)
	}
	p.Packed.CuQ = []int{0, 1, 17, 19}
	if c, ok := hw.FusedFor(32768, ShapeOf(p)).(kernelDecode); !ok || c.t.heads != 4 || c.t.rows != 4 {
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
					if least.WorkgroupBytes() <= mem && CeilDiv(CeilDiv(dv, 4), 16) <= tileMaxReg {
						t.Errorf("%s: none, but %+v fits", where, least)
					}
					continue
				}
				if _, err := shaders.FusedTile.Generate(c); err != nil {
					t.Errorf("%s = %+v: %v", where, c, err)
				}
				nkg := tileWG / (c.BR / c.RM)
				// Loads ahead (AH) where an invocation's share of a K or
				// V tile is at most tileAhead vec4s, and only there.
				ahead := max(CeilDiv(c.BC*CeilDiv(d, 4), tileWG), CeilDiv(c.BC*CeilDiv(dv, 4), tileWG))
				if want := ahead <= tileAhead; (c.AH == 1) != want {
					t.Errorf("%s = %+v: AH = %d, want it %t (%d vec4s an invocation a tile)", where, c, c.AH, want, ahead)
				}
				if c.WorkgroupBytes() > mem || c.RM*CeilDiv(CeilDiv(dv, 4), nkg) > tileMaxReg || c.RM*c.RN > tileMaxReg ||
					c.BR > tileMaxRows || c.BC > tileMaxKeys || c.D != d || c.DV != dv {
					t.Errorf("%s = %+v (%d bytes): past a bound", where, c, c.WorkgroupBytes())
				}
			}
		}
	}
	for _, c := range []struct {
		mem, d, br, bc int
	}{{49152, 64, 64, 32}, {49152, 128, 64, 8}, {32768, 64, 64, 16}, {32768, 128, 32, 16}} {
		if got, ok := defaultTuning.tileKernel(c.mem, c.d, c.d); !ok || got.BR != c.br || got.BC != c.bc || got.RM != 4 || got.AH != 1 {
			t.Errorf("defaultTuning.tileKernel(%d, %d, %d) = %+v, %t; want %d rows of 4 a block, %d keys, loaded ahead", c.mem, c.d, c.d, got, ok, c.br, c.bc)
		}
	}
	// tile.ahead=1 turns the loads ahead off, and nothing else.
	off, err := parseTuning("tile.ahead=1")
	if err != nil {
		t.Fatal(err)
	}
	on, _ := defaultTuning.tileKernel(49152, 128, 128)
	if got, _ := off.tileKernel(49152, 128, 128); got.AH != 0 || func() bool { got.AH = 1; return got != on }() {
		t.Errorf("tile.ahead=1: tileKernel(49152, 128, 128) = %+v, want %+v without AH", got, on)
	}
	for _, c := range []struct {
		setting string
		want    Prefill
		fails   bool
	}{{"", PrefillAuto, false}, {"auto", PrefillAuto, false}, {"tile", PrefillTile, false}, {" Loop ", PrefillLoop, false}, {"fast", PrefillAuto, true}} {
		t.Setenv(envPrefill, c.setting)
		a, err := FromEnv(gputypes.DeviceTypeDiscreteGPU)
		if (err != nil) != c.fails || (err != nil && !strings.Contains(err.Error(), envPrefill)) || a.Prefill != c.want {
			t.Errorf("%s=%q: plan %v, %v; want prefill %d, failing %t", envPrefill, c.setting, a, err, c.want, c.fails)
		}
	}
}
