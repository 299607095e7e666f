//go:build cgo && !nogpu && !gowebgpu && !gogpu

package wg

// The mirrors of the binding's structs that the shim reads a handle
// from, and the check that they still match the binding (bindingCheck).

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/oliverbestmann/webgpu/wgpu"
)

// The binding wraps every call attn makes but these: WriteTimestamp on
// an encoder and inside a compute pass, Submit in an error scope, an
// adapter's subgroup sizes, a second reference to a caller's buffer
// (Import), the words of a refused device request, and trusted shader
// modules (wgpuDeviceCreateShaderModuleTrusted). It exports no C
// handle, so the shim (oliverbestmann.go) reads the handle from the binding's struct,
// whose fields are unexported; in v1.36.0 (gen_types.go):
//
//	type Adapter        struct { ref C.WGPUAdapter; shared bool }
//	type Device         struct { ref C.WGPUDevice; shared bool }
//	type QuerySet       struct { ref C.WGPUQuerySet; shared bool }
//	type CommandBuffer  struct { ref C.WGPUCommandBuffer; shared bool }
//	type ShaderModule   struct { ref C.WGPUShaderModule; shared bool }
//	type Buffer         struct { ref C.WGPUBuffer; device C.WGPUDevice; shared bool }
//	type Queue          struct { ref C.WGPUQueue; device C.WGPUDevice; shared bool }
//	type CommandEncoder struct { ref C.WGPUCommandEncoder; device C.WGPUDevice; shared bool }
//	type ComputePassEncoder struct { ref C.WGPUComputePassEncoder; device C.WGPUDevice; shared bool }
//
// The device field is the object's own reference to its device, which
// the binding's Release now releases with the object (v1.0.0 left it to
// a finalizer, and wg released it itself). Everything else goes through
// the binding's exported API.
type (
	handleMirror struct {
		ref    unsafe.Pointer
		shared bool
	}
	childMirror struct {
		ref, device unsafe.Pointer
		shared      bool
	}
)

// bindingCheck is Check's answer for this binding: the binding's
// structs must still look like the mirrors above, so that reading them
// through unsafe is sound, and its wgpu-native must be the release
// include/'s headers are. Its error names the binding's and wgpu-native's
// versions and what disagreed.
func bindingCheck() error { return checkLayout() }

// checkLayout reports, once, whether the binding's structs still look
// like the mirrors above and its wgpu-native is the release whose
// headers the shim is compiled with (Check).
var checkLayout = sync.OnceValue(func() error {
	if err := layoutOf(mirrors); err != nil {
		return err
	}
	return nativeOf(uint32(wgpu.GetVersion()))
})

// nativeOf is nil when v, wgpuGetVersion's answer, is of the major
// release include/'s headers are: another's webgpu.h may lay out the
// structs the shim passes (limits, adapter info, callback infos)
// otherwise, which no Go type check would see.
func nativeOf(v uint32) error {
	if v>>24 != nativeMajor {
		return fmt.Errorf("gpu: the WebGPU binding (%s) links wgpu-native %s, and gpu/internal/wg's shim is compiled against wgpu-native %d's headers; build attn with the binding its go.mod names (%s %s)", Versions(), nativeVersion(v), nativeMajor, BindingModule, bindingVersion)
	}
	return nil
}

// mirrors pairs each binding struct wg reads through unsafe with its
// mirror.
var mirrors = []struct{ real, mirror reflect.Type }{
	{reflect.TypeFor[wgpu.Adapter](), reflect.TypeFor[handleMirror]()},
	{reflect.TypeFor[wgpu.Device](), reflect.TypeFor[handleMirror]()},
	{reflect.TypeFor[wgpu.QuerySet](), reflect.TypeFor[handleMirror]()},
	{reflect.TypeFor[wgpu.CommandBuffer](), reflect.TypeFor[handleMirror]()},
	{reflect.TypeFor[wgpu.ShaderModule](), reflect.TypeFor[handleMirror]()},
	{reflect.TypeFor[wgpu.Buffer](), reflect.TypeFor[childMirror]()},
	{reflect.TypeFor[wgpu.Queue](), reflect.TypeFor[childMirror]()},
	{reflect.TypeFor[wgpu.CommandEncoder](), reflect.TypeFor[childMirror]()},
	{reflect.TypeFor[wgpu.ComputePassEncoder](), reflect.TypeFor[childMirror]()},
}

// layoutOf is nil when each pair's real struct has its mirror's layout,
// else an error naming the versions and the first that differs.
func layoutOf(pairs []struct{ real, mirror reflect.Type }) error {
	for _, c := range pairs {
		if err := sameLayout(c.real, c.mirror); err != nil {
			return fmt.Errorf("gpu: the WebGPU binding (%s) is not one attn was built for: its %v has another layout (%v) than gpu/internal/wg's mirror of it; build attn with the binding its go.mod names (%s %s)", Versions(), c.real, err, BindingModule, bindingVersion)
		}
	}
	return nil
}

// handleOf is the C handle of a binding object whose struct begins with
// it (every mirror above). Callers have checked the layout.
func handleOf[T any](obj *T) unsafe.Pointer {
	return (*handleMirror)(unsafe.Pointer(obj)).ref
}
