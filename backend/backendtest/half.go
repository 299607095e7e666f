package backendtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/attn-go/attn/backend"
)

// The checks of a backend that claims Caps.Half: half buffers (Alloc,
// Write's rounding and refusals, Read, WriteBits and ReadBits), every op
// over dtype combinations of its operands, and the saturation of an
// output beyond its dtype's range.

var (
	f32  = backend.Float32
	f16  = backend.Float16
	bf16 = backend.BFloat16
)

// dtypeCover are the dtype combinations (Q, K, V, O, bias) the op cases
// run: every operand in one dtype, then rows that hold every pair of
// dtypes for every pair of operands at least once (a pairwise cover;
// TestDTypeCover checks it), so that each operand is read and written in
// each dtype next to each dtype of each other operand.
var dtypeCover = []DTypes{
	Same(f32), Same(f16), Same(bf16),
	{f32, f16, bf16, bf16, f32},
	{bf16, f16, f32, f32, f16},
	{f16, f32, f32, bf16, bf16},
	{bf16, f32, f16, f16, f32},
	{f32, bf16, f16, f32, bf16},
	{f16, bf16, f32, f16, f32},
	{f16, f32, bf16, f32, f16},
	{f32, f16, bf16, f16, bf16},
	{f32, bf16, f16, bf16, f16},
}

// halfShapes are the problems the dtype combinations run at, taken from
// the other groups: Dv ≠ D with a full bias, odd head dims with causal
// masking and a broadcast bias, GQA in BNHD with a key-padding mask,
// decoding (Nq = 1) with MQA, rows that see no key (exact zeros in every
// dtype), and every variant at once.
func halfShapes() []spec {
	v := variantSpecs()
	return []spec{
		{p: prob(1, 2, 2, 33, 65, 40, 24), bias: shape(1, 2, 33, 65)},
		{p: causal(prob(1, 2, 2, 17, 129, 3, 3)), bias: shape(1, 1, 1, 129)},
		{p: bnhd(prob(2, 4, 2, 65, 63, 16, 24)), keep: shape(2, 1, 1, 63)},
		{p: prob(1, 4, 1, 1, 300, 64, 64), bias: shape(1, 4, 1, 300)},
		maskedRowSpecs()[2],
		v[len(v)-1],
	}
}

// halfSpecs runs every uniform row of dtypeCover at every shape of
// halfShapes, and each mixed row at two shapes in turn, then the
// saturation cases.
func halfSpecs() []spec {
	shapes := halfShapes()
	var specs []spec
	n := 0
	for _, dt := range dtypeCover {
		at := shapes
		if dt != Same(dt.Q) {
			at = []spec{shapes[n%len(shapes)], shapes[(n+1)%len(shapes)]}
			n += 2
		}
		for _, sp := range at {
			sp.dt = dt
			specs = append(specs, sp)
		}
	}
	return append(specs, saturateSpecs()...)
}

// saturateSpecs are outputs beyond their dtype's range: float32 (and
// bfloat16) V columns of about ±10⁵ (±10³⁰) give float16 outputs past
// 65504, which must be stored as ±65504 (compare clamps want to
// ±MaxFinite; an infinity fails), next to columns that stay in range.
func saturateSpecs() []spec {
	big := func(scale float32) func(c *Case) {
		return func(c *Case) {
			p := c.Problem.Resolved()
			vs := p.VStrides()
			for b := range p.B {
				for h := range p.KVHeads {
					for j := range p.Nk {
						row := c.V[vs.Offset(b, h, j):][:p.Dv]
						for d := range row {
							switch d % 3 {
							case 0:
								row[d] = scale * (1 + row[d]/4)
							case 1:
								row[d] = -3 * scale
							}
						}
					}
				}
			}
		}
	}
	return []spec{
		{p: prob(1, 2, 2, 9, 33, 8, 6), dt: DTypes{O: f16}, note: "V_beyond_f16", edit: big(1e5)},
		{p: causal(prob(1, 2, 1, 17, 65, 16, 8)), dt: DTypes{f16, f16, bf16, f16, f32}, note: "V_far_beyond_f16", edit: big(1e30)},
		{p: bnhd(prob(2, 2, 1, 5, 40, 8, 9)), dt: DTypes{bf16, bf16, f32, f16, bf16}, bias: shape(2, 1, 5, 40), note: "V_beyond_f16", edit: big(7e4)},
	}
}

