//go:build linux

package cpu

import (
	"syscall"
	"unsafe"
)

// hugePageBytes is the smallest buffer hugePages asks huge pages for.
const hugePageBytes = 4 << 20

// hugePages asks the kernel to back the 2 MiB-aligned pages inside the
// n bytes at p with transparent huge pages (madvise MADV_HUGEPAGE, where
// the system's transparent_hugepage setting is madvise or always).
func hugePages(p unsafe.Pointer, n int) {
	if n < hugePageBytes {
		return
	}
	const huge = 2 << 20
	lo := (uintptr(p) + huge - 1) &^ (huge - 1)
	hi := (uintptr(p) + uintptr(n)) &^ (huge - 1)
	if hi <= lo {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, 14 /* MADV_HUGEPAGE */)
}
