//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/gpu/internal/shaders"
	"github.com/attn-go/attn/kernels"
)

// hardwareFull reports whether this run proves the hardware plan
// whole: CI's hardware-plan step (ATTN_GPU_PLAN=hardware in the
// environment) or ATTN_LONG=1. Elsewhere, the README's test command
// among them, the matrices run under that plan keep to their quick rows
// (hardwareRow): on lavapipe each is seconds of kernels compiled for the
// plan of an adapter it is not, and on a hardware adapter TestParity
// already runs that plan.
func hardwareFull() bool { return hardwareFullRun }

// hardwareFullRun is read once, from the environment the process
// started with: the tests that run the hardware plan set ATTN_GPU_PLAN
// themselves (t.Setenv), which must not make their own run a whole one.
var hardwareFullRun = os.Getenv("ATTN_GPU_PLAN") == "hardware" || os.Getenv("ATTN_LONG") == "1"

// hardwareRow skips t, a row of a matrix run under the hardware plan,
// unless it is one of the quick rows (quick: every kernel of the plan,
// at the shapes and masks that have caught its faults) or this run
// proves the plan whole (hardwareFull); under -short only quick rows
// run.
func hardwareRow(t *testing.T, quick bool) {
	t.Helper()
	switch {
	case quick:
	case testing.Short():
		t.Skip("-short runs only the rows marked short")
	case !hardwareFull():
		t.Skip("runs under ATTN_GPU_PLAN=hardware (CI's hardware-plan step) or ATTN_LONG=1; the README's test command runs the rows marked short")
	}
}

// runPlans is the plans a test that loops over plans runs in this
// run: under ATTN_GPU_PLAN=hardware (CI's hardware-plan step) only
// "hardware", under ATTN_LONG=1 all of them, and otherwise all but
// "hardware", which the hardware-plan step runs once.
func runPlans(plans ...string) []string {
	switch {
	case os.Getenv("ATTN_LONG") == "1":
		return plans
	case os.Getenv("ATTN_GPU_PLAN") == "hardware":
		return []string{"hardware"}
	}
	var out []string
	for _, p := range plans {
		if p != "hardware" {
			out = append(out, p)
		}
	}
	return out
}

// hardwareRows are problems sized for the hardware plan on lavapipe (no
// invocation past LoopBudget loop iterations) beside the rows of the
// matrix that are: odd head dims, GQA and MQA with Nq ≠ Nk both ways,
// wide heads, fusedloop.wgsl's key tiles straddled.
var hardwareRows = []parityRow{
	{p: causal(prob(1, 2, 2, 100, 120, 5, 7)), short: true},
	{p: prob(1, 2, 1, 65, 200, 3, 1)},
	{p: bnhd(prob(2, 3, 1, 70, 90, 33, 17)), bias: shape(1, 1, 70, 90)},
	{p: causal(prob(2, 8, 2, 33, 300, 64, 64)), short: true},
	{p: prob(1, 4, 1, 300, 40, 128, 128), keep: shape(1, 1, 300, 40)},
	{p: prob(1, 2, 2, 64, 150, 256, 200), noLSE: true},
	{p: window(causal(prob(1, 2, 1, 129, 129, 80, 80)), 20, 0)},
	{p: prob(1, 1, 1, 64, 33, 64, 64)},
	{p: kvlens(sinks(alibi(softcap(offset(prob(2, 4, 2, 31, 97, 40, 24), 10), 3)), 1, -2), 97, 50),
		bias: shape(2, 4, 31, 97), keep: shape(2, 1, 1, 97), short: true},
	// fusedtile.wgsl's rows whose span runs past their split's end,
	// which the kernel clamps: windows reaching ahead, and no mask at
	// all, over keys the plan splits.
	{p: window(prob(1, 2, 1, 100, 400, 64, 64), 100, 60), short: true},
	{p: window(causal(prob(1, 2, 2, 130, 300, 128, 128)), 200, 0), short: true},
	{p: prob(1, 2, 1, 64, 500, 128, 128), short: true},
}

