//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/attn-go/attn/backend"
)

// q8 P·V in integer arithmetic on AVX2 (decode_int_amd64.s, generated
// by _gen/decode_int.py, which says what each kernel computes; the
// scores kernels are below): VPMADDWD over int16 digits of the weights
// times V's block scales and two keys' codes at once. Where the float
// kernel widens every code to float32 and multiplies it by its scale
// before its FMAs, this takes sixteen products an instruction.
//
// A chunk's weight digits round each weight times its block's scale at
// 2⁻¹⁶·32767/32000 of the chunk's largest weight times its block's
// largest scale: cpu/doc.go states the bound.

//go:noescape
func q8WeightsAVX2(p *float32, ldp int, sc unsafe.Pointer, ss int, n int, lanes *int32, wd *int32, gs *float32, pfs int) bool

// q8Weights4AVX2 is q8WeightsAVX2 for rows of at most four blocks: a
// key pair in the eight lanes, the same digits and factors for the
// row's blocks.
//
//go:noescape
func q8Weights4AVX2(p *float32, ldp int, sc unsafe.Pointer, ss int, n int, lanes *int32, wd *int32, gs *float32, pfs int) bool

//go:noescape
func axpyRows4Q8IntAVX2(wd *int32, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, gs *float32, pf int)

// axpyRows4Q8IntVNNI is the P·V kernel in sixteen lanes, for CPUs with
// AVX512-VNNI: VPDPWSSD takes a key pair's products for sixteen columns
// and adds them to the int32 sums in one instruction, on the same digits.
//
//go:noescape
func axpyRows4Q8IntVNNI(wd *int32, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, gs *float32, pf int)

// axpyRows4Q8IntAVX2L2 and axpyRows4Q8IntVNNIL2 are their L2 twins
// (prefetchL2).
//
//go:noescape
func axpyRows4Q8IntAVX2L2(wd *int32, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, gs *float32, pf int)

//go:noescape
func axpyRows4Q8IntVNNIL2(wd *int32, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, gs *float32, pf int)

// axpyRows4Q4IntVNNI is axpyRows4Q8IntVNNI over q4 codes read where they
// lie, two a byte (ldv in bytes), on the same digits: the bits it gives
// over the widened rows (_gen/decode_int.py).
//
//go:noescape
func axpyRows4Q4IntVNNI(wd *int32, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, gs *float32, pf int)

//go:noescape
func axpyRows4Q4IntVNNIL2(wd *int32, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, gs *float32, pf int)

// axpyRows4Q4IntAVX2 is axpyRows4Q8IntAVX2 over q4 codes read in place,
// a strip of sixteen columns one nibble of each byte: the same bits.
//
//go:noescape
func axpyRows4Q4IntAVX2(wd *int32, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, gs *float32, pf int)

//go:noescape
func axpyRows4Q4IntAVX2L2(wd *int32, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, gs *float32, pf int)

// hasVNNI says whether the CPU runs axpyRows4Q8IntVNNI: the sixteen-lane
// decoding kernels' CPUs (AVX-512F) with AVX512-VNNI and AVX512-BW (the
// codes' sign extension to words).
var hasVNNI = quantWidth() == 1 && cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512BW

// An integer P·V kernel: its function (the L1's prefetches or the L2
// twin, set by usePrefetch; run4 its q4 form) and its name,
// as Info's Detail and its check's errors name it.
type intKernel struct {
	run  func(wd *int32, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, gs *float32, pf int)
	run4 func(wd *int32, v unsafe.Pointer, ldv int, n int, dv int, acc *float32, ldacc int, gs *float32, pf int)
	name string
}

var (
	intAVX2 = intKernel{name: "q8 P·V (VPMADDWD)"}
	intVNNI = intKernel{name: "q8 P·V (VPDPWSSD)"}
)

// q8Int is the integer kernel the CPU runs: the sixteen-lane one where it
// has AVX512-VNNI, else the eight-lane one (q8IntHas says whether it
// runs either). Tests set it to each kernel the CPU has.
var q8Int = func() *intKernel {
	if hasVNNI {
		return &intVNNI
	}
	return &intAVX2
}()

// intChunk is the most keys the P·V kernel sums in int32 before it adds
// them to acc (its digits' buffer holds 32 pairs a row).
const intChunk = 64

// intAhead is how many keys on the integer kernel prefetches V's rows
// and scales: a chunk. Within a run's last intAhead keys they
// prefetch the next run's first rows instead where it is known
// (rawRows.next: a paged cache's next page), so that a page's first keys
// are not read cold.
const intAhead = 64

