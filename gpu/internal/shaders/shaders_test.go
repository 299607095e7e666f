package shaders

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden lists the specialisations whose generated WGSL is pinned in
// testdata: the ones package gpu really uses (its fusedWG, fusedMaxR, fusedMaxK,
// mmTile, mmStep, mmReg, smWG, smPer, mergeWG and mergeLanes, and the
// decoding kernel's tiles for 4 query heads a KV head at D = 128, as an
// H100 gets them, and for other groups and head dims; package gpu cannot be
// imported here, so the values are written out, and gpu's compile test
// checks the same constants compile on a device), plus an odd head dim.
var golden = []struct {
	file string
	s    Spec
}{
	{"scores.wgsl.golden", ScoresConsts{TM: 64, TN: 64, TD: 16, RM: 4, RN: 4}},
	{"softmax.wgsl.golden", SoftmaxConsts{WG: 256, PER: 32}},
	{"context.wgsl.golden", ContextConsts{TM: 64, TN: 64, TJ: 16, RM: 4, RN: 4}},
	{"fused_d64_dv64.wgsl.golden", FusedConsts{WG: 64, R: 4, D: 64, DV: 64}},
	{"fused_d5_dv7.wgsl.golden", FusedConsts{WG: 64, R: 4, D: 5, DV: 7}},
	{"fused_d80_dv40.wgsl.golden", FusedConsts{WG: 64, R: 4, D: 80, DV: 40}},
	{"fused_lanes_d128_dv128.wgsl.golden", FusedConsts{WG: 32, R: 4, D: 128, DV: 128, NQ: 1}},
	{"fused_lanes_d64_q8_fp8.wgsl.golden", FusedConsts{WG: 16, R: 2, D: 64, DV: 64, NQ: 1, K: Q8, V: FP8}},
	{"fused_d5_dv32_fp8_q8.wgsl.golden", FusedConsts{WG: 64, R: 2, D: 5, DV: 32, K: FP8, V: Q8}},
	// q4: a block's codes one load, unpacked in registers.
	{"fused_lanes_d64_q4.wgsl.golden", FusedConsts{WG: 16, R: 2, D: 64, DV: 64, NQ: 1, K: Q4, V: Q4}},
	{"fused_d5_dv32_fp8_q4.wgsl.golden", FusedConsts{WG: 64, R: 2, D: 5, DV: 32, K: FP8, V: Q4}},
	{"fused_lanes_d5_dv70_half.wgsl.golden", FusedConsts{WG: 32, R: 4, D: 5, DV: 70, NQ: 2, Q: F32, K: F16, V: BF16}},
	{"fusedloop_d256_dv256.wgsl.golden", FusedLoopConsts{WG: 64, TK: 32, D: 256, DV: 256}},
	{"fusedloop_d80_dv200.wgsl.golden", FusedLoopConsts{WG: 64, TK: 32, D: 80, DV: 200}},
	{"fusedtile_d64_dv64.wgsl.golden", FusedTileConsts{WG: 128, BR: 64, BC: 32, RM: 4, RN: 4, D: 64, DV: 64}},
	{"fusedtile_d128_dv128.wgsl.golden", FusedTileConsts{WG: 128, BR: 64, BC: 16, RM: 4, RN: 2, D: 128, DV: 128, UN: 4, AH: 1}},
	{"fusedtile_d128_f16_sg.wgsl.golden", FusedTileConsts{WG: 128, BR: 64, BC: 16, RM: 4, RN: 2, D: 128, DV: 128, Q: F16, K: F16, V: F16, F16: true, SG: true}},
	{"fuseddecode_g4_d128.wgsl.golden", FusedDecodeConsts{WG: 128, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128}},
	{"fuseddecode_g1_d5_dv7.wgsl.golden", FusedDecodeConsts{WG: 128, HG: 1, NQ: 3, TK: 64, D: 5, DV: 7}},
	{"fuseddecode_g8_d256.wgsl.golden", FusedDecodeConsts{WG: 128, HG: 8, NQ: 2, TK: 16, D: 256, DV: 256}},
	{"fuseddecode_g4_d128_q8.wgsl.golden", FusedDecodeConsts{WG: 128, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128, K: Q8, V: Q8}},
	{"fuseddecode_g4_d128_q4.wgsl.golden", FusedDecodeConsts{WG: 128, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128, K: Q4, V: Q4}},
	{"fusedtile_d64_q4_q8.wgsl.golden", FusedTileConsts{WG: 128, BR: 64, BC: 32, RM: 4, RN: 4, D: 64, DV: 64, K: Q4, V: Q8, AH: 1}},
	{"fuseddecode_g4_d128_f16_sg.wgsl.golden", FusedDecodeConsts{WG: 128, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128, K: F16, V: F16, F16: true, SG: true}},
	{"merge.wgsl.golden", MergeConsts{WG: 64, L: 1}},
	{"merge_l32.wgsl.golden", MergeConsts{WG: 64, L: 32}},
	{"merge_l32_un4.wgsl.golden", MergeConsts{WG: 64, L: 32, UN: 4}},
	{"merge_pg8.wgsl.golden", MergeConsts{WG: 256, L: 32, UN: 8, PG: 8}},
	{"pack_f16.wgsl.golden", PackConsts{WG: 256, O: F16}},
	{"pack_bf16.wgsl.golden", PackConsts{WG: 256, O: BF16}},
	{"pack_f16_from_bf16.wgsl.golden", PackConsts{WG: 256, O: F16, Src: BF16}},
	{"copy.wgsl.golden", CopyConsts{WG: 256}},
	{"copy_f16.wgsl.golden", CopyConsts{WG: 256, Src: F16}},
	{"copy_to_f16_from_bf16.wgsl.golden", CopyConsts{WG: 64, O: F16, Src: BF16}},
	{"copy8_q8.wgsl.golden", Copy8Consts{WG: 256, Q8: 1}},
	{"copy8_fp8.wgsl.golden", Copy8Consts{WG: 256}},
	{"copy8_q4.wgsl.golden", Copy8Consts{WG: 256, Q4: 1}},
	{"patch.wgsl.golden", PatchConsts{WG: 64}},
	{"subgroups.wgsl.golden", SubgroupsConsts{WG: 256}},
	{"quant8_q8.wgsl.golden", Quant8Consts{WG: 256, Q8: 1}},
	{"quant8_fp8_f16.wgsl.golden", Quant8Consts{WG: 256, Src: int(F16)}},
	{"quant8_fp8_bf16.wgsl.golden", Quant8Consts{WG: 256, Src: int(BF16)}},
	{"quant8_q4.wgsl.golden", Quant8Consts{WG: 256, Q4: 1}},
	{"quant8_q4_f16.wgsl.golden", Quant8Consts{WG: 256, Q4: 1, Src: int(F16)}},
	// Half operands: each loader, scalar and vec4, f16 and bf16.
	{"scores_half.wgsl.golden", ScoresConsts{TM: 64, TN: 64, TD: 16, RM: 4, RN: 4, Q: F16, K: BF16, Bias: F16}},
	{"context_bf16.wgsl.golden", ContextConsts{TM: 64, TN: 64, TJ: 16, RM: 4, RN: 4, V: BF16}},
	{"fused_d64_dv64_half.wgsl.golden", FusedConsts{WG: 64, R: 4, D: 64, DV: 64, Q: BF16, K: F16, V: BF16, Bias: BF16}},
	// The backward pass: δ, then dK and dV, then dQ, at a common head
	// dim and odd ones.
	{"backdelta_dv7.wgsl.golden", BackDeltaConsts{WG: 64, DV: 7}},
	{"backkv_d64_dv64.wgsl.golden", BackKVConsts{WG: 64, TQ: 32, D: 64, DV: 64, L: 1}},
	{"backkv_d17_dv5.wgsl.golden", BackKVConsts{WG: 64, TQ: 32, D: 17, DV: 5, L: 1}},
	// A key's head dims over 4 lanes, their products summed by shuffles.
	{"backkv_d128_lanes4.wgsl.golden", BackKVConsts{WG: 256, TQ: 16, D: 128, DV: 128, L: 4, SG: true}},
	{"backq_d64_dv64.wgsl.golden", BackQConsts{WG: 64, TK: 32, D: 64, DV: 64, L: 1}},
	{"backq_d17_dv5.wgsl.golden", BackQConsts{WG: 64, TK: 32, D: 17, DV: 5, L: 1}},
	{"backq_d128_lanes2.wgsl.golden", BackQConsts{WG: 128, TK: 16, D: 128, DV: 128, L: 2, SG: true}},
	{"backq_d16_half.wgsl.golden", BackQConsts{WG: 64, TK: 32, D: 16, DV: 16, Q: F16, K: BF16, V: F16, Dout: BF16, Bias: F16, L: 1}},
	{"backq_d16_half_f16.wgsl.golden", BackQConsts{WG: 64, TK: 32, D: 16, DV: 16, Q: F16, K: BF16, V: F16, Dout: BF16, Bias: F16, L: 1, F16: true}},
	{"backbias_d17_dv5.wgsl.golden", BackBiasConsts{WG: 64, D: 17, DV: 5}},
	{"backbias_d16_half.wgsl.golden", BackBiasConsts{WG: 64, D: 16, DV: 16, Q: BF16, K: F16, V: BF16, Dout: F16, Bias: BF16}},
	// The backward pass under an index list: rows a vec4 a load (head
	// dims multiples of 4) and an element a load (odd ones), f32 and
	// half operands.
	{"backidxkv_d64_dv64.wgsl.golden", BackIdxKVConsts{WG: 64, D: 64, DV: 64}},
	{"backidxkv_d17_dv5_half.wgsl.golden", BackIdxKVConsts{WG: 64, D: 17, DV: 5, Q: F16, K: BF16, V: F16, Dout: BF16}},
	{"backidxq_d64_dv64.wgsl.golden", BackIdxQConsts{WG: 64, D: 64, DV: 64}},
	{"backidxq_d16_dv5_half_f16.wgsl.golden", BackIdxQConsts{WG: 64, D: 16, DV: 5, Q: F16, K: BF16, V: F16, Dout: F16, F16: true}},
	// Half K and V eight halves a load (LoadUnit), widened by f16
	// conversions where the device has shader-f16; the lanes meeting by
	// subgroups.
	{"fused_lanes_d40_half_unit2.wgsl.golden", FusedConsts{WG: 16, R: 2, D: 40, DV: 40, NQ: 1, K: F16, V: BF16}},
	{"fused_lanes_d40_f16_unit2.wgsl.golden", FusedConsts{WG: 16, R: 2, D: 40, DV: 40, NQ: 1, K: F16, V: F16, F16: true}},
	{"fused_lanes_d128_f16_wide_sg.wgsl.golden", FusedConsts{WG: 16, R: 4, D: 128, DV: 128, NQ: 1, K: F16, V: BF16, F16: true, SG: true}},
	{"fused_d5_dv7_half.wgsl.golden", FusedConsts{WG: 64, R: 4, D: 5, DV: 7, Q: F16, K: BF16, V: F16}},
	{"fusedloop_d80_dv200_half.wgsl.golden", FusedLoopConsts{WG: 64, TK: 32, D: 80, DV: 200, Q: F16, K: F16, V: BF16, Bias: F16}},
	{"fusedtile_d5_dv70_half.wgsl.golden", FusedTileConsts{WG: 128, BR: 32, BC: 16, RM: 2, RN: 2, D: 5, DV: 70, Q: F16, K: BF16, V: F16, Bias: BF16, AH: 1}},
	// Loops with constant trip counts written out (UN, unroll): by 4 a
	// trip, and whole (no loop: D4 = 2, NKG = 8 and BC = 16 within 64).
	{"fusedtile_d64_dv64_un4.wgsl.golden", FusedTileConsts{WG: 128, BR: 64, BC: 32, RM: 4, RN: 4, D: 64, DV: 64, UN: 4}},
	{"fusedtile_d5_dv70_un64.wgsl.golden", FusedTileConsts{WG: 128, BR: 32, BC: 16, RM: 2, RN: 2, D: 5, DV: 70, UN: 64}},
	{"fuseddecode_g4_d128_un8.wgsl.golden", FusedDecodeConsts{WG: 256, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128, UN: 8}},
	// P·V's keys written out: a whole loop (4 of 4), and 2 a trip of 6
	// with keys past the tile in the last (KG = 6 of TK = 32).
	{"fuseddecode_g4_d128_pv4.wgsl.golden", FusedDecodeConsts{WG: 256, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128, PV: 4}},
	// A half K staged a unit a load: 16 halves as WGSL f16, 8 bfloat16s.
	{"fuseddecode_g4_d128_f16_kw4.wgsl.golden", FusedDecodeConsts{WG: 256, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128, KW: 4, VW: 4, K: F16, V: F16, F16: true}},
	{"fuseddecode_g2_d40_bf16_kw4.wgsl.golden", FusedDecodeConsts{WG: 128, HG: 2, NQ: 3, TK: 16, D: 40, DV: 24, KW: 4, VW: 4, K: BF16, V: BF16}},
	{"fuseddecode_g1_d80_q8_pv4.wgsl.golden", FusedDecodeConsts{WG: 128, HG: 1, NQ: 1, TK: 32, D: 80, DV: 80, PV: 4, K: Q8, V: Q8}},
	{"fusedloop_d64_dv64_un16.wgsl.golden", FusedLoopConsts{WG: 64, TK: 32, D: 64, DV: 64, UN: 16}},
	{"fusedloop_d80_dv200_un4.wgsl.golden", FusedLoopConsts{WG: 64, TK: 32, D: 80, DV: 200, UN: 4}},
	{"fuseddecode_g4_d128_half.wgsl.golden", FusedDecodeConsts{WG: 128, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128, Q: F16, K: F16, V: BF16, Bias: BF16}},
	{"fuseddecode_g2_d5_dv7_half.wgsl.golden", FusedDecodeConsts{WG: 128, HG: 2, NQ: 2, TK: 32, D: 5, DV: 7, Q: BF16, K: BF16, V: F16}},
	// V loaded ahead (AH): the H200's f16 decoding kernel, a q8 one and
	// odd head dims over two rows.
	{"fuseddecode_g4_d128_f16_sg_ah.wgsl.golden", FusedDecodeConsts{WG: 256, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128, PV: 64, KW: 4, VW: 4, AH: 1, K: F16, V: F16, F16: true, SG: true}},
	{"fuseddecode_g4_d128_f16_sg_ah_vw1.wgsl.golden", FusedDecodeConsts{WG: 256, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128, PV: 64, KW: 4, VW: 1, AH: 1, K: F16, V: F16, F16: true, SG: true}},
	{"fuseddecode_g4_d128_sg_ah_kn.wgsl.golden", FusedDecodeConsts{WG: 256, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128, PV: 64, KW: 4, VW: 1, KN: 1, AH: 1, F16: true, SG: true}},
	{"fuseddecode_g4_d128_f16_sg_ah_kn.wgsl.golden", FusedDecodeConsts{WG: 256, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128, PV: 64, KW: 4, VW: 1, KN: 1, AH: 1, K: F16, V: F16, F16: true, SG: true}},
	{"fuseddecode_g4_d128_q4_kn.wgsl.golden", FusedDecodeConsts{WG: 256, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128, PV: 64, KW: 4, KN: 1, AH: 1, K: Q4, V: Q4}},
	{"fuseddecode_g2_d5_dv7_kn.wgsl.golden", FusedDecodeConsts{WG: 128, HG: 2, NQ: 2, TK: 32, D: 5, DV: 7, KN: 1, Q: BF16, K: BF16, V: F16}},
	{"fuseddecode_g4_d128_q8_ah.wgsl.golden", FusedDecodeConsts{WG: 256, HG: 4, NQ: 1, TK: 32, D: 128, DV: 128, PV: 64, KW: 4, VW: 4, AH: 1, K: Q8, V: Q8}},
	{"lanedecode_g4_d128_l16.wgsl.golden", LaneDecodeConsts{WG: 256, HG: 4, NQ: 1, L: 16, KB: 2, D: 128, DV: 128, SG: true}},
	{"lanedecode_g4_d128_f16_l16.wgsl.golden", LaneDecodeConsts{WG: 256, HG: 4, NQ: 1, L: 16, KB: 2, D: 128, DV: 128, KW: 2, VW: 2, K: F16, V: F16, F16: true, SG: true}},
	{"lanedecode_g4_d128_q8_l4.wgsl.golden", LaneDecodeConsts{WG: 128, HG: 4, NQ: 1, L: 4, KB: 1, D: 128, DV: 128, KW: 8, VW: 4, K: Q8, V: Q4, SG: true}},
	{"lanedecode_g4_d128_q8_l16.wgsl.golden", LaneDecodeConsts{WG: 256, HG: 4, NQ: 1, L: 16, KB: 2, D: 128, DV: 128, KW: 2, VW: 2, K: Q8, V: Q8, SG: true}},
	{"lanedecode_g4_d128_q4_l16.wgsl.golden", LaneDecodeConsts{WG: 256, HG: 4, NQ: 1, L: 16, KB: 2, D: 128, DV: 128, KW: 2, VW: 2, K: Q4, V: Q4, SG: true}},
	{"lanedecode_g2_d5_dv7_l2.wgsl.golden", LaneDecodeConsts{WG: 64, HG: 2, NQ: 2, L: 2, KB: 3, D: 5, DV: 7, Q: BF16, K: BF16, V: F16, SG: true}},
	{"fuseddecode_g2_d5_dv7_ah.wgsl.golden", FusedDecodeConsts{WG: 128, HG: 2, NQ: 2, TK: 32, D: 5, DV: 7, PV: 64, AH: 1, Q: BF16, K: BF16, V: F16}},
}

