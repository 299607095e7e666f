//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/gpu"
)

// quantCopyCases are CopyQuant's inputs at the edges of both formats,
// each n values.
var quantCopyCases = []struct {
	name string
	x    func(rng *rand.Rand, n int) []float32
}{
	{"wide", func(rng *rand.Rand, n int) []float32 { return quantValues(rng.Uint64(), n) }},
	{"zeros", func(rng *rand.Rand, n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			if rng.IntN(3) == 0 {
				x[i] = float32(math.Copysign(0, -1))
			}
		}
		return x
	}},
	// One outlier a block of 32: q8's scale is its, the rest of the
	// block rounds to few codes; fp8 saturates it.
	{"outliers", func(rng *rand.Rand, n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			if i%32 == 7 {
				x[i] = float32(3e5 * (rng.Float64() + 0.5))
			}
		}
		return x
	}},
	// Float32 subnormals and tiny blocks: 1/d overflows (amax below
	// 2⁻¹²¹), d a float32 subnormal, a float16-subnormal scale (amax
	// about 1e-6); fp8's subnormals and their ties (odd multiples of
	// 2⁻¹⁰).
	{"tiny", func(rng *rand.Rand, n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			switch blk := i / 32 % 5; blk {
			case 0:
				x[i] = math.Float32frombits(rng.Uint32N(1 << 23))
			case 1:
				x[i] = float32(rng.Float64() * math.Exp2(-127))
			case 2:
				x[i] = float32(rng.Float64() * 1e-6)
			case 3:
				x[i] = float32(rng.IntN(16)*2+1) * float32(math.Exp2(-10))
			default:
				x[i] = float32(rng.Float64() * math.Exp2(-float64(rng.IntN(12)+3)))
			}
			if rng.IntN(2) == 0 {
				x[i] = -x[i]
			}
		}
		return x
	}},
	// Ties and the top of each range: fp8 midpoints (1 + (2k+1)/16)·2^e,
	// 448, 464 (halfway to 480: saturated), q8 blocks whose largest
	// magnitude is just below Q8Max.
	{"edges", func(rng *rand.Rand, n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			switch rng.IntN(5) {
			case 0:
				x[i] = float32((1 + float64(rng.IntN(8)*2+1)/16) * math.Exp2(float64(rng.IntN(14)-6)))
			case 1:
				x[i] = []float32{448, 464, 449, 447.9, 480}[rng.IntN(5)]
			case 2:
				x[i] = 8321039 // the float32 below backend.Q8Max
			default:
				x[i] = float32(rng.NormFloat64() * 1e4)
			}
			if rng.IntN(2) == 0 {
				x[i] = -x[i]
			}
		}
		return x
	}},
	// Values whose stored bytes hang on the last bit of a division:
	// q8 blocks of largest magnitude a whose values are (k + ½)·d, d =
	// a/127, so that x·(1/d) falls next to a tie; and values t·s for
	// fp8 ties t and the scales copyScales divides src element i by,
	// (i/32) mod 3, so that x/s falls next to t.
	{"near ties", func(rng *rand.Rand, n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			if i/32%2 == 0 {
				a := float32(rng.Float64()*1000 + 1)
				d := a / 127
				x[i] = float32(rng.IntN(253)-126) * d
				x[i] += d / 2
				if i%32 == 0 {
					x[i] = a
				}
				continue
			}
			t := float32((1 + float64(rng.IntN(8)*2+1)/16) * math.Exp2(float64(rng.IntN(14)-6)))
			x[i] = t * copyScales[i/32%3]
		}
		return x
	}},
	// q4's edges, by block: values (j − 8.5)·d whose x·(1/d) + 8.5
	// falls on or next to an integer j (a tie of the sum's float32
	// rounding, one ulp either side), the largest magnitude negative (d
	// positive) or positive, capped codes (the side opposite m beyond
	// 7.5 steps: code 16 before the cap), and magnitudes equal to m's
	// of either sign (the first one sets d).
	{"q4 ties", func(rng *rand.Rand, n int) []float32 {
		x := make([]float32, n)
		for b := 0; b < n; b += 32 {
			blk := x[b : b+32]
			m := float32(rng.Float64()*100 + 0.01)
			if rng.IntN(2) == 0 {
				m = -m
			}
			d := m / -8
			switch b / 32 % 4 {
			case 0, 1:
				for i := range blk {
					v := float32(rng.IntN(17)) - 8.5
					blk[i] = v * d
					switch rng.IntN(3) {
					case 0:
						blk[i] = math.Nextafter32(blk[i], float32(math.Inf(1)))
					case 1:
						blk[i] = math.Nextafter32(blk[i], float32(math.Inf(-1)))
					}
					if math.Abs(float64(blk[i])) >= math.Abs(float64(m)) {
						blk[i] = 0
					}
				}
			case 2:
				for i := range blk {
					blk[i] = -m * float32(1-rng.Float64()/8)
				}
				blk[0+rng.IntN(4)] = -m * 0.9375 // exactly 7.5 steps: 16, capped
			default:
				for i := range blk {
					blk[i] = []float32{m, -m, m / 2, 0}[rng.IntN(4)]
				}
			}
			blk[rng.IntN(32)] = m
		}
		return x
	}},
}

