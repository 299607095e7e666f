//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/kernels"
)

// This file holds the parity rows of packed sequences and paged caches
// (backend.Packed, backend.Paged), under both plans, the suite's own
// cases of them under the hardware plan, half operands, and caches cut
// into windows of a binding.

// seqName is a case's name without its block table, which a page of a
// key or two makes long.
func seqName(s string) string {
	if i := strings.Index(s, "_table["); i >= 0 {
		if j := strings.Index(s[i:], "]"); j >= 0 {
			return s[:i] + s[i+j+1:]
		}
	}
	return s
}

// seqRows are the packed and paged problems the GPU is held to the CPU
// on. Under the CPU plan fused.wgsl takes the head dims up to 128 in
// splits of at most 4096 keys, side by side when the partial results fit
// (internal/plan/fusedplan.go), and fusedloop.wgsl the wider ones.
var seqRows = []parityRow{
	// Packed queries and keys, GQA, causal (bottom-right per sequence):
	// a decoding query, a sequence of no queries, a long one past a
	// workgroup's rows, one whose queries see no key.
	{p: backendtest.PackedProblem(causal(prob(0, 8, 2, 0, 0, 64, 64)), []int{1, 0, 300, 7}, []int{300, 5, 300, 0}), short: true},
	// Packed queries over dense BNHD keys with key lengths and sinks:
	// speculative decoding over 5000 and 4200 keys, past a split, the
	// sink (e⁷ against about 5000 keys) joining the first split only.
	{p: sinks(kvlens(backendtest.PackedProblem(bnhd(prob(2, 4, 1, 0, 5000, 32, 32)), []int{3, 1}, nil), 5000, 4200), 7, -1)},
	// Pages of one key, MQA, a shared page, a sequence of no keys.
	{p: backendtest.PagedProblem(causal(prob(0, 4, 1, 3, 0, 32, 32)), 1, 4, []int{37, 0, 12}, true), short: true},
	// Pages of 5000 keys, larger than a split of 4096: speculative
	// decoding (2 queries), BHND pool.
	{p: backendtest.PagedProblem(causal(prob(0, 4, 2, 2, 0, 64, 64)), 5000, 1, []int{9000, 4500}, false)},
	// Decoding over long caches that split: 20000 and 13000 keys in
	// pages of 64, BNHD pool, a shared first page.
	{p: backendtest.PagedProblem(bnhd(prob(0, 4, 2, 1, 0, 64, 64)), 64, 3, []int{20000, 13000}, true)},
	// One decoding head: too few workgroups, so its 3000 keys are split
	// across them however short (splitTarget).
	{p: backendtest.PagedProblem(prob(0, 1, 1, 1, 0, 64, 64), 16, 0, []int{3000}, false), short: true},
	// Wide heads (fusedloop.wgsl on lavapipe): packed queries over a
	// paged cache with a causal window, softcap, ALiBi and a bias.
	{p: alibi(softcap(window(backendtest.PagedProblem(causal(backendtest.PackedProblem(prob(0, 2, 1, 0, 0, 256, 200), []int{2, 5}, nil)), 16, 2, []int{700, 300}, false), 64, 0), 5)),
		bias: shape(1, 2, 5, 700)},
	// Odd head dims (no vec4 loads), Dv ≠ D, a keep-mask, no LSE.
	{p: backendtest.PackedProblem(prob(0, 3, 3, 0, 0, 5, 7), []int{65, 64, 1}, []int{33, 200, 1}), keep: shape(3, 1, 1, 200), noLSE: true},
	// A paged BNHD pool, GQA, a bias and a keep-mask, a causal offset.
	{p: offset(backendtest.PagedProblem(bnhd(prob(0, 8, 4, 70, 0, 16, 16)), 32, 2, []int{100, 64, 260}, true), 150),
		bias: shape(3, 1, 70, 260), keep: shape(1, 8, 1, 260)},
}

