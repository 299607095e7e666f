//go:build amd64 && !purego

package cpu

import (
	"math"

	"golang.org/x/sys/cpu"
)

// hasAVX2 says whether expShift may use expShiftAVX2 (AVX2 and FMA),
// hasAVX512 whether it may use expShiftAVX512 (AVX-512F), hasSoftmax512
// whether softmaxRowsVec may use softmaxRowsAVX512 (AVX-512F and
// AVX512DQ, for VREDUCEPS) and hasBF16 whether its bfloat16 loops may
// run, in softmaxRowsAVX512 and expShiftBF16AVX512 (those and
// AVX512_BF16, for VCVTNEPS2BF16), read from the CPU at start-up;
// GODEBUG=cpu.avx512f=off turns the wider loops off, cpu.avx512bf16=off
// the bfloat16 ones.
var (
	hasAVX2       = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	hasAVX512     = cpu.X86.HasAVX512F
	hasSoftmax512 = hasAVX512 && cpu.X86.HasAVX512DQ
	hasBF16       = hasSoftmax512 && cpu.X86.HasAVX512BF16
)

// expShiftAVX2 is expShift for len(row) a multiple of 8 (expf_amd64.s).
//
//go:noescape
func expShiftAVX2(row []float32, m float32) float64

// expShiftAVX512 is expShift for len(row) a multiple of 16 (expf_amd64.s).
//
//go:noescape
func expShiftAVX512(row []float32, m float32) float64

// expShiftVec runs the vector loops over as much of row as they take,
// sixteen lanes and then eight, and returns how many values they did and
// their sum.
func expShiftVec(row []float32, m float32) (int, float64) {
	n, sum := 0, 0.0
	if wide := len(row) &^ 15; hasAVX512 && wide > 0 {
		n, sum = wide, expShiftAVX512(row[:wide], m)
	}
	if narrow := (len(row) - n) &^ 7; hasAVX2 && narrow > 0 {
		sum += expShiftAVX2(row[n:n+narrow], m)
		n += narrow
	}
	return n, sum
}

// rowMaxAVX2 is the largest value of row, len(row) a positive multiple of
// 8 (expf_amd64.s).
//
//go:noescape
func rowMaxAVX2(row []float32) float32

// rowMaxAVX512 is rowMaxAVX2 for len(row) a positive multiple of 16
// (expf_amd64.s).
//
//go:noescape
func rowMaxAVX512(row []float32) float32

// rowMaxVec is the largest value of as much of row as the vector loops
// take, sixteen lanes and then eight, and how much that is.
func rowMaxVec(row []float32) (int, float32) {
	n, m := 0, float32(math.Inf(-1))
	if wide := len(row) &^ 15; hasAVX512 && wide > 0 {
		n, m = wide, rowMaxAVX512(row[:wide])
	}
	if narrow := (len(row) - n) &^ 7; hasAVX2 && narrow > 0 {
		m = max(m, rowMaxAVX2(row[n:n+narrow]))
		n += narrow
	}
	return n, m
}

// scaleAVX2 multiplies x by a, len(x) a multiple of 8 (expf_amd64.s).
//
//go:noescape
func scaleAVX2(x []float32, a float32)

// scaleVec scales as much of x as the vector loop takes and returns how
// much that is.
func scaleVec(x []float32, a float32) int {
	n := len(x) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	scaleAVX2(x[:n], a)
	return n
}

// softcapAVX2 is softcap for len(row) a multiple of 8 (expf_amd64.s).
//
//go:noescape
func softcapAVX2(row []float32, c float32)

// softcapVec caps as much of row as the vector loop takes and returns how
// much that is.
func softcapVec(row []float32, c float32) int {
	n := 0
	if wide := len(row) &^ 15; hasAVX512 && wide > 0 {
		softcapAVX512(row[:wide], c)
		n = wide
	}
	if narrow := (len(row) - n) &^ 7; hasAVX2 && narrow > 0 {
		softcapAVX2(row[n:n+narrow], c)
		n += narrow
	}
	return n
}

