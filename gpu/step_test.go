//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/gpu"
)

// layer is one attention call of a step: its problem, its buffers and
// the inputs written to them.
type layer struct {
	p             backend.Problem
	q, k, v, o, l backend.Buffer
	hq, hk, hv    []float32
}

// newLayer allocates and fills a layer's buffers; O is stored as ot.
func newLayer(t testing.TB, b *gpu.Backend, p backend.Problem, ot backend.DType, seed uint64) *layer {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	ly := &layer{p: p, hq: randSlice(r, p.QLen()), hk: randSlice(r, p.KLen()), hv: randSlice(r, p.VLen())}
	alloc := func(dt backend.DType, n int) backend.Buffer {
		x, err := b.Alloc(dt, n)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	ly.q, ly.k, ly.v = alloc(backend.Float32, p.QLen()), alloc(backend.Float32, p.KLen()), alloc(backend.Float32, p.VLen())
	ly.o, ly.l = alloc(ot, p.OLen()), alloc(backend.Float32, p.LSELen())
	for _, w := range []struct {
		x backend.Buffer
		v []float32
	}{{ly.q, ly.hq}, {ly.k, ly.hk}, {ly.v, ly.hv}} {
		if err := b.Write(w.x, 0, w.v); err != nil {
			t.Fatal(err)
		}
	}
	return ly
}

// read returns O and the LSE of ly.
func (ly *layer) read(t testing.TB, b *gpu.Backend) (o, lse []float32) {
	t.Helper()
	o, lse = make([]float32, ly.p.OLen()), make([]float32, ly.p.LSELen())
	if err := b.Read(o, ly.o, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Read(lse, ly.l, 0); err != nil {
		t.Fatal(err)
	}
	return o, lse
}

// checkO reads ly's O and checks its first p.OLen() values against the
// float64 reference of p over the first rows of ly's Q, K and V (p is
// ly.p, or a cache's shorter prefix of it).
func (ly *layer) checkO(t testing.TB, b *gpu.Backend, what string, p backend.Problem) {
	t.Helper()
	o, _ := ly.read(t, b)
	closeTo(t, what, o[:p.OLen()], naive(p, ly.hq[:p.QLen()], ly.hk[:p.KLen()], ly.hv[:p.VLen()]), 1e-5)
}

// stepLayers records each layer's Fused (its O, no LSE) into one step
// of b and waits for it.
func stepLayers(t testing.TB, b *gpu.Backend, layers []*layer) {
	t.Helper()
	st := b.Record()
	for _, ly := range layers {
		if err := st.Fused(context.Background(), backend.FusedParams{Problem: ly.p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Wait(); err != nil {
		t.Fatal(err)
	}
}

// stepProblems are a step's layers: a decoding query over a cache long
// enough that Fused splits it and merges the parts (scratch of its own
// per op), a small prefill, GQA, a float16 O (a float32 scratch packed
// at the end).
func stepProblems() []backend.Problem {
	return []backend.Problem{
		{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 3000, D: 32, Dv: 32},
		{B: 2, H: 2, KVHeads: 1, Nq: 5, Nk: 5, D: 8, Dv: 8, Causal: true},
		smallProblem(37),
		{B: 1, H: 2, KVHeads: 2, Nq: 1, Nk: 700, D: 64, Dv: 16},
	}
}

// TestStep: ops recorded in one step and waited for once give bitwise
// the results of the same ops waited for one by one.
func TestStep(t *testing.T) {
	b := openGPU(t)
	ctx := context.Background()
	var layers []*layer
	for i, p := range stepProblems() {
		ot := backend.Float32
		if i == 3 {
			ot = backend.Float16
		}
		layers = append(layers, newLayer(t, b, p, ot, uint64(i)))
	}
	if gpu.FusedSplits(b, layers[0].p) < 2 {
		t.Logf("layer 0 runs in one split here; the step has no merge scratch")
	}
	var wantO, wantL [][]float32
	for _, ly := range layers {
		if err := b.Fused(ctx, backend.FusedParams{Problem: ly.p}, ly.q, ly.k, ly.v, ly.o, ly.l); err != nil {
			t.Fatal(err)
		}
		o, l := ly.read(t, b)
		wantO, wantL = append(wantO, o), append(wantL, l)
		if err := b.Write(ly.o, 0, make([]float32, ly.p.OLen())); err != nil {
			t.Fatal(err)
		}
	}
	b.Trim()
	live, _ := b.Memory()
	st := b.Record()
	for round := range 2 { // a step is reusable after Wait
		for _, ly := range layers {
			if err := st.Fused(ctx, backend.FusedParams{Problem: ly.p}, ly.q, ly.k, ly.v, ly.o, ly.l); err != nil {
				t.Fatal(err)
			}
		}
		if round == 0 && gpu.PendingDispatches(b) == 0 {
			t.Errorf("nothing recorded before Wait")
		}
		if err := st.Wait(); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if n := gpu.PendingDispatches(b); n != 0 {
			t.Errorf("%d dispatches left after Wait", n)
		}
		for i, ly := range layers {
			o, l := ly.read(t, b)
			closeTo(t, fmt.Sprintf("round %d layer %d O", round, i), o, wantO[i], 0)
			closeTo(t, fmt.Sprintf("round %d layer %d LSE", round, i), l, wantL[i], 0)
		}
	}
	b.Trim() // the scratch kept for reuse
	if now, _ := b.Memory(); now != live {
		t.Errorf("%d bytes live after the step, %d before: its scratch was not freed", now, live)
	}
}

// TestStepOrder: work reaches the queue in call order. A Write between
// two recorded ops lands between them, a Read sees what was recorded
// before it, and a buffer released while recorded work uses it lives
// until that work is submitted.
func TestStepOrder(t *testing.T) {
	b := openGPU(t)
	ctx := context.Background()
	p := smallProblem(20)
	ly := newLayer(t, b, p, backend.Float32, 3)
	o2, err := b.Alloc(backend.Float32, p.OLen())
	if err != nil {
		t.Fatal(err)
	}
	q2 := randSlice(rand.New(rand.NewPCG(9, 9)), p.QLen())
	st := b.Record()
	if err := st.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ly.q, 0, q2); err != nil {
		t.Fatal(err)
	}
	if err := st.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, o2, nil); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, p.OLen())
	if err := b.Read(got, ly.o, 0); err != nil { // before Wait: Read submits and waits
		t.Fatal(err)
	}
	closeTo(t, "O of the op recorded before the Write", got, naive(p, ly.hq, ly.hk, ly.hv), 1e-5)
	// Release K and V while a recorded op still uses them.
	o3, err := b.Alloc(backend.Float32, p.OLen())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, o3, nil); err != nil {
		t.Fatal(err)
	}
	ly.k.Release()
	ly.v.Release()
	if err := st.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	want2 := naive(p, q2, ly.hk, ly.hv)
	for _, o := range []backend.Buffer{o2, o3} {
		if err := b.Read(got, o, 0); err != nil {
			t.Fatal(err)
		}
		closeTo(t, "O of an op recorded after the Write", got, want2, 1e-5)
	}
}

// TestStepBudget: recorded work past one submission's budget is
// submitted without waiting for the step's end, and still right.
func TestStepBudget(t *testing.T) {
	b := openGPU(t)
	ctx := context.Background()
	p := backend.Problem{B: 1, H: 8, KVHeads: 8, Nq: 64, Nk: 1024, D: 64, Dv: 64}
	ly := newLayer(t, b, p, backend.Float32, 5)
	st := b.Record()
	flushed, last := false, 0
	const ops = 12
	for range ops {
		if err := st.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
			t.Fatal(err)
		}
		n := gpu.PendingDispatches(b)
		flushed = flushed || n <= last
		last = n
	}
	if err := st.Wait(); err != nil {
		t.Fatal(err)
	}
	if gpu.Budget(b) < 1e10 && !flushed {
		t.Errorf("%d ops of %.3g operations each all waited for the step's end; the budget is %.3g", ops, 4*float64(p.H*p.Nq*p.Nk*p.D), gpu.Budget(b))
	}
	got := make([]float32, p.OLen())
	if err := b.Read(got, ly.o, 0); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "O", got, naive(p, ly.hq, ly.hk, ly.hv), 1e-5)
}

