//go:build unix

package cpu_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used, user and system, or
// 0 where getrusage fails.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