// ahead is the byte offsets from key j's row, and from its scales, of
// the rows and scales the kernels prefetch for it: intAhead keys on, or
// the next run's where key j is among its run's last intAhead of m.
func (r rawRows) ahead(j, m int) (rows, scales int) {
	to := (j + intAhead) * r.stride
	if j+intAhead >= m && r.hasNext {
		to = r.next + (j+intAhead-m)*r.stride
	}
	d := to - j*r.stride
	return d, d / backend.Q8Block * 2
}

// intMaxBlocks is the most blocks of a row of V one call of the P·V
// kernel takes: a key's block scales are read as one vector of eight.
// Wider rows run as groups of blocks (runAxpyInt).
const intMaxBlocks = 8

// q8IntHas says whether the CPU runs an integer kernel: AVX2 with F16C
// and FMA (hasAVX2) on the eight-lane decoding kernels (quantWidth 0),
// or AVX512-VNNI on the sixteen-lane ones (hasVNNI). Other CPUs with
// AVX-512 run the sixteen-lane float kernels (or AMX's tiles).
func q8IntHas() bool { return quantWidth() == 0 && hasAVX2 || hasVNNI }

// q8IntChecks are the integer kernel's known-answer checks.
func q8IntChecks() []tileCheck { return []tileCheck{{q8Int.name, checkQ8IntAxpy}} }

// q8IntNow is the integer kernel's decision in this process, made once:
// its check, then, for Info's Detail, its time against the widening
// kernel's (q8IntRace). The time decides nothing: where it passed, it
// runs, so that one binary gives the same bits every run on a CPU (it
// measured faster than the widening kernel on a Zen 3's AVX2 and a Zen
// 4's VNNI; docs/benchmarks.md, "8-bit KV caches", has the times).
var q8IntNow = sync.OnceValue(func() q8IntState {
	if !q8IntHas() {
		return q8IntState{}
	}
	passed, err := passChecks(q8IntChecks())
	if err != nil {
		return q8IntState{note: err.Error()}
	}
	st := q8IntState{ok: true, note: passed[0]}
	fl, in := q8IntRace()
	st.timing = fmt.Sprintf("a 512-key tile's P·V in %.1f µs against %.1f µs widening", in.Seconds()*1e6, fl.Seconds()*1e6)
	return st
})

// q8IntRace times the P·V of a 512-key tile at D = 128 on the CPU's widening
// kernel and on the integer one, interleaved, five rounds each after a
// warm-up, and returns each one's fastest: the tile fits the caches, so
// the compute is what is timed.
func q8IntRace() (float, integer time.Duration) {
	const n, d = 512, 128
	codes, scales := checkQ8Rows(n+8, d, d, 0x2c00, 0x2e00, 0x3000)
	rows := rawRows{store: store{t: backend.Q8, q8: codes[:n*d], sc: scales[:n*d/backend.Q8Block]}, stride: d}
	p := make([]float32, 4*n)
	for i := range p {
		p[i] = float32(i%13) / 13
	}
	acc := make([]float32, 4*d)
	var t tiles8
	return race(func() { quantAxpyW(quantWidth(), p, n, rows, n, d, acc, d) }, func() { runAxpyInt(&t, p, n, rows, n, d, acc, d) })
}

// race times a widening kernel's call and an integer one's, interleaved,
// five rounds each after a warm-up, and returns each one's fastest.
func race(widen, integer func()) (tf, ti time.Duration) {
	step := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
	step(widen)
	step(integer)
	tf, ti = time.Hour, time.Hour
	for range 5 {
		tf = min(tf, step(widen))
		ti = min(ti, step(integer))
	}
	return tf, ti
}

// q8Lanes are the P·V digits' masks of a key's eight scale lanes, by the
// blocks a row has: −1 for a block, 0 past them; q8Lanes4 are
// q8Weights4AVX2's, a key pair's interleaved lanes (lane i block i/2).
var q8Lanes, q8Lanes4 = func() (l [intMaxBlocks + 1][8]int32, l4 [5][8]int32) {
	for nb := range l {
		for b := range nb {
			l[nb][b] = -1
		}
	}
	for nb := range l4 {
		for i := range 2 * nb {
			l4[nb][i] = -1
		}
	}
	return l, l4
}()

