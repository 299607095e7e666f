package plan

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/gogpu/gputypes"
)

// These tests need no device: they cover the sweep's knobs and classes
// and the tuning file's reader, which package gpu's tests run through
// New on lavapipe.

// TestKnobsFor checks which knobs a sweep of each kernel walks, and that
// every knob but step.flush (a Step's, not a kernel's) sizes some kernel:
// a knob added to the table without a family here would never be swept.
func TestKnobsFor(t *testing.T) {
	names := func(kernel string) []string {
		var out []string
		for _, k := range KnobsFor(kernel) {
			out = append(out, k.Name)
			if d, _ := defaultTuning.Value(k.Name); k.Default != d {
				t.Errorf("%s: default %d; the table's is %d", k.Name, k.Default, d)
			}
		}
		return out
	}
	for _, c := range []struct {
		kernel string
		want   []string
	}{
		{KernelDecode, []string{"decode.wg", "decode.rows", "decode.keys", "decode.unroll", "decode.pv", "decode.wide", "decode.target", "decode.split", "merge.lanes", "merge.unroll"}},
		{KernelLaneDecode, []string{"decode.wg", "decode.rows", "decode.lanes", "decode.batch", "decode.wide", "decode.target", "decode.split", "merge.lanes", "merge.unroll"}},
		{KernelTile, []string{"merge.lanes", "merge.unroll", "split.target", "tile.wg", "tile.rows", "tile.keys", "tile.reg", "tile.unroll"}},
		{KernelLoop, []string{"merge.lanes", "merge.unroll", "split.target", "loop.unroll"}},
		{"fused", nil},
		{"", nil},
	} {
		for _, w := range c.want {
			if !slices.Contains(names(c.kernel), w) {
				t.Errorf("KnobsFor(%q) = %v: no %s", c.kernel, names(c.kernel), w)
			}
		}
		if c.kernel == KernelLaneDecode {
			for _, n := range []string{"decode.keys", "decode.unroll", "decode.pv", "decode.ahead", "decode.next", "decode.vwide"} {
				if slices.Contains(names(c.kernel), n) {
					t.Errorf("KnobsFor(%q) = %v: %s sizes fuseddecode.wgsl alone", c.kernel, names(c.kernel), n)
				}
			}
		}
		if c.kernel == KernelDecode && (slices.Contains(names(c.kernel), "decode.lanes") || slices.Contains(names(c.kernel), "decode.batch")) {
			t.Errorf("KnobsFor(%q) = %v: decode.lanes and decode.batch size lanedecode.wgsl alone", c.kernel, names(c.kernel))
		}
		if c.want == nil && len(names(c.kernel)) != 0 {
			t.Errorf("KnobsFor(%q) = %v; want none", c.kernel, names(c.kernel))
		}
	}
	for _, k := range knobs {
		some := knobSizes(k.name, KernelDecode) || knobSizes(k.name, KernelLaneDecode) || knobSizes(k.name, KernelTile) || knobSizes(k.name, KernelLoop)
		if some == (k.name == "step.flush") {
			t.Errorf("knob %s sizes a kernel: %v; only step.flush sizes none", k.name, some)
		}
	}
}

// TestNeighbours checks a knob's candidates: powers of two within a
// factor of four, within its range, the value itself left out.
func TestNeighbours(t *testing.T) {
	for _, c := range []struct {
		k    KnobInfo
		v    int
		want []int
	}{
		{KnobInfo{Lo: 32, Hi: 256}, 256, []int{64, 128}},
		{KnobInfo{Lo: 1, Hi: 64}, 16, []int{4, 8, 32, 64}},
		{KnobInfo{Lo: 1, Hi: 64}, 1, []int{2, 4}},
		{KnobInfo{Lo: 16, Hi: 1 << 16}, 1 << 16, []int{1 << 14, 1 << 15}},
		{KnobInfo{Lo: 4, Hi: 4}, 4, nil},
	} {
		if got := Neighbours(c.k, c.v); !slices.Equal(got, c.want) {
			t.Errorf("Neighbours(%+v, %d) = %v; want %v", c.k, c.v, got, c.want)
		}
	}
}

