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

// RunFused uploads c to be, runs be.Fused (with an LSE buffer when withLSE),
// reads O (and LSE) back and compares them with Reference(c) within Tol.
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
		return fmt.Errorf("fused %v: %w", c, err)
	}
	if err := compare(c, Reference(c), got); err != nil {
		return fmt.Errorf("fused %v (LSE %t):\n%w", c, withLSE, err)
	}
	return nil
}

// RunStaged runs c through be.Scores, be.Softmax (with an LSE buffer when
// withLSE) and be.Context, reading the scores, the weights and the output
// back after each step and comparing each with Reference(c) within Tol.
// It makes the same checks on inputs and outputs as RunFused, and checks
// that Context leaves the weights unchanged.
func RunStaged(ctx context.Context, be backend.Backend, c Case, withLSE bool) error {
	if err := c.check(); err != nil {
		return err
	}
	got, err := execStaged(ctx, be, c, withLSE)
	if err != nil {
		return fmt.Errorf("staged %v: %w", c, err)
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
	bufs   []backend.Buffer
	inputs []input
}

type input struct {
	name string
	buf  backend.Buffer
	data []float32 // everything written, padding included
}

func (s *session) release() {
	for _, b := range s.bufs {
		b.Release()
	}
}

func (s *session) alloc(name string, n int) (backend.Buffer, error) {
	var buf backend.Buffer
	err := guard(func() error {
		var err error
		buf, err = s.be.Alloc(backend.Float32, n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("Alloc(%d) for %s: %w", n, name, err)
	}
	if buf == nil {
		return nil, fmt.Errorf("Alloc(%d) for %s returned a nil Buffer", n, name)
	}
	s.bufs = append(s.bufs, buf)
	if buf.Len() != n {
		return nil, fmt.Errorf("Alloc(%d) for %s: Len() = %d", n, name, buf.Len())
	}
	return buf, nil
}

func (s *session) write(name string, buf backend.Buffer, data []float32) error {
	if err := guard(func() error { return s.be.Write(buf, 0, data) }); err != nil {
		return fmt.Errorf("Write %s (%d values): %w", name, len(data), err)
	}
	return nil
}

func (s *session) read(name string, buf backend.Buffer, n int) ([]float32, error) {
	data := make([]float32, n)
	if err := guard(func() error { return s.be.Read(data, buf, 0) }); err != nil {
		return nil, fmt.Errorf("Read %s (%d values): %w", name, n, err)
	}
	return data, nil
}

// in uploads an input operand followed by NaN padding.
func (s *session) in(name string, data []float32) (backend.Buffer, error) {
	padded := append(append([]float32(nil), data...), nans(pad)...)
	buf, err := s.alloc(name, len(padded))
	if err != nil {
		return nil, err
	}
	if err := s.write(name, buf, padded); err != nil {
		return nil, err
	}
	s.inputs = append(s.inputs, input{name, buf, padded})
	return buf, nil
}

// mask uploads a host mask as an input.
func (s *session) mask(name string, m *HostMask) (*backend.Mask, error) {
	if m == nil {
		return nil, nil
	}
	buf, err := s.in(name, m.Data)
	if err != nil {
		return nil, err
	}
	return &backend.Mask{Buf: buf, Shape: m.Shape}, nil
}

// out allocates an output of n values filled with unwritten and followed
// by padValue padding.
func (s *session) out(name string, n int) (backend.Buffer, error) {
	buf, err := s.alloc(name, n+pad)
	if err != nil {
		return nil, err
	}
	fill := make([]float32, n+pad)
	for i := range fill {
		fill[i] = unwritten
		if i >= n {
			fill[i] = padValue
		}
	}
	return buf, s.write(name, buf, fill)
}

// result reads an output's n values back and checks its padding.
func (s *session) result(name string, buf backend.Buffer, n int) ([]float32, error) {
	data, err := s.read(name, buf, n+pad)
	if err != nil {
		return nil, err
	}
	for i := n; i < n+pad; i++ {
		if math.Float32bits(data[i]) != math.Float32bits(padValue) {
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

// upload uploads the operands of c: Q, K, V and the masks it has.
func (s *session) upload(c Case) (q, k, v backend.Buffer, bias, keep *backend.Mask, err error) {
	if q, err = s.in("Q", c.Q); err != nil {
		return
	}
	if k, err = s.in("K", c.K); err != nil {
		return
	}
	if v, err = s.in("V", c.V); err != nil {
		return
	}
	if bias, err = s.mask("bias", c.Bias); err != nil {
		return
	}
	keep, err = s.mask("keep", c.Keep)
	return
}

// execFused runs c through be.Fused and returns what came back, having
// checked the inputs and the outputs' padding.
func execFused(ctx context.Context, be backend.Backend, c Case, withLSE bool) (result, error) {
	var r result
	p := c.Problem.Resolved()
	s := &session{be: be}
	defer s.release()

	q, k, v, bias, keep, err := s.upload(c)
	if err != nil {
		return r, err
	}
	o, err := s.out("O", p.OLen())
	if err != nil {
		return r, err
	}
	var lse backend.Buffer
	if withLSE {
		if lse, err = s.out("LSE", p.LSELen()); err != nil {
			return r, err
		}
	}

	params := backend.FusedParams{Problem: c.Problem, Bias: bias, Keep: keep}
	if err := guard(func() error { return be.Fused(ctx, params, q, k, v, o, lse) }); err != nil {
		return r, fmt.Errorf("Fused: %w", err)
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
	s := &session{be: be}
	defer s.release()

	q, k, v, bias, keep, err := s.upload(c)
	if err != nil {
		return r, err
	}
	sp, err := s.out("scores", p.ScoresLen())
	if err != nil {
		return r, err
	}
	o, err := s.out("O", p.OLen())
	if err != nil {
		return r, err
	}
	var lse backend.Buffer
	if withLSE {
		if lse, err = s.out("LSE", p.LSELen()); err != nil {
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
				return r, fmt.Errorf("Scores at stage %v: %w", st, err)
			}
			if r.Stages[st], err = s.result("scores "+st.String(), sp, p.ScoresLen()); err != nil {
				return r, err
			}
		}
	}
	scores := backend.ScoresParams{Problem: c.Problem, Bias: bias}
	if err := guard(func() error { return be.Scores(ctx, scores, q, k, sp) }); err != nil {
		return r, fmt.Errorf("Scores: %w", err)
	}
	if r.S, err = s.result("scores", sp, p.ScoresLen()); err != nil {
		return r, err
	}
	if err := s.checkInputs("Scores"); err != nil {
		return r, err
	}

	softmax := backend.SoftmaxParams{Problem: c.Problem, Keep: keep, LSE: lse}
	if err := guard(func() error { return be.Softmax(ctx, softmax, sp) }); err != nil {
		return r, fmt.Errorf("Softmax: %w", err)
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
		return r, fmt.Errorf("Context: %w", err)
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
		forRows(p, func(b, h, i, row int) {
			r.row(b, h, i, got.LSE[row:row+1], want.LSE[row:row+1], false)
		})
		errs = append(errs, r.err())
	}
	if got.O != nil {
		r := newReport("O", "d")
		os := p.OStrides()
		forRows(p, func(b, h, i, row int) {
			at := os.Offset(b, h, i)
			// A row that sees no key must be exactly zero.
			r.row(b, h, i, got.O[at:at+p.Dv], want.O[at:at+p.Dv], want.Empty[row])
		})
		errs = append(errs, r.err())
	}
	return errors.Join(errs...)
}

// forRows calls f for every query row, with its index in [B, H, Nq].
func forRows(p backend.Problem, f func(b, h, i, row int)) {
	for b := 0; b < p.B; b++ {
		for h := 0; h < p.H; h++ {
			for i := 0; i < p.Nq; i++ {
				f(b, h, i, (b*p.H+h)*p.Nq+i)
			}
		}
	}
}

// report gathers the mismatches of one operand.
type report struct {
	name, col    string
	n, bad, nans int
	first, worst mismatch
}

type mismatch struct {
	at        string
	got       float32
	want      float64
	allowed   float64
	badness   float64 // |got − want| / allowed, +Inf for a NaN or a wrong infinity
	exactZero bool
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
	allowed := Tol * scale
	for x := range got {
		g, w := float64(got[x]), want[x]
		r.n++
		badness := 0.0
		switch {
		case math.IsNaN(g):
			r.nans++
			badness = math.Inf(1)
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
		m := mismatch{at: at + "]", got: got[x], want: w, allowed: allowed, badness: badness, exactZero: exactZero && w == 0}
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
	case m.exactZero:
		return fmt.Sprintf("%s got %.7g want exactly 0", m.at, m.got)
	case math.IsInf(m.want, 0) || math.IsInf(float64(m.got), 0):
		return fmt.Sprintf("%s got %.7g want %.7g", m.at, m.got, m.want)
	}
	return fmt.Sprintf("%s got %.7g want %.7g (|Δ| %.3g > %.3g)", m.at, m.got, m.want, math.Abs(float64(m.got)-m.want), m.allowed)
}
