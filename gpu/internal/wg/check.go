//go:build (cgo || gogpu) && !nogpu

package wg

// Whether this build's binding is one wg was written for, and the check
// of the mirrors through which a binding's shim reads the C handles that
// the binding does not export.

import (
	"fmt"
	"reflect"
)

// Check reports whether this build's binding is one wg was written for
// (bindingCheck says what that means for it). gpu.New and the others
// that open an instance refuse with its error, rather than run with a
// shim that would read the wrong memory.
func Check() error { return checkOverride() }

// checkOverride is Check's answer: bindingCheck, or what SetCheck put.
var checkOverride = bindingCheck

// SetCheck makes Check return err until the returned func restores it:
// for tests of the callers' refusal, as a binding of another layout would
// make them refuse. Not for use beside a running backend.
func SetCheck(err error) (restore func()) {
	checkOverride = func() error { return err }
	return func() { checkOverride = bindingCheck }
}

// sameLayout is nil when real, a binding's struct, has the fields of
// mirror, wg's copy of it: their names, offsets, sizes and kinds, a C
// handle (a pointer to an incomplete C struct) counting as an
// unsafe.Pointer.
func sameLayout(real, mirror reflect.Type) error {
	if real.Size() != mirror.Size() || real.NumField() != mirror.NumField() {
		return fmt.Errorf("size %d with %d fields, want %d with %d",
			real.Size(), real.NumField(), mirror.Size(), mirror.NumField())
	}
	kind := func(t reflect.Type) reflect.Kind {
		if t.Kind() == reflect.UnsafePointer {
			return reflect.Pointer
		}
		return t.Kind()
	}
	for i := range real.NumField() {
		r, m := real.Field(i), mirror.Field(i)
		if r.Name != m.Name || r.Offset != m.Offset || r.Type.Size() != m.Type.Size() || kind(r.Type) != kind(m.Type) {
			return fmt.Errorf("field %d is %s %v at offset %d, want %s (a %v) at %d",
				i, r.Name, r.Type, r.Offset, m.Name, kind(m.Type), m.Offset)
		}
	}
	return nil
}
