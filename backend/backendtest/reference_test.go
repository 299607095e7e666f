package backendtest

import (
	"math"
	"testing"

	"github.com/attn-go/attn/backend"
)

func flat(rows [][]float32) []float32 {
	var x []float32
	for _, r := range rows {
		x = append(x, r...)
	}
	return x
}

func matmul(a, b [][]float32) [][]float32 {
	c := make([][]float32, len(a))
	for i := range a {
		c[i] = make([]float32, len(b[0]))
		for j := range b[0] {
			for k := range b {
				c[i][j] += a[i][k] * b[k][j]
			}
		}
	}
	return c
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if got != want && Exceeds(math.Abs(got-want), tol) {
		t.Errorf("%s = %.9g, want %.9g", what, got, want)
	}
}

// The worked example of the illustrated self-attention tutorials: three
// tokens of four features projected to three dims, scale 1.
func TestReferenceTutorial(t *testing.T) {
	x := [][]float32{{1, 0, 1, 0}, {0, 2, 0, 2}, {1, 1, 1, 1}}
	wk := [][]float32{{0, 0, 1}, {1, 1, 0}, {0, 1, 0}, {1, 1, 0}}
	wq := [][]float32{{1, 0, 1}, {1, 0, 0}, {0, 0, 1}, {0, 1, 1}}
	wv := [][]float32{{0, 2, 0}, {0, 3, 0}, {1, 0, 3}, {1, 1, 0}}
	keys := [][]float32{{0, 1, 1}, {4, 4, 0}, {2, 3, 1}}
	queries := [][]float32{{1, 0, 2}, {2, 2, 2}, {2, 1, 3}}
	values := [][]float32{{1, 2, 3}, {2, 8, 0}, {2, 6, 3}}
	for _, m := range []struct {
		name      string
		got, want [][]float32
	}{{"keys", matmul(x, wk), keys}, {"queries", matmul(x, wq), queries}, {"values", matmul(x, wv), values}} {
		if i := firstDiff(flat(m.got), flat(m.want)); i >= 0 {
			t.Fatalf("%s = %v, want %v", m.name, m.got, m.want)
		}
	}

	c := Case{
		Problem: backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 3, Nk: 3, D: 3, Dv: 3, Scale: 1},
		Q:       flat(queries), K: flat(keys), V: flat(values),
	}
	w := Reference(c)
	scores := []float64{2, 4, 4, 4, 16, 12, 4, 12, 10}
	for i, s := range scores {
		if w.Scores[i] != s {
			t.Errorf("Scores[%d] = %v, want %v", i, w.Scores[i], s)
		}
	}
	for j, p := range []float64{0.063379, 0.468311, 0.468311} {
		near(t, "P[0,"+string(rune('0'+j))+"]", w.P[j], p, 1e-6)
	}
	// Row 0 by hand: weights 1 : e² : e² over the three keys.
	e2 := math.Exp(2)
	p0, p1 := 1/(1+2*e2), e2/(1+2*e2)
	for d, o := range []float64{p0*1 + p1*(2+2), p0*2 + p1*(8+6), p0*3 + p1*(0+3)} {
		near(t, "O[0,d]", w.O[d], o, 1e-12)
	}
	near(t, "O[0,0] (tutorial)", w.O[0], 1.9366, 1e-4)
	near(t, "O[0,1] (tutorial)", w.O[1], 6.6831, 1e-4)
	near(t, "O[0,2] (tutorial)", w.O[2], 1.5951, 1e-4)
	near(t, "LSE[0]", w.LSE[0], 2+math.Log(1+2*e2), 1e-12)
	for i := range 3 {
		sum := 0.0
		for j := range 3 {
			sum += w.P[i*3+j]
		}
		near(t, "Σ P row", sum, 1, 1e-12)
	}
}

// Two keys whose scores are 1 and 0: weights e/(1+e) and 1/(1+e).
func TestReferenceTwoKeys(t *testing.T) {
	c := Case{
		Problem: backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 2, D: 1, Dv: 1, Scale: 0.5},
		Q:       []float32{2}, K: []float32{1, 0}, V: []float32{4, -2},
	}
	w := Reference(c)
	e := math.E
	near(t, "S[0]", w.Scores[0], 1, 0)
	near(t, "S[1]", w.Scores[1], 0, 0)
	near(t, "P[0]", w.P[0], e/(1+e), 1e-15)
	near(t, "P[1]", w.P[1], 1/(1+e), 1e-15)
	near(t, "O", w.O[0], (4*e-2)/(1+e), 1e-14)
	near(t, "LSE", w.LSE[0], math.Log(1+e), 1e-15)

	// A bias moves the scores, a negative scale flips them.
	c.Bias = &HostMask{Shape: [4]int{1, 1, 1, 2}, Data: []float32{0, 1}}
	c.Scale = -0.5
	w = Reference(c)
	near(t, "S[0] biased", w.Scores[0], -1, 0)
	near(t, "S[1] biased", w.Scores[1], 1, 0)
	near(t, "P[1] biased", w.P[1], e*e/(1+e*e), 1e-15)
}

