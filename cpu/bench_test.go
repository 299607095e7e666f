package cpu_test

import (
	"fmt"
	"testing"

	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/internal/bench"
)

// The CPU's Go benchmarks, bench's shared set; the conventions (names,
// GFLOP/s, bytes) are in internal/bench/gobench.go.
//
//	go test -run '^$' -bench . -count 6 ./cpu > new.txt
func BenchmarkScores(b *testing.B)    { bench.Scores(b, openCPU(b), benchShapes) }
func BenchmarkSoftmax(b *testing.B)   { bench.Softmax(b, openCPU(b), benchShapes) }
func BenchmarkContext(b *testing.B)   { bench.Context(b, openCPU(b), benchShapes) }
func BenchmarkStaged(b *testing.B)    { bench.Staged(b, openCPU(b), benchShapes) }
func BenchmarkFused(b *testing.B)     { bench.Fused(b, openCPU(b), benchShapes) }
func BenchmarkAttention(b *testing.B) { bench.Attention(b, openCPU(b), benchShapes) }

// benchShapes are sized for a 2-core machine: `-benchtime 1x` runs them
// all in about 20 seconds. The sweep behind `attn bench` goes larger.
var benchShapes = []bench.Shape{
	{B: 1, N: 256, H: 8, KVHeads: 8, D: 64},
	{B: 1, N: 1024, H: 8, KVHeads: 8, D: 64},
	{B: 1, N: 2048, H: 8, KVHeads: 8, D: 64},
	{B: 1, N: 1024, H: 8, KVHeads: 2, D: 64},  // GQA
	{B: 1, N: 1024, H: 8, KVHeads: 8, D: 128}, // wide heads
}

func openCPU(b *testing.B) *cpu.Backend {
	be, err := cpu.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	return be
}

// tileCandidates are the tiles BenchmarkTiles measures: query tile,
// score sub-tile and key tile.
var tileCandidates = [][3]int{
	{256, 256, 256}, {512, 512, 256}, {512, 256, 256}, {1024, 256, 256},
	{512, 512, 512}, {512, 256, 512}, {1024, 256, 512}, {1024, 128, 512},
	{512, 512, 1024}, {512, 256, 1024}, {1024, 256, 1024}, {2048, 256, 512},
	// Multiples of the AVX2 kernel's 6 rows.
	{960, 240, 512}, {768, 192, 512}, {960, 240, 256}, {960, 120, 512}, {1440, 240, 512},
}

// BenchmarkTiles is the measurement behind DefaultTiles: Fused at one
// shape over a range of tile sizes, on whichever BLAS the build has.
//
//	go test -run '^$' -bench Tiles -benchtime 2x ./cpu                 # attn's kernel
//	go test -tags openblas -run '^$' -bench Tiles -benchtime 2x ./cpu  # OpenBLAS
func BenchmarkTiles(b *testing.B) {
	for _, t := range tileCandidates {
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

// BenchmarkRoofline is Fused at the default tiles and the shapes the
// roofline target names (B=1, H=8, D = 64 and 128) at N = 4096; attn
// bench reads the same against the Sgemm rate it measures in the run.
//
//	go test -run '^$' -bench 'Roofline/.*causal=false' -count 6 ./cpu
func BenchmarkRoofline(b *testing.B) {
	bench.Fused(b, openCPU(b), []bench.Shape{
		{B: 1, N: 4096, H: 8, KVHeads: 8, D: 64},
		{B: 1, N: 4096, H: 8, KVHeads: 8, D: 128},
	})
}