// axpyInt adds the weighted q8 values of the first keys of v (a multiple
// of 16) into the four rows of acc on the integer kernel, chunk by chunk,
// and returns how many it took: 0 where it does not run (the item is on
// the float kernels, V is not q8 in whole blocks), and it stops before a
// chunk with a weight or a scale that is NaN, or whose bounds leave
// float32's range, or whose last key's eight scale lanes would pass the
// capacity of v's scales (the store's end: the lanes past a row's blocks
// are read and not used), leaving that chunk unwritten. Rows of more
// than intMaxBlocks blocks (MLA's V of 512) run as groups of at most
// that many, each with its own digits, every group's digits made before
// any group's sums: a block's digits do not depend on the others', so
// the bits are those of one pass over the row.
func axpyInt(t *tiles8, p []float32, ldp int, v rawRows, n, dv int, acc []float32, ldacc int) int {
	if !t.intOn() {
		return 0
	}
	return runAxpyInt(t, p, ldp, v, n, dv, acc, ldacc)
}

// intGroupDigits is one group's P·V digits: 4 rows × 32 pairs ×
// intMaxBlocks blocks, int32 each.
const intGroupDigits = 4 * 32 * intMaxBlocks

// runAxpyInt is axpyInt once the kernels are known to run.
func runAxpyInt(t *tiles8, p []float32, ldp int, v rawRows, n, dv int, acc []float32, ldacc int) int {
	m := n &^ 15
	nb := dv / backend.Q8Block
	// A q4 V's codes are read in place, two a byte, by the q4 form of
	// the integer kernel the CPU runs (axpyQ4): axpyRows4Q4IntVNNI with
	// AVX512-VNNI, axpyRows4Q4IntAVX2 on the eight-lane kernels.
	q4 := v.t == backend.Q4
	if v.t != backend.Q8 && !q4 || m == 0 || dv%backend.Q8Block != 0 || v.stride%backend.Q8Block != 0 {
		return 0
	}
	run, ldv, codes := q8Int.run, v.stride, len(v.q8)
	if q4 && q8Int.run4 == nil {
		return 0
	}
	if q4 {
		run, ldv, codes = q8Int.run4, v.stride/2, 2*len(v.q4)
	}
	_, _ = p[3*ldp+m-1], acc[3*ldacc+dv-1]
	ss := v.stride / backend.Q8Block // scales from a key's to the next's
	groups := ceilDiv(nb, intMaxBlocks)
	t.i8.wd = grow(t.i8.wd, groups*intGroupDigits)
	t.i8.gs = grow(t.i8.gs, groups*4*intMaxBlocks)
	for j := 0; j < m; j += intChunk {
		c := min(intChunk, m-j)
		first := j * v.stride
		last := (j+c-1)*v.stride + dv - 1
		if codes <= last {
			return j
		}
		pf, pfs := v.ahead(j, m)
		if q4 {
			pf /= 2 // bytes of codes
		}
		for g := range groups {
			b0 := g * intMaxBlocks
			gb := min(intMaxBlocks, nb-b0)
			// The eight lanes may read past the slice's last scale,
			// never past its capacity: the store's memory beyond the
			// run.
			if cap(v.sc) < (j+c-1)*ss+b0+8 {
				return j
			}
			sc := unsafe.Pointer(&v.sc[first/backend.Q8Block+b0])
			wd, gs := &t.i8.wd[g*intGroupDigits], &t.i8.gs[g*4*intMaxBlocks]
			var ok bool
			if gb <= 4 {
				ok = q8Weights4AVX2(&p[j], ldp, sc, 2*ss, c, &q8Lanes4[gb][0], wd, gs, pfs)
			} else {
				ok = q8WeightsAVX2(&p[j], ldp, sc, 2*ss, c, &q8Lanes[gb][0], wd, gs, pfs)
			}
			if !ok {
				return j
			}
		}
		for g := range groups {
			b0 := g * intMaxBlocks
			gb := min(intMaxBlocks, nb-b0)
			at := first + b0*backend.Q8Block
			var vp unsafe.Pointer
			if q4 {
				vp = unsafe.Pointer(&v.q4[at/2])
			} else {
				vp = unsafe.Pointer(&v.q8[at])
			}
			run(&t.i8.wd[g*intGroupDigits], vp, ldv, c, gb*backend.Q8Block, &acc[b0*backend.Q8Block], ldacc, &t.i8.gs[g*4*intMaxBlocks], pf)
		}
	}
	return m
}

