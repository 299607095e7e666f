package backendtest

import (
	"fmt"
	"math"

	"github.com/attn-go/attn/backend"
)

// DTypes are the storage dtypes of a Case's operands on the device; the
// zero value stores everything as Float32. The keep-mask, the scores, the
// weights and the LSE are Float32 whatever these say (the contract).
type DTypes struct {
	Q, K, V, O, Bias backend.DType
}

// Same is every operand in dtype t.
func Same(t backend.DType) DTypes { return DTypes{t, t, t, t, t} }

// String names the dtypes as the suite's subtests do:
// Q:f16,K:f16,V:bf16,O:f32,bias:f16.
func (d DTypes) String() string {
	return fmt.Sprintf("Q:%v,K:%v,V:%v,O:%v,bias:%v", d.Q, d.K, d.V, d.O, d.Bias)
}

// Half says whether any operand is stored as a half dtype, so that only a
// backend with Caps.Half can run the case.
func (d DTypes) Half() bool {
	return d.Q.Half() || d.K.Half() || d.V.Half() || d.O.Half() || d.Bias.Half()
}

// Quant says whether K or V is stored in an 8-bit dtype (backend.Q8,
// backend.FP8), so that only Fused, on a backend with Caps.Quant8, can
// run the case.
func (d DTypes) Quant() bool { return d.K.Quantized() || d.V.Quantized() }

// BF16Arithmetic says whether Q, K and V are all BFloat16: the caller's
// choice of bfloat16 precision, under which the contract lets a backend
// multiply in bfloat16 with float32 sums, P rounded to bfloat16 for P·V
// (backend's doc, "Storage dtypes"). O may then be off by 2⁻⁸·Σ_j w_j|v_j|
// more, which BF16Slack bounds.
func (d DTypes) BF16Arithmetic() bool {
	return d.Q == backend.BFloat16 && d.K == backend.BFloat16 && d.V == backend.BFloat16
}

// BF16Slack is the most rounding P to bfloat16 may move an output of a
// case whose V is v: 2⁻⁸ (bfloat16's unit roundoff: half a unit in the
// last place of its 8-bit significand, relative) times max|v|, which bounds Σ_j w_j|v_j| since the weights
// sum to at most 1.
func BF16Slack(v []float32) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(float64(x)))
	}
	return 0x1p-8 * m
}

// WithDTypes returns a copy of c whose operands are stored as dt, each
// value rounded to its operand's dtype as Backend.Write rounds it
// (DType.Encode: to nearest, ties to even); a finite value beyond the
// dtype's range, which Write would refuse, becomes ±MaxFinite
// (DType.Saturate). Reference on the result computes with the very
// values a backend reads. c's own slices are left alone.
func (c Case) WithDTypes(dt DTypes) Case {
	c.DTypes = dt
	p := c.Problem.Resolved()
	c.Q, c.K, c.V = rounded(dt.Q, c.Q, p.D), rounded(dt.K, c.K, p.D), rounded(dt.V, c.V, p.Dv)
	if c.VFromK { // V is K's values, stored once, in K's dtype
		c.DTypes.V, c.V = dt.K, c.K
	}
	if c.Bias != nil {
		c.Bias = &HostMask{Shape: c.Bias.Shape, Data: rounded(dt.Bias, c.Bias.Data, 1)}
	}
	return c
}

// rounded is x (rows of dim values) rounded to t.
func rounded(t backend.DType, x []float32, dim int) []float32 {
	if x == nil {
		return nil
	}
	out := make([]float32, len(x))
	if t.Quantized() {
		if err := t.RoundRows(out, x, dim); err != nil {
			panic("backendtest: WithDTypes: " + err.Error())
		}
		return out
	}
	for i, v := range x {
		out[i] = t.Saturate(v)
	}
	return out
}

