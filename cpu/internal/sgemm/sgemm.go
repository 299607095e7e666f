// Package sgemm is the CPU backend's float32 matrix multiply without cgo:
// gonum's blas.Float32 with Sgemm replaced by a blocked driver around a
// register-tiled micro-kernel in Go assembly (AVX-512 or AVX2 with FMA on
// amd64, picked from the CPU at start-up: on AVX-512, 6×64 on Intel and
// 8×32 elsewhere, kernel_amd64.go says why, and $ATTN_CPU_KERNEL picks
// another; NEON on arm64). Every kernel gives the same bits. Where there is
// no kernel (another architecture, -tags purego, an older CPU) Sgemm is
// gonum's pure Go, unchanged; every other routine is gonum's anyway.
//
// The driver follows the usual layering. k is cut into blocks of at most
// blockK. For each block, a transposed op(B) is packed into panels of NR
// columns laid out row after row (NR floats per step of k), so the kernel
// reads it as one stream; a B that is not transposed is read in place, as
// is an A that is not (the kernel takes row strides), and a transposed A
// is packed. The kernel computes an MR×NR
// block of C += alpha·A·B entirely in registers; blocks at the edges of C
// go through a small buffer. The first k block's kernels scale C by beta
// as they store; with beta = 0 they never read C, so C's old contents
// (NaN included) do not show, as BLAS requires. SgemmBand runs the same
// driver over a band of rows' ranges, skipping the kernel blocks outside
// it: the fused attention loop's causal diagonals and windows.
//
// BF16Gemm and BF16GemmBand are the same products on bfloat16 operands
// into float32 C, on the path ChooseBF16 picks (BF16Path): AMX's tiles,
// a micro-kernel of VDPBF16PS (bf16.go says how its operands are
// packed), or the operands widened to float32 for Sgemm. Every path but
// widening passes a known-answer check (checkBF16) before it first runs.
package sgemm

//go:generate sh -c "cd _gen && go run . -out ../kernel_amd64.s -stubs ../kernel_amd64_stub.go -pkg sgemm"

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Implementation is gonum's blas.Float32 with the micro-kernel's Sgemm.
// The zero value is ready to use and safe for concurrent calls.
type Implementation struct{ gonum.Implementation }

var _ blas.Float32 = Implementation{}

// kernel is one micro-kernel: fn sets blocks mr×nr blocks of C, one
// under the other from c (row stride ldc), to alpha·A·B + beta·C, with A
// the (blocks·mr)×k rows at a (row stride lda) and B the k×nr block at b
// (row stride ldb: nr for a packed panel). k ≥ 1, blocks ≥ 1; with
// beta = 0 C is not read.
type kernel struct {
	name   string
	mr, nr int
	fn     func(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, alpha, beta float32, blocks int)
}

// EnvKernel names the micro-kernel to run instead of the fastest:
// ATTN_CPU_KERNEL=8x32 (or 6x64, 6x16, 8x12: its rows × columns, "×" or
// "x"), one this CPU runs, so that two can be measured side by side. It
// stays a variable read at start-up, for measurement, not an option of
// the backend: every kernel gives the same bits (TestKernelsAgree), so
// it changes speed alone, where the bfloat16 path (cpu.WithBF16) changes
// the answers and is a backend's option.
const EnvKernel = "ATTN_CPU_KERNEL"

// active is the kernel Sgemm runs: the first of kernels (the ones this
// CPU can run, fastest first, kernel_*.go), or the one $ATTN_CPU_KERNEL
// names; nil means gonum's Sgemm. kernelErr says why the variable was
// not followed.
var active, kernelErr = choose(kernels, os.Getenv(EnvKernel))

