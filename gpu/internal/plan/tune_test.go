package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/attn-go/attn/gpu/internal/shaders"
	"github.com/gogpu/gputypes"
)

// TestParseTuning checks ATTN_GPU_TUNE's syntax: name=value pairs over
// the defaults, names in any case and spaces allowed, and an error naming
// the variable and the knob for an unknown or repeated name, a missing
// value, or one that is not a power of two in the knob's range.
func TestParseTuning(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: " , ", want: ""},
		{in: "decode.wg=256", want: ""}, // the default, so nothing differs
		{in: "decode.wg=128", want: "decode.wg=128"},
		{in: " Decode.WG = 64 , tile.keys=16,", want: "decode.wg=64,tile.keys=16"},
		{in: "tile.reg=8,decode.target=4096,merge.lanes=1,split.target=1", want: "decode.target=4096,merge.lanes=1,split.target=1,tile.reg=8"},
		{in: "decode.wg=96", err: "decode.wg=96: want a power of two from 32 to 256"},
		{in: "decode.wg=512", err: "decode.wg=512"},
		{in: "merge.lanes=128", err: "merge.lanes=128: want a power of two from 1 to 64"},
		{in: "decode.keys=4", err: "decode.keys=4"},
		{in: "tile.reg=x", err: "tile.reg=x"},
		{in: "tile.reg=-4", err: "tile.reg=-4"},
		{in: "decode.wg", err: `"decode.wg" is not name=value`},
		{in: "wg=64", err: `"wg=64" is not name=value with a name of decode.wg, `},
		{in: "decode.wg=64,decode.wg=128", err: "decode.wg is set twice"},
	} {
		got, err := parseTuning(c.in)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), envTune) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseTuning(%q) = %v, %v; want an error naming %s and %q", c.in, got, err, envTune, c.err)
			}
			if got != defaultTuning {
				t.Errorf("parseTuning(%q) failed but returned %+v, not the defaults", c.in, got)
			}
		case err != nil:
			t.Errorf("parseTuning(%q): %v", c.in, err)
		case got.String() != c.want:
			t.Errorf("parseTuning(%q) = %q; want %q", c.in, got, c.want)
		default:
			if again, err := parseTuning(got.String()); err != nil || again != got {
				t.Errorf("parseTuning(%q) = %+v, %v; want %+v again", got.String(), again, err, got)
			}
		}
	}
}

// TestTuneFromEnv checks that ATTN_GPU_TUNE reaches the hardware plan
// (and its description), and that setting it where the CPU plan runs is
// an error, not a setting nobody reads.
func TestTuneFromEnv(t *testing.T) {
	t.Setenv(envPlan, "") // the adapter's own plan, whatever the run's environment says
	t.Setenv(envTune, "decode.wg=64,tile.rows=32")
	a, err := FromEnv(gputypes.DeviceTypeDiscreteGPU)
	if err != nil || a.Tune.decodeWG != 64 || a.Tune.tileRows != 32 || a.Tune.tileWG != tileWG {
		t.Fatalf("hardware: plan %+v, %v; want decode.wg 64 and tile.rows 32 over the defaults", a, err)
	}
	if s := a.String(); !strings.Contains(s, "tuned decode.wg=64,tile.rows=32") {
		t.Errorf("hardware plan %q does not say how it is tuned", s)
	}
	if _, err := FromEnv(gputypes.DeviceTypeCPU); err == nil || !strings.Contains(err.Error(), envTune) || !strings.Contains(err.Error(), envPlan) {
		t.Errorf("cpu plan under %s: %v; want an error naming %s and %s", envTune, err, envTune, envPlan)
	}
	t.Setenv(envPlan, "hardware")
	if a, err := FromEnv(gputypes.DeviceTypeCPU); err != nil || a.Tune.decodeWG != 64 {
		t.Errorf("cpu adapter, %s=hardware: plan %+v, %v; want the tuning", envPlan, a, err)
	}
	t.Setenv(envPlan, "")
	t.Setenv(envTune, "decode.wg=256") // the default: nothing to refuse
	if a, err := FromEnv(gputypes.DeviceTypeCPU); err != nil || a.Hardware || a.Tune != defaultTuning {
		t.Errorf("cpu plan under the default tuning: %+v, %v", a, err)
	}
	t.Setenv(envTune, "decode.wg=7")
	if _, err := FromEnv(gputypes.DeviceTypeDiscreteGPU); err == nil || !strings.Contains(err.Error(), "decode.wg=7") {
		t.Errorf("hardware plan under decode.wg=7: %v; want an error naming it", err)
	}
}

