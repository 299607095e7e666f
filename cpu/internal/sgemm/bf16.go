package sgemm

import (
	"errors"
	"fmt"
	"github.com/attn-go/attn/backend"
	"math"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/cpu"
	"gonum.org/v1/gonum/blas"
)

// The bfloat16 product (BF16Gemm) reuses Sgemm's driver but for the
// packing. VDPBF16PS multiplies the two bfloat16 pairs in each 32-bit
// lane and adds both products into a float32 lane: two multiply-adds
// where a float32 FMA does one. So B is always packed, into panels of NR
// columns whose every word holds (op(B)[p][j], op(B)[p+1][j]), kp =
// ⌈kb/2⌉ words per column of a k block; a transposed B's pairs are words
// already, gathered sixteen rows at a time, and an untransposed B's two
// rows are interleaved, both in assembly (AVX-512F). A is read in place,
// its row-major pairs (A[i][p], A[i][p+1]) being words already, broadcast
// one per row and step, except in an odd k block, which is packed with a
// zero after each row so that its last pair (a, 0) meets B's (b, 0)
// without reading past the row.

// bf16Kernel is one bfloat16 micro-kernel: fn sets the mr×nr block of C
// at c (row stride ldc) to alpha·A·B + beta·C, with A the mr×2kp block
// of bfloat16s at a (row stride lda, in bfloat16s) and B the packed
// panel at b, kp words of nr each. kp ≥ 1; with beta = 0 C is not read.
type bf16Kernel struct {
	name   string
	mr, nr int
	fn     func(kp int, a *uint16, lda int, b *uint32, c *float32, ldc int, alpha, beta float32)
}

// EnvBF16 overrides how BF16Gemm and the CPU backend multiply
// bfloat16s: ATTN_CPU_BF16=amx runs AMX's TDPBF16PS on tiles (with the
// VDPBF16PS kernel at the edges), dot the first VDPBF16PS kernel the CPU
// has, widen widens to float32 for Sgemm, auto (or unset) what
// ChooseBF16 picks. It is read once, at start-up, for the CLI and CI; a
// program sets the same through cpu.WithBF16, which the variable
// overrides.
const EnvBF16 = "ATTN_CPU_BF16"

// BF16Path is one way to multiply bfloat16s into float32: AMX's tiles
// with a VDPBF16PS kernel at their edges, a VDPBF16PS kernel alone, or
// (the zero value) both operands widened to float32 for Sgemm. The
// paths round differently (each sums in an order of its own, and the
// bfloat16 instructions flush subnormals), so which one runs is part of
// a result's bits: ChooseBF16 picks it from the CPU's identity and the
// caller's setting, never from a timing, and the same setting on the
// same CPU always picks the same path.
type BF16Path struct {
	kn    *bf16Kernel // nil: widen
	tiles tileFunc    // AMX's blocks, kn at their edges
}

// Arithmetic says whether the path multiplies bfloat16s as such (AMX or
// VDPBF16PS) rather than widening them to float32.
func (p BF16Path) Arithmetic() bool { return p.kn != nil }

// AMX says whether the path runs on AMX's tiles.
func (p BF16Path) AMX() bool { return p.tiles != nil }

// String names the path, such as "AVX512_BF16 8×32", "AMX-BF16 32×32
// tiles (AVX512_BF16 8×32 at the edges)" or "none (widened to float32
// for Sgemm)".
func (p BF16Path) String() string {
	switch {
	case p.kn == nil:
		return "none (widened to float32 for Sgemm)"
	case p.tiles != nil:
		return "AMX-BF16 32×32 tiles (" + p.kn.name + " at the edges)"
	}
	return p.kn.name
}

// Gemm is BF16Gemm on this path.
func (p BF16Path) Gemm(tB blas.Transpose, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	if p.kn == nil {
		bf16Widened(tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil)
		return
	}
	runBF16(p.kn, p.tiles, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil)
}

// GemmBand is BF16GemmBand on this path.
func (p BF16Path) GemmBand(tB blas.Transpose, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int, band Band) {
	checkBand(m, beta, band)
	if p.kn == nil {
		bf16Widened(tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, &band)
		return
	}
	runBF16(p.kn, p.tiles, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, &band)
}

