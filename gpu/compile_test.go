//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
	"github.com/attn-go/attn/internal/gputest"
	"github.com/gogpu/gputypes"
)

// newTestBackend opens the backend for an internal test as openGPU does
// for the external ones (gputest.Open): it skips with the reason when
// there is no adapter, fails instead under ATTN_REQUIRE_GPU=1, and closes
// the backend when the test ends.
func newTestBackend(t testing.TB) *Backend {
	t.Helper()
	return gputest.Open(t, New)
}

// minWorkgroupStorage is the workgroup memory every WebGPU device has
// (the default maxComputeWorkgroupStorageSize).
const minWorkgroupStorage = 16384

// headDims are the head dims (D and Dv alike) the compile test covers:
// 1 to 5 for every remainder of the vec4 packing, 31 and 32 around a
// multiple of 4, and the sizes models use.
var headDims = []int{1, 2, 3, 4, 5, 16, 31, 32, 64, 80, 96, 128, 160, 256}

// shortHeadDims are the ones TestCompile keeps but under ATTN_LONG=1
// (CI's step of long checks runs them all): each remainder mod 4, the
// common 64, 80 and the largest. Each head dim and pair of them is a
// pipeline of its own, compiled anew in every process (lavapipe's LLVM),
// so the full set is most of the suite's cold compiling.
var shortHeadDims = []int{1, 2, 3, 5, 64, 80, 256}

