package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/attn-go/attn/backend"
	attncpu "github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// kernelName shortens every way the cpu package names its BLAS, and the
// Versions of points in reports written before points named their kernel.
func TestKernelName(t *testing.T) {
	for _, c := range []struct{ s, want string }{
		{"attn sgemm (AVX-512 8×32 micro-kernel), gonum v0.17.0", "AVX-512 8×32"},
		{"attn sgemm (AVX2+FMA 6×16 micro-kernel), gonum v0.17.0", "AVX2+FMA 6×16"},
		{"gonum v0.17.0 (pure Go)", "gonum pure Go"},
		{"OpenBLAS OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64 via gonum/netlib", "OpenBLAS 0.3.21 Cooperlake"},
		{"OpenBLAS OpenBLAS 0.3.26 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=128 via gonum/netlib", "OpenBLAS 0.3.26 SkylakeX"},
		// A point's Version: the thread count, then the backend's Detail.
		{"2 threads, linux/amd64, go1.26.8, attn sgemm (AVX-512 8×32 micro-kernel), gonum v0.17.0, fused tiles 256×256", "AVX-512 8×32"},
		{"2 threads, linux/amd64, go1.26.8, OpenBLAS OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64 via gonum/netlib, fused tiles 128×256", "OpenBLAS 0.3.21 Cooperlake"},
		{"2 threads, linux/arm64, go1.26.8, gonum v0.17.0 (pure Go), fused tiles 64×128", "gonum pure Go"},
		{"llvmpipe (LLVM 15.0.6, 256 bits), llvmpipe Mesa 25.0.7", ""},
		{"", ""},
	} {
		if got := kernelName(c.s); got != c.want {
			t.Errorf("kernelName(%q) = %q, want %q", c.s, got, c.want)
		}
	}
	for _, info := range []backend.Info{{Kind: backend.KindGPU, Detail: "attn sgemm (AVX-512 8×32 micro-kernel)"}, {Kind: backend.KindCPU}} {
		if got := CPUKernel(info); got != "" {
			t.Errorf("CPUKernel(%+v) = %q, want none", info, got)
		}
	}
}

// buildTags are the -tags the test binary was built with.
func buildTags() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" {
				return s.Value
			}
		}
	}
	return ""
}

// The CPU backend names the kernel this build and this CPU call for: the
// widest of attn's micro-kernels the CPU has, gonum's pure Go under
// -tags purego or off amd64, OpenBLAS under -tags openblas.
func TestCPUKernelOfBackend(t *testing.T) {
	be, err := attncpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	tags := "," + buildTags() + ","
	var want string
	switch {
	case strings.Contains(tags, ",openblas,"):
		want = "OpenBLAS"
	case runtime.GOARCH != "amd64" || strings.Contains(tags, ",purego,"):
		want = "gonum pure Go"
	case cpu.X86.HasAVX512F:
		want = "AVX-512 " // 6×64 on Intel, 8×32 elsewhere
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		want = "AVX2+FMA 6×16"
	default:
		want = "gonum pure Go"
	}
	if got := CPUKernel(be.Info()); !strings.HasPrefix(got, want) {
		t.Errorf("CPUKernel = %q with tags %q and features %v (driver %q); want %q",
			got, buildTags(), cpuFeatures(), be.Info().Adapter.Driver, want)
	}
}