// bf16Offer is what a CPU offers BF16Gemm, and how to try it: its
// VDPBF16PS kernels (fastest first), whether it has AMX-BF16 (amx; the
// first kernel serves the tiles' edges), whether its VDPBF16PS runs
// slower than widening (slow: a fact about the CPU, bf16Slow), the
// kernel's grant of the tiles, AMX's tileFunc, and the known-answer
// check a path must pass before it runs (checkBF16, once a process).
type bf16Offer struct {
	ks    []*bf16Kernel
	amx   bool
	slow  bool
	grant func() error
	tiles tileFunc
	check func(BF16Path) error
}

// choose is the path under setting ("" or "auto", "amx", "dot",
// "widen") and, for auto, notes on each faster path the CPU has that it
// did not take, and why. Auto takes AMX where the CPU has it, the
// kernel grants the tiles and they pass their check; else VDPBF16PS
// where it is not slower than widening and passes its check; else it
// widens. A setting it cannot follow is an error, with auto's path
// beside it.
func (o bf16Offer) choose(setting string) (BF16Path, []string, error) {
	tryAMX := func() (BF16Path, error) {
		if !o.amx || len(o.ks) == 0 {
			return BF16Path{}, errors.New("this build and CPU have no AMX-BF16 (amd64 with AMX-TILE, AMX-BF16 and AVX512_BF16)")
		}
		if err := o.grant(); err != nil {
			return BF16Path{}, backend.Wrapf(err, "refused")
		}
		p := BF16Path{kn: o.ks[0], tiles: o.tiles}
		if err := o.check(p); err != nil {
			return BF16Path{}, backend.Wrapf(err, "failed its known-answer check")
		}
		return p, nil
	}
	tryDot := func() (BF16Path, error) {
		if len(o.ks) == 0 {
			return BF16Path{}, errors.New("this build and CPU have no bfloat16 kernel (AVX512_BF16 on amd64)")
		}
		p := BF16Path{kn: o.ks[0]}
		if err := o.check(p); err != nil {
			return BF16Path{}, backend.Wrapf(err, "%s failed its known-answer check", p.kn.name)
		}
		return p, nil
	}
	auto := func() (BF16Path, []string) {
		var notes []string
		p, err := tryAMX()
		if err == nil {
			return p, nil
		}
		if o.amx && len(o.ks) > 0 {
			notes = append(notes, "AMX off: "+err.Error())
		}
		if len(o.ks) > 0 && o.slow {
			return BF16Path{}, append(notes, o.ks[0].name+" not used: slower than widening on Intel's cores")
		}
		if p, err = tryDot(); err != nil && len(o.ks) > 0 {
			notes = append(notes, err.Error())
		}
		return p, notes
	}
	switch strings.ToLower(strings.TrimSpace(setting)) {
	case "", "auto":
		p, notes := auto()
		return p, notes, nil
	case "amx":
		if p, err := tryAMX(); err != nil {
			p, notes := auto()
			return p, notes, backend.Wrapf(err, "%s=amx", EnvBF16)
		} else {
			return p, nil, nil
		}
	case "dot":
		if p, err := tryDot(); err != nil {
			p, notes := auto()
			return p, notes, backend.Wrapf(err, "%s=dot", EnvBF16)
		} else {
			return p, nil, nil
		}
	case "widen":
		return BF16Path{}, nil, nil
	}
	p, notes := auto()
	return p, notes, fmt.Errorf("%s=%q: want auto, amx, dot or widen", EnvBF16, setting)
}

// cpuOffer is this CPU's offer, every path checked once a process.
func cpuOffer() bf16Offer {
	return bf16Offer{ks: bf16Kernels, amx: amxCPU, slow: bf16Slow(), grant: amxGranted, tiles: amxTiles, check: checkedBF16}
}

// ChooseBF16 is the path for setting ("" or "auto", "amx", "dot",
// "widen"; see EnvBF16) on this CPU, with notes that say, for auto, why
// each faster path the CPU has is not taken. The first use of a path in
// a process runs its known-answer check (checkBF16, well under a
// millisecond), and a path that fails it is never taken. A setting this
// CPU cannot follow is an error, with auto's path beside it.
func ChooseBF16(setting string) (BF16Path, []string, error) {
	return cpuOffer().choose(setting)
}