// TestGolden compares the generated WGSL with testdata/*.wgsl.golden, so
// that any change to a kernel's source or to Generate shows up in review
// as a diff of the WGSL the device really compiles. go test ./gpu/internal/shaders
// -update rewrites the files (and removes ones no entry names).
func TestGolden(t *testing.T) {
	pinned := map[string]bool{} // kernel names
	names := map[string]bool{}  // file names
	for _, g := range golden {
		k := g.s.Kernel()
		names[g.file] = true
		pinned[k.Name] = true
		t.Run(g.file, func(t *testing.T) {
			got, err := k.Generate(g.s)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", g.file)
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./gpu/internal/shaders -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("generated WGSL for %s differs from %s (if the change is intended, run go test ./gpu/internal/shaders -update and review the diff); first difference at %s",
					k.Key(g.s), path, firstDiff(got, string(want)))
			}
		})
	}
	for _, k := range All {
		if !pinned[k.Name] {
			t.Errorf("kernel %s has no golden specialisation", k.Name)
		}
	}
	// A golden file no entry names is stale: it pins nothing.
	files, _ := filepath.Glob(filepath.Join("testdata", "*.wgsl.golden"))
	for _, f := range files {
		if names[filepath.Base(f)] {
			continue
		}
		if *update {
			if err := os.Remove(f); err != nil {
				t.Error(err)
			}
			continue
		}
		t.Errorf("%s is pinned by no entry of golden; run go test ./gpu/internal/shaders -update to remove it", f)
	}
}

