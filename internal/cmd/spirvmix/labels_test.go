package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attn-go/attn/internal/spirvmix"
)

// TestPipelineLabels reads an excerpt of a real trace log (its stray
// bytes after each message included), with two pipelines destroyed in
// the other order than created, then one more that reuses an id's index
// and one never destroyed.
func TestPipelineLabels(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "trace.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, perModule, err := pipelineLabels(f)
	if err != nil || perModule {
		t.Fatal(err, perModule)
	}
	want := []string{
		"fuseddecode WG=256 HG=4 NQ=1 TK=32 D=128 DV=128 VR=0 UN=1 PV=64 KW=4 k=q8 v=q8 sg main",
		"merge WG=64 L=32 UN=8 main",
		"copy WG=64 o=f16 main",
		"",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pipelineLabels = %q, want %q", got, want)
	}
}

// TestModuleLabels reads the gogpu build's own lines, a label with a
// quote in it among them, between lines of its binding's slog output.
func TestModuleLabels(t *testing.T) {
	log := `time=2026-11-28T12:00:00Z level=DEBUG msg="vulkan: shader module compiled" source=WGSL spirvWords=1207
[wg] shader module "fused WG=64 R=2 D=64 DV=64 NQ=0 VR=0 main"
[wg] shader module "a \"quoted\" label"
level=DEBUG msg="Device::create_compute_pipeline -> Id(0,1)"
[wg] shader module "merge WG=64 L=1 UN=1 main"
`
	got, perModule, err := pipelineLabels(strings.NewReader(log))
	want := []string{"fused WG=64 R=2 D=64 DV=64 NQ=0 VR=0 main", `a "quoted" label`, "merge WG=64 L=1 UN=1 main"}
	if err != nil || !perModule || !reflect.DeepEqual(got, want) {
		t.Errorf("pipelineLabels = %q, %t, %v; want %q, true", got, perModule, err, want)
	}
}

func TestModules(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"sh51", "sh9", "sh44", "sh44.spvasm", "capture.gfxr", "shx"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := modules(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sh9", "sh44", "sh51"}; !reflect.DeepEqual(got, want) {
		t.Errorf("modules = %q, want %q (by handle, as numbers)", got, want)
	}
}

func TestCheckPair(t *testing.T) {
	mix := func(x, y, z int) *spirvmix.Report {
		return &spirvmix.Report{Entries: []spirvmix.EntryPoint{{Name: "main", LocalSize: [3]int{x, y, z}}}}
	}
	tests := []struct {
		label string
		mix   *spirvmix.Report
		ok    bool
	}{
		{"fuseddecode WG=256 HG=4 main", mix(256, 1, 1), true},
		{"fuseddecode WG=256 HG=4 main", mix(64, 1, 1), false},
		{"scores WX=16 WY=16 main", mix(16, 16, 1), true},
		{"merge WG=64", mix(8, 8, 1), true},
		{"", mix(64, 1, 1), true},
	}
	for _, tt := range tests {
		err := checkPair(kernel{Label: tt.label, Module: "sh1", Mix: tt.mix})
		if (err == nil) != tt.ok {
			t.Errorf("checkPair(%q, %v) = %v, want ok %v", tt.label, tt.mix.Entries[0].LocalSize, err, tt.ok)
		}
	}
}

func TestRunFlags(t *testing.T) {
	fixtures := filepath.Join("..", "..", "spirvmix", "testdata")
	tests := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"list", []string{"-list"}, 0, "decode-q4", ""},
		{"unknown workload", []string{"nosuch"}, 2, "", `no workload "nosuch"`},
		{"asm without files", []string{"-asm"}, 2, "", "-asm needs spirv-dis files"},
		{"asm table", []string{"-asm", filepath.Join(fixtures, "nested.spvasm")}, 0, "L2*", ""},
		{"asm summary", []string{"-summary", "-asm", filepath.Join(fixtures, "nested.spvasm")}, 0, "| files | `nested.spvasm` | 3, 3 | 4, 3 | L2 in L1 | 12 |", ""},
		{"asm json", []string{"-json", "-asm", filepath.Join(fixtures, "copy_f16.spvasm")}, 0, `"counter_instrs": 10`, ""},
		{"asm missing file", []string{"-asm", filepath.Join(fixtures, "none.spvasm")}, 1, "", "none.spvasm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut strings.Builder
			code := run(tt.args, &out, &errOut)
			if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errOut.String(), tt.err) {
				t.Errorf("run(%q) = %d\nstdout:\n%s\nstderr:\n%s\nwant %d, stdout with %q, stderr with %q",
					tt.args, code, out.String(), errOut.String(), tt.code, tt.out, tt.err)
			}
		})
	}
}
