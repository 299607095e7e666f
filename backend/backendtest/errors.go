package backendtest

// The suite's checks of what a backend refuses and when: buffers of
// the wrong length, dtype or backend, bad problems and masks, a closed
// backend, a cancelled context; each refused before any work, the
// caller's buffers unchanged.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/attn-go/attn/backend"
)

// fakeBuffer is a Buffer no backend allocated.
type fakeBuffer struct{ n int }

func (f fakeBuffer) Len() int             { return f.n }
func (f fakeBuffer) DType() backend.DType { return backend.Float32 }
func (f fakeBuffer) Release()             {}

// testBuffers checks Alloc, Write, Read and Release.
func (s *suite) testBuffers(t *testing.T) {
	be := s.be
	alloc := func(t *testing.T, n int) backend.Buffer {
		t.Helper()
		var b backend.Buffer
		if err := guard(func() (err error) { b, err = be.Alloc(backend.Float32, n); return err }); err != nil {
			t.Fatalf("Alloc(%d): %v", n, err)
		}
		if b == nil {
			t.Fatalf("Alloc(%d) returned a nil Buffer", n)
		}
		t.Cleanup(b.Release)
		if b.Len() != n {
			t.Fatalf("Alloc(%d).Len() = %d", n, b.Len())
		}
		return b
	}
	read := func(t *testing.T, b backend.Buffer, off, n int) []float32 {
		t.Helper()
		x := make([]float32, n)
		if err := guard(func() error { return be.Read(x, b, off) }); err != nil {
			t.Fatalf("Read(%d values at %d) of a buffer of %d: %v", n, off, b.Len(), err)
		}
		return x
	}
	write := func(t *testing.T, b backend.Buffer, off int, x []float32) {
		t.Helper()
		if err := guard(func() error { return be.Write(b, off, x) }); err != nil {
			t.Fatalf("Write(%d values at %d) to a buffer of %d: %v", len(x), off, b.Len(), err)
		}
	}
	wantErr := func(t *testing.T, what string, err, sentinel error) {
		t.Helper()
		switch {
		case err == nil:
			t.Errorf("%s: no error, want one wrapping %v", what, sentinel)
		case !errors.Is(err, sentinel):
			t.Errorf("%s: error %q does not wrap %v", what, err, sentinel)
		}
	}

	t.Run("Empty", func(t *testing.T) {
		b := alloc(t, 0)
		write(t, b, 0, nil)
		read(t, b, 0, 0)
	})
	t.Run("ZeroFilled", func(t *testing.T) {
		for _, n := range []int{1, 63, 1000, 4099} {
			b := alloc(t, n)
			for i, x := range read(t, b, 0, n) {
				if math.Float32bits(x) != 0 {
					t.Fatalf("Alloc(%d): element %d is %v, want +0", n, i, x)
				}
			}
		}
	})
	t.Run("RoundTrip", func(t *testing.T) {
		const n = 300
		b := alloc(t, n)
		want := make([]float32, n)
		src := uniform(newRand("RoundTrip"), n, 10)
		special := []float32{
			float32(math.NaN()), float32(math.Inf(1)), negInf, float32(math.Copysign(0, -1)),
			math.SmallestNonzeroFloat32, -math.MaxFloat32, math.Float32frombits(0x7fc12345),
		}
		copy(src[100:], special)
		for _, w := range []struct{ off, n int }{{0, 50}, {50, 1}, {97, 110}, {280, 20}, {n, 0}, {7, 0}} {
			write(t, b, w.off, src[w.off:w.off+w.n])
			copy(want[w.off:], src[w.off:w.off+w.n])
		}
		if i := firstDiff(read(t, b, 0, n), want); i >= 0 {
			t.Fatalf("after writes at offsets, element %d differs", i)
		}
		for _, r := range []struct{ off, n int }{{0, n}, {37, 50}, {100, len(special)}, {n - 1, 1}, {n, 0}} {
			if i := firstDiff(read(t, b, r.off, r.n), want[r.off:r.off+r.n]); i >= 0 {
				t.Errorf("Read(%d values at %d): element %d differs", r.n, r.off, r.off+i)
			}
		}
		// Out of range: an error, and nothing written.
		for _, r := range []struct{ off, n int }{{-1, 1}, {-1, 0}, {n - 2, 3}, {n + 1, 0}, {0, n + 1}} {
			x := make([]float32, r.n)
			for i := range x {
				x[i] = 42
			}
			err := guard(func() error { return be.Write(b, r.off, x) })
			wantErr(t, fmt.Sprintf("Write(%d values at %d) to a buffer of %d", r.n, r.off, n), err, backend.ErrShape)
			err = guard(func() error { return be.Read(x, b, r.off) })
			wantErr(t, fmt.Sprintf("Read(%d values at %d) of a buffer of %d", r.n, r.off, n), err, backend.ErrShape)
		}
		if i := firstDiff(read(t, b, 0, n), want); i >= 0 {
			t.Errorf("a failed Write changed element %d", i)
		}
		wantErr(t, "Write to a nil Buffer", guard(func() error { return be.Write(nil, 0, nil) }), backend.ErrShape)
		wantErr(t, "Read from a nil Buffer", guard(func() error { return be.Read(nil, nil, 0) }), backend.ErrShape)
	})
	t.Run("AllocNegative", func(t *testing.T) {
		var b backend.Buffer
		err := guard(func() (err error) { b, err = be.Alloc(backend.Float32, -1); return err })
		wantErr(t, "Alloc(-1)", err, backend.ErrShape)
		if err == nil && b != nil {
			b.Release()
		}
	})
	t.Run("DType", func(t *testing.T) {
		b := alloc(t, 8)
		if b.DType() != backend.Float32 {
			t.Errorf("Alloc(Float32, 8).DType() = %v", b.DType())
		}
		var x backend.Buffer
		err := guard(func() (err error) { x, err = be.Alloc(backend.DType(99), 4); return err })
		wantErr(t, "Alloc of an unknown dtype", err, backend.ErrShape)
		if err == nil && x != nil {
			x.Release()
		}
		// The bits of a Float32 buffer are not half bits.
		wantErr(t, "WriteBits to a Float32 buffer", guard(func() error { return be.WriteBits(b, 0, []uint16{1}) }), backend.ErrShape)
		wantErr(t, "ReadBits from a Float32 buffer", guard(func() error { return be.ReadBits(make([]uint16, 1), b, 0) }), backend.ErrShape)
		if s.caps.Half {
			return
		}
		for _, dt := range []backend.DType{backend.Float16, backend.BFloat16} {
			err := guard(func() (err error) { x, err = be.Alloc(dt, 4); return err })
			wantErr(t, fmt.Sprintf("Alloc(%v) without Caps().Half", dt), err, backend.ErrUnsupported)
			if err == nil && x != nil {
				x.Release()
			}
		}
	})
	t.Run("AllocTooLarge", func(t *testing.T) {
		if s.caps.MaxBufferLen == 0 {
			t.Skip("Caps().MaxBufferLen is 0: no limit")
		}
		var b backend.Buffer
		err := guard(func() (err error) { b, err = be.Alloc(backend.Float32, s.caps.MaxBufferLen+1); return err })
		wantErr(t, fmt.Sprintf("Alloc(MaxBufferLen+1 = %d)", s.caps.MaxBufferLen+1), err, backend.ErrTooLarge)
		if err == nil && b != nil {
			b.Release()
		}
	})
	t.Run("Released", func(t *testing.T) {
		b := alloc(t, 8)
		b.Release()
		b.Release() // a no-op
		wantErr(t, "Write after Release", guard(func() error { return be.Write(b, 0, []float32{1}) }), backend.ErrReleased)
		wantErr(t, "Read after Release", guard(func() error { return be.Read(make([]float32, 1), b, 0) }), backend.ErrReleased)
		// Liveness before dtype: released, not a Float32 buffer's ErrShape.
		wantErr(t, "WriteBits after Release", guard(func() error { return be.WriteBits(b, 0, []uint16{1}) }), backend.ErrReleased)
		wantErr(t, "ReadBits after Release", guard(func() error { return be.ReadBits(make([]uint16, 1), b, 0) }), backend.ErrReleased)
		alloc(t, 8) // the backend still works
	})
	t.Run("Foreign", func(t *testing.T) {
		other := openBackend(t, s.open)
		var fb backend.Buffer
		if err := guard(func() (err error) { fb, err = other.Alloc(backend.Float32, 8); return err }); err != nil || fb == nil {
			t.Fatalf("second backend: Alloc(8): %v", err)
		}
		defer fb.Release()
		for _, f := range []backend.Buffer{fb, fakeBuffer{8}} {
			wantErr(t, fmt.Sprintf("Write to a %T from elsewhere", f), guard(func() error { return be.Write(f, 0, []float32{1}) }), backend.ErrForeignBuffer)
			wantErr(t, fmt.Sprintf("Read from a %T from elsewhere", f), guard(func() error { return be.Read(make([]float32, 1), f, 0) }), backend.ErrForeignBuffer)
		}
		got := make([]float32, 8)
		if err := guard(func() error { return other.Read(got, fb, 0) }); err != nil {
			t.Fatalf("second backend: Read: %v", err)
		}
		if i := firstDiff(got, make([]float32, 8)); i >= 0 {
			t.Errorf("a Write through another backend changed element %d", i)
		}
	})
}