// A row that sees no key has zero weights, zero output and LSE −Inf,
// whether a keep-mask, a −Inf bias or the lack of keys hides them.
func TestReferenceMaskedRow(t *testing.T) {
	p := backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 2, Nk: 3, D: 2, Dv: 2, Scale: 1}
	c := Case{
		Problem: p,
		Q:       []float32{1, 2, 3, 4}, K: []float32{1, 0, 0, 1, 1, 1}, V: []float32{1, 2, 3, 4, 5, 6},
	}
	masks := map[string]func(c *Case){
		"keep": func(c *Case) { c.Keep = &HostMask{Shape: [4]int{1, 1, 2, 1}, Data: []float32{1, 0}} },
		"bias": func(c *Case) { c.Bias = &HostMask{Shape: [4]int{1, 1, 2, 1}, Data: []float32{0, negInf}} },
	}
	for name, mask := range masks {
		c := c
		mask(&c)
		w := Reference(c)
		for j := range 3 {
			if w.P[3+j] != 0 {
				t.Errorf("%s: P[1,%d] = %v, want 0", name, j, w.P[3+j])
			}
		}
		if w.O[2] != 0 || w.O[3] != 0 {
			t.Errorf("%s: O[1] = %v, want zeros", name, w.O[2:4])
		}
		if !math.IsInf(w.LSE[1], -1) {
			t.Errorf("%s: LSE[1] = %v, want -Inf", name, w.LSE[1])
		}
		if math.IsInf(w.LSE[0], 0) || w.O[0] == 0 {
			t.Errorf("%s: row 0 should see every key: LSE %v O %v", name, w.LSE[0], w.O[0:2])
		}
	}

	// No keys at all.
	p.Nk = 0
	w := Reference(Case{Problem: p, Q: c.Q})
	for i := range 2 {
		if !math.IsInf(w.LSE[i], -1) {
			t.Errorf("Nk=0: LSE[%d] = %v, want -Inf", i, w.LSE[i])
		}
	}
	for i, o := range w.O {
		if o != 0 {
			t.Errorf("Nk=0: O[%d] = %v, want 0", i, o)
		}
	}
}

// Causal masking is bottom-right aligned: with Nq = 2 and Nk = 4, query 0
// sees keys 0…2 and query 1 sees all four.
func TestReferenceCausalBottomRight(t *testing.T) {
	c := Case{
		Problem: backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 2, Nk: 4, D: 1, Dv: 1, Scale: 1, Causal: true},
		// Zero queries give equal scores, so the weights are uniform over
		// the keys each row sees.
		Q: []float32{0, 0}, K: []float32{1, 2, 3, 4}, V: []float32{1, 2, 4, 8},
	}
	w := Reference(c)
	want := []float64{1. / 3, 1. / 3, 1. / 3, 0, 0.25, 0.25, 0.25, 0.25}
	for i := range want {
		near(t, "P", w.P[i], want[i], 1e-15)
	}
	if w.P[3] != 0 {
		t.Errorf("P[0,3] = %v, want exactly 0", w.P[3])
	}
	near(t, "O[0]", w.O[0], 7./3, 1e-15)
	near(t, "O[1]", w.O[1], 15./4, 1e-15)
	near(t, "LSE[0]", w.LSE[0], math.Log(3), 1e-15)
	near(t, "LSE[1]", w.LSE[1], math.Log(4), 1e-15)
}

// keys takes keys [from, to) of c (BHND, no masks) as a case of its own.
func keys(c Case, from, to int) Case {
	p := c.Problem
	part := c
	part.Nk = to - from
	part.K, part.V = nil, nil
	for b := range p.B {
		for h := range p.KVHeads {
			for j := from; j < to; j++ {
				part.K = append(part.K, c.K[p.KStrides().Offset(b, h, j):][:p.D]...)
				part.V = append(part.V, c.V[p.VStrides().Offset(b, h, j):][:p.Dv]...)
			}
		}
	}
	return part
}

