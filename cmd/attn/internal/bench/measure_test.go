package bench

import (
	"context"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// A point measured on its own (as in a child process) drops each host
// input once it is uploaded, so the process holds Q, K and V once; a
// shared one keeps them for the next backend and the peers. Both check
// the same sampled rows.
func TestMeasureConsumesInputs(t *testing.T) {
	be, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	sh := Shape{B: 1, H: 2, KVHeads: 1, N: 200, D: 24}
	for _, consume := range []bool{false, true} {
		in := newInputs(sh.Problem(), 3, 5)
		in.consume = consume
		pt := measureAttn(context.Background(), be, kernels.Fused, 0, in, &Config{Budget: 0, MinRuns: 1})
		if pt.Status != StatusOK || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-5) || pt.CheckedRows != 5 {
			t.Fatalf("consume=%v: status %s (%s), max err %v, %d rows checked", consume, pt.Status, pt.Error, pt.MaxErr, pt.CheckedRows)
		}
		if kept := in.q != nil && in.k != nil && in.v != nil; kept == consume {
			t.Errorf("consume=%v: inputs kept = %v", consume, kept)
		}
	}
}

// check's bound on a bfloat16 point: the output's own rounding and
// WrongErr relative to the row, plus 2⁻⁸·max|V| for bfloat16 arithmetic;
// a float16 point gets no such slack.
func TestCheckBF16Slack(t *testing.T) {
	p := backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 1, D: 1, Dv: 2}
	ref := []float64{0.01, -0.005}
	for _, c := range []struct {
		dt    backend.DType
		off   float64 // added to the reference's first output
		wrong bool
	}{
		{backend.BFloat16, 0.003, false}, // within 2⁻⁸·max|V| = 0.0039 beyond the relative bound
		{backend.BFloat16, 0.0045, true},
		{backend.Float16, 0.003, true},
		{backend.Float16, 0.00001, false},
	} {
		in := &inputs{p: p, dt: c.dt, vmax: 1, rows: []int{0}, ref: [][]float64{ref}}
		pt := &Point{Status: StatusOK}
		err := in.check(pt, func(off int, row []float32) error {
			row[0], row[1] = float32(ref[0]+c.off), float32(ref[1])
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := pt.Status == StatusWrong; got != c.wrong {
			t.Errorf("%v, %g off: wrong %v (%s), want %v", c.dt, c.off, got, pt.Error, c.wrong)
		}
	}
}
