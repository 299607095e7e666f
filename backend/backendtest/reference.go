package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/attn-go/attn/backend"
)

// Tol is the tolerance of every comparison the suite makes: a value passes
// when
//
//	|got − want| ≤ Tol · max(1, max |want| over the compared row)
//
// where a row is one query's scores or weights (Nk values), one query's
// output vector (Dv values) or one LSE value, and the maximum skips
// infinities. Float32 accumulation over head dims up to 128 and a few
// thousand keys stays well inside it; a wrong mask, index or scale does
// not.
const Tol = 1e-4

// HostMask is a bias or keep-mask on the host, dense row-major over Shape,
// each dimension either 1 (broadcast) or the full size of [B, H, Nq, Nk].
type HostMask struct {
	Shape [4]int
	Data  []float32
}

// at is the mask's value for element (b, h, i, j) of [B, H, Nq, Nk],
// broadcasting as backend.Mask.Strides says.
func (m *HostMask) at(b, h, i, j int) float32 {
	s := (&backend.Mask{Shape: m.Shape}).Strides()
	return m.Data[b*s[0]+h*s[1]+i*s[2]+j*s[3]]
}

// Case is one attention problem with its data on the host. Q, K and V are
// laid out as Problem.Layout says (backend.TensorStrides): Q has H heads of
// Nq rows of D, K has KVHeads heads of Nk rows of D, V has KVHeads heads of
// Nk rows of Dv.
//
// DTypes says how the runners store each operand on the device (the zero
// value: all Float32). Every value of an operand must be one its dtype
// holds (WithDTypes rounds them), so that the operands the backend reads
// are the ones Reference computes with.
type Case struct {
	backend.Problem
	Q, K, V []float32
	Bias    *HostMask // added to the scaled scores, may hold −Inf; nil for none
	Keep    *HostMask // 0 masks a key, any other value keeps it; nil for none
	DTypes  DTypes
}

// Want is the float64 answer to a Case.
type Want struct {
	// Raw, Capped, Scores and Masked are [B, H, Nq, Nk], the score
	// stages (backend.ScoreStage): Raw is scale·Q·Kᵀ, Capped is Raw
	// after the softcap, Scores adds the bias and ALiBi (what
	// Backend.Scores returns by default, no masking applied), and Masked
	// is Scores with every hidden key −Inf.
	Raw, Capped, Scores, Masked []float64
	// P is [B, H, Nq, Nk]: the softmax weights, exactly 0 for every key a
	// query may not see; a row that sees no key is all 0.
	P []float64
	// O is laid out like Q but with head dim Dv (Problem.OStrides).
	O []float64
	// LSE is [B, H, Nq]: log(Σ exp(score) over the keys a query sees +
	// exp(sink)); a row that sees no key has the sink's logit, or −Inf
	// without sinks.
	LSE []float64
	// Empty is [B, H, Nq]: true for a row that sees no key, whose output
	// must be exactly zero.
	Empty []bool
}

// Reference computes c in float64 with plain loops, the answer every
// backend is judged by. It is written to be checked by reading, with
// G = H/KVHeads, t = a_b + i the query's key position (a_b is
// CausalOffset when set, else KVLen(b) − Nq), c = Softcap, m = ALiBi:
//
//	raw[b,h,i,j]    = scale · Σ_d Q[b,h,i,d]·K[b,h/G,j,d]
//	capped          = c·tanh(raw/c) when c > 0, else raw
//	S[b,h,i,j]      = capped + bias[b,h,i,j] − m[h]·|t − j|
//	query i sees key j  ⇔  j < KVLen(b)
//	                       and (not causal or j ≤ t)
//	                       and (no window or t − Left ≤ j ≤ t + Right, −1 unbounded)
//	                       and keep[b,h,i,j] ≠ 0
//	                       and S[b,h,i,j] ≠ −Inf
//	masked          = S on seen keys, −Inf elsewhere
//	M   = max of S over the seen keys and the sink
//	Z   = Σ_seen exp(S − M) + exp(sink[h] − M)   (no sink term without sinks)
//	P   = exp(S − M) / Z on seen keys, 0 elsewhere
//	LSE = M + log Z; −Inf when i sees no key and there are no sinks
//	O[b,h,i,:] = Σ_j P[b,h,i,j] · V[b,h/G,j,:]
//
// c must be valid (Problem.Validate) with operands of the right lengths;
// Reference panics otherwise.
func Reference(c Case) Want {
	p := c.Problem.Resolved()
	if err := c.check(); err != nil {
		panic("backendtest: Reference: " + err.Error())
	}
	n := p.ScoresLen()
	w := Want{
		Raw: make([]float64, n), Capped: make([]float64, n),
		Scores: make([]float64, n), Masked: make([]float64, n),
		P:     make([]float64, n),
		O:     make([]float64, p.OLen()),
		LSE:   make([]float64, p.LSELen()),
		Empty: make([]bool, p.LSELen()),
	}
	for b := 0; b < p.B; b++ {
		for h := 0; h < p.H; h++ {
			for i := 0; i < refQRows(p, b); i++ {
				r := refLSE(p, b, h, i)
				at := ((b*p.H+h)*p.Nq + i) * p.Nk
				o := refAt(p, 3, b, h, i)
				w.LSE[r], w.Empty[r] = c.row(b, h, i, refRow{
					raw: w.Raw[at : at+p.Nk], capped: w.Capped[at : at+p.Nk],
					scores: w.Scores[at : at+p.Nk], masked: w.Masked[at : at+p.Nk],
					weights: w.P[at : at+p.Nk], out: w.O[o : o+p.Dv],
				})
			}
		}
	}
	return w
}

