package backendtest

import (
	"fmt"
	"math"

	"github.com/attn-go/attn/backend"
)

// Grads is the float64 gradient of a scalar loss L through attention,
// given dL/dO: the answer a backward pass is judged by. DQ, DK and DV
// are laid out as Q, K and V are (Problem.QRowsOf, KRowsOf, VRowsOf);
// DK and DV sum over the query heads of each KV group (GQA).
// DSinks is [H] (nil without sinks): the gradient of each sink logit.
// DBias is the bias's gradient over the bias's shape (nil without a
// bias): the scores' gradient summed over the dimensions the bias
// broadcasts.
type Grads struct {
	DQ, DK, DV []float64
	DSinks     []float64
	DBias      []float64
}

// ReferenceGrad computes the gradient of L = Σ O·dO through c's forward
// (Reference's definition) in float64 with plain loops, row by row:
//
//	dV[j]  += P_j · dO                    for each key j the row sees
//	dP_j    = dO · V_j
//	δ       = Σ_j P_j·dP_j  (= dO · O)
//	dS_j    = P_j · (dP_j − δ)          (= dBias[b,h,i,j], summed where the bias broadcasts)
//	dRaw_j  = dS_j · (1 − tanh²(raw_j/c))  with a softcap c, else dS_j
//	dQ     += scale·kscale · Σ_j dRaw_j · K_j
//	dK[j]  += scale·kscale · dRaw_j · Q
//	dSink  −= P_sink · δ                  (a sink has no value)
//
// ALiBi is a constant of the scores, and hidden keys get no gradient. dO
// is laid out as O (Problem.ORowsOf; packed when c is). A block mask's
// off blocks and the keys an index list does not name are hidden keys
// (Reference's rows). c must be valid with operands of the right
// lengths, and without paged sequences or V from K (the backward pass
// takes neither); ReferenceGrad panics otherwise.
func ReferenceGrad(c Case, dO []float32) Grads {
	p := c.Problem.Resolved()
	if err := c.check(); err != nil {
		panic("backendtest: ReferenceGrad: " + err.Error())
	}
	if p.Paged != nil || p.VFromK {
		panic("backendtest: ReferenceGrad: paged sequences and V from K are not covered")
	}
	if len(dO) != p.OLen() {
		panic(fmt.Sprintf("backendtest: ReferenceGrad: dO has %d values, want %d", len(dO), p.OLen()))
	}
	g := Grads{DQ: make([]float64, p.QLen()), DK: make([]float64, p.KLen()), DV: make([]float64, p.VLen())}
	if p.Sinks != nil {
		g.DSinks = make([]float64, p.H)
	}
	var bs [4]int
	if c.Bias != nil {
		g.DBias = make([]float64, len(c.Bias.Data))
		bs = (&backend.Mask{Shape: c.Bias.Shape}).Strides()
	}
	raw, capped, scores, masked, weights := make([]float64, p.Nk), make([]float64, p.Nk), make([]float64, p.Nk), make([]float64, p.Nk), make([]float64, p.Nk)
	out := make([]float64, p.Dv)
	for b := range p.B {
		for h := range p.H {
			kvh := h / (p.H / p.KVHeads)
			scale := float64(p.Scale) * float64(p.Scales.KScale(kvh))
			vScale := float64(p.Scales.VScale(kvh))
			for i := range refQRows(p, b) {
				clear(out)
				clear(weights) // row writes only the keys the row sees
				lse, empty := c.row(b, h, i, refRow{raw: raw, capped: capped, scores: scores, masked: masked, weights: weights, out: out})
				if empty && p.Sinks == nil {
					continue // no key, no sink: O = 0 whatever the inputs
				}
				do := dO[refAt(p, 3, b, h, i):][:p.Dv]
				delta := 0.0 // dO · O
				for d := range p.Dv {
					delta += float64(do[d]) * out[d]
				}
				qa := refAt(p, 0, b, h, i)
				for j := range p.Nk {
					pj := weights[j]
					if pj == 0 {
						continue
					}
					va, ka := refAt(p, 2, b, kvh, j), refAt(p, 1, b, kvh, j)
					dp := 0.0
					for d := range p.Dv {
						g.DV[va+d] += pj * vScale * float64(do[d])
						dp += float64(do[d]) * vScale * float64(c.V[va+d])
					}
					ds := pj * (dp - delta)
					if g.DBias != nil {
						g.DBias[b*bs[0]+h*bs[1]+i*bs[2]+j*bs[3]] += ds
					}
					if sc := float64(p.Softcap); sc > 0 {
						th := math.Tanh(raw[j] / sc)
						ds *= 1 - th*th
					}
					for d := range p.D {
						g.DQ[qa+d] += scale * ds * float64(c.K[ka+d])
						g.DK[ka+d] += scale * ds * float64(c.Q[qa+d])
					}
				}
				if p.Sinks != nil {
					g.DSinks[h] -= math.Exp(float64(p.Sinks[h])-lse) * delta
				}
			}
		}
	}
	return g
}

// NearGrad reports where got, a backend's gradient, is not within
// tol·max(1, max|want|) of want, ReferenceGrad's, entry by entry: an
// error naming the first such entry, or one whose lengths differ; nil
// when every entry is.
func NearGrad(name string, got []float32, want []float64, tol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s has %d values, the reference %d", name, len(got), len(want))
	}
	top := 1.0
	for _, w := range want {
		top = math.Max(top, math.Abs(w))
	}
	for i, w := range want {
		if d := math.Abs(float64(got[i]) - w); !(d <= tol*top) {
			return fmt.Errorf("%s[%d] = %v, reference %v (largest %v)", name, i, got[i], w, top)
		}
	}
	return nil
}
