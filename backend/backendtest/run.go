package backendtest

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/attn-go/attn/backend"
)

// Every buffer the runners allocate is pad elements longer than its
// operand. An input's padding holds NaN, so a backend that reads past an
// operand shows it in its output; an output's padding holds padValue,
// which must survive the op.
const pad = 5

var (
	padValue = float32(-7777.25)
	// unwritten fills an output before the op, so an element the backend
	// forgets to write is a NaN and fails the comparison.
	unwritten = float32(math.NaN())
)

// result holds what a backend returned for a case. S is only set by the
// staged path, LSE only when asked for.
type result struct {
	S, P, O, LSE []float32
	// Stages holds the scores Backend.Scores returned at the stages
	// other than StageBiased (which is S), when the backend claims the
	// variants.
	Stages map[backend.ScoreStage][]float32
}

// RunFused uploads c to be, each operand in its dtype (c.DTypes), runs
// be.Fused (with an LSE buffer when withLSE), reads O (and LSE) back and
// compares them with Reference(c) within Tol, O within Allowed for its
// dtype.
// It also checks that the backend wrote every output element and nothing
// past the end of an output, and that Q, K, V and the masks are bitwise
// unchanged afterwards. It returns nil or an error naming the worst and
// first mismatch of each operand.
func RunFused(ctx context.Context, be backend.Backend, c Case, withLSE bool) error {
	if err := c.check(); err != nil {
		return err
	}
	got, err := execFused(ctx, be, c, withLSE)
	if err != nil {
		return backend.Wrapf(err, "fused %v", c)
	}
	if err := compare(c, Reference(c), got); err != nil {
		return fmt.Errorf("fused %v (LSE %t):\n%w", c, withLSE, err)
	}
	return nil
}

// RunStaged runs c through be.Scores, be.Softmax (with an LSE buffer when
// withLSE) and be.Context, reading the scores, the weights and the output
// back after each step and comparing each with Reference(c) within Tol
// (O within Allowed for its dtype).
// It makes the same checks on inputs and outputs as RunFused, and checks
// that Context leaves the weights unchanged.
func RunStaged(ctx context.Context, be backend.Backend, c Case, withLSE bool) error {
	if err := c.check(); err != nil {
		return err
	}
	got, err := execStaged(ctx, be, c, withLSE)
	if err != nil {
		return backend.Wrapf(err, "staged %v", c)
	}
	if err := compare(c, Reference(c), got); err != nil {
		return fmt.Errorf("staged %v (LSE %t):\n%w", c, withLSE, err)
	}
	return nil
}

// session holds the buffers one run allocated and what it wrote into the
// inputs, so that it can check them afterwards and release them.
type session struct {
	be     backend.Backend
	pad    int // elements past each operand: pad for the runners, 0 for Upload
	bufs   []backend.Buffer
	inputs []input
}

type input struct {
	name string
	buf  backend.Buffer
	data []float32 // everything written, padding included, as stored
}

func (s *session) release() {
	for _, b := range s.bufs {
		b.Release()
	}
}

func (s *session) alloc(name string, t backend.DType, n int) (backend.Buffer, error) {
	var buf backend.Buffer
	err := guard(func() error {
		var err error
		buf, err = s.be.Alloc(t, n)
		return err
	})
	if err != nil {
		return nil, backend.Wrapf(err, "Alloc(%v, %d) for %s", t, n, name)
	}
	if buf == nil {
		return nil, fmt.Errorf("Alloc(%v, %d) for %s returned a nil Buffer", t, n, name)
	}
	s.bufs = append(s.bufs, buf)
	if buf.Len() != n {
		return nil, fmt.Errorf("Alloc(%v, %d) for %s: Len() = %d", t, n, name, buf.Len())
	}
	if buf.DType() != t {
		return nil, fmt.Errorf("Alloc(%v, %d) for %s: DType() = %v", t, n, name, buf.DType())
	}
	return buf, nil
}

func (s *session) write(name string, buf backend.Buffer, data []float32) error {
	if err := guard(func() error { return s.be.Write(buf, 0, data) }); err != nil {
		return backend.Wrapf(err, "Write %s (%d values)", name, len(data))
	}
	return nil
}