// choose is the kernel of ks that name names (by rows × columns), the
// first of them for an empty name, and an error naming the choices when
// none matches (the first is returned with it).
func choose(ks []*kernel, name string) (*kernel, error) {
	if len(ks) == 0 {
		if name != "" {
			return nil, fmt.Errorf("%s=%q: this build and CPU run no micro-kernel", EnvKernel, name)
		}
		return nil, nil
	}
	want := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "×", "x")
	if want == "" {
		return ks[0], nil
	}
	var shapes []string
	for _, k := range ks {
		shape := fmt.Sprintf("%dx%d", k.mr, k.nr)
		if shape == want {
			return k, nil
		}
		shapes = append(shapes, shape)
	}
	return ks[0], fmt.Errorf("%s=%q: this CPU runs the micro-kernels %s", EnvKernel, name, strings.Join(shapes, ", "))
}

// KernelErr says why $ATTN_CPU_KERNEL or $ATTN_CPU_BF16 was not
// followed: nil when each is unset or names a choice this CPU has (and,
// for amx, the kernel grants).
func KernelErr() error {
	bf16Choice()
	return errors.Join(kernelErr, bf16Err)
}

// Kernel names the micro-kernel Sgemm runs, such as "AVX-512 6×64", or
// says that it is gonum's pure Go.
func Kernel() string {
	if active == nil {
		return "none (gonum's pure-Go Sgemm)"
	}
	return active.name
}

// KernelRows is the rows of C the micro-kernel computes at once (its
// MR: 8 for the AVX-512 8×32 and NEON kernels, 6 for the AVX-512 6×64
// and AVX2's), 0 without one.
func KernelRows() int {
	if active == nil {
		return 0
	}
	return active.mr
}

// Accelerated says whether Sgemm runs a micro-kernel rather than gonum's
// pure Go. The driver blocks for the cache itself, so callers need not.
func Accelerated() bool { return active != nil }

// Block sizes. A k-block of a packed B panel (blockK·NR floats, 32 KiB
// for NR = 32, 64 KiB for NR = 64) stays in L1 or L2 while the kernel
// sweeps it over the rows of A; one blockK for every kernel keeps their
// sums the same (for 6×64, 128 runs level with 256 within the noise);
// blockN bounds the packed B (blockK·blockN floats, 512 KiB) to what an
// L2 holds.
const (
	blockK = 256
	blockN = 512
)