// testHalf runs the op cases over dtype combinations, and the exact
// checks of saturation and subnormals.
func (s *suite) testHalf(t *testing.T) {
	if !s.caps.Half {
		t.Skip("backend does not claim Half (the DType subtest of Buffers checks that it refuses half buffers)")
	}
	s.cases(t, halfSpecs())
	t.Run("Exact", func(t *testing.T) {
		for _, c := range exactCases() {
			t.Run(c.name, func(t *testing.T) {
				if err := c.run(s.be, s.caps); err != nil {
					t.Error(err)
				}
			})
		}
	})
}

// exactCase is a problem whose float32 arithmetic is exact, so that what
// a backend returns must equal the rounded operand bit for bit. One key
// per row makes every weight exactly 1 and O the key's value row; D = 1
// with scale 1 makes each score q·k + bias, and with the other factor 1
// (or Q = 0 under a bias) each score is the operand's value itself.
type exactCase struct {
	name    string
	dt      DTypes
	operand string    // "V" (H heads of one key's 32 values), "Q", "K" or "bias" (into the scores)
	x       []float32 // the operand's values
	want    []float32 // what O (for V) or the scores must hold exactly
}

// hostCase is the Case that reads x as c.operand.
func (c exactCase) hostCase() Case {
	n := len(c.x)
	p := backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: n, Nk: 1, D: 1, Dv: 1, Scale: 1}
	switch c.operand {
	case "V":
		const dv = 32
		p.H, p.KVHeads, p.Nq, p.Dv = n/dv, n/dv, 1, dv
	case "K":
		p.Nq, p.Nk = 1, n
	}
	hc := Case{Problem: p, Q: make([]float32, p.QLen()), K: make([]float32, p.KLen()), V: make([]float32, p.VLen()), DTypes: c.dt}
	for i := range hc.K {
		hc.K[i] = 1
	}
	for i := range hc.Q {
		hc.Q[i] = 1
	}
	switch c.operand {
	case "V":
		copy(hc.V, c.x)
	case "Q":
		copy(hc.Q, c.x)
	case "K":
		copy(hc.K, c.x)
	case "bias":
		clear(hc.Q)
		hc.Bias = &HostMask{Shape: [4]int{1, 1, n, 1}, Data: c.x}
	}
	return hc
}

// exactCases are the subnormals of each half dtype, read exactly (as V,
// and as Q, K and the bias into the scores), and outputs stored exactly:
// rounded from a float32 V, and saturated to ±MaxFinite from values
// beyond it.
func exactCases() []exactCase {
	var cs []exactCase
	for _, t := range []backend.DType{f16, bf16} {
		// Every positive subnormal of Float16 (1023 of them); for
		// BFloat16, whose subnormals are float32's with the low half
		// zero, every 4th of its 127 and the largest. Both signs, a
		// multiple of 32 values.
		last, step := uint16(0x3ff), uint16(1)
		if t == bf16 {
			last, step = 0x7f, 4
		}
		var sub []float32
		for b := uint16(1); b < last; b += step {
			sub = append(sub, t.Decode(b), t.Decode(b|0x8000))
		}
		sub = append(sub, t.Decode(last), t.Decode(last|0x8000))
		for len(sub)%32 != 0 {
			sub = append(sub, 0)
		}
		name := t.String() + "_subnormals_"
		cs = append(cs,
			exactCase{name: name + "V", dt: DTypes{V: t}, operand: "V", x: sub, want: sub},
			exactCase{name: name + "V_to_" + t.String(), dt: DTypes{V: t, O: t}, operand: "V", x: sub, want: sub},
			exactCase{name: name + "Q", dt: DTypes{Q: t}, operand: "Q", x: sub, want: sub},
			exactCase{name: name + "K", dt: DTypes{K: t}, operand: "K", x: sub, want: sub},
			exactCase{name: name + "bias", dt: DTypes{Bias: t}, operand: "bias", x: sub, want: sub},
		)
		// Float32 values rounded to t as the output is stored,
		// subnormals of t among them, and values beyond t's range
		// saturated.
		var v, want []float32
		for _, x := range []float32{
			1 + 0x1p-11, 1 + 3*0x1p-11, 1 + 0x1p-8, 1 + 3*0x1p-8, -(1 + 0x1p-8), 0x1p-25, 3 * 0x1p-25, 0x1p-133, 3 * 0x1p-134,
			65504, 65519, 65520, -70000, 1e5, -1e30, 3.3e38, math.MaxFloat32, -math.MaxFloat32, 0, float32(math.Copysign(0, -1)),
		} {
			v, want = append(v, x), append(want, t.Saturate(x))
		}
		for len(v)%32 != 0 {
			v, want = append(v, 0.5), append(want, 0.5)
		}
		cs = append(cs, exactCase{name: "f32_V_to_" + t.String(), dt: DTypes{O: t}, operand: "V", x: v, want: want})
	}
	return cs
}