// firstDiff describes the first line where a and b differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < min(len(al), len(bl)); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n\tgot:  %s\n\twant: %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("line %d (one is a prefix of the other)", min(len(al), len(bl))+1)
}

// TestGenerateShape checks what every specialisation of the golden set
// must have: the generated-code line, every constant written once, the
// workgroup size as literal integers, every binding at its index and
// every entry point as a compute function.
func TestGenerateShape(t *testing.T) {
	wgSize := regexp.MustCompile(`@workgroup_size\(([^)]*)\)`)
	literal := regexp.MustCompile(`^\s*\d+\s*(,\s*\d+\s*){0,2}$`)
	for _, g := range golden {
		k := g.s.Kernel()
		src, err := k.Generate(g.s)
		if err != nil {
			t.Fatalf("%s: %v", k.Key(g.s), err)
		}
		first, _, _ := strings.Cut(src, "\n")
		if !strings.HasPrefix(first, "// Code generated ") || !strings.HasSuffix(first, "DO NOT EDIT.") {
			t.Errorf("%s: first line %q is not a generated-code comment", k.Key(g.s), first)
		}
		for _, c := range append(consts(g.s), g.s.derived()...) {
			decl := "const " + c.Name + ": u32 = " + strconv.Itoa(c.Value) + "u;\n"
			if inputOnly(g.s, c.Name) {
				if strings.Contains(src, "\nconst "+c.Name+": ") {
					t.Errorf("%s: declares %s, an input of derived constants only", k.Key(g.s), c.Name)
				}
				continue
			}
			if n := strings.Count(src, "\nconst "+c.Name+": "); n != 1 || !strings.Contains(src, decl) {
				t.Errorf("%s: want exactly one %q, found %d declarations", k.Key(g.s), strings.TrimSpace(decl), n)
			}
		}
		ms := wgSize.FindAllStringSubmatch(src, -1)
		if len(ms) != len(k.Entries) {
			t.Errorf("%s: %d @workgroup_size attributes for %d entry points", k.Key(g.s), len(ms), len(k.Entries))
		}
		for _, m := range ms {
			if !literal.MatchString(m[1]) {
				t.Errorf("%s: @workgroup_size(%s) is not literal integers", k.Key(g.s), m[1])
			}
		}
		for i, bd := range k.Bindings {
			if !strings.Contains(src, "@group(0) @binding("+strconv.Itoa(i)+") var") || !regexp.MustCompile(`@binding\(`+strconv.Itoa(i)+`\) var<[^>]*> `+bd.Name+`: `).MatchString(src) {
				t.Errorf("%s: binding %d is not %s", k.Key(g.s), i, bd.Name)
			}
		}
		for _, e := range k.Entries {
			re := regexp.MustCompile(`@compute @workgroup_size\([^)]*\)\s*\nfn ` + e + `\(`)
			if !re.MatchString(src) {
				t.Errorf("%s: no compute entry point %s", k.Key(g.s), e)
			}
		}
	}
}

