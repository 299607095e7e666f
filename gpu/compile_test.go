//go:build cgo && !nogpu

package gpu

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/gpu/gputest"
	"github.com/attn-go/attn/shaders"
)

// newTestBackend opens the backend for an internal test as openGPU does
// for the external ones (gputest.Open): it skips with the reason when
// there is no adapter, fails instead under ATTN_REQUIRE_GPU=1, and closes
// the backend when the test ends.
func newTestBackend(t testing.TB) *Backend {
	t.Helper()
	return gputest.Open(t, New)
}

// headDims are the head dims (D and Dv alike) the compile test covers:
// 1 to 5 for every remainder of the vec4 packing, 31 and 32 around a
// multiple of 4, and the sizes models use.
var headDims = []int{1, 2, 3, 4, 5, 16, 31, 32, 64, 80, 96, 128, 160, 256}

// shortHeadDims are the ones -short keeps: each remainder mod 4, the
// common 64 and the largest.
var shortHeadDims = []int{1, 2, 3, 5, 64, 80, 256}

// minWorkgroupStorage is the workgroup memory every WebGPU device has
// (the default maxComputeWorkgroupStorageSize).
const minWorkgroupStorage = 16384

// backendSpecs lists every specialisation the backend's ops ask for with
// head dims D, Dv drawn from dims (each pair), built from the same
// constants as the ops (ops.go and each kernel's file). Scores, softmax,
// context and merge have one each; a pair narrow enough for fused.wgsl has one with the rows fusedRows
// picks, a wider one has one of fusedloop.wgsl per TK, with the TK
// fusedTile picks on b and the one it would pick on a device with the
// least workgroup memory WebGPU allows.
func backendSpecs(t testing.TB, b *Backend, dims []int) []shaders.Spec {
	t.Helper()
	specs := []shaders.Spec{
		shaders.ScoresConsts{TM: mmTile, TN: mmTile, TD: mmStep, RM: mmReg, RN: mmReg},
		shaders.SoftmaxConsts{WG: smWG, PER: smPer},
		shaders.ContextConsts{TM: mmTile, TN: mmTile, TJ: mmStep, RM: mmReg, RN: mmReg},
		shaders.MergeConsts{WG: mergeWG},
	}
	mem := b.lim.MaxComputeWorkgroupStorageSize
	defer func() { b.lim.MaxComputeWorkgroupStorageSize = mem }()
	for _, d := range dims {
		for _, dv := range dims {
			if r := fusedRows(d, dv); r > 0 {
				specs = append(specs, shaders.FusedConsts{WG: fusedWG, R: r, D: d, DV: dv})
				continue
			}
			var tks []int
			for _, m := range []uint32{mem, min(mem, minWorkgroupStorage)} {
				b.lim.MaxComputeWorkgroupStorageSize = m
				tk, _ := b.fusedTile(d, dv)
				if tk == 0 {
					t.Fatalf("fusedTile(%d, %d) fits no tile in %d bytes of workgroup memory", d, dv, m)
				}
				if !slices.Contains(tks, tk) {
					tks = append(tks, tk)
					specs = append(specs, shaders.FusedLoopConsts{WG: fusedWG, TK: tk, D: d, DV: dv})
				}
			}
		}
	}
	for i := range shaders.All {
		if !slices.ContainsFunc(specs, func(x shaders.Spec) bool { return x.Kernel().Name == shaders.All[i].Name }) {
			t.Fatalf("backendSpecs has no specialisation of kernel %s", shaders.All[i].Name)
		}
	}
	return specs
}

