//go:build amd64 && !purego

package cpu

import "github.com/attn-go/attn/backend"

// widenQ4AVX2 widens blocks whole q4 blocks of codes (16 bytes each)
// into dst (32 int8 values each) as widenQ4Go does, prefetching the
// bytes pf past those it reads (none when pf is 0) (quant4_amd64.s).
//
//go:noescape
func widenQ4AVX2(dst *int8, codes *uint8, blocks int, pf int)

// widenQ4Vec is widenQ4 on AVX2 (hasHalfAVX2: AVX2 with its ymm
// registers saved), prefetching pf bytes ahead: it returns the codes'
// bytes it widened, every whole block's, or 0 without AVX2.
func widenQ4Vec(dst []int8, codes []uint8, pf int) int {
	const half = backend.Q8Block / 2
	blocks := min(len(codes), len(dst)/2) / half
	if !hasHalfAVX2 || blocks == 0 {
		return 0
	}
	widenQ4AVX2(&dst[0], &codes[0], blocks, pf)
	return blocks * half
}
