//go:build !amd64 || purego

package sgemm

// hasAVX512 is false: there are no AVX-512 packers here.
const hasAVX512 = false

// packT packs nothing off amd64 and under -tags purego: the caller's Go
// loop packs every column.
func packT(b []float32, ldb, p0, j, w, kb int, dst []float32, nr int) int { return 0 }
