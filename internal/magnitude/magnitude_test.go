package magnitude

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// below is Below one value at a time, the golden answer.
func below(src []float32, lim uint32) bool {
	for _, x := range src {
		if math.Float32bits(x)&0x7fffffff >= lim {
			return false
		}
	}
	return true
}

// Below agrees with the one-value-at-a-time test for every length up to
// a few words, the odd value at every position, either sign, at the
// bound, just below and above it, infinities and NaN, and for random
// bits.
func TestBelow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, lim := range []uint32{0x7f800000, 0x477ff000, 0x477fe001, 0x7f7f8000, 1, 0} {
		odd := []uint32{lim - 1, lim, lim + 1, 0x7f800000, 0x7fc00000, 0x7f800001, 0x7fffffff, 0, 1}
		for n := range 11 {
			for at := range n {
				for _, b := range odd {
					for _, sign := range []uint32{0, 1 << 31} {
						src := make([]float32, n)
						for i := range src {
							src[i] = float32(rng.NormFloat64())
						}
						src[at] = math.Float32frombits(b | sign)
						if got, want := Below(src, lim), below(src, lim); got != want {
							t.Fatalf("Below(%v, %#x) with %#x at %d = %v, want %v", src, lim, b|sign, at, got, want)
						}
					}
				}
			}
		}
		for range 1000 {
			src := make([]float32, rng.IntN(40))
			for i := range src {
				src[i] = math.Float32frombits(rng.Uint32() >> uint(rng.IntN(3)))
			}
			if got, want := Below(src, lim), below(src, lim); got != want {
				t.Fatalf("Below(%v, %#x) = %v, want %v", src, lim, got, want)
			}
		}
	}
	if !Below(nil, 0) {
		t.Errorf("Below(nil, 0) = false")
	}
}

// BenchmarkBelow: a prompt's keys, 2000 tokens × 8 heads × 64.
//
//	go test -bench Below ./internal/magnitude
func BenchmarkBelow(b *testing.B) {
	for _, n := range []int{64, 1 << 20} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			src := make([]float32, n)
			for i := range src {
				src[i] = float32(i%1000) - 500
			}
			b.SetBytes(int64(4 * n))
			for b.Loop() {
				if !Below(src, 0x477ff000) {
					b.Fatal("not below")
				}
			}
		})
	}
}
