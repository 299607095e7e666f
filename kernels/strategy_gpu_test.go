//go:build (cgo || gogpu) && !nogpu

package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// On the GPU, head dims too wide for any tile of keys in the device's
// workgroup memory run staged under Auto and match the CPU; Fused asked
// for by name is refused with ErrUnsupported naming the dims, as the
// GPU's own Fused refuses them. Narrow dims still run fused.
func TestGPUWideHeadDimsRunStaged(t *testing.T) {
	gpu := openGPU(t)
	cpu := openCPU(t)
	fs, ok := gpu.(backend.FusedSupporter)
	if !ok {
		t.Fatalf("the gpu backend does not implement backend.FusedSupporter")
	}
	mem := int(gpu.Info().Limits.MaxComputeWorkgroupStorageSize)
	if mem == 0 {
		t.Fatalf("the gpu backend reports no workgroup memory")
	}
	// fusedloop.wgsl stages K and V rows of ⌈D/4⌉ + ⌈Dv/4⌉ vec4s per key:
	// with D = Dv just past mem/8 bytes each, not one key fits.
	d := 4 * (mem/32 + 1)
	t.Logf("%d bytes of workgroup memory: D = Dv = %d", mem, d)
	rng := rand.New(rand.NewPCG(7, 8))
	narrow := randTensor(rng, kernels.BHND, 1, 2, 5, 64)
	q := randTensor(rng, kernels.BHND, 2, 2, 3, d)
	k := randTensor(rng, kernels.BHND, 2, 1, 5, d)
	v := randTensor(rng, kernels.BHND, 2, 1, 5, d)
	for i := range q.Data { // keep the scores of order 1 at any D
		q.Data[i] /= 16
	}
	p := backend.Problem{B: 2, H: 2, KVHeads: 1, Nq: 3, Nk: 5, D: d}
	if err := fs.FusedSupports(p); !errors.Is(err, backend.ErrUnsupported) {
		t.Fatalf("FusedSupports(D=Dv=%d, %d bytes of workgroup memory) = %v, want ErrUnsupported", d, mem, err)
	}
	if err := fs.FusedSupports(backend.Problem{B: 1, H: 2, Nq: 5, Nk: 5, D: 64}); err != nil {
		t.Fatalf("FusedSupports(D=64) = %v, want nil", err)
	}

	ctx := context.Background()
	res, err := kernels.Attention(ctx, gpu, narrow, narrow, narrow, nil)
	if err != nil || res.Strategy != kernels.Fused {
		t.Fatalf("D=64 under auto: %v, %v; want fused", res.Strategy, err)
	}
	opts := &kernels.Options{Causal: true, LSE: true}
	res, err = kernels.Attention(ctx, gpu, q, k, v, opts)
	if err != nil {
		t.Fatalf("D=Dv=%d under auto: %v", d, err)
	}
	if res.Strategy != kernels.Staged {
		t.Fatalf("D=Dv=%d under auto ran %v, want staged", d, res.Strategy)
	}
	want, err := kernels.Attention(ctx, cpu, q, k, v, opts)
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, fmt.Sprintf("gpu staged vs cpu at D=Dv=%d", d), res, want)

	opts.Strategy = kernels.Fused
	_, err = kernels.Attention(ctx, gpu, q, k, v, opts)
	if dims := fmt.Sprintf("D=%d Dv=%d", d, d); !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), dims) {
		t.Errorf("fused at D=Dv=%d: %v, want ErrUnsupported naming %s", d, err, dims)
	}
	// The GPU's Fused itself refuses the same problem the same way.
	q1, k1, v1, o1 := alloc(t, gpu, p.B*p.H*p.Nq*d), alloc(t, gpu, p.B*p.Nk*d), alloc(t, gpu, p.B*p.Nk*d), alloc(t, gpu, p.B*p.H*p.Nq*d)
	err = gpu.Fused(ctx, backend.FusedParams{Problem: p}, q1, k1, v1, o1, nil)
	if want := fs.FusedSupports(p); !errors.Is(err, backend.ErrUnsupported) || err.Error() != want.Error() {
		t.Errorf("gpu Fused at D=Dv=%d: %v; want FusedSupports' %v", d, err, want)
	}
}

func alloc(t *testing.T, be backend.Backend, n int) backend.Buffer {
	t.Helper()
	b, err := be.Alloc(backend.Float32, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Release)
	return b
}
