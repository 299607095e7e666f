package spirvmix

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func analyzeFile(t *testing.T, name string) *Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(string(b))
	if err != nil {
		t.Fatalf("Analyze(%s): %v", name, err)
	}
	return r
}

// counter is one naga loop-bounding counter: a load, the test (IEqual,
// All, the conditional branch) and the step (extract, compare, select,
// construct, subtract, store).
var counter = Counts{Counters: 1, CounterInstrs: 10}

// with returns c plus one counter.
func with(c Counts) Counts {
	c.add(counter)
	return c
}

func TestAnalyze(t *testing.T) {
	tests := []struct {
		file string
		want *Report
	}{
		{
			// Counted by hand from the fixture; each block's share is in
			// its comments.
			file: "nested.spvasm",
			want: &Report{
				Entries:  []EntryPoint{{Name: "main", Func: "%main", LocalSize: [3]int{8, 4, 1}}},
				Funcs:    2,
				FAddFMul: 3,
				Module: Counts{
					Instrs: 92, FMA: 16, GlobalLoads: 3, GlobalLoadBytes: 36, GlobalStores: 1, GlobalStoreBytes: 4,
					UniformLoads: 1, WorkgroupLoads: 1, WorkgroupStores: 1, Barriers: 1, Subgroup: 1,
					Counters: 3, CounterInstrs: 30, Clamps: 3, UMins: 4,
					ClampedIn: map[string]int{"Workgroup": 2, "vector": 1}, Conversions: 3, Calls: 1,
				},
				Loops: []Loop{
					{
						// Dot 4 + FAdd 1 + VectorTimesScalar 4 + Fma 2 + FAdd 1;
						// UMin 7 is no clamp, and the vec2<u32> pair no
						// counter: tested with All, but no exit.
						Name: "L2", Header: "%inner", Func: "%main", Parent: "L1", Depth: 2, Inner: true, Blocks: 7,
						Counts: with(Counts{
							Instrs: 43, FMA: 12, GlobalLoads: 1, GlobalLoadBytes: 16, GlobalStores: 1, GlobalStoreBytes: 4,
							WorkgroupLoads: 1, Clamps: 2, UMins: 3, ClampedIn: map[string]int{"Workgroup": 1, "vector": 1},
							Conversions: 1,
						}),
					},
					{
						// Its own 27 instructions (a shuffle among them) and
						// load_half's 5.
						Name: "L1", Header: "%outer", Func: "%main", Depth: 1, Blocks: 8,
						Counts: with(Counts{
							Instrs: 32, FMA: 2, GlobalLoads: 2, GlobalLoadBytes: 20, WorkgroupStores: 1, Barriers: 1, Subgroup: 1,
							Clamps: 1, UMins: 1, ClampedIn: map[string]int{"Workgroup": 1}, Conversions: 1, Calls: 1,
						}),
					},
					{
						// Both cases of the switch: FSub of 2 lanes, one FConvert.
						Name: "L3", Header: "%third", Func: "%main", Depth: 1, Inner: true, Blocks: 8,
						Counts: with(Counts{Instrs: 14, FMA: 2, Conversions: 1}),
					},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := analyzeFile(t, tt.file)
			if !reflect.DeepEqual(got.Entries, tt.want.Entries) || got.Funcs != tt.want.Funcs || got.FAddFMul != tt.want.FAddFMul {
				t.Errorf("entries %v, %d functions, %d FAdd/FMul; want %v, %d, %d",
					got.Entries, got.Funcs, got.FAddFMul, tt.want.Entries, tt.want.Funcs, tt.want.FAddFMul)
			}
			if !reflect.DeepEqual(got.Module, tt.want.Module) {
				t.Errorf("module counts\n got %+v\nwant %+v", got.Module, tt.want.Module)
			}
			if len(got.Loops) != len(tt.want.Loops) {
				t.Fatalf("%d loops, want %d: %+v", len(got.Loops), len(tt.want.Loops), got.Loops)
			}
			for i := range got.Loops {
				if !reflect.DeepEqual(got.Loops[i], tt.want.Loops[i]) {
					t.Errorf("loop %d\n got %+v\nwant %+v", i, got.Loops[i], tt.want.Loops[i])
				}
			}
		})
	}
}

// TestAnalyzeNaga checks the counts of a module naga wrote (copy.wgsl
// storing float16 without WGSL's f16, as wgpu-native 29 handed it to
// lavapipe): its one loop bounded by a counter, its loads and stores,
// and the calls whose callees it counts once a call.
func TestAnalyzeNaga(t *testing.T) {
	r := analyzeFile(t, "copy_f16.spvasm")
	if len(r.Loops) != 1 {
		t.Fatalf("%d loops, want 1", len(r.Loops))
	}
	tests := []struct {
		name      string
		got, want int
	}{
		{"functions", r.Funcs, 6},
		{"workgroup size", r.Entries[0].LocalSize[0], 64},
		{"module counters", r.Module.Counters, 1},
		{"module UMins", r.Module.UMins, 0},
		{"module global loads", r.Module.GlobalLoads, 6},
		{"loop counters", r.Loops[0].Counts.Counters, 1},
		{"loop counter instructions", r.Loops[0].Counts.CounterInstrs, 10},
		// Its own load of the destination's word, and read_f32's two
		// calls' one each.
		{"loop global loads", r.Loops[0].Counts.GlobalLoads, 3},
		{"loop global load bytes", r.Loops[0].Counts.GlobalLoadBytes, 12},
		{"loop global stores", r.Loops[0].Counts.GlobalStores, 1},
		// Four calls of its own and one in each f16 rounding wrapper.
		{"loop calls", r.Loops[0].Counts.Calls, 6},
		// Storage buffers are indexed unclamped, and attn rounds to f16
		// with integer instructions when WGSL's f16 is off.
		{"loop clamps", r.Loops[0].Counts.Clamps, 0},
		{"loop conversions", r.Loops[0].Counts.Conversions, 0},
		{"loop FMAs", r.Loops[0].Counts.FMA, 0},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}

func TestAnalyzeErrors(t *testing.T) {
	const types = "%void = OpTypeVoid\n%fn = OpTypeFunction %void\n"
	tests := []struct {
		name, text, want string
	}{
		{"label outside a function", "%l = OpLabel\n", "OpLabel outside a function"},
		{"function not ended", types + "%f = OpFunction %void None %fn\n%l = OpLabel\nOpReturn\n", "has no OpFunctionEnd"},
		{"end outside a function", "OpFunctionEnd\n", "OpFunctionEnd outside a function"},
		{"function in a function", types + "%f = OpFunction %void None %fn\n%g = OpFunction %void None %fn\n", "OpFunction inside function %f"},
		{"loop without its merge block", types + "%f = OpFunction %void None %fn\n%h = OpLabel\nOpLoopMerge %m %h None\nOpBranch %h\nOpFunctionEnd\n", "merge block %m not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Analyze(tt.text)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Analyze error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestHot(t *testing.T) {
	r := analyzeFile(t, "nested.spvasm")
	var names []string
	for _, l := range r.Hot() {
		names = append(names, l.Name)
	}
	if want := []string{"L2", "L1"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Hot = %v, want %v", names, want)
	}
	if h := (&Report{}).Hot(); h != nil {
		t.Errorf("Hot of no loops = %v, want nil", h)
	}
}

// TestDeadLoads: a load whose result nothing uses (gogpu/naga writes one
// again at each use of a let bound to a load) is counted apart, not as
// a load, whatever its memory; the used ones still count.
func TestDeadLoads(t *testing.T) {
	const text = `
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 64 1 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
      %float = OpTypeFloat 32
    %v4float = OpTypeVector %float 4
       %uint = OpTypeInt 32 0
     %uint_0 = OpConstant %uint 0
    %uint_64 = OpConstant %uint 64
        %arr = OpTypeArray %v4float %uint_64
      %p_arr = OpTypePointer Workgroup %arr
       %p_wv = OpTypePointer Workgroup %v4float
       %rarr = OpTypeRuntimeArray %v4float
     %struct = OpTypeStruct %rarr
       %p_sb = OpTypePointer StorageBuffer %struct
       %p_sv = OpTypePointer StorageBuffer %v4float
          %a = OpVariable %p_arr Workgroup
          %o = OpVariable %p_sb StorageBuffer
       %main = OpFunction %void None %fn
      %entry = OpLabel
         %w1 = OpAccessChain %p_wv %a %uint_0
       %dead = OpLoad %v4float %w1
       %live = OpLoad %v4float %w1
         %s1 = OpAccessChain %p_sv %o %uint_0 %uint_0
      %dead2 = OpLoad %v4float %s1
      %live2 = OpLoad %v4float %s1
        %sum = OpFAdd %v4float %live %live2
               OpStore %s1 %sum
               OpReturn
               OpFunctionEnd
`
	r, err := Analyze(text)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Module
	if c.DeadLoads != 2 || c.WorkgroupLoads != 1 || c.GlobalLoads != 1 || c.GlobalLoadBytes != 16 {
		t.Errorf("dead %d, workgroup %d, storage %d of %d bytes; want 2, 1, 1 of 16", c.DeadLoads, c.WorkgroupLoads, c.GlobalLoads, c.GlobalLoadBytes)
	}
}