// intOn says whether the item's q8 P·V runs on the integer kernel: where
// it passed its check, unless its backend keeps the widening kernels
// (WithDecode8("vector")).
func (t *tiles8) intOn() bool { return !t.vector && q8IntNow().ok }

// checkQ8IntAxpy runs the P·V kernel once, on the tile checks' inputs
// (checkWeights: 64 keys of 128 values, codes −127 … 127, scales ½, 1, 2
// and 0, weights spanning 2⁹ with zeros and a zero row, accumulators
// that hold values), and compares it with the float64 sums within 2⁻²²
// of Σ|terms| (float32's sums) plus the digits' rounding, half a digit a
// term: max p·max d·Σ|codes|/64000.
func checkQ8IntAxpy() error {
	return checkQ8Axpy(q8Int.name, runAxpyInt, 1.0/64000)
}

// The q8 scores in integer arithmetic on AVX512-VNNI
// (dotRows4Q8IntVNNI; _gen/decode_int.py says what it computes): Q as
// int16 digits of each 32-value block (qDigitsInt), K's codes where
// they lie, sixteen keys in the lanes, VPDPBUSD adding four products a
// lane, exact int32 sums a block scaled once. A score is within
// α·Σ_b d_b·2⁻¹⁶·max_b|q|·Σ_{c∈b}|k_c| of the exact one (cpu/doc.go).
//
//go:noescape
func dotRows4Q8IntVNNI(x *int8, hb *int32, k unsafe.Pointer, ldk int, n int, nb int, s *float32, lds int, sc unsafe.Pointer, ss int, pf int, perm int)

//go:noescape
func dotRows4Q8IntVNNIL2(x *int8, hb *int32, k unsafe.Pointer, ldk int, n int, nb int, s *float32, lds int, sc unsafe.Pointer, ss int, pf int, perm int)

// dotRows4Q8IntAVX2 is the q8 scores in integer arithmetic on AVX2
// (_gen/decode_int.py says what it computes): Q as int16 digits of each
// 32-value block (qDigitsAVX2, at most 16383), K's codes in the words'
// high bytes, two keys at a time, VPMADDWD, exact int32 sums a block
// scaled once. A score is within α·Σ_b d_b·(½/16383)·max_b|q|·Σ_{c∈b}|k_c|
// of the exact one (cpu/doc.go).
//
//go:noescape
func dotRows4Q8IntAVX2(x *int8, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, gv *int32, sc unsafe.Pointer, pf int)

//go:noescape
func dotRows4Q8IntAVX2L2(x *int8, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, gv *int32, sc unsafe.Pointer, pf int)

// dotRows4Q4IntVNNI is dotRows4Q8IntVNNI over q4 codes read where they
// lie, two a byte, on the same digits: the bits it gives over the
// widened rows (_gen/decode_int.py).
//
//go:noescape
func dotRows4Q4IntVNNI(x *int8, hb *int32, k unsafe.Pointer, ldk int, n int, nb int, s *float32, lds int, sc unsafe.Pointer, ss int, pf int, perm int)

//go:noescape
func dotRows4Q4IntVNNIL2(x *int8, hb *int32, k unsafe.Pointer, ldk int, n int, nb int, s *float32, lds int, sc unsafe.Pointer, ss int, pf int, perm int)

// dotRows4Q4IntAVX2 is dotRows4Q8IntAVX2 over q4 codes read in place (d
// the row's bytes of codes): the bits it gives over the widened rows.
//
//go:noescape
func dotRows4Q4IntAVX2(x *int8, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, gv *int32, sc unsafe.Pointer, pf int)

//go:noescape
func dotRows4Q4IntAVX2L2(x *int8, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, gv *int32, sc unsafe.Pointer, pf int)

// An integer scores kernel: its function (the L1's prefetches or the L2
// twin, set by usePrefetch; run for the VNNI kernel, run4 for its q4
// form, run2 for the AVX2 one, run24 for its q4 form), its name, and its
// digits' largest |x|.
type intDotKernel struct {
	run   func(x *int8, hb *int32, k unsafe.Pointer, ldk int, n int, nb int, s *float32, lds int, sc unsafe.Pointer, ss int, pf int, perm int)
	run4  func(x *int8, hb *int32, k unsafe.Pointer, ldk int, n int, nb int, s *float32, lds int, sc unsafe.Pointer, ss int, pf int, perm int)
	run2  func(x *int8, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, gv *int32, sc unsafe.Pointer, pf int)
	run24 func(x *int8, k unsafe.Pointer, ldk int, n int, d int, s *float32, lds int, gv *int32, sc unsafe.Pointer, pf int)
	name  string
	xmax  int
}

