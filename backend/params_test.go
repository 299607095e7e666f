package backend

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// fakeBuf is a Buffer of a given length holding nothing.
type fakeBuf int

func (b fakeBuf) Len() int   { return int(b) }
func (fakeBuf) Release()     {}
func (fakeBuf) DType() DType { return Float32 }

func okProblem() Problem {
	return Problem{B: 2, H: 4, KVHeads: 2, Nq: 3, Nk: 5, D: 8, Dv: 6, Layout: BHND, Scale: 0.5}
}

// TestResolved pins the one meaning of each zero field: the default the
// package doc names, the same that kernels.Options and the CLI use.
func TestResolved(t *testing.T) {
	tests := []struct {
		name string
		in   Problem
		want Problem
	}{
		{"all defaults", Problem{B: 1, H: 4, Nq: 3, Nk: 5, D: 16},
			Problem{B: 1, H: 4, KVHeads: 4, Nq: 3, Nk: 5, D: 16, Dv: 16, Scale: 0.25}},
		{"explicit values kept", okProblem(), okProblem()},
		{"negative scale kept", Problem{B: 1, H: 2, KVHeads: 1, Nq: 1, Nk: 1, D: 4, Dv: 2, Scale: -1},
			Problem{B: 1, H: 2, KVHeads: 1, Nq: 1, Nk: 1, D: 4, Dv: 2, Scale: -1}},
		{"no scale without a head dim", Problem{H: 2, D: 0}, Problem{H: 2, KVHeads: 2}},
		{"negative KVHeads left for Validate", Problem{H: 2, KVHeads: -1, D: 9, Dv: 3},
			Problem{H: 2, KVHeads: -1, D: 9, Dv: 3, Scale: float32(1.0 / 3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.Resolved(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Resolved(%+v) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
	// Every op's Validate resolves its params in place.
	p := FusedParams{Problem: Problem{B: 1, H: 2, Nq: 1, Nk: 1, D: 4}}
	if err := p.Validate(Caps{}, fakeBuf(8), fakeBuf(8), fakeBuf(8), fakeBuf(8), nil); err != nil {
		t.Fatal(err)
	}
	if p.KVHeads != 2 || p.Dv != 4 || p.Scale != 0.5 {
		t.Errorf("FusedParams.Validate left %+v unresolved", p.Problem)
	}
}

func TestProblemValidate(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	ninf := float32(math.Inf(-1))
	with := func(f func(*Problem)) Problem { p := okProblem(); f(&p); return p }
	tests := []struct {
		name    string
		p       Problem
		is      error    // nil: valid
		contain []string // in the message
	}{
		{"valid", okProblem(), nil, nil},
		{"valid BNHD", with(func(p *Problem) { p.Layout = BNHD }), nil, nil},
		{"valid MHA", with(func(p *Problem) { p.KVHeads = p.H }), nil, nil},
		{"valid MQA", with(func(p *Problem) { p.KVHeads = 1 }), nil, nil},
		{"valid zero B", with(func(p *Problem) { p.B = 0 }), nil, nil},
		{"valid zero Nq", with(func(p *Problem) { p.Nq = 0 }), nil, nil},
		{"valid zero Nk", with(func(p *Problem) { p.Nk = 0 }), nil, nil},
		{"valid all zero", with(func(p *Problem) { p.B, p.Nq, p.Nk = 0, 0, 0 }), nil, nil},
		{"valid zero scale", with(func(p *Problem) { p.Scale = 0 }), nil, nil},
		{"valid negative scale", with(func(p *Problem) { p.Scale = -3 }), nil, nil},
		{"valid max float scale", with(func(p *Problem) { p.Scale = math.MaxFloat32 }), nil, nil},
		{"valid causal", with(func(p *Problem) { p.Causal = true }), nil, nil},
		{"valid huge but zero B", with(func(p *Problem) { p.B, p.Nq, p.Nk = 0, 1<<40, 1<<40 }), nil, nil},

		{"negative B", with(func(p *Problem) { p.B = -1 }), ErrShape, []string{"B=-1", "Nq=3", "Nk=5"}},
		{"negative Nq", with(func(p *Problem) { p.Nq = -2 }), ErrShape, []string{"Nq=-2"}},
		{"negative Nk", with(func(p *Problem) { p.Nk = -7 }), ErrShape, []string{"Nk=-7"}},
		{"H zero", with(func(p *Problem) { p.H = 0 }), ErrShape, []string{"H=0", "KVHeads=2"}},
		{"H negative", with(func(p *Problem) { p.H = -4 }), ErrShape, []string{"H=-4"}},
		{"valid KVHeads zero (means H)", with(func(p *Problem) { p.KVHeads = 0 }), nil, nil},
		{"KVHeads negative", with(func(p *Problem) { p.KVHeads = -2 }), ErrShape, []string{"KVHeads=-2"}},
		{"KVHeads zero with H not positive", with(func(p *Problem) { p.H, p.KVHeads = -3, 0 }), ErrShape, []string{"H=-3"}},
		{"KVHeads not dividing H", with(func(p *Problem) { p.H, p.KVHeads = 6, 4 }), ErrShape, []string{"H=6", "KVHeads=4"}},
		{"KVHeads above H", with(func(p *Problem) { p.H, p.KVHeads = 2, 4 }), ErrShape, []string{"H=2", "KVHeads=4"}},
		{"D zero", with(func(p *Problem) { p.D = 0 }), ErrShape, []string{"D=0", "Dv=6"}},
		{"valid Dv zero (means D)", with(func(p *Problem) { p.Dv = 0 }), nil, nil},
		{"Dv negative", with(func(p *Problem) { p.Dv = -6 }), ErrShape, []string{"D=8", "Dv=-6"}},
		{"D negative", with(func(p *Problem) { p.D = -1 }), ErrShape, []string{"D=-1"}},
		{"bad layout", with(func(p *Problem) { p.Layout = 7 }), ErrShape, []string{"Layout(7)"}},
		{"negative layout", with(func(p *Problem) { p.Layout = -1 }), ErrShape, []string{"Layout(-1)"}},
		{"NaN scale", with(func(p *Problem) { p.Scale = nan }), ErrShape, []string{"NaN"}},
		{"+Inf scale", with(func(p *Problem) { p.Scale = inf }), ErrShape, []string{"+Inf"}},
		{"-Inf scale", with(func(p *Problem) { p.Scale = ninf }), ErrShape, []string{"-Inf"}},

		{"scores overflow", with(func(p *Problem) { p.B, p.H, p.KVHeads, p.D, p.Dv, p.Nq, p.Nk = 1<<20, 1, 1, 1, 1, 1<<40, 1<<40 }),
			ErrTooLarge, []string{"scores", "1048576", "1099511627776"}},
		{"Q overflow", with(func(p *Problem) { p.B, p.H, p.Nq, p.D = 1<<20, 4, 1<<40, 1<<10 }),
			ErrTooLarge, []string{"Q", "1048576", "1099511627776", "1024"}},
		{"K overflow", with(func(p *Problem) { p.B, p.Nq, p.Nk, p.D = 1, 1, math.MaxInt/2, 8 }),
			ErrTooLarge, []string{"K", fmt.Sprint(math.MaxInt / 2)}},
		{"V overflow only", with(func(p *Problem) { p.B, p.H, p.KVHeads, p.Nq, p.Nk, p.D, p.Dv = 1, 1, 1, 0, 1<<40, 1, 1<<40 }),
			ErrTooLarge, []string{"V", "1099511627776"}},
		{"O overflow only", with(func(p *Problem) { p.B, p.H, p.KVHeads, p.Nq, p.Nk, p.D, p.Dv = 1, 1, 1, 1<<40, 0, 1, 1<<40 }),
			ErrTooLarge, []string{"O", "1099511627776"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if tt.is == nil {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", tt.p, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want %v", tt.p, tt.is)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("Validate error %v does not wrap %v", err, tt.is)
			}
			other := ErrTooLarge
			if tt.is == ErrTooLarge {
				other = ErrShape
			}
			if errors.Is(err, other) {
				t.Errorf("Validate error %v also wraps %v", err, other)
			}
			for _, c := range tt.contain {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("Validate error %q does not contain %q", err, c)
				}
			}
		})
	}
}

func TestLayoutString(t *testing.T) {
	for l, want := range map[Layout]string{BHND: "BHND", BNHD: "BNHD", 2: "Layout(2)", -1: "Layout(-1)"} {
		if got := l.String(); got != want {
			t.Errorf("Layout(%d).String() = %q, want %q", int(l), got, want)
		}
	}
}

func TestTensorStridesHandComputed(t *testing.T) {
	// 2 batches × 3 heads × 4 rows × 5 dims.
	tests := []struct {
		l    Layout
		want Strides
	}{
		{BHND, Strides{Batch: 3 * 4 * 5, Head: 4 * 5, Row: 5}},
		{BNHD, Strides{Batch: 4 * 3 * 5, Head: 5, Row: 3 * 5}},
	}
	for _, tt := range tests {
		got := TensorStrides(tt.l, 3, 4, 5)
		if got != tt.want {
			t.Errorf("TensorStrides(%v, 3, 4, 5) = %+v, want %+v", tt.l, got, tt.want)
		}
	}
	// Spot offsets: element 0 of row 2 of head 1 in batch 1.
	if got, want := TensorStrides(BHND, 3, 4, 5).Offset(1, 1, 2), 60+20+10; got != want {
		t.Errorf("BHND Offset(1,1,2) = %d, want %d", got, want)
	}
	if got, want := TensorStrides(BNHD, 3, 4, 5).Offset(1, 1, 2), 60+5+30; got != want {
		t.Errorf("BNHD Offset(1,1,2) = %d, want %d", got, want)
	}
}

func TestTensorStridesEnumerate(t *testing.T) {
	for _, l := range []Layout{BHND, BNHD} {
		for _, sz := range [][4]int{{2, 3, 4, 5}, {1, 1, 1, 1}, {3, 1, 2, 7}, {2, 4, 1, 3}, {1, 2, 3, 1}} {
			nb, heads, rows, dim := sz[0], sz[1], sz[2], sz[3]
			t.Run(fmt.Sprintf("%v/%v", l, sz), func(t *testing.T) {
				s := TensorStrides(l, heads, rows, dim)
				total := nb * heads * rows * dim
				hits := make([]int, total)
				for b := range nb {
					for h := range heads {
						for i := range rows {
							for d := range dim {
								var want int
								if l == BHND {
									want = ((b*heads+h)*rows+i)*dim + d
								} else {
									want = ((b*rows+i)*heads+h)*dim + d
								}
								got := s.Offset(b, h, i) + d
								if got != want {
									t.Fatalf("(%d,%d,%d,%d) at %d, want %d", b, h, i, d, got, want)
								}
								if got < 0 || got >= total {
									t.Fatalf("(%d,%d,%d,%d) at %d outside [0,%d)", b, h, i, d, got, total)
								}
								hits[got]++
							}
						}
					}
				}
				for k, n := range hits {
					if n != 1 {
						t.Fatalf("index %d hit %d times", k, n)
					}
				}
			})
		}
	}
}

func TestProblemStridesAndLens(t *testing.T) {
	p := okProblem() // B2 H4 KV2 Nq3 Nk5 D8 Dv6
	for _, l := range []Layout{BHND, BNHD} {
		p.Layout = l
		checks := []struct {
			name       string
			got        Strides
			heads, n   int
			dim, total int
			length     int
		}{
			{"Q", p.QStrides(), 4, 3, 8, 2 * 4 * 3 * 8, p.QLen()},
			{"K", p.KStrides(), 2, 5, 8, 2 * 2 * 5 * 8, p.KLen()},
			{"V", p.VStrides(), 2, 5, 6, 2 * 2 * 5 * 6, p.VLen()},
			{"O", p.OStrides(), 4, 3, 6, 2 * 4 * 3 * 6, p.OLen()},
		}
		for _, c := range checks {
			if want := TensorStrides(l, c.heads, c.n, c.dim); c.got != want {
				t.Errorf("%v %s strides = %+v, want %+v", l, c.name, c.got, want)
			}
			if c.length != c.total {
				t.Errorf("%s len = %d, want %d", c.name, c.length, c.total)
			}
			// The last element of the last row is the buffer's last.
			if last := c.got.Offset(p.B-1, c.heads-1, c.n-1) + c.dim - 1; last != c.total-1 {
				t.Errorf("%v %s last element at %d, want %d", l, c.name, last, c.total-1)
			}
		}
	}
	if got := p.ScoresLen(); got != 2*4*3*5 {
		t.Errorf("ScoresLen = %d", got)
	}
	if got := p.LSELen(); got != 2*4*3 {
		t.Errorf("LSELen = %d", got)
	}
	if got := p.Group(); got != 2 {
		t.Errorf("Group = %d", got)
	}
}

func TestKeyRangeCausal(t *testing.T) {
	tests := []struct {
		name   string
		nq, nk int
		causal bool
		want   []int // KeyRange(0, i)'s end for i = 0..nq-1
	}{
		{"square", 4, 4, true, []int{1, 2, 3, 4}},
		{"Nq<Nk", 2, 5, true, []int{4, 5}},
		{"decode Nq=1", 1, 7, true, []int{7}},
		{"Nq>Nk clamps to 0", 5, 2, true, []int{0, 0, 0, 1, 2}},
		{"Nq>>Nk", 6, 1, true, []int{0, 0, 0, 0, 0, 1}},
		{"Nk=0", 3, 0, true, []int{0, 0, 0}},
		{"non-causal square", 3, 3, false, []int{3, 3, 3}},
		{"non-causal Nq>Nk", 5, 2, false, []int{2, 2, 2, 2, 2}},
		{"non-causal Nq<Nk", 2, 9, false, []int{9, 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Problem{B: 1, H: 1, KVHeads: 1, Nq: tt.nq, Nk: tt.nk, D: 1, Dv: 1, Causal: tt.causal}
			for i, w := range tt.want {
				if _, got := p.KeyRange(0, i); got != w {
					t.Errorf("KeyRange(0, %d) ends at %d, want %d", i, got, w)
				}
				// Agrees with the documented rule j ≤ i + (Nk − Nq).
				n := 0
				for j := range tt.nk {
					if !tt.causal || j <= i+tt.nk-tt.nq {
						n++
					}
				}
				if n != w {
					t.Errorf("test table wrong: rule gives %d keys for i=%d, table %d", n, i, w)
				}
			}
		})
	}
}

func TestMaskStridesBroadcast(t *testing.T) {
	full := [4]int{2, 3, 4, 5}
	for combo := range 16 {
		var shape [4]int
		for d := range 4 {
			if combo&(1<<d) != 0 {
				shape[d] = full[d]
			} else {
				shape[d] = 1
			}
		}
		t.Run(fmt.Sprint(shape), func(t *testing.T) {
			m := &Mask{Buf: fakeBuf(0), Shape: shape}
			s := m.Strides()
			for d := range 4 {
				if shape[d] == 1 && s[d] != 0 {
					t.Errorf("broadcast dim %d has stride %d, want 0", d, s[d])
				}
			}
			if got, want := m.Len(), shape[0]*shape[1]*shape[2]*shape[3]; got != want {
				t.Errorf("Len = %d, want %d", got, want)
			}
			hits := make([]int, m.Len())
			for b := range full[0] {
				for h := range full[1] {
					for i := range full[2] {
						for j := range full[3] {
							idx := [4]int{b, h, i, j}
							for d := range 4 {
								if shape[d] == 1 {
									idx[d] = 0
								}
							}
							want := ((idx[0]*shape[1]+idx[1])*shape[2]+idx[2])*shape[3] + idx[3]
							got := b*s[0] + h*s[1] + i*s[2] + j*s[3]
							if got != want {
								t.Fatalf("(%d,%d,%d,%d) → %d, want %d (strides %v)", b, h, i, j, got, want, s)
							}
							hits[got]++
						}
					}
				}
			}
			// Every stored element is used, each by the same number of
			// full-shape positions.
			per := (full[0] * full[1] * full[2] * full[3]) / m.Len()
			for k, n := range hits {
				if n != per {
					t.Fatalf("mask element %d used %d times, want %d", k, n, per)
				}
			}
			// And CheckMask accepts it with an exact-size buffer.
			p := Problem{B: 2, H: 3, KVHeads: 1, Nq: 4, Nk: 5, D: 1, Dv: 1}
			m.Buf = fakeBuf(m.Len())
			if err := p.CheckMask("bias", m); err != nil {
				t.Errorf("CheckMask(%v): %v", shape, err)
			}
		})
	}
}

func TestCheckMask(t *testing.T) {
	p := Problem{B: 2, H: 3, KVHeads: 3, Nq: 4, Nk: 5, D: 1, Dv: 1}
	tests := []struct {
		name    string
		m       *Mask
		is      error
		contain []string
	}{
		{"nil mask ok", nil, nil, nil},
		{"full ok", &Mask{Buf: fakeBuf(120), Shape: [4]int{2, 3, 4, 5}}, nil, nil},
		{"bigger buffer ok", &Mask{Buf: fakeBuf(1000), Shape: [4]int{1, 1, 4, 5}}, nil, nil},
		{"scalar ok", &Mask{Buf: fakeBuf(1), Shape: [4]int{1, 1, 1, 1}}, nil, nil},
		{"nil buffer", &Mask{Shape: [4]int{1, 1, 1, 1}}, ErrShape, []string{"bias", "no buffer"}},
		{"dim 0 wrong", &Mask{Buf: fakeBuf(1000), Shape: [4]int{3, 3, 4, 5}}, ErrShape,
			[]string{"bias", "dim 0 is 3", "want 1 or 2", "[3 3 4 5]"}},
		{"dim 1 wrong", &Mask{Buf: fakeBuf(1000), Shape: [4]int{1, 2, 4, 5}}, ErrShape, []string{"dim 1 is 2", "want 1 or 3"}},
		{"dim 2 wrong", &Mask{Buf: fakeBuf(1000), Shape: [4]int{1, 1, 5, 5}}, ErrShape, []string{"dim 2 is 5", "want 1 or 4"}},
		{"dim 3 wrong", &Mask{Buf: fakeBuf(1000), Shape: [4]int{1, 1, 4, 4}}, ErrShape, []string{"dim 3 is 4", "want 1 or 5"}},
		{"dim zero", &Mask{Buf: fakeBuf(1000), Shape: [4]int{1, 1, 0, 5}}, ErrShape, []string{"dim 2 is 0"}},
		{"dim negative", &Mask{Buf: fakeBuf(1000), Shape: [4]int{1, -3, 4, 5}}, ErrShape, []string{"dim 1 is -3"}},
		{"short buffer", &Mask{Buf: fakeBuf(119), Shape: [4]int{2, 3, 4, 5}}, ErrShape, []string{"needs 120", "has 119"}},
		{"short broadcast buffer", &Mask{Buf: fakeBuf(4), Shape: [4]int{1, 1, 1, 5}}, ErrShape, []string{"needs 5", "has 4"}},
		{"empty buffer", &Mask{Buf: fakeBuf(0), Shape: [4]int{1, 1, 1, 1}}, ErrShape, []string{"needs 1", "has 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.CheckMask("bias", tt.m)
			if tt.is == nil {
				if err != nil {
					t.Fatalf("CheckMask = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.is) {
				t.Fatalf("CheckMask = %v, want it to wrap %v", err, tt.is)
			}
			for _, c := range tt.contain {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("CheckMask error %q does not contain %q", err, c)
				}
			}
		})
	}
	// The name goes into the message.
	if err := p.CheckMask("mask", &Mask{Shape: [4]int{1, 1, 1, 1}}); err == nil || !strings.Contains(err.Error(), "mask has no buffer") {
		t.Errorf("CheckMask(mask, nil buf) = %v", err)
	}
}

func TestCheckBuffer(t *testing.T) {
	if err := CheckBuffer("Q", fakeBuf(10), 10); err != nil {
		t.Errorf("exact: %v", err)
	}
	if err := CheckBuffer("Q", fakeBuf(11), 10); err != nil {
		t.Errorf("bigger: %v", err)
	}
	if err := CheckBuffer("Q", fakeBuf(9), 10); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "Q needs 10") {
		t.Errorf("short: %v", err)
	}
	if err := CheckBuffer("K", nil, 0); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "K buffer is nil") {
		t.Errorf("nil: %v", err)
	}
}

func TestCheckedProduct(t *testing.T) {
	tests := []struct {
		dims []int
		want int
		ok   bool
	}{
		{nil, 1, true},
		{[]int{7}, 7, true},
		{[]int{2, 3, 4, 5}, 120, true},
		{[]int{0, 5}, 0, true},
		{[]int{5, 0}, 0, true},
		{[]int{0, math.MaxInt, math.MaxInt}, 0, true},
		{[]int{math.MaxInt, 1}, math.MaxInt, true},
		{[]int{1 << 31, 1 << 31}, 1 << 62, true},
		{[]int{math.MaxInt/2 + 1, 2}, 0, false},
		{[]int{math.MaxInt / 2, 2}, math.MaxInt - 1, true},
		{[]int{1 << 32, 1 << 32}, 0, false},
		{[]int{1 << 20, 1 << 40, 1 << 40}, 0, false},
		{[]int{1 << 40, 1 << 40, 0}, 0, true}, // zero wins over a partial overflow
		{[]int{math.MaxInt, math.MaxInt}, 0, false},
		{[]int{-1}, 0, false},
		{[]int{3, -2}, 0, false},
		{[]int{0, -1}, 0, false},
		{[]int{-1, -1}, 0, false},
		{[]int{math.MinInt}, 0, false},
	}
	for _, tt := range tests {
		got, ok := CheckedProduct(tt.dims...)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("CheckedProduct(%v) = %d, %v; want %d, %v", tt.dims, got, ok, tt.want, tt.ok)
		}
	}
}

func TestErrorf(t *testing.T) {
	for _, sentinel := range []error{ErrShape, ErrNonFinite, ErrTooLarge, ErrUnsupported, ErrUnavailable,
		ErrDeviceLost, ErrForeignBuffer, ErrReleased, ErrUnknownBackend, ErrCacheFull} {
		err := Errorf(sentinel, "size %d of %s", 42, "Q")
		if !errors.Is(err, sentinel) {
			t.Errorf("Errorf(%v) does not wrap its sentinel", sentinel)
		}
		if errors.Unwrap(err) != sentinel {
			t.Errorf("Unwrap(Errorf(%v)) = %v", sentinel, errors.Unwrap(err))
		}
		msg := err.Error()
		if !strings.Contains(msg, sentinel.Error()) || !strings.Contains(msg, "size 42 of Q") {
			t.Errorf("Errorf(%v).Error() = %q, want both the sentinel and the text", sentinel, msg)
		}
		if want := sentinel.Error() + ": size 42 of Q"; msg != want {
			t.Errorf("Errorf(%v).Error() = %q, want %q", sentinel, msg, want)
		}
		// Wrapping further still finds the sentinel.
		if !errors.Is(fmt.Errorf("outer: %w", err), sentinel) {
			t.Errorf("wrapped Errorf(%v) lost its sentinel", sentinel)
		}
	}
	if errors.Is(Errorf(ErrShape, "x"), ErrTooLarge) {
		t.Error("Errorf(ErrShape) matches ErrTooLarge")
	}
	// Format verbs with no args and a literal percent survive.
	if got := Errorf(ErrShape, "100%% full").Error(); got != ErrShape.Error()+": 100% full" {
		t.Errorf("Errorf with %%%% = %q", got)
	}
}

// KeyRange against the rule written out in Problem's doc, for every row
// of small problems under every combination of variants that moves it.
func TestKeyRange(t *testing.T) {
	off := func(n int) *int { return &n }
	for _, nq := range []int{1, 3, 7} {
		for _, nk := range []int{0, 1, 5, 9} {
			for _, causal := range []bool{false, true} {
				for _, o := range []*int{nil, off(0), off(-2), off(4), off(MaxPosition), off(-MaxPosition)} {
					for _, w := range []*Window{nil, {0, 0}, {2, -1}, {-1, 1}, {3, 2}, {MaxPosition, MaxPosition}} {
						for _, lens := range [][]int{nil, {0, nk}, {nk / 2, nk}} {
							p := Problem{B: 2, H: 1, Nq: nq, Nk: nk, D: 1, Causal: causal}
							p.CausalOffset, p.Window, p.KVLens = o, w, lens
							p = p.Resolved()
							for b := range 2 {
								for i := range nq {
									lo, hi := p.KeyRange(b, i)
									want := keysSeen(p, b, i)
									if len(want) > 0 && (lo != want[0] || hi != want[len(want)-1]+1) ||
										len(want) == 0 && lo != hi || lo < 0 || hi > nk || lo > hi {
										t.Fatalf("%+v offset %v window %v: KeyRange(%d, %d) = [%d, %d), want keys %v", p, deref(p.CausalOffset), p.Window, b, i, lo, hi, want)
									}
									if band := p.Band(); hi-lo > band {
										t.Fatalf("%+v: KeyRange(%d, %d) = [%d, %d) is wider than Band() = %d", p, b, i, lo, hi, band)
									}
									if i > 0 {
										plo, phi := p.KeyRange(b, i-1)
										if plo > lo || phi > hi {
											t.Fatalf("%+v: KeyRange(%d, %d) = [%d, %d) after [%d, %d): not monotone", p, b, i, lo, hi, plo, phi)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// keysSeen lists the keys query (b, i) sees by position, by the rule of
// Problem's doc, key by key.
func keysSeen(p Problem, b, i int) []int {
	n := int64(p.Nk)
	if p.KVLens != nil {
		n = int64(p.KVLens[b])
	}
	a := n - int64(p.Nq)
	if p.CausalOffset != nil {
		a = int64(*p.CausalOffset)
	}
	t := a + int64(i)
	var seen []int
	for j := int64(0); j < n; j++ {
		if p.Causal && j > t {
			continue
		}
		if w := p.Window; w != nil && (w.Left >= 0 && j < t-int64(w.Left) || w.Right >= 0 && j > t+int64(w.Right)) {
			continue
		}
		seen = append(seen, int(j))
	}
	return seen
}

// TestValidateVariants checks Problem.Validate on each bad variant value
// and Variants.Check on the same: Check refuses exactly the values that
// are wrong at any size, with the same message, and passes those wrong
// only against H, B or Nk.
func TestValidateVariants(t *testing.T) {
	base := func(f func(v *Variants)) Problem {
		p := Problem{B: 2, H: 3, Nq: 4, Nk: 5, D: 8}
		f(&p.Variants)
		return p
	}
	nan := float32(math.NaN())
	for _, tt := range []struct {
		name string
		p    Problem
		want string // a piece of the error; "" for valid
		// sized: wrong only against the problem's sizes, which
		// Variants.Check does not know.
		sized bool
	}{
		{"unbounded window", base(func(v *Variants) { v.Window = &Window{-1, -1} }), "", false},
		{"window left below -1", base(func(v *Variants) { v.Window = &Window{-2, 0} }), "window (-2, 0)", false},
		{"window right below -1", base(func(v *Variants) { v.Window = &Window{0, -5} }), "window (0, -5)", false},
		{"negative softcap", base(func(v *Variants) { v.Softcap = -1 }), "softcap -1", false},
		{"NaN softcap", base(func(v *Variants) { v.Softcap = nan }), "softcap NaN", false},
		{"infinite softcap", base(func(v *Variants) { v.Softcap = float32(math.Inf(1)) }), "softcap +Inf", false},
		{"slopes per head", base(func(v *Variants) { v.ALiBi = []float32{1, 2, 3} }), "", false},
		{"too few slopes", base(func(v *Variants) { v.ALiBi = []float32{1, 2} }), "ALiBi slopes: 2 values for H=3", true},
		{"NaN slope", base(func(v *Variants) { v.ALiBi = []float32{1, nan, 3} }), "head 1 is NaN", false},
		{"too many sinks", base(func(v *Variants) { v.Sinks = make([]float32, 4) }), "sinks: 4 values for H=3", true},
		{"infinite sink", base(func(v *Variants) { v.Sinks = []float32{0, 0, float32(math.Inf(-1))} }), "sinks: head 2 is -Inf", false},
		{"key lengths 0 and Nk", base(func(v *Variants) { v.KVLens = []int{0, 5} }), "", false},
		{"key lengths of the wrong count", base(func(v *Variants) { v.KVLens = []int{1} }), "1 values for B=2", true},
		{"negative key length", base(func(v *Variants) { v.KVLens = []int{-1, 2} }), "batch 0 has -1, want 0 … Nk=5", true},
		{"key length over Nk", base(func(v *Variants) { v.KVLens = []int{2, 6} }), "batch 1 has 6", true},
		{"offset at the bound", base(func(v *Variants) { o := -MaxPosition; v.CausalOffset = &o }), "", false},
		{"offset past the bound", base(func(v *Variants) { o := math.MaxInt; v.CausalOffset = &o }), "causal offset 9223372036854775807", false},
		{"window past the bound", base(func(v *Variants) { v.Window = &Window{MaxPosition + 1, 0} }), "beyond 2⁴⁰", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.want != "" && (err == nil || !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate = %v, want ErrShape containing %q", err, tt.want)
			}
			err = tt.p.Variants.Check()
			switch {
			case (tt.want == "" || tt.sized) && err != nil:
				t.Fatalf("Variants.Check: %v", err)
			case tt.want != "" && !tt.sized && (err == nil || !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Variants.Check = %v, want ErrShape containing %q", err, tt.want)
			}
		})
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// typedBuf is a fakeBuf of a dtype of its own.
type typedBuf struct {
	n  int
	dt DType
}

func (b typedBuf) Len() int     { return b.n }
func (typedBuf) Release()       {}
func (b typedBuf) DType() DType { return b.dt }

// TestFusedValidateCaps: FusedParams.Validate refuses, with
// ErrUnsupported naming the sizes, a block mask, an index list and a q8
// K or V of head dims that are not whole blocks for a backend whose Caps
// lack Blocks, Indices or Quant8, and takes each for one that has it;
// a bad problem is ErrShape whatever the Caps.
func TestFusedValidateCaps(t *testing.T) {
	p := Problem{B: 1, H: 2, KVHeads: 1, Nq: 4, Nk: 8, D: 8}
	blocks := &BlockMask{Size: 4, Shape: [4]int{1, 1, 1, 2}, Keep: []bool{true, false}}
	idx := &Indices{Heads: 1, PerRow: 2, Idx: []int32{0, 1, 2, 3, 4, 5, 6, 7}}
	f32 := fakeBuf(1 << 10)
	q8 := typedBuf{1 << 10, Q8}
	all := Caps{Blocks: true, Indices: true, Quant8: true}
	for _, c := range []struct {
		name    string
		p       FusedParams
		k, v    Buffer
		without Caps // caps that refuse it
		says    string
		lowered bool // NeedsLowering
	}{
		{"block mask", FusedParams{Problem: withBlocks(p, blocks)}, f32, f32, Caps{Indices: true, Quant8: true}, "blocks of 4", false},
		{"index list", FusedParams{Problem: withIndices(p, idx)}, f32, f32, Caps{Blocks: true, Quant8: true}, "2 keys a row", true},
		{"padded q8", FusedParams{Problem: withDims(p, 40, 40)}, q8, q8, Caps{Blocks: true, Indices: true}, "D=40, Dv=40", true},
		{"whole q8 blocks", FusedParams{Problem: withDims(p, 64, 32)}, q8, q8, Caps{}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fp := c.p
			err := fp.Validate(c.without, f32, c.k, c.v, f32, nil)
			if c.says == "" && err != nil || c.says != "" && (!errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.says)) {
				t.Errorf("without its capability: %v, want ErrUnsupported saying %q (nil for none)", err, c.says)
			}
			fp = c.p
			if err := fp.Validate(all, f32, c.k, c.v, f32, nil); err != nil {
				t.Errorf("with every capability: %v", err)
			}
			if got := c.p.NeedsLowering(c.k, c.v); got != c.lowered {
				t.Errorf("NeedsLowering = %v, want %v", got, c.lowered)
			}
			fp = c.p
			fp.Nk = -1
			if err := fp.Validate(all, f32, c.k, c.v, f32, nil); !errors.Is(err, ErrShape) {
				t.Errorf("Nk = -1: %v, want ErrShape", err)
			}
		})
	}
}

func withBlocks(p Problem, m *BlockMask) Problem { p.Blocks = m; return p }

func withIndices(p Problem, ix *Indices) Problem { p.Indices = ix; return p }

func withDims(p Problem, d, dv int) Problem { p.D, p.Dv = d, dv; return p }