// run uploads the case, runs Fused (for V) and the staged ops, and
// compares O (or the scores) with want bitwise (−0 and +0 alike where
// want is 0: a sum may lose a zero's sign; and where want is a float32
// subnormal under Caps.FlushesSubnormals).
func (c exactCase) run(be backend.Backend, caps backend.Caps) error {
	hc := c.hostCase()
	var errs []error
	check := func(what string, got []float32) {
		for i, w := range c.want {
			if g := got[i]; math.Float32bits(g) != math.Float32bits(w) && !(g == 0 && (w == 0 || caps.FlushesSubnormals && subnormal32(w))) {
				errs = append(errs, fmt.Errorf("%v: %s element %d is %g (%#08x), want exactly %g (%#08x)", c.dt, what, i, g, math.Float32bits(g), w, math.Float32bits(w)))
				return
			}
		}
	}
	ctx := context.Background()
	if caps.Fused && c.operand == "V" {
		r, err := execFused(ctx, be, hc, false)
		if err != nil {
			return backend.Wrapf(err, "fused %v", hc)
		}
		check("fused O", r.O)
	}
	if caps.Staged {
		r, err := execStaged(ctx, be, hc, false)
		if err != nil {
			return backend.Wrapf(err, "staged %v", hc)
		}
		if c.operand == "V" {
			check("staged O", r.O)
		} else {
			check("scores", r.S)
		}
	}
	return errors.Join(errs...)
}

// halfBufferChecks are the checks of half buffers, each run for Float16
// and BFloat16 on a backend that claims Caps.Half. Each returns what is
// wrong, so that the faults of the naive backend can be shown caught.
var halfBufferChecks = []struct {
	name  string
	check func(be backend.Backend, caps backend.Caps, t backend.DType) error
}{
	{"Alloc", checkHalfAlloc},
	{"WriteRounds", checkHalfWrite},
	{"WriteRefuses", checkHalfFits},
	{"Bits", checkHalfBits},
	{"Ranges", checkHalfRanges},
}

// testHalfBuffers runs halfBufferChecks.
func (s *suite) testHalfBuffers(t *testing.T) {
	if !s.caps.Half {
		t.Skip("backend does not claim Half (the DType subtest of Buffers checks that it refuses half buffers)")
	}
	for _, c := range halfBufferChecks {
		t.Run(c.name, func(t *testing.T) {
			for _, dt := range []backend.DType{f16, bf16} {
				if err := c.check(s.be, s.caps, dt); err != nil {
					t.Errorf("%v: %v", dt, err)
				}
			}
		})
	}
}

// halfBuf allocates n elements of t from be.
func halfBuf(be backend.Backend, t backend.DType, n int) (backend.Buffer, error) {
	var b backend.Buffer
	err := guard(func() (err error) { b, err = be.Alloc(t, n); return err })
	switch {
	case err != nil:
		return nil, backend.Wrapf(err, "Alloc(%v, %d)", t, n)
	case b == nil:
		return nil, fmt.Errorf("Alloc(%v, %d) returned a nil Buffer", t, n)
	case b.Len() != n || b.DType() != t:
		b.Release()
		return nil, fmt.Errorf("Alloc(%v, %d): Len() = %d, DType() = %v", t, n, b.Len(), b.DType())
	}
	return b, nil
}

func readBits(be backend.Backend, b backend.Buffer, off, n int) ([]uint16, error) {
	x := make([]uint16, n)
	if err := guard(func() error { return be.ReadBits(x, b, off) }); err != nil {
		return nil, backend.Wrapf(err, "ReadBits(%d at %d)", n, off)
	}
	return x, nil
}

