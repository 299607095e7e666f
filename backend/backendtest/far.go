package backendtest

import "github.com/attn-go/attn/backend"

// farGap is how far a row's peak sits above its other scores: past 88,
// where exp(s − m) overflows float32 when a kernel rescales by a maximum
// that missed the peak (exp(150) is +Inf in float32, so such a kernel
// outputs NaN or Inf, never a value near the reference).
const farGap = 150

// farSpecs put scores more than 100 apart inside every group of keys a
// kernel reduces a row over (a split, a team of lanes, a tile, a block),
// and put each row's maximum at the positions such groups begin and end:
// every key position of a prefill tile or two (the peak on the
// diagonal), every position of a short decoding row, and the first and
// last key of every 32 of a longer one (the sizes the kernels cut keys by
// are powers of two from 4 to 1024, so each group's ends are among
// them). Then a row whose peak repeats in several groups but not the
// first, ALiBi over hundreds of keys with slopes of both signs (the peak
// at the last key or the first), a sink far above and far below the
// scores, and a peak made of q·k alone, with no bias.
func farSpecs() []spec {
	var specs []spec
	// Prefill: query row i's peak at key i, so that the peak visits
	// every position of tiles up to 128 keys, at head dims whose tiles
	// differ (the GPU's fusedtile.wgsl runs at 64 and above).
	for _, d := range []int{64, 128} {
		n := 130
		if d == 128 {
			n = 70
		}
		p := prob(1, 2, 1, n, n, d, d)
		specs = append(specs, spec{p: p, bias: shape(1, 1, n, n), note: "peak-diagonal", edit: peaks(func(_, _, i int) []int { return []int{i} })})
	}
	// Decoding: one query a head, a head's peak at a position of its own.
	// 64 heads over 64 keys: the peak at every position.
	short := prob(4, 16, 4, 1, 64, 64, 64)
	specs = append(specs, spec{p: short, bias: shape(4, 16, 1, 64), note: "peak-every-key", edit: peaks(func(b, h, _ int) []int { return []int{b*16 + h} })})
	// 530 keys: the first and the last key of every 32 (34 positions, 36
	// heads); the last heads hold the peak at several keys but the first
	// block's (31, 63, 95, …), or at the row's last key alone.
	const nk = 530
	var ends []int
	for j := 0; j < nk; j += 32 {
		ends = append(ends, j, min(j+31, nk-1))
	}
	long := prob(3, 12, 3, 1, nk, 64, 64)
	specs = append(specs, spec{p: long, bias: shape(3, 12, 1, nk), note: "peak-block-ends", edit: peaks(func(b, h, _ int) []int {
		r := b*12 + h
		switch {
		case r < len(ends):
			return []int{ends[r]}
		case r%2 == 0:
			return []int{31, 63, 95, 511, nk - 1}
		}
		return []int{nk - 1}
	})})
	// Shorter rows in BNHD with GQA heads side by side, at D = 128.
	specs = append(specs, spec{p: bnhd(prob(2, 8, 2, 1, 520, 128, 128)), bias: shape(2, 8, 1, 520), note: "peak-block-ends", edit: peaks(func(b, h, _ int) []int {
		return []int{[]int{0, 31, 32, 63, 64, 127, 128, 255, 256, 319, 320, 383, 384, 447, 511, 519}[b*8+h]}
	})})
	// ALiBi over hundreds of keys: −m·|t − j| spans m·(Nk − 1), so a
	// row's scores are hundreds apart, its peak at the last key (m > 0)
	// or the first (m < 0); a prefill tile's rows likewise.
	specs = append(specs,
		spec{p: withV(prob(2, 4, 2, 1, 700, 64, 64), func(v *backend.Variants) { v.ALiBi = []float32{1, -1, 0.5, -0.25} }), note: "alibi-far"},
		spec{p: withV(prob(1, 2, 1, 40, 300, 64, 64), func(v *backend.Variants) { v.ALiBi = []float32{0.75, -0.5} }), note: "alibi-far"},
		// A sink 150 above every score (the output near zero, but not
		// zero, and its LSE the sink's) and one far below.
		spec{p: withV(prob(1, 2, 2, 1, 300, 64, 64), func(v *backend.Variants) { v.Sinks = []float32{farGap, -farGap} }), note: "sink-far"},
		spec{p: withV(prob(1, 2, 1, 40, 130, 64, 64), func(v *backend.Variants) { v.Sinks = []float32{farGap, -farGap} }), note: "sink-far"},
		// The peak from q·k alone: key j of batch b is its query scaled
		// so that scale·q·k = 150.
		spec{p: prob(4, 1, 1, 1, 300, 64, 64), note: "peak-qk", edit: func(c *Case) {
			p := c.Problem
			for b, j := range []int{0, 299, 150, 31} {
				q := c.Q[b*p.D:][:p.D]
				qq := 0.0
				for _, x := range q {
					qq += float64(x) * float64(x)
				}
				f := farGap / (float64(defaultScale(p.D)) * qq)
				k := c.K[(b*p.Nk+j)*p.D:][:p.D]
				for d, x := range q {
					k[d] = float32(f * float64(x))
				}
			}
		}},
	)
	return specs
}

// peaks is an edit that adds farGap to the bias at the keys at(b, h, i)
// names for each row of the bias's own (unbroadcast) shape.
func peaks(at func(b, h, i int) []int) func(*Case) {
	return func(c *Case) {
		s := c.Bias.Shape
		for b := range s[0] {
			for h := range s[1] {
				for i := range s[2] {
					for _, j := range at(b, h, i) {
						c.Bias.Data[((b*s[1]+h)*s[2]+i)*s[3]+j] += farGap
					}
				}
			}
		}
	}
}