// TestGenerateRejects checks that Generate refuses constants outside
// [1, 2²⁴] and a Spec of another kernel, naming the kernel.
func TestGenerateRejects(t *testing.T) {
	for _, g := range golden {
		k := g.s.Kernel()
		given := consts(g.s)
		for i, c := range given {
			for _, v := range []int{0, -1, 1<<24 + 1, -1 << 40} {
				if v == 0 && leastConst(g.s, c.Name) == 0 {
					continue // a mode, off at 0
				}
				x := reflect.New(reflect.TypeOf(g.s)).Elem()
				x.Set(reflect.ValueOf(g.s))
				x.Field(i).SetInt(int64(v))
				bad := x.Interface().(Spec)
				src, err := k.Generate(bad)
				if err == nil {
					t.Errorf("%s: Generate(%+v) (%s = %d) succeeded, want an error", k.Name, bad, c.Name, v)
					continue
				}
				if src != "" {
					t.Errorf("%s: Generate(%+v) returned source with its error", k.Name, bad)
				}
				if !strings.Contains(err.Error(), k.Name) {
					t.Errorf("%s: error %q does not name the kernel", k.Name, err)
				}
			}
		}
		// A Spec of another kernel.
		for _, o := range golden {
			if o.s.Kernel() == k {
				continue
			}
			if src, err := k.Generate(o.s); err == nil || src != "" || !strings.Contains(err.Error(), k.Name) {
				t.Errorf("%s: Generate(%T) = %d bytes, %v; want an error naming the kernel", k.Name, o.s, len(src), err)
			}
		}
	}
	// The bounds themselves are accepted.
	if _, err := Merge.Generate(MergeConsts{WG: 1, L: 1}); err != nil {
		t.Errorf("Merge.Generate(1): %v", err)
	}
	if _, err := Merge.Generate(MergeConsts{WG: 1 << 24, L: 1 << 24}); err != nil {
		t.Errorf("Merge.Generate(2²⁴): %v", err)
	}
	// A derived constant below 1 is refused: a register block wider than
	// its tile leaves WX = TN/RN = 0 invocations.
	if _, err := Scores.Generate(ScoresConsts{TM: 64, TN: 2, TD: 16, RM: 4, RN: 4}); err == nil {
		t.Errorf("Scores.Generate with TN < RN: err = %v, want an error", err)
	}
}

