package shaders

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// wgslScalar is the size and alignment of each WGSL scalar a Params field
// may have (WGSL §"Alignment and Size": u32, i32 and f32 are 4 and 4).
var wgslScalar = map[string]int{"u32": 4, "i32": 4, "f32": 4}

// wgslLayout parses the struct Params of generated WGSL and lays it out as
// WGSL does: each member at the next offset its alignment allows, the
// struct's size rounded up to its largest alignment.
func wgslLayout(t *testing.T, src string) (names, types []string, offsets []int, size int) {
	t.Helper()
	m := regexp.MustCompile(`(?s)\nstruct Params \{\n(.*?)\n\}\n`).FindStringSubmatch(src)
	if m == nil {
		t.Fatal("no struct Params in the generated WGSL")
	}
	member := regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*): ([a-z0-9]+),$`)
	off, align := 0, 1
	for _, line := range strings.Split(m[1], "\n") {
		f := member.FindStringSubmatch(line)
		if f == nil {
			t.Fatalf("struct Params member %q is not name: scalar,", line)
		}
		n, ok := wgslScalar[f[2]]
		if !ok {
			t.Fatalf("struct Params member %q has a type Params fields may not have", line)
		}
		off = (off + n - 1) / n * n
		names, types, offsets = append(names, f[1]), append(types, f[2]), append(offsets, off)
		off += n
		align = max(align, n)
	}
	return names, types, offsets, (off + align - 1) / align * align
}

// goType is the WGSL scalar of a Go field's kind.
var goType = map[reflect.Kind]string{reflect.Uint32: "u32", reflect.Int32: "i32", reflect.Float32: "f32"}

// TestParamsLayout checks, for every kernel, that the Go struct the host
// fills and the WGSL struct Params the kernel reads agree: the same
// fields in the same order, each of the WGSL type of its Go kind at the
// same byte offset, and the same size; and that Encode puts each field's
// value at that offset.
func TestParamsLayout(t *testing.T) {
	for _, k := range All {
		src, err := k.Generate(goldenSpec(t, k))
		if err != nil {
			t.Fatal(err)
		}
		names, types, offsets, size := wgslLayout(t, src)
		fs, err := k.ParamFields()
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != len(names) {
			t.Fatalf("%s: Go Params %v has %d fields, WGSL %d", k.Name, k.Params, len(fs), len(names))
		}
		if int(k.Params.Size()) != size {
			t.Errorf("%s: Go Params %v is %d bytes, WGSL's %d", k.Name, k.Params, k.Params.Size(), size)
		}
		// Go's own view of every leaf: its offset and kind by reflection.
		type leaf struct {
			off  uintptr
			kind reflect.Kind
			v    reflect.Value
		}
		var leaves []leaf
		p := reflect.New(k.Params).Elem()
		var walk func(v reflect.Value, base uintptr)
		walk = func(v reflect.Value, base uintptr) {
			for i := range v.NumField() {
				f := v.Type().Field(i)
				if f.Type.Kind() == reflect.Struct {
					walk(v.Field(i), base+f.Offset)
					continue
				}
				leaves = append(leaves, leaf{base + f.Offset, f.Type.Kind(), v.Field(i)})
			}
		}
		walk(p, 0)
		for i, f := range fs {
			if f.Name != names[i] || f.Type != types[i] || int(f.Offset) != offsets[i] {
				t.Errorf("%s field %d: Go %s %s at %d, WGSL %s %s at %d", k.Name, i, f.Name, f.Type, f.Offset, names[i], types[i], offsets[i])
			}
			if leaves[i].off != f.Offset || goType[leaves[i].kind] != types[i] {
				t.Errorf("%s field %s: Go %v at %d, WGSL %s at %d", k.Name, f.Name, leaves[i].kind, leaves[i].off, types[i], offsets[i])
			}
		}
		// Distinct values, each found at its offset in the encoding.
		for i, l := range leaves {
			switch l.kind {
			case reflect.Uint32:
				l.v.SetUint(uint64(1000 + i))
			case reflect.Int32:
				l.v.SetInt(int64(-1000 - i))
			case reflect.Float32:
				l.v.SetFloat(float64(i) + 0.5)
			}
		}
		enc, err := k.Encode(p.Interface())
		if err != nil {
			t.Fatal(err)
		}
		if len(enc) != size {
			t.Errorf("%s: Encode gives %d bytes, want %d", k.Name, len(enc), size)
			continue
		}
		// The copy of a flat value and encoding/binary's walk agree, and
		// on a little-endian host every Params type is flat.
		walked, err := binary.Append(nil, binary.LittleEndian, p.Interface())
		if err != nil || !bytes.Equal(enc, walked) {
			t.Errorf("%s: Encode gives % x, encoding/binary % x (%v)", k.Name, enc, walked, err)
		}
		if le := binary.NativeEndian.Uint16([]byte{1, 0}) == 1; le && !flat(k.Params) {
			t.Errorf("%s: Params %v is not flat on this little-endian host: Encode walks its fields", k.Name, k.Params)
		}
		for i, l := range leaves {
			got := binary.LittleEndian.Uint32(enc[offsets[i]:])
			var want uint32
			switch l.kind {
			case reflect.Uint32:
				want = uint32(1000 + i)
			case reflect.Int32:
				want = uint32(int32(-1000 - i))
			case reflect.Float32:
				want = math.Float32bits(float32(i) + 0.5)
			}
			if got != want {
				t.Errorf("%s: Encode put %#x at %s's offset %d, want %#x", k.Name, got, names[i], offsets[i], want)
			}
		}
	}
}

// TestEncodeRejects checks that Encode refuses a Params value of another
// kernel's type, and that a Params type with a field WGSL cannot hold is
// refused by Generate.
func TestEncodeRejects(t *testing.T) {
	if _, err := Scores.Encode(FusedParams{}); err == nil || !strings.Contains(err.Error(), "scores") {
		t.Errorf("Scores.Encode(FusedParams{}) = %v, want an error naming scores", err)
	}
	if _, err := Fused.Encode(&FusedParams{}); err == nil {
		t.Error("Fused.Encode(*FusedParams) succeeded, want an error")
	}
	bad := Merge
	bad.Params = reflect.TypeFor[struct {
		Unit
		Dv int
	}]()
	if _, err := bad.Generate(MergeConsts{WG: 64, L: 1}); err == nil || !strings.Contains(err.Error(), "Dv") {
		t.Errorf("Generate with an int Params field: %v, want an error naming it", err)
	}
}