// TestStepFlush: under step.flush = n a step submits what it recorded
// once it holds n dispatches, without a wait, and its results are those
// of a step that submits at the end.
func TestStepFlush(t *testing.T) {
	b := openGPU(t)
	ctx := context.Background()
	p := backend.Problem{B: 1, H: 4, KVHeads: 2, Nq: 1, Nk: 40, D: 8, Dv: 12, Causal: true}
	layers := make([]*layer, 6)
	for l := range layers {
		layers[l] = newLayer(t, b, p, backend.Float32, uint64(20+l))
	}
	const flush = 2
	gpu.SetStepFlush(b, flush)
	t.Cleanup(func() { gpu.SetStepFlush(b, gpu.MaxPerSubmit) })
	st := b.Record()
	for i, ly := range layers {
		if err := st.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
			t.Fatal(err)
		}
		if n := gpu.PendingDispatches(b); n >= flush {
			t.Errorf("after op %d: %d dispatches wait, want fewer than step.flush = %d", i, n, flush)
		}
	}
	if err := st.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, ly := range layers {
		ly.checkO(t, b, fmt.Sprintf("layer %d O", i), p)
	}
}

// TestStepErrors: an op's error comes back from the op, before it
// records anything, and again from Wait naming the op; the step's other
// ops run. A closed backend refuses the step.
func TestStepErrors(t *testing.T) {
	b := openGPU(t)
	ctx := context.Background()
	p := smallProblem(9)
	ly := newLayer(t, b, p, backend.Float32, 4)
	st := b.Record()
	if err := st.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
		t.Fatal(err)
	}
	bad := p
	bad.Nk++
	err := st.Fused(ctx, backend.FusedParams{Problem: bad}, ly.q, ly.k, ly.v, ly.o, nil)
	if !errors.Is(err, backend.ErrShape) {
		t.Fatalf("a recorded op with K too short: %v; want ErrShape", err)
	}
	err = st.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.q, nil)
	if !errors.Is(err, backend.ErrShape) {
		t.Fatalf("a recorded op writing its Q: %v; want ErrShape", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := st.Fused(cancelled, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a recorded op with a cancelled ctx: %v", err)
	}
	err = st.Wait()
	for _, want := range []string{"op 2 (fused)", "op 3 (fused)", "op 4 (fused)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Wait = %v; want it to name %s", err, want)
		}
	}
	if !errors.Is(err, backend.ErrShape) || !errors.Is(err, context.Canceled) {
		t.Errorf("Wait = %v; want it to wrap ErrShape and context.Canceled", err)
	}
	ly.checkO(t, b, "the good op's O", p)
	if err := st.Wait(); err != nil {
		t.Errorf("a second Wait: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"Fused":  func() error { return st.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil) },
		"Submit": st.Submit,
		"Wait":   st.Wait,
	} {
		if err := f(); !errors.Is(err, backend.ErrReleased) {
			t.Errorf("%s on a closed backend: %v; want ErrReleased", name, err)
		}
	}
}

