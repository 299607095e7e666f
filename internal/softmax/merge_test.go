package softmax

import (
	"math"
	"testing"
)

var (
	inf = math.Inf(-1)
	nan = float32(math.NaN())
)

// fill is n copies of x.
func fill(n int, x float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = x
	}
	return s
}

// eq says whether got is within 2⁻²² of want (float32's rounding of a
// float64 sum), or both are the same infinity.
func eq(got, want float64) bool {
	if math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= 0x1p-22*max(1, math.Abs(want))
}

// The merges' arithmetic on parts written out by hand, e^(−1) =
// 0.36787944117144233 where a weight is not a power of two.
func TestMerge(t *testing.T) {
	for _, c := range []struct {
		name  string
		parts []Part
		dst   []float32 // dst's values before (nil: zeros of the parts' length)
		norm  bool      // MergeOutputs, else Merge
		want  []float32 // dst after
		m, l  float64   // Merge's M and L
		lse   float64   // MergeOutputs's log-sum-exp
	}{
		{name: "equal maxima", norm: true,
			parts: []Part{{0, 1, []float32{1, 2}}, {0, 1, []float32{3, 4}}},
			want:  []float32{2, 3}, lse: 0.6931471805599453}, // log 2
		{name: "a part saw no key", norm: true,
			parts: []Part{{inf, 1, []float32{nan, nan}}, {1.5, 1, []float32{3, -4}}},
			want:  []float32{3, -4}, lse: 1.5},
		{name: "no part saw a key", norm: true, dst: []float32{7, 7},
			parts: []Part{{inf, 0, []float32{nan, nan}}, {inf, 0, []float32{nan, nan}}},
			want:  []float32{0, 0}, lse: inf},
		{name: "no part saw a key, unnormalised", dst: []float32{7},
			parts: []Part{{inf, 0, []float32{nan}}},
			want:  []float32{0}, m: inf, l: 0},
		{name: "unnormalised", // w = 1, e^(−1)
			parts: []Part{{1, 2, []float32{4, 0}}, {0, 1, []float32{1, 2}}},
			want:  []float32{4.367879441171442, 0.7357588823428847}, m: 1, l: 2.3678794411714423},
		{name: "unnormalised, weights e^(−1), 1", // the larger maximum second
			parts: []Part{{-3, 5, []float32{10, -10}}, {-2, 0.5, []float32{1, 1}}},
			want:  []float32{4.678794411714423, -2.6787944117144233}, m: -2, l: 2.3393972058572117},
		{name: "normalised, weights e^(−1), 1", norm: true,
			parts: []Part{{2, 1, []float32{1, 0}}, {3, 1, []float32{0, 1}}},
			want:  []float32{0.2689414213699951, 0.7310585786300049}, lse: 3.3132616875182228},
		{name: "a weight that underflows", norm: true,
			parts: []Part{{0, 1, []float32{1}}, {-1000, 1, []float32{5}}},
			want:  []float32{1}, lse: 0},
		{name: "twenty parts", norm: true, // past the weights' stack array
			parts: func() []Part {
				p := make([]Part, 20)
				for i := range p {
					p[i] = Part{0, 1, []float32{float32(i)}}
				}
				return p
			}(),
			want: []float32{9.5}, lse: 2.995732273553991}, // log 20
		{name: "long rows", norm: true,
			parts: []Part{{0, 1, fill(259, 1)}, {0, 1, fill(259, 3)}},
			want:  fill(259, 2), lse: 0.6931471805599453},
	} {
		dst := c.dst
		if dst == nil {
			dst = make([]float32, len(c.want))
		}
		if c.norm {
			if got := MergeOutputs(dst, c.parts); !eq(got, c.lse) {
				t.Errorf("%s: MergeOutputs's LSE %v, want %v", c.name, got, c.lse)
			}
		} else if m, l := Merge(dst, c.parts); m != c.m || !eq(l, c.l) {
			t.Errorf("%s: Merge's M, L = %v, %v; want %v, %v", c.name, m, l, c.m, c.l)
		}
		for j := range c.want {
			if !eq(float64(dst[j]), float64(c.want[j])) {
				t.Errorf("%s: dst[%d] = %v, want %v", c.name, j, dst[j], c.want[j])
			}
		}
	}
}

// dst may be a part's Acc: the result is the same as into a buffer of
// its own, to the bit.
func TestMergeInPlace(t *testing.T) {
	n := 133
	x, y := make([]float32, n), make([]float32, n)
	for j := range n {
		x[j], y[j] = float32(j)/7, float32(n-j)/3
	}
	want := make([]float32, n)
	lse := MergeOutputs(want, []Part{{0.25, 1, x}, {-1.5, 1, y}})
	for i, dst := range [][]float32{x, y} {
		if got := MergeOutputs(dst, []Part{{0.25, 1, x}, {-1.5, 1, y}}); got != lse {
			t.Errorf("into part %d: LSE %v, want %v", i, got, lse)
		}
		for j := range n {
			if math.Float32bits(dst[j]) != math.Float32bits(want[j]) {
				t.Fatalf("into part %d: dst[%d] = %v, want %v", i, j, dst[j], want[j])
			}
		}
		for j := range n { // restore the part for the next
			x[j], y[j] = float32(j)/7, float32(n-j)/3
		}
	}
}