// errEnv holds the buffers of one bad call, and what they held before it.
type errEnv struct {
	t                   *testing.T
	s                   *suite
	other               backend.Backend // where foreign buffers come from
	p                   backend.Problem
	bias                *backend.Mask
	keep                *backend.Mask
	q, k, v, o, lse, sc backend.Buffer
	held                []held
}

// held is a buffer of a bad call and the backend that allocated it.
type held struct {
	input
	be backend.Backend
}

// buf allocates n values from be, fills them with a pattern and records
// them.
func (e *errEnv) buf(be backend.Backend, name string, n int) backend.Buffer {
	e.t.Helper()
	return e.bufOf(be, backend.Float32, name, n)
}

// bufOf is buf for n values of dtype t; the pattern is one every dtype
// holds.
func (e *errEnv) bufOf(be backend.Backend, t backend.DType, name string, n int) backend.Buffer {
	e.t.Helper()
	var b backend.Buffer
	if err := guard(func() (err error) { b, err = be.Alloc(t, n); return err }); err != nil || b == nil {
		e.t.Fatalf("Alloc(%v, %d) for %s: %v", t, n, name, err)
	}
	e.t.Cleanup(b.Release)
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(i%113)*0.25 - 3
	}
	if err := guard(func() error { return be.Write(b, 0, data) }); err != nil {
		e.t.Fatalf("Write %s: %v", name, err)
	}
	e.held = append(e.held, held{input{name, b, data}, be})
	return b
}

