//go:build amd64 && !purego

package sgemm

import "golang.org/x/sys/cpu"

// hasAVX512 says whether the AVX-512 packers (packT16AVX512,
// bf16PackNNAVX512, bf16PackTAVX512 in kernel_amd64.s) can run. Every
// caller of them checks it: a test's model of a kernel can reach a
// packer on a CPU without AVX-512.
var hasAVX512 = cpu.X86.HasAVX512F

// hasAVX says whether packT8AVX2 can run (AVX, in every AVX2 CPU).
var hasAVX = cpu.X86.HasAVX

// packT packs columns [0, 16·⌊kb/16⌋) of a transposed op(B)'s panel with
// the AVX-512 transposer, or [0, 8·⌊kb/8⌋) with the AVX one:
// dst[p·nr + jj] = B[j+jj][p0+p] for jj < w, w a multiple of 16 (of 8).
// It returns how many columns it packed: 0 where it cannot (no AVX, w
// not a multiple of 8, kb < 8, or asmPack off), and the caller packs the
// rest.
func packT(b []float32, ldb, p0, j, w, kb int, dst []float32, nr int) int {
	if !asmPack {
		return 0
	}
	if kq := kb / 16; hasAVX512 && kq > 0 && w%16 == 0 {
		for g := 0; g < w; g += 16 {
			_ = b[(j+g+15)*ldb+p0+16*kq-1] // the block's last row's last column
			_ = dst[(16*kq-1)*nr+g+15]
			packT16AVX512(kq, &b[(j+g)*ldb+p0], ldb, &dst[g], nr)
		}
		return 16 * kq
	}
	kq := kb / 8
	if !hasAVX || kq == 0 || w%8 != 0 {
		return 0
	}
	for g := 0; g < w; g += 8 {
		_ = b[(j+g+7)*ldb+p0+8*kq-1]
		_ = dst[(8*kq-1)*nr+g+7]
		packT8AVX2(kq, &b[(j+g)*ldb+p0], ldb, &dst[g], nr)
	}
	return 8 * kq
}

// packAT8 packs the 8×8 blocks of packAT's transpose with the AVX
// transposer: dst[i·kb + p] = a[(p0+p)·lda + i] for p < 8·⌊kb/8⌋ and
// i < 8·⌊m/8⌋. It returns the rows p and columns i it packed, 0 and 0
// where it cannot (no AVX, or asmPack off); the caller packs the rest.
func packAT8(a []float32, lda, m, p0, kb int, dst []float32) (rows, cols int) {
	mq, kq := m/8, kb/8
	if !hasAVX || !asmPack || mq == 0 || kq == 0 {
		return 0, 0
	}
	for p := 0; p < 8*kq; p += 8 {
		_ = a[(p0+p+7)*lda+8*mq-1] // the block's last row's last column
		_ = dst[(8*mq-1)*kb+p+7]
		packT8AVX2(mq, &a[(p0+p)*lda], lda, &dst[p], kb)
	}
	return 8 * kq, 8 * mq
}
