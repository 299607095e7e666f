//go:build (cgo || gogpu) && !nogpu

package wg

import "fmt"

// RuntimeChecks is which of naga's runtime checks the kernels a Device
// compiles from now on keep (wgpu.h's WGPUShaderRuntimeChecks). naga
// writes both into every kernel unless told otherwise: a clamp of each
// index into its array's length (bounds checks), and a counter at each
// loop's head that breaks out after 2⁶⁴ trips (loop bounding), which only
// keeps a driver's compiler from assuming an endless loop away. attn's
// loops are all for-loops over u32 counters to bounds the host computes,
// so the counters buy nothing but VALU work and registers; the clamps
// guard reads at indices taken from the caller's data (page tables,
// index lists), which the host validates before any dispatch.
type RuntimeChecks uint8

const (
	// ChecksAll keeps both: wgpu's default (wgpuDeviceCreateShaderModule).
	ChecksAll RuntimeChecks = iota
	// ChecksBounds keeps the bounds checks and drops the loop counters.
	ChecksBounds
	// ChecksNone drops both (wgpuDeviceCreateShaderModuleTrusted with no
	// checks): every index a kernel takes from data must be in range.
	ChecksNone
)

func (c RuntimeChecks) String() string {
	switch c {
	case ChecksAll:
		return "on"
	case ChecksBounds:
		return "bounds"
	case ChecksNone:
		return "off"
	}
	return fmt.Sprintf("RuntimeChecks(%d)", uint8(c))
}

// ParseRuntimeChecks reads one of RuntimeChecks' names: on, bounds, off.
func ParseRuntimeChecks(s string) (RuntimeChecks, error) {
	for _, c := range []RuntimeChecks{ChecksAll, ChecksBounds, ChecksNone} {
		if s == c.String() {
			return c, nil
		}
	}
	return 0, fmt.Errorf("runtime checks %q: want on, bounds or off", s)
}

// DefaultChecks is what a Device compiles with until SetRuntimeChecks:
// this binding's (defaultChecks).
const DefaultChecks = defaultChecks

// RuntimeChecks is what the kernels d compiles from now on keep.
func (d *Device) RuntimeChecks() RuntimeChecks { return d.checks }

// SetRuntimeChecks sets what the kernels d compiles from now on keep.
// A binding that cannot compile so refuses (supportsChecks): go-webgpu's
// wgpu-native has no trusted modules.
func (d *Device) SetRuntimeChecks(c RuntimeChecks) error {
	if err := supportsChecks(c); err != nil {
		return err
	}
	d.checks = c
	return nil
}
