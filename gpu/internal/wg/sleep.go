//go:build cgo && !nogpu

package wg

/*
#ifdef _WIN32
#include <windows.h>

// attn_nanosleep sleeps ns nanoseconds, rounded up to Windows' whole
// milliseconds, on the calling thread (see pollSleep): MinGW's C
// library has nanosleep only in winpthread, which the cross-build does
// not link, and winpthread's own sleeps in milliseconds too.
static void attn_nanosleep(long ns) {
	Sleep((DWORD)((ns + 999999L) / 1000000L));
}
#else
#include <time.h>

// attn_nanosleep sleeps ns nanoseconds on the calling thread (see
// pollSleep).
static void attn_nanosleep(long ns) {
	struct timespec t = {ns / 1000000000L, ns % 1000000000L};
	nanosleep(&t, NULL);
}
#endif
*/
import "C"

import (
	"runtime"
	"time"
)

// Backoff of a wait between polls: first a spin (a small copy finishes
// in microseconds; the gpu package picks its length per adapter), then
// sleeps growing to a cap, so that a long kernel costs little latency
// and no CPU.
//
// The sleeps are the C library's nanosleep (pollSleep), not time.Sleep:
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

// pollSleep sleeps for d on the calling thread, with the C library's
// nanosleep: the thread blocks in the kernel and wakes within the
// kernel's timer slack (tens of microseconds), where Go's timers would
// wake it up to a millisecond late.
func pollSleep(d time.Duration) { C.attn_nanosleep(C.long(d)) }

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
