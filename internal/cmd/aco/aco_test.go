package main

import (
	"bytes"
	"strings"
	"testing"
)

// acostatsOut is acostats's output for two modules on Mesa 25.0.7's
// RADV (lanedecode.wgsl and merge.wgsl, 2026-11-29), and a third that
// did not compile.
const acostatsOut = `{"device": "Null hardware (RADV NAVI31)", "driver_version": 104857607, "api_version": "1.4.305"}
{"file": "/tmp/t/sh88", "entry": "main", "executables": [{"name": "compute", "subgroup_size": 64, "stats": {"Driver pipeline hash": 3705094236657888571, "SGPRs": 128, "VGPRs": 252, "Spilled SGPRs": 5, "Spilled VGPRs": 0, "Code size": 21468, "LDS size": 5120, "Scratch size": 0, "Subgroups per SIMD": 6, "Instructions": 4420, "Latency": 46905, "Inverse Throughput": 15635, "VALU": 2018, "SALU": 920, "VMEM": 128, "SMEM": 219}}]}
{"file": "/tmp/t/sh95", "entry": "main", "executables": [{"name": "compute", "subgroup_size": 32, "stats": {"SGPRs": 128, "VGPRs": 72, "Spilled SGPRs": 0, "Spilled VGPRs": 0, "LDS size": 5120, "Scratch size": 0, "Subgroups per SIMD": 16, "VALU": 455}}]}
{"file": "/tmp/t/bad", "entry": "main", "error": "vkCreateComputePipelines", "vkresult": -3}
`

func TestParseStats(t *testing.T) {
	dev, mods, err := ParseStats(strings.NewReader(acostatsOut))
	if err != nil {
		t.Fatal(err)
	}
	if dev != "Null hardware (RADV NAVI31)" || len(mods) != 3 {
		t.Fatalf("device %q, %d modules", dev, len(mods))
	}
	r := &Row{Kernel: "lanedecode WG=256 L=8 sg"}
	r.fill(mods[0])
	if r.VGPRs() != 252 || r.Spills() != 5 || r.LDS() != 5120 || r.Wave != 64 || r.stat("Subgroups per SIMD") != 6 || r.Error != "" {
		t.Errorf("lanedecode: %+v", r)
	}
	if _, ok := r.Stats["Driver pipeline hash"]; ok {
		t.Error("the driver's hash kept")
	}
	if mods[1].wave != 32 || mods[2].err != "vkCreateComputePipelines (VkResult -3)" {
		t.Errorf("merge %+v, bad %+v", mods[1], mods[2])
	}
	for _, bad := range []string{"", `{"error": "vkCreateInstance", "vkresult": -9}`, "not json"} {
		if _, _, err := ParseStats(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseStats(%q): no error", bad)
		}
	}
}

func TestEntryOf(t *testing.T) {
	both := []entryPoint{{"stats"}, {"normalize"}}
	for _, c := range []struct {
		label   string
		entries []entryPoint
		want    string
	}{
		{"softmax WG=256 PER=32 normalize", both, "normalize"},
		{"softmax WG=256 PER=32 stats", both, "stats"},
		{"merge WG=256 main", []entryPoint{{"main"}}, "main"},
		{"odd label", []entryPoint{{"go"}}, "go"},
		{"none", nil, "main"},
	} {
		if got := entryOf(c.label, c.entries); got != c.want {
			t.Errorf("entryOf(%q) = %q, want %q", c.label, got, c.want)
		}
	}
}

// row is a kernel of the h200 plan's default build with vgprs, spills
// (VGPRs) and lds.
func row(kernel, workload string, vgprs, spills, lds int) *Row {
	return &Row{Target: "h200", Binding: "wgpu-native", Kernel: kernel, Entry: "main", Workloads: []string{workload}, Wave: 64,
		Stats: map[string]float64{"VGPRs": float64(vgprs), "Spilled VGPRs": float64(spills), "LDS size": float64(lds), "SGPRs": 128, "Subgroups per SIMD": 6, "VALU": 100}}
}