// TestStepConcurrent: goroutines record steps of their own on one
// backend at once.
func TestStepConcurrent(t *testing.T) {
	b := openGPU(t)
	ctx := context.Background()
	p := smallProblem(33)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	layers := make([]*layer, 4)
	for g := range layers {
		layers[g] = newLayer(t, b, p, backend.Float32, uint64(10+g))
	}
	for g := range layers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ly := layers[g]
			st := b.Record()
			for range 3 {
				if err := st.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, ly.l); err != nil {
					errs <- err
					return
				}
			}
			if g%2 == 0 {
				errs <- st.Wait()
			} else {
				errs <- st.Submit()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	for g, ly := range layers {
		ly.checkO(t, b, fmt.Sprintf("goroutine %d's O", g), p)
	}
}

// BenchmarkLayers times a decoding step of L layers, L Fused calls over
// L caches of 256 keys (8 heads of 64, causal), waited for one by one
// and recorded as one step with one wait, where the step of 32 layers
// should take within 12 times the step of one on lavapipe.
//
//	go test -run '^$' -bench Layers ./gpu
func BenchmarkLayers(b *testing.B) {
	g := openGPU(b)
	ctx := context.Background()
	p := backend.Problem{B: 1, H: 8, KVHeads: 8, Nq: 1, Nk: 256, D: 64, Dv: 64, Causal: true}
	for _, n := range []int{1, 32} {
		layers := make([]*layer, n)
		for l := range layers {
			layers[l] = newLayer(b, g, p, backend.Float32, uint64(l))
		}
		for _, mode := range []string{"waited", "step"} {
			b.Run(fmt.Sprintf("layers=%d/%s", n, mode), func(b *testing.B) {
				for b.Loop() {
					if mode == "waited" {
						for _, ly := range layers {
							if err := g.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
								b.Fatal(err)
							}
						}
						continue
					}
					stepLayers(b, g, layers)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/layer")
			})
		}
	}
}