// TestParityHardwarePlan runs the parity matrix under the plan of a
// hardware adapter (ATTN_GPU_PLAN=hardware: no loop cap, fusedloop.wgsl
// with K/V tiles in workgroup memory for every head dim and
// fuseddecode.wgsl for the rows of 16 queries or fewer, whole key ranges
// and head dims a dispatch) on whatever adapter this is — on lavapipe,
// only the rows within its loop cap (gpu.PlanLoops), which include every
// variant, odd head dims, GQA and Nq ≠ Nk, fused and staged.
func TestParityHardwarePlan(t *testing.T) {
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	g := openGPU(t)
	if !strings.Contains(g.Info().Detail, "plan hardware") {
		t.Fatalf("ATTN_GPU_PLAN=hardware, but the backend says %q", g.Info().Detail)
	}
	c := openCPU(t)
	ran := 0
	for n, row := range append(append([]parityRow(nil), parityRows...), hardwareRows...) {
		extra := n >= len(parityRows)
		loops := gpu.PlanLoops(g, row.p)
		if extra && loops > gpu.LoopBudget {
			t.Fatalf("hardwareRows[%d] %v runs %d loop iterations an invocation under the hardware plan, more than %d",
				n-len(parityRows), caseName(row.p, row.bias, row.keep), loops, gpu.LoopBudget)
		}
		if loops > gpu.LoopBudget || row.slow {
			continue
		}
		ran++
		t.Run(caseName(row.p, row.bias, row.keep), func(t *testing.T) {
			// The quick rows: hardwareRows' short ones, and of the
			// matrix those marked hwQuick.
			hardwareRow(t, extra && row.short || !extra && row.hwQuick)
			cs := backendtest.RandomCase(newRand(uint64(n+1)), row.p, row.bias, row.keep)
			for _, s := range []kernels.Strategy{kernels.Fused, kernels.Staged} {
				t.Run(s.String(), func(t *testing.T) { parity(t, g, c, cs, s, !row.noLSE) })
			}
		})
	}
	if ran < 40 {
		t.Errorf("only %d rows of the matrix are within the loop cap under the hardware plan; want 40 or more", ran)
	}
	t.Logf("%d of %d rows within %d loop iterations an invocation", ran, len(parityRows)+len(hardwareRows), gpu.LoopBudget)
}

// TestPlanSwitch checks ATTN_GPU_PLAN: cpu and hardware force a plan
// (the backend names it in Info().Detail), auto leaves it to the
// adapter's type, and any other value makes New fail with
// ErrUnavailable naming the variable, as a bad ATTN_GPU_TUNE does.
func TestPlanSwitch(t *testing.T) {
	openGPU(t) // skips or fails here without an adapter
	for setting, want := range map[string]string{"cpu": "plan cpu", "hardware": "plan hardware", "auto": "plan "} {
		t.Setenv("ATTN_GPU_PLAN", setting)
		g := openGPU(t)
		if d := g.Info().Detail; !strings.Contains(d, want) {
			t.Errorf("ATTN_GPU_PLAN=%s: Detail %q does not say %q", setting, d, want)
		}
	}
	t.Setenv("ATTN_GPU_PLAN", "fast")
	g, err := gpu.New()
	if err == nil {
		g.Close()
		t.Fatal("ATTN_GPU_PLAN=fast: New succeeded")
	}
	if !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), "ATTN_GPU_PLAN") {
		t.Errorf("ATTN_GPU_PLAN=fast: %v; want ErrUnavailable naming the variable", err)
	}
	// Opened by name, the backend is named once: Open adds "gpu" to an
	// error that begins "gpu: " already.
	if b, err := backend.Open("gpu"); err == nil {
		b.Close()
		t.Error(`ATTN_GPU_PLAN=fast: Open("gpu") succeeded`)
	} else if n := strings.Count(err.Error(), "gpu: "); n != 1 || !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf(`ATTN_GPU_PLAN=fast: Open("gpu") = %q, which names gpu %d times; want once`, err, n)
	}
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	t.Setenv("ATTN_GPU_TUNE", "decode.wg=48")
	if g, err = gpu.New(); err == nil {
		g.Close()
		t.Fatal("ATTN_GPU_TUNE=decode.wg=48: New succeeded")
	}
	if !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), "ATTN_GPU_TUNE: decode.wg=48") {
		t.Errorf("ATTN_GPU_TUNE=decode.wg=48: %v; want ErrUnavailable naming the variable and the setting", err)
	}
}

