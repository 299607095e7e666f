package cpu

import "math"

// ints8 is what the integer kernels keep for a decoding item in tiles8:
// Q's digits for each group of four query rows, made at the first key
// tile that needs them (decodeQ resets them), and the P·V kernel's
// digits and factors for a chunk.
type ints8 struct {
	x     []int16      // groups × 4 rows × d digits
	w     [][4]float32 // each group's 1/f_r
	state []int8       // each group's: 0 not made, 1 made, −1 not fit
	d     int          // the head dim the digits are made for
	wd    []int32      // the P·V digits: 4 rows × 32 pairs × 8 blocks
	gs    [32]float32  // their factors, 8r + b
}

// reset forgets Q's digits: the item's Q changed.
func (i *ints8) reset() { clear(i.state) }

// digits is group grp's Q digits (4 rows of d) and the factors 1/f_r,
// made if not yet: nil where a row is not finite.
func (i *ints8) digits(grp int, q []float32, ldq, d int) ([]int16, *[4]float32) {
	if i.d != d {
		clear(i.state)
		i.d = d
	}
	if len(i.state) <= grp {
		i.state = append(i.state, make([]int8, grp+1-len(i.state))...)
		i.w = append(i.w, make([][4]float32, grp+1-len(i.w))...)
	}
	if n := (grp + 1) * 4 * d; len(i.x) < n {
		i.x = append(i.x, make([]int16, n-len(i.x))...)
	}
	x := i.x[grp*4*d : (grp+1)*4*d]
	if i.state[grp] == 0 {
		i.state[grp] = -1
		if qDigits(q, ldq, d, x, &i.w[grp]) {
			i.state[grp] = 1
		}
	}
	if i.state[grp] < 0 {
		return nil, nil
	}
	return x, &i.w[grp]
}

// qDigits writes the four rows of q as int16 digits x = round(q·f_r),
// f_r = 16383/max|q_r|, into x (rows of d, each block of 32 in the
// scores kernel's order, qDigitAt) and 1/f_r into inv (0 for an all-zero
// row, whose digits are 0), reporting false where a row holds a value
// that is not finite. (16383: the kernel's products of a digit and a
// code times 2⁸, four to an int32, stay below 2³¹.)
func qDigits(q []float32, ldq, d int, x []int16, inv *[4]float32) bool {
	for r := range 4 {
		row := q[r*ldq : r*ldq+d]
		var m float32
		for _, v := range row {
			a := float32(math.Abs(float64(v)))
			if !(a <= math.MaxFloat32) {
				return false
			}
			m = max(m, a)
		}
		out := x[r*d : (r+1)*d]
		if m == 0 {
			clear(out)
			inv[r] = 0
			continue
		}
		f := 16383 / float64(m)
		for c, v := range row {
			out[qDigitAt(c)] = int16(math.RoundToEven(float64(v) * f))
		}
		inv[r] = float32(float64(m) / 16383)
	}
	return true
}

// qDigitAt is where the scores kernel reads Q's element c in a row of
// digits: a block's 32 codes unpack by 128-bit lanes, 0-7 and 16-23 in
// one register and 8-15 and 24-31 in the next, and its 32 digits lie in
// that order.
func qDigitAt(c int) int {
	i := c % 32
	switch i / 8 {
	case 1:
		i += 8
	case 2:
		i -= 8
	}
	return c - c%32 + i
}