// TestParitySeqs runs seqRows through Fused on the GPU and the CPU under
// both plans (the hardware plan's rows within lavapipe's loop cap,
// gpu.FusedLoops) and compares O and the LSE.
func TestParitySeqs(t *testing.T) {
	c := openCPU(t)
	for _, plan := range runPlans("cpu", "hardware") {
		t.Run(plan, func(t *testing.T) {
			t.Setenv("ATTN_GPU_PLAN", plan)
			g := openGPU(t)
			ran := 0
			for n, row := range seqRows {
				if loops := gpu.FusedLoops(g, row.p); loops > gpu.LoopBudget || loops == 0 {
					t.Logf("%s: %d loop iterations an invocation, past lavapipe's cap: not run", seqName(caseName(row.p, row.bias, row.keep)), loops)
					continue
				}
				ran++
				t.Run(seqName(caseName(row.p, row.bias, row.keep)), func(t *testing.T) {
					if testing.Short() && !row.short {
						t.Skip("-short runs only the rows marked short")
					}
					cs := backendtest.RandomCase(newRand(uint64(300+n)), row.p, row.bias, row.keep)
					parity(t, g, c, cs, kernels.Fused, !row.noLSE)
				})
			}
			if ran < len(seqRows)-2 {
				t.Errorf("only %d of %d rows within the loop cap", ran, len(seqRows))
			}
		})
	}
}

// TestSeqsSplit checks that the rows meant to split their keys do: the
// decoding rows over long caches run several splits side by side under
// the hardware plan, and one decoding head is spread over workgroups
// under both. Under the CPU plan the decoding rows over long caches (1,
// 3 and 4) run fused.wgsl's key lanes, which split a step only when it
// has fewer workgroups than the host's threads want and whose loop cap
// is 16 keys an iteration, so whether they split depends on the host;
// TestDecodeParityCPUPlan's sink row splits there on any host of up to
// 4 threads.
func TestSeqsSplit(t *testing.T) {
	for _, plan := range []string{"cpu", "hardware"} {
		t.Setenv("ATTN_GPU_PLAN", plan)
		g := openGPU(t)
		rows := []int{1, 4, 5}
		if plan == "cpu" {
			// Its key lanes split only a step of too few workgroups:
			// one workgroup reads a long cache as fast as several.
			rows = []int{5}
		}
		for _, n := range rows {
			p := seqRows[n].p
			if s := gpu.FusedSplits(g, p); s < 2 {
				t.Errorf("%s plan: %s: %d splits, want several", plan, seqName(caseName(p, nil, nil)), s)
			}
		}
	}
}