// With GODEBUG=cpu.avx512f=off a CPU with AVX-512 runs the AVX2 kernel,
// and the backend and the machine's features say so. The check runs in a
// child: GODEBUG is read once, at start-up.
func TestCPUKernelGODEBUG(t *testing.T) {
	if os.Getenv("ATTN_BENCH_KERNEL_CHILD") == "1" {
		be, err := attncpu.New()
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close()
		feats, _ := json.Marshal(cpuFeatures())
		os.Stdout.WriteString("kernel=" + CPUKernel(be.Info()) + " features=" + string(feats) + "\n")
		return
	}
	be, err := attncpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if k := CPUKernel(be.Info()); k != "AVX-512 8×32" {
		t.Skipf("this build and CPU run %q, not the AVX-512 kernel", k)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCPUKernelGODEBUG$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ATTN_BENCH_KERNEL_CHILD=1", "GODEBUG=cpu.avx512f=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if want := `kernel=AVX2+FMA 6×16 features={"avx2":true,"avx512_bf16":`; !strings.Contains(string(out), want) ||
		!strings.Contains(string(out), `"avx512f":false`) {
		t.Errorf("with GODEBUG=cpu.avx512f=off the child says\n%s\nwant %s… and avx512f false", out, want)
	}
}

// A sweep on the CPU backend names the kernel it ran on in every output:
// each point, the backend and the machine in the JSON, a CSV column, the
// table's header, the Markdown and the charts' titles.
func TestReportNamesKernel(t *testing.T) {
	be, err := attncpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	kernel := CPUKernel(be.Info())
	if kernel == "" {
		t.Fatalf("the CPU backend names no kernel: %+v", be.Info())
	}
	cfg := Config{Ns: []int{8, 16}, Batches: []int{1}, Heads: []int{1}, KVHeads: []int{0}, Dims: []int{4},
		Causal: []bool{false}, Strategies: []kernels.Strategy{kernels.Fused}, Budget: time.Millisecond, MinRuns: 5, Seed: 1}
	points, err := Run(context.Background(), cfg, []backend.Backend{be}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := NewReport(cfg, []backend.Backend{be}, nil, points)

	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Machine struct {
			CPUFeatures map[string]bool `json:"cpu_features"`
		} `json:"machine"`
		Env      map[string]string `json:"env"`
		Backends []struct {
			CPUKernel string `json:"cpu_kernel"`
		} `json:"backends"`
		Points []struct {
			CPUKernel string  `json:"cpu_kernel"`
			Q1        float64 `json:"q1_s"`
			Q3        float64 `json:"q3_s"`
		} `json:"points"`
	}
	if err := json.Unmarshal(js.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Backends) != 1 || raw.Backends[0].CPUKernel != kernel {
		t.Errorf("JSON backends %+v, want cpu_kernel %q", raw.Backends, kernel)
	}
	for i, pt := range raw.Points {
		if pt.CPUKernel != kernel || !(pt.Q1 > 0 && pt.Q1 <= pt.Q3) {
			t.Errorf("JSON point %d: cpu_kernel %q, quartiles %v, %v; want %q and 0 < q1 ≤ q3", i, pt.CPUKernel, pt.Q1, pt.Q3, kernel)
		}
	}
	if _, ok := raw.Env["GODEBUG"]; !ok {
		t.Error("the JSON's env lacks GODEBUG")
	}
	if runtime.GOARCH == "amd64" {
		for _, f := range []string{"avx2", "fma", "avx512f", "avx512_bf16"} {
			if _, ok := raw.Machine.CPUFeatures[f]; !ok {
				t.Errorf("the JSON's machine.cpu_features %v lacks %s", raw.Machine.CPUFeatures, f)
			}
		}
	}

	rows := csvRows(t, r)
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, row := range rows[1:] {
		if row[col["cpu_kernel"]] != kernel || row[col["q1_s"]] == "" || row[col["q3_s"]] == "" {
			t.Errorf("CSV row %v: cpu_kernel %q, q1_s %q, q3_s %q", row, row[col["cpu_kernel"]], row[col["q1_s"]], row[col["q3_s"]])
		}
	}

	var table bytes.Buffer
	if err := WriteTable(&table, points); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(table.String(), "\n"); first != "attn-cpu kernel: "+kernel {
		t.Errorf("the table's first line is %q, want the kernel %q", first, kernel)
	}
	var md bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(md.String(), "\n"); !strings.Contains(first, "attn-cpu kernel "+kernel) {
		t.Errorf("the Markdown's first line %q does not name the kernel %q", first, kernel)
	}
	for _, c := range Charts {
		p, _, err := r.plot(c)
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Split(p.Title.Text, "\n"); len(lines) < 2 || !strings.Contains(lines[1], "attn-cpu kernel "+kernel) {
			t.Errorf("%s chart's title %q does not name the kernel %q on its second line", c, p.Title.Text, kernel)
		}
	}
}

// A report of attn-bench/1 from before points named their kernel and
// recorded quartiles (a trimmed docs/bench/results.json) still loads; the
// kernel is read from the points' Versions, and the charts draw without
// error bars and say why.
func TestReadReportWithoutKernel(t *testing.T) {
	f, err := os.Open("testdata/report-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ReadReport(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range r.Points {
		want := ""
		if pt.Impl == "attn-cpu" {
			want = "AVX-512 8×32"
		}
		if pt.CPUKernel != "" || pt.KernelName() != want || pt.hasQuartiles() {
			t.Errorf("%s N=%d: CPUKernel %q, KernelName %q, quartiles %v; want \"\", %q, none",
				pt.Impl, pt.N, pt.CPUKernel, pt.KernelName(), pt.hasQuartiles(), want)
		}
	}
	var table bytes.Buffer
	if err := WriteTable(&table, r.Points); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(table.String(), "attn-cpu kernel: AVX-512 8×32\n") {
		t.Errorf("table:\n%s", table.String())
	}
	for _, cf := range r.ChartFiles("png") {
		var buf bytes.Buffer
		if err := r.WriteChartFile(&buf, cf); err != nil || buf.Len() == 0 {
			t.Errorf("%s: %v", cf.Name, err)
		}
	}
	p, _, err := r.plot(ChartGFLOPS)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Title.Text, "no error bars") {
		t.Errorf("GFLOP/s chart of an old report: title %q does not say why it has no error bars", p.Title.Text)
	}

	// A point whose Version names no BLAS is of an unknown kernel.
	pt := Point{Impl: "attn-cpu", Version: "2 threads, some future BLAS"}
	if got := pt.KernelName(); got != UnknownKernel {
		t.Errorf("KernelName of %q = %q, want %q", pt.Version, got, UnknownKernel)
	}
}

func TestParseCPUInfo(t *testing.T) {
	for _, tt := range []struct {
		name, info, want string
		family, model    int
	}{
		{"zen5, two processors", "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n\nprocessor\t: 1\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: Other\n",
			"AMD EPYC (family 26 model 2)", 26, 2},
		{"no family (arm64)", "processor\t: 0\nBogoMIPS\t: 50.00\nmodel name\t: Neoverse\n", "Neoverse", 0, 0},
		{"empty", "", "", 0, 0},
	} {
		name, family, model := parseCPUInfo(tt.info)
		if name != tt.want || family != tt.family || model != tt.model {
			t.Errorf("%s: %q, %d, %d; want %q, %d, %d", tt.name, name, family, model, tt.want, tt.family, tt.model)
		}
	}
}