// TestParityTuned runs the hardware plan under an ATTN_GPU_TUNE that
// changes every knob (bench/gpu-hw.sh tune sweeps such settings on a GPU)
// and checks that the tuned kernels are the ones that run — decoding rows
// on lanedecode.wgsl of 64 invocations in teams of 4 taking 4 keys a
// trip, or with decode.lanes=1 on fuseddecode.wgsl of 64, split and
// merged; prefill rows on fusedtile.wgsl of 64 — and that they agree
// with the CPU.
func TestParityTuned(t *testing.T) {
	// lanedecode.wgsl's knobs, then fuseddecode.wgsl's kernel; in the
	// knobs' order, as the backend's Info says them.
	for _, lanes := range []string{"decode.lanes=4,decode.batch=4", "decode.lanes=1"} {
		tune := "decode.wg=64,decode.rows=4,decode.keys=16," + lanes + ",decode.target=64,decode.split=32,merge.lanes=8," +
			"split.target=8,tile.wg=64,tile.rows=16,tile.keys=16,tile.reg=8,step.flush=2"
		t.Run(lanes, func(t *testing.T) { parityTuned(t, tune) })
	}
}

func parityTuned(t *testing.T, tune string) {
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	t.Setenv("ATTN_GPU_TUNE", tune)
	t.Setenv("ATTN_GPU_PREFILL", "tile") // the tile.* knobs size fusedtile.wgsl, which these head dims leave under auto
	g := openGPU(t)
	if !strings.Contains(g.Info().Detail, "tuned "+tune) {
		t.Fatalf("ATTN_GPU_TUNE=%s, but the backend says %q", tune, g.Info().Detail)
	}
	lanes := !strings.Contains(tune, "decode.lanes=1,")
	c := openCPU(t)
	for n, row := range []struct {
		p      backend.Problem
		decode bool
	}{
		{causal(prob(1, 8, 2, 1, 300, 64, 64)), true},
		{prob(2, 4, 4, 3, 97, 40, 24), true},
		{causal(prob(1, 2, 1, 70, 90, 32, 32)), false},
		{bnhd(prob(1, 2, 2, 33, 65, 20, 36)), false},
	} {
		name := caseName(row.p, nil, nil)
		if loops := gpu.PlanLoops(g, row.p); loops > gpu.LoopBudget {
			t.Fatalf("%s runs %d loop iterations an invocation, more than lavapipe's %d", name, loops, gpu.LoopBudget)
		}
		switch s := gpu.FusedSpec(g, row.p).(type) {
		case shaders.FusedDecodeConsts:
			if !row.decode || lanes || s.WG != 64 || s.HG*s.NQ > 4 || s.TK > 16 {
				t.Errorf("%s runs %+v", name, s)
			}
			if splits := gpu.FusedSplits(g, row.p); splits < 2 {
				t.Errorf("%s runs in %d split; want it split for decode.target=64", name, splits)
			}
		case shaders.LaneDecodeConsts:
			if !row.decode || !lanes || s.WG != 64 || s.HG*s.NQ > 4 || s.L != 4 || s.KB != 4 {
				t.Errorf("%s runs %+v", name, s)
			}
			if splits := gpu.FusedSplits(g, row.p); splits < 2 {
				t.Errorf("%s runs in %d split; want it split for decode.target=64", name, splits)
			}
		case shaders.FusedTileConsts:
			if row.decode || s.WG != 64 || s.BR > 16 || s.BC > 16 {
				t.Errorf("%s runs %+v", name, s)
			}
		default:
			t.Errorf("%s runs %T %+v; want a tuned kernel", name, s, s)
		}
		t.Run(name, func(t *testing.T) {
			parity(t, g, c, backendtest.RandomCase(newRand(uint64(n+1)), row.p, nil, nil), kernels.Fused, true)
		})
	}
}

