package bench_test

import (
	"context"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
)

// -prefix measures each shape twice over a page pool, the prompt shared
// and held by each sequence: the same answers (checked against the
// float64 reference), the pages and bytes each holds and reads, in
// process and as -isolate's spec measures it (with -buffers and BHND
// pages too); a
// prefix longer than the keys before the queries fails the point with
// the sizes.
func TestRunPrefix(t *testing.T) {
	be := openCPU(t)
	cfg := tiny()
	cfg.Ns, cfg.Nqs, cfg.Heads, cfg.KVHeads, cfg.Dims = []int{272}, []int{1, 2}, []int{4}, []int{2}, []int{8}
	cfg.Batches, cfg.Causal, cfg.Prefix = []int{3}, []bool{true}, 256
	cfg.DTypes = []backend.DType{backend.Float32, backend.Float16}
	points, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 2*2*2 {
		t.Fatalf("%d points, want 8", len(points))
	}
	for _, pt := range points {
		if pt.Status != bench.StatusOK || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-5) || pt.Prefix != 256 {
			t.Fatalf("%+v: %s %s, error %v", pt.Shape, pt.Status, pt.Error, pt.MaxErr)
		}
		size := int64(4)
		if pt.DType == "f16" {
			size = 2
		}
		// Pages of 256 keys (the cascade's shortest prefix): the
		// prompt's one and each sequence's own one shared; two a
		// sequence own.
		keys, pages := int64(256+3*16), 1+3
		if !pt.Shared {
			keys, pages = 3*272, 3*2
		}
		qo := int64(3 * pt.Nq * 4 * 8 * 2 * 4)
		if pt.PoolPages != pages || pt.Bytes != qo+keys*2*16*size {
			t.Errorf("%+v: %d pages, %d bytes; want %d and %d", pt.Shape, pt.PoolPages, pt.Bytes, pages, qo+keys*2*16*size)
		}
	}
	spec := bench.PointSpec{Backend: "cpu", Strategy: "fused", Seed: 1, Budget: 1, MinRuns: 1}
	spec.Shape = bench.Shape{B: 2, H: 4, KVHeads: 2, N: 272, Nq: 1, D: 8, Causal: true, Prefix: 256, Shared: true}
	if pt := bench.MeasurePoint(context.Background(), be, spec); pt.Status != bench.StatusOK || pt.PoolPages != 3 {
		t.Errorf("MeasurePoint of a shared prefix: %s %s, %d pages", pt.Status, pt.Error, pt.PoolPages)
	}
	// -buffers: AttendBuffers, its answers checked the same way.
	spec.Buffers = true
	if pt := bench.MeasurePoint(context.Background(), be, spec); pt.Status != bench.StatusOK || !pt.Buffers || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-5) {
		t.Errorf("MeasurePoint of a shared prefix through AttendBuffers: %s %s, buffers %t, error %v", pt.Status, pt.Error, pt.Buffers, pt.MaxErr)
	}
	spec.Buffers = false
	// -prefix-layout bhnd, two queries a sequence (whose rows the two
	// layouts order differently).
	spec.PoolLayout, spec.Nq = "bhnd", 2
	if pt := bench.MeasurePoint(context.Background(), be, spec); pt.Status != bench.StatusOK || pt.PoolLayout != "bhnd" || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-5) {
		t.Errorf("MeasurePoint of a shared prefix in BHND pages: %s %s, layout %q, error %v", pt.Status, pt.Error, pt.PoolLayout, pt.MaxErr)
	}
	spec.PoolLayout, spec.Nq = "", 1
	spec.Prefix = 272
	if pt := bench.MeasurePoint(context.Background(), be, spec); pt.Status != bench.StatusFailed || pt.Error == "" {
		t.Errorf("MeasurePoint of a prefix of every key: %s %q, want failed naming the sizes", pt.Status, pt.Error)
	}
}

// -prefix P,G -groups n measures a tree of prefixes three ways: shared
// as a tree (the prompt's pages once, each group's once), the prompt
// alone shared (each sequence holding its group's keys), nothing shared:
// the same answers against the float64 reference, the pages and bytes
// each holds and reads, in process and from a PointSpec; groups that do
// not divide the batch are refused.
func TestRunPrefixTree(t *testing.T) {
	be := openCPU(t)
	cfg := tiny()
	cfg.Ns, cfg.Nqs, cfg.Heads, cfg.KVHeads, cfg.Dims = []int{528}, []int{1}, []int{4}, []int{2}, []int{8}
	cfg.Batches, cfg.Causal, cfg.Prefix, cfg.GroupPrefix, cfg.Groups = []int{4}, []bool{true}, 256, 256, 2
	points, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 3 {
		t.Fatalf("%d points, want 3", len(points))
	}
	// Pages of 256 keys: the prompt's, each group's, each sequence's own.
	want := map[int][2]int64{2: {1 + 2 + 4, 256 + 2*256 + 4*16}, 1: {1 + 4*2, 256 + 4*(256+16)}, 0: {4 * 3, 4 * 528}}
	for _, pt := range points {
		w := want[pt.Levels]
		qo := int64(4 * 1 * 4 * 8 * 2 * 4)
		if pt.Status != bench.StatusOK || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-5) || pt.GroupPrefix != 256 || pt.Groups != 2 || pt.Shared != (pt.Levels > 0) {
			t.Fatalf("%+v: %s %s, error %v", pt.Shape, pt.Status, pt.Error, pt.MaxErr)
		}
		if int64(pt.PoolPages) != w[0] || pt.Bytes != qo+w[1]*2*16*4 {
			t.Errorf("levels %d: %d pages, %d bytes; want %d and %d", pt.Levels, pt.PoolPages, pt.Bytes, w[0], qo+w[1]*2*16*4)
		}
		spec := bench.PointSpec{Backend: "cpu", Strategy: "fused", Seed: 1, Budget: 1, MinRuns: 1, Shape: pt.Shape}
		if again := bench.MeasurePoint(context.Background(), be, jsonRoundTrip(t, spec)); again.Status != bench.StatusOK || again.PoolPages != pt.PoolPages {
			t.Errorf("levels %d from its spec: %s %s, %d pages", pt.Levels, again.Status, again.Error, again.PoolPages)
		}
	}
	cfg.Groups = 3
	if _, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil); err == nil {
		t.Error("a batch of 4 in 3 groups: no error")
	}
}
