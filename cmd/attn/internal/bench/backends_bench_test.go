package bench_test

import (
	"fmt"
	"testing"

	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/cpu"
)

// The CPU's Go benchmarks, gobench.go's shared set (the GPU's are in
// backends_gpu_bench_test.go); benchstat compares commits:
//
//	go test -run '^$' -bench '^BenchmarkCPU' -count 6 ./cmd/attn/internal/bench > new.txt
func BenchmarkCPUScores(b *testing.B)    { bench.Scores(b, openCPU(b), cpuShapes) }
func BenchmarkCPUSoftmax(b *testing.B)   { bench.Softmax(b, openCPU(b), cpuShapes) }
func BenchmarkCPUContext(b *testing.B)   { bench.Context(b, openCPU(b), cpuShapes) }
func BenchmarkCPUStaged(b *testing.B)    { bench.Staged(b, openCPU(b), cpuShapes) }
func BenchmarkCPUFused(b *testing.B)     { bench.Fused(b, openCPU(b), cpuShapes) }
func BenchmarkCPUAttention(b *testing.B) { bench.Attention(b, openCPU(b), cpuShapes) }

// cpuShapes are sized for a 2-core machine: `-benchtime 1x` runs them
// all in about 20 seconds. The sweep behind `attn bench` goes larger.
var cpuShapes = []bench.Shape{
	{B: 1, N: 256, H: 8, KVHeads: 8, D: 64},
	{B: 1, N: 1024, H: 8, KVHeads: 8, D: 64},
	{B: 1, N: 2048, H: 8, KVHeads: 8, D: 64},
	{B: 1, N: 1024, H: 8, KVHeads: 2, D: 64},  // GQA
	{B: 1, N: 1024, H: 8, KVHeads: 8, D: 128}, // wide heads
}

// cpuTileCandidates are the tiles BenchmarkCPUTiles measures: query
// tile, score sub-tile and key tile.
var cpuTileCandidates = [][3]int{
	{256, 256, 256}, {512, 512, 256}, {512, 256, 256}, {1024, 256, 256},
	{512, 512, 512}, {512, 256, 512}, {1024, 256, 512}, {1024, 128, 512},
	{512, 512, 1024}, {512, 256, 1024}, {1024, 256, 1024}, {2048, 256, 512},
	// Multiples of the AVX2 kernel's 6 rows.
	{960, 240, 512}, {768, 192, 512}, {960, 240, 256}, {960, 120, 512}, {1440, 240, 512},
}

// BenchmarkCPUTiles is the measurement behind cpu.DefaultTiles: Fused at
// one shape over a range of tile sizes (cpu.WithTile, cpu.WithSubTile),
// on whichever BLAS the build has.
//
//	go test -run '^$' -bench CPUTiles -benchtime 2x ./cmd/attn/internal/bench                 # attn's kernel
//	go test -tags openblas -run '^$' -bench CPUTiles -benchtime 2x ./cmd/attn/internal/bench  # OpenBLAS
func BenchmarkCPUTiles(b *testing.B) {
	for _, t := range cpuTileCandidates {
		be, err := cpu.New(cpu.WithTile(t[0], t[2]), cpu.WithSubTile(t[1]))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("tiles=%dx%d/sub=%d", t[0], t[2], t[1]), func(b *testing.B) {
			bench.Fused(b, be, []bench.Shape{
				{B: 1, N: 4096, H: 8, KVHeads: 8, D: 64},
				{B: 1, N: 4096, H: 8, KVHeads: 8, D: 128},
			})
		})
		be.Close()
	}
}

// BenchmarkCPURoofline is Fused at the default tiles and the shapes the
// roofline target names (B=1, H=8, D = 64 and 128) at N = 4096; attn
// bench reads the same against the Sgemm rate it measures in the run.
//
//	go test -run '^$' -bench 'CPURoofline/.*causal=false' -count 6 ./cmd/attn/internal/bench
func BenchmarkCPURoofline(b *testing.B) {
	bench.Fused(b, openCPU(b), []bench.Shape{
		{B: 1, N: 4096, H: 8, KVHeads: 8, D: 64},
		{B: 1, N: 4096, H: 8, KVHeads: 8, D: 128},
	})
}