// checkDTypes reports an operand value that its dtype does not hold, or
// a dtype that is not one (Bias without a bias is not looked at).
func (c Case) checkDTypes() error {
	p := c.Problem.Resolved()
	if c.VFromK {
		p.Dv = p.D // V is K's rows
	}
	for _, op := range []struct {
		name string
		t    backend.DType
		x    []float32
		dim  int
	}{
		{"Q", c.DTypes.Q, c.Q, p.D}, {"K", c.DTypes.K, c.K, p.D}, {"V", c.DTypes.V, c.V, p.Dv},
		{"O", c.DTypes.O, nil, p.Dv}, {"bias", c.DTypes.Bias, maskData(c.Bias), 1},
	} {
		if !op.t.Valid() && !(op.t.Quantized() && (op.name == "K" || op.name == "V")) {
			return fmt.Errorf("case %v: %s has dtype %v", c, op.name, op.t)
		}
		if op.t.Quantized() {
			r := make([]float32, len(op.x))
			if err := op.t.RoundRows(r, op.x, op.dim); err != nil {
				return backend.Wrapf(err, "case %v: %s", c, op.name)
			}
			if i := firstDiff(r, op.x); i >= 0 {
				return fmt.Errorf("case %v: %s element %d is %g, not what %v stores (round the case with WithDTypes)", c, op.name, i, op.x[i], op.t)
			}
			continue
		}
		for i, x := range op.x {
			if r := op.t.Round(x); r != x && x == x {
				return fmt.Errorf("case %v: %s element %d is %g, not a %v value (round the case with WithDTypes)", c, op.name, i, x, op.t)
			}
		}
	}
	return nil
}

func maskData(m *HostMask) []float32 {
	if m == nil {
		return nil
	}
	return m.Data
}

// Allowed is how far from want a value of an output stored as dtype t may
// be, in a row whose largest |want| (infinities skipped) is rowMax: the
// float32 tolerance plus the rounding to t,
//
//	Tol·s + ½ulp_t(min(|w| + Tol·s, t.MaxFinite)),   s = max(1, rowMax)
//
// where w is want clamped to ±t.MaxFinite (a finite value beyond t's
// range is stored as ±MaxFinite, DType.Saturate) and ½ulp_t(x) is half the
// distance between t's values around x: 0 for Float32;
// 2⁻¹¹·2^⌊log₂ x⌋ (at most 2⁻¹¹·x) for Float16, 2⁻²⁵ below its smallest
// normal 2⁻¹⁴; 2⁻⁸·2^⌊log₂ x⌋ (at most 2⁻⁸·x) for BFloat16. The float32
// result is within Tol·s of want, and storing it as t moves it by at most
// half an ulp at its own magnitude, which is at most |w| + Tol·s, or
// clamps it to ±MaxFinite, no farther from w than the float32 result.
// Compare w, not want, with what the backend returned.
func Allowed(t backend.DType, want, rowMax float64) float64 {
	tol := Tol * max(1, rowMax)
	m := float64(t.MaxFinite())
	return tol + halfULP(t, math.Min(math.Min(math.Abs(want), m)+tol, m))
}

// saturated is want as an output of dtype t holds it: clamped to
// ±t.MaxFinite (infinities and NaN as they are).
func saturated(t backend.DType, want float64) float64 {
	if m := float64(t.MaxFinite()); !math.IsInf(want, 0) && math.Abs(want) > m {
		return math.Copysign(m, want)
	}
	return want
}

// halfULP is half the spacing of t's values at magnitude x ≥ 0 (the
// spacing of the binade x lies in; of the subnormals below the smallest
// normal).
func halfULP(t backend.DType, x float64) float64 {
	var frac, minExp int // fraction bits; exponent of the smallest normal
	switch t {
	case backend.Float16:
		frac, minExp = 10, -14
	case backend.BFloat16:
		frac, minExp = 7, -126
	default:
		return 0
	}
	_, e := math.Frexp(x) // x = m·2^e, ½ ≤ m < 1: 2^(e−1) ≤ x < 2^e
	return math.Ldexp(1, max(e-1, minExp)-frac-1)
}