// Why LSE exists: attention over two halves of the keys, each with its
// output O₁, O₂ and log-sum-exp L₁, L₂, merges exactly into attention over
// all of them:
//
//	L = log(exp L₁ + exp L₂)
//	O = exp(L₁ − L)·O₁ + exp(L₂ − L)·O₂
//
// which is how split-KV and multi-device attention combine partial results.
func TestReferenceLSEMerge(t *testing.T) {
	p := backend.Problem{B: 2, H: 4, KVHeads: 2, Nq: 5, Nk: 13, D: 6, Dv: 3, Scale: 0.7}
	c := RandomCase(newRand("merge"), p, nil, nil)
	all := Reference(c)
	w1, w2 := Reference(keys(c, 0, 6)), Reference(keys(c, 6, 13))
	os := p.OStrides()
	forRows(p, func(b, h, i, row int) {
		l1, l2 := w1.LSE[row], w2.LSE[row]
		l := math.Log(math.Exp(l1) + math.Exp(l2))
		near(t, "merged LSE", l, all.LSE[row], 1e-12)
		for d := range p.Dv {
			at := os.Offset(b, h, i) + d
			o := math.Exp(l1-l)*w1.O[at] + math.Exp(l2-l)*w2.O[at]
			near(t, "merged O", o, all.O[at], 1e-12)
		}
	})
}

// relayout copies a [B, heads, rows, dim] tensor from layout from to
// layout to.
func relayout(x []float32, from, to backend.Layout, b, heads, rows, dim int) []float32 {
	y := make([]float32, len(x))
	fs, ts := backend.TensorStrides(from, heads, rows, dim), backend.TensorStrides(to, heads, rows, dim)
	for bb := range b {
		for h := range heads {
			for i := range rows {
				copy(y[ts.Offset(bb, h, i):][:dim], x[fs.Offset(bb, h, i):][:dim])
			}
		}
	}
	return y
}

// The same problem in BNHD gives the same answer as in BHND, moved.
func TestReferenceLayouts(t *testing.T) {
	p := backend.Problem{B: 2, H: 4, KVHeads: 2, Nq: 5, Nk: 7, D: 3, Dv: 2, Scale: 1, Causal: true}
	c := RandomCase(newRand("layouts"), p, shape(2, 1, 5, 7), shape(1, 4, 1, 7))
	w := Reference(c)
	n := c
	n.Layout = backend.BNHD
	n.Q = relayout(c.Q, backend.BHND, backend.BNHD, p.B, p.H, p.Nq, p.D)
	n.K = relayout(c.K, backend.BHND, backend.BNHD, p.B, p.KVHeads, p.Nk, p.D)
	n.V = relayout(c.V, backend.BHND, backend.BNHD, p.B, p.KVHeads, p.Nk, p.Dv)
	wn := Reference(n)
	o := make([]float32, len(wn.O))
	for i, x := range wn.O {
		o[i] = float32(x)
	}
	o = relayout(o, backend.BNHD, backend.BHND, p.B, p.H, p.Nq, p.Dv)
	for i := range o {
		if o[i] != float32(w.O[i]) {
			t.Fatalf("O[%d]: BNHD %v, BHND %v", i, o[i], w.O[i])
		}
	}
	for i := range w.P {
		if w.P[i] != wn.P[i] {
			t.Fatalf("P[%d]: BNHD %v, BHND %v", i, wn.P[i], w.P[i])
		}
	}
}

