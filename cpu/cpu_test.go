package cpu

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

func open(t testing.TB) backend.Backend {
	t.Helper()
	be, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

func upload(be backend.Backend, x []float32) (backend.Buffer, error) {
	buf, err := be.Alloc(backend.Float32, len(x))
	if err != nil {
		return nil, err
	}
	return buf, be.Write(buf, 0, x)
}

func TestConformance(t *testing.T) { backendtest.Run(t, open) }

// The whole suite again with every item's keys split over eight
// threads and tiles of 16, run as sub-tiles of 5 rows (minSplit
// lowered): the merge by maxima, and sub-tiles sharing a packed key
// tile, under every variant, mask and dtype. Under ATTN_LONG=1 (CI's
// step of imported buffers and peak memory): the whole suite a second
// time on both cores is more than the README's test command can spend.
func TestConformanceSplit(t *testing.T) {
	if testing.Short() || os.Getenv("ATTN_LONG") != "1" {
		t.Skip("the whole suite a second time: set ATTN_LONG=1 (CI runs it)")
	}
	defer func(n int) { minSplit = n }(minSplit)
	minSplit = 1
	backendtest.Run(t, func(t testing.TB) backend.Backend {
		return newBackend(t, WithThreads(8), WithTile(16, 16), WithSubTile(5))
	})
}

func newBackend(t testing.TB, opts ...Option) *Backend {
	t.Helper()
	be, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// shapeCase is a problem with optional bias and keep-mask shapes, where
// -1 in a mask shape stands for the problem's full size in that dim.
type shapeCase struct {
	p          backend.Problem
	bias, keep *[4]int
}

func fullShape(p backend.Problem, s *[4]int) *[4]int {
	if s == nil {
		return nil
	}
	full := [4]int{p.B, p.H, p.Nq, p.Nk}
	var out [4]int
	for d, v := range s {
		if v < 0 {
			v = full[d]
		}
		out[d] = v
	}
	return &out
}

// sweep is the set of problems every strategy and tiling is checked on:
// edges of the tile sizes, GQA, both layouts, Nq ≠ Nk both ways, causal,
// and bias and keep masks broadcast in every dimension.
func sweep() []shapeCase {
	var cs []shapeCase
	add := func(p backend.Problem, bias, keep *[4]int) {
		if p.KVHeads == 0 {
			p.KVHeads = p.H
		}
		if p.Dv == 0 {
			p.Dv = p.D
		}
		if p.Scale == 0 {
			p.Scale = 0.3
		}
		cs = append(cs, shapeCase{p, fullShape(p, bias), fullShape(p, keep)})
	}
	full := &[4]int{-1, -1, -1, -1}
	for _, layout := range []backend.Layout{backend.BHND, backend.BNHD} {
		for _, causal := range []bool{false, true} {
			for _, n := range [][2]int{{1, 1}, {1, 7}, {7, 1}, {5, 5}, {63, 65}, {65, 64}, {130, 129}, {3, 200}} {
				add(backend.Problem{B: 2, H: 4, KVHeads: 2, Nq: n[0], Nk: n[1], D: 3, Dv: 5, Layout: layout, Causal: causal}, nil, nil)
				add(backend.Problem{B: 1, H: 3, KVHeads: 1, Nq: n[0], Nk: n[1], D: 8, Dv: 1, Layout: layout, Causal: causal}, full, full)
			}
			add(backend.Problem{B: 2, H: 2, Nq: 9, Nk: 11, D: 40, Dv: 80, Layout: layout, Causal: causal},
				&[4]int{1, -1, 1, -1}, &[4]int{-1, 1, -1, 1})
			add(backend.Problem{B: 2, H: 2, Nq: 9, Nk: 11, D: 4, Layout: layout, Causal: causal},
				&[4]int{1, 1, -1, 1}, &[4]int{1, 1, 1, -1})
			add(backend.Problem{B: 3, H: 2, Nq: 9, Nk: 11, D: 4, Layout: layout, Causal: causal},
				&[4]int{-1, 1, 1, 1}, &[4]int{1, 1, 1, 1})
			for _, z := range []backend.Problem{{B: 0, H: 2, Nq: 4, Nk: 4, D: 3}, {B: 1, H: 2, Nq: 0, Nk: 4, D: 3}, {B: 1, H: 2, Nq: 4, Nk: 0, D: 3}} {
				z.Layout, z.Causal = layout, causal
				add(z, full, full)
			}
		}
	}
	return cs
}

func (c shapeCase) String() string {
	p := c.p
	s := fmt.Sprintf("B%dH%dKV%d_%dx%d_D%dDv%d_%v", p.B, p.H, p.KVHeads, p.Nq, p.Nk, p.D, p.Dv, p.Layout)
	if p.Causal {
		s += "_causal"
	}
	if c.bias != nil {
		s += fmt.Sprintf("_bias%v", *c.bias)
	}
	if c.keep != nil {
		s += fmt.Sprintf("_keep%v", *c.keep)
	}
	return s
}

func TestSweep(t *testing.T) {
	be := open(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sc := range sweep() {
		c := backendtest.RandomCase(rng, sc.p, sc.bias, sc.keep)
		if err := backendtest.RunFused(context.Background(), be, c, true); err != nil {
			t.Errorf("fused %v: %v", sc, err)
		}
		if err := backendtest.RunStaged(context.Background(), be, c, true); err != nil {
			t.Errorf("staged %v: %v", sc, err)
		}
	}
}

// TestTinyTiles runs the fused loop with tiles far smaller than the
// problems, so that every query and key tile edge, the causal tile skip
// and the rescaling of the accumulator across many key tiles are hit.
func TestTinyTiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tile := range [][2]int{{1, 1}, {3, 5}, {5, 3}, {2, 7}, {64, 1}, {1, 64}, {4, 4}} {
		be := newBackend(t, WithTile(tile[0], tile[1]), WithThreads(3))
		for _, sc := range sweep() {
			c := backendtest.RandomCase(rng, sc.p, sc.bias, sc.keep)
			if err := backendtest.RunFused(context.Background(), be, c, true); err != nil {
				t.Errorf("tile %v %v: %v", tile, sc, err)
			}
		}
	}
}

// The suite's packed and paged cases under tiles that cut pages, groups
// and sequences anywhere, and thread counts that split an item's keys in
// up to eight ranges (minSplit lowered so that small problems split too:
// ranges that see no key, ranges of one tile), or none.
func TestSeqsTiles(t *testing.T) {
	defer func(n int) { minSplit = n }(minSplit)
	minSplit = 1
	for _, tile := range [][2]int{{1, 1}, {3, 5}, {5, 3}, {2, 7}, {64, 1}, {8, 64}} {
		for _, threads := range []int{1, 3, 8} {
			be := newBackend(t, WithTile(tile[0], tile[1]), WithThreads(threads))
			for _, c := range backendtest.SeqCases() {
				if err := backendtest.RunFused(context.Background(), be, c, true); err != nil {
					t.Errorf("tile %v, %d threads, %v: %v", tile, threads, c, err)
				}
			}
		}
	}
}

func TestOptions(t *testing.T) {
	if _, err := New(WithTile(0, 4)); !errors.Is(err, backend.ErrShape) {
		t.Errorf("WithTile(0, 4): %v, want ErrShape", err)
	}
	if _, err := New(WithThreads(-1)); !errors.Is(err, backend.ErrShape) {
		t.Errorf("WithThreads(-1): %v, want ErrShape", err)
	}
	be := newBackend(t, WithThreads(3), WithTile(8, 16))
	if got := be.Info().Threads; got != 3 {
		t.Errorf("Threads = %d, want 3", got)
	}
	if q, k := be.Tiles(); q != 8 || k != 16 {
		t.Errorf("Tiles = %d, %d, want 8, 16", q, k)
	}
	info := be.Info()
	if info.Kind != backend.KindCPU || info.Adapter.Name == "" || info.Adapter.Driver == "" {
		t.Errorf("Info = %+v", info)
	}
	b, err := backend.Open("cpu")
	if err != nil {
		t.Fatalf("backend.Open(cpu): %v", err)
	}
	if b.Name() != "cpu" {
		t.Errorf("Name = %q", b.Name())
	}
	b.Close()
}

func TestBuffers(t *testing.T) {
	be := open(t)
	other := open(t)
	if _, err := be.Alloc(backend.Float32, -1); !errors.Is(err, backend.ErrShape) {
		t.Errorf("Alloc(-1): %v", err)
	}
	if _, err := be.Alloc(backend.Float32, 1<<50); !errors.Is(err, backend.ErrTooLarge) {
		t.Errorf("Alloc(1<<50): %v", err)
	}
	buf, err := be.Alloc(backend.Float32, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		off, n int
		ok     bool
	}{{0, 4, true}, {1, 3, true}, {4, 0, true}, {-1, 1, false}, {2, 3, false}, {5, 0, false}} {
		err := be.Write(buf, tc.off, make([]float32, tc.n))
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, backend.ErrShape)) {
			t.Errorf("Write(off %d, %d): %v", tc.off, tc.n, err)
		}
		err = be.Read(make([]float32, tc.n), buf, tc.off)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, backend.ErrShape)) {
			t.Errorf("Read(off %d, %d): %v", tc.off, tc.n, err)
		}
	}
	if err := other.Write(buf, 0, []float32{1}); !errors.Is(err, backend.ErrForeignBuffer) {
		t.Errorf("foreign Write: %v", err)
	}
	buf.Release()
	buf.Release()
	if err := be.Read(make([]float32, 1), buf, 0); !errors.Is(err, backend.ErrReleased) {
		t.Errorf("Read after Release: %v", err)
	}
	buf2, _ := be.Alloc(backend.Float32, 1)
	be.Close()
	if err := be.Write(buf2, 0, []float32{1}); !errors.Is(err, backend.ErrReleased) {
		t.Errorf("Write after Close: %v", err)
	}
	if _, err := be.Alloc(backend.Float32, 1); !errors.Is(err, backend.ErrReleased) {
		t.Errorf("Alloc after Close: %v", err)
	}
}

