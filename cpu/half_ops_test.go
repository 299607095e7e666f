package cpu

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// dtypes are the storage dtypes of one run's operands.
type dtypes struct{ q, k, v, o, bias backend.DType }

func (d dtypes) String() string {
	return fmt.Sprintf("Q %v K %v V %v O %v bias %v", d.q, d.k, d.v, d.o, d.bias)
}

// allDTypes is every combination of dtypes over the five operands.
func allDTypes() []dtypes {
	var all []dtypes
	for i := range 243 {
		pick := func(n int) backend.DType { return backend.DTypes[(i/n)%3] }
		all = append(all, dtypes{pick(1), pick(3), pick(9), pick(27), pick(81)})
	}
	return all
}

// unitRoundoff is the relative error of rounding to t: 2⁻¹¹ for float16,
// 2⁻⁸ for bfloat16, 0 for float32 (no rounding on the way out).
func unitRoundoff(t backend.DType) float64 {
	switch t {
	case backend.Float16:
		return 0x1p-11
	case backend.BFloat16:
		return 0x1p-8
	}
	return 0
}

// rounded is x as a buffer of dtype t holds it.
func rounded(t backend.DType, x []float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = t.Round(v)
	}
	return out
}

// closeRows compares got with want row by row (rows of n values): an
// infinity must be matched exactly, and a finite value within
//
//	Tol·max(1, max |want| over its row) + u·|want| + 2⁻²⁴·[u > 0]
//
// where u is the output's unit roundoff: float32 arithmetic as the suite
// allows it, then one rounding to the output's dtype (and float16's
// subnormal spacing).
func closeRows(name string, got []float32, want []float64, n int, u float64) error {
	if n == 0 {
		return nil
	}
	for r := 0; r < len(want)/n; r++ {
		w, g := want[r*n:(r+1)*n], got[r*n:(r+1)*n]
		big := 1.0
		for _, x := range w {
			if !math.IsInf(x, 0) {
				big = max(big, math.Abs(x))
			}
		}
		for j, x := range w {
			y := float64(g[j])
			if math.IsInf(x, 0) {
				if y != x {
					return fmt.Errorf("%s row %d [%d] = %v, want %v", name, r, j, y, x)
				}
				continue
			}
			tol := backendtest.Tol*big + u*math.Abs(x)
			if u > 0 {
				tol += 0x1p-24
			}
			if !(math.Abs(y-x) <= tol) {
				return fmt.Errorf("%s row %d [%d] = %v, want %v (±%.3g)", name, r, j, y, x, tol)
			}
		}
	}
	return nil
}