func (e *errEnv) short(name string, n int) backend.Buffer { return e.buf(e.s.be, name, max(n-1, 0)) }

func (e *errEnv) foreign(name string, n int) backend.Buffer { return e.buf(e.other, name, n) }

func (e *errEnv) released(name string, n int) backend.Buffer {
	b := e.buf(e.s.be, name, n)
	b.Release()
	e.held = e.held[:len(e.held)-1]
	return b
}

// unchanged reports the first buffer that a failed call modified.
func (e *errEnv) unchanged() error {
	for _, in := range e.held {
		got := make([]float32, len(in.data))
		if err := guard(func() error { return in.be.Read(got, in.buf, 0) }); err != nil {
			return backend.Wrapf(err, "reading %s back", in.name)
		}
		if i := firstDiff(got, in.data); i >= 0 {
			return fmt.Errorf("%s was written although the call failed: element %d was %v, now %v", in.name, i, in.data[i], got[i])
		}
	}
	return nil
}

type errCase struct {
	name string
	edit func(e *errEnv)
	want error
}

// problemErrs are bad problems every op must refuse.
func problemErrs() []errCase {
	edit := func(f func(p *backend.Problem)) func(e *errEnv) { return func(e *errEnv) { f(&e.p) } }
	return []errCase{
		{"B=-1", edit(func(p *backend.Problem) { p.B = -1 }), backend.ErrShape},
		{"Nq=-1", edit(func(p *backend.Problem) { p.Nq = -1 }), backend.ErrShape},
		{"Nk=-1", edit(func(p *backend.Problem) { p.Nk = -1 }), backend.ErrShape},
		{"H=0", edit(func(p *backend.Problem) { p.H = 0 }), backend.ErrShape},
		{"H=-4", edit(func(p *backend.Problem) { p.H = -4 }), backend.ErrShape},
		{"KVHeads=-2", edit(func(p *backend.Problem) { p.KVHeads = -2 }), backend.ErrShape},
		{"KVHeads=3_of_H=4", edit(func(p *backend.Problem) { p.KVHeads = 3 }), backend.ErrShape},
		{"KVHeads=8_of_H=4", edit(func(p *backend.Problem) { p.KVHeads = 8 }), backend.ErrShape},
		{"D=0", edit(func(p *backend.Problem) { p.D = 0 }), backend.ErrShape},
		{"D=-8", edit(func(p *backend.Problem) { p.D = -8 }), backend.ErrShape},
		{"Dv=-6", edit(func(p *backend.Problem) { p.Dv = -6 }), backend.ErrShape},
		{"scale=NaN", edit(func(p *backend.Problem) { p.Scale = float32(math.NaN()) }), backend.ErrShape},
		{"scale=+Inf", edit(func(p *backend.Problem) { p.Scale = float32(math.Inf(1)) }), backend.ErrShape},
		{"scale=-Inf", edit(func(p *backend.Problem) { p.Scale = negInf }), backend.ErrShape},
		{"layout=7", edit(func(p *backend.Problem) { p.Layout = 7 }), backend.ErrShape},
		{"overflow", edit(func(p *backend.Problem) { p.Nq, p.Nk = 1<<40, 1<<40 }), backend.ErrTooLarge},
	}
}