// copyScales are the scales of TestCopyQuant's scaled cases, a head of
// 32 values each.
var copyScales = []float32{0.37, 3, 1.5}

// quantCopyRanges are the ranges of a CopyQuant into n = 1600 elements
// from as many: whole q8 blocks that straddle superblocks, fill the
// last one, or a single block; any fp8 ranges, two of which share a
// word.
func quantCopyRanges(dt backend.DType) []backend.CopyRange {
	if dt.Block() > 1 {
		return []backend.CopyRange{{Dst: 96, Src: 0, N: 320}, {Dst: 736, Src: 320, N: 160}, {Dst: 1344, Src: 480, N: 256}, {Dst: 0, Src: 1568, N: 32}}
	}
	return []backend.CopyRange{{Dst: 5, Src: 3, N: 13}, {Dst: 700, Src: 100, N: 517}, {Dst: 1599, Src: 1599, N: 1}, {Dst: 18, Src: 900, N: 2}}
}

// CopyQuant quantizes on the GPU into the CPU's bytes: for each
// quantized dtype, source dtype and edge case, the stored codes and
// scales equal backend.QuantizeQ8's, QuantizeQ4's and EncodeFP8's of the
// same values (divided by the head's scale in float32), elements outside
// the ranges keep theirs, the CPU's CopyQuant (where the CPU stores the
// dtype) reads back the same values, and both count the same saturated
// values.
func TestCopyQuant(t *testing.T) {
	g := openGPU(t)
	c, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	const n = 1600
	for _, dt := range quants {
		bes := []backend.Backend{g, c}
		if dt == backend.Q4 && !c.Caps().Quant4 {
			bes = bes[:1] // the CPU stores no q4 yet: the host's bytes alone
		}
		for _, sdt := range []backend.DType{backend.Float32, backend.Float16, backend.BFloat16} {
			for ci, tc := range quantCopyCases {
				for _, scales := range [][]float32{nil, copyScales} {
					if scales != nil && (dt != backend.FP8 || tc.name == "tiny" || tc.name == "edges") {
						continue
					}
					rng := rand.New(rand.NewPCG(46, uint64(ci)))
					x := tc.x(rng, n)
					for i, v := range x {
						x[i] = sdt.Saturate(v)
						if lim := dt.MaxFinite(); dt.Block() > 1 && math.Abs(float64(x[i])) >= float64(lim) {
							// The value of sdt below Q8Max or Q4Max (for
							// a bfloat16, its upper half).
							b := math.Float32bits(math.Nextafter32(lim, 0))
							if sdt == backend.BFloat16 {
								b &^= 0xffff
							}
							x[i] = float32(math.Copysign(float64(math.Float32frombits(b)), float64(v)))
						}
					}
					before := quantValues(7, n)
					q := backend.QuantCopy{Scales: scales, Dim: 32}
					ranges := quantCopyRanges(dt)
					name := dt.String() + "/" + sdt.String() + "/" + tc.name
					if scales != nil {
						name += "/scaled"
					}
					var vals [2][]float32
					var sats [2]uint64
					for bi, be := range bes {
						dst := alloc(t, be, dt, n)
						src := alloc(t, be, sdt, n)
						q.Counts = alloc(t, be, backend.Float32, backend.CountsLen)
						if err := be.Write(dst, 0, before); err != nil {
							t.Fatal(err)
						}
						if err := be.Write(src, 0, x); err != nil {
							t.Fatal(err)
						}
						if err := be.(backend.QuantCopier).CopyQuant(ctx, dst, src, q, ranges...); err != nil {
							t.Fatalf("%s: %s: %v", name, be.Name(), err)
						}
						vals[bi] = make([]float32, n)
						if err := be.Read(vals[bi], dst, 0); err != nil {
							t.Fatal(err)
						}
						sat, nan, err := backend.ReadCounts(be, q.Counts)
						if err != nil || nan != 0 {
							t.Fatalf("%s: %s: counts %d, %d, %v", name, be.Name(), sat, nan, err)
						}
						sats[bi] = sat
						if bi == 0 {
							checkStored(t, name, g, dst, before, x, q, ranges)
						}
					}
					if len(bes) < 2 {
						continue
					}
					for i := range vals[0] {
						if math.Float32bits(vals[0][i]) != math.Float32bits(vals[1][i]) {
							t.Fatalf("%s: element %d reads %g on the GPU, %g on the CPU", name, i, vals[0][i], vals[1][i])
						}
					}
					if sats[0] != sats[1] {
						t.Errorf("%s: %d saturated on the GPU, %d on the CPU", name, sats[0], sats[1])
					}
				}
			}
		}
	}
}