var (
	intDotVNNI = intDotKernel{name: "q8 scores (VPDPBUSD)", xmax: qDigitsMax}
	intDotAVX2 = intDotKernel{name: "q8 scores (VPMADDWD)", xmax: qDigitsAVX2Max}
)

// q8IntDot is the integer scores kernel the CPU runs: the sixteen-lane
// one where it has AVX512-VNNI, else the eight-lane one (where
// q8IntHas). Tests set it to each kernel the CPU has.
var q8IntDot = func() *intDotKernel {
	if hasVNNI {
		return &intDotVNNI
	}
	return &intDotAVX2
}()

// avx2 says whether k is the eight-lane kernel (run2, qDigitsAVX2's
// digits, two keys a step) rather than the VNNI one (sixteen).
func (k *intDotKernel) avx2() bool { return k == &intDotAVX2 }

// q8IntDotNow is the integer scores kernel's decision in this process,
// made once, as q8IntNow's: its check, then its time against the
// widening kernel's for Info's Detail. Where it passed, it runs.
var q8IntDotNow = sync.OnceValue(func() q8IntState {
	if !q8IntHas() {
		return q8IntState{}
	}
	passed, err := passChecks([]tileCheck{{q8IntDot.name, checkQ8IntDot}})
	if err != nil {
		return q8IntState{note: err.Error()}
	}
	st := q8IntState{ok: true, note: passed[0]}
	fl, in := q8IntDotRace()
	st.timing = fmt.Sprintf("a 512-key tile's scores in %.1f µs against %.1f µs widening", in.Seconds()*1e6, fl.Seconds()*1e6)
	return st
})

// q8IntDotRace times the scores of a 512-key tile at D = 128 on the
// widening kernel and on the integer one, as q8IntRace does.
func q8IntDotRace() (float, integer time.Duration) {
	const n, d = 512, 128
	codes, scales := checkQ8Rows(n, d, d, 0x2c00, 0x2e00, 0x3000)
	k := rawRows{store: store{t: backend.Q8, q8: codes, sc: scales}, stride: d}
	q := make([]float32, 4*d)
	for i := range q {
		q[i] = float32(i%17-8) / 9
	}
	s := make([]float32, 4*n)
	var t tiles8
	// Q's digits made by the warm-up, as once an item.
	return race(func() { quantDotW(quantWidth(), q, d, k, n, d, s, n, 1) }, func() { runDotInt(&t, 0, q, d, k, n, d, s, n, 1) })
}

// dotInt is the scores of the first keys of k (a multiple of the
// kernel's step: 16 on VNNI, 2 on AVX2; 0 where the integer kernel does
// not run or fit: not q8 in whole blocks, on VNNI fewer than two blocks a
// row, fewer keys than a step, a Q row not finite or too small) for the
// four query rows of q, group grp of the item's.
func dotInt(t *tiles8, grp int, q []float32, ldq int, k rawRows, n, d int, s []float32, lds int, alpha float32) int {
	if t.vector || !q8IntDotNow().ok {
		return 0
	}
	return runDotInt(t, grp, q, ldq, k, n, d, s, lds, alpha)
}

// runDotInt is dotInt once the kernel is known to run, and dotQ4's: k
// q8 codes, or q4 codes read in place by the kernel's q4 form.
func runDotInt(t *tiles8, grp int, q []float32, ldq int, k rawRows, n, d int, s []float32, lds int, alpha float32) int {
	avx2 := q8IntDot.avx2()
	m := n &^ 15
	nb := d / backend.Q8Block
	if avx2 {
		m = n &^ 1
	}
	if k.t != backend.Q8 && k.t != backend.Q4 || m == 0 || d%backend.Q8Block != 0 || nb < 1 || !avx2 && nb < 2 || k.stride%backend.Q8Block != 0 {
		return 0
	}
	x := t.i8.callDigits(grp, q, ldq, d, avx2, alpha)
	if x == nil {
		return 0
	}
	last := (m-1)*k.stride + d - 1
	if k.t == backend.Q4 {
		_ = k.q4[last/2]
	} else {
		_ = k.q8[last]
	}
	_, _ = k.sc[last/backend.Q8Block], s[3*lds+m-1]
	// The kernel prefetches intAhead keys on; a run's last intAhead keys
	// prefetch the next run's first rows instead, where it is known.
	head := m
	if k.hasNext && m > intAhead {
		head = m - intAhead
	}
	dotIntRun(t, x, k, 0, head, nb, s, lds, intAhead*k.stride)
	if head < m {
		pf, _ := k.ahead(head, m)
		dotIntRun(t, x, k, head, m, nb, s, lds, pf)
	}
	return m
}

