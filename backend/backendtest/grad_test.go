package backendtest

import (
	"math"
	"testing"

	"github.com/attn-go/attn/backend"
)

// TestReferenceGrad checks ReferenceGrad against central differences of
// L = Σ O·dO through Reference, entry by entry of Q, K and V (and each
// sink logit), on small problems with every variant the gradient covers:
// causal masking and its offset, a window, key lengths, GQA, Dv ≠ D,
// BNHD, softcap, ALiBi, a bias (and its gradient, broadcast over heads
// and over keys) and keep-mask, sinks, scales, packed sequences, a row
// that sees no key, block masks (one a head, partial last blocks) and
// index lists (shared and one a KV head, −1 padding, rows that name no
// key).
func TestReferenceGrad(t *testing.T) {
	withV := func(p backend.Problem, f func(*backend.Variants)) backend.Problem { f(&p.Variants); return p }
	for _, sp := range []spec{
		{p: prob(1, 2, 2, 3, 4, 3, 3)},
		{p: causal(prob(2, 4, 2, 5, 7, 3, 2))},
		{p: bnhd(withV(causal(prob(1, 4, 1, 4, 9, 5, 4)), func(v *backend.Variants) {
			v.Softcap = 1.5
			v.ALiBi = []float32{0.5, 0.25, 0.125, 0.0625}
			v.Sinks = []float32{0.3, -1, 2, 0}
			v.Window = win(3, 0)
		}))},
		{p: withV(prob(2, 2, 1, 3, 6, 4, 4), func(v *backend.Variants) {
			off := -2
			v.CausalOffset = &off // row 0 and 1 see no key
			v.KVLens = []int{6, 3}
		}), bias: &[4]int{2, 1, 3, 6}, keep: &[4]int{1, 2, 1, 6}},
		{p: withV(prob(1, 2, 2, 4, 5, 3, 3), func(v *backend.Variants) { v.Softcap = 2 }), bias: &[4]int{1, 2, 4, 1}},
		{p: causal(PackedProblem(prob(0, 4, 2, 0, 0, 3, 2), []int{2, 0, 3}, []int{4, 1, 3})), bias: &[4]int{3, 1, 3, 4}},
		{p: causal(prob(1, 2, 1, 5, 7, 3, 3)), keep: &[4]int{1, 1, 5, 7}, note: "blocks2", edit: func(c *Case) {
			c.Problem = WithBlocks(newRand("blocks2"), c.Problem, 2, 0.6, true)
		}},
		{p: causal(prob(2, 4, 2, 3, 6, 3, 3)), note: "idx2x4", edit: func(c *Case) {
			c.Problem = WithIndices(newRand("idx2x4"), c.Problem, 2, 4)
		}},
		{p: withV(prob(1, 2, 1, 4, 8, 4, 3), func(v *backend.Variants) { v.Window = win(2, 1); v.Softcap = 2 }), note: "idx1x5", edit: func(c *Case) {
			c.Problem = WithIndices(newRand("idx1x5"), c.Problem, 1, 5)
		}},
	} {
		t.Run(sp.name(), func(t *testing.T) {
			c := sp.build()
			p := c.Problem.Resolved()
			if p.Sinks == nil && p.KVHeads == 1 {
				p.Scales = &backend.Scales{K: []float32{1.5}, V: []float32{0.5}}
				c.Problem = p
			}
			rng := newRand("dO" + sp.name())
			dO := uniform(rng, p.OLen(), 1)
			g := ReferenceGrad(c, dO)
			loss := func(c Case) float64 {
				w := Reference(c)
				l := 0.0
				for i, o := range w.O {
					l += o * float64(dO[i])
				}
				return l
			}
			check := func(what string, xs []float32, grad []float64) {
				for i := range xs {
					x := xs[i]
					if math.IsInf(float64(x), -1) {
						// A bias of −∞ masks its key: no central difference
						// there (x ± eps is −∞), and a gradient of 0.
						if grad[i] != 0 {
							t.Errorf("d%s[%d] = %.6g at −∞, want 0", what, i, grad[i])
						}
						continue
					}
					const eps = 1.0 / 256
					xs[i] = x + eps
					hi, up := loss(c), xs[i]
					xs[i] = x - eps
					lo, down := loss(c), xs[i]
					xs[i] = x
					num := (hi - lo) / float64(up-down)
					if d := math.Abs(num - grad[i]); Exceeds(d, 2e-4*math.Max(1, math.Abs(num))) {
						t.Errorf("d%s[%d] = %.6g, central difference %.6g", what, i, grad[i], num)
					}
				}
			}
			check("Q", c.Q, g.DQ)
			check("K", c.K, g.DK)
			check("V", c.V, g.DV)
			if c.Bias != nil {
				check("Bias", c.Bias.Data, g.DBias)
			}
			if p.Sinks != nil {
				sinks := append([]float32(nil), p.Sinks...)
				c.Problem.Sinks = sinks
				check("Sinks", sinks, g.DSinks)
			}
		})
	}
}
