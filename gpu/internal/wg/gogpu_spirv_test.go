//go:build gogpu && !nogpu

package wg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zeroingStores counts the OpStores of a null constant into a Workgroup
// variable in words, a SPIR-V module, wherever they are.
func zeroingStores(t *testing.T, words []uint32) int {
	t.Helper()
	n, _ := workgroupStores(t, words)
	return n
}

// workgroupStores counts the OpStores into a whole Workgroup variable in
// words, a SPIR-V module: those of a null constant, and all.
func workgroupStores(t *testing.T, words []uint32) (zeroing, all int) {
	t.Helper()
	workgroup, null := map[uint32]bool{}, map[uint32]bool{}
	for at := 5; at < len(words); at += int(words[at] >> 16) {
		op, argc := words[at]&0xffff, int(words[at]>>16)-1
		if argc < 0 {
			t.Fatalf("a zero-length instruction at word %d", at)
		}
		args := words[at+1 : at+1+argc]
		switch {
		case op == opVariable && argc >= 3 && args[2] == storageWorkgroup:
			workgroup[args[1]] = true
		case op == opConstantNull && argc >= 2:
			null[args[1]] = true
		case op == opStore && argc >= 2 && workgroup[args[0]]:
			all++
			if null[args[1]] {
				zeroing++
			}
		}
	}
	return zeroing, all
}

// TestDropZeroing compiles every kernel of the shaders package's goldens
// with gogpu/naga (each one without f16 must compile) and checks that dropZeroing leaves no workgroup
// zeroing store in any of them and drops each one the polyfill wrote,
// and nothing else: one instruction a store. A kernel whose own code
// stores a zero into workgroup memory would fail it (the stores dropped
// are told apart by the polyfill's form, which the hand-written module
// below holds to).
func TestDropZeroing(t *testing.T) {
	files, err := filepath.Glob("../shaders/testdata/*.wgsl.golden")
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	compiled, zeroed := 0, 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := nagaSPIRV(string(src))
		if err != nil {
			// Only f16 may be refused (validated without optional
			// capabilities); every other kernel is one the gogpu build
			// runs, so a refusal is a gap the kernel must work around
			// (TestCompilerGaps names those known).
			if strings.Contains(string(src), "enable f16;") {
				t.Logf("%s: gogpu/naga refuses its f16: %v", filepath.Base(f), err)
			} else {
				t.Errorf("%s: gogpu/naga refuses it: %v", filepath.Base(f), err)
			}
			continue
		}
		compiled++
		before := zeroingStores(t, raw)
		out, dropped, err := dropZeroing(raw)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		if after := zeroingStores(t, out); after != 0 || dropped != before {
			t.Errorf("%s: %d zeroing stores, %d dropped, %d left", filepath.Base(f), before, dropped, after)
		}
		if strings.Contains(string(src), "var<workgroup>") != (before > 0) {
			t.Errorf("%s: %d zeroing stores; want some exactly where the kernel has workgroup memory", filepath.Base(f), before)
		}
		if len(raw)-len(out) != 3*dropped {
			t.Errorf("%s: %d words fewer for %d stores dropped; want 3 a store", filepath.Base(f), len(raw)-len(out), dropped)
		}
		if dropped > 0 {
			zeroed++
		}
	}
	if compiled < 60 || zeroed < 30 {
		t.Errorf("%d goldens compiled, %d with zeroing dropped; want at least 60 and 30", compiled, zeroed)
	}
	t.Logf("%d of %d goldens compiled, %d with workgroup zeroing dropped", compiled, len(files), zeroed)
}

// TestDropZeroingKeeps: a kernel's own stores into workgroup memory stay,
// a zero array too, while the polyfill's go; a module without workgroup
// memory comes back as it was.
func TestDropZeroingKeeps(t *testing.T) {
	const src = `@group(0) @binding(0) var<storage, read_write> o: array<f32>;
var<workgroup> a: array<f32, 64>;
var<workgroup> b: u32;
@compute @workgroup_size(64) fn main(@builtin(local_invocation_index) i: u32) {
	if (i == 0u) {
		a = array<f32, 64>();
		b = 7u;
	}
	workgroupBarrier();
	a[i] = f32(i + b);
	workgroupBarrier();
	o[i] = a[63u - i];
}
`
	raw, err := nagaSPIRV(src)
	if err != nil {
		t.Fatal(err)
	}
	zeroing, all := workgroupStores(t, raw)
	out, dropped, err := dropZeroing(raw)
	if err != nil {
		t.Fatal(err)
	}
	// The polyfill's two stores go; the kernel's own two stay.
	if z, a := workgroupStores(t, out); zeroing != 2 || all != 4 || dropped != 2 || z != 0 || a != 2 {
		t.Errorf("stores into workgroup variables: %d (%d zeroing) before, %d dropped, %d (%d zeroing) after; want 4 (2), 2, 2 (0)", all, zeroing, dropped, a, z)
	}
	plain, err := nagaSPIRV("@group(0) @binding(0) var<storage, read_write> o: array<f32>;\n@compute @workgroup_size(1) fn main() { o[0] = 1.0; }\n")
	if err != nil {
		t.Fatal(err)
	}
	if out, dropped, err := dropZeroing(plain); err != nil || dropped != 0 || len(out) != len(plain) {
		t.Errorf("a module without workgroup memory: %d dropped, %d words of %d, %v", dropped, len(out), len(plain), err)
	}
	if _, _, err := dropZeroing(raw[:4]); err == nil {
		t.Error("4 words: no error")
	}
}