// maskErrs are bad masks; set is where the op takes the mask.
func maskErrs(name string, set func(e *errEnv, m *backend.Mask)) []errCase {
	bad := func(s [4]int) func(e *errEnv) {
		return func(e *errEnv) {
			set(e, &backend.Mask{Buf: e.buf(e.s.be, name, max(shapeLen(s), 1)+4), Shape: s})
		}
	}
	return []errCase{
		{name + "_shape[2,4,9,12]", bad([4]int{2, 4, 9, 12}), backend.ErrShape},
		{name + "_shape[3,1,1,11]", bad([4]int{3, 1, 1, 11}), backend.ErrShape},
		{name + "_shape[1,2,1,11]", bad([4]int{1, 2, 1, 11}), backend.ErrShape},
		{name + "_shape[1,1,9,0]", bad([4]int{1, 1, 9, 0}), backend.ErrShape},
		{name + "_shape[-1,1,1,11]", bad([4]int{-1, 1, 1, 11}), backend.ErrShape},
		{name + "_short", func(e *errEnv) { set(e, &backend.Mask{Buf: e.short(name, 2*9*11), Shape: [4]int{2, 1, 9, 11}}) }, backend.ErrShape},
		{name + "_nil_buffer", func(e *errEnv) { set(e, &backend.Mask{Shape: [4]int{1, 1, 1, 11}}) }, backend.ErrShape},
		{name + "_foreign", func(e *errEnv) { set(e, &backend.Mask{Buf: e.foreign(name, 11), Shape: [4]int{1, 1, 1, 11}}) }, backend.ErrForeignBuffer},
		{name + "_released", func(e *errEnv) { set(e, &backend.Mask{Buf: e.released(name, 11), Shape: [4]int{1, 1, 1, 11}}) }, backend.ErrReleased},
	}
}

// bufErrs are bad buffers for one operand: nil, too short, from another
// backend, released. slot is where the operand goes, n its length.
func bufErrs(name string, n int, slot func(e *errEnv) *backend.Buffer) []errCase {
	return []errCase{
		{name + "_nil", func(e *errEnv) { *slot(e) = nil }, backend.ErrShape},
		{name + "_short", func(e *errEnv) { *slot(e) = e.short(name, n) }, backend.ErrShape},
		{name + "_foreign", func(e *errEnv) { *slot(e) = e.foreign(name, n) }, backend.ErrForeignBuffer},
		{name + "_fake", func(e *errEnv) { *slot(e) = fakeBuffer{n} }, backend.ErrForeignBuffer},
		{name + "_released", func(e *errEnv) { *slot(e) = e.released(name, n) }, backend.ErrReleased},
	}
}