// callDigits is group grp's Q digits for the scores kernel (as digits)
// with the call's factors in t.i8.hb, each row's times α: on AVX2 eight
// times (block b, row r at 32b + 8r), on VNNI beside the block's
// corrections. nil where the digits cannot stand for Q.
func (i *ints8) callDigits(grp int, q []float32, ldq, d int, avx2 bool, alpha float32) []int8 {
	x, hb := i.digits(grp, q, ldq, d, avx2)
	if x == nil {
		return nil
	}
	nb := d / backend.Q8Block
	if avx2 {
		i.hb = grow(i.hb, 32*nb)
	} else {
		i.hb = grow(i.hb, len(hb))
	}
	for b := range nb {
		for r := range 4 {
			g := int32(math.Float32bits(alpha * math.Float32frombits(uint32(hb[8*b+4+r]))))
			if avx2 {
				for c := range 8 {
					i.hb[32*b+8*r+c] = g
				}
			} else {
				i.hb[8*b+r], i.hb[8*b+4+r] = hb[8*b+r], g
			}
		}
	}
	return x
}

// dotIntRun runs the scores kernel on Q's digits x over keys j0 … j1−1
// of k (a multiple of the kernel's step apart, checked in bounds),
// prefetching from each key's row the one pf values on: q8's codes, or
// a q4 K's on the kernel's q4 form (codes two a byte).
func dotIntRun(t *tiles8, x []int8, k rawRows, j0, j1, nb int, s []float32, lds, pf int) {
	sc := k.sc[j0*k.stride/backend.Q8Block:]
	// The rows' codes, their stride and pf in bytes, and a row's bytes.
	codes, ldk, row := unsafe.Pointer(nil), k.stride, nb*backend.Q8Block
	if k.t == backend.Q4 {
		codes, ldk, row, pf = unsafe.Pointer(&k.q4[j0*k.stride/2]), ldk/2, row/2, pf/2
	} else {
		codes = unsafe.Pointer(&k.q8[j0*k.stride])
	}
	if q8IntDot.avx2() {
		run := q8IntDot.run2
		if k.t == backend.Q4 {
			run = q8IntDot.run24
		}
		run(&x[0], codes, ldk, j1-j0, row, &s[j0], lds, &t.i8.hb[0], unsafe.Pointer(&sc[0]), pf)
		return
	}
	ss, perm := scalePick(k.stride, nb, j1-j0, sc)
	run := intDotVNNI.run
	if k.t == backend.Q4 {
		run = intDotVNNI.run4
	}
	run(&x[0], &t.i8.hb[0], codes, ldk, j1-j0, nb, &s[j0], lds, unsafe.Pointer(&sc[0]), ss, pf, perm)
}

// scalePick is how the VNNI scores kernels find the block scales of n
// keys (a multiple of 16) whose rows lie stride values apart, nb blocks
// a row, their scales from sc's first: ss, the bytes from a key's
// scales to the next's, and perm: a group's scales picked out of 128
// bytes where they all lie there and the last group's 128 bytes stay
// within the store (the slice's capacity), 1; else, in rows of at most
// four blocks, out of the keys' first eight bytes gathered once a group
// (the last key's within the store), 2; else gathered a block, 0.
func scalePick(stride, nb, n int, sc []uint16) (ss, perm int) {
	ss = stride / backend.Q8Block * 2
	if 15*ss/2+nb <= 64 && (n-16)*ss/2+64 <= cap(sc) {
		return ss, 1
	}
	if nb <= 4 && (n-1)*ss/2+4 <= cap(sc) {
		return ss, 2
	}
	return ss, 0
}

// q4Names are the q4 forms of the integer kernels the CPU runs, as their
// known-answer checks and Info's Detail name them: the scores', the
// P·V's.
func q4Names() (dot, axpy string) {
	if q8IntDot.avx2() {
		return "q4 scores (VPMADDWD)", "q4 P·V (VPMADDWD)"
	}
	return "q4 scores (VPDPBUSD)", "q4 P·V (VPDPWSSD)"
}