// ReferenceRow is Reference for the one query (b, h, i): its output vector
// (Dv values) and its LSE, at the cost of one row rather than the whole
// problem, so a long problem can be checked on a sample of its rows.
func ReferenceRow(c Case, b, h, i int) (o []float64, lse float64) {
	p := c.Problem.Resolved()
	if err := c.check(); err != nil {
		panic("backendtest: ReferenceRow: " + err.Error())
	}
	if b < 0 || b >= p.B || h < 0 || h >= p.H || i < 0 || i >= refQRows(p, b) {
		panic(fmt.Sprintf("backendtest: ReferenceRow: row (%d, %d, %d) outside B=%d H=%d Nq=%d", b, h, i, p.B, p.H, refQRows(p, max(0, min(b, p.B-1)))))
	}
	o = make([]float64, p.Dv)
	row := func() []float64 { return make([]float64, p.Nk) }
	lse, _ = c.row(b, h, i, refRow{raw: row(), capped: row(), scores: row(), masked: row(), weights: row(), out: o})
	return o, lse
}

// refRow is where row writes one query's results: Nk values each but
// out, which has Dv values and is zero on entry.
type refRow struct {
	raw, capped, scores, masked, weights, out []float64
}

// row computes query (b, h, i) into r and returns its LSE and whether it
// sees no key.
func (c Case) row(b, h, i int, r refRow) (lse float64, empty bool) {
	p := c.Problem.Resolved()
	kvh := h / (p.H / p.KVHeads)
	// The rows' places (dense, packed: a sequence's rows from its
	// cu_seqlens entry, or paged: a key's page from the block table) come
	// from refAt, as the docs lay them out (locate.go).
	// The scales of K and V (backend.Scales) multiply the stored values:
	// the scores by K's, the output by V's.
	scale := float64(p.Scale) * float64(p.Scales.KScale(kvh))
	vScale := float64(p.Scales.VScale(kvh))
	kvLen := refKVLen(p, b)
	t := refAlign(p, b) + i // KVLen(b) − QRows(b) + i, or CausalOffset + i

	// The scores of keys past the key length are computed where K holds
	// them (dense K); packed and paged K have no such rows.
	scored := p.Nk
	if p.Packed != nil || p.Paged != nil {
		scored = kvLen
	}
	for j := 0; j < scored; j++ {
		dot := 0.0
		for d := 0; d < p.D; d++ {
			dot += float64(c.Q[refAt(p, 0, b, h, i)+d]) * float64(c.K[refAt(p, 1, b, kvh, j)+d])
		}
		r.raw[j] = scale * dot
		r.capped[j] = r.raw[j]
		if sc := float64(p.Softcap); sc > 0 {
			r.capped[j] = sc * math.Tanh(r.raw[j]/sc)
		}
		r.scores[j] = r.capped[j]
		if c.Bias != nil {
			r.scores[j] += float64(c.Bias.at(b, h, i, j))
		}
		if p.ALiBi != nil {
			r.scores[j] -= float64(p.ALiBi[h]) * math.Abs(float64(t-j))
		}
	}

	// An index list (backend.Indices) names the only keys the row may
	// see; the masks below hide more of them.
	var named []bool
	if ix := p.Indices; ix != nil {
		named = make([]bool, p.Nk)
		for _, j := range refIndexList(p, b, kvh, i) {
			if j >= 0 {
				named[j] = true
			}
		}
	}
	seen := make([]bool, p.Nk)
	m := math.Inf(-1)
	for j := 0; j < p.Nk; j++ {
		seen[j] = !math.IsInf(r.scores[j], -1) && j < kvLen && (named == nil || named[j]) &&
			(p.Blocks == nil || refBlockOn(p.Blocks, b, h, i, j))
		if p.Causal && j > t {
			seen[j] = false
		}
		if w := p.Window; w != nil && (w.Left >= 0 && j < t-w.Left || w.Right >= 0 && j > t+w.Right) {
			seen[j] = false
		}
		if c.Keep != nil && c.Keep.at(b, h, i, j) == 0 {
			seen[j] = false
		}
		r.masked[j] = math.Inf(-1)
		if seen[j] && j < scored {
			r.masked[j] = r.scores[j]
			m = max(m, r.scores[j])
		}
	}
	empty = math.IsInf(m, -1)
	sum := 0.0
	if p.Sinks != nil {
		sink := float64(p.Sinks[h])
		m = max(m, sink)
		sum = math.Exp(sink - m)
	}
	if math.IsInf(m, -1) {
		// No key is seen and there is no sink: weights and output stay 0.
		return m, true
	}
	for j := 0; j < p.Nk; j++ {
		if seen[j] {
			r.weights[j] = math.Exp(r.scores[j] - m)
			sum += r.weights[j]
		}
	}
	for j := 0; j < p.Nk; j++ {
		r.weights[j] /= sum
	}
	for j := 0; j < kvLen; j++ {
		for d := 0; d < p.Dv; d++ {
			r.out[d] += r.weights[j] * vScale * float64(c.V[refAt(p, 2, b, kvh, j)+d])
		}
	}
	return m + math.Log(sum), empty
}