// testErrors makes bad calls to every op and checks that each returns an
// error wrapping the right sentinel, does not panic, and writes nothing.
func (s *suite) testErrors(t *testing.T) {
	// A valid problem; each case breaks one thing about it.
	p0 := scaled(prob(2, 4, 2, 9, 11, 8, 6), 0.3)
	other := openBackend(t, s.open)
	slot := func(f func(e *errEnv) *backend.Buffer) func(e *errEnv) *backend.Buffer { return f }
	q := slot(func(e *errEnv) *backend.Buffer { return &e.q })
	k := slot(func(e *errEnv) *backend.Buffer { return &e.k })
	v := slot(func(e *errEnv) *backend.Buffer { return &e.v })
	o := slot(func(e *errEnv) *backend.Buffer { return &e.o })
	lse := slot(func(e *errEnv) *backend.Buffer { return &e.lse })
	sc := slot(func(e *errEnv) *backend.Buffer { return &e.sc })
	setBias := func(e *errEnv, m *backend.Mask) { e.bias = m }
	setKeep := func(e *errEnv, m *backend.Mask) { e.keep = m }
	withLSE := func(e *errEnv) { e.lse = e.buf(e.s.be, "LSE", p0.LSELen()) }
	// Half buffers where the contract wants Float32, for a backend that
	// claims Half (the others cannot allocate them).
	half := func(name string, set func(e *errEnv, t backend.DType)) []errCase {
		if !s.caps.Half {
			return nil
		}
		return halfErrs(name, set)
	}
	halfLSE := half("LSE", func(e *errEnv, t backend.DType) { e.lse = e.bufOf(e.s.be, t, "LSE", p0.LSELen()) })
	halfKeep := half("keep", func(e *errEnv, t backend.DType) {
		e.keep = &backend.Mask{Buf: e.bufOf(e.s.be, t, "keep", p0.Nk), Shape: [4]int{1, 1, 1, p0.Nk}}
	})
	halfScores := half("scores", func(e *errEnv, t backend.DType) { e.sc = e.bufOf(e.s.be, t, "scores", p0.ScoresLen()) })

	join := func(lists ...[]errCase) []errCase {
		var all []errCase
		for _, l := range lists {
			all = append(all, l...)
		}
		return all
	}
	ops := []struct {
		name  string
		needs bool
		call  func(ctx context.Context, e *errEnv) error
		cases []errCase
	}{
		{"Fused", s.caps.Fused, func(ctx context.Context, e *errEnv) error {
			return s.be.Fused(ctx, backend.FusedParams{Problem: e.p, Bias: e.bias, Keep: e.keep}, e.q, e.k, e.v, e.o, e.lse)
		}, join(withEach(problemErrs(), withLSE),
			bufErrs("Q", p0.QLen(), q), bufErrs("K", p0.KLen(), k), bufErrs("V", p0.VLen(), v),
			bufErrs("O", p0.OLen(), o), bufErrs("LSE", p0.LSELen(), lse)[1:],
			maskErrs("bias", setBias), maskErrs("keep", setKeep), halfLSE, halfKeep,
		)},
		{"Scores", s.caps.Staged, func(ctx context.Context, e *errEnv) error {
			return s.be.Scores(ctx, backend.ScoresParams{Problem: e.p, Bias: e.bias, Keep: e.keep}, e.q, e.k, e.sc)
		}, join(problemErrs(),
			bufErrs("Q", p0.QLen(), q), bufErrs("K", p0.KLen(), k), bufErrs("scores", p0.ScoresLen(), sc),
			maskErrs("bias", setBias), halfScores, halfKeep,
		)},
		{"Softmax", s.caps.Staged, func(ctx context.Context, e *errEnv) error {
			return s.be.Softmax(ctx, backend.SoftmaxParams{Problem: e.p, Keep: e.keep, LSE: e.lse}, e.sc)
		}, join(
			withEach(problemErrs(), withLSE),
			bufErrs("scores", p0.ScoresLen(), sc), bufErrs("LSE", p0.LSELen(), lse)[1:],
			maskErrs("keep", setKeep), halfScores, halfLSE, halfKeep,
		)},
		{"Context", s.caps.Staged, func(ctx context.Context, e *errEnv) error {
			return s.be.Context(ctx, backend.ContextParams{Problem: e.p}, e.sc, e.v, e.o)
		}, join(problemErrs(),
			bufErrs("weights", p0.ScoresLen(), sc), bufErrs("V", p0.VLen(), v), bufErrs("O", p0.OLen(), o),
			half("weights", func(e *errEnv, t backend.DType) { e.sc = e.bufOf(e.s.be, t, "weights", p0.ScoresLen()) }),
		)},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			if !op.needs {
				t.Skip("backend does not claim it")
			}
			for _, ec := range op.cases {
				t.Run(ec.name, func(t *testing.T) {
					e := &errEnv{t: t, s: s, other: other, p: p0}
					e.q = e.buf(s.be, "Q", p0.QLen())
					e.k = e.buf(s.be, "K", p0.KLen())
					e.v = e.buf(s.be, "V", p0.VLen())
					e.o = e.buf(s.be, "O", p0.OLen())
					e.sc = e.buf(s.be, "scores", p0.ScoresLen())
					ec.edit(e)
					err := guard(func() error { return op.call(context.Background(), e) })
					var pe *panicError
					switch {
					case errors.As(err, &pe):
						t.Errorf("%s with %s: %v", op.name, ec.name, err)
					case err == nil:
						t.Errorf("%s with %s: no error, want one wrapping %v", op.name, ec.name, ec.want)
					case !errors.Is(err, ec.want):
						t.Errorf("%s with %s: error %q does not wrap %v", op.name, ec.name, err, ec.want)
					}
					if err := e.unchanged(); err != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}

// withEach runs before ahead of each case's own edit.
func withEach(cases []errCase, before func(e *errEnv)) []errCase {
	out := make([]errCase, len(cases))
	for i, c := range cases {
		out[i] = c
		out[i].edit = func(e *errEnv) { before(e); c.edit(e) }
	}
	return out
}

// testClosed checks that a closed backend refuses every call with
// ErrReleased.
func (s *suite) testClosed(t *testing.T) {
	be := s.open(t)
	if be == nil {
		t.Fatal("open returned a nil Backend")
	}
	p := prob(1, 1, 1, 2, 3, 4, 4)
	bufs := make([]backend.Buffer, 4)
	for i, n := range []int{p.QLen(), p.KLen(), p.VLen(), p.OLen()} {
		var err error
		if bufs[i], err = be.Alloc(backend.Float32, n); err != nil {
			be.Close()
			t.Fatalf("Alloc(%d): %v", n, err)
		}
	}
	if err := guard(be.Close); err != nil {
		t.Fatalf("Close: %v", err)
	}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, backend.ErrReleased) {
			t.Errorf("%s after Close: got %v, want an error wrapping %v", what, err, backend.ErrReleased)
		}
	}
	check("Alloc", guard(func() error { _, err := be.Alloc(backend.Float32, 4); return err }))
	check("Write", guard(func() error { return be.Write(bufs[0], 0, []float32{1}) }))
	check("Read", guard(func() error { return be.Read(make([]float32, 1), bufs[0], 0) }))
	check("WriteBits", guard(func() error { return be.WriteBits(bufs[0], 0, []uint16{1}) }))
	check("ReadBits", guard(func() error { return be.ReadBits(make([]uint16, 1), bufs[0], 0) }))
	if s.caps.Half {
		check("Alloc(f16)", guard(func() error { _, err := be.Alloc(backend.Float16, 4); return err }))
	}
	if s.caps.Fused {
		check("Fused", guard(func() error {
			return be.Fused(context.Background(), backend.FusedParams{Problem: p}, bufs[0], bufs[1], bufs[2], bufs[3], nil)
		}))
	}
	if s.caps.Staged {
		check("Context", guard(func() error {
			return be.Context(context.Background(), backend.ContextParams{Problem: prob(1, 1, 1, 1, 1, 1, 1)}, bufs[0], bufs[1], bufs[2])
		}))
	}
}

// testCancel checks that every op returns the context's error when called
// with a cancelled context.
func (s *suite) testCancel(t *testing.T) {
	p := prob(1, 1, 1, 512, 512, 64, 64)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e := &errEnv{t: t, s: s, p: p}
	q := e.buf(s.be, "Q", p.QLen())
	k := e.buf(s.be, "K", p.KLen())
	v := e.buf(s.be, "V", p.VLen())
	o := e.buf(s.be, "O", p.OLen())
	sc := e.buf(s.be, "scores", p.ScoresLen())
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: got %v, want an error wrapping %v", op, err, context.Canceled)
		}
	}
	if s.caps.Fused {
		check("Fused", guard(func() error { return s.be.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, nil) }))
	}
	if s.caps.Staged {
		check("Scores", guard(func() error { return s.be.Scores(ctx, backend.ScoresParams{Problem: p}, q, k, sc) }))
		check("Softmax", guard(func() error { return s.be.Softmax(ctx, backend.SoftmaxParams{Problem: p}, sc) }))
		check("Context", guard(func() error { return s.be.Context(ctx, backend.ContextParams{Problem: p}, sc, v, o) }))
	}
}