// q4IntNow is the q4 kernels' decision in this process, made once: where
// the CPU runs the integer kernels, their q4 forms' known-answer checks
// (checkQ4IntDot, checkQ4IntAxpy). Where both passed, a q4 K's scores
// and a q4 V's P·V take them, the codes read in place, rather than
// widening the codes for the q8 kernels.
var q4IntNow = sync.OnceValue(func() q8IntState {
	if !q8IntHas() {
		return q8IntState{}
	}
	passed, err := passChecks(q4IntChecks())
	if err != nil {
		return q8IntState{note: err.Error()}
	}
	return q8IntState{ok: true, note: strings.Join(passed, ", ")}
})

// q4IntChecks are the q4 forms' known-answer checks.
func q4IntChecks() []tileCheck {
	dot, axpy := q4Names()
	return []tileCheck{{dot, checkQ4IntDot}, {axpy, checkQ4IntAxpy}}
}

// axpyQ4 adds the weighted values of the first keys of v, a q4 V read in
// place (a multiple of 16), into the four rows of acc on the integer P·V
// kernel's q4 form and returns how many it took, as axpyInt: 0 where it
// does not run (the item on the widening kernels or AMX's tiles, a CPU
// without the integer kernels).
func axpyQ4(t *tiles8, p []float32, ldp int, v rawRows, n, dv int, acc []float32, ldacc int) int {
	if noDotQ4 || v.t != backend.Q4 || !t.intOn() || t.q8Tiles() || !q4IntNow().ok {
		return 0
	}
	return runAxpyInt(t, p, ldp, v, n, dv, acc, ldacc)
}

// checkQ4IntAxpy runs the integer P·V kernel's q4 form once on checkQ8Axpy's
// weights over q4 codes that take every value in both nibbles, scales
// ½, 1, 2 and 0, and compares it with the float64 sums as checkQ8IntAxpy
// does.
func checkQ4IntAxpy() error {
	codes, scales := checkQ4Rows(checkKeys, checkLdv, 0x3800, 0x3c00, 0x4000)
	for i := range scales {
		if i%7 == 3 {
			scales[i] = 0
		}
	}
	scales = slices.Grow(scales, 8)
	v := rawRows{store: store{t: backend.Q4, q4: codes, sc: scales}, stride: checkLdv}
	_, name := q4Names()
	return checkAxpyBlocks(name, runAxpyInt, 1.0/64000, v, func(j, c int) float64 {
		e := j*checkLdv + c
		b := codes[e/backend.Q8Block*16+e%16]
		if e%backend.Q8Block >= 16 {
			b >>= 4
		}
		return float64(int(b&15) - 8)
	})
}

// dotQ4 is the scores of the first keys of k, a q4 K read in place (a
// multiple of the kernel's step, 16 on VNNI, 2 on AVX2; 0 where the q4
// kernel does not run or fit: the item on the widening kernels or on
// AMX's tiles, on VNNI rows of fewer than two blocks, fewer keys than a
// step, a Q row the digits cannot stand for) for the four query rows of
// q, group grp of the item's, on the integer scores kernel's q4 form
// (dotRows4Q4IntVNNI, dotRows4Q4IntAVX2): the bits the q8 kernel gives
// over the widened codes.
func dotQ4(t *tiles8, grp int, q []float32, ldq int, k rawRows, n, d int, s []float32, lds int, alpha float32) int {
	if noDotQ4 || k.t != backend.Q4 || t.vector || !q8IntDotNow().ok || t.q8Tiles() || !q4IntNow().ok {
		return 0
	}
	return runDotInt(t, grp, q, ldq, k, n, d, s, lds, alpha)
}