// backendSpecs lists every specialisation the backend's ops ask for with
// head dims D, Dv drawn from dims (each pair), under both plans
// (plan.AdapterPlan), built from the same constants as the ops (package
// plan's adapterplan.go and each kernel's file). Scores, softmax, context
// have one each, merge one a plan, pack one a pair of a half dtype and a
// source dtype, copy one a source dtype; a pair has the fused kernel each
// plan's PrefillKernel picks for it (with b's features), on b's workgroup
// memory and on the least WebGPU allows, and the hardware plan's
// decoding kernel for the
// pairs of equal dims (and an odd and a wide pair) for a few groups and
// query counts (DecodeKernel). The half operands' loaders are compiled
// for scores and context, and for the fused kernels of a few pairs (odd,
// vec4 and wide heads), with each half dtype on every operand. The
// backward pass's kernels come for each head dim with itself and a few
// unequal pairs, on both memories.
func backendSpecs(t testing.TB, b *Backend, dims []int) []shaders.Spec {
	t.Helper()
	f16, bf16 := shaders.F16, shaders.BF16
	specs := []shaders.Spec{
		shaders.ScoresConsts{TM: plan.MmTile, TN: plan.MmTile, TD: plan.MmStep, RM: plan.MmReg, RN: plan.MmReg},
		shaders.SoftmaxConsts{WG: plan.SmWG, PER: plan.SmPer},
		shaders.ContextConsts{TM: plan.MmTile, TN: plan.MmTile, TJ: plan.MmStep, RM: plan.MmReg, RN: plan.MmReg},
		shaders.MergeConsts{WG: plan.MergeWG, L: 1},
		shaders.MergeConsts{WG: plan.MergeWG, L: plan.MergeLanes},
		shaders.MergeConsts{WG: plan.MergeWG, L: plan.MergeLanes, UN: 8}, // ATTN_GPU_TUNE=merge.groups=1
		shaders.MergeConsts{WG: plan.MergeRowWG, L: plan.MergeLanes, UN: 8, PG: plan.MergeRowWG / plan.MergeLanes},
	}
	// pack from every source dtype into each half one (the ops'
	// outputs), and copy from every source dtype into every one (Copy).
	for _, src := range []shaders.Elem{shaders.F32, f16, bf16} {
		specs = append(specs, shaders.PackConsts{WG: packWG, O: f16, Src: src}, shaders.PackConsts{WG: packWG, O: bf16, Src: src})
		for _, o := range []shaders.Elem{shaders.F32, f16, bf16} {
			specs = append(specs, shaders.CopyConsts{WG: copyWG, O: o, Src: src})
		}
	}
	specs = append(specs, shaders.Copy8Consts{WG: copyWG}, shaders.Copy8Consts{WG: copyWG, Q8: 1}, shaders.Copy8Consts{WG: copyWG, Q4: 1})
	specs = append(specs, shaders.PatchConsts{WG: patchWG})
	for _, src := range []shaders.Elem{shaders.F32, f16, bf16} {
		specs = append(specs, shaders.Quant8Consts{WG: packWG, Src: int(src)}, shaders.Quant8Consts{WG: packWG, Q8: 1, Src: int(src)},
			shaders.Quant8Consts{WG: packWG, Q4: 1, Src: int(src)})
	}
	for _, e := range []shaders.Elem{f16, bf16} {
		specs = append(specs,
			shaders.ScoresConsts{TM: plan.MmTile, TN: plan.MmTile, TD: plan.MmStep, RM: plan.MmReg, RN: plan.MmReg, Q: e, K: e, Bias: e},
			shaders.ContextConsts{TM: plan.MmTile, TN: plan.MmTile, TJ: plan.MmStep, RM: plan.MmReg, RN: plan.MmReg, V: e})
	}
	// fused is the fused kernel plan ap picks for d, dv on m bytes of
	// workgroup memory, its operands stored as e.
	fused := func(ap plan.AdapterPlan, m, d, dv int, e shaders.Elem) shaders.Spec {
		if c := ap.PrefillKernel(m, d, dv); c != nil {
			return c.Spec(e, e, e, e)
		}
		t.Fatalf("plan %v: prefillKernel(%d, %d) fits no kernel in %d bytes of workgroup memory", ap, d, dv, m)
		return nil
	}
	mem := int(b.lim.MaxComputeWorkgroupStorageSize)
	var plans []plan.AdapterPlan
	for _, setting := range []string{"cpu", "hardware"} {
		ap, err := plan.Choose(setting, gputypes.DeviceTypeOther)
		if err != nil {
			t.Fatal(err)
		}
		ap.Features = b.aplan.Features
		plans = append(plans, ap)
	}
	// ATTN_GPU_PREFILL=loop and tile: each kernel where the head dims
	// would run the other.
	loop, tile := plans[1], plans[1]
	loop.Prefill, tile.Prefill = plan.PrefillLoop, plan.PrefillTile
	for _, ap := range append(plans, loop, tile) {
		for _, d := range dims {
			for _, dv := range dims {
				for _, m := range []int{mem, min(mem, minWorkgroupStorage)} {
					if s := fused(ap, m, d, dv, shaders.F32); !slices.Contains(specs, s) {
						specs = append(specs, s)
					}
				}
			}
		}
		for _, hd := range [][2]int{{3, 5}, {64, 64}, {256, 200}} {
			for _, e := range []shaders.Elem{f16, bf16} {
				if s := fused(ap, mem, hd[0], hd[1], e); !slices.Contains(specs, s) {
					specs = append(specs, s)
				}
			}
		}
		// A decoding step's half K and V eight halves a load, widened
		// with the device's f16 where it has it and without.
		for _, f := range []plan.KernelFeatures{b.aplan.Features, {}} {
			for _, kv := range [][2]shaders.Elem{{f16, f16}, {bf16, f16}} {
				fp := ap
				fp.Features = f
				if lc, ok := fp.LaneKernel(mem, 128, 128, 4, 1, 4096); ok && !ap.Hardware {
					if s := lc.Spec(shaders.F32, kv[0], kv[1], shaders.F32); !slices.Contains(specs, s) {
						specs = append(specs, s)
					}
				}
			}
		}
		// Quantized K and V (the fused kernels' k and v only): q8 and q4
		// head dims are whole blocks; fp8 ones any, 5 for the scalar
		// loaders.
		for _, hd := range [][2]int{{32, 64}, {128, 128}} {
			for _, kv := range [][2]shaders.Elem{{shaders.Q8, shaders.FP8}, {shaders.FP8, shaders.Q8}, {shaders.Q4, shaders.Q4}, {shaders.Q4, shaders.Q8}} {
				c := ap.PrefillKernel(mem, hd[0], hd[1])
				specs = append(specs, c.Spec(shaders.F32, kv[0], kv[1], shaders.F32))
				if lc, ok := ap.LaneKernel(mem, hd[0], hd[1], 4, 1, 4096); ok && !ap.Hardware {
					specs = append(specs, lc.Spec(shaders.F32, kv[0], kv[1], shaders.F32))
				}
				if dt, ok := ap.DecodeKernel(mem, hd[0], hd[1], 4, 1); ok && ap.Hardware {
					s := dt.Consts(hd[0], hd[1])
					s.K, s.V = kv[0], kv[1]
					specs = append(specs, s)
				}
			}
		}
		if c := ap.PrefillKernel(mem, 5, 7); c != nil {
			specs = append(specs, c.Spec(shaders.F32, shaders.FP8, shaders.FP8, shaders.F32))
		}
		if !ap.Hardware {
			continue
		}
		// The decoding kernel: G = 1 (key groups summed at the end), 4 and
		// 8 (several rows an invocation), 3 (odd), 32 (two workgroups a
		// group); half operands for the vec4 and the scalar loaders.
		pairs := [][2]int{{5, 7}, {80, 200}}
		for _, d := range dims {
			pairs = append(pairs, [2]int{d, d})
		}
		for _, hd := range pairs {
			for _, gq := range [][2]int{{1, 1}, {4, 1}, {8, 3}, {3, 4}, {32, 1}} {
				for _, m := range []int{mem, min(mem, minWorkgroupStorage)} {
					dt, ok := ap.DecodeKernel(m, hd[0], hd[1], gq[0], gq[1])
					if !ok {
						t.Fatalf("plan %v: decodeKernel(%d, %d, %d, %d, %d) fits no tile", ap, m, hd[0], hd[1], gq[0], gq[1])
					}
					if s := dt.Consts(hd[0], hd[1]); !slices.Contains(specs, shaders.Spec(s)) {
						specs = append(specs, s)
					}
				}
			}
		}
		for _, hd := range [][2]int{{5, 7}, {128, 128}} {
			dt, _ := ap.DecodeKernel(mem, hd[0], hd[1], 4, 1)
			for _, e := range []shaders.Elem{f16, bf16} {
				s := dt.Consts(hd[0], hd[1])
				s.Q, s.K, s.V, s.Bias = e, e, e, e
				specs = append(specs, s)
			}
		}
		// lanedecode.wgsl at this device's least subgroup size, where it
		// has subgroups: the decoding shapes above in float32, and at D =
		// 128 (and 32, 64: the 8-bit ones' parts of a block) each cache
		// dtype.
		if lp := ap.WithSubgroupMin(int(b.WebGPU().SubgroupMinSize)); lp.WantsSubgroupMin() && b.WebGPU().SubgroupMinSize >= 2 {
			sg := b.WebGPU().SubgroupMinSize
			for _, hd := range pairs {
				for _, gq := range [][2]int{{1, 1}, {4, 1}, {8, 3}} {
					if lc, ok := lp.LaneDecodeKernel(mem, hd[0], hd[1], gq[0], gq[1]); ok {
						if s := lc.Spec(shaders.F32, shaders.F32, shaders.F32, shaders.F32); !slices.Contains(specs, s) {
							specs = append(specs, s)
						}
					}
				}
			}
			for _, hd := range [][2]int{{128, 128}, {32, 64}} {
				lc, ok := lp.LaneDecodeKernel(mem, hd[0], hd[1], 4, 1)
				if !ok {
					t.Fatalf("plan %v, subgroups of %d: LaneDecodeKernel(%d, %d, %d, 4, 1) fits nothing", lp, sg, mem, hd[0], hd[1])
				}
				for _, e := range []shaders.Elem{f16, bf16, shaders.Q8, shaders.Q4, shaders.FP8} {
					q := e
					if e.Quant() {
						q = shaders.F32
					}
					if s := lc.Spec(q, e, e, q); !slices.Contains(specs, s) {
						specs = append(specs, s)
					}
				}
			}
		}
		// ATTN_GPU_TUNE=decode.pv=4: the P·V loop written out, with a
		// float16 cache (as f16 where the device has it), a q8 one and a
		// q4 one.
		dt, _ := ap.DecodeKernel(mem, 128, 128, 4, 1)
		for _, e := range []shaders.Elem{f16, shaders.Q8, shaders.Q4} {
			s := dt.Consts(128, 128)
			s.K, s.V, s.PV = e, e, 4
			s.F16 = e == f16 && b.info.Features.Contains(gputypes.FeatureShaderF16)
			specs = append(specs, s)
		}
	}
	// The backward pass (its tiles depend on the workgroup memory, not
	// the plan): each head dim with itself, and pairs of odd, unequal
	// and wide ones, all float32, and the odd pair with half operands.
	pairs := [][2]int{{3, 5}, {17, 5}, {80, 200}}
	for _, d := range dims {
		pairs = append(pairs, [2]int{d, d})
	}
	for n, hd := range pairs {
		specs = append(specs, shaders.BackDeltaConsts{WG: plan.BackWG, DV: hd[1]})
		for _, m := range []int{mem, min(mem, minWorkgroupStorage)} {
			bp, ok := plans[0].Backward(m, hd[0], hd[1])
			if !ok {
				t.Fatalf("plan.Backward(%d, %d, %d) fits no tile", m, hd[0], hd[1])
			}
			kv, q, bias := bp.KV(hd[0], hd[1]), bp.Q(hd[0], hd[1]), bp.Bias(hd[0], hd[1])
			ikv, iq := bp.IdxKV(hd[0], hd[1]), bp.IdxQ(hd[0], hd[1])
			ss := []shaders.Spec{kv, q, bias, ikv, iq}
			if n == 1 {
				kv.Q, kv.K, kv.V, kv.Dout, kv.Bias = shaders.F16, shaders.BF16, shaders.F16, shaders.BF16, shaders.F16
				q.Q, q.K, q.V, q.Dout, q.Bias = shaders.BF16, shaders.F16, shaders.BF16, shaders.F16, shaders.BF16
				bias.Q, bias.K, bias.V, bias.Dout, bias.Bias = shaders.F16, shaders.F16, shaders.BF16, shaders.BF16, shaders.F16
				ikv.Q, ikv.K, ikv.V, ikv.Dout = shaders.F16, shaders.BF16, shaders.F16, shaders.BF16
				iq.Q, iq.K, iq.V, iq.Dout = shaders.BF16, shaders.F16, shaders.BF16, shaders.F16
				ss = append(ss, kv, q, bias, ikv, iq, shaders.BackDeltaConsts{WG: plan.BackWG, DV: hd[1], O: shaders.BF16, Dout: shaders.F16})
				if b.info.Features.Contains(gputypes.FeatureShaderF16) {
					// The same with the float16 operands bound as f16
					// arrays (the hardware plan's F16 mode).
					kv.F16, q.F16, bias.F16, ikv.F16, iq.F16 = true, true, true, true, true
					ss = append(ss, kv, q, bias, ikv, iq, shaders.BackDeltaConsts{WG: plan.BackWG, DV: hd[1], O: shaders.BF16, Dout: shaders.F16, F16: true})
				}
			}
			for _, s := range ss {
				if !slices.Contains(specs, s) {
					specs = append(specs, s)
				}
			}
		}
	}
	// subgroups.wgsl, which only a device with subgroups compiles.
	if b.info.Features.Contains(gputypes.FeatureSubgroupOperations) {
		specs = append(specs, shaders.SubgroupsConsts{WG: subgroupsWG})
	}
	for i := range shaders.All {
		sg := shaders.All[i].Name == shaders.Subgroups.Name || shaders.All[i].Name == shaders.LaneDecode.Name
		if sg && !b.info.Features.Contains(gputypes.FeatureSubgroupOperations) {
			continue
		}
		if !slices.ContainsFunc(specs, func(x shaders.Spec) bool { return x.Kernel().Name == shaders.All[i].Name }) {
			t.Fatalf("backendSpecs has no specialisation of kernel %s", shaders.All[i].Name)
		}
	}
	return specs
}