func (s *session) read(name string, buf backend.Buffer, n int) ([]float32, error) {
	data := make([]float32, n)
	if err := guard(func() error { return s.be.Read(data, buf, 0) }); err != nil {
		return nil, backend.Wrapf(err, "Read %s (%d values)", name, n)
	}
	return data, nil
}

// in uploads an input operand as dtype t followed by NaN padding.
func (s *session) in(name string, t backend.DType, data []float32) (backend.Buffer, error) {
	padded := append(append([]float32(nil), data...), nans(s.pad)...)
	if t.Quantized() {
		// An 8-bit buffer holds no NaN (q8 refuses one, fp8 has no
		// infinity to tell): whole blocks of large values instead, which
		// a read past the operand's end would show in the outputs.
		padded = padded[:len(data)]
		for i := range (s.pad + t.Block() - 1) / t.Block() * t.Block() {
			padded = append(padded, float32(300+i%7))
		}
	}
	buf, err := s.alloc(name, t, len(padded))
	if err != nil {
		return nil, err
	}
	if err := s.write(name, buf, padded); err != nil {
		return nil, err
	}
	if t.Quantized() {
		if err := t.RoundSlice(padded, padded); err != nil {
			return nil, err
		}
	}
	for i, x := range padded {
		padded[i] = t.Round(x) // what Read gives back: x itself, or NaN
	}
	s.inputs = append(s.inputs, input{name, buf, padded})
	return buf, nil
}

// mask uploads a host mask as an input of dtype t.
func (s *session) mask(name string, t backend.DType, m *HostMask) (*backend.Mask, error) {
	if m == nil {
		return nil, nil
	}
	buf, err := s.in(name, t, m.Data)
	if err != nil {
		return nil, err
	}
	return &backend.Mask{Buf: buf, Shape: m.Shape}, nil
}

// out allocates an output of n values of dtype t filled with unwritten
// and followed by padValue padding.
func (s *session) out(name string, t backend.DType, n int) (backend.Buffer, error) {
	buf, err := s.alloc(name, t, n+s.pad)
	if err != nil {
		return nil, err
	}
	fill := make([]float32, n+s.pad)
	for i := range fill {
		fill[i] = unwritten
		if i >= n {
			fill[i] = padValue
		}
	}
	return buf, s.write(name, buf, fill)
}

// result reads an output's n values back and checks its padding, which
// holds padValue as buf's dtype stores it.
func (s *session) result(name string, buf backend.Buffer, n int) ([]float32, error) {
	data, err := s.read(name, buf, n+s.pad)
	if err != nil {
		return nil, err
	}
	want := buf.DType().Round(padValue)
	for i := n; i < n+s.pad; i++ {
		if math.Float32bits(data[i]) != math.Float32bits(want) {
			return nil, fmt.Errorf("%s: element %d past its %d values was overwritten (now %v)", name, i, n, data[i])
		}
	}
	return data[:n], nil
}

// checkInputs reads every input back and reports the first that changed.
func (s *session) checkInputs(when string) error {
	for _, in := range s.inputs {
		got, err := s.read(in.name, in.buf, len(in.data))
		if err != nil {
			return err
		}
		if in.buf.DType().Half() {
			// A half NaN's payload is the backend's (Write stores a
			// NaN): any NaN for any NaN.
			for i := range got {
				if got[i] != got[i] && in.data[i] != in.data[i] {
					got[i] = in.data[i]
				}
			}
		}
		if i := firstDiff(got, in.data); i >= 0 {
			return fmt.Errorf("input %s modified by %s: element %d was %v, now %v", in.name, when, i, in.data[i], got[i])
		}
	}
	return nil
}

// firstDiff is the first index where a and b differ bitwise, or −1.
func firstDiff(a, b []float32) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

func nans(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(math.NaN())
	}
	return x
}

// guard runs f, turning a panic into a *panicError.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{r}
		}
	}()
	return f()
}

// panicError is a panic caught by guard: a backend must never panic on
// bad input.
type panicError struct{ v any }

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.v) }

// Operands are a Case's inputs on a backend.
type Operands struct {
	Q, K, V    backend.Buffer
	Bias, Keep *backend.Mask // nil when the case has none
}

