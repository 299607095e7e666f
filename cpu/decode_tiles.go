package cpu

import (
	"math"

	"github.com/attn-go/attn/backend"
)

// The q8 scores on AMX's int8 tiles (decode_amx_amd64.go; where the CPU
// has them): TDPBSSD multiplies K's int8 codes where they lie by Q
// written as integer digits, exactly, and float32 takes over only to
// scale each block's exact sum by its scale and add the blocks. Q's row r
// is s_r·x[r][c] with s_r = 2^(e_r−30) (max|q_r| < 2^e_r ≤ 2·max|q_r|)
// and x = round(q/s_r) an integer below 2³⁰ in magnitude, four signed
// bytes x = Σ_g 2⁸ᵍ·x_g: an element of Q at least 2⁻⁶ of its row's
// largest is exact, the rest within 2⁻³⁰ of the row's largest. So a
// score is within 2⁻³⁰·max|q_r|·Σ_c|k_c| of the exact product's, beside
// float32's rounding of the blocks' sums (the f32 kernels round their
// sums at about d·2⁻²⁴ of Σ_c|q_c·k_c|): the tiles' error is the
// smaller unless a row of Q spans more than 2¹³ with its largest
// elements on K's smallest.

// tileBlockBytes is one block's digits: 8 rows (32 codes in fours) of 16
// columns (row r, digit g) of four bytes, TDPBSSD's B.
const tileBlockBytes = 512

// tileMinKeys is the fewest keys a call runs on the tiles. A call pays
// for configuring and releasing them and its prefetches run past a short
// run's end: over 256-key pages (BenchmarkCacheDecodeBatch, 16 sequences
// of 8192 keys) the tiles took longer a step than the vector kernels,
// while a contiguous cache's 1024-key tiles beat them (Intel Xeon,
// family 6 model 167; the commit that set it has the measurements).
const tileMinKeys = 512

// tileMaxD is the widest head dim the tile kernel takes: a key's block
// scales are widened as one vector of 16.
const tileMaxD = 16 * backend.Q8Block

// axpyTileMaxKeys is the most keys one call of the q8 P·V kernel takes:
// its int32 sums add up to 255·127 a key.
const axpyTileMaxKeys = 65536

// tileDotKeys is how many of a run's n keys (rows stride values apart,
// head dim d, stored as dt) the scores tile kernels take where the CPU
// runs them: the first whole groups of 16. It is 0 for a run they do not
// fit, which goes whole to the integer or vector kernels: fewer than
// tileMinKeys keys, a head dim that is not whole blocks (q8's 32, fp8's
// 64) or is past tileMaxD, q8 rows that do not start on a block, or a
// dtype with no tile kernel. It decides apart from the instructions, so
// that every CPU tests the decision.
func tileDotKeys(dt backend.DType, n, d, stride int) int {
	if n < tileMinKeys || d <= 0 || d > tileMaxD {
		return 0
	}
	switch {
	case dt == backend.Q8 && d%backend.Q8Block == 0 && stride%backend.Q8Block == 0,
		dt == backend.FP8 && d%64 == 0:
		return n &^ 15
	}
	return 0
}

// tileAxpyKeys is tileDotKeys for the P·V tile kernels, value head dim
// dv: q8's take whole chunks of 64 keys, at most axpyTileMaxKeys, fp8's
// whole chunks of 32; both need dv a multiple of 64.
func tileAxpyKeys(dt backend.DType, n, dv, stride int) int {
	if n < tileMinKeys || dv <= 0 || dv > tileMaxD || dv%64 != 0 {
		return 0
	}
	switch {
	case dt == backend.Q8 && stride%backend.Q8Block == 0:
		return min(n, axpyTileMaxKeys) &^ 63
	case dt == backend.FP8:
		return n &^ 31
	}
	return 0
}

// tiles8 is what the 8-bit tile kernels keep for a decoding item: Q as
// q8's digits or fp8's bfloat16 parts, one set for each group of four
// query rows, made at the first key tile that needs it and kept for the
// item's others (decodeQ resets it), and the kernels' scratch.
type tiles8 struct {
	bt    []int8        // groups × blocks × tileBlockBytes
	w     [][16]float32 // each group's weights s_r·2⁸ᵍ, lane 4r+g
	state []int8        // each group's: 0 not made yet, 1 made, −1 not fit for the tiles
	buf   []int32       // the kernel's scratch: (1 + blocks) KiB
	vbuf  []byte        // the P·V kernel's scratch: 10 KiB
	// bf and bfState are the fp8 scores kernel's: each group's Q as
	// bfloat16 parts (bfParts), and whether they are made.
	bf      []uint16
	bfState []int8
	fbuf    []byte // its scratch: 32·d + 1024 bytes
	// pparts is the fp8 P·V kernel's weights as bfloat16 parts, 1 KiB
	// a chunk of 32 keys.
	pparts []uint16
	// vector keeps the item on the widening vector kernels: its
	// backend was opened WithDecode8("vector"). intQ8 keeps q8 off
	// AMX's tiles, on the integer vector kernels: WithDecode8("integer")
	// (New refuses it where they do not run).
	vector, intQ8 bool
	// i8 is the integer q8 P·V kernel's (decode_int_amd64.go).
	i8 ints8
}

// reset forgets the digits: the item's Q changed.
func (t *tiles8) reset() { clear(t.state); clear(t.bfState); t.i8.reset() }