func readValues(be backend.Backend, b backend.Buffer, off, n int) ([]float32, error) {
	x := make([]float32, n)
	if err := guard(func() error { return be.Read(x, b, off) }); err != nil {
		return nil, backend.Wrapf(err, "Read(%d at %d)", n, off)
	}
	return x, nil
}

// wantErr reports err unless it wraps sentinel.
func wantErr(what string, err, sentinel error) error {
	var pe *panicError
	switch {
	case errors.As(err, &pe):
		return backend.Wrapf(err, "%s", what)
	case err == nil:
		return fmt.Errorf("%s: no error, want one wrapping %v", what, sentinel)
	case !errors.Is(err, sentinel):
		return fmt.Errorf("%s: error %q does not wrap %v", what, err, sentinel)
	}
	return nil
}

// checkHalfAlloc: half buffers of any length, zero-filled (+0 bits),
// Len counting elements, the size limits, and Release.
func checkHalfAlloc(be backend.Backend, caps backend.Caps, t backend.DType) error {
	for _, n := range []int{0, 1, 7, 1000, 4099} {
		b, err := halfBuf(be, t, n)
		if err != nil {
			return err
		}
		bits, err := readBits(be, b, 0, n)
		if err != nil {
			b.Release()
			return err
		}
		vals, err := readValues(be, b, 0, n)
		b.Release()
		if err != nil {
			return err
		}
		for i := range n {
			if bits[i] != 0 || math.Float32bits(vals[i]) != 0 {
				return fmt.Errorf("Alloc(%v, %d): element %d is %#04x (%v), want +0", t, n, i, bits[i], vals[i])
			}
		}
	}
	var x backend.Buffer
	err := guard(func() (err error) { x, err = be.Alloc(t, -1); return err })
	if err == nil && x != nil {
		x.Release()
	}
	errs := []error{wantErr(fmt.Sprintf("Alloc(%v, -1)", t), err, backend.ErrShape)}
	if caps.MaxBufferLen > 0 {
		err := guard(func() (err error) { x, err = be.Alloc(t, caps.MaxBufferLen+1); return err })
		if err == nil && x != nil {
			x.Release()
		}
		errs = append(errs, wantErr(fmt.Sprintf("Alloc(%v, MaxBufferLen+1 = %d)", t, caps.MaxBufferLen+1), err, backend.ErrTooLarge))
	}
	b, err := halfBuf(be, t, 8)
	if err != nil {
		return err
	}
	b.Release()
	b.Release() // a no-op
	errs = append(errs,
		wantErr("Write after Release", guard(func() error { return be.Write(b, 0, []float32{1}) }), backend.ErrReleased),
		wantErr("Read after Release", guard(func() error { return be.Read(make([]float32, 1), b, 0) }), backend.ErrReleased),
		wantErr("WriteBits after Release", guard(func() error { return be.WriteBits(b, 0, []uint16{1}) }), backend.ErrReleased),
		wantErr("ReadBits after Release", guard(func() error { return be.ReadBits(make([]uint16, 1), b, 0) }), backend.ErrReleased),
	)
	return errors.Join(errs...)
}

// roundings are values whose rounding to t is worked out by hand: ties to
// even both ways, just past a tie, subnormals (exact, and rounded to:
// ties between zero and the smallest, which go to zero, and between two
// subnormals), values below half the smallest subnormal (to ±0), the
// edges of the range.
func roundings(t backend.DType) [][2]float32 {
	negZero := float32(math.Copysign(0, -1))
	if t == f16 {
		return [][2]float32{
			{1 + 0x1p-11, 1}, {1 + 3*0x1p-11, 1 + 0x1p-9}, {1 + 0x1p-11 + 0x1p-20, 1 + 0x1p-10},
			{-(1 + 0x1p-11), -1}, {2049, 2048}, {2051, 2052},
			{0x1p-24, 0x1p-24}, {1023 * 0x1p-24, 1023 * 0x1p-24}, {0x1p-14, 0x1p-14}, {-5 * 0x1p-24, -5 * 0x1p-24},
			{0x1p-25, 0}, {3 * 0x1p-25, 0x1p-23}, {5 * 0x1p-25, 0x1p-23}, {7 * 0x1p-25, 0x1p-22}, {0x1p-25 + 0x1p-35, 0x1p-24},
			{0x1p-26, 0}, {-0x1p-26, negZero}, {1e-30, 0},
			{65504, 65504}, {65519, 65504}, {-65519.99, -65504}, {0x1p-14 - 0x1p-25, 0x1p-14},
		}
	}
	sub := func(b uint32) float32 { return math.Float32frombits(b) }
	return [][2]float32{
		{1 + 0x1p-8, 1}, {1 + 3*0x1p-8, 1 + 0x1p-6}, {1 + 0x1p-8 + 0x1p-20, 1 + 0x1p-7},
		{-(1 + 0x1p-8), -1}, {257, 256}, {259, 260},
		{sub(0x00010000), sub(0x00010000)}, {sub(0x007f0000), sub(0x007f0000)}, {sub(0x00800000), sub(0x00800000)},
		{sub(0x00008000), 0}, {sub(0x00018000), sub(0x00020000)}, {sub(0x00028000), sub(0x00020000)},
		{sub(0x00008001), sub(0x00010000)}, {sub(0x00007fff), 0}, {sub(0x80007fff), negZero},
		{t.MaxFinite(), t.MaxFinite()}, {sub(0x7f7f7fff), t.MaxFinite()}, {sub(0x007fffff), sub(0x00800000)},
	}
}