// TestGenerateRejectsElem checks that Generate refuses an Elem that is
// none of F32, F16, BF16, Q8, FP8 and Q4, a quantized Elem anywhere but
// a fused kernel's k and v, and a pack of a float32 output.
func TestGenerateRejectsElem(t *testing.T) {
	for _, s := range []Spec{
		ScoresConsts{TM: 64, TN: 64, TD: 16, RM: 4, RN: 4, K: 3},
		FusedConsts{WG: 64, R: 4, D: 8, DV: 8, V: 200},
		FusedConsts{WG: 64, R: 4, D: 8, DV: 8, Q: Q8},
		ContextConsts{TM: 64, TN: 64, TJ: 16, RM: 4, RN: 4, V: FP8},
		ScoresConsts{TM: 64, TN: 64, TD: 16, RM: 4, RN: 4, K: Q4},
		FusedConsts{WG: 64, R: 4, D: 8, DV: 8, Bias: Q4},
		FusedConsts{WG: 64, R: 4, D: 8, DV: 8, V: Q4 + 1},
		PackConsts{WG: 64, O: F32},
		PackConsts{WG: 64, O: 7},
	} {
		if src, err := s.Kernel().Generate(s); err == nil || src != "" {
			t.Errorf("Generate(%+v) = %d bytes, %v; want an error", s, len(src), err)
		}
	}
}

