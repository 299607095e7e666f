//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu"
)

// TestScratchPool: an op whose keys split takes its partial results from
// the scratch pool and gives them back once its work is submitted, so
// the same op again creates none; the layers of a step, recorded into
// one submission, never share a pooled buffer; Trim gives the pool back.
// The answers hold throughout, from scratch that starts as NaNs
// (TestMain poisons it).
func TestScratchPool(t *testing.T) {
	b := openGPU(t)
	ctx := context.Background()
	// One decoding query over 1024 keys: either plan splits the keys, so
	// the op writes partial results (and, with no LSE asked for, the
	// rows' LSE) to scratch, and merges them.
	p := backend.Problem{B: 1, H: 4, KVHeads: 2, Nq: 1, Nk: 1024, D: 16, Dv: 16, Causal: true}
	var layers [3]*layer
	for i := range layers {
		layers[i] = newLayer(t, b, p, backend.Float32, uint64(40+i))
	}
	check := func(what string) {
		t.Helper()
		for i, ly := range layers {
			ly.checkO(t, b, fmt.Sprintf("%s: layer %d", what, i), p)
		}
	}
	b.Trim()
	live0, _ := b.Memory()
	for _, ly := range layers {
		if err := b.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
			t.Fatal(err)
		}
	}
	check("waited")
	one := gpu.PoolBytes(b)
	if one == 0 {
		t.Fatal("the pool kept nothing of an op whose keys split")
	}
	if live, _ := b.Memory(); live != live0+one {
		t.Errorf("%d bytes live, want %d and the pool's %d", live, live0, one)
	}

	stepLayers(t, b, layers[:])
	check("step")
	if got := gpu.PoolBytes(b); got != 3*one {
		t.Errorf("after a step of 3 layers the pool keeps %d bytes, want 3 × %d: one submission's layers each need their own", got, one)
	}

	b.Trim()
	if got := gpu.PoolBytes(b); got != 0 {
		t.Errorf("after Trim the pool keeps %d bytes", got)
	}
	if live, _ := b.Memory(); live != live0 {
		t.Errorf("after Trim %d bytes live, %d before", live, live0)
	}
	// The step again, from an empty pool.
	stepLayers(t, b, layers[:])
	check("step after Trim")
}