// TestTuningWith checks that With sets a knob where ATTN_GPU_TUNE would,
// refuses what it would refuse, and that Value reads it back.
func TestTuningWith(t *testing.T) {
	for _, c := range []struct {
		name string
		v    int
		err  string
	}{
		{"decode.keys", 128, ""},
		{"merge.lanes", 1, ""},
		{"decode.keys", 96, "decode.keys=96: want a power of two from"},
		{"decode.wg", 512, "decode.wg=512"},
		{"decode.wg", 0, "decode.wg=0"},
		{"wg", 64, `no knob "wg"`},
	} {
		got, err := defaultTuning.With(c.name, c.v)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || got != defaultTuning {
				t.Errorf("With(%s, %d) = %v, %v; want the defaults and an error saying %q", c.name, c.v, got, err, c.err)
			}
			continue
		}
		if v, ok := got.Value(c.name); err != nil || !ok || v != c.v {
			t.Errorf("With(%s, %d) = %v, %v: Value %d, %v", c.name, c.v, got, err, v, ok)
		}
	}
}

// TestClassOf checks a problem's class: its kernel's name, its rows and
// keys rounded up to powers of two, its group and head dims exact.
func TestClassOf(t *testing.T) {
	hw, _ := Choose("hardware", gputypes.DeviceTypeDiscreteGPU)
	const mem = 48 << 10
	for _, c := range []struct {
		p    backend.Problem
		want Class
	}{
		{backend.Problem{B: 1, H: 32, KVHeads: 8, Nq: 1, Nk: 4096, D: 128, Dv: 128}, Class{KernelDecode, 1, 4, 128, 128, 4096}},
		{backend.Problem{B: 1, H: 32, KVHeads: 8, Nq: 1, Nk: 4097, D: 128, Dv: 128}, Class{KernelDecode, 1, 4, 128, 128, 8192}},
		{backend.Problem{B: 4, H: 8, KVHeads: 8, Nq: 3, Nk: 1000, D: 64, Dv: 64}, Class{KernelDecode, 4, 1, 64, 64, 1024}},
		{backend.Problem{B: 1, H: 8, KVHeads: 8, Nq: 4096, Nk: 4096, D: 128, Dv: 128}, Class{KernelTile, 4096, 1, 128, 128, 4096}},
		{backend.Problem{B: 1, H: 8, KVHeads: 8, Nq: 3000, Nk: 4096, D: 64, Dv: 64}, Class{KernelLoop, 4096, 1, 64, 64, 4096}},
	} {
		s := ShapeOf(c.p)
		if got := ClassOf(hw.FusedFor(mem, s), s); got != c.want {
			t.Errorf("ClassOf(%+v) = %v; want %v", c.p, got, c.want)
		}
	}
	for n, want := range map[int]int{-1: 1, 0: 1, 1: 1, 2: 2, 3: 4, 4096: 4096, 4097: 8192} {
		if got := ceilPow2(n); got != want {
			t.Errorf("ceilPow2(%d) = %d; want %d", n, got, want)
		}
	}
}

// TestForShape checks that a tuning file's sizes reach the problems of
// the classes it tunes, on the hardware plan only, and no others.
func TestForShape(t *testing.T) {
	const mem = 48 << 10
	tuned, _ := defaultTuning.With("decode.keys", 128)
	decode := backend.Problem{B: 1, H: 32, KVHeads: 8, Nq: 1, Nk: 3000, D: 128, Dv: 128}
	s := ShapeOf(decode)
	hw, _ := Choose("hardware", gputypes.DeviceTypeDiscreteGPU)
	class := ClassOf(hw.FusedFor(mem, s), s)
	hw.File = &Tuned{classes: map[Class]Tuning{class: tuned}, order: []Class{class}}
	for _, c := range []struct {
		name string
		a    AdapterPlan
		p    backend.Problem
		want Tuning
	}{
		{"its class", hw, decode, tuned},
		{"more keys", hw, backend.Problem{B: 1, H: 32, KVHeads: 8, Nq: 1, Nk: 5000, D: 128, Dv: 128}, defaultTuning},
		{"another group", hw, backend.Problem{B: 1, H: 32, KVHeads: 4, Nq: 1, Nk: 3000, D: 128, Dv: 128}, defaultTuning},
		{"cpu plan", AdapterPlan{loopCap: LoopBudget, Tune: defaultTuning, File: hw.File}, decode, defaultTuning},
		{"no file", hw.WithTune(defaultTuning), decode, defaultTuning},
	} {
		s := ShapeOf(c.p)
		if got := c.a.ForShape(c.a.FusedFor(mem, s), s).Tune; got != c.want {
			t.Errorf("%s: ForShape's sizes %q; want %q", c.name, got, c.want)
		}
	}
	if got := hw.File.String(); got != class.String()+": decode.keys=128" {
		t.Errorf("Tuned.String() = %q", got)
	}
}

