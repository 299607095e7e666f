//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/kernels"
)

// This file holds fuseddecode.wgsl to the reference: the hardware plan's
// kernel for steps of at most 16 queries a sequence, a KV head's group of
// query heads a workgroup. It runs under ATTN_GPU_PLAN=hardware on
// whatever adapter this is; on lavapipe every row stays within its loop
// cap (gpu.FusedLoops), so the splits are the small ones the hardware
// plan cuts a decoding step into (128 keys and up), the tiles those
// lavapipe's 32 KiB of workgroup memory allow (gpu.FusedKernel says which).

// decodeRow is one problem of the decoding matrix: its masks, whether the
// GPU computes the LSE, and the dtype mixes it runs with besides float32.
type decodeRow struct {
	p          backend.Problem
	bias, keep *[4]int
	noLSE      bool
	mixes      []backendtest.DTypes
	short      bool // one of the quick rows (hardwareRow)
}

// decodeRows are the decoding kernel's parity rows: queries a head 1 to
// 4 (and 16, a workgroup's most) with G = 1, 2, 4, 8, 3, 5 and 32 query
// heads a KV head (workgroups of up to 16 rows, the heads of a group
// split over two workgroups past 16, the queries over two when G·Nq is
// past 16); head dims 5, 7, 17, 33, 64, 128 and 256 (scalar and vec4
// loads, key groups summed at the end or not, tiles of 8 to 64 keys);
// key counts 0, 1, around a tile and a split, and long enough to split
// several ways; every variant, bias and keep-mask; both layouts; half
// operands.
var decodeRows = []decodeRow{
	// G = 1 … 8, Nq = 1 … 4.
	{p: prob(1, 1, 1, 1, 300, 64, 64), mixes: []backendtest.DTypes{allF16}, short: true},
	{p: prob(2, 4, 2, 2, 257, 64, 64)},
	{p: causal(prob(1, 8, 2, 3, 129, 128, 128)), mixes: []backendtest.DTypes{allBF16}, short: true},
	{p: bnhd(prob(1, 8, 1, 4, 200, 128, 128))},
	{p: causal(prob(1, 4, 2, 4, 90, 32, 32)), noLSE: true},
	{p: prob(1, 8, 1, 1, 1000, 64, 64), mixes: []backendtest.DTypes{mixA}},
	// Odd groups and wide MQA: G = 3 (12 rows), G = 5 (queries in tiles
	// of 2 and 2), G = 32 (two workgroups of 16 heads a KV head).
	{p: bnhd(prob(1, 6, 2, 4, 150, 24, 24))},
	{p: causal(prob(1, 5, 1, 4, 100, 16, 16))},
	{p: prob(1, 32, 1, 1, 300, 16, 16), short: true},
	// 16 queries of one head, a workgroup's most.
	{p: causal(prob(1, 2, 2, 16, 140, 32, 32))},
	// Head dims: odd (scalar loads, no vec4 binding), Dv ≠ D, wide.
	{p: prob(1, 2, 1, 2, 130, 5, 7), mixes: []backendtest.DTypes{mixB}, short: true},
	{p: causal(bnhd(prob(2, 4, 2, 1, 97, 33, 17))), mixes: []backendtest.DTypes{allF16}},
	{p: prob(1, 8, 1, 2, 70, 256, 256)},
	{p: causal(prob(1, 4, 1, 1, 150, 80, 200))},
	// Key counts: none, one, a tile of 64 ± 1 and a split of 128 ± 1.
	{p: prob(1, 4, 2, 1, 0, 64, 64)},
	{p: prob(1, 4, 2, 2, 1, 64, 64)},
	{p: prob(1, 4, 1, 1, 63, 64, 64)},
	{p: prob(1, 4, 1, 1, 64, 64, 64)},
	{p: prob(1, 4, 1, 1, 65, 64, 64)},
	{p: causal(prob(1, 4, 1, 2, 127, 64, 64))},
	{p: causal(prob(1, 4, 1, 2, 129, 64, 64))},
	// The variants: causal offsets (rows that see no key), windows,
	// softcap, ALiBi, sinks (joining the first split only), key lengths
	// (a batch of none), and all at once with a bias and a keep-mask.
	{p: offset(prob(1, 4, 2, 3, 200, 32, 32), -1)},
	{p: sinks(offset(prob(1, 4, 1, 4, 300, 32, 32), -2), 2, -1)},
	{p: window(causal(prob(1, 4, 2, 2, 600, 64, 64)), 70, 0)},
	{p: window(prob(1, 2, 2, 3, 400, 16, 16), 30, 40)},
	{p: softcap(scaled(prob(1, 4, 1, 2, 300, 64, 64), 10), 5)},
	{p: alibi(causal(bnhd(prob(2, 8, 2, 1, 500, 32, 32))))},
	{p: sinks(prob(1, 4, 2, 1, 2000, 64, 64), 5, -3, 0, 1)},
	{p: kvlens(causal(prob(3, 4, 2, 2, 300, 16, 16)), 0, 300, 77)},
	{p: kvlens(sinks(alibi(softcap(window(causal(bnhd(prob(2, 8, 2, 3, 260, 24, 40))), 50, 0), 5)), 0, 1, -1, 3), 260, 90),
		bias: shape(2, 8, 3, 260), keep: shape(2, 1, 1, 260), mixes: []backendtest.DTypes{mixD}, short: true},
	// Masks, broadcast: a −Inf bias per key, a keep-mask per head and row.
	{p: prob(2, 4, 2, 2, 300, 64, 64), bias: shape(1, 1, 1, 300), keep: shape(2, 4, 2, 1)},
	{p: causal(prob(1, 8, 2, 1, 250, 128, 128)), bias: shape(1, 8, 1, 250), noLSE: true},
}