// bf16Setting is $ATTN_CPU_BF16, read at start-up, and bf16Def,
// bf16Notes and bf16Err ChooseBF16's answer to it, the path of the
// package's BF16Gemm, made once, when first asked (bf16Choice: every
// reader calls it first).
var (
	bf16Setting = strings.ToLower(strings.TrimSpace(os.Getenv(EnvBF16)))
	bf16Once    sync.Once
	bf16Def     BF16Path
	bf16Notes   []string
	bf16Err     error
)

// bf16Choice makes BF16Gemm's choice the first time it is called.
func bf16Choice() {
	bf16Once.Do(func() { bf16Def, bf16Notes, bf16Err = ChooseBF16(bf16Setting) })
}

// BF16Setting is $ATTN_CPU_BF16 as read at start-up, trimmed and
// lower-cased: empty where unset.
func BF16Setting() string { return bf16Setting }

// amxPerm is the kernel's answer to the process's request for AMX's
// tiles, asked once, at the first call that needs to know (amxGranted).
// Tests replace it, and amxRequest, to force a refusal.
var amxPerm = new(amxPermission)

type amxPermission struct {
	once sync.Once
	err  error
}

// amxRequest asks the kernel for the tiles (amx_*.go).
var amxRequest = requestAMX

// amxGranted is nil once the kernel has granted the process AMX's
// tiles, else why not; it asks on the first call.
func amxGranted() error {
	p := amxPerm
	p.once.Do(func() { p.err = amxRequest() })
	return p.err
}

// AMX says whether BF16Gemm runs on AMX's tiles and, where it does not
// on a CPU that has them, why: turned off by $ATTN_CPU_BF16, refused by
// the kernel (an old kernel, or a C library's signal stack too small for
// the tiles' state), or a failed known-answer check. why is empty on a
// CPU without AMX-BF16.
func AMX() (on bool, why string) {
	bf16Choice()
	switch {
	case !amxCPU:
		return false, ""
	case bf16Def.AMX():
		return true, ""
	}
	for _, n := range bf16Notes {
		if w, ok := strings.CutPrefix(n, "AMX off: "); ok {
			return false, w
		}
	}
	if bf16Err != nil {
		return false, bf16Err.Error()
	}
	return false, fmt.Sprintf("turned off by %s=%s", EnvBF16, bf16Setting)
}

// HasBF16 says whether BF16Gemm runs bfloat16 arithmetic (AMX's
// TDPBF16PS or VDPBF16PS) rather than widening to float32 (see
// ChooseBF16). GODEBUG=cpu.avx512bf16=off (or cpu.avx512f=off) takes the
// kernels out, and GODEBUG=cpu.amxbf16=off (or cpu.amxtile=off) AMX, to
// test the fallback; the Go runtime, which does not know those
// features' names, then prints a warning that they are unknown, but
// golang.org/x/sys/cpu obeys them.
func HasBF16() bool {
	bf16Choice()
	return bf16Def.Arithmetic()
}

// BF16Kernel names what BF16Gemm runs (BF16Path.String).
func BF16Kernel() string {
	bf16Choice()
	return bf16Def.String()
}

// BF16Notes says why BF16Gemm does not run a faster path this CPU has
// (ChooseBF16's notes), empty where it runs the fastest.
func BF16Notes() []string {
	bf16Choice()
	return bf16Notes
}

