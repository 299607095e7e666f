//go:build cgo && !nogpu

package gpu

// Why this file exists
//
// go-webgpu v0.17.1's (*wgpu.Buffer).MapAsync and
// (*wgpu.Queue).OnSubmittedWorkDone wrap the Go callback in a cgo.Handle
// and hand C unsafe.Pointer(&handle): the address of a Go local. The
// callback runs later, inside Device.Poll, after that local is dead; if a
// GC runs in between, the callback reads freed memory and the process dies
// with "misuse of an invalid Handle" (reliably so under GOGC=1). We cannot
// change the module, so we call the same C entry points ourselves
// (wgpuBufferMapAsync, wgpuQueueOnSubmittedWorkDone and the error scope
// pair, all in the libwgpu_native.a that go-webgpu already links) with
// userdata in C memory and static C callbacks that only store what they
// were told. Go then polls the device until the C memory says "done". No Go
// callback, no cgo.Handle, nothing for the GC to free under C's feet.

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Declarations from go-webgpu v0.17.1 lib/webgpu.h, written out because a
// cgo preamble cannot include another module's header. The enums there are
// 32-bit (each has a Force32 = 0x7FFFFFFF member); uint32_t is passed and
// returned the same way.
typedef struct WGPUBufferImpl* WGPUBuffer;
typedef struct WGPUDeviceImpl* WGPUDevice;
typedef struct WGPUQueueImpl* WGPUQueue;
typedef uint32_t WGPUFlags;
typedef WGPUFlags WGPUMapModeFlags;
typedef uint32_t WGPUBufferMapAsyncStatus;
typedef uint32_t WGPUQueueWorkDoneStatus;
typedef uint32_t WGPUErrorType;
typedef uint32_t WGPUErrorFilter;
enum { WGPUErrorFilter_Validation = 0 };

typedef void (*WGPUBufferMapCallback)(WGPUBufferMapAsyncStatus status, void * userdata);
typedef void (*WGPUErrorCallback)(WGPUErrorType type, char const * message, void * userdata);
typedef void (*WGPUQueueWorkDoneCallback)(WGPUQueueWorkDoneStatus status, void * userdata);

void wgpuBufferMapAsync(WGPUBuffer buffer, WGPUMapModeFlags mode, size_t offset, size_t size, WGPUBufferMapCallback callback, void * userdata);
void wgpuQueueOnSubmittedWorkDone(WGPUQueue queue, WGPUQueueWorkDoneCallback callback, void * userdata);
void wgpuDevicePushErrorScope(WGPUDevice device, WGPUErrorFilter filter);
void wgpuDevicePopErrorScope(WGPUDevice device, WGPUErrorCallback callback, void * userdata);
void wgpuBufferReference(WGPUBuffer buffer);
void wgpuDeviceReference(WGPUDevice device);

// attn_pending is the userdata of one request. done is written last, with
// release order, so a reader that sees it set also sees status.
typedef struct {
	uint32_t done;
	uint32_t status;
	uint32_t err_type;
	char err_msg[512];
} attn_pending;

static void attn_status_cb(uint32_t status, void *userdata) {
	attn_pending *p = userdata;
	p->status = status;
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
}

static void attn_error_cb(WGPUErrorType type, char const *message, void *userdata) {
	attn_pending *p = userdata;
	p->err_type = type;
	if (message != NULL) {
		strncpy(p->err_msg, message, sizeof p->err_msg - 1);
	}
}

static void attn_map_async(WGPUDevice dev, WGPUBuffer buf, WGPUMapModeFlags mode, size_t offset, size_t size, attn_pending *p) {
	wgpuDevicePushErrorScope(dev, WGPUErrorFilter_Validation);
	wgpuBufferMapAsync(buf, mode, offset, size, attn_status_cb, p);
	wgpuDevicePopErrorScope(dev, attn_error_cb, p);
}

