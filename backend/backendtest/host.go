package backendtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend"
)

// testWrap checks a backend.Wrapper: ops on wrapped host slices (at
// padded strides when the backend claims Caps.Strides) give the
// reference's answer, write O into the caller's slice and nothing past
// it, leave the read-only inputs bitwise unchanged, and refuse to write a
// read-only buffer or one that overlaps another operand.
func (s *suite) testWrap(t *testing.T) {
	w, ok := s.be.(backend.Wrapper)
	if !ok {
		t.Skip("the backend is not a backend.Wrapper")
	}
	specs := []spec{
		{p: prob(1, 1, 1, 1, 1, 1, 1)},
		{p: causal(bnhd(prob(2, 4, 2, 33, 70, 7, 9)))},
		{p: prob(2, 2, 2, 0, 4, 8, 8)},
	}
	if s.caps.Half {
		specs = append(specs, spec{p: bnhd(prob(1, 4, 2, 9, 20, 16, 16)), dt: Same(backend.Float16)})
	}
	for _, sp := range specs {
		c := sp.build()
		for _, strided := range []bool{false, true} {
			if strided && !s.caps.Strides {
				continue
			}
			t.Run(fmt.Sprintf("%v/strided=%t", c, strided), func(t *testing.T) {
				if err := s.runWrapped(w, c, strided); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
	t.Run("Refusals", func(t *testing.T) { s.testWrapRefusals(t, w) })
}

// wrapIn wraps data, stored as dtype dt, read-only, returning the buffer
// and the slice it wraps (float32 or bits).
func wrapIn(w backend.Wrapper, dt backend.DType, data []float32, readOnly bool) (backend.Buffer, any, error) {
	if !dt.Half() {
		buf, err := w.Wrap(data, readOnly)
		return buf, data, err
	}
	bits := make([]uint16, len(data))
	for i, x := range data {
		bits[i] = dt.Encode(x)
	}
	buf, err := w.WrapBits(dt, bits, readOnly)
	return buf, bits, err
}

// widened reads a wrapped slice (float32 or bits of dt) as float32.
func widened(dt backend.DType, x any) []float32 {
	if f, ok := x.([]float32); ok {
		return f
	}
	bits := x.([]uint16)
	out := make([]float32, len(bits))
	for i, b := range bits {
		out[i] = dt.Decode(b)
	}
	return out
}

func (s *suite) runWrapped(w backend.Wrapper, c Case, strided bool) error {
	p, q, k, v := c.Problem, c.Q, c.K, c.V
	if strided {
		p, q, k, v = ViewCase(c)
	}
	r := p.Resolved()
	var bufs []backend.Buffer
	defer func() {
		for _, b := range bufs {
			b.Release()
		}
	}()
	var held []any
	var copies [][]float32
	for i, x := range [][]float32{q, k, v} {
		dt := [3]backend.DType{c.DTypes.Q, c.DTypes.K, c.DTypes.V}[i]
		buf, data, err := wrapIn(w, dt, append(x, nans(pad)...), true)
		if err != nil {
			return backend.Wrapf(err, "wrapping %s", [3]string{"Q", "K", "V"}[i])
		}
		bufs, held = append(bufs, buf), append(held, data)
		copies = append(copies, slices.Clone(widened(dt, data)))
	}
	out := make([]float32, r.OLen()+pad)
	for i := range out {
		out[i] = unwritten
		if i >= r.OLen() {
			out[i] = padValue
		}
	}
	ob, oheld, err := wrapIn(w, c.DTypes.O, out, false)
	if err != nil {
		return backend.Wrapf(err, "wrapping O")
	}
	bufs = append(bufs, ob)
	err = guard(func() error {
		return s.be.Fused(context.Background(), backend.FusedParams{Problem: p}, bufs[0], bufs[1], bufs[2], ob, nil)
	})
	if err != nil {
		return backend.Wrapf(err, "Fused on wrapped buffers")
	}
	got := widened(c.DTypes.O, oheld)
	for i := r.OLen(); i < len(got); i++ {
		if want := c.DTypes.O.Round(padValue); got[i] != want {
			return fmt.Errorf("O: element %d past its %d values was overwritten (now %v)", i, r.OLen(), got[i])
		}
	}
	if err := compare(c, Reference(c), result{O: got[:r.OLen()]}); err != nil {
		return err
	}
	for i, data := range held {
		dt := [3]backend.DType{c.DTypes.Q, c.DTypes.K, c.DTypes.V}[i]
		if j := firstDiff(widened(dt, data), copies[i]); j >= 0 {
			return fmt.Errorf("Fused changed the wrapped read-only %s at element %d", [3]string{"Q", "K", "V"}[i], j)
		}
	}
	return nil
}

// testWrapRefusals checks what a Wrapper must refuse: writes into a
// read-only buffer, a read-only output, an output sharing memory with an
// input, a Float32 WrapBits.
func (s *suite) testWrapRefusals(t *testing.T, w backend.Wrapper) {
	p := prob(1, 2, 2, 4, 4, 8, 8)
	c := RandomCase(newRand("wrap refusals"), p, nil, nil)
	ctx := context.Background()
	q := slices.Clone(c.Q)
	qb, err := w.Wrap(q, true)
	if err != nil {
		t.Fatal(err)
	}
	defer qb.Release()
	kb, _ := w.Wrap(slices.Clone(c.K), true)
	vb, _ := w.Wrap(slices.Clone(c.V), true)
	defer kb.Release()
	defer vb.Release()
	if err := guard(func() error { return s.be.Write(qb, 0, []float32{1}) }); !errors.Is(err, backend.ErrShape) {
		t.Errorf("Write into a read-only wrap = %v, want ErrShape", err)
	}
	roOut, _ := w.Wrap(make([]float32, p.OLen()), true)
	defer roOut.Release()
	if err := guard(func() error {
		return s.be.Fused(ctx, backend.FusedParams{Problem: p}, qb, kb, vb, roOut, nil)
	}); !errors.Is(err, backend.ErrShape) {
		t.Errorf("Fused into a read-only O = %v, want ErrShape", err)
	}
	// O over Q's own memory, writable: it would overwrite Q mid-op.
	shared := append(slices.Clone(c.Q), 0)
	inQ, _ := w.Wrap(shared[:p.QLen()], true)
	defer inQ.Release()
	o2, _ := w.Wrap(shared[1:1+p.OLen()], false)
	defer o2.Release()
	if err := guard(func() error {
		return s.be.Fused(ctx, backend.FusedParams{Problem: p}, inQ, kb, vb, o2, nil)
	}); !errors.Is(err, backend.ErrShape) {
		t.Errorf("Fused with O over Q's memory = %v, want ErrShape", err)
	}
	if s.caps.Staged {
		sc, _ := w.Wrap(make([]float32, p.ScoresLen()), true)
		defer sc.Release()
		if err := guard(func() error { return s.be.Softmax(ctx, backend.SoftmaxParams{Problem: p}, sc) }); !errors.Is(err, backend.ErrShape) {
			t.Errorf("Softmax on read-only scores = %v, want ErrShape", err)
		}
	}
	if firstDiff(q, c.Q) >= 0 || firstDiff(shared[:p.QLen()], c.Q) >= 0 {
		t.Errorf("a refused op changed a wrapped input")
	}
	if _, err := w.WrapBits(backend.Float32, make([]uint16, 4), true); !errors.Is(err, backend.ErrShape) {
		t.Errorf("WrapBits(Float32) = %v, want ErrShape", err)
	}
	if s.caps.Half {
		hb, err := w.WrapBits(backend.Float16, make([]uint16, 4), true)
		if err != nil {
			t.Fatal(err)
		}
		if err := guard(func() error { return s.be.WriteBits(hb, 0, []uint16{1}) }); !errors.Is(err, backend.ErrShape) {
			t.Errorf("WriteBits into a read-only wrap = %v, want ErrShape", err)
		}
		hb.Release()
	}
	// Release forgets the slice and frees nothing of the caller's.
	keep := []float32{1, 2, 3}
	b, _ := w.Wrap(keep, false)
	b.Release()
	if keep[0] != 1 || keep[2] != 3 || math.IsNaN(float64(keep[1])) {
		t.Errorf("Release changed the wrapped slice: %v", keep)
	}
}