func TestBudgets(t *testing.T) {
	const file = `# comment
h200 wgpu-native decode-f32 lanedecode vgprs=120
h200 wgpu-native backward-d128 backkv vgprs=256 spills=517
h200 wgpu-native prefill-d128 fusedtile vgprs=192 lds=49664  # past 48 KiB
h200 wgpu-native staged scores vgprs=130
`
	b, err := ParseBudgets(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		r    *Row
		fail bool
		text string
	}{
		{row("merge WG=256", "decode-f32", 60, 0, 5120), false, "ok"},
		{row("merge WG=256", "decode-f32", 72, 0, 5120), true, "72 VGPRs, past its budget of 64"},
		{row("lanedecode L=16", "decode-f32", 120, 0, 4608), false, "over budget, at its allowance"},
		{row("lanedecode L=16", "decode-f32", 128, 0, 4608), true, "past its allowance of 120"},
		{row("lanedecode L=16", "decode-f32", 100, 0, 4608), false, "lower it"},
		{row("lanedecode L=16", "decode-f32", 64, 0, 4608), false, "its allowance can go"},
		{row("lanedecode L=16", "decode-q8", 120, 0, 4608), true, "past its budget of 64"}, // another workload: not listed
		{row("fusedloop", "prefill-d64", 128, 0, 16896), false, "ok"},
		{row("fusedloop", "prefill-d64", 96, 1, 16896), true, "spills 1"},
		{row("backkv L=1", "backward-d128", 256, 517, 33280), false, "at its allowance"},
		{row("backkv L=1", "backward-d128", 256, 600, 33280), true, "spills 600, past its allowance of 517"},
		{row("fusedtile", "prefill-d128", 192, 0, 49664), false, "LDS"},
		{row("fusedtile", "prefill-d128", 192, 0, 50176), true, "50176 bytes of LDS, past the h200 plan's 49152"},
		{row("backq", "backward-d128", 120, 0, 50176), true, "past the h200 plan's 49152"},
		{&Row{Target: "h200", Binding: "wgpu-native", Kernel: "context", Workloads: []string{"staged"}, Error: "no executable"}, true, "did not compile"},
	}
	for _, c := range cases {
		b.Check([]*Row{c.r})
		v := c.r.Verdict
		if v.Fail != c.fail || !strings.Contains(v.Text, c.text) {
			t.Errorf("%s in %v, %d VGPRs, %d spills, %d LDS: %+v; want fail %t, %q", c.r.Kernel, c.r.Workloads, c.r.VGPRs(), c.r.Spills(), c.r.LDS(), *v, c.fail, c.text)
		}
	}
	// A module several workloads share takes the largest allowance
	// listed under any of them.
	shared := row("lanedecode", "decode-q8", 120, 0, 4608)
	shared.Workloads = append(shared.Workloads, "decode-f32")
	b.Check([]*Row{shared})
	if shared.Verdict.Fail {
		t.Errorf("shared module: %+v", *shared.Verdict)
	}

	for _, bad := range []string{
		"h200 wgpu-native decode-f32 lanedecode",
		"h200 wgpu-native decode-f32 lanedecode spills=3",
		"h200 wgpu-native decode-f32 lanedecode vgprs=x",
		"h200 wgpu-native decode-f32 lanedecode vgprs=1 regs=2",
		"h200 wgpu-native decode-f32 lanedecode vgprs=1\nh200 wgpu-native decode-f32 lanedecode vgprs=2",
	} {
		if _, err := ParseBudgets(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseBudgets(%q): no error", bad)
		}
	}
}

// TestSeedBudgets: the allowances SeedBudgets writes for today's kernels
// pass them, each kernel within its budget needs none, and a kernel
// grown past its seed fails.
func TestSeedBudgets(t *testing.T) {
	rows := []*Row{
		row("merge", "decode-f32", 60, 0, 5120),
		row("lanedecode", "decode-f32", 120, 0, 4608),
		row("backkv", "backward-d128", 256, 517, 33280),
		row("fusedtile", "prefill-d128", 192, 0, 49664),
	}
	rows[1].Workloads = append(rows[1].Workloads, "sparse")
	seed := SeedBudgets(rows)
	want := "h200 wgpu-native decode-f32 lanedecode vgprs=120\nh200 wgpu-native sparse lanedecode vgprs=120\n" +
		"h200 wgpu-native backward-d128 backkv vgprs=256 spills=517\nh200 wgpu-native prefill-d128 fusedtile vgprs=192 lds=49664\n"
	if seed != want {
		t.Errorf("SeedBudgets:\n%s\nwant\n%s", seed, want)
	}
	b, err := ParseBudgets(strings.NewReader(seed))
	if err != nil {
		t.Fatal(err)
	}
	b.Check(rows)
	for _, r := range rows {
		if r.Verdict.Fail {
			t.Errorf("%s: %+v", r.Kernel, *r.Verdict)
		}
	}
	rows[2].Stats["VGPRs"] = 200
	rows[2].Stats["Spilled VGPRs"] = 518
	b.Check(rows)
	if !rows[2].Verdict.Fail {
		t.Errorf("backkv spilling 518: %+v", *rows[2].Verdict)
	}
}

// TestMarkdown: a row a kernel and the workloads whose modules have the
// same numbers in every column, a column a plan and build, spills in
// bold, a kernel a build does not run a dash.
func TestMarkdown(t *testing.T) {
	a := row("lanedecode L=16", "decode-f32", 120, 0, 4608)
	a.Workloads = []string{"decode-f32", "sparse", "tree"}
	g := row("fuseddecode", "decode-f32", 120, 0, 20480)
	g.Binding = "gogpu"
	g.Workloads = []string{"decode-f32", "sparse"}
	bk := row("backkv", "backward-d128", 256, 517, 33280)
	bk.Binding, bk.Stats["Scratch size"] = "gogpu", 102400
	rep := &Report{Rows: []*Row{a, g, bk}}
	var buf bytes.Buffer
	rep.WriteMarkdown(&buf)
	want := []string{
		"| kernel | workloads | h200, default | h200, gogpu |",
		"| lanedecode | decode-f32, sparse, tree | 120 / 128 / 0 / 6 / 100 | — |",
		"| fuseddecode | decode-f32, sparse | — | 120 / 128 / 0 / 6 / 100 |",
		"| backkv | backward-d128 | — | 256 / 128 / **517** / 6 / 100, 100 KiB scratch |",
	}
	for _, w := range want {
		if !strings.Contains(buf.String(), w+"\n") {
			t.Errorf("no line %q in\n%s", w, buf.String())
		}
	}
}
