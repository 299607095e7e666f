//go:build gogpu && !nogpu

package wg

// A buffer's calls on gogpu/wgpu (bufferCalls), and the mirror of its
// Buffer through which wg does what the binding's API does not: take a
// second reference to a caller's buffer (Import), tell a buffer's device
// and whether two handles are one buffer, and destroy a buffer while a
// handle stays (a test's DestroyOnly). In v0.31.5 (buffer.go):
//
//	type Buffer struct {
//		core     *core.Buffer
//		device   *Device
//		cleanup  runtime.Cleanup
//		released *atomic.Bool
//	}
//
// core.Buffer is the binding's exported core type: its reference count
// (Ref), Destroy and IsDestroyed are its own API. A handle made here has
// a reference of its own and no cleanup; its Release drops that
// reference, as the binding's does.

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gogpu/wgpu"
	"github.com/gogpu/wgpu/core"
)

type bufferMirror struct {
	core     *core.Buffer
	device   *wgpu.Device
	cleanup  runtime.Cleanup
	released *atomic.Bool
}

// checkLayout reports, once, whether the binding's Buffer still has the
// fields of bufferMirror, each of the same type.
var checkLayout = sync.OnceValue(func() error {
	return sameTypes(reflect.TypeFor[wgpu.Buffer](), reflect.TypeFor[bufferMirror]())
})

// sameTypes is sameLayout with each field's type the same too.
func sameTypes(real, mirror reflect.Type) error {
	if err := sameLayout(real, mirror); err != nil {
		return fmt.Errorf("gpu: gogpu/wgpu's %v changed layout (%v)", real, err)
	}
	for i := range real.NumField() {
		if r, m := real.Field(i), mirror.Field(i); r.Type != m.Type {
			return fmt.Errorf("gpu: gogpu/wgpu's %v changed layout: field %s is %v, want %v", real, r.Name, r.Type, m.Type)
		}
	}
	return nil
}

func mirrorOf(b *wgpu.Buffer) *bufferMirror { return (*bufferMirror)(unsafe.Pointer(b)) }

func (b *Buffer) Size() uint64 { return b.raw.Size() }
func (b *Buffer) Usage() Usage { return Usage(b.raw.Usage()) }

// Release drops this handle's reference; the buffer lives on while
// another handle or submitted work holds one.
func (b *Buffer) Release() { b.raw.Release() }

// Destroy releases the handle: the binding frees a buffer when its last
// reference goes, after the work submitted with it, and has no Destroy
// of its own. attn destroys only buffers whose one handle is its own.
func (b *Buffer) Destroy() { b.raw.Release() }

// DestroyOnly frees the buffer's memory and keeps the handle, through the
// binding's core buffer (tests: binding or mapping a destroyed buffer).
// The core frees it at once, work in flight or not, so the device is
// waited for first: a copy still running would write freed memory. A
// map waiting is failed. It panics where the mirror no longer matches.
func (b *Buffer) DestroyOnly() {
	if err := checkLayout(); err != nil {
		panic(err)
	}
	m := mirrorOf(b.raw)
	if m.device != nil {
		_ = m.device.WaitIdle() // an error is a lost device, whose work is over
	}
	m.core.Destroy()
}

// Mapped is size bytes of the mapped buffer from offset, valid until
// Unmap; nil where the binding refuses the range (not mapped, or
// overlapping a range given before).
func (b *Buffer) Mapped(offset, size uint64) []byte {
	r, err := b.raw.MappedRange(offset, size)
	if err != nil {
		return nil
	}
	bs := r.Bytes()
	r.Release() // the view's own record; the bytes stay valid until Unmap
	return bs
}

func (b *Buffer) Unmap() error { return b.raw.Unmap() }

// Reference returns a new handle to buf that holds a reference of its
// own to the buffer, as a handle that CreateBuffer returns does: its
// Release leaves buf's handle working, and buf's Release leaves the
// buffer alive for this one.
func Reference(buf *NativeBuffer) (*Buffer, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	m := mirrorOf(buf)
	if m.core == nil || m.released == nil || m.released.Load() || m.core.Ref == nil {
		return nil, errors.New("gpu: the buffer was released")
	}
	m.core.Ref.Clone()
	h := new(wgpu.Buffer)
	*mirrorOf(h) = bufferMirror{core: m.core, device: m.device, released: new(atomic.Bool)}
	runtime.KeepAlive(buf)
	return &Buffer{h}, nil
}

// Owns reports whether buf was created on d.
func (d *Device) Owns(buf *NativeBuffer) (bool, error) {
	if err := checkLayout(); err != nil {
		return false, err
	}
	return mirrorOf(buf).device == d.raw, nil
}

// Same reports whether x and y are handles to one buffer (Reference
// makes a handle of its own).
func Same(x, y *Buffer) bool {
	if x == y || x.raw == y.raw {
		return true
	}
	return checkLayout() == nil && mirrorOf(x.raw).core == mirrorOf(y.raw).core
}

// Alive returns an error when b, a buffer of the caller's, was destroyed
// (the binding's core says so).
func (d *Device) Alive(b *Buffer, offset, size uint64) error {
	if err := checkLayout(); err != nil {
		return err
	}
	if destroyed(b.raw) {
		return errors.New("gpu: the buffer is destroyed")
	}
	return nil
}

// destroyed reports whether the binding's core says b is destroyed;
// false where the mirror does not match, as nothing is known then.
func destroyed(b *wgpu.Buffer) bool {
	if checkLayout() != nil {
		return false
	}
	c := mirrorOf(b).core
	return c == nil || c.IsDestroyed()
}