// runHalf runs c through Fused (or Scores, Softmax and Context when
// staged) with each operand in the dtype dt says, Write rounding the
// values, and compares the scores, weights, output and LSE with
// backendtest.Reference of the inputs rounded as the buffers hold them.
// It also checks that no half input changed and that nothing was written
// past O's end.
func runHalf(be backend.Backend, c backendtest.Case, dt dtypes, staged bool) error {
	ctx := context.Background()
	p := c.Problem.Resolved()
	rc := c
	rc.Q, rc.K, rc.V = rounded(dt.q, c.Q), rounded(dt.k, c.K), rounded(dt.v, c.V)
	var bufs []backend.Buffer
	defer func() {
		for _, b := range bufs {
			b.Release()
		}
	}()
	in := func(t backend.DType, x []float32) (backend.Buffer, error) {
		buf, err := be.Alloc(t, len(x))
		if err != nil {
			return nil, err
		}
		bufs = append(bufs, buf)
		return buf, be.Write(buf, 0, x)
	}
	q, err := in(dt.q, c.Q)
	if err != nil {
		return err
	}
	k, err := in(dt.k, c.K)
	if err != nil {
		return err
	}
	v, err := in(dt.v, c.V)
	if err != nil {
		return err
	}
	var bias, keep *backend.Mask
	if c.Bias != nil {
		rc.Bias = &backendtest.HostMask{Shape: c.Bias.Shape, Data: rounded(dt.bias, c.Bias.Data)}
		b, err := in(dt.bias, c.Bias.Data)
		if err != nil {
			return err
		}
		bias = &backend.Mask{Buf: b, Shape: c.Bias.Shape}
	}
	if c.Keep != nil {
		b, err := in(backend.Float32, c.Keep.Data)
		if err != nil {
			return err
		}
		keep = &backend.Mask{Buf: b, Shape: c.Keep.Shape}
	}
	const pad = 3
	o, err := be.Alloc(dt.o, p.OLen()+pad)
	if err != nil {
		return err
	}
	bufs = append(bufs, o)
	fill := make([]float32, p.OLen()+pad)
	for i := range fill {
		fill[i] = float32(math.NaN())
		if i >= p.OLen() {
			fill[i] = -3.5
		}
	}
	if err := be.Write(o, 0, fill); err != nil {
		return err
	}
	lse, err := in(backend.Float32, make([]float32, p.LSELen()))
	if err != nil {
		return err
	}
	before := snapshot(be, q, k, v)

	want := backendtest.Reference(rc)
	if staged {
		s, err := in(backend.Float32, make([]float32, p.ScoresLen()))
		if err != nil {
			return err
		}
		if err := be.Scores(ctx, backend.ScoresParams{Problem: c.Problem, Bias: bias}, q, k, s); err != nil {
			return err
		}
		got := make([]float32, p.ScoresLen())
		be.Read(got, s, 0)
		if err := closeRows("scores", got, want.Scores, p.Nk, 0); err != nil {
			return err
		}
		if err := be.Softmax(ctx, backend.SoftmaxParams{Problem: c.Problem, Keep: keep, LSE: lse}, s); err != nil {
			return err
		}
		be.Read(got, s, 0)
		if err := closeRows("weights", got, want.P, p.Nk, 0); err != nil {
			return err
		}
		if err := be.Context(ctx, backend.ContextParams{Problem: c.Problem}, s, v, o); err != nil {
			return err
		}
	} else {
		if err := be.Fused(ctx, backend.FusedParams{Problem: c.Problem, Bias: bias, Keep: keep}, q, k, v, o, lse); err != nil {
			return err
		}
	}
	got := make([]float32, p.OLen()+pad)
	if err := be.Read(got, o, 0); err != nil {
		return err
	}
	for i := p.OLen(); i < len(got); i++ {
		if got[i] != -3.5 {
			return fmt.Errorf("O element %d past its %d values was overwritten (now %v)", i, p.OLen(), got[i])
		}
	}
	if err := closeRows("O", got[:p.OLen()], want.O, p.Dv, unitRoundoff(dt.o)); err != nil {
		return err
	}
	gl := make([]float32, p.LSELen())
	be.Read(gl, lse, 0)
	if err := closeRows("LSE", gl, want.LSE, 1, 0); err != nil {
		return err
	}
	if after := snapshot(be, q, k, v); fmt.Sprint(after) != fmt.Sprint(before) {
		return fmt.Errorf("an input changed")
	}
	return nil
}

// snapshot is the stored bits of the half buffers among bufs.
func snapshot(be backend.Backend, bufs ...backend.Buffer) [][]uint16 {
	var out [][]uint16
	for _, b := range bufs {
		if b.DType().Half() {
			bits := make([]uint16, b.Len())
			be.ReadBits(bits, b, 0)
			out = append(out, bits)
		}
	}
	return out
}

// TestHalfOps runs Fused and the staged ops with every combination of
// dtypes over Q, K, V, O and the bias on problems with odd head dims,
// GQA, BNHD, causal masks, a window, softcap and ALiBi, and tiles one
// either side of the problem's sizes.
func TestHalfOps(t *testing.T) {
	left, right := 3, 0
	shapes := []struct {
		p          backend.Problem
		bias, keep *[4]int
		tq, tk     int
	}{
		{backend.Problem{B: 1, H: 2, KVHeads: 1, Nq: 17, Nk: 23, D: 5, Dv: 3, Causal: true}, &[4]int{1, 2, 17, 23}, nil, 16, 24},
		{backend.Problem{B: 2, H: 2, KVHeads: 2, Nq: 9, Nk: 11, D: 33, Dv: 7, Layout: backend.BNHD}, &[4]int{1, 2, 1, 11}, &[4]int{2, 1, 9, 11}, 8, 10},
		{backend.Problem{B: 1, H: 4, KVHeads: 2, Nq: 31, Nk: 31, D: 16, Dv: 17, Causal: true,
			Variants: backend.Variants{Window: &backend.Window{Left: left, Right: right}, Softcap: 5, ALiBi: []float32{0.5, 0.25, 0.125, 0.0625}}},
			&[4]int{1, 1, 31, 31}, nil, 32, 30},
		{backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 40, D: 64, Dv: 64}, &[4]int{1, 1, 1, 1}, nil, 4, 16},
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for _, sh := range shapes {
		be := newBackend(t, withHalf(true), WithTile(sh.tq, sh.tk), WithThreads(2))
		sh.p.Scale = float32(1 / math.Sqrt(float64(sh.p.D)))
		c := backendtest.RandomCase(rng, sh.p, sh.bias, sh.keep)
		for _, dt := range allDTypes() {
			for _, staged := range []bool{false, true} {
				if err := runHalf(be, c, dt, staged); err != nil {
					t.Fatalf("%v, %v, staged %v: %v", c, dt, staged, err)
				}
			}
		}
	}
}