// checkHalfWrite: Write rounds to nearest even (DType.Encode) — the
// worked values, random values of every magnitude the dtype holds, and
// ±0, ±Inf and NaN — at offsets, leaving the rest alone; Read widens
// exactly; ReadBits returns the rounded bits.
func checkHalfWrite(be backend.Backend, caps backend.Caps, t backend.DType) error {
	var src, want []float32
	for _, r := range roundings(t) {
		if t.Round(r[0]) != r[1] || math.Signbit(float64(t.Round(r[0]))) != math.Signbit(float64(r[1])) {
			return fmt.Errorf("the suite's own table: %v rounds %g to %g, not %g", t, r[0], t.Round(r[0]), r[1])
		}
		src, want = append(src, r[0]), append(want, r[1])
	}
	rng := newRand("checkHalfWrite" + t.String())
	lo, hi := -24, 15 // exponents of f16's smallest subnormal and largest binade
	if t == bf16 {
		lo, hi = -133, 127
	}
	for range 2000 {
		// A random float32 in t's range, a third of them ties.
		x := float32(math.Ldexp(1+rng.Float64(), lo+rng.IntN(hi-lo+1)))
		if rng.IntN(3) == 0 {
			b := math.Float32bits(x)
			keep := uint32(0xffff0000) // bf16: the upper 16 bits
			if t == f16 {
				keep = 0xffffe000 // 10 of float32's 23 fraction bits
			}
			x = math.Float32frombits(b&keep | (^keep+1)>>1)
		}
		if rng.IntN(2) == 0 {
			x = -x
		}
		if t.Round(x) != float32(math.Inf(1)) && t.Round(x) != float32(math.Inf(-1)) {
			src, want = append(src, x), append(want, t.Round(x))
		}
	}
	inf := float32(math.Inf(1))
	src = append(src, 0, float32(math.Copysign(0, -1)), inf, -inf, float32(math.NaN()))
	want = append(want, 0, float32(math.Copysign(0, -1)), inf, -inf, float32(math.NaN()))

	const off = 3
	b, err := halfBuf(be, t, off+len(src)+2)
	if err != nil {
		return err
	}
	defer b.Release()
	if err := guard(func() error { return be.Write(b, off, src) }); err != nil {
		return backend.Wrapf(err, "Write(%d values at %d)", len(src), off)
	}
	bits, err := readBits(be, b, 0, b.Len())
	if err != nil {
		return err
	}
	vals, err := readValues(be, b, 0, b.Len())
	if err != nil {
		return err
	}
	for i := range b.Len() {
		if i < off || i >= off+len(src) {
			if bits[i] != 0 {
				return fmt.Errorf("Write(%d values at %d) changed element %d to %#04x", len(src), off, i, bits[i])
			}
			continue
		}
		x, w := src[i-off], want[i-off]
		g := vals[i]
		switch {
		case w != w:
			if g == g || t.Decode(bits[i]) == t.Decode(bits[i]) {
				return fmt.Errorf("Write(NaN) stored %#04x, read back as %v, want a NaN", bits[i], g)
			}
		case math.Float32bits(g) != math.Float32bits(w):
			return fmt.Errorf("Write(%g = %#08x) read back as %g (%#08x), want %g (%#08x): to nearest, ties to even", x, math.Float32bits(x), g, math.Float32bits(g), w, math.Float32bits(w))
		case bits[i] != t.Encode(x):
			return fmt.Errorf("Write(%g) stored the bits %#04x, want %#04x", x, bits[i], t.Encode(x))
		}
	}
	return nil
}

