package cpu

import (
	"math"

	"github.com/attn-go/attn/backend"
)

// scoreMods applies the score modifications of backend.Variants that the
// scores take before masking — softcap, then the bias and ALiBi — to one
// row of scores, in place.
type scoreMods struct {
	p     backend.Problem
	bias  *maskView
	align []int // Problem.Align of each batch, for ALiBi
}

// newScoreMods returns p's score modifications with bias (nil for none).
func newScoreMods(p backend.Problem, bias *maskView) scoreMods {
	return newScoreModsInto(p, bias, nil)
}

// newScoreModsInto is newScoreMods keeping ALiBi's alignments in buf's
// space when it is large enough.
func newScoreModsInto(p backend.Problem, bias *maskView, buf []int) scoreMods {
	s := scoreMods{p: p, bias: bias}
	if p.ALiBi != nil {
		// Align per row and tile, through a copy of the Problem, cost
		// a measurable part of a fused call: once per batch instead.
		s.align = grow(buf, p.B)
		for b := range s.align {
			s.align[b] = p.Align(b)
		}
	}
	return s
}

// capped applies the softcap to row: x → c·tanh(x/c).
func (s *scoreMods) capped(row []float32) {
	if c := s.p.Softcap; c > 0 {
		softcap(row, c)
	}
}

// biased adds the bias and ALiBi of query (b, h, i) to row, which holds
// keys j0 … j0+len(row)−1.
func (s *scoreMods) biased(row []float32, b, h, i, j0 int) {
	if s.bias != nil {
		s.bias.addBias(row, b, h, i, j0)
	}
	if s.p.ALiBi != nil {
		alibi(row, s.p.ALiBi[h], s.align[b]+i-j0)
	}
}

// none says whether there is nothing to apply: all leaves rows as they
// are.
func (s *scoreMods) none() bool { return s.p.Softcap <= 0 && s.bias == nil && s.p.ALiBi == nil }

// all takes row from raw to biased scores: capped, then biased.
func (s *scoreMods) all(row []float32, b, h, i, j0 int) {
	s.capped(row)
	s.biased(row, b, h, i, j0)
}

// softcap replaces each x of row with c·tanh(x/c). On amd64 the vector
// loops take what they can (softcapVec: sixteen lanes with AVX-512F,
// eight with AVX2 and FMA, e^(−2|x|/c) in base 2, within 2e-7 of c); the
// rest of the row, or all of it elsewhere, goes through tanhf.
func softcap(row []float32, c float32) {
	inv := 1 / c
	for j := softcapVec(row, c); j < len(row); j++ {
		row[j] = c * tanhf(row[j]*inv)
	}
}

// tanhf is tanh in float32 by tanh|x| = (1 − e)/(1 + e), e = e^(−2|x|)
// (expf), with the sign put back: exact to a few units in the last place
// of the result's magnitude 1, which is what the softcap needs (its
// output is c·tanh, compared with c). Past |x| = 9.1, e is under half a
// unit of 1 and the result is ±1; below 2⁻¹², x itself is within a unit in
// the last place.
func tanhf(x float32) float32 {
	a := float32(math.Abs(float64(x)))
	var t float32
	switch {
	case a != a:
		return x
	case a > 9.1:
		t = 1
	case a < 0x1p-12:
		return x
	default:
		e := expf(-2 * a)
		t = (1 - e) / (1 + e)
	}
	if x < 0 {
		return -t
	}
	return t
}

// alibi adds −m·|d0 − j| to row[j]: ALiBi's linear distance penalty for a
// query at key position t over keys j0 …, with d0 = t − j0. On amd64 with
// AVX2 and FMA the vector loops (alibiVec) take what they can, sixteen or
// eight lanes at a time, in one fused multiply-add a value; the rest goes
// through the loop here.
func alibi(row []float32, m float32, d0 int) {
	for j := alibiVec(row, m, d0); j < len(row); j++ {
		d := d0 - j
		if d < 0 {
			d = -d
		}
		row[j] -= m * float32(d)
	}
}

// hideOutside sets to −Inf the entries of row (keys j0 … j0+len(row)−1)
// outside the key range [lo, hi).
func hideOutside(row []float32, lo, hi, j0 int) {
	negInf := float32(math.Inf(-1))
	a := min(max(lo-j0, 0), len(row))
	e := min(max(hi-j0, a), len(row))
	for j := range row[:a] {
		row[j] = negInf
	}
	for j := range row[e:] {
		row[e+j] = negInf
	}
}

// withSink folds a sink logit s into a row's running max m and sum l (of
// exp(x − m) over the keys it saw): it returns the factor by which the
// row's accumulated output is to be scaled, exp(m − m'), and the new max
// and sum. A row that saw no key (l = 0) keeps a zero output, and its
// log-sum-exp m' + log l' is s.
func withSink(m, l, s float64) (alpha, m2, l2 float64) {
	if l == 0 {
		return 0, s, 1
	}
	m2 = max(m, s)
	alpha = math.Exp(m - m2)
	return alpha, m2, l*alpha + math.Exp(s-m2)
}