// BF16Gemm computes
//
//	C = alpha · A · op(B) + beta · C
//
// with A (m×k) and B bfloat16, float32's upper 16 bits held as uint16,
// and C (m×n) float32, all row-major: B is stored k×n for blas.NoTrans
// (the attention loop's P·V) and n×k for blas.Trans (its Q·Kᵀ). On a
// CPU with AMX-BF16 it runs AMX's tiles, on one with AVX512_BF16 whose
// VDPBF16PS is fast (AMD's Zen 4 and later) VDPBF16PS, as ChooseBF16
// picks under $ATTN_CPU_BF16 (HasBF16, BF16Kernel); elsewhere, and under
// -tags purego or GODEBUG=cpu.avx512bf16=off, it widens A and B to
// float32, exactly, and runs Sgemm. Arguments Sgemm would refuse panic before anything is
// read or written.
//
// The product of two bfloat16s (8 significant bits each) is exact in
// float32 (24), so the only rounding is the float32 accumulation's, as
// in Sgemm: against the exact product of the bfloat16 values,
//
//	|C[i][j] − Ĉ[i][j]| ≤ γ(r) · (|alpha|·Σ_p |A[i][p]·op(B)[p][j]| + |beta·C[i][j]|)
//	γ(r) = r·2⁻²⁴ / (1 − r·2⁻²⁴),  r = k + 2·⌈k/256⌉ + 2
//
// (a rounding per step of k, and per k block one for alpha and two for
// beta·C; the kernel adds each pair's two products in one instruction,
// in an order of its own, which the bound covers). VDPBF16PS also reads
// bfloat16 subnormals (below 2⁻¹²⁶) as zero and flushes subnormal sums
// to zero, which may add k·2⁻¹²⁶·(1 + max|A| + max|B|)·|alpha| more;
// the fallback keeps them. The inputs' own rounding to bfloat16 (2⁻⁸
// relative each) is the caller's and costs far more.
func BF16Gemm(tB blas.Transpose, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	bf16Choice()
	bf16Def.Gemm(tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// BF16GemmBand is BF16Gemm restricted to a band, as SgemmBand is Sgemm.
// Under Inner a block's inner range is widened to whole pairs, which
// reads one more of A's zeros.
func BF16GemmBand(tB blas.Transpose, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int, band Band) {
	bf16Choice()
	bf16Def.GemmBand(tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, band)
}

// checkBand panics on a band SgemmBand refuses.
func checkBand(m int, beta float32, band Band) {
	if len(band.Lo) < m || len(band.Hi) < m {
		panic(fmt.Sprintf("sgemm: band of %d and %d rows for m=%d", len(band.Lo), len(band.Hi), m))
	}
	if band.Inner && beta != 1 {
		panic(fmt.Sprintf("sgemm: an inner band needs beta = 1, not %g", beta))
	}
}

// bf16Widened is the fallback: A and B widened to float32 (a shift, and
// exact) and multiplied by Sgemm or SgemmBand.
func bf16Widened(tB blas.Transpose, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int, band *Band) {
	checkShape(blas.NoTrans, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scaleC(m, n, beta, c, ldc) // and no empty A for gonum to refuse
		return
	}
	br, bc := k, n
	if tB != blas.NoTrans {
		br, bc = n, k
	}
	s := bf16Pool.Get().(*bf16Scratch)
	defer bf16Pool.Put(s)
	s.wa = widen(s.wa, a, m, k, lda)
	s.wb = widen(s.wb, b, br, bc, ldb)
	la, lb := k, bc
	if band == nil {
		Implementation{}.Sgemm(blas.NoTrans, tB, m, n, k, alpha, s.wa, la, s.wb, lb, beta, c, ldc)
		return
	}
	Implementation{}.SgemmBand(tB, m, n, k, alpha, s.wa, la, s.wb, lb, beta, c, ldc, *band)
}

// widen returns the rows×cols bfloat16 matrix x (row stride ld) as a
// dense float32 one, in buf's space when it is large enough.
func widen(buf []float32, x []uint16, rows, cols, ld int) []float32 {
	buf = grow(buf, rows*cols)
	if cols == 0 {
		return buf
	}
	for i := range rows {
		dst := buf[i*cols:][:cols]
		for j, v := range x[i*ld:][:cols] {
			dst[j] = fromBF16(v)
		}
	}
	return buf
}

// fromBF16 is the float32 a bfloat16 holds.
func fromBF16(x uint16) float32 {
	return math.Float32frombits(uint32(x) << 16)
}

// bf16Scratch is one call's packing space, pooled as scratch is.
type bf16Scratch struct {
	a     []uint16  // A's k block with a zero after each row, for an odd kb
	b     []uint32  // packed B panels
	aEdge []uint16  // the last rows of A when fewer than MR remain
	cEdge []float32 // an edge block of C
	wa    []float32 // the fallback's widened A and B
	wb    []float32
	// AMX's blocks, their inner tails and its 32×32 scratch (tileBlock)
	jobs  []amxJob
	tails []bf16Tail
	t     []float32
}

var bf16Pool = sync.Pool{New: func() any { return new(bf16Scratch) }}

// asmPack lets packB hand whole panels to packPanel (the assembly
// packers where there are kernels); tests turn it off to check the Go
// packing against them.
var asmPack = true

// bf16BlockK is how many pairs of k one packed panel row holds at most:
// a panel of NR = 32 columns is then 32 KiB, as Sgemm's is.
func bf16BlockK(nr int) int { return 8192 / nr }

// runBF16 is BF16Gemm (band nil) or BF16GemmBand on kernel kn, or, with
// tiles, on AMX's blocks with kn at their edges (tileBlock).
func runBF16(kn *bf16Kernel, tiles tileFunc, tB blas.Transpose, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int, band *Band) {
	checkShape(blas.NoTrans, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if alpha == 0 || k == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	s := bf16Pool.Get().(*bf16Scratch)
	defer bf16Pool.Put(s)
	blockK := 2 * bf16BlockK(kn.nr)
	for p0 := 0; p0 < k; p0 += blockK {
		kb := min(blockK, k-p0)
		kp := (kb + 1) / 2
		ap, la := a[p0:], lda // A in place: rows i at ap[i·lda:]
		if kb%2 == 1 {
			ap, la = s.packA(a, lda, m, p0, kb), 2*kp
		}
		for j0 := 0; j0 < n; j0 += blockN {
			nb := min(blockN, n-j0)
			bp := s.packB(kn.nr, tB, b, ldb, p0, j0, kb, nb)
			if tiles != nil {
				s.tileBlock(tiles, kn, m, nb, kp, alpha, ap, la, bp, beta, c[j0:], ldc, band, j0, p0)
			} else {
				s.block(kn, m, nb, kp, alpha, ap, la, bp, beta, c[j0:], ldc, band, j0, p0)
			}
		}
		beta = 1 // the next k block adds to this one's
	}
}

// packA copies A's m×kb block at column p0 (kb odd) with a zero after
// each row, so that each row ends in a whole pair.
func (s *bf16Scratch) packA(a []uint16, lda, m, p0, kb int) []uint16 {
	w := kb + 1
	s.a = growU16(s.a, m*w)
	for i := range m {
		row := s.a[i*w:][:w]
		copy(row, a[i*lda+p0:][:kb])
		row[kb] = 0
	}
	return s.a
}

// packB packs op(B)'s kb×nb block at row p0, column j0 into panels of nr
// columns, each kp = ⌈kb/2⌉ rows of nr words (B[p][j], B[p+1][j]), the
// last panel padded with zero columns and an odd kb's last pair with a
// zero second half.
func (s *bf16Scratch) packB(nr int, tB blas.Transpose, b []uint16, ldb, p0, j0, kb, nb int) []uint32 {
	kp := (kb + 1) / 2
	panels := (nb + nr - 1) / nr
	s.b = growU32(s.b, panels*kp*nr)
	for jp := range panels {
		dst := s.b[jp*kp*nr:][:kp*nr]
		j := j0 + jp*nr
		w := min(nr, j0+nb-j)
		if w < nr {
			clear(dst)
		}
		if w == nr && kb >= 2 && asmPack && packPanel(tB, kb/2, b, ldb, p0, j, dst, nr) {
			if kb%2 == 1 {
				s.packTail(tB, b, ldb, p0, j, kb, w, dst[(kp-1)*nr:])
			}
			continue
		}
		if tB == blas.NoTrans {
			// Rows p0+2p and p0+2p+1 of the stored B, interleaved.
			for p := range kb / 2 {
				lo, hi := b[(p0+2*p)*ldb+j:][:w], b[(p0+2*p+1)*ldb+j:][:w]
				d := dst[p*nr:][:w]
				for jj, v := range lo {
					d[jj] = uint32(v) | uint32(hi[jj])<<16
				}
			}
			if kb%2 == 1 {
				s.packTail(tB, b, ldb, p0, j, kb, w, dst[(kp-1)*nr:])
			}
			continue
		}
		// op(B) = Bᵀ: column j of op(B) is row j of the stored B, whose
		// pairs are in order already. Eight rows at a time, so that each
		// step writes eight words in a row.
		jj := 0
		for ; jj+8 <= w; jj += 8 {
			src := b[(j+jj)*ldb+p0:]
			s0, s1, s2, s3 := src[:kb], src[ldb:][:kb], src[2*ldb:][:kb], src[3*ldb:][:kb]
			s4, s5, s6, s7 := src[4*ldb:][:kb], src[5*ldb:][:kb], src[6*ldb:][:kb], src[7*ldb:][:kb]
			for p := range kb / 2 {
				d := (*[8]uint32)(dst[p*nr+jj:])
				d[0], d[1], d[2], d[3] = word(s0, 2*p), word(s1, 2*p), word(s2, 2*p), word(s3, 2*p)
				d[4], d[5], d[6], d[7] = word(s4, 2*p), word(s5, 2*p), word(s6, 2*p), word(s7, 2*p)
			}
		}
		for ; jj < w; jj++ {
			row := b[(j+jj)*ldb+p0:][:kb]
			for p := range kb / 2 {
				dst[p*nr+jj] = word(row, 2*p)
			}
		}
		if kb%2 == 1 {
			s.packTail(tB, b, ldb, p0, j, kb, w, dst[(kp-1)*nr:])
		}
	}
	return s.b
}

// packTail writes the last row of a panel of an odd kb: op(B)[p0+kb−1]
// from column j, w wide, each with a zero second half.
func (s *bf16Scratch) packTail(tB blas.Transpose, b []uint16, ldb, p0, j, kb, w int, d []uint32) {
	d = d[:w]
	if tB == blas.NoTrans {
		for jj, v := range b[(p0+kb-1)*ldb+j:][:w] {
			d[jj] = uint32(v)
		}
		return
	}
	for jj := range d {
		d[jj] = uint32(b[(j+jj)*ldb+p0+kb-1])
	}
}

// word is the pair x[i], x[i+1] as one 32-bit word, x[i] in its low
// half (the compiler makes it one load).
func word(x []uint16, i int) uint32 {
	x = x[i : i+2]
	return uint32(x[0]) | uint32(x[1])<<16
}

// block sets the m×nb block of C at c to alpha·A·B + beta·C, for A the
// m×2kp block at a (row stride lda) and B the packed panels bp, which
// start at column j0 and inner index p0 of the whole product (band, nil
// for none, is in the whole product's coordinates).
func (s *bf16Scratch) block(kn *bf16Kernel, m, nb, kp int, alpha float32, a []uint16, lda int, bp []uint32, beta float32, c []float32, ldc int, band *Band, j0, p0 int) {
	mr, nr := kn.mr, kn.nr
	for j := 0; j < nb; j += nr {
		w := min(nr, nb-j)
		panel := bp[(j/nr)*kp*nr:]
		for i := 0; i < m; i += mr {
			h := min(mr, m-i)
			// The pairs this block runs, [pa, pz) of the k block: the
			// inner range widened to whole pairs.
			ka, kz, skip := band.blockRange(i, h, j0+j, w, p0, 2*kp)
			pa, pz := ka/2, (kz+1)/2
			if skip || pa >= pz {
				continue
			}
			ai, la, pi, kk := a[i*lda+2*pa:], lda, panel[pa*nr:], pz-pa
			if h == mr && w == nr {
				kn.fn(kk, &ai[0], la, &pi[0], &c[i*ldc+j], ldc, alpha, beta)
				continue
			}
			// An edge block, as in Sgemm's block.
			if h < mr {
				s.aEdge = growU16(s.aEdge, mr*2*kk)
				for r := range h {
					copy(s.aEdge[r*2*kk:][:2*kk], ai[r*lda:][:2*kk])
				}
				clear(s.aEdge[h*2*kk:])
				ai, la = s.aEdge, 2*kk
			}
			s.cEdge = grow(s.cEdge, mr*nr)
			kn.fn(kk, &ai[0], la, &pi[0], &s.cEdge[0], nr, alpha, 0)
			for r := range h {
				dst := c[(i+r)*ldc+j:][:w]
				for jj, v := range s.cEdge[r*nr:][:w] {
					if beta == 0 {
						dst[jj] = v
					} else {
						dst[jj] = v + beta*dst[jj]
					}
				}
			}
		}
	}
}

func growU16(buf []uint16, n int) []uint16 {
	if cap(buf) < n {
		return make([]uint16, n)
	}
	return buf[:n]
}

func growU32(buf []uint32, n int) []uint32 {
	if cap(buf) < n {
		return make([]uint32, n)
	}
	return buf[:n]
}

// TilesGranted is nil where the CPU has AMX's tiles and Linux has granted
// them to the process (asked once, as for the bfloat16 path), else why
// not. The decoding kernels' int8 tiles ask it before their first use.
func TilesGranted() error {
	if !cpu.X86.HasAMXTile {
		return errors.New("no AMX tiles")
	}
	return amxGranted()
}