// TestCompile compiles every entry point of every specialisation the
// backend can produce for the head dims above (shortHeadDims but under
// ATTN_LONG=1), through the same path
// the ops use, so a kernel that naga or the driver rejects for some head
// dim fails here and not in a user's first call.
func TestCompile(t *testing.T) {
	b := newTestBackend(t)
	dims := headDims
	if testing.Short() || os.Getenv("ATTN_LONG") != "1" {
		dims = shortHeadDims
	}
	specs := backendSpecs(t, b, dims)
	b.mu.Lock()
	defer b.mu.Unlock()
	var all []specEntry
	for _, x := range specs {
		for _, e := range x.Kernel().Entries {
			all = append(all, specEntry{x, e})
		}
	}
	// Side by side, as a program warming its kernels would: a driver
	// that compiles at creation (NVIDIA's) takes every core.
	start := time.Now()
	if err := b.precompile(all); err != nil {
		t.Error(err)
	}
	total := time.Since(start)
	for _, x := range all {
		k := x.spec.Kernel()
		p, err := b.pipeline(x.spec, x.entry)
		if err != nil {
			t.Errorf("%s %s: %v", k.Key(x.spec), x.entry, err)
			continue
		}
		if p.p == nil || p.kernel != k {
			t.Errorf("%s %s: incomplete pipeline %+v", k.Key(x.spec), x.entry, p)
		}
		if again, err := b.pipeline(x.spec, x.entry); err != nil || again != p {
			t.Errorf("%s %s: second lookup = %p, %v; want the cached %p", k.Key(x.spec), x.entry, again, err, p)
		}
	}
	t.Logf("compiled %d pipelines (%d head dims, %d fused pairs) on %s in %v, %d at a time",
		len(all), len(dims), len(dims)*len(dims), b.info.Adapter.Name, total.Round(time.Millisecond), compileWorkers())
}

