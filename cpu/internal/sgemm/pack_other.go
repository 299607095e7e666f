//go:build !amd64 || purego

package sgemm

// hasAVX512 is false: there are no AVX-512 packers here.
const hasAVX512 = false

// hasAVX is false: there is no AVX transposer here.
const hasAVX = false

// packT packs nothing off amd64 and under -tags purego: the caller's Go
// loop packs every column.
func packT(b []float32, ldb, p0, j, w, kb int, dst []float32, nr int) int { return 0 }

// packAT8 packs nothing off amd64 and under -tags purego: packAT's Go
// loop packs every block.
func packAT8(a []float32, lda, m, p0, kb int, dst []float32) (rows, cols int) { return 0, 0 }