// TestAliasing checks that an output sharing its buffer with an input is
// refused before anything is written.
func TestAliasing(t *testing.T) {
	be := open(t)
	p := backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 4, Nk: 4, D: 4, Dv: 4, Scale: 1}
	x, _ := upload(be, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	y, _ := upload(be, make([]float32, 16))
	if err := be.Fused(context.Background(), backend.FusedParams{Problem: p}, x, y, y, x, nil); !errors.Is(err, backend.ErrShape) {
		t.Errorf("Fused with O = Q: %v", err)
	}
	if err := be.Scores(context.Background(), backend.ScoresParams{Problem: p}, x, y, y); !errors.Is(err, backend.ErrShape) {
		t.Errorf("Scores with S = K: %v", err)
	}
	got := make([]float32, 16)
	be.Read(got, x, 0)
	if got[15] != 16 {
		t.Errorf("input modified: %v", got)
	}
}

func TestCancel(t *testing.T) {
	be := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := backendtest.RandomCase(rand.New(rand.NewPCG(5, 6)), backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 8, Nk: 8, D: 4, Dv: 4, Scale: 1}, nil, nil)
	if err := backendtest.RunFused(ctx, be, c, false); !errors.Is(err, context.Canceled) {
		t.Errorf("Fused with a cancelled context: %v", err)
	}
	if err := backendtest.RunStaged(ctx, be, c, false); !errors.Is(err, context.Canceled) {
		t.Errorf("Staged with a cancelled context: %v", err)
	}
}

