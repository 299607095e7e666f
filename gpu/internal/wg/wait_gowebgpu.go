//go:build cgo && !nogpu && gowebgpu && !gogpu

package wg

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

*/
import "C"

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
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

// Pending is one outstanding map or work-done request whose callback
// writes into C memory. Call Wait exactly once.
type Pending struct {
	c    *C.attn_pending
	dev  *Device
	what string // "map" or "work done", for errors
	// keep is the Go object whose C handle the request uses, held until
	// the callback has fired (v0.17.1 sets no finalizers, but a release
	// by a finalizer mid-request would be another use-after-free).
	keep any
}

func newPending(dev *Device, what string, keep any) *Pending {
	// cgo's C.malloc never returns nil (it crashes on exhaustion, like Go's
	// own allocator).
	c := (*C.attn_pending)(C.malloc(C.size_t(unsafe.Sizeof(C.attn_pending{}))))
	*c = C.attn_pending{}
	return &Pending{c: c, dev: dev, what: what, keep: keep}
}

// MapAsync starts mapping size bytes of buf from offset for mode (exactly
// one of MapRead and MapWrite: wgpu-native aborts on anything else). A
// validation error raised by the call itself is returned here, with a nil
// *Pending (MapAsync has then already waited for the callback, so it may
// poll d); one found later comes back from Wait as the status. Mapping a
// destroyed buffer aborts the process inside the next Poll, and nothing
// here can detect it: never do that.
func (d *Device) MapAsync(buf *Buffer, mode MapMode, offset, size uint64) (*Pending, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	if mode != MapRead && mode != MapWrite {
		return nil, fmt.Errorf("gpu: map mode %#x: want MapMode_Read or MapMode_Write", uint32(mode))
	}
	if offset != uint64(C.size_t(offset)) || size != uint64(C.size_t(size)) {
		return nil, fmt.Errorf("gpu: map range %d+%d does not fit in size_t", offset, size)
	}
	dm := (*deviceMirror)(unsafe.Pointer(d.raw))
	b := (*bufferMirror)(unsafe.Pointer(buf.raw))
	if b.deviceRef != dm.ref {
		return nil, errors.New("gpu: mapAsync: buffer belongs to another device")
	}
	p := newPending(d, "map", buf.raw)
	C.attn_map_async(C.WGPUDevice(dm.ref), C.WGPUBuffer(b.ref), C.WGPUMapModeFlags(mode),
		C.size_t(offset), C.size_t(size), p.c)
	runtime.KeepAlive(d.raw)
	runtime.KeepAlive(buf.raw)
	if p.c.err_type != 0 {
		err := fmt.Errorf("gpu: mapAsync: %s", errorText(wgpu.ErrorType(p.c.err_type).String(), C.GoString(&p.c.err_msg[0])))
		// wgpu-core has normally called back with a failed status already;
		// wait anyway, so that p's memory is freed only after it has.
		_ = p.Wait(0) // its failed status says less than err
		return nil, err
	}
	return p, nil
}

// OnWorkDone asks for a callback once all work submitted to d's queue so
// far has finished.
func (d *Device) OnWorkDone() (*Pending, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	q := (*queueMirror)(unsafe.Pointer(d.queue))
	p := newPending(d, "work done", d.queue)
	C.attn_on_work_done(C.WGPUQueue(q.ref), p.c)
	runtime.KeepAlive(d.queue)
	return p, nil
}

// Owns reports whether buf was created on d.
func (d *Device) Owns(buf *NativeBuffer) (bool, error) {
	if err := checkLayout(); err != nil {
		return false, err
	}
	return (*bufferMirror)(unsafe.Pointer(buf)).deviceRef == (*deviceMirror)(unsafe.Pointer(d.raw)).ref, nil
}

// Same reports whether x and y are handles to one wgpu buffer
// (Reference makes a handle of its own).
func Same(x, y *Buffer) bool {
	return x == y || x.raw == y.raw || (*bufferMirror)(unsafe.Pointer(x.raw)).ref == (*bufferMirror)(unsafe.Pointer(y.raw)).ref
}

// Reference returns a new handle to buf that holds references of its own
// to the buffer and its device, as a handle that CreateBuffer returns
// does: its Release (go-webgpu releases both) leaves buf's handle
// working, and buf's Release leaves the buffer alive for this one.
func Reference(buf *NativeBuffer) (*Buffer, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	m := (*bufferMirror)(unsafe.Pointer(buf))
	C.wgpuBufferReference(C.WGPUBuffer(m.ref))
	C.wgpuDeviceReference(C.WGPUDevice(m.deviceRef))
	h := new(wgpu.Buffer)
	*(*bufferMirror)(unsafe.Pointer(h)) = *m
	runtime.KeepAlive(buf)
	return &Buffer{h}, nil
}

// Wait polls the device with Poll(false) until p's callback has fired,
// spinning for spin and then sleeping between polls (sleep.go), then
// frees p's C memory and returns an error naming the status if it is not
// success. It never returns before the callback has fired: C holds a
// pointer to that memory until then. The caller need not hold the
// device's lock: Poll touches no error scope, and wgpu-core's poll is
// safe from several threads at once, each running whatever callbacks are
// due, which here only store into C memory.
func (p *Pending) Wait(spin time.Duration) error {
	if p == nil || p.c == nil {
		return errors.New("gpu: wait on a finished or nil request")
	}
	done := (*uint32)(unsafe.Pointer(&p.c.done))
	backoff(spin, p.dev.poll, func() bool { return atomic.LoadUint32(done) != 0 })
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
			err = fmt.Errorf("%w (%s)", err, errorText(wgpu.ErrorType(errType).String(), errMsg))
		}
		return err
	case p.what != "map" && wgpu.QueueWorkDoneStatus(status) != wgpu.QueueWorkDoneStatus_Success:
		return fmt.Errorf("gpu: waiting for submitted work: status %v", wgpu.QueueWorkDoneStatus(status))
	}
	return nil
}