static void attn_on_work_done(WGPUQueue queue, attn_pending *p) {
	wgpuQueueOnSubmittedWorkDone(queue, attn_status_cb, p);
}

// attn_nanosleep sleeps ns nanoseconds on the calling thread (see
// pollSleep).
static void attn_nanosleep(long ns) {
	struct timespec t = {ns / 1000000000L, ns % 1000000000L};
	nanosleep(&t, NULL);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rajveermalviya/go-webgpu/wgpu"
)

// Mirrors of go-webgpu v0.17.1's structs, whose C handles are unexported:
//
//	type Device struct { ref C.WGPUDevice }
//	type Buffer struct { deviceRef C.WGPUDevice; ref C.WGPUBuffer }
//	type Queue  struct { deviceRef C.WGPUDevice; ref C.WGPUQueue }
type (
	deviceMirror struct{ ref unsafe.Pointer }
	bufferMirror struct{ deviceRef, ref unsafe.Pointer }
	queueMirror  struct{ deviceRef, ref unsafe.Pointer }
)

// checkLayout reports, once, whether go-webgpu's structs still look like
// the mirrors above, so that reading them through unsafe is sound.
var checkLayout = sync.OnceValue(func() error {
	for _, c := range []struct{ real, mirror reflect.Type }{
		{reflect.TypeFor[wgpu.Device](), reflect.TypeFor[deviceMirror]()},
		{reflect.TypeFor[wgpu.Buffer](), reflect.TypeFor[bufferMirror]()},
		{reflect.TypeFor[wgpu.Queue](), reflect.TypeFor[queueMirror]()},
	} {
		if err := sameLayout(c.real, c.mirror); err != nil {
			return fmt.Errorf("gpu: go-webgpu's %v changed layout (%v); the map/wait shim needs updating", c.real, err)
		}
	}
	return nil
})

func sameLayout(real, mirror reflect.Type) error {
	if real.Size() != mirror.Size() || real.NumField() != mirror.NumField() {
		return fmt.Errorf("size %d with %d fields, want %d with %d",
			real.Size(), real.NumField(), mirror.Size(), mirror.NumField())
	}
	for i := range real.NumField() {
		r, m := real.Field(i), mirror.Field(i)
		if r.Name != m.Name || r.Offset != m.Offset || r.Type.Kind() != reflect.Pointer || r.Type.Size() != m.Type.Size() {
			return fmt.Errorf("field %d is %s %v at offset %d, want %s (a C handle) at %d",
				i, r.Name, r.Type, r.Offset, m.Name, m.Offset)
		}
	}
	return nil
}

// pending is one outstanding map or work-done request whose callback
// writes into C memory. Call wait exactly once.
type pending struct {
	c    *C.attn_pending
	what string // "map" or "work done", for errors
	// keep is the Go object whose C handle the request uses, held until
	// the callback has fired (v0.17.1 sets no finalizers, but a release
	// by a finalizer mid-request would be another use-after-free).
	keep any
}

func newPending(what string, keep any) *pending {
	// cgo's C.malloc never returns nil (it crashes on exhaustion, like Go's
	// own allocator).
	c := (*C.attn_pending)(C.malloc(C.size_t(unsafe.Sizeof(C.attn_pending{}))))
	*c = C.attn_pending{}
	return &pending{c: c, what: what, keep: keep}
}