// TestGenerateRejectsInconsistent checks that Generate refuses constants
// that are each in range but that the kernel's body cannot work with,
// where accepting them would compile a kernel that silently computes the
// wrong thing:
//
//   - scores, context: a register block that does not divide its tile
//     (WY = TM/RM rounds down, so the tile's last rows are never written);
//   - softmax: a workgroup that is not a power of two (the tree reduction
//     halves WG and drops the odd partial);
//   - merge: lanes that do not divide the workgroup (the last row's
//     lanes would run into the next workgroup's row);
//   - fuseddecode: more rows than invocations (one invocation keeps each
//     row's maximum) or more column vec4s than invocations (each owns
//     one column in the P·V phase).
//
// (fused's D4 and DV4 are derived from D and DV, so they cannot disagree.)
func TestGenerateRejectsInconsistent(t *testing.T) {
	cases := []struct {
		name string
		s    Spec
	}{
		{"scores RM ∤ TM", ScoresConsts{TM: 64, TN: 64, TD: 16, RM: 3, RN: 4}},
		{"scores RN ∤ TN", ScoresConsts{TM: 64, TN: 64, TD: 16, RM: 4, RN: 3}},
		{"context RM ∤ TM", ContextConsts{TM: 64, TN: 64, TJ: 16, RM: 3, RN: 4}},
		{"context RN ∤ TN", ContextConsts{TM: 64, TN: 64, TJ: 16, RM: 4, RN: 3}},
		{"softmax WG = 96", SoftmaxConsts{WG: 96, PER: 32}},
		{"merge L ∤ WG", MergeConsts{WG: 64, L: 24}},
		{"merge PG·L ≠ WG", MergeConsts{WG: 256, L: 32, UN: 8, PG: 4}},
		{"merge PG, WG not a power of two", MergeConsts{WG: 96, L: 32, UN: 8, PG: 3}},
		{"merge PG without UN", MergeConsts{WG: 256, L: 32, PG: 8}},
		{"fuseddecode R > WG", FusedDecodeConsts{WG: 16, HG: 4, NQ: 5, TK: 8, D: 8, DV: 8}},
		{"fuseddecode DV4 > WG", FusedDecodeConsts{WG: 16, HG: 1, NQ: 1, TK: 8, D: 8, DV: 65}},
	}
	for _, c := range cases {
		if _, err := c.s.Kernel().Generate(c.s); err == nil {
			t.Errorf("%s: Generate(%+v) succeeded, want an error", c.name, c.s)
		}
	}
}

var (
	paramRef   = regexp.MustCompile(`\bP\.([A-Za-z_][A-Za-z0-9_]*)`)
	identifier = regexp.MustCompile(`\b[A-Za-z_][A-Za-z0-9_]*\b`)
)

// unusedParams lists the Params fields a kernel declares but its body
// does not read, beyond the unit fields every kernel shares (set by one
// helper in package gpu for every dispatch). An entry here that the body
// starts to read fails the test, so the list cannot go stale.
var unusedParams = map[string][]string{}