// check reports whether c is a valid problem with operands of the right
// lengths.
func (c Case) check() error {
	p := c.Problem.Resolved()
	if err := p.Validate(); err != nil {
		return err
	}
	for _, op := range []struct {
		name string
		got  int
		want int
	}{
		{"Q", len(c.Q), p.QLen()},
		{"K", len(c.K), p.KLen()},
		{"V", len(c.V), p.VLen()},
	} {
		if op.got != op.want {
			return fmt.Errorf("case %v: %s has %d values, want %d", c, op.name, op.got, op.want)
		}
	}
	if p.VFromK {
		if c.DTypes.V != c.DTypes.K {
			return fmt.Errorf("case %v: V from K is stored as K is, %v, not %v", c, c.DTypes.K, c.DTypes.V)
		}
		if i := firstDiff(c.V, c.K); i >= 0 {
			return fmt.Errorf("case %v: V from K: V element %d is %g, K's %g", c, i, c.V[i], c.K[i])
		}
	}
	for _, m := range []struct {
		name string
		m    *HostMask
	}{{"bias", c.Bias}, {"keep", c.Keep}} {
		if m.m == nil {
			continue
		}
		full := [4]int{p.B, p.H, p.Nq, p.Nk}
		for d, n := range m.m.Shape {
			if n != 1 && n != full[d] {
				return fmt.Errorf("case %v: %s shape %v does not broadcast to %v", c, m.name, m.m.Shape, full)
			}
		}
		if n := shapeLen(m.m.Shape); len(m.m.Data) != n {
			return fmt.Errorf("case %v: %s has %d values, its shape %v needs %d", c, m.name, len(m.m.Data), m.m.Shape, n)
		}
	}
	return c.checkDTypes()
}

func shapeLen(s [4]int) int { return s[0] * s[1] * s[2] * s[3] }

// String describes c's shape and options in one line, the way the suite
// names its subtests.
func (c Case) String() string {
	var bias, keep *[4]int
	if c.Bias != nil {
		bias = &c.Bias.Shape
	}
	if c.Keep != nil {
		keep = &c.Keep.Shape
	}
	s := describe(c.Problem, bias, keep)
	if c.DTypes != (DTypes{}) {
		s += "_" + c.DTypes.String()
	}
	return s
}

