package backendtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
)

// copyRanges are the ranges every pair of dtypes is copied through, in
// order, into a destination of copyLen elements from a source of as many:
// empty ones (one at the end), single elements, odd and even starts and
// lengths on both sides (half words split either way), a range that
// overwrites part of an earlier one, and the whole buffer's tail.
var copyRanges = []backend.CopyRange{
	{Dst: 3, Src: 1, N: 0},
	{Dst: copyLen, Src: copyLen, N: 0},
	{Dst: 0, Src: 0, N: 1},
	{Dst: 5, Src: 2, N: 17},
	{Dst: 24, Src: 23, N: 10},
	{Dst: 20, Src: 40, N: 6},
	{Dst: 35, Src: 7, N: 2},
	{Dst: 40, Src: 1, N: copyLen - 40},
}

const copyLen = 53

// testCopy checks a backend.Copier: every pair of the dtypes it stores,
// values rounded to the destination's dtype as an op stores an output
// (DType.Saturate; bits kept between one dtype), elements outside the
// ranges untouched, NaN and infinities carried, and bad ranges, aliasing,
// buffers of elsewhere, released buffers and a cancelled ctx refused
// before anything is written.
func (s *suite) testCopy(t *testing.T) {
	c, ok := s.be.(backend.Copier)
	if !ok {
		t.Skip("the backend is not a backend.Copier")
	}
	dts := []backend.DType{backend.Float32}
	if s.caps.Half {
		dts = append(dts, backend.Float16, backend.BFloat16)
	}
	for _, dst := range dts {
		for _, src := range dts {
			t.Run(fmt.Sprintf("%v_from_%v", dst, src), func(t *testing.T) {
				if err := s.checkCopy(c, dst, src); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
	t.Run("Refusals", func(t *testing.T) { s.checkCopyRefusals(t, c) })
}

// copyValues are a source's values: normal numbers of both signs that
// round in every half dtype, beyond float16's range, the largest float32
// (beyond bfloat16's), and NaN and infinities.
func copyValues(n int) []float32 {
	rng := rand.New(rand.NewPCG(24, uint64(n)))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32((rng.Float64()*2 - 1) * math.Exp2(float64(rng.IntN(20)-10)))
	}
	x[1] = 70000                // beyond float16
	x[7] = -math.MaxFloat32     // beyond bfloat16
	x[8] = float32(math.NaN())  // carried
	x[9] = float32(math.Inf(1)) // carried
	x[23] = float32(math.Inf(-1))
	return x
}

func (s *suite) checkCopy(c backend.Copier, dt, st backend.DType) error {
	be := s.be
	src, err := halfBuf(be, st, copyLen)
	if err != nil {
		return err
	}
	defer src.Release()
	dst, err := halfBuf(be, dt, copyLen)
	if err != nil {
		return err
	}
	defer dst.Release()
	vals := copyValues(copyLen)
	if err := writeSaturated(be, src, vals); err != nil {
		return err
	}
	have, err := readValues(be, src, 0, copyLen) // the source as stored
	if err != nil {
		return err
	}
	fill := make([]float32, copyLen)
	for i := range fill {
		fill[i] = float32(1000 + i)
	}
	if err := be.Write(dst, 0, fill); err != nil {
		return backend.Wrapf(err, "Write(dst)")
	}
	want, err := readValues(be, dst, 0, copyLen)
	if err != nil {
		return err
	}
	for _, r := range copyRanges {
		for i := range r.N {
			want[r.Dst+i] = dt.Saturate(have[r.Src+i])
		}
	}
	if err := guard(func() error { return c.Copy(context.Background(), dst, src, copyRanges...) }); err != nil {
		return backend.Wrapf(err, "Copy")
	}
	got, err := readValues(be, dst, 0, copyLen)
	if err != nil {
		return err
	}
	for i := range got {
		g, w := got[i], want[i]
		switch {
		case math.IsNaN(float64(w)) && math.IsNaN(float64(g)):
		case g == w && math.Signbit(float64(g)) == math.Signbit(float64(w)):
		case s.caps.FlushesSubnormals && subnormal32(w) && g == 0:
		default:
			return fmt.Errorf("element %d: %v, want %v (%v into %v)", i, g, w, st, dt)
		}
	}
	return nil
}

// writeSaturated writes x to b, each value first saturated to b's dtype
// (Write refuses a finite value beyond a half's range), the NaN and
// infinities as they are.
func writeSaturated(be backend.Backend, b backend.Buffer, x []float32) error {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = b.DType().Saturate(v)
	}
	if err := be.Write(b, 0, y); err != nil {
		return backend.Wrapf(err, "Write(%v)", b.DType())
	}
	return nil
}

func (s *suite) checkCopyRefusals(t *testing.T, c backend.Copier) {
	be := s.be
	a, err := halfBuf(be, backend.Float32, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := halfBuf(be, backend.Float32, 6)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if err := be.Write(b, 0, []float32{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	good := backend.CopyRange{Dst: 0, Src: 0, N: 2}
	for _, tc := range []struct {
		name     string
		dst, src backend.Buffer
		ranges   []backend.CopyRange
		sentinel error
	}{
		{"past the source", a, b, []backend.CopyRange{good, {Dst: 0, Src: 4, N: 3}}, backend.ErrShape},
		{"past the destination", a, b, []backend.CopyRange{good, {Dst: 7, Src: 0, N: 2}}, backend.ErrShape},
		{"negative length", a, b, []backend.CopyRange{good, {Dst: 2, Src: 2, N: -1}}, backend.ErrShape},
		{"negative start", a, b, []backend.CopyRange{good, {Dst: -1, Src: 0, N: 1}}, backend.ErrShape},
		{"one buffer", b, b, []backend.CopyRange{{Dst: 0, Src: 3, N: 2}}, backend.ErrShape},
		{"a buffer of elsewhere", a, fakeBuffer{8}, []backend.CopyRange{good}, backend.ErrForeignBuffer},
		{"nil source", a, nil, []backend.CopyRange{good}, backend.ErrShape},
	} {
		err := guard(func() error { return c.Copy(ctx, tc.dst, tc.src, tc.ranges...) })
		if e := wantErr(tc.name, err, tc.sentinel); e != nil {
			t.Error(e)
		}
		got, rerr := readValues(be, a, 0, 8)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if i := firstDiff(got, make([]float32, 8)); i >= 0 {
			t.Errorf("%s: element %d of the destination changed to %v: a refused copy writes nothing", tc.name, i, got[i])
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := guard(func() error { return c.Copy(cancelled, a, b, good) }); !errors.Is(err, context.Canceled) {
		t.Errorf("Copy with a cancelled ctx: %v, want context.Canceled", err)
	}
	r, err := halfBuf(be, backend.Float32, 4)
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	if e := wantErr("a released source", guard(func() error { return c.Copy(ctx, a, r, good) }), backend.ErrReleased); e != nil {
		t.Error(e)
	}
}