// softcapAVX512 is softcap for len(row) a multiple of 16 (expf_amd64.s).
//
//go:noescape
func softcapAVX512(row []float32, c float32)

// alibiAVX2 is alibi for len(row) a multiple of 8 and distances exact in
// float32 (expf_amd64.s).
//
//go:noescape
func alibiAVX2(row []float32, m, d0 float32)

// alibiAVX512 is alibi for len(row) a multiple of 16 and distances exact
// in float32 (expf_amd64.s).
//
//go:noescape
func alibiAVX512(row []float32, m, d0 float32)

// alibiVec runs ALiBi's vector loops over as much of row as they take,
// sixteen lanes and then eight, and returns how much that is: none when a
// distance |d0 − j| would not be exact in float32.
func alibiVec(row []float32, m float32, d0 int) int {
	if !hasAVX2 || d0 > 1<<24 || d0-len(row) < -(1<<24) {
		return 0
	}
	n := 0
	if wide := len(row) &^ 15; hasAVX512 && wide > 0 {
		alibiAVX512(row[:wide], m, float32(d0))
		n = wide
	}
	if narrow := (len(row) - n) &^ 7; narrow > 0 {
		alibiAVX2(row[n:n+narrow], m, float32(d0-n))
		n += narrow
	}
	return n
}

// expShiftBF16AVX512 is expShiftBF16 for len(row) a multiple of 16,
// through softmaxRowsAVX512's exponential (expf_amd64.s).
//
//go:noescape
func expShiftBF16AVX512(row []float32, m float32, out []uint16) float64

// expShiftBF16Vec runs the sixteen-lane loop of expShiftBF16 over as much
// of row as it takes and returns how many values it did and their sum.
func expShiftBF16Vec(row []float32, m float32, out []uint16) (int, float64) {
	wide := len(row) &^ 15
	if !hasBF16 || wide == 0 {
		return 0, 0
	}
	return wide, expShiftBF16AVX512(row[:wide], m, out[:wide])
}

func softmaxRowsAVX512(s []float32, stride, rows, n int, m, mNew, sums []float64, out []uint16)

func softmaxRowsAVX2(s []float32, stride, rows, n int, m, mNew, sums []float64)

// softmaxRowsFit says whether softmaxRowsVec takes rows of n values:
// with AVX-512F and AVX512DQ n a multiple of 16, with AVX2 and FMA one of
// 8; with bf16 (weights rounded to bfloat16) only the former, with
// AVX512_BF16 too.
func softmaxRowsFit(n int, bf16 bool) bool {
	if bf16 {
		return n > 0 && hasBF16 && n%16 == 0
	}
	return n > 0 && (hasSoftmax512 && n%16 == 0 || hasAVX2 && n%8 == 0)
}

// softmaxRowsVec runs softmaxRowsAVX512, or softmaxRowsAVX2 where that
// cannot, on rows rows of s, n values each at row stride stride, for n
// that softmaxRowsFit. With out (not nil, and n fit for bf16) the
// weights go to out's rows at the same stride, rounded to bfloat16, and
// s is left as it was.
func softmaxRowsVec(s []float32, stride, rows, n int, m, mNew, sums []float64, out []uint16) {
	if rows == 0 {
		return
	}
	// The assembly reads and writes these; out of range is a panic here.
	_, _, _, _ = s[(rows-1)*stride+n-1], m[rows-1], mNew[rows-1], sums[rows-1]
	if out != nil {
		_ = out[(rows-1)*stride+n-1]
		softmaxRowsAVX512(s, stride, rows, n, m, mNew, sums, out)
		return
	}
	if hasSoftmax512 && n%16 == 0 {
		softmaxRowsAVX512(s, stride, rows, n, m, mNew, sums, nil)
		return
	}
	softmaxRowsAVX2(s, stride, rows, n, m, mNew, sums)
}
