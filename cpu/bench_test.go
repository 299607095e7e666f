package cpu_test

import (
	"testing"

	"github.com/attn-go/attn/bench"
	"github.com/attn-go/attn/cpu"
)

// The CPU's Go benchmarks, the shared bench.Benchmark:
//
//	go test -run '^$' -bench . -count 6 ./cpu > new.txt
func BenchmarkFused(b *testing.B)  { bench.Benchmark(b, openCPU(b), benchSizes, false) }
func BenchmarkStaged(b *testing.B) { bench.Benchmark(b, openCPU(b), benchSizes, true) }

var benchSizes = []int{256, 1024, 4096}

func openCPU(b *testing.B) *cpu.Backend {
	be, err := cpu.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	return be
}
