//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
)

// TestQuantLayers: copy8.wgsl runs the ranges of one layer in shared
// dispatches, whose workgroups write their words at once, so no two
// ranges of one layer may write a word of dst: computed here from the
// layouts (a q8 or q4 block's code words and its scale word, blocks 2c
// and 2c+1 of a superblock sharing one; four fp8 elements a word), for
// random calls of small rows, adjacent and not, in any order (a
// speculative step's Keep, a fork's pages). Overlapping destinations
// give no layers (every range in order); a call with one small range
// runs it alone.
func TestQuantLayers(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	for _, dt := range []backend.DType{backend.Q8, backend.Q4, backend.FP8} {
		blk := dt.Block()
		words := func(r backend.CopyRange) []string {
			var out []string
			for e := r.Dst; e < r.Dst+r.N; e++ {
				if blk == 1 {
					out = append(out, fmt.Sprint("w", e/4))
					continue
				}
				b := e / backend.Q8Block
				out = append(out, fmt.Sprint("code", b), fmt.Sprint("scale", b/8, (b%8)/2))
			}
			return out
		}
		for trial := range 300 {
			var ranges []backend.CopyRange
			at := rng.IntN(4) * blk
			for range 1 + rng.IntN(12) {
				n := (1 + rng.IntN(5)) * blk
				if blk == 1 {
					n = 1 + rng.IntN(9)
				}
				ranges = append(ranges, backend.CopyRange{Dst: at, Src: rng.IntN(40) * blk, N: n})
				at += n + rng.IntN(3)*blk*rng.IntN(2)
			}
			rng.Shuffle(len(ranges), func(i, j int) { ranges[i], ranges[j] = ranges[j], ranges[i] })
			layers := quantLayers(dt, ranges)
			if layers == nil {
				t.Fatalf("%v trial %d: %v do not overlap, but have no layers", dt, trial, ranges)
			}
			owner := map[string]int{}
			for i, r := range ranges {
				if layers[i] < 0 {
					if len(ranges) > 1 {
						t.Fatalf("%v trial %d: small range %v runs alone among %v", dt, trial, r, ranges)
					}
					continue
				}
				for _, w := range words(r) {
					key := fmt.Sprint(layers[i], w)
					if j, ok := owner[key]; ok && j != i {
						t.Fatalf("%v trial %d: %v and %v share %s in layer %d", dt, trial, ranges[j], r, w, layers[i])
					}
					owner[key] = i
				}
			}
		}
		over := []backend.CopyRange{{Dst: 0, N: 2 * blk}, {Dst: blk, N: blk}}
		if layers := quantLayers(dt, over); layers != nil {
			t.Errorf("%v: overlapping destinations %v have layers %v", dt, over, layers)
		}
	}
}