// digits is group grp's digits for the four rows of q (row stride ldq, d
// columns), made if not yet: nil where they cannot stand for Q (a row
// not finite, or one whose largest is below 2⁻⁹⁶, where s_r·2⁸ᵍ would
// leave float32's normal range).
func (t *tiles8) digits(grp int, q []float32, ldq, d int) ([]int8, *[16]float32) {
	nb := d / backend.Q8Block
	t.w = extend(t.w, grp+1)
	t.buf = grow(t.buf, (1+nb)*256)
	bt := groupSlot(&t.state, &t.bt, grp, nb*tileBlockBytes, func(bt []int8) bool {
		return tileDigits(q, ldq, d, bt, &t.w[grp])
	})
	if bt == nil {
		return nil, nil
	}
	return bt, &t.w[grp]
}

// groupSlot is group grp's slot of size elements in *buf, the buffer and
// *state (each group's: 0 not made yet, 1 made, −1 not fit) extended to
// hold it, filled by fill the first time it is asked for since the
// state was cleared: nil where fill reported that it cannot be made.
func groupSlot[T any](state *[]int8, buf *[]T, grp, size int, fill func([]T) bool) []T {
	*state = extend(*state, grp+1)
	*buf = extend(*buf, (grp+1)*size)
	slot := (*buf)[grp*size : (grp+1)*size]
	if (*state)[grp] == 0 {
		(*state)[grp] = -1
		if fill(slot) {
			(*state)[grp] = 1
		}
	}
	if (*state)[grp] < 0 {
		return nil
	}
	return slot
}

// extend is buf with at least n elements, the ones it had kept (grow's
// are not) and the new ones zero.
func extend[T any](buf []T, n int) []T {
	if len(buf) < n {
		buf = append(buf, make([]T, n-len(buf))...)
	}
	return buf
}

// tileDigits writes the four rows of q as digits into bt (TDPBSSD's B
// layout: block b, code c = 4i+u of it, row r, digit g at byte
// b·512 + 64i + 4(4r+g) + u) and their weights 2^(e_r−30+8g) into w,
// reporting false (and writing nothing meaningful) where a row is not
// finite or its largest is below 2⁻⁹⁶. An all-zero row gets zero digits.
func tileDigits(q []float32, ldq, d int, bt []int8, w *[16]float32) bool {
	clear(bt)
	for r := range 4 {
		row := q[r*ldq : r*ldq+d]
		var m float32
		for _, x := range row {
			a := float32(math.Abs(float64(x)))
			if !(a <= math.MaxFloat32) {
				return false // NaN or ±Inf
			}
			m = max(m, a)
		}
		e := 1
		if m > 0 {
			_, e = math.Frexp(float64(m)) // m < 2^e
		}
		if e-30 < -126 {
			return false
		}
		for g := range 4 {
			w[4*r+g] = float32(math.Ldexp(1, e-30+8*g))
		}
		for c, x := range row {
			// x·2^(30−e) is exact in float64; its rounding is the only
			// one, and |v| < 2³⁰.
			v := int32(math.RoundToEven(math.Ldexp(float64(x), 30-e)))
			at := c/backend.Q8Block*tileBlockBytes + c%backend.Q8Block/4*64 + 16*r + c%4
			for g := range 3 {
				dg := int32(int8(v))
				bt[at+4*g] = int8(dg)
				v = (v - dg) >> 8
			}
			bt[at+12] = int8(v) // |v| ≤ 64
		}
	}
	return true
}

// bfBlockHalves is one 32-dim block of Q's parts for TDPBF16PS: 16 rows
// (pairs of dims) of 16 columns (4r + part) of two bfloat16s.
const bfBlockHalves = 512

// parts is group grp's Q as bfloat16 parts for the fp8 scores kernel
// (bfParts), made if not yet: nil where they cannot stand for it.
func (t *tiles8) parts(grp int, q []float32, ldq, d int) []uint16 {
	t.fbuf = grow(t.fbuf, 32*d+1024)
	return groupSlot(&t.bfState, &t.bf, grp, d/backend.Q8Block*bfBlockHalves, func(bf []uint16) bool {
		return bfParts(q, ldq, d, bf)
	})
}

// bfParts writes the four rows of q as three bfloat16 parts each, q = hi
// + mid + lo (each the nearest bfloat16 to what the parts before leave,
// so |lo| ≤ 2⁻¹⁶|q| and the three hold q's 24 bits), in TDPBF16PS's B
// layout: block b, dims 2i, 2i+1 of it, row r, part p at halves
// 512b + 32i + 2(4r+p) and the one after; the fourth column of a row is
// zero. It reports false where an element is not finite or beyond
// bfloat16's largest (3.3895e38), whose parts would not add back.
func bfParts(q []float32, ldq, d int, bf []uint16) bool {
	clear(bf)
	for r := range 4 {
		for c, x := range q[r*ldq : r*ldq+d] {
			if !(math.Abs(float64(x)) <= bf16Max) {
				return false
			}
			at := c/backend.Q8Block*bfBlockHalves + c%backend.Q8Block/2*32 + 8*r + c%2
			for p := range 3 {
				h := backend.BFloat16.Encode(x)
				bf[at+2*p] = h
				if p < 2 {
					x -= backend.BFloat16.Decode(h)
				}
			}
		}
	}
	return true
}

// bf16Max is bfloat16's largest finite value.
var bf16Max = float64(backend.BFloat16.Decode(0x7f7f))

// fp8Read is the value the decoding kernels read for an E4M3 byte: its
// value, and ±480 for the NaN pattern (no cache stores it; a NaN is
// refused on the way in).
func fp8Read(b uint8) float64 {
	if b&0x7f == 0x7f {
		return math.Copysign(480, float64(backend.DecodeFP8(b)))
	}
	return float64(backend.DecodeFP8(b))
}
