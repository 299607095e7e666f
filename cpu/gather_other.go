//go:build !amd64 || purego

package cpu

import "unsafe"

// gatherRowsVec gathers nothing here: kvRaw copies row by row.
func gatherRowsVec(dst, src unsafe.Pointer, offs []int, rowBytes int) bool { return false }