// decodeSeqRows are packed and paged decoding steps (the decoding
// kernel's sequences): a server's batch of caches of different lengths,
// none and one key among them, pages of 1 and 16 keys, shared pages,
// speculative queries, packed queries of 0 to 4 rows over packed keys.
var decodeSeqRows = []decodeRow{
	{p: backendtest.PagedProblem(causal(prob(0, 8, 2, 1, 0, 64, 64)), 16, 3, []int{700, 1, 0, 300}, true), mixes: []backendtest.DTypes{allF16}, short: true},
	{p: backendtest.PagedProblem(bnhd(prob(0, 4, 1, 3, 0, 33, 17)), 1, 5, []int{90, 40}, true), keep: shape(2, 1, 1, 90)},
	{p: backendtest.PackedProblem(causal(prob(0, 8, 2, 0, 0, 128, 128)), []int{1, 3, 0, 2}, []int{500, 3, 7, 0}), mixes: []backendtest.DTypes{allBF16}, short: true},
	{p: sinks(alibi(softcap(window(backendtest.PagedProblem(causal(backendtest.PackedProblem(prob(0, 4, 2, 0, 0, 32, 32), []int{4, 1, 2}, nil)), 16, 2, []int{400, 33, 160}, false), 64, 0), 5)), 1, -2),
		bias: shape(3, 4, 4, 400)},
}