// GQA is multi-head attention with each KV head repeated for its group,
// and a broadcast mask is the same as the mask written out in full.
func TestReferenceGroupsAndBroadcast(t *testing.T) {
	p := backend.Problem{B: 2, H: 6, KVHeads: 2, Nq: 4, Nk: 5, D: 3, Dv: 2, Scale: 0.5}
	c := RandomCase(newRand("gqa"), p, shape(1, 6, 1, 5), shape(2, 1, 4, 1))
	w := Reference(c)

	e := c
	e.KVHeads = p.H
	e.K, e.V = nil, nil
	for b := range p.B {
		for h := range p.H {
			e.K = append(e.K, c.K[p.KStrides().Offset(b, h/3, 0):][:p.Nk*p.D]...)
			e.V = append(e.V, c.V[p.VStrides().Offset(b, h/3, 0):][:p.Nk*p.Dv]...)
		}
	}
	expand := func(m *HostMask) *HostMask {
		f := &HostMask{Shape: [4]int{p.B, p.H, p.Nq, p.Nk}}
		for b := range p.B {
			for h := range p.H {
				for i := range p.Nq {
					for j := range p.Nk {
						f.Data = append(f.Data, m.at(b, h, i, j))
					}
				}
			}
		}
		return f
	}
	e.Bias, e.Keep = expand(c.Bias), expand(c.Keep)
	we := Reference(e)
	for i := range w.O {
		if w.O[i] != we.O[i] {
			t.Fatalf("O[%d]: GQA %v, expanded %v", i, w.O[i], we.O[i])
		}
	}
	for i := range w.LSE {
		if w.LSE[i] != we.LSE[i] {
			t.Fatalf("LSE[%d]: GQA %v, expanded %v", i, w.LSE[i], we.LSE[i])
		}
	}
}

// RandomCase is a pure function of its generator's seed, and its masks
// are in the proportions it documents.
func TestRandomCase(t *testing.T) {
	p := backend.Problem{B: 2, H: 2, KVHeads: 1, Nq: 50, Nk: 60, D: 4, Dv: 4, Scale: 1}
	a := RandomCase(newRand("x"), p, shape(2, 2, 50, 60), shape(2, 2, 50, 60))
	b := RandomCase(newRand("x"), p, shape(2, 2, 50, 60), shape(2, 2, 50, 60))
	if firstDiff(a.Q, b.Q) >= 0 || firstDiff(a.Bias.Data, b.Bias.Data) >= 0 || firstDiff(a.Keep.Data, b.Keep.Data) >= 0 {
		t.Fatal("RandomCase differs for the same seed")
	}
	for _, x := range a.Q {
		if x < -1 || x > 1 {
			t.Fatalf("Q value %v outside [-1, 1]", x)
		}
	}
	inf, zero := 0, 0
	for i := range a.Bias.Data {
		if math.IsInf(float64(a.Bias.Data[i]), -1) {
			inf++
		} else if math.Abs(float64(a.Bias.Data[i])) > 2 {
			t.Fatalf("bias value %v outside [-2, 2]", a.Bias.Data[i])
		}
		if a.Keep.Data[i] == 0 {
			zero++
		}
	}
	n := float64(len(a.Bias.Data))
	if f := float64(inf) / n; f < 0.03 || f > 0.07 {
		t.Errorf("bias is %.3f -Inf, want about 0.05", f)
	}
	if f := float64(zero) / n; f < 0.2 || f > 0.3 {
		t.Errorf("keep is %.3f zeros, want about 0.25", f)
	}
}

// ReferenceRow gives bit for bit the row Reference gives, for every row
// of problems with GQA, BNHD, causal offsets, masks and fully masked rows.
func TestReferenceRow(t *testing.T) {
	for _, tt := range []struct {
		name       string
		p          backend.Problem
		bias, keep *[4]int
	}{
		{"gqa masks", backend.Problem{B: 2, H: 4, KVHeads: 2, Nq: 3, Nk: 5, D: 3, Dv: 2, Scale: 0.5}, shape(1, 4, 1, 5), shape(2, 1, 3, 1)},
		{"bnhd causal", backend.Problem{B: 1, H: 2, KVHeads: 1, Nq: 4, Nk: 7, D: 5, Dv: 3, Scale: 1, Causal: true, Layout: backend.BNHD}, nil, nil},
		{"masked rows", backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 6, Nk: 2, D: 2, Dv: 2, Scale: 1}, nil, shape(1, 1, 6, 2)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := RandomCase(newRand(tt.name), tt.p, tt.bias, tt.keep)
			w := Reference(c)
			p := c.Problem
			for b := range p.B {
				for h := range p.H {
					for i := range p.Nq {
						o, lse := ReferenceRow(c, b, h, i)
						want := w.O[p.OStrides().Offset(b, h, i):][:p.Dv]
						for d := range o {
							if o[d] != want[d] {
								t.Fatalf("row (%d,%d,%d) O[%d] = %v, Reference has %v", b, h, i, d, o[d], want[d])
							}
						}
						if wl := w.LSE[(b*p.H+h)*p.Nq+i]; lse != wl {
							t.Fatalf("row (%d,%d,%d) LSE = %v, Reference has %v", b, h, i, lse, wl)
						}
					}
				}
			}
		})
	}
}
