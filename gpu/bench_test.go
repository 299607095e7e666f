//go:build cgo && !nogpu

package gpu_test

import (
	"testing"

	"github.com/attn-go/attn/bench"
)

// The GPU's Go benchmarks, the shared bench.Benchmark on the device at
// sizes lavapipe finishes in seconds:
//
//	go test -run '^$' -bench . -count 6 ./gpu > new.txt
func BenchmarkFused(b *testing.B)  { bench.Benchmark(b, openGPU(b), benchSizes, false) }
func BenchmarkStaged(b *testing.B) { bench.Benchmark(b, openGPU(b), benchSizes, true) }

var benchSizes = []int{256, 1024, 2048}
