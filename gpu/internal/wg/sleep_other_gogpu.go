//go:build gogpu && !nogpu && !linux

package wg

import "time"

// pollSleep sleeps for d with Go's timers, which may wake it up to a
// millisecond late: outside Linux a pure-Go build has no system call to
// sleep the thread with that this package has measured.
func pollSleep(d time.Duration) { time.Sleep(d) }