// TestBodyNames checks that each kernel's description and its WGSL body
// agree: every P.x the body reads is a Params field, every field but the
// shared unit ones is read, every binding and every constant (given and
// derived) is used, and every entry point is defined.
func TestBodyNames(t *testing.T) {
	unit, err := fields(reflect.TypeFor[Unit]())
	if err != nil {
		t.Fatal(err)
	}
	var unitNames []string
	for _, f := range unit {
		unitNames = append(unitNames, f.Name)
	}
	for _, k := range All {
		body, err := k.Body()
		if err != nil {
			t.Fatal(err)
		}
		code := stripComments(body)
		idents := map[string]bool{}
		for _, id := range identifier.FindAllString(code, -1) {
			idents[id] = true
		}
		params := k.ParamNames()
		// pack, copy, copy8, patch, quant8 and subgroups work on a flat
		// range of elements or words, not on a unit of the problem; every
		// other kernel's Params starts with the Unit.
		flat := map[string]bool{"pack": true, "copy": true, "copy8": true, "patch": true, "quant8": true, "subgroups": true}
		if !flat[k.Name] && (len(params) < len(unitNames) || !slices.Equal(params[:len(unitNames)], unitNames)) {
			t.Errorf("%s: Params %v does not start with the Unit fields %v", k.Name, params, unitNames)
		}
		read := map[string]bool{}
		for _, m := range paramRef.FindAllStringSubmatch(code, -1) {
			read[m[1]] = true
			if !slices.Contains(params, m[1]) {
				t.Errorf("%s.wgsl reads P.%s, which is not in its Params", k.Name, m[1])
			}
		}
		var unused []string
		for _, f := range params {
			if !read[f] && !slices.Contains(unitNames, f) {
				unused = append(unused, f)
			}
		}
		if want := unusedParams[k.Name]; !slices.Equal(unused, want) {
			t.Errorf("%s: Params fields the body never reads: %v, want %v", k.Name, unused, want)
		}
		if dup := duplicates(params); len(dup) > 0 {
			t.Errorf("%s: Params fields declared twice: %v", k.Name, dup)
		}
		spec := goldenSpec(t, k)
		typed := map[string]bool{}
		for _, e := range elems(spec) {
			typed[e.Binding] = true
		}
		gen, err := k.Generate(spec)
		if err != nil {
			t.Fatal(err)
		}
		gen = stripComments(gen)
		for _, bd := range k.Bindings {
			if !typed[bd.Name] || bd.Access != Read {
				if !idents[bd.Name] {
					t.Errorf("%s.wgsl never uses binding %s", k.Name, bd.Name)
				}
				continue
			}
			// A binding whose storage the Spec chooses is read through
			// its loader only (x_at, x_at4): in the generated WGSL the
			// loader indexes it once, and the body calls the loader.
			if n := len(regexp.MustCompile(`\b`+bd.Name+`\[`).FindAllString(gen, -1)); n != 1 {
				t.Errorf("%s: binding %s is indexed %d times in the generated WGSL, want once (by its loader): read it through %s_at", k.Name, bd.Name, n, bd.Name)
			}
			if n := len(regexp.MustCompile(`\b`+bd.Name+`_at4?\(`).FindAllString(gen, -1)); n < 2 {
				t.Errorf("%s.wgsl never reads binding %s", k.Name, bd.Name)
			}
		}
		if k.Bindings[0] != (Binding{"P", Uniform}) {
			t.Errorf("%s: binding 0 is %v, want the Params uniform P", k.Name, k.Bindings[0])
		}
		var constNames []string
		for _, c := range append(consts(spec), spec.derived()...) {
			if inputOnly(spec, c.Name) {
				continue
			}
			constNames = append(constNames, c.Name)
			if !idents[c.Name] {
				t.Errorf("%s.wgsl never uses constant %s", k.Name, c.Name)
			}
		}
		var names []string
		for _, bd := range k.Bindings {
			names = append(names, bd.Name)
		}
		names = append(names, constNames...)
		if dup := duplicates(append(names, "Params")); len(dup) > 0 {
			t.Errorf("%s: names declared twice in the generated header: %v", k.Name, dup)
		}
		// A module-scope name the body declares must not collide with
		// one Generate writes.
		for _, m := range regexp.MustCompile(`(?m)^(?:const|var<[^>]*>|fn)\s+([A-Za-z_][A-Za-z0-9_]*)`).FindAllStringSubmatch(code, -1) {
			if slices.Contains(names, m[1]) {
				t.Errorf("%s.wgsl declares %s, which Generate also declares", k.Name, m[1])
			}
		}
		for _, e := range k.Entries {
			if !regexp.MustCompile(`@compute @workgroup_size\([^)]*\)\s*\nfn ` + e + `\(`).MatchString(code) {
				t.Errorf("%s.wgsl has no compute entry point %s", k.Name, e)
			}
		}
		if n := strings.Count(code, "@compute"); n != len(k.Entries) {
			t.Errorf("%s.wgsl has %d entry points, its Kernel lists %d", k.Name, n, len(k.Entries))
		}
	}
}

func stripComments(src string) string {
	return regexp.MustCompile(`//[^\n]*`).ReplaceAllString(src, "")
}

func duplicates(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if seen[x] {
			out = append(out, x)
		}
		seen[x] = true
	}
	return out
}

// goldenSpec is the first specialisation of k in golden.
func goldenSpec(t *testing.T, k Kernel) Spec {
	t.Helper()
	for _, g := range golden {
		if g.s.Kernel().Name == k.Name {
			return g.s
		}
	}
	t.Fatalf("kernel %s has no golden specialisation", k.Name)
	return nil
}