// Release releases every buffer of o.
func (o Operands) Release() {
	for _, b := range []backend.Buffer{o.Q, o.K, o.V, o.Bias.Buffer(), o.Keep.Buffer()} {
		if b != nil {
			b.Release()
		}
	}
}

// Upload allocates c's operands on be, each exactly as long as it is and
// stored in its dtype (c.DTypes; the keep-mask is Float32), and writes
// them. The caller releases them; on an error Upload releases what it
// allocated.
func Upload(be backend.Backend, c Case) (Operands, error) {
	if err := c.check(); err != nil {
		return Operands{}, err
	}
	s := &session{be: be}
	ops, err := s.upload(c)
	if err != nil {
		s.release()
		return Operands{}, err
	}
	return ops, nil
}

// upload uploads the operands of c: Q, K, V and the masks it has, each
// in its dtype.
func (s *session) upload(c Case) (ops Operands, err error) {
	dt := c.DTypes
	if ops.Q, err = s.in("Q", dt.Q, c.Q); err != nil {
		return
	}
	// An 8-bit K's and V's rows at their pitch (q8: whole blocks).
	p := c.Problem.Resolved()
	if ops.K, err = s.in("K", dt.K, dt.K.PitchRows(c.K, p.D)); err != nil {
		return
	}
	if c.VFromK { // V is K's buffer
		ops.V = ops.K
	} else if ops.V, err = s.in("V", dt.V, dt.V.PitchRows(c.V, p.Dv)); err != nil {
		return
	}
	if ops.Bias, err = s.mask("bias", dt.Bias, c.Bias); err != nil {
		return
	}
	ops.Keep, err = s.mask("keep", backend.Float32, c.Keep)
	return
}

// execFused runs c through be.Fused and returns what came back, having
// checked the inputs and the outputs' padding.
func execFused(ctx context.Context, be backend.Backend, c Case, withLSE bool) (result, error) {
	var r result
	p := c.Problem.Resolved()
	s := &session{be: be, pad: pad}
	defer s.release()

	ops, err := s.upload(c)
	if err != nil {
		return r, err
	}
	q, k, v, bias, keep := ops.Q, ops.K, ops.V, ops.Bias, ops.Keep
	o, err := s.out("O", c.DTypes.O, p.OLen())
	if err != nil {
		return r, err
	}
	var lse backend.Buffer
	if withLSE {
		if lse, err = s.out("LSE", backend.Float32, p.LSELen()); err != nil {
			return r, err
		}
	}

	params := backend.FusedParams{Problem: c.Problem, Bias: bias, Keep: keep}
	if err := guard(func() error { return be.Fused(ctx, params, q, k, v, o, lse) }); err != nil {
		return r, backend.Wrapf(err, "Fused")
	}
	if r.O, err = s.result("O", o, p.OLen()); err != nil {
		return r, err
	}
	if withLSE {
		if r.LSE, err = s.result("LSE", lse, p.LSELen()); err != nil {
			return r, err
		}
	}
	return r, s.checkInputs("Fused")
}