// TestDecodeParity runs decodeRows and decodeSeqRows through Fused under
// the hardware plan, checking that the decoding kernel is the one that
// runs, against the float64 reference (backendtest.RunFused, which also
// checks that the inputs are unchanged and nothing is written past an
// output) and the CPU backend, float32 and each row's half mixes.
func TestDecodeParity(t *testing.T) {
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	g := openGPU(t)
	c := openCPU(t)
	ctx := context.Background()
	for n, row := range append(append([]decodeRow(nil), decodeRows...), decodeSeqRows...) {
		name := seqName(caseName(row.p, row.bias, row.keep))
		k := gpu.FusedKernel(g, row.p)
		if !isDecoder(k) {
			t.Errorf("%s: runs %s under the hardware plan, want a decoding kernel", name, k)
			continue
		}
		if loops := gpu.FusedLoops(g, row.p); loops > gpu.LoopBudget {
			t.Fatalf("%s: %d loop iterations an invocation, past lavapipe's cap", name, loops)
		}
		t.Run(name, func(t *testing.T) {
			hardwareRow(t, row.short)
			t.Logf("%s, %d splits", k, gpu.FusedSplits(g, row.p))
			cs := backendtest.RandomCase(newRand(uint64(800+n)), row.p, row.bias, row.keep)
			if err := backendtest.RunFused(ctx, g, cs, !row.noLSE); err != nil {
				t.Error(err)
			}
			parity(t, g, c, cs, kernels.Fused, !row.noLSE)
			for _, dt := range row.mixes {
				if err := backendtest.RunFused(ctx, g, cs.WithDTypes(dt), true); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// isDecoder says whether kernel k (gpu.FusedKernel) is one of the
// hardware plan's decoding kernels: lanedecode.wgsl, or fuseddecode.wgsl
// without subgroups (TestLaneDecodeChoice says which runs where).
func isDecoder(k string) bool {
	return strings.HasPrefix(k, "lanedecode") || strings.HasPrefix(k, "fuseddecode")
}

// TestDecodeChoice checks which kernel Fused runs a step with under each
// plan: under the hardware plan the decoding kernel for up to 16 queries
// a sequence (a packed problem's longest), fusedloop.wgsl past that and
// for value heads wider than a workgroup's 128 column vec4s (run here, so
// that the fallback is held to the reference too); under the CPU plan
// the decoding kernel only for up to 4 queries over 128 keys or more
// with head dims that are multiples of 4 (cpuDecodes), fused.wgsl or
// fusedloop.wgsl otherwise. And that a long decoding step is split on
// hardware.
func TestDecodeChoice(t *testing.T) {
	for _, plan := range []string{"cpu", "hardware"} {
		t.Setenv("ATTN_GPU_PLAN", plan)
		g := openGPU(t)
		for _, tc := range []struct {
			p       backend.Problem
			hw, cpu bool // the decoding kernel under each plan
		}{
			{prob(1, 8, 2, 1, 100, 64, 64), true, false},
			{prob(1, 8, 2, 1, 128, 64, 64), true, true},
			{prob(1, 8, 2, 4, 3000, 64, 64), true, true},
			{prob(1, 8, 2, 5, 3000, 64, 64), true, false},
			{prob(1, 8, 2, 1, 3000, 62, 64), true, false},
			{prob(1, 8, 2, 16, 100, 64, 64), true, false},
			{prob(1, 8, 2, 17, 100, 64, 64), false, false},
			// The hardware plan's decoding kernel takes value heads of up
			// to 4·DecodeWG = 1024 (an invocation a column vec4).
			{prob(1, 2, 1, 1, 100, 16, 1028), false, false},
			{prob(1, 2, 1, 1, 100, 16, 1024), true, false},
			{prob(1, 2, 1, 1, 100, 16, 516), true, false},
			{prob(1, 2, 1, 1, 300, 16, 512), true, true},
			{backendtest.PackedProblem(prob(0, 4, 1, 0, 0, 16, 16), []int{1, 16, 0}, nil), true, false},
			{backendtest.PackedProblem(prob(0, 4, 1, 0, 0, 16, 16), []int{1, 17, 0}, nil), false, false},
		} {
			k := gpu.FusedKernel(g, tc.p)
			want, got := tc.hw, isDecoder(k)
			if plan == "cpu" {
				want, got = tc.cpu, strings.HasPrefix(k, "fused lanes")
			}
			if got != want {
				t.Errorf("%s plan: %s runs %s; want the decoding kernel: %t", plan, seqName(caseName(tc.p, nil, nil)), k, want)
			}
		}
		if plan == "cpu" {
			continue
		}
		p := prob(1, 8, 2, 1, 3000, 64, 64)
		if s := gpu.FusedSplits(g, p); s < 16 {
			t.Errorf("hardware plan: %s: %d splits, want the keys spread over 16 or more", caseName(p, nil, nil), s)
		}
		// The fallback for a value head past 1024 runs, and is right.
		wide := prob(1, 2, 1, 1, 100, 16, 1028)
		cs := backendtest.RandomCase(newRand(900), wide, nil, nil)
		if err := backendtest.RunFused(context.Background(), g, cs, true); err != nil {
			t.Error(err)
		}
	}
}

// TestDecodeParityCPUPlan runs decoding steps that the CPU plan sends
// through its decoding kernel, fused.wgsl's key lanes (cpuDecodes: up to
// 4 queries a sequence over 128 keys or more, head dims multiples of 4),
// under that plan, against the float64 reference, each in float32 and a
// half mix: the step (32 query heads over 8 KV heads, D = 128)
// over 5000 keys, 312 a lane; a cache with sinks, whose 2 workgroups
// split their keys (the sink joining the first split only); a paged
// batch and a packed one. Only a few: each specialisation of the kernel
// costs lavapipe seconds to compile.
func TestDecodeParityCPUPlan(t *testing.T) {
	t.Setenv("ATTN_GPU_PLAN", "cpu")
	g := openGPU(t)
	ctx := context.Background()
	rows := []decodeRow{
		{p: causal(prob(1, 32, 8, 1, 5000, 128, 128)), mixes: []backendtest.DTypes{allF16}},
		{p: sinks(prob(1, 4, 2, 1, 2000, 64, 64), 5, -3, 0, 1), mixes: []backendtest.DTypes{mixA}},
		decodeSeqRows[0], // paged, pages of 16 keys, float16
		decodeSeqRows[2], // packed, bfloat16
	}
	for n, row := range rows {
		name := seqName(caseName(row.p, row.bias, row.keep))
		if k := gpu.FusedKernel(g, row.p); !strings.HasPrefix(k, "fused lanes") {
			t.Fatalf("%s runs %s under the CPU plan, want fused.wgsl's key lanes", name, k)
		}
		if loops := gpu.FusedLoops(g, row.p); loops > gpu.LoopBudget {
			t.Fatalf("%s: %d loop iterations an invocation, past lavapipe's cap", name, loops)
		}
		t.Run(name, func(t *testing.T) {
			t.Logf("%d splits", gpu.FusedSplits(g, row.p))
			cs := backendtest.RandomCase(newRand(uint64(1800+n)), row.p, row.bias, row.keep)
			if err := backendtest.RunFused(ctx, g, cs, !row.noLSE); err != nil {
				t.Error(err)
			}
			for _, dt := range row.mixes {
				if err := backendtest.RunFused(ctx, g, cs.WithDTypes(dt), true); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
