//go:build (cgo || gogpu) && !nogpu

package wg

// Adapters and the versions of the binding: what of them does not depend
// on the binding.

import (
	"fmt"
	"runtime/debug"

	"github.com/gogpu/gputypes"
)

// Adapter is one adapter; Release releases the handle unless it wraps a
// caller's (WrapAdapter).
type Adapter struct {
	raw    *NativeAdapter
	shared bool
}

// WrapAdapter is a caller's adapter; its Release leaves it alone.
func WrapAdapter(a *NativeAdapter) *Adapter { return &Adapter{raw: a, shared: true} }

func (a *Adapter) Release() {
	if !a.shared {
		a.raw.Release()
	}
}

// Native is the binding's own adapter.
func (a *Adapter) Native() *NativeAdapter { return a.raw }

// HasFeature reports whether the adapter offers f: whether Features, the
// binding's account of what attn can use, has it.
func (a *Adapter) HasFeature(f gputypes.Feature) bool { return a.Features().Contains(f) }

// describeAdapter is an adapter's description in gputypes terms, from the
// fields a binding reports. wgpu-native puts wgpu's AdapterInfo.driver
// ("llvmpipe") where webgpu.h has the vendor, and its driver_info ("Mesa
// 22.3.6 (LLVM 15.0.6)") where it has the description: a binding passes
// them as driver and driverInfo. wgpu-native gives no vendor name, so
// Vendor is named after vendorID where that is a well-known PCI or
// Khronos id (VendorName), and is empty otherwise. A binding passes a
// device type or a backend that gputypes has no counterpart for as the
// zero value, DeviceTypeOther or BackendEmpty.
func describeAdapter(name, driver, driverInfo string, vendorID, deviceID uint32, dt gputypes.DeviceType, b gputypes.Backend) gputypes.AdapterInfo {
	return gputypes.AdapterInfo{
		Name:       name,
		Vendor:     VendorName(vendorID),
		VendorID:   vendorID,
		DeviceID:   deviceID,
		DeviceType: dt,
		Driver:     driver,
		DriverInfo: driverInfo,
		Backend:    b,
	}
}

// Versions names the binding's module version (from the build
// information where there is some, else bindingVersion) and what it
// links (linked).
func Versions() string {
	v := bindingVersion
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == BindingModule {
				if m.Replace != nil {
					m = m.Replace
				}
				if m.Version != "" {
					v = m.Version
				}
				break
			}
		}
	}
	return bindingName + " " + v + ", " + linked()
}

// nativeVersion decodes wgpuGetVersion's major<<24 | minor<<16 | patch<<8
// | build, which is 0 in a library built without its version.
func nativeVersion(v uint32) string {
	if v == 0 {
		return "(version not recorded in the library)"
	}
	return fmt.Sprintf("%d.%d.%d.%d", v>>24, v>>16&0xff, v>>8&0xff, v&0xff)
}