// execStaged runs c through be.Scores, be.Softmax and be.Context and
// returns the scores, weights and output, having checked the inputs and
// the outputs' padding after each step.
func execStaged(ctx context.Context, be backend.Backend, c Case, withLSE bool) (result, error) {
	var r result
	p := c.Problem.Resolved()
	s := &session{be: be, pad: pad}
	defer s.release()

	ops, err := s.upload(c)
	if err != nil {
		return r, err
	}
	q, k, v, bias, keep := ops.Q, ops.K, ops.V, ops.Bias, ops.Keep
	sp, err := s.out("scores", backend.Float32, p.ScoresLen())
	if err != nil {
		return r, err
	}
	o, err := s.out("O", c.DTypes.O, p.OLen())
	if err != nil {
		return r, err
	}
	var lse backend.Buffer
	if withLSE {
		if lse, err = s.out("LSE", backend.Float32, p.LSELen()); err != nil {
			return r, err
		}
	}

	if be.Caps().Variants {
		// Every other stage, each into the scores buffer in turn; the
		// biased stage Softmax reads comes last.
		r.Stages = map[backend.ScoreStage][]float32{}
		for _, st := range []backend.ScoreStage{backend.StageRaw, backend.StageCapped, backend.StageMasked} {
			scores := backend.ScoresParams{Problem: c.Problem, Bias: bias, Keep: keep, Stage: st}
			if err := guard(func() error { return be.Scores(ctx, scores, q, k, sp) }); err != nil {
				return r, backend.Wrapf(err, "Scores at stage %v", st)
			}
			if r.Stages[st], err = s.result("scores "+st.String(), sp, p.ScoresLen()); err != nil {
				return r, err
			}
		}
	}
	scores := backend.ScoresParams{Problem: c.Problem, Bias: bias}
	if err := guard(func() error { return be.Scores(ctx, scores, q, k, sp) }); err != nil {
		return r, backend.Wrapf(err, "Scores")
	}
	if r.S, err = s.result("scores", sp, p.ScoresLen()); err != nil {
		return r, err
	}
	if err := s.checkInputs("Scores"); err != nil {
		return r, err
	}

	softmax := backend.SoftmaxParams{Problem: c.Problem, Keep: keep, LSE: lse}
	if err := guard(func() error { return be.Softmax(ctx, softmax, sp) }); err != nil {
		return r, backend.Wrapf(err, "Softmax")
	}
	if r.P, err = s.result("weights", sp, p.ScoresLen()); err != nil {
		return r, err
	}
	if withLSE {
		if r.LSE, err = s.result("LSE", lse, p.LSELen()); err != nil {
			return r, err
		}
	}
	if err := s.checkInputs("Softmax"); err != nil {
		return r, err
	}

	// From here on the weights are an input too.
	weights := append([]float32(nil), r.P...)
	for range pad {
		weights = append(weights, padValue)
	}
	s.inputs = append(s.inputs, input{"weights", sp, weights})
	if err := guard(func() error { return be.Context(ctx, backend.ContextParams{Problem: c.Problem}, sp, v, o) }); err != nil {
		return r, backend.Wrapf(err, "Context")
	}
	if r.O, err = s.result("O", o, p.OLen()); err != nil {
		return r, err
	}
	return r, s.checkInputs("Context")
}

// compare checks every operand got holds against want, and joins the
// reports of those that are off.
func compare(c Case, want Want, got result) error {
	p := c.Problem.Resolved()
	var errs []error
	if got.S != nil {
		r := newReport("scores", "j")
		forRows(p, func(b, h, i, row int) {
			at := row * p.Nk
			r.row(b, h, i, got.S[at:at+p.Nk], want.Scores[at:at+p.Nk], false)
		})
		errs = append(errs, r.err())
	}
	for _, st := range []struct {
		stage backend.ScoreStage
		want  []float64
	}{{backend.StageRaw, want.Raw}, {backend.StageCapped, want.Capped}, {backend.StageMasked, want.Masked}} {
		g := got.Stages[st.stage]
		if g == nil {
			continue
		}
		r := newReport(st.stage.String()+" scores", "j")
		forRows(p, func(b, h, i, row int) {
			at := row * p.Nk
			r.row(b, h, i, g[at:at+p.Nk], st.want[at:at+p.Nk], false)
		})
		errs = append(errs, r.err())
	}
	if got.P != nil {
		r := newReport("weights", "j")
		forRows(p, func(b, h, i, row int) {
			at := row * p.Nk
			r.row(b, h, i, got.P[at:at+p.Nk], want.P[at:at+p.Nk], true)
		})
		errs = append(errs, r.err())
	}
	if got.LSE != nil {
		r := newReport("LSE", "")
		forRows(p, func(b, h, i, _ int) {
			at := p.LSEOffset(b, h, i)
			r.row(b, h, i, got.LSE[at:at+1], want.LSE[at:at+1], false)
		})
		errs = append(errs, r.err())
	}
	if got.O != nil {
		r := newReport("O", "d")
		r.dtype = c.DTypes.O
		if c.DTypes.BF16Arithmetic() {
			r.slack = BF16Slack(c.V)
		}
		os := p.ORowsOf()
		forRows(p, func(b, h, i, _ int) {
			at := os.Offset(b, h, i)
			// A row that sees no key must be exactly zero.
			r.row(b, h, i, got.O[at:at+p.Dv], want.O[at:at+p.Dv], want.Empty[p.LSEOffset(b, h, i)])
		})
		errs = append(errs, r.err())
	}
	return errors.Join(errs...)
}

