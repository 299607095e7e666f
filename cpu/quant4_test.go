package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
)

// TestWidenQ4 checks widenQ4 (the vector loop where the CPU has it, and
// the Go loop) against backend.Q4ToQ8 over every byte value and block
// counts 0 … 5 (even and odd: the vector loop's pairs and its last
// block), and that nothing past the blocks is written.
func TestWidenQ4(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 0))
	for blocks := range 6 {
		codes := make([]uint8, 16*blocks)
		for i := range codes {
			codes[i] = uint8(i*37+r.IntN(256)) ^ uint8(i)
		}
		if blocks == 5 {
			for i := range 80 {
				codes[i] = uint8(i * 255 / 79)
			}
		}
		want := make([]int8, 32*blocks)
		backend.Q4ToQ8(want, codes)
		vec := func(dst []int8, codes []uint8) { widenQ4(dst, codes, 64) }
		for name, f := range map[string]func([]int8, []uint8){"widenQ4": vec, "Go": widenQ4Go} {
			got := make([]int8, 32*blocks+8)
			for i := range got {
				got[i] = 99
			}
			f(got[:32*blocks], codes)
			for i, w := range want {
				if got[i] != w {
					t.Fatalf("%s, %d blocks: value %d = %d, want %d", name, blocks, i, got[i], w)
				}
			}
			for i := 32 * blocks; i < len(got); i++ {
				if got[i] != 99 {
					t.Fatalf("%s, %d blocks: wrote past the end at %d", name, blocks, i)
				}
			}
		}
	}
}