// TestTunedKernels sets each knob to its least and greatest values and
// checks what the planners then choose: every fusedtile.wgsl and
// fuseddecode.wgsl shape they return is one the kernel takes (it
// generates) within the tuned bounds and the workgroup memory, the
// tuned workgroup sizes are the ones used, a decoding step splits and
// merges as tuned, and the defaults still give an H100 its shapes.
func TestTunedKernels(t *testing.T) {
	var settings []string
	for _, k := range knobs {
		settings = append(settings, fmt.Sprintf("%s=%d", k.name, k.lo), fmt.Sprintf("%s=%d", k.name, k.hi))
	}
	settings = append(settings, "tile.wg=256,tile.rows=256,tile.keys=256,tile.reg=64", "tile.wg=32,tile.rows=8,tile.keys=4,tile.reg=1",
		"decode.wg=32,decode.rows=64,decode.keys=256", "decode.wg=256,decode.rows=1,decode.keys=8")
	tiles, decodes := 0, 0
	for _, set := range settings {
		tu, err := parseTuning(set)
		if err != nil {
			t.Fatal(err)
		}
		hw := AdapterPlan{Hardware: true, Tune: tu}
		if hw.MergeRowLanes() != tu.mergeLanes || hw.MergeUnroll() != tu.mergeUnroll || hw.splitTarget() != tu.splitTarget {
			t.Errorf("%s: merge lanes %d, split target %d", set, hw.MergeRowLanes(), hw.splitTarget())
		}
		// merge.wgsl: groups of the tuned lanes a row, as many as
		// merge.groups and MergeRowWG allow, else rows of lanes.
		if m, rows := hw.Merge(); m.L != tu.mergeLanes || max(m.UN, 1) != tu.mergeUnroll || m.WG > MergeRowWG ||
			(m.PG > 1) != (min(tu.mergeGroups, MergeRowWG/tu.mergeLanes) > 1) ||
			(m.PG > 1 && (rows != 1 || m.PG*m.L != m.WG || m.PG > tu.mergeGroups)) || (m.PG <= 1 && rows != MergeWG/m.L) {
			t.Errorf("%s: merge.wgsl %+v, %d rows a workgroup", set, m, rows)
		} else if _, err := shaders.Merge.Generate(m); err != nil {
			t.Errorf("%s: merge.wgsl %+v: %v", set, m, err)
		}
		for _, mem := range []int{16384, 49152} {
			for _, d := range []int{3, 64, 128, 256} {
				if c, ok := tu.tileKernel(mem, d, d); ok {
					tiles++
					if _, err := shaders.FusedTile.Generate(c); err != nil {
						t.Errorf("%s: tileKernel(%d, %d) = %+v: %v", set, mem, d, c, err)
					}
					nkg := c.WG / (c.BR / c.RM)
					if c.WG != tu.tileWG || c.UN != tu.tileUnroll || c.BR > tu.tileRows || c.BC > tu.tileKeys || c.RM*c.RN > tu.tileReg ||
						c.RM*CeilDiv(CeilDiv(d, 4), nkg) > tu.tileReg || c.WorkgroupBytes() > mem {
						t.Errorf("%s: tileKernel(%d, %d) = %+v (%d bytes): past a bound", set, mem, d, c, c.WorkgroupBytes())
					}
				}
				loop := hw
				loop.Prefill = PrefillLoop
				if k, ok := loop.PrefillKernel(mem, d, d).(kernelLoop); ok {
					if s := k.Spec(shaders.F32, shaders.F32, shaders.F32, shaders.F32).(shaders.FusedLoopConsts); s.UN != tu.loopUnroll {
						t.Errorf("%s: fusedloop.wgsl for D = %d writes its loops out %d a trip", set, d, s.UN)
					} else if _, err := shaders.FusedLoop.Generate(s); err != nil {
						t.Errorf("%s: %+v: %v", set, s, err)
					}
				} else {
					t.Errorf("%s: ATTN_GPU_PREFILL=loop runs %T for D = %d", set, loop.PrefillKernel(mem, d, d), d)
				}
				for _, g := range []int{1, 4, 8} {
					for _, nq := range []int{1, 3, 16} {
						dt, ok := hw.DecodeKernel(mem, d, d, g, nq)
						if !ok {
							if CeilDiv(d, 4) <= tu.decodeWG && mem >= 49152 && d <= 128 {
								t.Errorf("%s: decodeKernel(%d, %d, g %d, nq %d): none", set, mem, d, g, nq)
							}
							continue
						}
						decodes++
						c := dt.Consts(d, d)
						if _, err := shaders.FusedDecode.Generate(c); err != nil {
							t.Errorf("%s: decodeKernel(%d, %d, g %d, nq %d) = %+v: %v", set, mem, d, g, nq, dt, err)
						}
						if dt.wg != tu.decodeWG || dt.un != tu.decodeUnroll || dt.pv != tu.decodePV || dt.kw != tu.decodeWide || dt.tk > tu.decodeKeys || (dt.heads*dt.rows > tu.decodeRows && dt.heads*dt.rows > 1) ||
							c.WorkgroupBytes() > mem {
							t.Errorf("%s: decodeKernel(%d, %d, g %d, nq %d) = %+v (%d bytes): past a bound", set, mem, d, g, nq, dt, c.WorkgroupBytes())
						}
						target, split, _ := kernelDecode{t: dt, d: d, dv: d}.Splitting(hw)
						if target != tu.decodeTarget || split != tu.decodeSplit {
							t.Errorf("%s: a decoding step splits for %d workgroups of at least %d keys", set, target, split)
						}
					}
				}
			}
		}
	}
	if tiles == 0 || decodes == 0 {
		t.Errorf("only %d tile and %d decoding shapes were checked", tiles, decodes)
	}
}

// TestMergeDefaults holds merge.wgsl's layouts: the CPU plan's rows of
// one invocation folding every part, and the hardware plan's default of
// a workgroup a row, 8 groups of 32 lanes.
func TestMergeDefaults(t *testing.T) {
	if m, rows := (AdapterPlan{loopCap: LoopBudget}).Merge(); m != (shaders.MergeConsts{WG: MergeWG, L: 1, UN: 1}) || rows != MergeWG {
		t.Errorf("CPU plan: merge.wgsl %+v, %d rows a workgroup; want %d rows of 1 lane", m, rows, MergeWG)
	}
	if m, rows := (AdapterPlan{Hardware: true, Tune: defaultTuning}).Merge(); m != (shaders.MergeConsts{WG: 256, L: 32, UN: 8, PG: 8}) || rows != 1 {
		t.Errorf("hardware plan: merge.wgsl %+v, %d rows a workgroup; want a row of 8 groups of 32 lanes", m, rows)
	}
}