// forRows calls f for every query row, with its index in [B, H, Nq]
// (the scores' rows; a packed sequence's rows stop at its own length).
func forRows(p backend.Problem, f func(b, h, i, row int)) {
	for b := 0; b < p.B; b++ {
		for h := 0; h < p.H; h++ {
			for i := 0; i < p.QRows(b); i++ {
				f(b, h, i, (b*p.H+h)*p.Nq+i)
			}
		}
	}
}

// report gathers the mismatches of one operand.
type report struct {
	name, col    string
	dtype        backend.DType // the operand's: its values must be dtype's, within Allowed
	slack        float64       // allowed beyond Allowed: BF16Slack under bfloat16 arithmetic
	n, bad, nans int
	first, worst mismatch
}

type mismatch struct {
	at        string
	got       float32
	want      float64
	allowed   float64
	badness   float64 // |got − want| / allowed, +Inf for a NaN, a wrong infinity or a value not of the dtype
	exactZero bool
	notDType  backend.DType // got is not a value of this half dtype
}

func newReport(name, col string) *report { return &report{name: name, col: col} }

// row compares one row. With exactZero, an element whose wanted value is 0
// must be exactly 0.
func (r *report) row(b, h, i int, got []float32, want []float64, exactZero bool) {
	scale := 1.0
	for _, w := range want {
		if !math.IsInf(w, 0) && math.Abs(w) > scale {
			scale = math.Abs(w)
		}
	}
	for x := range got {
		g, w := float64(got[x]), saturated(r.dtype, want[x])
		allowed := Allowed(r.dtype, w, scale) + r.slack
		r.n++
		badness := 0.0
		var notDType backend.DType
		switch {
		case math.IsNaN(g):
			r.nans++
			badness = math.Inf(1)
		case r.dtype.Round(got[x]) != got[x]:
			// Read widens a stored half exactly, so a value between two
			// of the dtype's was never rounded to it.
			badness, notDType = math.Inf(1), r.dtype
		case math.IsInf(w, 0) || math.IsInf(g, 0):
			if g != w {
				badness = math.Inf(1)
			}
		case exactZero && w == 0:
			if g != 0 {
				badness = math.Inf(1)
			}
		default:
			if d := math.Abs(g - w); d > allowed {
				badness = d / allowed
			}
		}
		if badness == 0 {
			continue
		}
		r.bad++
		at := fmt.Sprintf("[b=%d h=%d i=%d", b, h, i)
		if r.col != "" {
			at += fmt.Sprintf(" %s=%d", r.col, x)
		}
		m := mismatch{at: at + "]", got: got[x], want: w, allowed: allowed, badness: badness, exactZero: exactZero && w == 0, notDType: notDType}
		if r.bad == 1 {
			r.first = m
		}
		if r.bad == 1 || badness > r.worst.badness {
			r.worst = m
		}
	}
}

func (r *report) err() error {
	if r.bad == 0 {
		return nil
	}
	nans := ""
	if r.nans > 0 {
		nans = fmt.Sprintf(" (%d NaN)", r.nans)
	}
	return fmt.Errorf("%s: %d of %d values wrong%s; worst %v; first %v", r.name, r.bad, r.n, nans, r.worst, r.first)
}

func (m mismatch) String() string {
	switch {
	case math.IsNaN(float64(m.got)):
		return fmt.Sprintf("%s got NaN want %.7g", m.at, m.want)
	case m.notDType.Half():
		return fmt.Sprintf("%s got %.9g, not a %v value (want %.7g)", m.at, m.got, m.notDType, m.want)
	case m.exactZero:
		return fmt.Sprintf("%s got %.7g want exactly 0", m.at, m.got)
	case math.IsInf(m.want, 0) || math.IsInf(float64(m.got), 0):
		return fmt.Sprintf("%s got %.7g want %.7g", m.at, m.got, m.want)
	}
	return fmt.Sprintf("%s got %.7g want %.7g (|Δ| %.3g > %.3g)", m.at, m.got, m.want, math.Abs(float64(m.got)-m.want), m.allowed)
}