// checkHalfFits: Write refuses a finite value beyond t's range
// (ErrNonFinite) and writes nothing, not even the values before it;
// infinities and NaN are not refused.
func checkHalfFits(be backend.Backend, caps backend.Caps, t backend.DType) error {
	over := []float32{65520, -65520, 1e5, -7e4, math.MaxFloat32}
	if t == bf16 {
		over = []float32{math.MaxFloat32, -math.MaxFloat32, math.Float32frombits(0x7f7f8000)}
	}
	b, err := halfBuf(be, t, 8)
	if err != nil {
		return err
	}
	defer b.Release()
	held := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	if err := guard(func() error { return be.Write(b, 0, held) }); err != nil {
		return backend.Wrapf(err, "Write(1…8)")
	}
	var errs []error
	for _, x := range over {
		src := []float32{-1, -2, x, -4}
		what := fmt.Sprintf("Write of %g into %v", x, t)
		err := guard(func() error { return be.Write(b, 2, src) })
		errs = append(errs, wantErr(what, err, backend.ErrNonFinite))
		got, err := readValues(be, b, 0, len(held))
		if err != nil {
			return err
		}
		if i := firstDiff(got, held); i >= 0 {
			return fmt.Errorf("%s failed but changed element %d from %v to %v", what, i, held[i], got[i])
		}
	}
	inf := float32(math.Inf(1))
	if err := guard(func() error { return be.Write(b, 0, []float32{inf, -inf, float32(math.NaN()), t.MaxFinite()}) }); err != nil {
		errs = append(errs, backend.Wrapf(err, "Write of ±Inf, NaN and MaxFinite into %v", t))
	}
	return errors.Join(errs...)
}

// checkHalfBits: every bit pattern (NaNs and subnormals too) goes through
// WriteBits and ReadBits unchanged, at offsets; Read widens each exactly
// (DType.Decode); and Write of what Read gave stores the same bits.
func checkHalfBits(be backend.Backend, caps backend.Caps, t backend.DType) error {
	const n = 1 << 16
	b, err := halfBuf(be, t, n+10)
	if err != nil {
		return err
	}
	defer b.Release()
	all := make([]uint16, n)
	for i := range all {
		all[i] = uint16(i)
	}
	// Three writes that make up the whole.
	for _, w := range []struct{ off, from, to int }{{5, 0, 1000}, {1005, 1000, 1000}, {1005, 1000, n}} {
		if err := guard(func() error { return be.WriteBits(b, w.off, all[w.from:w.to]) }); err != nil {
			return backend.Wrapf(err, "WriteBits(%d at %d)", w.to-w.from, w.off)
		}
	}
	got, err := readBits(be, b, 0, b.Len())
	if err != nil {
		return err
	}
	for i, g := range got {
		w := uint16(0)
		if i >= 5 && i < 5+n {
			w = all[i-5]
		}
		if g != w {
			return fmt.Errorf("WriteBits then ReadBits: element %d is %#04x, want %#04x", i, g, w)
		}
	}
	part, err := readBits(be, b, 777, 100)
	if err != nil {
		return err
	}
	for i, g := range part {
		if g != all[772+i] {
			return fmt.Errorf("ReadBits(100 at 777): element %d is %#04x, want %#04x", i, g, all[772+i])
		}
	}
	vals, err := readValues(be, b, 5, n)
	if err != nil {
		return err
	}
	var finite []float32
	for i, v := range vals {
		w := t.Decode(all[i])
		if w != w {
			if v == v {
				return fmt.Errorf("Read of the bits %#04x (a NaN) gave %v", all[i], v)
			}
			continue
		}
		if math.Float32bits(v) != math.Float32bits(w) {
			return fmt.Errorf("Read of the bits %#04x gave %g (%#08x), want %g (%#08x): widened exactly", all[i], v, math.Float32bits(v), w, math.Float32bits(w))
		}
		finite = append(finite, v)
	}
	if err := guard(func() error { return be.Write(b, 0, finite) }); err != nil {
		return backend.Wrapf(err, "Write of every %v value", t)
	}
	back, err := readBits(be, b, 0, len(finite))
	if err != nil {
		return err
	}
	for i, v := range finite {
		if back[i] != t.Encode(v) {
			return fmt.Errorf("Write(%g) stored %#04x, want %#04x: a %v value is stored as it is", v, back[i], t.Encode(v), t)
		}
	}
	return nil
}

