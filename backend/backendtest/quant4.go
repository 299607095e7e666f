package backendtest

import "github.com/attn-go/attn/backend"

// quant4Specs cover 4-bit K and V (backend.Q4, on a backend with
// Caps.Quant4) under Fused, as quantSpecs cover the 8-bit ones:
// decoding long enough to split, GQA, a few queries and prefill, both
// layouts, paged and packed, head dims of one and several blocks and
// ones that are not whole blocks (rows padded), V from K, the variants,
// a q4 V beside an f16 K, and the values that test the format: zero
// blocks, and a block whose largest magnitude is positive (a negative
// scale) beside one whose largest is negative; index lists (one a KV
// head, over pages), a block mask, Problem.Scales and a q4 V beside an
// fp8 K.
func quant4Specs() []spec {
	q4 := DTypes{K: backend.Q4, V: backend.Q4}
	v := func(p backend.Problem) backend.Problem { p.VFromK = true; return p }
	signs := func(c *Case) {
		for lo := 0; lo+32 <= len(c.K); lo += 32 {
			c.K[lo+lo/32%32] = 6 * float32(1-2*(lo/32%2))
		}
		for lo := 0; lo+32 <= len(c.V); lo += 96 {
			clear(c.V[lo : lo+32])
		}
	}
	scaled := causal(prob(1, 4, 2, 2, 150, 32, 32))
	scaled.Scales = &backend.Scales{K: []float32{0.5, 3}, V: []float32{2, 0.25}}
	return []spec{
		{p: prob(1, 8, 2, 1, 37, 32, 32), dt: q4},
		{p: causal(prob(1, 32, 8, 1, 700, 128, 128)), dt: q4},
		{p: causal(bnhd(prob(2, 4, 2, 3, 300, 64, 64))), dt: q4},
		{p: causal(prob(1, 4, 4, 67, 67, 32, 96)), dt: q4},
		{p: prob(1, 4, 2, 5, 200, 64, 64), note: "signs,zeroblocks", edit: signs, dt: q4},
		{p: PagedProblem(causal(bnhd(prob(0, 8, 2, 1, 0, 64, 64))), 16, 2, []int{1, 33, 260}, true), dt: q4},
		{p: PagedProblem(causal(prob(0, 4, 1, 1, 0, 64, 128)), 512, 1, []int{1200, 530}, false), dt: q4},
		{p: PackedProblem(causal(prob(3, 4, 2, 0, 0, 40, 80)), []int{1, 7, 30}, []int{20, 7, 45}), dt: q4},
		{p: causal(bnhd(prob(2, 4, 2, 3, 100, 40, 72))), dt: q4},
		{p: causal(prob(1, 16, 1, 1, 70, 576, 512)), dt: q4},
		{p: v(PagedProblem(causal(prob(0, 16, 1, 1, 0, 96, 64)), 16, 2, []int{1, 40, 130}, true)), dt: q4},
		{p: v(causal(prob(1, 16, 1, 1, 100, 80, 40))), dt: q4},
		{p: withV(causal(prob(2, 4, 2, 2, 130, 32, 32)), quantVariants), dt: q4},
		{p: causal(prob(1, 8, 2, 1, 90, 64, 40)), dt: DTypes{Q: backend.Float16, K: backend.Float16, V: backend.Q4, O: backend.Float16}},
		{p: WithIndices(newRand("quant4idx"), PagedProblem(causal(prob(0, 8, 2, 1, 0, 64, 64)), 16, 2, []int{40, 130}, false), 2, 24), note: "idx2x24", dt: q4},
		{p: WithBlocks(newRand("quant4blocks"), causal(prob(1, 4, 2, 64, 128, 64, 64)), 16, 0.5, true), note: "blocks16", dt: q4},
		{p: scaled, note: "scales", dt: q4},
		{p: causal(prob(2, 4, 4, 40, 90, 32, 32)), dt: DTypes{K: backend.FP8, V: backend.Q4}},
	}
}