// TestCompileReportsErrors checks that a kernel the device rejects comes
// back as an error from pipeline, and is not cached, so TestCompile
// passing means the kernels compiled.
func TestCompileReportsErrors(t *testing.T) {
	b := newTestBackend(t)
	b.mu.Lock()
	defer b.mu.Unlock()

	// The body reads P.Dv, which this Params lacks.
	broken := shaders.Merge
	broken.Params = reflect.TypeFor[struct{ shaders.Unit }]()
	if _, err := b.compile(&broken, shaders.MergeConsts{WG: plan.MergeWG, L: 1}, "main"); err == nil || !strings.Contains(err.Error(), "compiling WGSL") {
		t.Errorf("pipeline of WGSL reading a missing Params field: err = %v, want a compile error", err)
	}
	if _, err := b.pipeline(shaders.MergeConsts{WG: plan.MergeWG, L: 1}, "nosuchentry"); err == nil {
		t.Error("pipeline of a missing entry point succeeded")
	}
	if _, err := b.pipeline(shaders.MergeConsts{WG: 0, L: 1}, "main"); err == nil {
		t.Error("pipeline of an out-of-range spec succeeded")
	}
	for key := range b.pipes {
		if strings.Contains(key, "nosuchentry") || strings.Contains(key, "WG=0") {
			t.Errorf("failed pipeline %q was cached", key)
		}
	}
	if len(b.pipes) != 0 {
		t.Errorf("%d pipelines cached after only failures", len(b.pipes))
	}
}

// TestCompileRejectsBadSpec checks that compile refuses the Spec of
// another kernel whether or not a valid specialisation of the kernel is
// already cached.
func TestCompileRejectsBadSpec(t *testing.T) {
	b := newTestBackend(t)
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.pipeline(shaders.MergeConsts{WG: plan.MergeWG, L: 1}, "main"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []shaders.Spec{shaders.SoftmaxConsts{WG: plan.MergeWG, PER: 1}, shaders.FusedConsts{WG: plan.MergeWG, R: 1, D: 1, DV: 1}} {
		if _, err := b.compile(&shaders.Merge, s, "main"); err == nil {
			t.Errorf("compile(merge, %T%+v) succeeded; merge is specialised by a MergeConsts", s, s)
		}
	}
}