// describe names a problem: B2_H4_KV2_Nq63_Nk65_D40_Dv24 and then the
// options that differ from the default (BHND, scale 1/√D, no masks).
func describe(p backend.Problem, bias, keep *[4]int) string {
	s := fmt.Sprintf("B%d_H%d_KV%d_Nq%d_Nk%d_D%d_Dv%d", p.B, p.H, p.KVHeads, p.Nq, p.Nk, p.D, p.Dv)
	if p.Layout != backend.BHND {
		s += "_" + p.Layout.String()
	}
	if p.Causal {
		s += "_causal"
	}
	if p.D < 1 || p.Scale != defaultScale(p.D) {
		s += fmt.Sprintf("_scale%g", p.Scale)
	}
	if bias != nil {
		s += fmt.Sprintf("_bias[%d,%d,%d,%d]", bias[0], bias[1], bias[2], bias[3])
	}
	if keep != nil {
		s += fmt.Sprintf("_keep[%d,%d,%d,%d]", keep[0], keep[1], keep[2], keep[3])
	}
	v := p.Variants
	if v.CausalOffset != nil {
		s += fmt.Sprintf("_offset%d", *v.CausalOffset)
	}
	if v.Window != nil {
		s += fmt.Sprintf("_window%d,%d", v.Window.Left, v.Window.Right)
	}
	if v.Softcap != 0 {
		s += fmt.Sprintf("_softcap%g", v.Softcap)
	}
	if v.ALiBi != nil {
		s += fmt.Sprintf("_alibi%v", v.ALiBi)
	}
	if v.Sinks != nil {
		s += fmt.Sprintf("_sinks%v", v.Sinks)
	}
	if v.KVLens != nil {
		s += fmt.Sprintf("_kvlens%v", v.KVLens)
	}
	if p.VFromK {
		s += "_vfromk"
	}
	if pk := p.Packed; pk != nil {
		s += fmt.Sprintf("_cuq%v", pk.CuQ)
		if pk.CuK != nil {
			s += fmt.Sprintf("_cuk%v", pk.CuK)
		}
	}
	if pg := p.Paged; pg != nil {
		s += fmt.Sprintf("_pages%dx%d", pg.Pages, pg.PageSize)
		if len(pg.Table) <= 16 {
			s += fmt.Sprintf("_table%v", pg.Table)
		}
	}
	return s
}

func defaultScale(d int) float32 { return float32(1 / math.Sqrt(float64(d))) }

// RandomCase fills problem p with random data from rng: Q, K and V
// uniform in [−1, 1]; when bias is not nil, a bias of that shape uniform in
// [−2, 2] with about 5% −Inf; when keep is not nil, a keep-mask of that
// shape with about 25% zeros (the values kept are mostly 1, sometimes other
// non-zero values, since any non-zero value keeps). p must be valid and
// the shapes must broadcast to [B, H, Nq, Nk]; RandomCase panics
// otherwise. The case is all Float32: RandomCase(…).WithDTypes(dt) is
// one whose operands are stored as dt, the data rounded to them.
func RandomCase(rng *rand.Rand, p backend.Problem, bias, keep *[4]int) Case {
	if err := p.Validate(); err != nil {
		panic("backendtest: RandomCase: " + err.Error())
	}
	// The case keeps p as given, zero defaults included, so that a
	// backend is tested on resolving them; the operands' sizes are the
	// resolved ones.
	r := p.Resolved()
	c := Case{
		Problem: p,
		Q:       uniform(rng, r.QLen(), 1),
		K:       uniform(rng, r.KLen(), 1),
		V:       uniform(rng, r.VLen(), 1),
	}
	if p.VFromK {
		c.V = c.K
	}
	if bias != nil {
		m := &HostMask{Shape: *bias, Data: uniform(rng, shapeLen(*bias), 2)}
		for i := range m.Data {
			if rng.Float64() < 0.05 {
				m.Data[i] = float32(math.Inf(-1))
			}
		}
		c.Bias = m
	}
	if keep != nil {
		m := &HostMask{Shape: *keep, Data: make([]float32, shapeLen(*keep))}
		kept := []float32{1, 1, 1, 1, 1, 1, -1, 0.5, 3}
		for i := range m.Data {
			if rng.Float64() >= 0.25 {
				m.Data[i] = kept[rng.IntN(len(kept))]
			}
		}
		c.Keep = m
	}
	if err := c.check(); err != nil {
		panic("backendtest: RandomCase: " + err.Error())
	}
	return c
}

// uniform returns n values uniform in [−r, r].
func uniform(rng *rand.Rand, n int, r float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r * (2*rng.Float64() - 1))
	}
	return x
}