// mapAsync starts mapping size bytes of buf from offset for mode (exactly
// one of MapMode_Read and MapMode_Write: wgpu-native aborts on anything
// else). A validation error raised by the call itself is returned here,
// with a nil *pending (mapAsync has then already waited for the callback,
// so it may poll dev); one found later comes back from wait as the status.
// Mapping a destroyed buffer aborts the process inside the next Poll, and
// nothing here can detect it: never do that.
func mapAsync(dev *wgpu.Device, buf *wgpu.Buffer, mode wgpu.MapMode, offset, size uint64) (*pending, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	if mode != wgpu.MapMode_Read && mode != wgpu.MapMode_Write {
		return nil, fmt.Errorf("gpu: map mode %#x: want MapMode_Read or MapMode_Write", uint32(mode))
	}
	if offset != uint64(C.size_t(offset)) || size != uint64(C.size_t(size)) {
		return nil, fmt.Errorf("gpu: map range %d+%d does not fit in size_t", offset, size)
	}
	d := (*deviceMirror)(unsafe.Pointer(dev))
	b := (*bufferMirror)(unsafe.Pointer(buf))
	if b.deviceRef != d.ref {
		return nil, errors.New("gpu: mapAsync: buffer belongs to another device")
	}
	p := newPending("map", buf)
	C.attn_map_async(C.WGPUDevice(d.ref), C.WGPUBuffer(b.ref), C.WGPUMapModeFlags(mode),
		C.size_t(offset), C.size_t(size), p.c)
	runtime.KeepAlive(dev)
	runtime.KeepAlive(buf)
	if p.c.err_type != 0 {
		err := fmt.Errorf("gpu: mapAsync: %s", errorText(uint32(p.c.err_type), C.GoString(&p.c.err_msg[0])))
		// wgpu-core has normally called back with a failed status already;
		// wait anyway, so that p's memory is freed only after it has.
		_ = p.wait(dev) // its failed status says less than err
		return nil, err
	}
	return p, nil
}

// onWorkDone asks for a callback once all work submitted to queue so far
// has finished.
func onWorkDone(queue *wgpu.Queue) (*pending, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	q := (*queueMirror)(unsafe.Pointer(queue))
	p := newPending("work done", queue)
	C.attn_on_work_done(C.WGPUQueue(q.ref), p.c)
	runtime.KeepAlive(queue)
	return p, nil
}

// sameDevice reports whether buf was created on dev.
func sameDevice(dev *wgpu.Device, buf *wgpu.Buffer) (bool, error) {
	if err := checkLayout(); err != nil {
		return false, err
	}
	return (*bufferMirror)(unsafe.Pointer(buf)).deviceRef == (*deviceMirror)(unsafe.Pointer(dev)).ref, nil
}

// sameBuffer reports whether x and y are handles to one wgpu buffer
// (Import makes a handle of its own).
func sameBuffer(x, y *wgpu.Buffer) bool {
	return x == y || (*bufferMirror)(unsafe.Pointer(x)).ref == (*bufferMirror)(unsafe.Pointer(y)).ref
}

// referenceBuffer returns a new handle to buf that holds references of
// its own to the buffer and its device, as a handle that CreateBuffer
// returns does: its Release (go-webgpu releases both) leaves buf's handle
// working, and buf's Release leaves the buffer alive for this one.
func referenceBuffer(buf *wgpu.Buffer) (*wgpu.Buffer, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	m := (*bufferMirror)(unsafe.Pointer(buf))
	C.wgpuBufferReference(C.WGPUBuffer(m.ref))
	C.wgpuDeviceReference(C.WGPUDevice(m.deviceRef))
	h := new(wgpu.Buffer)
	*(*bufferMirror)(unsafe.Pointer(h)) = *m
	runtime.KeepAlive(buf)
	return h, nil
}

// Backoff of wait between polls: first a spin (a small copy finishes in
// microseconds), then sleeps growing to a cap, so that a long kernel
// costs little latency and no CPU. The spin is pollSpin on a CPU-type
// adapter, whose work runs on the host's threads that a spinning waiter
// would take a core from, and pollSpinHardware on a GPU: there a
// decoding step takes a fraction of a millisecond, and with the short
// spin every step waited for a sleep's late wake-up (measured on an H100:
// 1.57 ms a step whatever its size, from 256 MiB of K and V down to a
// few, when the sleeps were Go's).
//
// The sleeps are the C library's nanosleep (pollSleep), not time.Sleep:
// Go's timers wake a sleeping process a millisecond at a time, so
// time.Sleep(20 µs) took 1.13 ms (median of 200) on a 2-core Xeon VM,
// where nanosleep took 0.10 ms; every op on lavapipe, whose kernels
// outlast the spin, paid that. With Go's sleeps, a decoding step of 8
// heads over 256 keys took 1.5–2.2 ms of wall time for 0.5–1.1 ms of
// device time there.
const (
	pollSpin         = 200 * time.Microsecond
	pollSpinHardware = 2 * time.Millisecond
	pollMinSleep     = 20 * time.Microsecond
	pollMaxSleep     = 200 * time.Microsecond
)