// TestParityUnrolled runs the hardware plan's fused kernels with their
// constant-trip loops written out (ATTN_GPU_TUNE's tile.unroll,
// loop.unroll and decode.unroll: the kernels' UN; tile.ahead=1:
// fusedtile.wgsl without its loads ahead, AH = 0; decode.ahead=1:
// fuseddecode.wgsl's P·V phase issuing its V loads, AH = 0; decode.pv:
// fuseddecode.wgsl's P·V keys, PV, at D = 96 with keys past the tile in
// a trip's last iteration; merge.unroll: merge.wgsl's parts, over 3 and
// 15 of them): none (1, the loops kept, as the defaults of decode.pv and
// merge.unroll no longer do), some iterations a trip, and
// whole loops with no loop left, over head dims whose vec4s the factor
// divides, does not divide and equals; fuseddecode.wgsl's knobs under
// decode.lanes=1, and lanedecode.wgsl's teams (decode.lanes) and keys a
// trip (decode.batch); and checks
// that the kernel so written is the one that runs and that it agrees
// with the CPU. These are the knobs' other settings, which no GPU runs
// untuned: CI's hardware-plan step (hardwareFull) runs them, not the
// README's test command, whose quick rows run the defaults.
func TestParityUnrolled(t *testing.T) {
	if !hardwareFull() {
		t.Skip("runs under ATTN_GPU_PLAN=hardware (CI's hardware-plan step) or ATTN_LONG=1: the knobs' other settings; the README's test command runs the hardware plan's defaults")
	}
	prefill := []backend.Problem{
		causal(prob(1, 2, 1, 70, 90, 64, 64)),
		prob(1, 2, 2, 33, 65, 40, 24),
		bnhd(prob(1, 2, 1, 20, 40, 5, 7)),
	}
	decode := []backend.Problem{
		causal(prob(1, 8, 2, 1, 300, 64, 64)),
		prob(2, 4, 4, 3, 97, 40, 24),
		causal(prob(1, 4, 1, 1, 203, 96, 96)), // KG = 10: keys past the tile in decode.pv's last step
	}
	// Decoding steps that merge 3, 15 and 5 parts (splits of at least 128
	// keys): a trip's tail past the parts in the first trip, and in the
	// last of several (15 = 3·4 + 3 under merge.unroll=4); value heads of
	// 40 columns, under one block of a row's 4·32 lanes, and of 160, over
	// two (merge.groups).
	merge := []backend.Problem{decode[0], causal(prob(1, 8, 2, 1, 1900, 64, 40)), causal(prob(1, 4, 1, 1, 700, 32, 160))}
	for _, c := range []struct {
		tune, prefill string
		rows          []backend.Problem
	}{
		{"tile.unroll=1", "tile", prefill},
		{"tile.unroll=64", "tile", prefill},
		{"tile.ahead=1", "tile", prefill},
		{"loop.unroll=4", "loop", prefill},
		{"loop.unroll=1", "", prefill[:1]},
		// fuseddecode.wgsl's knobs, with lanedecode.wgsl off.
		{"decode.lanes=1,decode.unroll=4", "", decode},
		{"decode.lanes=1,decode.unroll=256", "", decode},
		{"decode.lanes=1,decode.pv=1", "", decode},
		{"decode.lanes=1,decode.pv=2", "", decode},
		{"decode.lanes=1,decode.pv=64", "", decode},
		{"decode.lanes=1,decode.ahead=1", "", decode},
		{"decode.lanes=1,decode.next=16", "", decode},
		{"decode.lanes=1,decode.vwide=4", "", decode},
		// lanedecode.wgsl's: teams of 2 lanes (where a lane's share of
		// the head dims keeps its registers within the plan's bound) and
		// 4 (lavapipe's subgroups hold 8), and 1 and 4 keys a team a
		// trip.
		{"decode.lanes=2", "", []backend.Problem{decode[1], causal(prob(1, 4, 2, 1, 150, 16, 8))}},
		{"decode.lanes=4", "", decode},
		{"decode.batch=1", "", decode},
		{"decode.batch=4", "", decode},
		{"merge.unroll=1", "", merge},
		{"merge.unroll=4", "", merge},
		{"merge.unroll=64", "", merge},
		{"merge.groups=1", "", merge},
		{"merge.groups=2", "", merge},
		{"merge.groups=8", "", merge},
	} {
		t.Run(c.tune, func(t *testing.T) {
			t.Setenv("ATTN_GPU_PLAN", "hardware")
			t.Setenv("ATTN_GPU_TUNE", c.tune)
			t.Setenv("ATTN_GPU_PREFILL", c.prefill)
			g := openGPU(t)
			cpu := openCPU(t)
			// The last knob is the one under test.
			knob, v, _ := strings.Cut(c.tune[strings.LastIndex(c.tune, ",")+1:], "=")
			for n, p := range c.rows {
				name := caseName(p, nil, nil)
				un := -1
				switch s := gpu.FusedSpec(g, p).(type) {
				case shaders.FusedTileConsts:
					switch knob {
					case "tile.unroll":
						un = s.UN
					case "tile.ahead":
						un = 1 - s.AH // 1: no loads ahead (AH = 0)
					}
				case shaders.FusedLoopConsts:
					if knob == "loop.unroll" {
						un = s.UN
					}
				case shaders.FusedDecodeConsts:
					switch knob {
					case "decode.unroll":
						un = s.UN
					case "decode.pv":
						un = s.PV
					case "decode.ahead":
						un = 1 - s.AH // 1: no V loaded ahead (AH = 0)
					case "decode.next":
						un = 1 // 1: no next K tile loaded ahead (KN = 0)
						if s.KN != 0 {
							un, _ = strconv.Atoi(v)
						}
					case "decode.vwide":
						un = s.VW
					}
				case shaders.LaneDecodeConsts:
					switch knob {
					case "decode.lanes":
						un = s.L
					case "decode.batch":
						un = s.KB
					}
				}
				if strings.HasPrefix(knob, "merge.") {
					un = 0
					if gpu.FusedSplits(g, p) > 1 {
						un, _ = strconv.Atoi(v)
					}
				}
				if fmt.Sprint(un) != v {
					t.Errorf("%s runs %+v; want %s", name, gpu.FusedSpec(g, p), c.tune)
				}
				t.Run(name, func(t *testing.T) {
					parity(t, g, cpu, backendtest.RandomCase(newRand(uint64(n+1)), p, nil, nil), kernels.Fused, true)
				})
				// merge.groups=1 is the rows of lanes (PG 0), under
				// the default UN.
				ms := gpu.MergeSpecs(g)
				if knob == "merge.unroll" && (len(ms) != 1 || fmt.Sprint(ms[0].UN) != v) {
					t.Errorf("%s: merge.wgsl ran as %+v; want UN %s", name, ms, v)
				}
				if knob == "merge.groups" && (len(ms) != 1 || fmt.Sprint(max(ms[0].PG, 1)) != v) {
					t.Errorf("%s: merge.wgsl ran as %+v; want PG %s", name, ms, v)
				}
			}
		})
	}
}

// TestMergeFarLSEs decodes a step whose later splits' LSEs lie about 150
// above the first's (a bias on their keys): merge.wgsl must weigh the
// parts against the largest LSE, since exp(150) overflows float32. Both
// of its layouts, under the hardware plan.
func TestMergeFarLSEs(t *testing.T) {
	p := causal(prob(1, 8, 2, 1, 1900, 64, 40))
	for _, tune := range []string{"merge.groups=1", "merge.groups=8"} {
		t.Run(tune, func(t *testing.T) {
			t.Setenv("ATTN_GPU_PLAN", "hardware")
			t.Setenv("ATTN_GPU_TUNE", tune)
			g := openGPU(t)
			cpu := openCPU(t)
			if n := gpu.FusedSplits(g, p); n < 3 {
				t.Fatalf("%d splits; the test wants the keys past the first split's to be biased", n)
			}
			cs := backendtest.RandomCase(newRand(7), p, shape(1, 1, 1, 1900), nil)
			for j := 1500; j < 1900; j++ {
				cs.Bias.Data[j] += 150
			}
			parity(t, g, cpu, cs, kernels.Fused, true)
		})
	}
}
