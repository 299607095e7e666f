//go:build cgo && !nogpu && !gogpu

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

import "time"

// pollSleep sleeps for d on the calling thread, with the C library's
// nanosleep: the thread blocks in the kernel and wakes within the
// kernel's timer slack (tens of microseconds), where Go's timers would
// wake it up to a millisecond late.
func pollSleep(d time.Duration) { C.attn_nanosleep(C.long(d)) }