// checkQ4IntDot runs the q4 scores kernel on checkQ8IntDot's Q (exact
// digits) over q4 codes that take every value 0 … 15 in both nibbles,
// scales ½, 1 and 2, 48 keys of three blocks, at strides of four blocks
// (a group's scales picked out of its own 128 bytes) and of sixteen (its
// keys' first eight bytes gathered once), and compares every score with
// the float64 one within 2⁻²⁰ of Σ|terms|.
func checkQ4IntDot() error {
	const n, d, ldq, lds = 48, 96, 100, 50
	q := checkQ8IntQ(ldq, d, q8IntDot.xmax)
	for _, ldk := range []int{128, 512} {
		codes, scales := checkQ4Rows(n, ldk, 0x3800, 0x3c00, 0x4000)
		k := rawRows{store: store{t: backend.Q4, q4: codes, sc: scales}, stride: ldk}
		s := make([]float32, 4*lds)
		var t tiles8
		const alpha = 0.5
		if got := runDotInt(&t, 0, q, ldq, k, n, d, s, lds, alpha); got != n {
			return fmt.Errorf("rows %d apart: took %d of %d keys", ldk, got, n)
		}
		name, _ := q4Names()
		s = checkOut(name, s)
		for r := range 4 {
			for j := range n {
				var want, abs float64
				for c := range d {
					e := j*ldk + c
					blk := e / backend.Q8Block
					in := e % backend.Q8Block
					code := codes[blk*backend.Q8Block/2+in%16]
					if in >= 16 {
						code >>= 4
					}
					term := float64(q[r*ldq+c]) * float64(int(code&15)-8) * float64(backend.Float16.Decode(scales[blk]))
					want += term
					abs += math.Abs(term)
				}
				want *= alpha
				if got := float64(s[r*lds+j]); !(math.Abs(got-want) <= 0x1p-20*alpha*abs) { // NaN too
					return fmt.Errorf("rows %d apart: row %d key %d is %g, want %g", ldk, r, j, got, want)
				}
			}
		}
	}
	return nil
}

// checkQ4Rows is n rows of q4 codes at a stride of ld values (whole
// blocks), both nibbles of their bytes taking every value 0 … 15,
// and their blocks' scales cycling through s0, s1, s2 (float16 bits).
func checkQ4Rows(n, ld int, s0, s1, s2 uint16) ([]uint8, []uint16) {
	codes := make([]uint8, n*ld/2)
	scales := make([]uint16, n*ld/backend.Q8Block)
	for i := range codes {
		codes[i] = uint8(i*7%16 | (i*11+5)%16<<4)
	}
	for i := range scales {
		scales[i] = [3]uint16{s0, s1, s2}[i%3]
	}
	return codes, scales
}

// checkQ8IntDot runs the scores kernel (q8IntDot) on Q whose digits are
// exact (each block's largest ±X·2⁻¹⁰, X the kernel's largest digit, the
// others integers times 2⁻¹⁰, so f = 2¹⁰ and x = q·2¹⁰; on VNNI both
// digits take every value's bytes), the check rows' codes and scales (½,
// 1, 2), 48 keys of three blocks, and compares every score with the
// float64 one within 2⁻²⁰ of Σ|terms| (float32's rounding of the blocks'
// sums and of their sum): at a stride of four blocks, where a VNNI
// group's scales are picked out of its own 128 bytes, and of sixteen (a
// BNHD row's heads), where its keys' first eight bytes are gathered
// once.
func checkQ8IntDot() error {
	const n, d, ldq, lds = 48, 96, 100, 50
	q := checkQ8IntQ(ldq, d, q8IntDot.xmax)
	for _, ldk := range []int{128, 512} {
		codes, scales := checkQ8Rows(n, d, ldk, 0x3800, 0x3c00, 0x4000)
		k := rawRows{store: store{t: backend.Q8, q8: codes, sc: scales}, stride: ldk}
		s := make([]float32, 4*lds)
		var t tiles8
		const alpha = 0.5
		if got := runDotInt(&t, 0, q, ldq, k, n, d, s, lds, alpha); got != n {
			return fmt.Errorf("rows %d apart: took %d of %d keys", ldk, got, n)
		}
		s = checkOut(q8IntDot.name, s)
		for r := range 4 {
			for j := range n {
				want, abs := checkQ8Score(q[r*ldq:], k, j, d)
				want *= alpha
				if got := float64(s[r*lds+j]); !(math.Abs(got-want) <= 0x1p-20*alpha*abs) { // NaN too
					return fmt.Errorf("rows %d apart: row %d key %d is %g, want %g", ldk, r, j, got, want)
				}
			}
		}
	}
	return nil
}

// checkQ8IntQ is the scores checks' Q: four rows (stride ldq, d
// columns) whose digits under a largest digit xm are exact, each block's
// largest ±xm·2⁻¹⁰ and the others integers times 2⁻¹⁰.
func checkQ8IntQ(ldq, d, xm int) []float32 {
	q := make([]float32, 4*ldq)
	for r := range 4 {
		for c := range d {
			v := (c*7919+r*104729)%(2*xm+1) - xm
			if c%32 == (r*5+c/32*3)%32 {
				v = xm * (1 - 2*(c%2))
			}
			q[r*ldq+c] = float32(v) * 0x1p-10
		}
	}
	return q
}
