package backend

import "time"

// DeviceTimer is implemented by a backend that can measure how long its
// ops run on the device itself, apart from the host's share of their
// wall time (encoding, submission, waiting): the gpu backend, from
// timestamps the device writes before and after the passes of each
// submission, on an adapter with timestamp queries. The CPU backend has
// no device apart from the host and does not implement it.
//
// The device time of an op is, for each submission it makes, the time
// from a timestamp written before its first pass to one written after
// its last, summed over its submissions; the host's gaps between them
// are not counted.
type DeviceTimer interface {
	// TimeDevice turns the timing of the ops that follow on or off.
	// Turning it on fails, with an error wrapping ErrUnsupported that
	// says why, when the device cannot time its work (an adapter without
	// timestamp queries); the backend then runs its ops as before.
	TimeDevice(on bool) error
	// DeviceTime waits for the work submitted so far and returns the
	// device time of the ops run since timing was turned on or since the
	// previous DeviceTime, whichever was later, and starts the count
	// afresh. It returns an error, and no number, when timing is off or
	// when the timestamps cannot give a right one (too many submissions
	// since the last call, or a span longer than the host waited).
	DeviceTime() (time.Duration, error)
}

// KernelTimer is implemented by a DeviceTimer that can also time an op's
// kernels apart: the gpu backend, from timestamps the device writes
// inside a compute pass around each kernel it runs, on an adapter with
// timestamps inside passes (wgpu-native 29's; not the go-webgpu build's).
type KernelTimer interface {
	// KernelTimes returns the device time of each kernel, by the
	// kernel's name, summed over the ops whose device time the last
	// DeviceTime returned; their sum is at most that device time. It is
	// nil where the kernels were not timed apart (a device without
	// timestamps inside passes, or more kernel launches since the
	// previous DeviceTime than the backend's timestamps hold).
	KernelTimes() map[string]time.Duration
}
