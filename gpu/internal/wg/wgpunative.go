//go:build cgo && !nogpu && !gogpu

package wg

// What the two wgpu-native bindings (oliverbestmann/webgpu, go-webgpu)
// spell alike on a buffer, which gogpu/wgpu spells otherwise
// (bufferCalls in binding.go).

func (b *Buffer) Size() uint64 { return b.raw.GetSize() }
func (b *Buffer) Usage() Usage { return Usage(b.raw.GetUsage()) }

// Release drops this handle (and the reference to the device that a
// binding's handle may hold); the buffer lives on while another handle
// or the device's work holds it.
func (b *Buffer) Release() { b.raw.Release() }

// Destroy frees the buffer's memory (after the work submitted with it)
// and releases the handle.
func (b *Buffer) Destroy() {
	b.raw.Destroy()
	b.raw.Release()
}

// DestroyOnly frees the buffer's memory and keeps the handle (tests:
// mapping a destroyed buffer).
func (b *Buffer) DestroyOnly() { b.raw.Destroy() }

// Mapped is size bytes of the mapped buffer from offset; valid until
// Unmap.
func (b *Buffer) Mapped(offset, size uint64) []byte {
	return b.raw.GetMappedRange(uint(offset), uint(size))
}
