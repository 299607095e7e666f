package backendtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
)

// WithBlocks returns p with a block mask (backend.BlockMask) of blocks
// of size, each on with probability density, drawn from rng, one a head
// when perHead (else shared by the heads), one a batch; p's sizes must
// be set.
func WithBlocks(rng *rand.Rand, p backend.Problem, size int, density float64, perHead bool) backend.Problem {
	p = p.Resolved()
	h := 1
	if perHead {
		h = p.H
	}
	m := &backend.BlockMask{Size: size, Shape: [4]int{p.B, h, (p.Nq + size - 1) / size, (p.Nk + size - 1) / size}}
	m.Keep = make([]bool, m.Shape[0]*m.Shape[1]*m.Shape[2]*m.Shape[3])
	for i := range m.Keep {
		m.Keep[i] = rng.Float64() < density
	}
	p.Blocks = m
	return p
}

// blockSpec is p with a block mask of blocks of size, each on with
// probability density, one a head when perHead (WithBlocks), drawn from
// a seed of the problem's and the mask's names.
func blockSpec(p backend.Problem, size int, density float64, perHead bool) spec {
	name := fmt.Sprintf("blocks%d_%.2f", size, density)
	if perHead {
		name += "_heads"
	}
	return spec{p: p, note: name, edit: func(c *Case) {
		c.Problem = WithBlocks(newRand(describe(p, nil, nil)+name), c.Problem, size, density, perHead)
	}}
}

// blockSpecs are problems with block masks (backend.BlockMask): block
// sizes 16 … 256 on problems whose Nq and Nk are not multiples of them
// (partial last blocks), blocks smaller than the backend's key tiles
// and larger, shared by the heads and one a head, with the masks and
// variants that give the element rule inside on blocks (causal, window,
// keep-mask, bias, key lengths, sinks, softcap, ALiBi), GQA, BNHD,
// decoding, packed and paged, every storage dtype, densities from none
// to all.
func blockSpecs() []spec {
	blk := blockSpec
	with := func(sp spec, dt DTypes) spec { sp.dt = dt; return sp }
	withMasks := func(sp spec, bias, keep *[4]int) spec { sp.bias, sp.keep = bias, keep; return sp }
	vars := func(p backend.Problem, f func(*backend.Variants)) backend.Problem { f(&p.Variants); return p }
	q8 := DTypes{K: backend.Q8, V: backend.Q8}
	f8 := DTypes{K: backend.FP8, V: backend.FP8}
	specs := []spec{
		blk(prob(1, 2, 2, 100, 150, 32, 32), 16, 0.3, false),
		blk(prob(1, 2, 1, 65, 129, 16, 24), 32, 0.5, true),
		blk(causal(prob(2, 4, 2, 200, 300, 64, 64)), 64, 0.4, false),
		blk(causal(bnhd(prob(1, 4, 4, 257, 257, 40, 40))), 128, 0.5, true),
		blk(prob(1, 2, 2, 300, 520, 32, 16), 256, 0.6, false),
		blk(prob(1, 2, 1, 33, 47, 8, 8), 17, 0.5, false),  // a size no tile divides
		blk(prob(1, 2, 2, 70, 90, 32, 32), 32, 0, false),  // every block off
		blk(prob(1, 2, 2, 70, 90, 32, 32), 32, 1, false),  // every block on
		blk(prob(1, 8, 2, 1, 700, 64, 64), 64, 0.3, true), // decoding
		blk(causal(prob(1, 2, 2, 5, 1, 8, 8)), 16, 1, false),
		blk(vars(causal(prob(2, 4, 2, 130, 200, 32, 32)), func(vs *backend.Variants) {
			vs.Window = win(70, 0)
			vs.Softcap = 5
			vs.ALiBi = []float32{0.5, 0.25, 0.125, 0.0625}
			vs.Sinks = []float32{0, 1, -1, 3}
			vs.KVLens = []int{200, 90}
		}), 32, 0.5, false),
		withMasks(blk(prob(2, 4, 2, 70, 130, 32, 32), 32, 0.6, true), &[4]int{2, 1, 70, 130}, &[4]int{1, 4, 1, 130}),
		blk(PackedProblem(causal(prob(3, 4, 2, 0, 0, 32, 32)), []int{1, 70, 33}, []int{20, 90, 40}), 32, 0.5, false),
		blk(PagedProblem(causal(bnhd(prob(0, 4, 2, 3, 0, 64, 64))), 16, 2, []int{100, 40, 160}, true), 32, 0.5, true),
		with(blk(causal(prob(1, 4, 2, 100, 180, 64, 64)), 32, 0.5, false), Same(backend.Float16)),
		with(blk(bnhd(prob(1, 4, 2, 100, 180, 64, 64)), 64, 0.5, true), Same(backend.BFloat16)),
		with(blk(causal(prob(1, 4, 2, 100, 180, 64, 64)), 32, 0.5, false), q8),
		with(blk(prob(1, 8, 2, 1, 600, 64, 64), 64, 0.3, false), f8),
	}
	return specs
}

// testBlocks runs the block-mask cases and checks their errors; a
// backend that does not claim Caps.Blocks must refuse a block mask with
// ErrUnsupported, not compute every block.
func (s *suite) testBlocks(t *testing.T) {
	if !s.caps.Blocks {
		if s.caps.Fused {
			c := blockSpecs()[0].build()
			if err := RunFused(context.Background(), s.be, c, false); !errors.Is(err, backend.ErrUnsupported) {
				t.Errorf("a block mask on a backend without Caps.Blocks: %v, want ErrUnsupported", err)
			}
		}
		return
	}
	s.cases(t, blockSpecs())
	t.Run("Errors", func(t *testing.T) {
		base := func() Case {
			p := WithBlocks(newRand("blockErrors"), causal(prob(2, 4, 2, 40, 70, 8, 8)), 16, 0.5, false)
			return RandomCase(newRand("blockErrorsCase"), p, nil, nil)
		}
		for _, tc := range []struct {
			name string
			edit func(m *backend.BlockMask)
			text string
		}{
			{"size", func(m *backend.BlockMask) { m.Size = 0 }, "blocks of 0"},
			{"key blocks", func(m *backend.BlockMask) { m.Shape[3] = 4 }, "⌈Nk/16⌉=5"},
			{"query blocks", func(m *backend.BlockMask) { m.Shape[2] = 2 }, "⌈Nq/16⌉=3"},
			{"heads", func(m *backend.BlockMask) { m.Shape[1] = 2 }, "H=4 or 1"},
			{"length", func(m *backend.BlockMask) { m.Keep = m.Keep[1:] }, "has 29 entries, want 30"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := base()
				m := *c.Blocks
				m.Keep = append([]bool(nil), m.Keep...)
				tc.edit(&m)
				c.Blocks = &m
				err := runFusedBad(context.Background(), s.be, c, func(c *Case) { c.Blocks = nil })
				if !errors.Is(err, backend.ErrShape) || !contains(err, tc.text) {
					t.Errorf("got %v, want ErrShape naming %q", err, tc.text)
				}
			})
		}
	})
}