// checkStored compares the bytes of dst, which held before and then
// took ranges of x, with the host quantizer's.
func checkStored(t *testing.T, name string, g *gpu.Backend, dst backend.Buffer, before, x []float32, q backend.QuantCopy, ranges []backend.CopyRange) {
	t.Helper()
	dt, n := dst.DType(), len(before)
	want := make([]byte, n)
	wantSc := make([]uint16, n/backend.Q8Block)
	if dt == backend.Q4 {
		want = want[:n/2]
	}
	put := func(at int, v []float32) {
		switch dt {
		case backend.FP8:
			backend.EncodeFP8s(want[at:at+len(v)], v)
			return
		case backend.Q4:
			backend.QuantizeQ4(want[at/2:], wantSc[at/backend.Q8Block:], v)
			return
		}
		codes := make([]int8, len(v))
		backend.QuantizeQ8(codes, wantSc[at/backend.Q8Block:], v)
		for i, c := range codes {
			want[at+i] = byte(c)
		}
	}
	put(0, before)
	for _, r := range ranges {
		v := make([]float32, r.N)
		for i := range v {
			v[i] = x[r.Src+i]
			if q.Scales != nil && dt == backend.FP8 {
				v[i] /= q.Scales[(r.Src+i)/q.Dim%len(q.Scales)]
			}
		}
		put(r.Dst, v)
	}
	codes, scales, err := gpu.QuantStored(g, dst)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if codes[i] != want[i] {
			e := i // the element, or for q4 the byte's low one
			if dt == backend.Q4 {
				e = i/16*32 + i%16
			}
			t.Fatalf("%s: element %d stored as %#02x, want %#02x (from %g)", name, e, codes[i], want[i], x[min(e, len(x)-1)])
		}
	}
	for b := range scales {
		if scales[b] != wantSc[b] {
			t.Fatalf("%s: block %d's scale is %#04x, want %#04x", name, b, scales[b], wantSc[b])
		}
	}
}

// alloc is a zero-filled buffer of be, released when the test ends.
func alloc(t testing.TB, be backend.Backend, dt backend.DType, n int) backend.Buffer {
	t.Helper()
	b, err := be.Alloc(dt, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Release)
	return b
}