// TestHalfDefaultTiles: half operands at the default tiles' edges, D = 64,
// causal or not, the staged ops' chunks of halfChunk keys one either side.
func TestHalfDefaultTiles(t *testing.T) {
	be := newBackend(t, withHalf(true))
	tq, tk := DefaultTiles()
	rng := rand.New(rand.NewPCG(15, 16))
	mixes := []dtypes{
		{backend.Float16, backend.Float16, backend.Float16, backend.Float16, backend.Float16},
		{backend.BFloat16, backend.BFloat16, backend.BFloat16, backend.BFloat16, backend.BFloat16},
		{backend.Float16, backend.BFloat16, backend.Float32, backend.BFloat16, backend.Float16},
	}
	for _, n := range [][2]int{{tq - 1, tk + 1}, {tq + 1, tk - 1}, {3, halfChunk + 1}} {
		for _, causal := range []bool{false, true} {
			p := backend.Problem{B: 1, H: 2, KVHeads: 1, Nq: n[0], Nk: n[1], D: 64, Dv: 64, Causal: causal}
			c := backendtest.RandomCase(rng, p, &[4]int{1, 1, n[0], n[1]}, nil)
			for _, dt := range mixes {
				for _, staged := range []bool{false, true} {
					if err := runHalf(be, c, dt, staged); err != nil {
						t.Fatalf("%v, %v, staged %v: %v", c, dt, staged, err)
					}
				}
			}
		}
	}
}

// TestHalfSaturate: a float16 O of float32 V beyond 65504 holds ±65504
// (0x7bff, 0xfbff), never ±Inf, on both paths.
func TestHalfSaturate(t *testing.T) {
	be := newBackend(t, withHalf(true))
	p := backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 2, Nk: 3, D: 2, Dv: 2, Scale: 1}
	q, _ := upload(be, []float32{1, 0, 0, 1})
	k, _ := upload(be, []float32{1, 0, 0, 1, 1, 1})
	v, _ := upload(be, []float32{1e5, -7e4, 1e5, -7e4, 1e5, -7e4})
	for _, staged := range []bool{false, true} {
		o, err := be.Alloc(backend.Float16, 4)
		if err != nil {
			t.Fatal(err)
		}
		if staged {
			s, _ := be.Alloc(backend.Float32, p.ScoresLen())
			ctx := context.Background()
			if err := be.Scores(ctx, backend.ScoresParams{Problem: p}, q, k, s); err != nil {
				t.Fatal(err)
			}
			if err := be.Softmax(ctx, backend.SoftmaxParams{Problem: p}, s); err != nil {
				t.Fatal(err)
			}
			if err := be.Context(ctx, backend.ContextParams{Problem: p}, s, v, o); err != nil {
				t.Fatal(err)
			}
		} else if err := be.Fused(context.Background(), backend.FusedParams{Problem: p}, q, k, v, o, nil); err != nil {
			t.Fatal(err)
		}
		bits := make([]uint16, 4)
		be.ReadBits(bits, o, 0)
		for i, want := range []uint16{0x7bff, 0xfbff, 0x7bff, 0xfbff} {
			if bits[i] != want {
				t.Errorf("staged %v: O[%d] = %#04x (%v), want %#04x", staged, i, bits[i], backend.Float16.Decode(bits[i]), want)
			}
		}
	}
}
