package sgemm

// AMX (Intel's Advanced Matrix Extensions, Sapphire Rapids and later)
// multiplies bfloat16 on tiles: TDPBF16PS adds a 16×32 tile of A's
// bfloat16s times a 32×16 one of B's, held as 16 rows of 16 pairs, into
// a 16×16 tile of float32s, 16 times the float32 FMA rate of a core. B's
// tile layout is the packed panels' (packB): a row of a panel of 32
// columns holds each column's pair (op(B)[p][j], op(B)[p+1][j]), so its
// 128 bytes are two tiles' rows side by side. A's rows of pairs are
// read in place, as the VDPBF16PS kernel reads them.
//
// The products are exact and each added to its float32 sum with a
// rounding, as VDPBF16PS's are, in an order of the tile unit's own, so
// BF16Gemm's bound holds; TDPBF16PS reads bfloat16 subnormals as zero
// and flushes subnormal sums to zero, as VDPBF16PS does.
//
// Go's assembler knows nothing of the tiles, so they must never outlive
// one assembly call: amxBF16 configures them, runs a whole list of
// blocks and releases them. A configuration and release take time of
// their own, which a list of blocks pays once.

// amxJob is one 32×32 block of C for amxBF16: a points at A's first row
// of the block at its first pair (row stride lda bytes), b at the
// panel's row of that pair, kp pairs (a multiple of 16), c at C's block
// (row stride ldc bytes). amx_amd64.s reads its fields by offset.
type amxJob struct {
	a   *uint16
	lda int
	b   *uint32
	kp  int
	c   *float32
	ldc int
}

// amxRows is the rows of C an AMX block covers (two tiles of 16), and
// amxPairs the pairs of k of one TDPBF16PS.
const (
	amxRows  = 32
	amxPairs = 16
)

// tileFunc runs jobs on tiles with alpha and beta: mode 1 (alpha = beta
// = 1) adds each block's product to C; otherwise C = alpha·A·B (mode 0,
// beta = 0, C not read) or alpha·A·B + beta·C (mode 2), by way of t, a
// 32×32 float32 scratch. amxTiles is the hardware's (amx_amd64.go);
// tests run the driver on a model of it.
type tileFunc func(jobs []amxJob, mode int, alpha, beta float32, t []float32)

// bf16Tail is the inner tail of an AMX block: pairs [pa, pz) of the
// block at row i, column j, on the kernel after the tiles (after) or
// alone.
type bf16Tail struct {
	i, j, pa, pz int
	after        bool
}

// tileBlock is block (the m×nb block of C at c, for A's m×2kp block at
// a and the packed panels bp, from column j0 and inner index p0 of the
// whole product) with the whole 32×32 blocks of C on tiles and their
// inner tails (the pairs past the last whole 16), the rows below the last
// whole 32 and the columns past the last whole panel on the VDPBF16PS
// kernel kn, whose NR (32) is the panels' width and whose MR divides 32.
func (s *bf16Scratch) tileBlock(tiles tileFunc, kn *bf16Kernel, m, nb, kp int, alpha float32, a []uint16, lda int, bp []uint32, beta float32, c []float32, ldc int, band *Band, j0, p0 int) {
	nr := kn.nr
	m32, n32 := m-m%amxRows, nb-nb%nr
	s.jobs, s.tails = s.jobs[:0], s.tails[:0]
	for j := 0; j < n32; j += nr {
		panel := bp[(j/nr)*kp*nr:]
		for i := 0; i < m32; i += amxRows {
			ka, kz, skip := band.blockRange(i, amxRows, j0+j, nr, p0, 2*kp)
			pa, pz := ka/2, (kz+1)/2
			if skip || pa >= pz {
				continue
			}
			q := (pz - pa) / amxPairs * amxPairs
			if q > 0 {
				// The block's last element of A, of the panel and of C
				// lie inside their slices.
				_, _, _ = a[(i+amxRows-1)*lda+2*(pa+q)-1], panel[(pa+q)*nr-1], c[(i+amxRows-1)*ldc+j+nr-1]
				s.jobs = append(s.jobs, amxJob{a: &a[i*lda+2*pa], lda: 2 * lda, b: &panel[pa*nr], kp: q, c: &c[i*ldc+j], ldc: 4 * ldc})
			}
			if pa+q < pz {
				s.tails = append(s.tails, bf16Tail{i: i, j: j, pa: pa + q, pz: pz, after: q > 0})
			}
		}
	}
	if len(s.jobs) > 0 {
		mode := 2
		switch {
		case alpha == 1 && beta == 1:
			mode = 1
		case beta == 0:
			mode = 0
		}
		s.t = grow(s.t, amxRows*amxRows)
		tiles(s.jobs, mode, alpha, beta, s.t)
		clear(s.jobs) // so that the pooled scratch keeps no operand alive
	}
	for _, tl := range s.tails {
		panel := bp[(tl.j/nr)*kp*nr:]
		bt := beta
		if tl.after {
			bt = 1 // on top of the tiles' alpha·A·B + beta·C
		}
		for r := 0; r < amxRows; r += kn.mr {
			kn.fn(tl.pz-tl.pa, &a[(tl.i+r)*lda+2*tl.pa], lda, &panel[tl.pa*nr], &c[(tl.i+r)*ldc+tl.j], ldc, alpha, bt)
		}
	}
	if m32 < m {
		var rest *Band
		if band != nil {
			rest = &Band{Lo: band.Lo[m32:], Hi: band.Hi[m32:], Inner: band.Inner}
		}
		s.block(kn, m-m32, nb, kp, alpha, a[m32*lda:], lda, bp, beta, c[m32*ldc:], ldc, rest, j0, p0)
	}
	if n32 < nb && m32 > 0 {
		s.block(kn, m32, nb-n32, kp, alpha, a, lda, bp[(n32/nr)*kp*nr:], beta, c[n32:], ldc, band, j0+n32, p0)
	}
}