// TestCompile compiles every entry point of every specialisation the
// backend can produce for the head dims above, through the same path
// the ops use, so a kernel that naga or the driver rejects for some head
// dim fails here and not in a user's first call.
func TestCompile(t *testing.T) {
	b := newTestBackend(t)
	dims := headDims
	if testing.Short() {
		dims = shortHeadDims
	}
	specs := backendSpecs(t, b, dims)
	b.mu.Lock()
	defer b.mu.Unlock()
	start := time.Now()
	var n int
	slowest, slowestKey := time.Duration(0), ""
	perKernel := map[string]time.Duration{}
	for _, x := range specs {
		k := x.Kernel()
		for _, e := range k.Entries {
			t0 := time.Now()
			p, err := b.pipeline(x, e)
			dt := time.Since(t0)
			if err != nil {
				t.Errorf("%s %s: %v", k.Key(x), e, err)
				continue
			}
			n++
			perKernel[k.Name] += dt
			if dt > slowest {
				slowest, slowestKey = dt, k.Key(x)+" "+e
			}
			if p.pipe == nil || p.bgl == nil || p.kernel != k {
				t.Errorf("%s %s: incomplete pipeline %+v", k.Key(x), e, p)
			}
			if again, err := b.pipeline(x, e); err != nil || again != p {
				t.Errorf("%s %s: second lookup = %p, %v; want the cached %p", k.Key(x), e, again, err, p)
			}
		}
	}
	total := time.Since(start)
	var parts []string
	for _, k := range shaders.All {
		parts = append(parts, fmt.Sprintf("%s %v", k.Name, perKernel[k.Name].Round(time.Millisecond)))
	}
	t.Logf("compiled %d pipelines (%d head dims, %d fused pairs) on %s in %v (%s); slowest %s, %v",
		n, len(dims), len(dims)*len(dims), b.info.Adapter.Name, total.Round(time.Millisecond),
		strings.Join(parts, ", "), slowestKey, slowest.Round(time.Millisecond))
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
	if _, err := b.compile(&broken, shaders.MergeConsts{WG: mergeWG}, "main"); err == nil || !strings.Contains(err.Error(), "compiling WGSL") {
		t.Errorf("pipeline of WGSL reading a missing Params field: err = %v, want a compile error", err)
	}
	if _, err := b.pipeline(shaders.MergeConsts{WG: mergeWG}, "nosuchentry"); err == nil {
		t.Error("pipeline of a missing entry point succeeded")
	}
	if _, err := b.pipeline(shaders.MergeConsts{WG: 0}, "main"); err == nil {
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
	if _, err := b.pipeline(shaders.MergeConsts{WG: mergeWG}, "main"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []shaders.Spec{shaders.SoftmaxConsts{WG: mergeWG, PER: 1}, shaders.FusedConsts{WG: mergeWG, R: 1, D: 1, DV: 1}} {
		if _, err := b.compile(&shaders.Merge, s, "main"); err == nil {
			t.Errorf("compile(merge, %T%+v) succeeded; merge is specialised by a MergeConsts", s, s)
		}
	}
}

// fusedLoops bounds the loop iterations one invocation of fused.wgsl runs
// over a chunk of keys, counting every iteration of every loop (lavapipe
// stops an invocation after about 65 535 in all):
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

// TestPlanFusedTile checks fusedTile on this device for every pair of
// head dims: the tile fits workgroup memory and is the largest power of
// two up to fusedMaxK that does, the chunk is whole tiles and keeps an
// invocation within loopBudget, and (0, 0) comes back exactly when not
// even one key fits.
func TestPlanFusedTile(t *testing.T) {
	b := newTestBackend(t)
	mem := int(b.lim.MaxComputeWorkgroupStorageSize)
	dims := append(slices.Clone(headDims), 512, 1000, 1024, 4096, 1<<14, 1<<16)
	for _, d := range dims {
		for _, dv := range dims {
			tk, chunk := b.fusedTile(d, dv)
			perKey := (ceilDiv(d, 4) + ceilDiv(dv, 4)) * 16 // bytes of K and V a key stages
			if tk == 0 {
				if chunk != 0 {
					t.Errorf("fusedTile(%d, %d) = 0, %d; want 0, 0", d, dv, chunk)
				}
				if perKey <= mem && fusedLoops(1, d, dv, 1) <= loopBudget {
					t.Errorf("fusedTile(%d, %d) = 0, 0, but a tile of one key fits (%d of %d bytes, %d loop iterations)",
						d, dv, perKey, mem, fusedLoops(1, d, dv, 1))
				}
				if slices.Contains(headDims, d) && slices.Contains(headDims, dv) {
					t.Errorf("fusedTile(%d, %d) fits no tile in %d bytes", d, dv, mem)
				}
				continue
			}
			if tk > fusedMaxK || tk&(tk-1) != 0 {
				t.Errorf("fusedTile(%d, %d): TK = %d, want a power of two ≤ %d", d, dv, tk, fusedMaxK)
			}
			if tk*perKey > mem {
				t.Errorf("fusedTile(%d, %d): TK = %d stages %d bytes, more than the device's %d", d, dv, tk, tk*perKey, mem)
			}
			if tk < fusedMaxK && 2*tk*perKey <= mem {
				t.Errorf("fusedTile(%d, %d): TK = %d, but %d fits (%d of %d bytes)", d, dv, tk, 2*tk, 2*tk*perKey, mem)
			}
			if chunk < tk || chunk%tk != 0 {
				t.Errorf("fusedTile(%d, %d): chunk %d is not a positive multiple of TK = %d", d, dv, chunk, tk)
			}
			if n := fusedLoops(tk, d, dv, chunk); n > loopBudget {
				t.Errorf("fusedTile(%d, %d) = %d, %d: an invocation runs %d loop iterations, more than loopBudget = %d", d, dv, tk, chunk, n, loopBudget)
			}
		}
	}
	for _, d := range []int{64, 128, 256} {
		tk, chunk := b.fusedTile(d, d)
		t.Logf("D = Dv = %d: TK = %d, %d keys a chunk, %d loop iterations of %d (%d bytes of workgroup memory of %d)",
			d, tk, chunk, fusedLoops(tk, d, d, chunk), loopBudget, tk*(ceilDiv(d, 4)*2)*16, mem)
	}
}
