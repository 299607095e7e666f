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
// Go's timers wake a sleeping process a millisecond at a time, so
// time.Sleep(20 µs) took 1.13 ms (median of 200) on a 2-core Xeon VM,
// where nanosleep took 0.10 ms; every op on lavapipe, whose kernels
// outlast the spin, paid that. With Go's sleeps, a decoding step of 8
// heads over 256 keys took 1.5–2.2 ms of wall time for 0.5–1.1 ms of
// device time there.
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
