//go:build amd64 && !purego

package cpu

import "unsafe"

// gatherRowsAVX2 copies rows at byte offsets offs from src into dst,
// rowBytes each, prefetching ahead (gather_amd64.s).
//
//go:noescape
func gatherRowsAVX2(dst, src unsafe.Pointer, offs []int, rowBytes int)

// gatherRowsVec copies len(offs) rows of rowBytes bytes from src+offs[j]
// to dst+j·rowBytes with the prefetching gather where the CPU has AVX2
// and rowBytes is a multiple of 32, and reports whether it did. The
// caller has checked every row against its source's length and dst's.
func gatherRowsVec(dst, src unsafe.Pointer, offs []int, rowBytes int) bool {
	if !hasAVX2 || rowBytes < 32 || rowBytes%32 != 0 || len(offs) == 0 {
		return false
	}
	gatherRowsAVX2(dst, src, offs, rowBytes)
	return true
}