// TestFingerprint checks that sizes a problem does not need give the
// same dispatches as the defaults (a sweep times one of them) and sizes
// it uses give others.
func TestFingerprint(t *testing.T) {
	const mem = 48 << 10
	hw, _ := Choose("hardware", gputypes.DeviceTypeDiscreteGPU)
	s := ShapeOf(backend.Problem{B: 1, H: 8, KVHeads: 8, Nq: 1, Nk: 4096, D: 128, Dv: 128}) // one head a group, one row
	_, def := hw.Fingerprint(mem, s)
	for _, c := range []struct {
		set  string
		same bool
	}{
		{"decode.rows=4", true},   // one row of one head is all there is
		{"tile.wg=64", true},      // another kernel's
		{"decode.keys=16", false}, // 64, and 32, keys of a head dim of 128 fill decodeMem
		{"decode.keys=32", true},
		{"merge.lanes=8", false},
		{"decode.target=1024", false},
	} {
		tn, err := parseTuning(c.set)
		if err != nil {
			t.Fatal(err)
		}
		k, fp := hw.WithTune(tn).Fingerprint(mem, s)
		if k != KernelDecode || (fp == def) != c.same {
			t.Errorf("%s: kernel %s, the defaults' dispatches %v; want %s, %v", c.set, k, fp == def, KernelDecode, c.same)
		}
	}
}

// testKey is the key the reader's tests read for.
var testKey = TuneKey{Adapter: "llvmpipe (LLVM 15.0.6, 256 bits)", VendorID: 0x10005, Driver: "llvmpipe", DriverInfo: "Mesa 22.3.6",
	Binding: "oliverbestmann/webgpu v1.36.0, wgpu-native 29.0.1.1", Kernels: "abc"}

// testFile is a good file for testKey, as text, with the replacements
// in repl made.
func testFile(repl ...string) []byte {
	f := TuneFile{Format: TuneFormat, Key: testKey, Classes: []TunedClass{
		{Class: Class{KernelDecode, 1, 4, 128, 128, 4096}, Tune: "decode.keys=128,merge.lanes=16", Shapes: []string{"heads=32,kvheads=8"}, Timer: "device", DefaultS: 1e-4, TunedS: 9e-5},
		{Class: Class{KernelTile, 4096, 1, 128, 128, 4096}, Tune: "tile.wg=256,split.target=128"},
		{Class: Class{KernelLoop, 4096, 1, 64, 64, 4096}, Tune: ""},
	}}
	b, err := EncodeTuned(f)
	if err != nil {
		panic(err)
	}
	return []byte(strings.NewReplacer(repl...).Replace(string(b)))
}