// TestKey checks that distinct specialisations of the same or different
// kernels get distinct keys, and that a key is stable.
func TestKey(t *testing.T) {
	keys := map[string]string{}
	add := func(s Spec) {
		k := s.Kernel()
		key := k.Key(s)
		id := fmt.Sprintf("%T%+v", s, s)
		if prev, ok := keys[key]; ok && prev != id {
			t.Errorf("Key %q names both %s and %s", key, prev, id)
		}
		keys[key] = id
		if again := k.Key(s); again != key {
			t.Errorf("Key of %s is unstable: %q then %q", id, key, again)
		}
	}
	for _, g := range golden {
		add(g.s)
		// Every single-constant change, including ones that keep the
		// digits (1 and 11 vs 11 and 1 in neighbouring constants).
		for i := range consts(g.s) {
			for _, v := range []int{1, 2, 3, 11, 16, 32, 111, 1 << 24} {
				x := reflect.New(reflect.TypeOf(g.s)).Elem()
				x.Set(reflect.ValueOf(g.s))
				x.Field(i).SetInt(int64(v))
				add(x.Interface().(Spec))
			}
		}
	}
	for _, a := range []int{1, 11, 111} {
		for _, b := range []int{1, 11, 111} {
			add(ContextConsts{TM: a, TN: b, TJ: 1, RM: 1, RN: 1})
			add(ScoresConsts{TM: a, TN: b, TD: 1, RM: 1, RN: 1})
		}
	}
	// A Spec of another kernel never makes a key of this one.
	if a, b := Merge.Key(MergeConsts{WG: 64}), Merge.Key(SoftmaxConsts{WG: 64}); a == b {
		t.Errorf("Key of merge with softmax's constants is %q, as with its own", b)
	}
}

// TestHeaders checks the comment header of every kernel file: it opens
// with the kernel's name, and says what it computes, its bindings (the
// same names and access as the Kernel), its grid and its limits, and its
// workgroup memory when it has any.
func TestHeaders(t *testing.T) {
	for _, k := range All {
		body, err := k.Body()
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, l := range strings.Split(body, "\n") {
			if !strings.HasPrefix(l, "//") {
				break
			}
			lines = append(lines, strings.TrimSpace(strings.TrimPrefix(l, "//")))
		}
		header := strings.Join(lines, " ")
		if !strings.HasPrefix(header, k.Name+": ") {
			t.Errorf("%s.wgsl: header does not open with %q", k.Name, k.Name+":")
		}
		for _, w := range []string{"Bindings:", "Grid:", "Limits:"} {
			if !strings.Contains(header, w) {
				t.Errorf("%s.wgsl: header lacks %q", k.Name, w)
			}
		}
		if strings.Contains(body, "var<workgroup>") && !strings.Contains(header, "Workgroup memory:") {
			t.Errorf("%s.wgsl: uses workgroup memory but its header lacks %q", k.Name, "Workgroup memory:")
		}
		_, bind, ok := strings.Cut(header, "Bindings:")
		if !ok {
			continue
		}
		bind, _, _ = strings.Cut(bind, ".")
		got := map[string]string{}
		for _, m := range regexp.MustCompile(`([^()]*)\(([^)]*)\)`).FindAllStringSubmatch(bind, -1) {
			for _, name := range strings.Split(m[1], ",") {
				if name = strings.TrimSpace(name); name != "" {
					got[name] = m[2]
				}
			}
		}
		want := map[string]string{}
		for _, bd := range k.Bindings {
			want[bd.Name] = map[Access]string{Uniform: "Params", Read: "read", ReadWrite: "read_write", ReadI32: "read", ReadU32: "read", ReadWriteU32: "read_write", ReadWriteAtomic: "read_write", ReadWriteI32: "read_write"}[bd.Access]
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s.wgsl: header's Bindings say %v, the Kernel has %v", k.Name, got, want)
		}
	}
}

// TestFlags checks the flag bits: distinct single bits, each written into
// every kernel with a flags field as the WGSL constant Flags names with
// Go's value, and never tested in a body by a literal, so that the bit Go
// sets and the bit WGSL reads come from one place.
func TestFlags(t *testing.T) {
	var seen Flag
	for _, f := range Flags {
		if f.Bit == 0 || f.Bit&(f.Bit-1) != 0 || seen&f.Bit != 0 {
			t.Errorf("flag %s = %#x is not a single new bit", f.Name, f.Bit)
		}
		seen |= f.Bit
	}
	literal := regexp.MustCompile(`flags\s*&\s*[0-9]`)
	for _, g := range golden {
		k := g.s.Kernel()
		src, err := k.Generate(g.s)
		if err != nil {
			t.Fatal(err)
		}
		has := slices.Contains(k.ParamNames(), "flags")
		for _, f := range Flags {
			decl := fmt.Sprintf("const %s: u32 = %du;\n", f.Name, f.Bit)
			if strings.Contains(src, decl) != has {
				t.Errorf("%s: declares %q: %t, want %t", k.Key(g.s), strings.TrimSpace(decl), !has, has)
			}
		}
		if m := literal.FindString(stripComments(src)); m != "" {
			t.Errorf("%s: tests a flag by a literal bit (%q): use the F_ constants", k.Key(g.s), m)
		}
	}
}
