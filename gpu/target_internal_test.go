//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/shaders"
	"github.com/attn-go/attn/internal/gputest"
)

// TestTarget: under ATTN_GPU_TARGET the backend plans, on whatever
// adapter runs the test (lavapipe: subgroups of 8, 32 KiB of workgroup
// memory), for the target's subgroups, workgroup memory and
// invocations, under the hardware plan; says so in Info().Detail; and
// compiles the kernels of an op without dispatching them (the output
// keeps what was written to it).
func TestTarget(t *testing.T) {
	for _, c := range []struct {
		target string
		mem    uint32
	}{{"h200", 48 << 10}, {"rdna3", 64 << 10}} {
		t.Run(c.target, func(t *testing.T) {
			t.Setenv("ATTN_GPU_TARGET", c.target)
			t.Setenv("ATTN_GPU_PLAN", "")
			b := gputest.Open(t, New)
			if b.target == nil || b.target.Name != c.target || !b.aplan.Hardware {
				t.Fatalf("target %v, hardware plan %t; want %s's, hardware", b.target, b.aplan.Hardware, c.target)
			}
			if b.lim.MaxComputeWorkgroupStorageSize != c.mem || b.lim.MaxComputeInvocationsPerWorkgroup != 1024 {
				t.Errorf("planned for %d bytes of workgroup memory and %d invocations; want %d and 1024",
					b.lim.MaxComputeWorkgroupStorageSize, b.lim.MaxComputeInvocationsPerWorkgroup, c.mem)
			}
			if d := b.Info().Detail; !strings.Contains(d, "target "+c.target+" (ATTN_GPU_TARGET="+c.target) || !strings.Contains(d, "dispatches nothing") {
				t.Errorf("Info().Detail = %q; want the target named", d)
			}
			// A decoding step: where the device has subgroups, lanedecode
			// in teams of lanes within the target's 32, not lavapipe's 8.
			p := backend.Problem{B: 1, H: 32, KVHeads: 8, Nq: 1, Nk: 4096, D: 128, Dv: 128, Causal: true}
			k, err := b.kernelFor(p)
			if err != nil {
				t.Fatal(err)
			}
			spec := k.Spec(shaders.F32, shaders.F32, shaders.F32, shaders.F32)
			if ld, ok := spec.(shaders.LaneDecodeConsts); b.aplan.WantsSubgroupMin() && (!ok || ld.L <= 8) {
				t.Errorf("decoding by %s; want lanedecode.wgsl with teams past lavapipe's subgroups of 8", k)
			}
			// No dispatch: the output keeps its sentinel.
			n := p.B * p.H * p.Nq * p.Dv
			q, _ := b.Alloc(backend.Float32, p.H*p.D)
			kv, _ := b.Alloc(backend.Float32, p.Nk*p.KVHeads*p.D)
			o, err := b.Alloc(backend.Float32, n)
			if err != nil {
				t.Fatal(err)
			}
			sentinel := make([]float32, n)
			for i := range sentinel {
				sentinel[i] = 7
			}
			if err := b.Write(o, 0, sentinel); err != nil {
				t.Fatal(err)
			}
			fp := backend.FusedParams{Problem: p}
			if err := b.Fused(context.Background(), fp, q, kv, kv, o, nil); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, n)
			if err := b.Read(got, o, 0); err != nil {
				t.Fatal(err)
			}
			for i, x := range got {
				if x != 7 {
					t.Fatalf("o[%d] = %v after Fused under ATTN_GPU_TARGET; want the 7 written before (no dispatch)", i, x)
				}
			}
			if len(b.pipes) == 0 {
				t.Error("no pipeline compiled")
			}
		})
	}
	t.Run("tune", func(t *testing.T) {
		t.Setenv("ATTN_GPU_TARGET", "h200")
		_, err := tune(context.Background(), tuneConfig{budget: time.Minute, out: io.Discard, shapes: []string{tuneShape}, file: filepath.Join(t.TempDir(), "tuned.json")})
		if err == nil || !strings.Contains(err.Error(), "ATTN_GPU_TARGET=h200") {
			t.Errorf("attn tune under ATTN_GPU_TARGET: %v; want it refused", err)
		}
	})
	t.Run("cpu plan", func(t *testing.T) {
		t.Setenv("ATTN_GPU_TARGET", "h200")
		t.Setenv("ATTN_GPU_PLAN", "cpu")
		if b, err := New(); err == nil {
			b.Close()
			t.Error("New under ATTN_GPU_TARGET=h200 ATTN_GPU_PLAN=cpu: no error")
		}
	})
}