// What no quantized buffer holds — NaN, infinities, into q8 a magnitude
// of Q8Max or more, into q4 one of Q4Max or more — every backend stores
// as NaN (q8, q4: the block's scale, codes 0; fp8: the NaN pattern with
// the sign) and counts, writing every other value as it would: the GPU,
// which cannot look first, and the CPU alike (where it stores the
// dtype), so that both read back the same values (NaN where stored as
// NaN) and count the same.
func TestCopyQuantNonFinite(t *testing.T) {
	g := openGPU(t)
	c, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	const n = 256
	for _, dt := range quants {
		x := quantValues(3, n)
		x[40], x[41], x[200] = float32(math.NaN()), float32(math.Inf(-1)), float32(math.Inf(1))
		bad := 3
		if dt.Block() > 1 {
			x[100] = -1e7 // beyond Q8Max and Q4Max
			bad++
		}
		if dt == backend.Q4 {
			x[150] = backend.Q4Max // below Q8Max
			bad++
		}
		bes := []backend.Backend{g, c}
		if dt == backend.Q4 && !c.Caps().Quant4 {
			bes = bes[:1] // the CPU stores no q4 yet: the host's bytes alone
		}
		ranges := []backend.CopyRange{{Dst: 0, Src: 0, N: n}}
		read := make([][]float32, len(bes))
		var gd backend.Buffer
		for i, be := range bes {
			d, s, cnt := alloc(t, be, dt, n), alloc(t, be, backend.Float32, n), alloc(t, be, backend.Float32, backend.CountsLen)
			if err := be.Write(s, 0, x); err != nil {
				t.Fatal(err)
			}
			if err := be.(backend.QuantCopier).CopyQuant(ctx, d, s, backend.QuantCopy{Counts: cnt}, ranges...); err != nil {
				t.Fatalf("%s %v: %v", be.Name(), dt, err)
			}
			_, nan, err := backend.ReadCounts(be, cnt)
			if err != nil || nan != uint64(bad) {
				t.Errorf("%s %v: %d values stored as NaN (%v), want %d", be.Name(), dt, nan, err, bad)
			}
			read[i] = make([]float32, n)
			if err := be.Read(read[i], d, 0); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				gd = d
			}
		}
		for i := range read[0] {
			if len(read) < 2 {
				break
			}
			gv, cv := read[0][i], read[1][i]
			if gv != cv && !(math.IsNaN(float64(gv)) && math.IsNaN(float64(cv))) {
				t.Fatalf("%v: element %d reads %g on the GPU, %g on the CPU", dt, i, gv, cv)
			}
		}
		codes, scales, err := gpu.QuantStored(g, gd)
		if err != nil {
			t.Fatal(err)
		}
		clean := append([]float32(nil), x...)
		for i, v := range clean {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || dt.Block() > 1 && math.Abs(float64(v)) >= float64(dt.MaxFinite()) {
				clean[i] = 0
			}
		}
		want := make([]byte, n)
		wantSc := make([]uint16, n/backend.Q8Block)
		switch dt {
		case backend.FP8:
			backend.EncodeFP8s(want, clean)
			want[40], want[41], want[200] = 0x7f, 0xff, 0x7f
		case backend.Q4:
			want = want[:n/2]
			backend.QuantizeQ4(want, wantSc, clean)
			for _, blk := range []int{1, 3, 4, 6} { // elements 40, 41, 100, 150, 200
				clear(want[16*blk : 16*blk+16])
				wantSc[blk] = 0x7e00
			}
		default:
			q := make([]int8, n)
			backend.QuantizeQ8(q, wantSc, clean)
			for i, v := range q {
				want[i] = byte(v)
			}
			for _, blk := range []int{1, 3, 6} { // elements 40, 41, 100, 200
				clear(want[32*blk : 32*blk+32])
				wantSc[blk] = 0x7e00
			}
		}
		for i := range want {
			if codes[i] != want[i] {
				t.Fatalf("%v: element %d stored as %#02x, want %#02x", dt, i, codes[i], want[i])
			}
		}
		for b := range scales {
			if scales[b] != wantSc[b] {
				t.Fatalf("%v: block %d's scale is %#04x, want %#04x", dt, b, scales[b], wantSc[b])
			}
		}
	}
}