// checkHalfRanges: Write, Read, WriteBits and ReadBits of a range outside
// the buffer are ErrShape and write nothing; an empty range at Len is
// allowed; a nil buffer is ErrShape; a buffer from nowhere is
// ErrForeignBuffer.
func checkHalfRanges(be backend.Backend, caps backend.Caps, t backend.DType) error {
	const n = 20
	b, err := halfBuf(be, t, n)
	if err != nil {
		return err
	}
	defer b.Release()
	held := make([]uint16, n)
	for i := range held {
		held[i] = t.Encode(float32(i) - 7.5)
	}
	if err := guard(func() error { return be.WriteBits(b, 0, held) }); err != nil {
		return backend.Wrapf(err, "WriteBits(%d at 0)", n)
	}
	var errs []error
	for _, r := range []struct{ off, n int }{{-1, 1}, {-1, 0}, {n - 2, 3}, {n + 1, 0}, {0, n + 1}} {
		x, bits := make([]float32, r.n), make([]uint16, r.n)
		for i := range x {
			x[i], bits[i] = 42, t.Encode(42)
		}
		what := fmt.Sprintf("(%d values at %d) of a %v buffer of %d", r.n, r.off, t, n)
		errs = append(errs,
			wantErr("Write"+what, guard(func() error { return be.Write(b, r.off, x) }), backend.ErrShape),
			wantErr("Read"+what, guard(func() error { return be.Read(x, b, r.off) }), backend.ErrShape),
			wantErr("WriteBits"+what, guard(func() error { return be.WriteBits(b, r.off, bits) }), backend.ErrShape),
			wantErr("ReadBits"+what, guard(func() error { return be.ReadBits(bits, b, r.off) }), backend.ErrShape),
		)
	}
	for _, f := range []func() error{
		func() error { return be.Write(b, n, nil) },
		func() error { return be.Read(nil, b, n) },
		func() error { return be.WriteBits(b, n, nil) },
		func() error { return be.ReadBits(nil, b, n) },
	} {
		if err := guard(f); err != nil {
			errs = append(errs, backend.Wrapf(err, "an empty range at Len"))
		}
	}
	errs = append(errs,
		wantErr("WriteBits to a nil Buffer", guard(func() error { return be.WriteBits(nil, 0, nil) }), backend.ErrShape),
		wantErr("ReadBits from a nil Buffer", guard(func() error { return be.ReadBits(nil, nil, 0) }), backend.ErrShape),
		wantErr("WriteBits to a Buffer from elsewhere", guard(func() error { return be.WriteBits(fakeBuffer{8}, 0, []uint16{1}) }), backend.ErrForeignBuffer),
		wantErr("ReadBits from a Buffer from elsewhere", guard(func() error { return be.ReadBits(make([]uint16, 1), fakeBuffer{8}, 0) }), backend.ErrForeignBuffer),
	)
	got, err := readBits(be, b, 0, n)
	if err != nil {
		return err
	}
	for i := range got {
		if got[i] != held[i] {
			errs = append(errs, fmt.Errorf("a failed call changed element %d from %#04x to %#04x", i, held[i], got[i]))
			break
		}
	}
	return errors.Join(errs...)
}

// halfErrs are half buffers where the contract wants Float32: the
// scores, the weights, the LSE and the keep-mask (ErrShape, nothing
// written). set puts a buffer of dtype t (from e.half) in its place.
func halfErrs(name string, set func(e *errEnv, t backend.DType)) []errCase {
	var cs []errCase
	for _, t := range []backend.DType{f16, bf16} {
		cs = append(cs, errCase{name + "_" + t.String(), func(e *errEnv) { set(e, t) }, backend.ErrShape})
	}
	return cs
}

// subnormal32 reports whether x is a float32 subnormal: nonzero, below
// 2⁻¹²⁶ in magnitude.
func subnormal32(x float32) bool {
	return x != 0 && math.Abs(float64(x)) < 0x1p-126
}