// TestConcurrent runs many ops at once on one backend (meaningful under
// -race).
func TestConcurrent(t *testing.T) {
	be := newBackend(t, WithTile(4, 8))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			p := backend.Problem{B: 2, H: 2, KVHeads: 1, Nq: 17, Nk: 23, D: 5, Dv: 3, Scale: 0.5, Causal: g%2 == 0}
			c := backendtest.RandomCase(rng, p, &[4]int{1, 2, 17, 23}, nil)
			if g%3 == 0 {
				errs <- backendtest.RunStaged(context.Background(), be, c, true)
			} else {
				errs <- backendtest.RunFused(context.Background(), be, c, true)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestAllocBeyondMemory: a request the machine cannot hold is ErrTooLarge
// naming the sizes, not an OOM kill.
func TestAllocBeyondMemory(t *testing.T) {
	if _, ok := availableMemory(); !ok {
		t.Skip("available memory cannot be read on this system")
	}
	be, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	const n = 1 << 43 // 32 TiB of float32, far over MaxBufferLen
	_, err = be.Alloc(backend.Float32, n)
	if !errors.Is(err, backend.ErrTooLarge) || !strings.Contains(err.Error(), "GiB of memory is available") {
		t.Fatalf("Alloc(%d): %v", n, err)
	}
}
