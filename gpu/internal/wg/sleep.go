//go:build (cgo || gogpu) && !nogpu

package wg

import (
	"runtime"
	"time"
)

// Backoff of a wait between polls: first a spin (a small copy finishes
// in microseconds; the gpu package picks its length per adapter), then
// sleeps growing to a cap, so that a long kernel costs little latency
// and no CPU.
//
// The sleeps are the kernel's nanosleep (pollSleep: the C library's in a
// cgo build, the system call's in a pure-Go one), not time.Sleep:
// Go's timers can wake a short sleep up to a millisecond late, which
// every op whose kernels outlast the spin (all of them on lavapipe) would
// pay, where nanosleep wakes within the kernel's timer slack. The commit
// that made the sleeps nanosleep has the measurements.
const (
	pollMinSleep = 20 * time.Microsecond
	pollMaxSleep = 200 * time.Microsecond
)

// backoff calls poll until done says so: spinning for spin, then
// sleeping between polls.
func backoff(spin time.Duration, poll func(), done func() bool) {
	sleep := pollMinSleep
	spinUntil := time.Now().Add(spin)
	for !done() {
		poll()
		if done() {
			break
		}
		if time.Now().Before(spinUntil) {
			runtime.Gosched()
			continue
		}
		pollSleep(sleep)
		sleep = min(2*sleep, pollMaxSleep)
	}
}