// TestReadTuned checks every reason the reader refuses a file, each
// wrapping ErrTuneFile and saying why, and what it reads from a good one.
func TestReadTuned(t *testing.T) {
	good := testFile()
	for _, c := range []struct {
		name string
		data []byte
		err  string
	}{
		{"good", good, ""},
		{"empty", nil, "EOF"},
		{"truncated", good[:len(good)/2], "unexpected EOF"},
		{"not an object", []byte(`[1, 2]`), "cannot unmarshal array"},
		{"trailing data", append(slices.Clone(good), []byte("{}")...), "data after the file's object"},
		{"unknown field", testFile(`"format"`, `"extra": 1, "format"`), `unknown field "extra"`},
		{"format", testFile(TuneFormat, "attn gpu tuning 0"), `format "attn gpu tuning 0"`},
		{"format 1", testFile(TuneFormat, "attn gpu tuning 1", `"kernels"`, `"attn": "(devel)", "kernels"`), `format "attn gpu tuning 1", an earlier attn's, keyed by attn's module version`},
		{"format 1 without its fields", testFile(TuneFormat, "attn gpu tuning 1"), "run attn tune again"},
		{"attn version", testFile(`"kernels"`, `"attn": "(devel)", "kernels"`), `unknown field "attn"`},
		{"adapter", testFile("llvmpipe (LLVM", "NVIDIA (LLVM"), `adapter "NVIDIA (LLVM 15.0.6, 256 bits)", this is "llvmpipe`},
		{"device id", testFile(`"device_id": 0`, `"device_id": 7`), `device id "7", this is "0"`},
		{"driver", testFile("Mesa 22.3.6", "Mesa 25.0"), `driver info "Mesa 25.0"`},
		{"binding", testFile("v1.36.0", "v1.37.0"), "binding"},
		{"kernels", testFile(`"abc"`, `"abd"`), `kernels "abd"`},
		{"kernel", testFile(`"fusedloop"`, `"fused"`), `kernel "fused": want fuseddecode`},
		{"rows", testFile(`"nq": 1,`, `"nq": 3,`), "nq=3: want a power of two"},
		{"keys", testFile(`"nk": 4096,`, `"nk": 0,`), "nk=0: out of range"},
		{"head dim", testFile(`"d": 64,`, `"d": -64,`), "d=-64: out of range"},
		{"huge group", testFile(`"g": 4,`, `"g": 1000000,`), "g=1000000: out of range"},
		{"twice", testFile(`"d": 64,`, `"d": 128,`, `"dv": 64,`, `"dv": 128,`, `"fusedloop"`, `"fusedtile"`), "listed twice"},
		{"out of range", testFile("decode.keys=128", "decode.keys=512"), "decode.keys=512: want a power of two from"},
		{"not a power of two", testFile("decode.keys=128", "decode.keys=96"), "decode.keys=96"},
		{"unknown knob", testFile("decode.keys=128", "decode.tiles=128"), `"decode.tiles=128" is not name=value`},
		{"knob twice", testFile("decode.keys=128", "decode.keys=128,decode.keys=64"), "decode.keys is set twice"},
		{"another kernel's knob", testFile("tile.wg=256", "decode.wg=128"), "sets decode.wg, which does not size fusedtile"},
		{"step.flush", testFile("tile.wg=256", "step.flush=8"), "sets step.flush"},
		{"too large", append(slices.Clone(good), bytes.Repeat([]byte(" "), maxTuneFile)...), "more than 1048576 bytes"},
	} {
		tn, err := ReadTuned(bytes.NewReader(c.data), "f.json", testKey)
		if c.err != "" {
			if !errors.Is(err, ErrTuneFile) || !strings.Contains(err.Error(), c.err) || tn != nil {
				t.Errorf("%s: %v, %v; want nothing and an error wrapping ErrTuneFile that says %q", c.name, tn, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want := "fuseddecode nq≤1 g=4 d=128 dv=128 nk≤4096: decode.keys=128,merge.lanes=16; fusedtile nq≤4096 g=1 d=128 dv=128 nk≤4096: split.target=128,tile.wg=256; fusedloop nq≤4096 g=1 d=64 dv=64 nk≤4096: the defaults (swept, none faster)"
		if tn.Len() != 3 || tn.Path != "f.json" || tn.String() != want {
			t.Errorf("read %d classes from %s: %s; want 3: %s", tn.Len(), tn.Path, tn, want)
		}
	}
}

// FuzzReadTuned feeds the reader damaged files: it must never panic, and
// whatever it accepts must be classes a sweep writes with settings in
// the knobs' ranges, which it reads the same again once written.
func FuzzReadTuned(f *testing.F) {
	f.Add(testFile())
	f.Add(testFile("decode.keys=128", "decode.keys=512"))
	f.Add(testFile(`"nq": 1,`, `"nq": 3,`))
	f.Add([]byte(`{"format":"` + TuneFormat + `","key":{},"classes":[{"kernel":"fusedloop","nq":1,"g":1,"d":1,"dv":1,"nk":1,"tune":"loop.unroll=2"}]}`))
	f.Add([]byte(`{"classes":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, key := range []TuneKey{testKey, {}} {
			tn, err := ReadTuned(bytes.NewReader(data), "f", key)
			if err != nil {
				if !errors.Is(err, ErrTuneFile) || tn != nil {
					t.Fatalf("%v, %v: want nothing and an error wrapping ErrTuneFile", tn, err)
				}
				continue
			}
			var again TuneFile
			again.Format, again.Key = TuneFormat, key
			for _, c := range tn.order {
				if err := c.check(); err != nil {
					t.Fatalf("accepted class %v: %v", c, err)
				}
				set := tn.classes[c]
				for _, k := range knobs {
					v := *k.field(&set)
					if v < k.lo || v > k.hi || v&(v-1) != 0 {
						t.Fatalf("accepted %s=%d for %v, out of its range", k.name, v, c)
					}
					if v != *k.field(&defaultTuning) && !knobSizes(k.name, c.Kernel) {
						t.Fatalf("accepted %s for %v, whose kernel it does not size", k.name, c)
					}
				}
				again.Classes = append(again.Classes, TunedClass{Class: c, Tune: set.String()})
			}
			b, err := EncodeTuned(again)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ReadTuned(bytes.NewReader(b), "f", key)
			if err != nil || back.String() != tn.String() {
				t.Fatalf("written again and read: %v, %v; want %v", back, err, tn)
			}
		}
	})
}

// TestTuneKeyFileName checks the cache file's name: the adapter's name
// in safe characters, and a digest that differs for every field of the
// key.
func TestTuneKeyFileName(t *testing.T) {
	name := testKey.FileName()
	if !strings.HasPrefix(name, "llvmpipe-llvm-15-0-6-256-bits-") || !strings.HasSuffix(name, ".json") || name != testKey.FileName() {
		t.Errorf("FileName() = %q", name)
	}
	for i, k := range []TuneKey{{Adapter: "a/../../b"}, {Adapter: "ü"}, {}} {
		n := k.FileName()
		if strings.ContainsAny(strings.TrimSuffix(n, ".json"), "/\\. ") {
			t.Errorf("key %d: FileName() = %q: not one safe name", i, n)
		}
	}
	seen := map[string]bool{name: true}
	for i, k := range []TuneKey{
		{Adapter: testKey.Adapter}, func() TuneKey { k := testKey; k.DeviceID = 1; return k }(),
		func() TuneKey { k := testKey; k.Binding = "gogpu/wgpu v0.31.5"; return k }(), func() TuneKey { k := testKey; k.Kernels = "x"; return k }(),
	} {
		if n := k.FileName(); seen[n] {
			t.Errorf("key %d: FileName() = %q, another key's", i, n)
		}
		seen[k.FileName()] = true
	}
	if KernelsID() == "" || KernelsID() != KernelsID() || ModuleVersion() == "" {
		t.Errorf("KernelsID %q, ModuleVersion %q", KernelsID(), ModuleVersion())
	}
}

// TestTuneKeyVersion: a tuning file written under one module version of
// attn is read under another. attn tune in a clone is "(devel)", a
// program that requires attn "v0.0.0 => …" or a tag, over the same
// kernels: the key, and the file's name in the cache directory, must be
// the same for each.
func TestTuneKeyVersion(t *testing.T) {
	saved := ModuleVersion
	t.Cleanup(func() { ModuleVersion = saved })
	adapter := gputypes.AdapterInfo{Name: "llvmpipe (LLVM 15.0.6, 256 bits)", VendorID: 0x10005, Driver: "llvmpipe", DriverInfo: "Mesa 22.3.6"}
	const binding = "oliverbestmann/webgpu v1.36.0, wgpu-native 29.0.1.1"
	versions := []string{"(devel)", "v0.0.0 => /home/u/attn", "v1.4.0", "(devel) 0123abcd modified"}
	var files [][]byte
	var keys []TuneKey
	for _, v := range versions {
		ModuleVersion = func() string { return v }
		k := KeyOf(adapter, binding)
		keys = append(keys, k)
		b, err := EncodeTuned(TuneFile{Format: TuneFormat, Key: k, Writer: "attn " + ModuleVersion(), Classes: []TunedClass{
			{Class: Class{KernelLaneDecode, 1, 4, 32, 32, 512}, Tune: "decode.batch=4"}}})
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, b)
	}
	for i, v := range versions {
		ModuleVersion = func() string { return v }
		k := KeyOf(adapter, binding)
		if k != keys[0] || k.FileName() != keys[0].FileName() {
			t.Errorf("under %q the key is %+v (file %s); under %q %+v (file %s)", v, k, k.FileName(), versions[0], keys[0], keys[0].FileName())
		}
		for j, f := range files {
			if _, err := ReadTuned(bytes.NewReader(f), "f.json", k); err != nil {
				t.Errorf("a file written under %q, read under %q: %v", versions[j], versions[i], err)
			}
		}
	}
	if k := keys[0]; k.Adapter != adapter.Name || k.VendorID != adapter.VendorID || k.Driver != adapter.Driver || k.DriverInfo != adapter.DriverInfo ||
		k.Binding != binding || k.Kernels != KernelsID() {
		t.Errorf("KeyOf = %+v; want the adapter's fields, the binding and KernelsID", k)
	}
}

// TestParseTuneShapes checks the shapes a sweep reads: the default sets,
// name=value pairs over the defaults, and errors wrapping ErrShape that
// name the spec.
func TestParseTuneShapes(t *testing.T) {
	for _, c := range []struct {
		specs []string
		want  []string
		err   string
	}{
		{specs: nil, want: append(slices.Clone(tuneSets["decode"]), tuneSets["prefill"]...)},
		{specs: []string{"decode"}, want: tuneSets["decode"]},
		{specs: []string{" Prefill "}, want: tuneSets["prefill"]},
		{specs: []string{"heads=8"}, want: []string{"heads=8,kvheads=8,d=128,dv=128,n=4096,nq=1,dtype=f32"}},
		{specs: []string{"heads=32, kvheads=8, d=64, dv=32, n=100, nq=3, dtype=bf16", "d=64,heads=32,kvheads=8,dv=32,n=100,nq=3,dtype=bf16"},
			want: []string{"heads=32,kvheads=8,d=64,dv=32,n=100,nq=3,dtype=bf16"}},
		{specs: []string{"dtype=q4,d=64"}, want: []string{"heads=32,kvheads=32,d=64,dv=64,n=4096,nq=1,dtype=q4"}},
		{specs: []string{"heads=6,kvheads=4"}, err: "heads=6 is not a multiple of kvheads=4"},
		{specs: []string{"d=0"}, err: "d=0: want a whole number"},
		{specs: []string{"n=x"}, err: "n=x"},
		{specs: []string{"dtype=f64"}, err: `unknown dtype "f64"`},
		// A cache's q8 and q4 rows take whole blocks at any head dim, and
		// so do a sweep's.
		{specs: []string{"dtype=q8,d=40"}, want: []string{"heads=32,kvheads=32,d=40,dv=40,n=4096,nq=1,dtype=q8"}},
		{specs: []string{"dtype=q4,d=72,dv=8"}, want: []string{"heads=32,kvheads=32,d=72,dv=8,n=4096,nq=1,dtype=q4"}},
		{specs: []string{"heads"}, err: `"heads" is not name=value`},
		{specs: []string{"b=2"}, err: `"b=2" is not name=value`},
		{specs: []string{"n=1073741824,d=65536"}, err: "more than"},
		{specs: []string{"decode", "nq=1,nq=2"}, err: "nq is set twice"},
	} {
		got, err := ParseTuneShapes(c.specs)
		if c.err != "" {
			if !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseTuneShapes(%q): %v; want an error wrapping ErrShape that says %q", c.specs, err, c.err)
			}
			continue
		}
		var s []string
		for _, x := range got {
			s = append(s, x.String())
			if p := x.Problem(); p.H != x.Heads || p.KVHeads != x.KVHeads || p.Nq != x.NQ || p.Nk != x.N || p.D != x.D || p.Dv != x.DV {
				t.Errorf("%v: Problem() = %+v", x, p)
			}
		}
		var want []string // every value named
		for _, w := range c.want {
			sh, err := parseTuneShape(w)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, sh.String())
		}
		if err != nil || !slices.Equal(s, want) {
			t.Errorf("ParseTuneShapes(%q) = %q, %v; want %q", c.specs, s, err, want)
		}
	}
}
