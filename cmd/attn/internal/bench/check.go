package bench

import (
	"fmt"
	"math"
	"os"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// reference returns the float64 reference output of every sampled row,
// computing it on first use.
func (in *inputs) reference() [][]float64 {
	if in.ref == nil && len(in.rows) > 0 {
		c := backendtest.Case{Problem: in.p, Q: in.q, K: in.k, V: in.v}
		for _, r := range in.rows {
			b, h, i := in.rowIndex(r)
			o, _ := backendtest.ReferenceRow(c, b, h, i)
			in.ref = append(in.ref, o)
		}
	}
	return in.ref
}

// rowIndex splits a flat query row into batch, head and query index.
func (in *inputs) rowIndex(r int) (b, h, i int) {
	p := in.p
	return r / (p.H * p.Nq), r / p.Nq % p.H, r % p.Nq
}

// check compares the sampled rows of the output (laid out like Q, with
// head dim Dv), which read copies from element off, with the reference
// and records the largest error on pt, marking it wrong past WrongErr
// (wrongErr for a half output, plus the slack the contract allows
// bfloat16 arithmetic when the operands are bfloat16).
// It returns read's error.
func (in *inputs) check(pt *Point, read func(off int, row []float32) error) error {
	ref := in.reference()
	if len(ref) == 0 {
		return nil
	}
	worst, limit, wrong := 0.0, wrongErr(in.dt), false
	slack := 0.0
	if in.dt == backend.BFloat16 {
		// Q, K and V all bfloat16: a backend may multiply in bfloat16
		// (backend's contract, backendtest.BF16Slack), which moves each
		// output by up to 2⁻⁸·Σ_j w_j·|v_j| ≤ 2⁻⁸·max|V| more.
		slack = 0x1p-8 * in.vmax
	}
	got := make([]float32, in.p.Dv)
	quant := 0.0
	for n, r := range in.rows {
		b, h, i := in.rowIndex(r)
		if err := read(in.p.OStrides().Offset(b, h, i), got); err != nil {
			return err
		}
		e := backendtest.RowError(got, ref[n])
		if !finite(e) {
			pt.Status = StatusWrong
			pt.Error = fmt.Sprintf("output row (b=%d, h=%d, i=%d) holds %s", b, h, i, unlike(e))
			pt.CheckedRows = n + 1
			return nil
		}
		// |got − want| ≤ limit·max|want| + slack over the row: e is
		// relative to max|want|, or the difference itself where every
		// wanted value is 0.
		bound := slack
		if scale := rowScale(ref[n]); scale > 0 {
			bound = limit + slack/scale
		}
		wrong = wrong || backendtest.Exceeds(e, bound)
		worst = max(worst, e)
		if in.ref0 != nil {
			quant = max(quant, backendtest.RowError(got, in.ref0[n]))
		}
	}
	pt.MaxErr = &worst
	if in.ref0 != nil && finite(quant) {
		pt.QuantErr = &quant
	}
	pt.CheckedRows = len(ref)
	if wrong {
		pt.Status = StatusWrong
		pt.Error = fmt.Sprintf("max relative error %.2g over %d rows, past %g", worst, len(ref), limit)
		if slack > 0 {
			pt.Error += fmt.Sprintf(" plus bfloat16 arithmetic's 2⁻⁸·max|V| = %.2g", slack)
		}
	}
	return nil
}

// rowScale is max|want| over a row.
func rowScale(want []float64) float64 {
	scale := 0.0
	for _, w := range want {
		scale = max(scale, math.Abs(w))
	}
	return scale
}

// finite says whether e, an error against the reference
// (backendtest.RowError), is a number: not from an output that holds
// NaN, or an infinity the reference does not. backendtest.Exceeds fails
// any other error against any bound; a point records it in Error, not
// in MaxErr, which JSON could not hold.
func finite(e float64) bool {
	return !math.IsNaN(e) && !math.IsInf(e, 0)
}

// unlike names what an output holds that makes its error e, NaN or
// infinite, not finite.
func unlike(e float64) string {
	if math.IsNaN(e) {
		return "NaN"
	}
	return "an infinity the reference does not"
}

// setErr records e, the largest error of a point's checked output
// against the reference (backendtest.RowError's), on pt, and marks the
// point wrong where backendtest.Exceeds(e, bound): past bound, and NaN
// or infinite, as from an output of NaNs. what names the output checked
// for the point's Error when e is not finite.
func (pt *Point) setErr(e, bound float64, what string) {
	if !finite(e) {
		pt.Status = StatusWrong
		pt.Error = what + " holds " + unlike(e)
		return
	}
	pt.MaxErr = &e
	if backendtest.Exceeds(e, bound) {
		pt.Status = StatusWrong
	}
}

// wrongErr is WrongErr for an output stored as dt: a half output is
// also rounded to dt (half a unit in its last place: 2⁻¹¹ relative for
// float16, 2⁻⁸ for bfloat16), which the reference, computed on the
// half-rounded inputs, is not.
func wrongErr(dt backend.DType) float64 {
	switch dt {
	case backend.Float16:
		return WrongErr + 0x1p-11
	case backend.BFloat16:
		return WrongErr + 0x1p-8
	}
	return WrongErr
}

// removeFiles deletes the .npy copies written for peers, if any.
func (in *inputs) removeFiles() {
	if in != nil && in.dir != "" {
		os.RemoveAll(in.dir)
		in.dir = ""
	}
}
