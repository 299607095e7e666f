//go:build (cgo || gogpu) && !nogpu

package bench_test

import (
	"testing"

	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/internal/gputest"
)

// The GPU's Go benchmarks, gobench.go's shared set. They skip without an
// adapter, or fail under ATTN_REQUIRE_GPU=1.
//
//	go test -run '^$' -bench '^BenchmarkGPU' -count 6 ./cmd/attn/internal/bench > new.txt
func BenchmarkGPUScores(b *testing.B)    { bench.Scores(b, gputest.Open(b, gpu.New), gpuShapes) }
func BenchmarkGPUSoftmax(b *testing.B)   { bench.Softmax(b, gputest.Open(b, gpu.New), gpuShapes) }
func BenchmarkGPUContext(b *testing.B)   { bench.Context(b, gputest.Open(b, gpu.New), gpuShapes) }
func BenchmarkGPUStaged(b *testing.B)    { bench.Staged(b, gputest.Open(b, gpu.New), gpuShapes) }
func BenchmarkGPUFused(b *testing.B)     { bench.Fused(b, gputest.Open(b, gpu.New), gpuShapes) }
func BenchmarkGPUAttention(b *testing.B) { bench.Attention(b, gputest.Open(b, gpu.New), gpuShapes) }

// gpuShapes are sized for lavapipe, whose fused kernel runs at a few
// GFLOP/s on the CPU: `-benchtime 1x` finishes in about a minute. A real
// GPU wants `attn bench -backend gpu` and its larger sweep.
var gpuShapes = []bench.Shape{
	{B: 1, N: 256, H: 8, KVHeads: 8, D: 64},
	{B: 1, N: 512, H: 8, KVHeads: 8, D: 64},
	{B: 1, N: 512, H: 8, KVHeads: 2, D: 64},  // GQA
	{B: 1, N: 256, H: 8, KVHeads: 8, D: 128}, // wide heads
	{B: 1, N: 1024, H: 8, KVHeads: 8, D: 64}, // the size fused.wgsl's tuning is measured at
	{B: 1, N: 1024, H: 8, KVHeads: 8, D: 128},
}
