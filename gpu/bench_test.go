//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"testing"

	"github.com/attn-go/attn/internal/bench"
)

// The GPU's Go benchmarks, bench's shared set; the conventions (names,
// GFLOP/s, bytes) are in internal/bench/gobench.go. openGPU skips them without an
// adapter, or fails them under ATTN_REQUIRE_GPU=1.
//
//	go test -run '^$' -bench . -count 6 ./gpu > new.txt
func BenchmarkScores(b *testing.B)    { bench.Scores(b, openGPU(b), benchShapes) }
func BenchmarkSoftmax(b *testing.B)   { bench.Softmax(b, openGPU(b), benchShapes) }
func BenchmarkContext(b *testing.B)   { bench.Context(b, openGPU(b), benchShapes) }
func BenchmarkStaged(b *testing.B)    { bench.Staged(b, openGPU(b), benchShapes) }
func BenchmarkFused(b *testing.B)     { bench.Fused(b, openGPU(b), benchShapes) }
func BenchmarkAttention(b *testing.B) { bench.Attention(b, openGPU(b), benchShapes) }

// benchShapes are sized for lavapipe, whose fused kernel runs at a few
// GFLOP/s on the CPU: `-benchtime 1x` finishes in about a minute. A real
// GPU wants `attn bench -backend gpu` and its larger sweep.
var benchShapes = []bench.Shape{
	{B: 1, N: 256, H: 8, KVHeads: 8, D: 64},
	{B: 1, N: 512, H: 8, KVHeads: 8, D: 64},
	{B: 1, N: 512, H: 8, KVHeads: 2, D: 64},  // GQA
	{B: 1, N: 256, H: 8, KVHeads: 8, D: 128}, // wide heads
	{B: 1, N: 1024, H: 8, KVHeads: 8, D: 64}, // the size fused.wgsl's tuning is measured at
	{B: 1, N: 1024, H: 8, KVHeads: 8, D: 128},
}