// Sgemm computes C = alpha·op(A)·op(B) + beta·C, with op(A) m×k, op(B)
// k×n and C m×n, all row-major. Arguments gonum's Sgemm would refuse
// panic before anything is read or written.
func (impl Implementation) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if active == nil {
		impl.Implementation.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	run(active, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Band restricts a product C = alpha·A·op(B) + beta·C to a band, row by
// row: row i needs only [Lo[i], Hi[i]) — of C's columns (Cols), or of
// the inner dimension, A being zero outside it (Inner). Lo and Hi are
// non-decreasing in i, as a causal or sliding-window mask's key ranges
// are, so the rows of one kernel block need the span from its first
// row's Lo to its last row's Hi.
type Band struct {
	Lo, Hi []int
	Inner  bool
}

// Any says whether some row of the band needs something.
func (band Band) Any() bool {
	for i, lo := range band.Lo {
		if lo < band.Hi[i] {
			return true
		}
	}
	return false
}

// SgemmBand is Sgemm (A not transposed) with the kernel blocks that band
// leaves out skipped: under Cols, C's blocks that no row needs are left
// as they were, and the others are computed whole (entries outside a
// row's range get values that mean nothing); under Inner, each block's
// inner loop covers only its rows' span, which needs beta = 1. Without a
// micro-kernel it is Sgemm over everything, which the band allows.
// Lo and Hi must hold m values each.
func (impl Implementation) SgemmBand(tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, band Band) {
	checkBand(m, beta, band)
	if active == nil {
		impl.Implementation.Sgemm(blas.NoTrans, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	runBand(active, blas.NoTrans, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, &band, nil)
}

// run is Sgemm on kernel kn.
func run(kn *kernel, tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	runBand(kn, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil, nil)
}

// runBand is SgemmBand on kernel kn; a nil band is the whole product.
// With pb, op(B) is pb's blocks, packed beforehand, and b is not read.
func runBand(kn *kernel, tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, band *Band, pb *PackedB) {
	if pb == nil {
		check(tA, tB, m, n, k, a, lda, b, ldb, c, ldc)
	}
	if m == 0 || n == 0 {
		return
	}
	if alpha == 0 || k == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	for p0, bi := 0, 0; p0 < k; p0 += blockK {
		kb := min(blockK, k-p0)
		ap, la := a[min(p0, len(a)):], lda // A in place: rows i at ap[i·lda:]
		if tA != blas.NoTrans {
			ap, la = s.packAT(a, lda, m, p0, kb), kb
		}
		for j0 := 0; j0 < n; j0 += blockN {
			nb := min(blockN, n-j0)
			var bp bBlock
			if pb != nil {
				bp = pb.blocks[bi]
				bi++
			} else {
				bp = s.packB(kn.nr, tB, b, ldb, p0, j0, kb, nb)
			}
			s.block(kn, m, nb, kb, alpha, ap, la, bp, beta, c[j0:], ldc, band, j0, p0)
		}
		beta = 1 // the next k block adds to this one's
	}
}

// PackedB is op(B) of a product packed once for several products that
// share it: the fused attention loop's key tile, multiplied by each of
// its query sub-tiles. Its memory is kept from one Pack to the next; the
// zero value is ready to Pack into. It holds what of B the kernel reads
// in place (a B that is not transposed) by reference, so B must not
// change while it is used.
type PackedB struct {
	n, k   int
	buf    []float32
	blocks []bBlock // by k block, then n block, as runBand visits them
}

// Pack packs op(B), k×n (B n×k when tB is Trans, else k×n, row stride
// ldb), for SgemmBandPacked. Without a micro-kernel it only notes B.
func (pb *PackedB) Pack(tB blas.Transpose, n, k int, b []float32, ldb int) {
	pb.n, pb.k = n, k
	pb.blocks = pb.blocks[:0]
	if active == nil {
		pb.blocks = append(pb.blocks, bBlock{b: b, ldb: ldb, tB: tB})
		return
	}
	if n < 0 || k < 0 {
		panic(fmt.Sprintf("sgemm: negative size n=%d k=%d", n, k))
	}
	if tB == blas.NoTrans {
		checkMat("b", k, n, ldb, len(b))
	} else {
		checkMat("b", n, k, ldb, len(b))
	}
	nr, size := active.nr, 0
	for p0 := 0; p0 < k; p0 += blockK {
		for j0 := 0; j0 < n; j0 += blockN {
			size += packedSize(nr, tB, min(blockK, k-p0), min(blockN, n-j0))
		}
	}
	pb.buf = grow(pb.buf, size)
	at := 0
	for p0 := 0; p0 < k; p0 += blockK {
		for j0 := 0; j0 < n; j0 += blockN {
			kb, nb := min(blockK, k-p0), min(blockN, n-j0)
			sz := packedSize(nr, tB, kb, nb)
			pb.blocks = append(pb.blocks, packBInto(pb.buf[at:at+sz:at+sz], nr, tB, b, ldb, p0, j0, kb, nb))
			at += sz
		}
	}
}

// Prefix is the first n columns of op(B) that pb holds, for products
// n wide, where pb packed a transposed B (Pack with blas.Trans): each of
// its panels is what packing those n columns alone would give, but the
// last one's columns past n, which hold B's values rather than zeros and
// which the kernel's edge blocks compute and drop. So a product over the
// prefix gives the bits it would over B's n rows packed afresh: the
// backward packs a key tile once and multiplies it, or its first keys,
// for every query tile. n must be at most pb's columns.
func (pb *PackedB) Prefix(n int) PackedB {
	if n < 0 || n > pb.n {
		panic(fmt.Sprintf("sgemm: prefix of %d columns of a packed B of %d", n, pb.n))
	}
	if active != nil && len(pb.blocks) > 0 && pb.blocks[0].b != nil {
		panic("sgemm: a prefix of a B not packed transposed")
	}
	out := PackedB{n: n, k: pb.k, buf: pb.buf, blocks: pb.blocks}
	if active == nil || n == pb.n {
		return out // gonum's Sgemm reads B's first n rows
	}
	// pb's blocks run k block by k block, each over its n blocks; the
	// prefix keeps each k block's first ⌈n/blockN⌉.
	per := (pb.n + blockN - 1) / blockN
	keep := (n + blockN - 1) / blockN
	if keep < per {
		out.blocks = nil
		for at := 0; at < len(pb.blocks); at += per {
			out.blocks = append(out.blocks, pb.blocks[at:at+keep]...)
		}
	}
	return out
}

// SgemmBandPacked is SgemmBand with op(B) packed beforehand (Pack, with
// the same n and k): C = alpha·A·op(B) + beta·C over band (nil for the
// whole product).
func (impl Implementation) SgemmBandPacked(m, n, k int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int, band *Band) {
	if pb.n != n || pb.k != k {
		panic(fmt.Sprintf("sgemm: packed B is %d×%d, the product needs %d×%d", pb.k, pb.n, k, n))
	}
	if m < 0 {
		panic(fmt.Sprintf("sgemm: negative size m=%d", m))
	}
	checkMat("a", m, k, lda, len(a))
	checkMat("c", m, n, ldc, len(c))
	if band != nil {
		checkBand(m, beta, *band)
	}
	if active == nil {
		bb := pb.blocks[0]
		impl.Implementation.Sgemm(blas.NoTrans, bb.tB, m, n, k, alpha, a, lda, bb.b, bb.ldb, beta, c, ldc)
		return
	}
	runBand(active, blas.NoTrans, blas.NoTrans, m, n, k, alpha, a, lda, nil, 0, beta, c, ldc, band, pb)
}

// scratch is one call's packing space, pooled so that steady-state calls
// allocate nothing.
type scratch struct {
	a, b  []float32 // packed Aᵀ block, packed B panels (bBlock)
	aEdge []float32 // the last rows of A when fewer than MR remain
	cEdge []float32 // an edge block of C
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// grow returns buf resized to n, reallocated only when it is too small.
func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}

// packAT packs rows p0 … p0+kb−1 of the stored k×m matrix A (op(A) = Aᵀ)
// as the m×kb row-major block of op(A).
//
// The AVX transposer packs its 8×8 blocks where it can (packAT8); the
// rest goes by 8×8 tiles in Go, so that the eight rows of the block a
// tile writes stay in cache while its eight source rows are read.
func (s *scratch) packAT(a []float32, lda, m, p0, kb int) []float32 {
	s.a = grow(s.a, m*kb)
	dst := s.a
	rows, cols := packAT8(a, lda, m, p0, kb, dst)
	const t = 8
	for p := 0; p < kb; p += t {
		pe := min(p+t, kb)
		i0 := 0
		if p < rows {
			i0 = cols // the AVX blocks did these rows' first cols columns
		}
		for i := i0; i < m; i += t {
			ie := min(i+t, m)
			for pp := p; pp < pe; pp++ {
				for ii, v := range a[(p0+pp)*lda+i : (p0+pp)*lda+ie] {
					dst[(i+ii)*kb+pp] = v
				}
			}
		}
	}
	return dst
}

// bBlock is op(B)'s kb×nb block at row p0, column j0 as the kernel reads
// it: panels of nr columns. A transposed B is packed, every panel kb rows
// of nr floats, the last padded with zeros. A B that is not transposed is
// read in place (row stride ldb), but for a last panel narrower than nr,
// which is packed.
type bBlock struct {
	packed []float32
	b      []float32 // B from row p0, column j0, when read in place
	ldb    int
	tB     blas.Transpose // PackedB's B without a micro-kernel: how it is stored
}

// panel is the panel at column j of the block, w columns wide, and its
// row stride.
func (bb bBlock) panel(j, kb, nr, w int) ([]float32, int) {
	if bb.b != nil && w == nr {
		return bb.b[j:], bb.ldb
	}
	if bb.b != nil {
		return bb.packed, nr
	}
	return bb.packed[(j/nr)*kb*nr:], nr
}

// packB packs what of op(B)'s kb×nb block at row p0, column j0 the kernel
// does not read in place (see bBlock), into s's space.
func (s *scratch) packB(nr int, tB blas.Transpose, b []float32, ldb, p0, j0, kb, nb int) bBlock {
	s.b = grow(s.b, packedSize(nr, tB, kb, nb))
	return packBInto(s.b, nr, tB, b, ldb, p0, j0, kb, nb)
}

// packedSize is the floats packBInto writes for a kb×nb block: every
// panel of a transposed B, only a narrow last panel of one that is not.
func packedSize(nr int, tB blas.Transpose, kb, nb int) int {
	if tB == blas.NoTrans {
		if nb%nr > 0 {
			return kb * nr
		}
		return 0
	}
	return (nb + nr - 1) / nr * kb * nr
}

// packBInto is packB into buf, packedSize floats long.
func packBInto(buf []float32, nr int, tB blas.Transpose, b []float32, ldb, p0, j0, kb, nb int) bBlock {
	if tB == blas.NoTrans {
		bb := bBlock{b: b[p0*ldb+j0:], ldb: ldb}
		if w := nb % nr; w > 0 {
			j := j0 + nb - w
			for p := range kb {
				row := buf[p*nr:][:nr]
				copy(row, b[(p0+p)*ldb+j:][:w])
				clear(row[w:])
			}
			bb.packed = buf
		}
		return bb
	}
	// op(B) = Bᵀ: column j of op(B) is row j of the stored B. Sixteen
	// rows by sixteen (or eight) columns at a time in assembly where it can (packT),
	// then what is left eight rows at a time, so that each step writes
	// eight floats in a row.
	panels := (nb + nr - 1) / nr
	for jp := range panels {
		dst := buf[jp*kb*nr:][:kb*nr]
		j := j0 + jp*nr
		w := min(nr, j0+nb-j)
		if w < nr {
			clear(dst)
		}
		p1 := packT(b, ldb, p0, j, w, kb, dst, nr)
		jj := 0
		for ; jj+8 <= w; jj += 8 {
			src := b[(j+jj)*ldb+p0:]
			s0, s1, s2, s3 := src[:kb], src[ldb:][:kb], src[2*ldb:][:kb], src[3*ldb:][:kb]
			s4, s5, s6, s7 := src[4*ldb:][:kb], src[5*ldb:][:kb], src[6*ldb:][:kb], src[7*ldb:][:kb]
			for p := p1; p < kb; p++ {
				d := (*[8]float32)(dst[p*nr+jj:])
				d[0], d[1], d[2], d[3] = s0[p], s1[p], s2[p], s3[p]
				d[4], d[5], d[6], d[7] = s4[p], s5[p], s6[p], s7[p]
			}
		}
		for ; jj < w; jj++ {
			row := b[(j+jj)*ldb+p0:][:kb]
			for p := p1; p < kb; p++ {
				dst[p*nr+jj] = row[p]
			}
		}
	}
	return bBlock{packed: buf}
}

// blockRange is what band (nil for none) leaves of the kernel block of
// rows i … i+h−1 and columns c0 … c0+w−1 over a k block of kb inner
// indices from p0: under Cols, skip when no row of the block needs those
// columns; under Inner, the inner range [ka, kz) of the k block its rows'
// weights cover (A is zero outside, and beta = 1 leaves C as it is where
// the range is empty). Otherwise the whole k block, [0, kb).
func (band *Band) blockRange(i, h, c0, w, p0, kb int) (ka, kz int, skip bool) {
	if band == nil {
		return 0, kb, false
	}
	lo, hi := band.Lo[i], band.Hi[i+h-1]
	if !band.Inner {
		return 0, kb, hi <= c0 || lo >= c0+w || lo >= hi
	}
	return min(max(lo-p0, 0), kb), min(max(hi-p0, 0), kb), false
}

// block sets the m×nb block of C at c to alpha·A·B + beta·C, for A the
// m×kb block at a (row stride lda) and B the block bb, which starts at
// column j0 and inner index p0 of the whole product: band (nil for none)
// is in the whole product's coordinates. Down each panel of B, a run of
// whole row blocks with the same inner range is one call of the kernel.
func (s *scratch) block(kn *kernel, m, nb, kb int, alpha float32, a []float32, lda int, bb bBlock, beta float32, c []float32, ldc int, band *Band, j0, p0 int) {
	mr, nr := kn.mr, kn.nr
	for j := 0; j < nb; j += nr {
		w := min(nr, nb-j)
		panel, ldp := bb.panel(j, kb, nr, w)
		for i := 0; i < m; {
			h := min(mr, m-i)
			// The inner indices this block runs, [ka, kz) of the k block.
			ka, kz, skip := band.blockRange(i, h, j0+j, w, p0, kb)
			if skip || ka >= kz {
				i += mr
				continue
			}
			ai, la, pi, kk := a[i*lda+ka:], lda, panel[ka*ldp:], kz-ka
			if h == mr && w == nr {
				n := 1
				for ; i+(n+1)*mr <= m; n++ {
					za, zz, zskip := band.blockRange(i+n*mr, mr, j0+j, w, p0, kb)
					if zskip || za != ka || zz != kz {
						break
					}
				}
				kn.fn(kk, &ai[0], la, &pi[0], ldp, &c[i*ldc+j], ldc, alpha, beta, n)
				i += n * mr
				continue
			}
			// An edge block: the kernel writes a whole mr×nr block,
			// so it works on a copy, and reads mr rows of A, so short
			// ones are padded with zero rows.
			if h < mr {
				s.aEdge = grow(s.aEdge, mr*kk)
				for r := range h {
					copy(s.aEdge[r*kk:][:kk], ai[r*lda:][:kk])
				}
				clear(s.aEdge[h*kk:])
				ai, la = s.aEdge, kk
			}
			s.cEdge = grow(s.cEdge, mr*nr)
			kn.fn(kk, &ai[0], la, &pi[0], ldp, &s.cEdge[0], nr, alpha, 0, 1)
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
			i += mr
		}
	}
}

// scaleC scales the m×n matrix C by beta; beta = 0 clears it.
func scaleC(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc:][:n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// check panics on arguments gonum's Sgemm would refuse, before anything
// is read or written.
func check(tA, tB blas.Transpose, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	checkShape(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
}

// checkShape is check on the lengths of A, B and C, whatever their type.
func checkShape(tA, tB blas.Transpose, m, n, k int, la, lda, lb, ldb, lc, ldc int) {
	trans := func(t blas.Transpose) bool {
		switch t {
		case blas.NoTrans:
			return false
		case blas.Trans, blas.ConjTrans:
			return true
		}
		panic(fmt.Sprintf("sgemm: bad transpose %v", t))
	}
	ta, tb := trans(tA), trans(tB)
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("sgemm: negative size m=%d n=%d k=%d", m, n, k))
	}
	// Stored shapes: A is m×k (k×m transposed), B k×n (n×k).
	ar, ac := m, k
	if ta {
		ar, ac = k, m
	}
	br, bc := k, n
	if tb {
		br, bc = n, k
	}
	checkMat("a", ar, ac, lda, la)
	checkMat("b", br, bc, ldb, lb)
	checkMat("c", m, n, ldc, lc)
}

// checkMat panics unless a slice of length n holds a rows×cols matrix at
// row stride ld.
func checkMat(name string, rows, cols, ld, n int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("sgemm: bad ld%s %d for %d columns", name, ld, cols))
	}
	if rows > 0 && cols > 0 && n < (rows-1)*ld+cols {
		panic(fmt.Sprintf("sgemm: %s is %d long, short of a %d×%d matrix with stride %d", name, n, rows, cols, ld))
	}
}
