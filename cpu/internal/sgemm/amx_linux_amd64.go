//go:build !purego

package sgemm

import (
	"fmt"
	"github.com/attn-go/attn/backend"
	"syscall"
	"unsafe"
)

// requestAMX asks Linux for the tiles' state, which a process must do
// before its first tile instruction (arch_prctl's
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, Linux 5.16 and later),
// and checks the grant. Linux refuses with ENOSPC when a signal stack
// the process installed (a C library's sigaltstack) is too small for
// the tiles' 8 KiB of state; Go's own signal stacks (32 KiB) are large
// enough.
func requestAMX() error {
	const (
		archGetXcompPerm  = 0x1022
		archReqXcompPerm  = 0x1023
		xfeatureXtiledata = 18
	)
	if _, _, e := syscall.Syscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0); e != 0 {
		return backend.Wrapf(e, "arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)")
	}
	var perm uint64
	if _, _, e := syscall.Syscall(syscall.SYS_ARCH_PRCTL, archGetXcompPerm, uintptr(unsafe.Pointer(&perm)), 0); e != 0 {
		return backend.Wrapf(e, "arch_prctl(ARCH_GET_XCOMP_PERM)")
	}
	if perm&(1<<xfeatureXtiledata) == 0 {
		return fmt.Errorf("arch_prctl granted the features %#x, without XTILEDATA", perm)
	}
	return nil
}