// pollSleep sleeps for d on the calling thread, with the C library's
// nanosleep: the thread blocks in the kernel and wakes within the
// kernel's timer slack (tens of microseconds), where Go's timers would
// wake it up to a millisecond late.
func pollSleep(d time.Duration) { C.attn_nanosleep(C.long(d)) }

// pollSpin is how long wait spins before it sleeps, under plan a.
func (a adapterPlan) pollSpin() time.Duration {
	if a.hardware {
		return pollSpinHardware
	}
	return pollSpin
}

// wait is waitSpin with the spin of a CPU-type adapter.
func (p *pending) wait(dev *wgpu.Device) error { return p.waitSpin(dev, pollSpin) }

// waitSpin polls dev with Poll(false) until p's callback has fired,
// spinning for spin and then sleeping between polls, then frees p's C
// memory and returns an error naming the status if it is not success. It
// never returns before the callback has fired: C holds a pointer to that
// memory until then. The caller need not hold the device's lock (the
// Backend waits without it: await): Poll touches no error scope, and
// wgpu-core's poll is safe from several threads at once, each running
// whatever callbacks are due, which here only store into C memory.
func (p *pending) waitSpin(dev *wgpu.Device, spin time.Duration) error {
	if p == nil || p.c == nil {
		return errors.New("gpu: wait on a finished or nil request")
	}
	done := (*uint32)(unsafe.Pointer(&p.c.done))
	sleep := pollMinSleep
	spinUntil := time.Now().Add(spin)
	for atomic.LoadUint32(done) == 0 {
		dev.Poll(false, nil)
		if atomic.LoadUint32(done) != 0 {
			break
		}
		if time.Now().Before(spinUntil) {
			runtime.Gosched()
			continue
		}
		pollSleep(sleep)
		sleep = min(2*sleep, pollMaxSleep)
	}
	status := uint32(p.c.status)
	errType, errMsg := uint32(p.c.err_type), C.GoString(&p.c.err_msg[0])
	C.free(unsafe.Pointer(p.c))
	p.c = nil
	runtime.KeepAlive(p.keep)
	p.keep = nil

	switch {
	case p.what == "map" && wgpu.BufferMapAsyncStatus(status) != wgpu.BufferMapAsyncStatus_Success:
		err := fmt.Errorf("gpu: map failed: status %v", wgpu.BufferMapAsyncStatus(status))
		if errType != 0 {
			err = fmt.Errorf("%w (%s)", err, errorText(errType, errMsg))
		}
		return err
	case p.what != "map" && wgpu.QueueWorkDoneStatus(status) != wgpu.QueueWorkDoneStatus_Success:
		return fmt.Errorf("gpu: waiting for submitted work: status %v", wgpu.QueueWorkDoneStatus(status))
	}
	return nil
}

// errorText puts wgpu's multi-line error report on one line:
//
//	Validation Error: In wgpuBufferMapAsync: Buffer is already mapped
func errorText(typ uint32, msg string) string {
	var parts []string
	for line := range strings.Lines(msg) {
		if line = strings.TrimSpace(line); line != "" && line != "Caused by:" {
			parts = append(parts, line)
		}
	}
	if len(parts) == 0 {
		return wgpu.ErrorType(typ).String() + " error"
	}
	return strings.Join(parts, ": ")
}
