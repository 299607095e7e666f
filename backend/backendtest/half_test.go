package backendtest

import (
	"math"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
)

// TestDTypeCover checks that dtypeCover holds every pair of dtypes for
// every pair of operands, and each dtype for every operand alone.
func TestDTypeCover(t *testing.T) {
	col := func(d DTypes) []backend.DType { return []backend.DType{d.Q, d.K, d.V, d.O, d.Bias} }
	names := []string{"Q", "K", "V", "O", "bias"}
	for a := range names {
		for b := a + 1; b < len(names); b++ {
			for _, x := range backend.DTypes {
				for _, y := range backend.DTypes {
					found := false
					for _, d := range dtypeCover {
						found = found || col(d)[a] == x && col(d)[b] == y
					}
					if !found {
						t.Errorf("no row has %s %v with %s %v", names[a], x, names[b], y)
					}
				}
			}
		}
	}
	for _, x := range backend.DTypes {
		found := false
		for _, d := range dtypeCover {
			found = found || d == Same(x)
		}
		if !found {
			t.Errorf("no row stores every operand as %v", x)
		}
	}
}

// Allowed at worked points: Tol alone for Float32; half an ulp more for
// the halves, at the binade of |want| + Tol·s.
func TestAllowed(t *testing.T) {
	for _, c := range []struct {
		t            backend.DType
		want, rowMax float64
		allowed      float64
	}{
		{f32, 0.3, 0.5, Tol},
		{f32, 30, 40, 40 * Tol},
		{f16, 0.3, 0.5, Tol + 0x1p-13},        // 0.3 in [2⁻², 2⁻¹): ulp 2⁻¹²
		{f16, 1, 1, Tol + 0x1p-11},            // 1 + Tol in [1, 2): ulp 2⁻¹⁰
		{f16, 0.9999, 1, Tol + 0x1p-11},       // 0.9999 + Tol = 1: the binade above
		{f16, 1e-6, 1, Tol + 0x1p-25},         // subnormal: ulp 2⁻²⁴, but 1e-6 + Tol is normal
		{f16, 0, 0, Tol + 0x1p-25},            // Tol = 1e-4 is in [2⁻¹⁴, 2⁻¹³): ulp 2⁻²⁴
		{f16, 1e5, 1e5, 10 + 16},              // clamped to 65504; 65514 in [2¹⁵, 2¹⁶): ulp 32
		{f16, -1e30, 1e30, 1e26 + 16},         // clamped: at most half an ulp at 65504
		{bf16, 0.3, 0.5, Tol + 0x1p-10},       // ulp at 2⁻² is 2⁻⁹
		{bf16, 3, 3, 3*Tol + 0x1p-7},          // ulp at 2 is 2⁻⁶
		{bf16, -100, 200, 200*Tol + 0x1p-2},   // 100.02 in [64, 128): ulp 2⁻¹
		{f16, 1000.5, 1000.5, 0.10005 + 0.25}, // ulp at 512 is 0.5
	} {
		got := Allowed(c.t, c.want, c.rowMax)
		if Exceeds(math.Abs(got-c.allowed), 1e-12*math.Max(1, c.allowed)) {
			t.Errorf("Allowed(%v, %g, %g) = %g, want %g", c.t, c.want, c.rowMax, got, c.allowed)
		}
	}
	// Rounding any float32 within Tol·s of want to t lands within Allowed.
	rng := newRand("TestAllowed")
	for range 100000 {
		t16 := []backend.DType{f16, bf16}[rng.IntN(2)]
		want := math.Ldexp(2*rng.Float64()-1, rng.IntN(40)-24)
		rowMax := math.Abs(want) * (1 + rng.Float64())
		y := float32(want + (2*rng.Float64()-1)*Tol*math.Max(1, rowMax))
		got := float64(t16.Saturate(y))
		if d := math.Abs(got - saturated(t16, want)); Exceeds(d, Allowed(t16, saturated(t16, want), rowMax)) {
			t.Fatalf("%v: want %g, float32 %g stored as %g: |Δ| %g > Allowed %g", t16, want, y, got, d, Allowed(t16, want, rowMax))
		}
	}
}

// compare refuses an output that is not a value of its dtype even when
// it is closer to the reference than any value of the dtype: a backend
// that forgot to round.
func TestCompareNotDType(t *testing.T) {
	c := RandomCase(newRand("TestCompareNotDType"), prob(1, 1, 1, 2, 3, 4, 4), nil, nil).WithDTypes(DTypes{O: f16})
	want := Reference(c)
	got := result{O: make([]float32, len(want.O))}
	for i, w := range want.O {
		got.O[i] = f16.Round(float32(w))
	}
	if err := compare(c, want, got); err != nil {
		t.Fatalf("the outputs rounded to f16: %v", err)
	}
	for i, w := range want.O {
		got.O[i] = float32(w)
	}
	err := compare(c, want, got)
	if err == nil || !strings.Contains(err.Error(), "not a f16 value") {
		t.Fatalf("unrounded outputs: %v, want a report of values that are not f16's", err)
	}
	t.Log(err)
}

// WithDTypes rounds each operand to its own dtype, saturating, and leaves
// the original alone; check refuses a case whose values are not its
// dtypes'.
func TestWithDTypes(t *testing.T) {
	p := prob(1, 1, 1, 1, 2, 2, 2)
	c := Case{Problem: p, Q: []float32{1 + 0x1p-11, 1e5}, K: []float32{1 + 0x1p-8, 3, 1 + 3*0x1p-9, 1e-3}, V: []float32{0.1, 0.2, 0.3, 70000},
		Bias: &HostMask{Shape: [4]int{1, 1, 1, 2}, Data: []float32{negInf, 1 + 3*0x1p-8}}}
	if err := (Case{Problem: p, Q: c.Q, K: c.K, V: c.V, DTypes: DTypes{Q: f16}}).check(); err == nil {
		t.Error("check passed a Q of values f16 does not hold")
	}
	r := c.WithDTypes(DTypes{Q: f16, K: bf16, V: f32, O: f16, Bias: bf16})
	for _, x := range []struct {
		name      string
		got, want []float32
	}{
		{"Q", r.Q, []float32{1, 65504}},
		{"K", r.K, []float32{1, 3, 1 + 0x1p-7, bf16.Round(1e-3)}},
		{"V", r.V, c.V},
		{"bias", r.Bias.Data, []float32{negInf, 1 + 0x1p-6}},
		{"original Q", c.Q, []float32{1 + 0x1p-11, 1e5}},
	} {
		if i := firstDiff(x.got, x.want); i >= 0 {
			t.Errorf("%s = %v, want %v", x.name, x.got, x.want)
		}
	}
	if err := r.check(); err != nil {
		t.Error(err)
	}
	if s := r.String(); !strings.HasSuffix(s, "_Q:f16,K:bf16,V:f32,O:f16,bias:bf16") {
		t.Errorf("String() = %q, want the dtypes at the end", s)
	}
}
