//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu"
)

// TestBindGroupsKept: a step recorded again binds what it bound before
// and makes no bind group; a decoding query over a cache that grows a
// key a call, in the same buffers, makes none once the pool's scratch
// has come round (the step left two layers' worth in it, which waited
// calls take in turn);
// releasing a buffer drops the groups that bind it, and buffers
// allocated after it get groups of their own. Every answer is checked.
func TestBindGroupsKept(t *testing.T) {
	b := openGPU(t)
	ctx := context.Background()
	p := backend.Problem{B: 1, H: 4, KVHeads: 2, Nq: 1, Nk: 1024, D: 16, Dv: 16, Causal: true}
	layers := []*layer{newLayer(t, b, p, backend.Float32, 60), newLayer(t, b, p, backend.Float32, 61)}
	stepLayers(t, b, layers)
	made, kept := gpu.BindGroups(b)
	if kept == 0 {
		t.Fatal("a step of buffers attn allocated kept no bind group")
	}
	for round := range 3 {
		stepLayers(t, b, layers)
		if now, _ := gpu.BindGroups(b); now != made {
			t.Errorf("round %d: the step made %d bind groups again", round, now-made)
		}
		for i, ly := range layers {
			ly.checkO(t, b, fmt.Sprintf("round %d layer %d", round, i), p)
		}
	}

	// A cache of 1024 keys, 1000 of them filled, growing a key a call:
	// its keys are the first Nk of the BNHD buffers (Nk rows of D of one
	// batch), so the bindings are the same buffers whatever Nk is.
	ly := layers[0]
	for n := 1000; n < 1012; n++ {
		q := bnhd(p)
		q.Nk, q.B, q.KVHeads, q.H = n, 1, 1, 1
		if err := b.Fused(ctx, backend.FusedParams{Problem: q}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
			t.Fatal(err)
		}
		ly.checkO(t, b, fmt.Sprintf("%d keys", n), q)
		if n == 1003 {
			made, _ = gpu.BindGroups(b)
		}
	}
	if now, _ := gpu.BindGroups(b); now != made {
		t.Errorf("a growing cache in the same buffers made %d bind groups after the pool came round", now-made)
	}

	// Released buffers take their groups with them; new ones bind anew.
	_, before := gpu.BindGroups(b)
	for _, ly := range layers {
		for _, x := range []backend.Buffer{ly.q, ly.k, ly.v, ly.o, ly.l} {
			x.Release()
		}
	}
	if _, after := gpu.BindGroups(b); after >= before {
		t.Errorf("%d bind groups kept after their buffers were released, %d before", after, before)
	}
	fresh := []*layer{newLayer(t, b, p, backend.Float32, 62), newLayer(t, b, p, backend.Float32, 63)}
	for round := range 2 {
		stepLayers(t, b, fresh)
		for i, ly := range fresh {
			ly.checkO(t, b, fmt.Sprintf("fresh buffers, round %d, layer %d", round, i), p)
		}
	}

	// An output allocated and released every call: its groups go with
	// it, and the lists of the buffers that stay (the arena, the
	// dummies, Q, K, V) do not grow without bound.
	ly = fresh[0]
	for i := range 600 {
		o, err := b.Alloc(backend.Float32, p.OLen())
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, o, nil); err != nil {
			t.Fatal(err)
		}
		if i == 599 {
			got := make([]float32, p.OLen())
			if err := b.Read(got, o, 0); err != nil {
				t.Fatal(err)
			}
			closeTo(t, "a fresh output", got, naive(p, ly.hq, ly.hk, ly.hv), 1e-5)
		}
		o.Release()
	}
	if refs, bound := gpu.BindGroupRefs(b); refs > bound {
		t.Errorf("after 600 outputs the kept groups' lists hold %d keys, more than %d", refs, bound)
	}
	if _, kept := gpu.BindGroups(b); kept > 16 {
		t.Errorf("%d bind groups kept after 600 outputs each released", kept)
	}
}
