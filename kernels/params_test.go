package kernels

import (
	"reflect"
	"testing"
)

// TestParams checks that Options.params copies every field params has:
// AttendOptions converts to params, so the compiler keeps those two
// alike, but Options has more fields and copies them one by one, where a
// field added to both could be forgotten.
func TestParams(t *testing.T) {
	var o Options
	ov := reflect.ValueOf(&o).Elem()
	pt := reflect.TypeFor[params]()
	for i := range pt.NumField() {
		f := pt.Field(i)
		of, ok := reflect.TypeFor[Options]().FieldByName(f.Name)
		if !ok || of.Type != f.Type {
			t.Fatalf("params.%s (%v) has no twin in Options (%v, %v)", f.Name, f.Type, of.Type, ok)
		}
		// A value no zero field has: a non-nil pointer or slice, true, 1.
		v := reflect.New(f.Type).Elem()
		switch f.Type.Kind() {
		case reflect.Pointer:
			v = reflect.New(f.Type.Elem())
		case reflect.Slice:
			v = reflect.MakeSlice(f.Type, 1, 1)
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Float64:
			v.SetFloat(1)
		default:
			t.Fatalf("params.%s: no test value for a %v", f.Name, f.Type)
		}
		ov.FieldByName(f.Name).Set(v)
	}
	p := reflect.ValueOf(o.params())
	for i := range pt.NumField() {
		if p.Field(i).IsZero() {
			t.Errorf("Options.params leaves params.%s zero", pt.Field(i).Name)
		}
	}
}