// TestSeqCasesHardwarePlan runs the suite's packed and paged cases
// (backendtest.SeqCases) under the hardware plan, with and without the
// LSE; the conformance suite runs them under the adapter's own, and
// TestConformanceHardwarePlan (gpu/conformance) under this plan.
func TestSeqCasesHardwarePlan(t *testing.T) {
	if !hardwareFull() {
		t.Skip("runs under ATTN_GPU_PLAN=hardware (CI's hardware-plan step) or ATTN_LONG=1; in the README's test command gpu/conformance's TestConformanceHardwarePlan runs these cases under the hardware plan")
	}
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	g := openGPU(t)
	for _, c := range backendtest.SeqCases() {
		t.Run(seqName(c.String()), func(t *testing.T) {
			if loops := gpu.FusedLoops(g, c.Problem); loops > gpu.LoopBudget {
				t.Fatalf("%d loop iterations an invocation under the hardware plan, past lavapipe's cap", loops)
			}
			for _, lse := range []bool{false, true} {
				if err := backendtest.RunFused(context.Background(), g, c, lse); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestSeqsHalf runs packed and paged problems with half operands against
// the reference (backendtest.RunFused: the half-rounded inputs in
// float64, O within its dtype's half ulp), under both plans: float16
// throughout over a paged cache that splits, bfloat16 K and V with
// float32 queries and a float16 O, packed, with odd head dims and GQA.
func TestSeqsHalf(t *testing.T) {
	f16 := backendtest.Same(backend.Float16)
	mixed := backendtest.DTypes{Q: backend.Float32, K: backend.BFloat16, V: backend.BFloat16, O: backend.Float16, Bias: backend.Float32}
	cases := []struct {
		p  backend.Problem
		dt backendtest.DTypes
	}{
		{backendtest.PagedProblem(causal(bnhd(prob(0, 4, 2, 2, 0, 64, 64))), 32, 2, []int{5000, 70}, true), f16},
		{backendtest.PackedProblem(causal(prob(0, 6, 2, 0, 0, 33, 17)), []int{1, 70, 3}, []int{90, 70, 0}), mixed},
		{backendtest.PagedProblem(prob(0, 2, 1, 1, 0, 256, 256), 16, 0, []int{600}, false), f16},
	}
	for _, plan := range runPlans("cpu", "hardware") {
		t.Run(plan, func(t *testing.T) {
			t.Setenv("ATTN_GPU_PLAN", plan)
			g := openGPU(t)
			ran := 0
			defer func() {
				if ran < len(cases)-1 {
					t.Errorf("only %d of %d cases within the loop cap", ran, len(cases))
				}
			}()
			for n, c := range cases {
				if loops := gpu.FusedLoops(g, c.p); loops > gpu.LoopBudget {
					t.Logf("%s: %d loop iterations an invocation, past lavapipe's cap: not run", seqName(caseName(c.p, nil, nil)), loops)
					continue
				}
				ran++
				cs := backendtest.RandomCase(newRand(uint64(400+n)), c.p, nil, nil).WithDTypes(c.dt)
				t.Run(seqName(cs.String()), func(t *testing.T) {
					if err := backendtest.RunFused(context.Background(), g, cs, true); err != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}

// TestSeqsWindows runs packed and paged problems on a backend that binds
// at most 64 KiB a storage binding, so that what a cache larger than the
// device's binding needs happens at a small size: a paged pool of 1.2 MiB
// whose sequences' steps each find their scattered pages in one window
// (a page a step, mostly), packed keys of 1.4 MiB bound a sequence and a
// span of keys at a time, halves among them. Under this adapter's own
// plan and the hardware plan's too, whose merges fold many steps with
// several invocations a row (merge.wgsl's lanes).
func TestSeqsWindows(t *testing.T) {
	const bind = 64 << 10
	c := openCPU(t)
	for _, plan := range runPlans("auto", "hardware") {
		t.Run(plan, func(t *testing.T) {
			t.Setenv("ATTN_GPU_PLAN", plan)
			g := openGPU(t)
			gpu.ShrinkBinding(g, bind)
			for n, row := range []struct {
				p  backend.Problem
				dt backendtest.DTypes
			}{
				{p: backendtest.PagedProblem(bnhd(prob(0, 4, 2, 1, 0, 32, 32)), 16, 240, []int{1000, 300}, true)},
				{p: backendtest.PagedProblem(causal(prob(0, 2, 2, 3, 0, 32, 32)), 16, 200, []int{1000, 700}, false), dt: backendtest.Same(backend.Float16)},
				{p: backendtest.PackedProblem(causal(prob(0, 4, 2, 0, 0, 32, 32)), []int{2, 1, 40}, []int{1400, 2500, 1500})},
				// Dense, a decoding query and 40 rows: K and V bound a
				// span of keys at a time.
				{p: prob(2, 4, 2, 1, 1000, 32, 32)},
				{p: causal(prob(1, 4, 2, 40, 2500, 32, 32))},
			} {
				p := row.p.Resolved()
				kBytes := p.KLen() * 4
				if row.dt.K == backend.Float16 {
					kBytes /= 2
				}
				if kBytes <= 2*bind {
					t.Fatalf("%s: K is %d bytes, not much larger than the %d-byte binding", seqName(caseName(p, nil, nil)), kBytes, bind)
				}
				cs := backendtest.RandomCase(newRand(uint64(500+n)), row.p, nil, nil)
				t.Run(fmt.Sprintf("%s_%d_bytes", seqName(cs.String()), kBytes), func(t *testing.T) {
					if row.dt.Half() {
						if err := backendtest.RunFused(context.Background(), g, cs.WithDTypes(row.dt), true); err != nil {
							t.Error(err)
						}
						return
					}
					parity(t, g, c, cs, kernels.Fused, true)
				})
			}
		})
	}
}

// TestSeqsPageTooLarge asks for a paged problem whose pages are each
// larger than a binding (2 KiB against 1 KiB): ErrTooLarge naming the
// page size, not a wrong answer.
func TestSeqsPageTooLarge(t *testing.T) {
	g := openGPU(t)
	gpu.ShrinkBinding(g, 1<<10)
	p := backendtest.PagedProblem(prob(0, 2, 1, 1, 0, 32, 32), 16, 40, []int{40, 20}, false)
	cs := backendtest.RandomCase(newRand(700), p, nil, nil)
	_, err := run(context.Background(), g, cs, kernels.Fused, true)
	if !errors.Is(err, backend.ErrTooLarge) || !strings.Contains(err.Error(), "page of 16 keys") {
		t.Errorf("pages of 2 KiB, bindings of 1 KiB: %v, want ErrTooLarge naming the page", err)
	}
}

// TestLargePagedPool decodes over a paged pool of 137 MiB of K and of V,
// pages scattered across it, on a device whose storage bindings are
// made smaller than that (a third of it, or the device's own limit where
// that is smaller: lavapipe's 128 MiB), so that each sequence's steps
// bind the pages they read in windows of the large buffer on every
// device: TestSeqsWindows does so at 64 KiB, this at a real cache's
// size, with windows that start past 128 MiB.
func TestLargePagedPool(t *testing.T) {
	skipUnlessLong(t)
	g := openGPU(t)
	c := openCPU(t)
	p := backendtest.PagedProblem(prob(0, 2, 1, 1, 0, 128, 128), 256, 740, []int{60000, 30000}, true)
	kBytes := uint64(p.KLen()) * 4
	bind := min(g.Info().Limits.MaxStorageBufferBindingSize, kBytes/3)
	gpu.ShrinkBinding(g, bind)
	if kBytes <= 2*bind {
		t.Fatalf("the pool's K is %d MiB, not much larger than the %d MiB binding", kBytes>>20, bind>>20)
	}
	cs := backendtest.RandomCase(newRand(600), p, nil, nil)
	parity(t, g, c, cs, kernels.Fused, true)
}

// TestParityLargeVars: a paged pool whose block table passes the 16 KiB
// a call's vars data travels inline with its Params (exec.go's arena)
// goes in a scratch buffer of its own, alone and in a step beside calls
// whose vars go inline, and agrees with the CPU.
func TestParityLargeVars(t *testing.T) {
	g, c := openGPU(t), openCPU(t)
	big := backendtest.PagedProblem(causal(prob(1, 2, 1, 1, 1, 4, 4)), 1, 7, []int{4500, 300}, false)
	if words := len(big.Paged.Table); 4*words <= 16<<10 {
		t.Fatalf("a block table of %d words is inline; the test wants it past 16 KiB", words)
	}
	cs := backendtest.RandomCase(newRand(41), big, nil, nil)
	t.Run(caseName(big, nil, nil), func(t *testing.T) { parity(t, g, c, cs, kernels.Fused, true) })

	// In a step, between two calls whose vars go inline.
	small := causal(prob(1, 2, 1, 1, 33, 4, 4))
	ctx := context.Background()
	type call struct {
		p          backend.Problem
		q, k, v, o backend.Buffer
		w          []float32
	}
	var calls []call
	for i, p := range []backend.Problem{small, big, small} {
		cs := backendtest.RandomCase(newRand(uint64(50+i)), p, nil, nil)
		want := make([]float32, p.OLen())
		for i, x := range backendtest.Reference(cs).O {
			want[i] = float32(x)
		}
		calls = append(calls, call{p: p, q: f32Buf(t, g, cs.Q), k: f32Buf(t, g, cs.K), v: f32Buf(t, g, cs.V), o: f32Buf(t, g, make([]float32, p.OLen())), w: want})
	}
	st := g.Record()
	for _, cl := range calls {
		if err := st.Fused(ctx, backend.FusedParams{Problem: cl.p}, cl.q, cl.k, cl.v, cl.o, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, cl := range calls {
		got := make([]float32, cl.p.OLen())
		if err := g.Read(got, cl.o, 0); err != nil {
			t.Fatal(err)
		}
		closeTo(t, fmt.Sprintf("call %d", i), got, cl.w, 1e-5)
	}
}
