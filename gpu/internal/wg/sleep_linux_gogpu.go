//go:build gogpu && !nogpu && linux

package wg

import (
	"syscall"
	"time"
)

// pollSleep sleeps for d on the calling thread with the nanosleep system
// call, which a pure-Go build makes without the C library: as with C's
// nanosleep, the thread blocks in the kernel and wakes within its timer
// slack, where Go's timers would wake it up to a millisecond late.
func pollSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil) // an interrupted sleep only polls sooner
}
