//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// This file holds the CPU↔GPU parity matrix and the helpers the other
// GPU test files share: run (one case through one backend and strategy),
// agree (the comparison) and the ATTN_LONG switch.
//
// # The criterion
//
// The GPU's answer is judged against the CPU backend's, element by
// element, with backendtest's rule, the CPU standing in for the float64
// reference:
//
//	|gpu − cpu| ≤ backendtest.Tol · max(1, max |cpu| over the row)      (Tol = 1e-4)
//
// where a row is one query's Nk scores or weights, its Dv outputs, or its
// one LSE value. NaN never passes; an infinity (a −Inf score or LSE) must
// match exactly; a weight of a key the query may not see (outside
// Problem.KeyRange, keep-mask 0, bias −Inf) must be exactly 0 on both,
// and so must the whole output of a row that sees no key. Every
// comparison logs its worst element, also when it passes.
//
// # The GPU's tiles, which the shapes straddle
//
// Under the CPU plan (lavapipe's; hwplan_test.go runs the hardware plan),
// fused.wgsl runs 64 invocations of R query rows each per workgroup (R =
// 4 at D = Dv = 64, 2 at 128; fusedRows in internal/plan/kernel_rows.go),
// one key per loop iteration, in splits of 4096 keys (fusedChunk); wider
// heads run fusedloop.wgsl, 64 query rows per workgroup over tiles of 32
// keys, in splits sized by fusedTile. A step's splits run side by side
// when their partial results fit the scratch (up to 64, 16 MiB), one
// after the other otherwise, and merge.wgsl folds their partial (O, LSE)
// in; a step with few workgroups (decoding) splits its keys further; a
// sliding window cuts the rows into blocks of its band
// (plan.FusedSteps). scores.wgsl and context.wgsl use 64×64 tiles,
// context in chunks of 1328 keys; softmax.wgsl works in chunks of 8192
// columns.

// envLong turns on the slow rows and tests: ATTN_LONG=1.
const envLong = "ATTN_LONG"

func long() bool { return os.Getenv(envLong) == "1" }

// skipUnlessLong skips a test (or row) that only runs under ATTN_LONG=1.
func skipUnlessLong(t testing.TB) {
	t.Helper()
	if !long() {
		t.Skipf("slow on a software adapter: set %s=1 to run it", envLong)
	}
}

