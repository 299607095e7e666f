package bench

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cpu"
)

// TestGradCheck: a backward point's gradients are checked against the
// float64 reference on the last batch's last KV group, whole (dQ, dK
// and dV) within the budget and as the group's last rows' dQ past it,
// for problems whose rows' positions matter (causal, a window, ALiBi,
// sinks, decoding, a causal offset); gradients off by one entry, or not
// finite, make the point wrong, naming the tensor.
func TestGradCheck(t *testing.T) {
	be, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	off := 5
	for _, tc := range []struct {
		name string
		p    backend.Problem
	}{
		{"causal gqa window alibi sinks", Shape{B: 2, H: 4, KVHeads: 2, N: 70, D: 16, Causal: true,
			Variant: Variant{Window: &[2]int{20, 0}, ALiBi: true, Sinks: true}}.Problem()},
		{"decode softcap", Shape{B: 1, H: 2, KVHeads: 1, N: 90, Nq: 7, D: 8, Dv: 12, Variant: Variant{Softcap: 5}}.Problem()},
		{"causal offset", func() backend.Problem {
			p := Shape{B: 1, H: 2, KVHeads: 2, N: 40, Nq: 30, D: 8}.Problem()
			p.CausalOffset = &off
			return p
		}()},
	} {
		p := tc.p.Resolved()
		gh := p.H / p.KVHeads
		for _, sampled := range []bool{false, true} {
			cfg := &Config{Budget: time.Millisecond, MinRuns: 1, Seed: 3, CheckRows: 4}
			wantRows := gh * p.Nq
			if sampled {
				cfg.gradBudget = 3 * gh * p.Nk * (p.D + p.Dv) // 3 rows' worth
				wantRows = gh * 3
			}
			in := newInputs(p, cfg.Seed, cfg.CheckRows)
			pt := measureBackward(context.Background(), be, sampled, in, cfg)
			if pt.Status != StatusOK || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-5) || pt.CheckedRows != wantRows {
				t.Errorf("%s (sampled %v): %s %s, max err %v, %d rows checked, want %d", tc.name, sampled, pt.Status, pt.Error, optErr(pt.MaxErr), pt.CheckedRows, wantRows)
			}
		}
	}

	// The check reads what a backend wrote where the point's layout
	// puts it: the reference itself passes, one entry off fails.
	p := Shape{B: 2, H: 4, KVHeads: 2, N: 33, D: 8, Causal: true}.Problem()
	in := newInputs(p, 1, 4)
	dO := make([]float32, p.OLen())
	for i := range dO {
		dO[i] = float32(i%7) - 3
	}
	for _, tc := range []struct {
		name   string
		spoil  func(dq, dk, dv []float32, c *gradCheck)
		status Status
		want   string
	}{
		{"reference", func(dq, dk, dv []float32, c *gradCheck) {}, StatusOK, ""},
		{"dK off", func(dq, dk, dv []float32, c *gradCheck) { dk[p.KRowsOf().Offset(c.b, c.g, 5)+2] += 1 }, StatusWrong, "of dK over batch 1, KV group 1"},
		{"dV NaN", func(dq, dk, dv []float32, c *gradCheck) { dv[p.VRowsOf().Offset(c.b, c.g, 0)] = float32(math.NaN()) }, StatusWrong, "dV of batch 1, KV group 1 holds NaN"},
		{"dQ off", func(dq, dk, dv []float32, c *gradCheck) { dq[p.QRowsOf().Offset(c.b, 3, 32)] += 1 }, StatusWrong, "of dQ"},
		{"another group's dQ off", func(dq, dk, dv []float32, c *gradCheck) { dq[p.QRowsOf().Offset(0, 3, 32)] += 1 }, StatusOK, ""},
	} {
		c := newGradCheck(in, dO, 4, gradCheckBudget)
		if !c.whole || c.b != 1 || c.g != 1 {
			t.Fatalf("check of batch %d, group %d, whole %v: want the last of each, whole", c.b, c.g, c.whole)
		}
		// The gradients as a backend would write them: the reference's
		// where the check reads, zeros elsewhere.
		dq, dk, dv := make([]float32, p.QLen()), make([]float32, p.KLen()), make([]float32, p.VLen())
		for x := range 2 {
			for i := range p.Nq {
				copy(dq[p.QRowsOf().Offset(1, 2+x, i):][:p.D], f32s(c.want.DQ[(x*p.Nq+i)*p.D:][:p.D]))
			}
		}
		copy(dk[p.KRowsOf().Offset(1, 1, 0):], f32s(c.want.DK))
		copy(dv[p.VRowsOf().Offset(1, 1, 0):], f32s(c.want.DV))
		tc.spoil(dq, dk, dv, c)
		bufs := make([]backend.Buffer, 3)
		for n, x := range [][]float32{dq, dk, dv} {
			if bufs[n], err = be.Alloc(backend.Float32, len(x)); err != nil {
				t.Fatal(err)
			}
			defer bufs[n].Release()
			if err := be.Write(bufs[n], 0, x); err != nil {
				t.Fatal(err)
			}
		}
		pt := Point{Status: StatusOK}
		if err := c.check(&pt, be, bufs[0], bufs[1], bufs[2]); err != nil {
			t.Fatal(err)
		}
		if pt.Status != tc.status || !strings.Contains(pt.Error, tc.want) || pt.CheckedRows != 2*p.Nq {
			t.Errorf("%s: %s %q, %d rows checked; want %s saying %q, %d rows", tc.name, pt.Status, pt.Error, pt.CheckedRows, tc.status, tc.want, 2*p.Nq)
		}
	}
}

func f32s(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

func optErr(e *float64) any {
	if e == nil {
		return nil
	}
	return *e
}