// BenchmarkRecord times the host's side of a step: recording L Fused
// calls of a decoding step into it (validation, the plan, scratch, bind
// groups), without submitting or waiting, which run outside the timer.
// ns/op is a layer's recording. A step that records a layer in less
// time than the device runs one keeps the device busy once submitted;
// on a GPU the recording of 32 layers is most of the time a 32-layer
// step takes on the device (docs/gpu.md, "On an NVIDIA H100"). Two
// shapes: 8 heads of 64 over 256 keys, and 32 query heads over 8 KV
// heads of 128 over 4096 keys (that table's decoding step).
//
//	go test -run '^$' -bench Record ./gpu
func BenchmarkRecord(b *testing.B) {
	g := openGPU(b)
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		layers int
		p      backend.Problem
	}{
		{"H=8/D=64/Nk=256", 32, backend.Problem{B: 1, H: 8, KVHeads: 8, Nq: 1, Nk: 256, D: 64, Dv: 64, Causal: true}},
		{"H=32/KVH=8/D=128/Nk=4096", 8, backend.Problem{B: 1, H: 32, KVHeads: 8, Nq: 1, Nk: 4096, D: 128, Dv: 128, Causal: true}},
	} {
		layers := make([]*layer, c.layers)
		for l := range layers {
			layers[l] = newLayer(b, g, c.p, backend.Float32, uint64(l))
		}
		b.Run(c.name, func(b *testing.B) {
			st := g.Record()
			for _, ly := range layers { // compiles the kernels
				if err := st.Fused(ctx, backend.FusedParams{Problem: c.p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
					b.Fatal(err)
				}
			}
			if err := st.Wait(); err != nil {
				b.Fatal(err)
			}
			n := 0
			for b.Loop() {
				ly := layers[n%len(layers)]
				if err := st.Fused(ctx, backend.FusedParams{Problem: c.p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
					b.Fatal(err)
				}
				if n++; n%len(layers) == 0 {
					b.StopTimer()
					if err := st.Wait(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
			b.StopTimer()
			if err := st.Wait(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// TestStepSubmitErrors: Submit returns the errors the step's ops
// returned since the last Submit or Wait, keeping the first MaxStepErrs
// and counting the rest, and starts the step afresh, as Wait does: the
// next Wait reports none of them again.
func TestStepSubmitErrors(t *testing.T) {
	b := openGPU(t)
	ctx := context.Background()
	p := smallProblem(9)
	ly := newLayer(t, b, p, backend.Float32, 4)
	bad := p
	bad.Nk++ // K too short
	for _, tc := range []struct {
		bad      int    // failing ops recorded after one good op
		end      string // "submit" or "wait"
		wantMore string // the count of errors past MaxStepErrs
	}{
		{0, "submit", ""},
		{1, "submit", ""},
		{gpu.MaxStepErrs, "wait", ""},
		{gpu.MaxStepErrs + 5, "submit", "and 5 more errors"},
		{3 * gpu.MaxStepErrs, "wait", fmt.Sprintf("and %d more errors", 2*gpu.MaxStepErrs)},
	} {
		t.Run(fmt.Sprintf("%d bad, %s", tc.bad, tc.end), func(t *testing.T) {
			st := b.Record()
			if err := st.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
				t.Fatal(err)
			}
			for range tc.bad {
				if err := st.Fused(ctx, backend.FusedParams{Problem: bad}, ly.q, ly.k, ly.v, ly.o, nil); !errors.Is(err, backend.ErrShape) {
					t.Fatalf("an op with K too short: %v; want ErrShape", err)
				}
			}
			if ops, errs, _ := gpu.StepBookkeeping(st); ops != 1+tc.bad || errs != min(tc.bad, gpu.MaxStepErrs) {
				t.Errorf("the step holds %d ops and %d errors; want %d and %d", ops, errs, 1+tc.bad, min(tc.bad, gpu.MaxStepErrs))
			}
			end := st.Submit
			if tc.end == "wait" {
				end = st.Wait
			}
			err := end()
			if tc.bad == 0 {
				if err != nil {
					t.Fatalf("%s: %v", tc.end, err)
				}
			} else {
				if !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), "op 2 (fused)") {
					t.Errorf("%s = %v; want it to wrap ErrShape and name op 2 (fused)", tc.end, err)
				}
				if n := strings.Count(err.Error(), "(fused): "); n != min(tc.bad, gpu.MaxStepErrs) {
					t.Errorf("%s names %d ops; want the first %d", tc.end, n, min(tc.bad, gpu.MaxStepErrs))
				}
				if tc.wantMore != "" && !strings.Contains(err.Error(), tc.wantMore) {
					t.Errorf("%s = %v; want it to say %q", tc.end, err, tc.wantMore)
				}
			}
			if ops, errs, _ := gpu.StepBookkeeping(st); ops != 0 || errs != 0 {
				t.Errorf("after %s the step holds %d ops and %d errors; want none", tc.end, ops, errs)
			}
			if err := st.Wait(); err != nil {
				t.Errorf("a Wait after %s: %v; want the errors reported once", tc.end, err)
			}
			ly.checkO(t, b, "the good op's O", p)
		})
	}
}

// TestStepDecodeFlat: a 10,000-token decoding loop that records each
// token's layers into one reused Step and only submits (a wait every
// 256 tokens keeps lavapipe's queue short) holds its memory flat. The
// step's bookkeeping is empty after every Submit, and the Go heap in use
// after a GC at token 10,000 exceeds the one at token 1,000 by less than
// 64 KiB: a step that kept a 16-byte op name a layer, as it did, grew
// 2 × 9,000 × 16 B ≈ 288 KB between them (its list's doubling aside),
// while the heap's own noise (spans of 8 KiB, the runtime's and the
// test's bookkeeping) stays within a few spans.
func TestStepDecodeFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 tokens: a few seconds on lavapipe")
	}
	b := openGPU(t)
	ctx := context.Background()
	p := backend.Problem{B: 1, H: 2, KVHeads: 1, Nq: 1, Nk: 16, D: 8, Dv: 8}
	layers := []*layer{newLayer(t, b, p, backend.Float32, 1), newLayer(t, b, p, backend.Float32, 2)}
	const tokens, at, waitEvery = 10000, 1000, 256
	heapInUse := func() uint64 {
		// Four times: the default binding gives each object it makes a
		// finalizer (releaseOnGC), and each a *Device of its own that
		// has one too (addRef): one collection only queues an object's
		// finalizer, the next frees it and queues its device's, and so
		// on down the chain.
		for range 4 {
			runtime.GC()
			time.Sleep(5 * time.Millisecond) // the finalizers run
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	st := b.Record()
	var early uint64
	for tok := 1; tok <= tokens; tok++ {
		for _, ly := range layers {
			if err := st.Fused(ctx, backend.FusedParams{Problem: p}, ly.q, ly.k, ly.v, ly.o, nil); err != nil {
				t.Fatalf("token %d: %v", tok, err)
			}
		}
		end := st.Submit
		if tok%waitEvery == 0 || tok == at || tok == tokens {
			end = st.Wait
		}
		if err := end(); err != nil {
			t.Fatalf("token %d: %v", tok, err)
		}
		if ops, errs, kinds := gpu.StepBookkeeping(st); ops != 0 || errs != 0 || kinds > 1 {
			t.Fatalf("token %d: after Submit the step holds %d ops, %d errors, %d kinds; want none but the kept kind", tok, ops, errs, kinds)
		}
		if tok == at {
			early = heapInUse()
		}
	}
	late := heapInUse()
	t.Logf("heap in use after four collections: %d B at token %d, %d B at token %d", early, at, late, tokens)
	if late > early+64<<10 {
		t.Errorf("heap in use grew from %d B at token %d to %d B at token %d: more than 64 KiB", early, at, late, tokens)
	}
	for i, ly := range layers {
		ly.checkO(t, b, fmt.Sprintf("layer %d O", i), p)
	}
}

// TestStepIndices records decoding steps with index lists in a Step and
// gets what Fused gives them, also for a list the lowering runs through
// scratch (prefill in BHND, an LSE of several rows), which it releases
// as soon as its ops are recorded (the backend destroys it once they are
// submitted); a bad list is refused and noted once.
func TestStepIndices(t *testing.T) {
	b := openGPU(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(65, 0))
	decode := backendtest.WithIndices(r, backend.Problem{B: 2, H: 8, KVHeads: 2, Nq: 1, Nk: 300, D: 64, Layout: backend.BNHD}, 2, 40)
	prefill := backendtest.WithIndices(r, backend.Problem{B: 1, H: 4, KVHeads: 2, Nq: 9, Nk: 50, D: 32}, 1, 8)
	ly := newLayer(t, b, decode, backend.Float32, 1)
	if err := b.Fused(ctx, backend.FusedParams{Problem: decode}, ly.q, ly.k, ly.v, ly.o, ly.l); err != nil {
		t.Fatal(err)
	}
	wantO, wantL := ly.read(t, b)
	if err := b.Write(ly.o, 0, make([]float32, decode.OLen())); err != nil {
		t.Fatal(err)
	}
	st := b.Record()
	if err := st.Fused(ctx, backend.FusedParams{Problem: decode}, ly.q, ly.k, ly.v, ly.o, ly.l); err != nil {
		t.Fatal(err)
	}
	pf := newLayer(t, b, prefill, backend.Float32, 2)
	if err := b.Fused(ctx, backend.FusedParams{Problem: prefill}, pf.q, pf.k, pf.v, pf.o, pf.l); err != nil {
		t.Fatal(err)
	}
	wantPO, wantPL := pf.read(t, b)
	if err := b.Write(pf.o, 0, make([]float32, prefill.OLen())); err != nil {
		t.Fatal(err)
	}
	if err := st.Fused(ctx, backend.FusedParams{Problem: prefill}, pf.q, pf.k, pf.v, pf.o, pf.l); err != nil {
		t.Errorf("a step's prefill through scratch: %v", err)
	}
	bad := decode
	bad.Indices = &backend.Indices{Heads: 2, PerRow: 40, Idx: append([]int32(nil), decode.Indices.Idx...)}
	bad.Indices.Idx[3] = 300
	if err := st.Fused(ctx, backend.FusedParams{Problem: bad}, ly.q, ly.k, ly.v, ly.o, ly.l); !errors.Is(err, backend.ErrShape) {
		t.Errorf("a step's bad list: %v, want ErrShape", err)
	}
	err := st.Wait()
	if n := strings.Count(fmt.Sprint(err), "op "); n != 1 {
		t.Errorf("Wait: %v: want the refusal noted once", err)
	}
	gotO, gotL := ly.read(t, b)
	if i := firstDiffF(gotO, wantO); i >= 0 {
		t.Errorf("O[%d] = %v recorded, %v from Fused", i, gotO[i], wantO[i])
	}
	if i := firstDiffF(gotL, wantL); i >= 0 {
		t.Errorf("LSE[%d] = %v recorded, %v from Fused", i, gotL[i], wantL[i])
	}
	gotPO, gotPL := pf.read(t, b)
	if i := firstDiffF(gotPO, wantPO); i >= 0 {
		t.Errorf("prefill O[%d] = %v recorded, %v from Fused", i, gotPO[i], wantPO[i])
	}
	if i := firstDiffF(gotPL, wantPL); i >= 0 {
		t.Errorf("prefill LSE[%d] = %v recorded, %v from Fused", i, gotPL[i], wantPL[i])
	}
}

// firstDiffF is the first index where a and b differ (NaN-free), or −1.
func firstDiffF(a, b []float32) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