// openCPU returns the CPU backend the GPU is compared with.
func openCPU(t testing.TB) backend.Backend {
	t.Helper()
	c, err := cpu.New()
	if err != nil {
		t.Fatalf("cpu.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// outputs is what one backend returned for a case through one strategy.
// S and P are set by the staged path only; LSE only when asked for.
// Stages holds the staged path's scores at the raw, capped and masked
// stages (S is the biased one), for a case with variants.
type outputs struct {
	S, P, O, LSE []float32
	Stages       map[backend.ScoreStage][]float32
}

// otherStages are the score stages run computes beside the biased one
// for a case with variants.
var otherStages = []backend.ScoreStage{backend.StageRaw, backend.StageCapped, backend.StageMasked}

// Every output buffer run allocates is outPad elements longer than the
// operand and filled beforehand: the operand with NaN, so an element the
// backend never writes fails the comparison, the padding with padValue,
// which must survive the op.
const outPad = 4

var padValue = float32(-4321.5)

// run uploads c to be, Q, K, V, O and the bias stored as c.DTypes says
// (Write rounds c's values to them), computes it with strategy s
// (kernels.Fused or kernels.Staged), with an LSE output when withLSE, and
// reads the results back, checking each output's padding. It releases
// every buffer.
func run(ctx context.Context, be backend.Backend, c backendtest.Case, s kernels.Strategy, withLSE bool) (outputs, error) {
	var out outputs
	dt := c.DTypes
	p := c.Problem
	var bufs []backend.Buffer
	defer func() {
		for _, b := range bufs {
			b.Release()
		}
	}()
	alloc := func(name string, t backend.DType, n int) (backend.Buffer, error) {
		b, err := be.Alloc(t, n)
		if err != nil {
			return nil, fmt.Errorf("%s: Alloc(%v, %d) for %s: %w", be.Name(), t, n, name, err)
		}
		bufs = append(bufs, b)
		return b, nil
	}
	in := func(name string, t backend.DType, data []float32) (backend.Buffer, error) {
		b, err := alloc(name, t, len(data))
		if err != nil {
			return nil, err
		}
		if err := be.Write(b, 0, data); err != nil {
			return nil, fmt.Errorf("%s: Write %s: %w", be.Name(), name, err)
		}
		return b, nil
	}
	outBuf := func(name string, t backend.DType, n int) (backend.Buffer, error) {
		b, err := alloc(name, t, n+outPad)
		if err != nil {
			return nil, err
		}
		fill := make([]float32, n+outPad)
		for i := range fill {
			fill[i] = float32(math.NaN())
			if i >= n {
				fill[i] = padValue
			}
		}
		if err := be.Write(b, 0, fill); err != nil {
			return nil, fmt.Errorf("%s: Write %s: %w", be.Name(), name, err)
		}
		return b, nil
	}
	result := func(name string, b backend.Buffer, n int) ([]float32, error) {
		x := make([]float32, n+outPad)
		if err := be.Read(x, b, 0); err != nil {
			return nil, fmt.Errorf("%s: Read %s: %w", be.Name(), name, err)
		}
		pad := b.DType().Round(padValue)
		for i := n; i < n+outPad; i++ {
			if math.Float32bits(x[i]) != math.Float32bits(pad) {
				return nil, fmt.Errorf("%s: %s: element %d, past its %d values, was overwritten with %v", be.Name(), name, i, n, x[i])
			}
		}
		return x[:n], nil
	}
	mask := func(name string, t backend.DType, m *backendtest.HostMask) (*backend.Mask, error) {
		if m == nil {
			return nil, nil
		}
		b, err := in(name, t, m.Data)
		if err != nil {
			return nil, err
		}
		return &backend.Mask{Buf: b, Shape: m.Shape}, nil
	}

	q, err := in("Q", dt.Q, c.Q)
	if err != nil {
		return out, err
	}
	k, err := in("K", dt.K, c.K)
	if err != nil {
		return out, err
	}
	v, err := in("V", dt.V, c.V)
	if err != nil {
		return out, err
	}
	bias, err := mask("bias", dt.Bias, c.Bias)
	if err != nil {
		return out, err
	}
	keep, err := mask("keep", backend.Float32, c.Keep)
	if err != nil {
		return out, err
	}
	o, err := outBuf("O", dt.O, p.OLen())
	if err != nil {
		return out, err
	}
	var lse backend.Buffer
	if withLSE {
		if lse, err = outBuf("LSE", backend.Float32, p.LSELen()); err != nil {
			return out, err
		}
	}

	switch s {
	case kernels.Fused:
		if err := be.Fused(ctx, backend.FusedParams{Problem: p, Bias: bias, Keep: keep}, q, k, v, o, lse); err != nil {
			return out, fmt.Errorf("%s: Fused: %w", be.Name(), err)
		}
	case kernels.Staged:
		sb, err := outBuf("scores", backend.Float32, p.ScoresLen())
		if err != nil {
			return out, err
		}
		if p.Variants.Any() {
			out.Stages = map[backend.ScoreStage][]float32{}
			for _, st := range otherStages {
				if err := be.Scores(ctx, backend.ScoresParams{Problem: p, Bias: bias, Keep: keep, Stage: st}, q, k, sb); err != nil {
					return out, fmt.Errorf("%s: Scores at stage %v: %w", be.Name(), st, err)
				}
				if out.Stages[st], err = result("scores "+st.String(), sb, p.ScoresLen()); err != nil {
					return out, err
				}
			}
		}
		if err := be.Scores(ctx, backend.ScoresParams{Problem: p, Bias: bias}, q, k, sb); err != nil {
			return out, fmt.Errorf("%s: Scores: %w", be.Name(), err)
		}
		if out.S, err = result("scores", sb, p.ScoresLen()); err != nil {
			return out, err
		}
		if err := be.Softmax(ctx, backend.SoftmaxParams{Problem: p, Keep: keep, LSE: lse}, sb); err != nil {
			return out, fmt.Errorf("%s: Softmax: %w", be.Name(), err)
		}
		if out.P, err = result("weights", sb, p.ScoresLen()); err != nil {
			return out, err
		}
		if err := be.Context(ctx, backend.ContextParams{Problem: p}, sb, v, o); err != nil {
			return out, fmt.Errorf("%s: Context: %w", be.Name(), err)
		}
	default:
		return out, fmt.Errorf("run: strategy %v: want fused or staged", s)
	}
	if out.O, err = result("O", o, p.OLen()); err != nil {
		return out, err
	}
	if withLSE {
		if out.LSE, err = result("LSE", lse, p.LSELen()); err != nil {
			return out, err
		}
	}
	return out, nil
}

// hidden reports whether query i of head h in batch b may not see key j:
// past the causal limit, keep-mask 0, or bias −Inf. Such a key's weight
// must be exactly 0.
func hidden(c backendtest.Case) func(b, h, i, j int) bool {
	p := c.Problem
	var bs, ks [4]int
	if c.Bias != nil {
		bs = (&backend.Mask{Shape: c.Bias.Shape}).Strides()
	}
	if c.Keep != nil {
		ks = (&backend.Mask{Shape: c.Keep.Shape}).Strides()
	}
	return func(b, h, i, j int) bool {
		if lo, hi := p.KeyRange(b, i); j < lo || j >= hi {
			return true
		}
		if c.Keep != nil && c.Keep.Data[b*ks[0]+h*ks[1]+i*ks[2]+j*ks[3]] == 0 {
			return true
		}
		return c.Bias != nil && math.IsInf(float64(c.Bias.Data[b*bs[0]+h*bs[1]+i*bs[2]+j*bs[3]]), -1)
	}
}

// operandCheck gathers the comparison of one operand.
type operandCheck struct {
	name, col    string
	n, bad, nans int
	worst, first elemDiff // worst: over all elements; first: first bad one
}

// elemDiff is one element's comparison.
type elemDiff struct {
	at        string
	got, want float32
	allowed   float64
	ratio     float64 // |got − want| / allowed; +Inf for NaN, a wrong infinity or a non-zero that must be 0
}

func (e elemDiff) String() string {
	if math.IsInf(e.ratio, 1) {
		return fmt.Sprintf("%s gpu %.7g cpu %.7g", e.at, e.got, e.want)
	}
	return fmt.Sprintf("%s gpu %.7g cpu %.7g, |Δ| %.3g = %.3g × the %.3g allowed",
		e.at, e.got, e.want, math.Abs(float64(e.got)-float64(e.want)), e.ratio, e.allowed)
}

// row compares one row. zero(x) says that element x must be exactly 0
// whatever the CPU says (nil: none must).
func (r *operandCheck) row(b, h, i int, got, want []float32, zero func(x int) bool) {
	scale := 1.0
	for _, w := range want {
		if a := math.Abs(float64(w)); !math.IsInf(a, 0) && a > scale {
			scale = a
		}
	}
	allowed := backendtest.Tol * scale
	for x := range got {
		g, w := float64(got[x]), float64(want[x])
		r.n++
		var ratio float64
		switch {
		case math.IsNaN(g) || math.IsNaN(w):
			r.nans++
			ratio = math.Inf(1)
		case zero != nil && zero(x):
			if g != 0 || w != 0 {
				ratio = math.Inf(1)
			}
		case math.IsInf(g, 0) || math.IsInf(w, 0):
			if g != w {
				ratio = math.Inf(1)
			}
		default:
			ratio = math.Abs(g-w) / allowed
		}
		if r.n > 1 && ratio <= r.worst.ratio && ratio <= 1 {
			continue
		}
		at := fmt.Sprintf("[b=%d h=%d i=%d", b, h, i)
		if r.col != "" {
			at += fmt.Sprintf(" %s=%d", r.col, x)
		}
		e := elemDiff{at: at + "]", got: got[x], want: want[x], allowed: allowed, ratio: ratio}
		if r.n == 1 || ratio > r.worst.ratio {
			r.worst = e
		}
		if ratio > 1 {
			r.bad++
			if r.bad == 1 {
				r.first = e
			}
		}
	}
}

func (r *operandCheck) err() error {
	if r.bad == 0 {
		return nil
	}
	nans := ""
	if r.nans > 0 {
		nans = fmt.Sprintf(" (%d NaN)", r.nans)
	}
	return fmt.Errorf("%s: %d of %d values differ%s; worst %v; first %v", r.name, r.bad, r.n, nans, r.worst, r.first)
}

func (r *operandCheck) summary() string {
	if r.n == 0 {
		return r.name + ": empty"
	}
	return fmt.Sprintf("%s: worst %v", r.name, r.worst)
}

// agree compares what the GPU returned (got) with what the CPU returned
// (want) for case c under the criterion at the top of this file. An
// operand got lacks is not compared; want must have LSE whenever got has O
// (it tells which rows see no key). It returns a one-line-per-operand
// summary of the worst elements, and an error naming every operand that
// is off.
func agree(c backendtest.Case, got, want outputs) (string, error) {
	p := c.Problem.Resolved()
	var checks []*operandCheck
	// row is the row's index in the scores' [B, H, Nq] (a packed
	// sequence's rows stop at its own count).
	forRows := func(f func(b, h, i, row int)) {
		for b := range p.B {
			for h := range p.H {
				for i := range p.QRows(b) {
					f(b, h, i, (b*p.H+h)*p.Nq+i)
				}
			}
		}
	}
	lengths := func(name string, g, w []float32, n int) error {
		if len(g) != n || len(w) != n {
			return fmt.Errorf("%s: gpu has %d values, cpu %d, want %d", name, len(g), len(w), n)
		}
		return nil
	}
	if got.S != nil {
		if err := lengths("scores", got.S, want.S, p.ScoresLen()); err != nil {
			return "", err
		}
		r := &operandCheck{name: "scores", col: "j"}
		forRows(func(b, h, i, row int) {
			at := row * p.Nk
			r.row(b, h, i, got.S[at:at+p.Nk], want.S[at:at+p.Nk], nil)
		})
		checks = append(checks, r)
	}
	for _, st := range otherStages {
		g, ok := got.Stages[st]
		if !ok {
			continue
		}
		name := "scores " + st.String()
		if err := lengths(name, g, want.Stages[st], p.ScoresLen()); err != nil {
			return "", err
		}
		r := &operandCheck{name: name, col: "j"}
		forRows(func(b, h, i, row int) {
			at := row * p.Nk
			r.row(b, h, i, g[at:at+p.Nk], want.Stages[st][at:at+p.Nk], nil)
		})
		checks = append(checks, r)
	}
	if got.P != nil {
		if err := lengths("weights", got.P, want.P, p.ScoresLen()); err != nil {
			return "", err
		}
		r := &operandCheck{name: "weights", col: "j"}
		hide := hidden(c)
		forRows(func(b, h, i, row int) {
			at := row * p.Nk
			r.row(b, h, i, got.P[at:at+p.Nk], want.P[at:at+p.Nk], func(j int) bool { return hide(b, h, i, j) })
		})
		checks = append(checks, r)
	}
	if got.LSE != nil {
		if err := lengths("LSE", got.LSE, want.LSE, p.LSELen()); err != nil {
			return "", err
		}
		r := &operandCheck{name: "LSE"}
		forRows(func(b, h, i, _ int) {
			at := p.LSEOffset(b, h, i)
			r.row(b, h, i, got.LSE[at:at+1], want.LSE[at:at+1], nil)
		})
		checks = append(checks, r)
	}
	if got.O != nil {
		if err := lengths("O", got.O, want.O, p.OLen()); err != nil {
			return "", err
		}
		if err := lengths("cpu LSE", want.LSE, want.LSE, p.LSELen()); err != nil {
			return "", err
		}
		r := &operandCheck{name: "O", col: "d"}
		ost := p.ORowsOf()
		forRows(func(b, h, i, _ int) {
			at := ost.Offset(b, h, i)
			seesNone := math.IsInf(float64(want.LSE[p.LSEOffset(b, h, i)]), -1)
			r.row(b, h, i, got.O[at:at+p.Dv], want.O[at:at+p.Dv], func(int) bool { return seesNone })
		})
		checks = append(checks, r)
	}
	var lines []string
	var errs []error
	for _, r := range checks {
		lines = append(lines, r.summary())
		errs = append(errs, r.err())
	}
	return strings.Join(lines, "\n"), errors.Join(errs...)
}

// parity runs c through strategy s on the GPU and the CPU and compares
// them, logging the times and the worst elements. The CPU always computes
// the LSE (agree needs it); the GPU only when withLSE.
func parity(t *testing.T, g, c backend.Backend, cs backendtest.Case, s kernels.Strategy, withLSE bool) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Now()
	got, err := run(ctx, g, cs, s, withLSE)
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	want, err := run(ctx, c, cs, s, true)
	if err != nil {
		t.Fatal(err)
	}
	t2 := time.Now()
	summary, err := agree(cs, got, want)
	t.Logf("%v %v: gpu %v, cpu %v\n%s", s, cs, t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Millisecond), summary)
	if err != nil {
		t.Errorf("%v %v: gpu and cpu disagree:\n%v", s, cs, err)
	}
}

// newRand is the source of every case's data: fixed seeds, so that a
// failure repeats.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// parityRow is one row of the matrix.
type parityRow struct {
	p          backend.Problem
	bias, keep *[4]int
	// noLSE runs the GPU without an LSE output (the fused path then keeps
	// its own for the merge).
	noLSE bool
	short bool // also under -short
	slow  bool // only under ATTN_LONG=1
	// hwQuick is one of TestParityHardwarePlan's quick rows, which the
	// README's test command runs (hardwareRow).
	hwQuick bool
	// fusedOnly leaves the staged path out: its tiles, grids and
	// softmax chunks are those of a row beside it at the same width
	// (on lavapipe their staged runs were a large part of the long
	// checks' time).
	fusedOnly bool
}

// caseName names a problem the way backendtest does, without making its
// data.
func caseName(p backend.Problem, bias, keep *[4]int) string {
	c := backendtest.Case{Problem: p}
	if bias != nil {
		c.Bias = &backendtest.HostMask{Shape: *bias}
	}
	if keep != nil {
		c.Keep = &backendtest.HostMask{Shape: *keep}
	}
	return c.String()
}

func prob(b, h, kv, nq, nk, d, dv int) backend.Problem {
	return backend.Problem{B: b, H: h, KVHeads: kv, Nq: nq, Nk: nk, D: d, Dv: dv,
		Scale: float32(1 / math.Sqrt(float64(d)))}
}

func causal(p backend.Problem) backend.Problem { p.Causal = true; return p }

func bnhd(p backend.Problem) backend.Problem { p.Layout = backend.BNHD; return p }

func scaled(p backend.Problem, s float32) backend.Problem { p.Scale = s; return p }

func shape(b, h, nq, nk int) *[4]int { return &[4]int{b, h, nq, nk} }

// The variants, each on a copy of p.
func window(p backend.Problem, left, right int) backend.Problem {
	p.Window = &backend.Window{Left: left, Right: right}
	return p
}

func offset(p backend.Problem, o int) backend.Problem { p.CausalOffset = &o; return p }

func softcap(p backend.Problem, c float32) backend.Problem { p.Softcap = c; return p }

func alibi(p backend.Problem) backend.Problem {
	p.ALiBi = make([]float32, p.H)
	for h := range p.ALiBi {
		p.ALiBi[h] = float32(math.Exp2(-8 * float64(h+1) / float64(p.H)))
	}
	return p
}

func sinks(p backend.Problem, s ...float32) backend.Problem {
	p.Sinks = make([]float32, p.H)
	for h := range p.Sinks {
		p.Sinks[h] = s[h%len(s)]
	}
	return p
}

func kvlens(p backend.Problem, n ...int) backend.Problem { p.KVLens = n; return p }

// parityRows is the matrix. Rows marked short also run under -short;
// rows marked slow (each many seconds on lavapipe, warm) run in
// TestParitySlow, under ATTN_LONG=1 only: CI runs them once, in its step
// of long checks, so that the default set stays short there.
var parityRows = []parityRow{
	// Head dims, N = 1000: fused.wgsl with 4 query rows per invocation
	// up to D = 64 and 2 at D = 80 and 128, in one chunk of keys; the
	// merge is in the rows past 4096 keys below.
	{p: causal(prob(1, 2, 2, 1000, 1000, 16, 16))},
	{p: bnhd(prob(1, 2, 2, 1000, 1000, 32, 32))},
	{p: prob(1, 2, 2, 1000, 1000, 64, 64)},
	{p: causal(bnhd(prob(1, 2, 2, 1000, 1000, 80, 80)))},
	{p: causal(prob(1, 2, 2, 1000, 1000, 128, 128)), noLSE: true},

	// GQA and MQA.
	{p: causal(prob(2, 8, 2, 257, 257, 64, 64)), short: true},
	{p: bnhd(prob(1, 8, 2, 200, 300, 32, 48))},
	{p: prob(1, 8, 1, 1, 2500, 64, 64)}, // decoding, MQA, 4 fused chunks
	{p: causal(bnhd(prob(2, 4, 1, 130, 777, 80, 80))), noLSE: true},

	// Masks: biases with −Inf and keep-masks, full and broadcast.
	{p: prob(2, 4, 2, 129, 200, 64, 64), bias: shape(2, 4, 129, 200)},
	{p: prob(2, 4, 2, 65, 300, 32, 32), bias: shape(1, 1, 65, 300), keep: shape(2, 1, 1, 300), short: true},
	{p: causal(prob(1, 4, 4, 100, 100, 64, 64)), bias: shape(1, 4, 100, 1), keep: shape(1, 1, 100, 100)},
	{p: prob(2, 2, 1, 64, 3, 16, 16), keep: shape(2, 2, 64, 3)},                     // some rows see no key
	{p: causal(prob(1, 2, 2, 70, 5, 16, 8)), bias: shape(1, 1, 70, 5), short: true}, // 65 rows see no key
	{p: bnhd(prob(1, 2, 2, 64, 2500, 64, 64)), bias: shape(1, 2, 64, 2500), keep: shape(1, 1, 1, 2500)},
	{p: scaled(prob(1, 2, 1, 96, 96, 32, 32), -1), bias: shape(1, 2, 1, 96), keep: shape(1, 2, 96, 1)},

	// Nq ≠ Nk both ways; key ranges over several fused, context and
	// softmax chunks.
	{p: causal(prob(1, 2, 2, 65, 2500, 64, 64))},
	{p: causal(prob(1, 2, 2, 2500, 65, 64, 64))},
	{p: prob(1, 1, 1, 1, 8193, 64, 64)},
	{p: causal(prob(1, 2, 1, 33, 8200, 32, 32)), keep: shape(1, 1, 33, 8200)},

	// Many fused chunks of keys (fusedChunk, 4096), so the chunks'
	// partial results merge, up to past the 32704 keys one invocation of
	// fused.wgsl may loop over; and heads too wide for fused.wgsl, on
	// fusedloop.wgsl with chunks of a few hundred keys.
	{p: prob(1, 2, 1, 3, 40000, 64, 64), short: true},
	{p: causal(prob(1, 2, 2, 70, 33000, 128, 128)), keep: shape(1, 1, 1, 33000), slow: true},
	{p: causal(bnhd(prob(1, 2, 1, 100, 1000, 256, 200))), bias: shape(1, 2, 100, 1000)},

	// Dv ≠ D.
	{p: prob(1, 2, 2, 127, 129, 32, 128)},
	{p: causal(bnhd(prob(1, 2, 2, 129, 127, 128, 16)))},
	{p: prob(1, 3, 3, 100, 641, 80, 64)},

	// Around the tiles: 64 query rows and 32 keys, 64×64 staged tiles,
	// fused.wgsl's workgroups of 4-row invocations.
	{p: prob(1, 1, 1, 63, 31, 64, 64), short: true},
	{p: prob(1, 1, 1, 64, 32, 64, 64)},
	{p: causal(prob(1, 2, 2, 65, 33, 64, 64))},
	{p: prob(2, 2, 2, 127, 639, 64, 64)},
	{p: causal(prob(1, 2, 2, 128, 640, 64, 64))},
	{p: bnhd(prob(1, 2, 2, 129, 641, 64, 64))},
	{p: prob(1, 1, 1, 1, 1, 64, 64)},

	// Grids past 65535 workgroups in one dimension: many query rows of
	// the softmax, and many heads (slow on the staged path: 70000
	// mostly idle workgroups per op take seconds each on lavapipe).
	{p: causal(prob(700, 100, 50, 2, 3, 4, 4)), slow: true},
	{p: prob(1, 1, 1, 70000, 2, 4, 4), keep: shape(1, 1, 70000, 2)},

	// N = 2048 and 4096.
	{p: bnhd(prob(1, 4, 2, 2048, 2048, 64, 64)), slow: true},
	{p: causal(prob(1, 1, 1, 4096, 4096, 64, 64)), slow: true},
	{p: prob(1, 2, 2, 4096, 4096, 64, 64), slow: true, fusedOnly: true},
	{p: causal(bnhd(prob(1, 2, 1, 4096, 4096, 128, 128))), slow: true, fusedOnly: true},
	{p: prob(1, 2, 2, 4096, 4096, 16, 16), bias: shape(1, 1, 4096, 4096), slow: true, fusedOnly: true},
	{p: prob(2, 2, 2, 2048, 2048, 80, 80), keep: shape(2, 1, 2048, 2048), slow: true},
	{p: bnhd(prob(1, 2, 2, 256, 16390, 64, 64)), keep: shape(1, 1, 1, 16390), slow: true},

	// The variants (backend.Variants), alone and together; the staged
	// path compares every score stage too. Sliding windows with and
	// without causal masking, both sides bounded or one.
	{p: window(causal(prob(1, 2, 2, 300, 300, 64, 64)), 31, 0), short: true},
	{p: window(prob(1, 2, 1, 200, 260, 32, 32), 20, 13)},
	{p: window(prob(1, 1, 1, 65, 129, 16, 16), -1, 5)},
	{p: window(bnhd(prob(1, 2, 2, 63, 33, 5, 7)), 0, 0)},
	// A window wider than a fused chunk (4096 keys): steps that merge.
	{p: window(causal(prob(1, 1, 1, 1500, 9000, 16, 16)), 5000, 0), slow: true},
	// A narrow window over many row blocks of 256 (plan.FusedSteps).
	{p: window(causal(prob(1, 2, 2, 2500, 2500, 64, 64)), 100, 0), keep: shape(1, 1, 2500, 2500), slow: true},
	// Causal offsets: top-left, negative (rows that see no key) with and
	// without sinks, past the keys.
	{p: offset(prob(1, 2, 2, 5, 9, 16, 16), 0)},
	{p: offset(prob(1, 2, 1, 70, 70, 16, 16), -5), short: true},
	{p: sinks(offset(prob(1, 2, 1, 70, 70, 16, 16), -5), 0.5, -1)},
	{p: offset(prob(1, 1, 1, 65, 66, 16, 16), 100)},
	// Softcap over large scores (scale 10 and 40: |s| in the hundreds),
	// on fused.wgsl and on fusedloop.wgsl.
	{p: softcap(scaled(prob(1, 2, 2, 65, 129, 64, 64), 10), 5), short: true},
	{p: softcap(scaled(prob(1, 2, 1, 64, 100, 256, 200), 40), 30)},
	{p: softcap(scaled(causal(prob(1, 1, 1, 129, 129, 5, 5)), 1000), 0.5)},
	// ALiBi with GQA, causal and BNHD; alone over a long key range.
	{p: alibi(causal(bnhd(prob(2, 4, 2, 130, 130, 32, 32))))},
	{p: alibi(prob(1, 8, 1, 1, 5000, 64, 64))},
	// Sinks, with a keep-mask that leaves some rows no key, and over no
	// keys at all.
	{p: sinks(prob(2, 2, 1, 64, 3, 16, 16), 1, -2), keep: shape(2, 2, 64, 3), short: true},
	{p: sinks(prob(1, 2, 2, 5, 0, 16, 16), 3, -1)},
	{p: sinks(causal(prob(1, 4, 2, 300, 4500, 64, 64)), 0, 2, -3, 10), noLSE: true, slow: true},
	// Key lengths of 0 and Nk, with causal masking, GQA and merges.
	{p: kvlens(causal(prob(3, 2, 1, 33, 65, 16, 16)), 0, 65, 40), short: true},
	{p: kvlens(prob(2, 2, 2, 64, 5000, 64, 64), 4100, 1)},
	{p: kvlens(window(prob(2, 1, 1, 1, 300, 32, 32), 64, 0), 300, 17)},
	// Everything at once, with a bias and a keep-mask, Dv ≠ D, BNHD.
	{p: kvlens(sinks(alibi(softcap(window(causal(bnhd(prob(2, 4, 2, 67, 130, 24, 40))), 40, 0), 5)), 0, 1, -1, 3), 130, 90),
		bias: shape(2, 1, 67, 130), keep: shape(1, 4, 1, 130)},
	{p: kvlens(sinks(alibi(softcap(window(prob(2, 2, 1, 129, 257, 128, 64), 70, 9), 20)), 0.5, 2), 0, 257),
		bias: shape(1, 2, 129, 257), noLSE: true, hwQuick: true},
	{p: sinks(alibi(softcap(offset(prob(1, 2, 2, 100, 300, 256, 256), 150), 10)), 1), keep: shape(1, 1, 100, 300)},
}

// TestParity runs the matrix but its slow rows through both strategies
// on the GPU and the CPU backend and compares the two (O and LSE, and on
// the staged path the scores and the weights P too) under the criterion
// at the top of this file.
func TestParity(t *testing.T) { testParity(t, false) }

// TestParitySlow is TestParity's slow rows, under ATTN_LONG=1: CI runs
// them once, in its step of long checks.
func TestParitySlow(t *testing.T) {
	skipUnlessLong(t)
	testParity(t, true)
}

// testParity runs the rows of the matrix whose slow mark is slow.
func testParity(t *testing.T, slow bool) {
	g := openGPU(t)
	c := openCPU(t)
	for n, row := range parityRows {
		if row.slow != slow {
			continue
		}
		t.Run(caseName(row.p, row.bias, row.keep), func(t *testing.T) {
			if testing.Short() && !row.short {
				t.Skip("-short runs only the rows marked short")
			}
			cs := backendtest.RandomCase(newRand(uint64(n+1)), row.p, row.bias, row.keep)
			for _, s := range []kernels.Strategy{kernels.Fused, kernels.Staged} {
				if s == kernels.Staged && row.fusedOnly {
					continue
				}
				t.Run(s.String(), func(t *testing.T) { parity(t, g, c, cs, s, !row.noLSE) })
			}
		})
	}
}
