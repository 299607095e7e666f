package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/cpu"
)

func TestBenchCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, stderr := runCmd(t, "bench", "-backend", "cpu", "-n", "16,33", "-heads", "2", "-kvheads", "1", "-d", "8",
		"-causal=false,true", "-budget", "1ms", "-min-runs", "2", "-out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := len(cpuRow.FindAllString(stdout, -1)); got != 8 {
		t.Errorf("table has %d cpu rows, want 8:\n%s", got, stdout)
	}
	if strings.Contains(stdout, "gflops: ") || !strings.Contains(stdout, "defined at the end of results.md") {
		t.Errorf("the table prints its glossary, or does not point to it:\n%s", stdout)
	}
	if md, err := os.ReadFile(filepath.Join(out, "results.md")); err != nil || !strings.Contains(string(md), "- **gflops**: ") {
		t.Errorf("results.md lacks the FLOP convention (%v)", err)
	}
	if code, help, _ := runCmd(t, "bench", "-h"); code != 0 || !strings.Contains(help, "\ngflops: ") || !strings.Contains(help, "\nfma_frac: ") {
		t.Errorf("attn bench -h (exit %d) lacks the glossary:\n%s", code, help)
	}
	if !strings.Contains(stderr, "[8 100%") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
	if !strings.Contains(stderr, "attn bench: probe 1 of the ceilings on ") || !strings.Contains(stderr, "attn bench: ceilings, the best of ") ||
		!strings.Contains(stderr, "Sgemm ") || !strings.Contains(stdout, " of roof ") {
		t.Errorf("no probe of the ceilings on stderr (%q) or no \"of roof\" column:\n%s", stderr, stdout)
	}
	r := readResults(t, out)
	if len(r.Points) != 8 || r.Points[7].Status != bench.StatusOK || !r.Points[7].Causal {
		t.Errorf("results.json has %d points, last %+v", len(r.Points), r.Points[len(r.Points)-1])
	}
	if rate := r.Machine.SgemmGFLOPS; !(rate > 0) || rate > 1e6 {
		t.Errorf("machine.sgemm_gflops = %v", rate)
	}
	// The ceilings are the best of the probes before and after the
	// sweep, each recorded.
	if probes := r.Machine.CeilingProbes; len(probes) < bench.ProbesBefore+bench.ProbesAfter || slices.ContainsFunc(probes, func(c bench.Ceilings) bool {
		return c.SgemmGFLOPS > r.Machine.SgemmGFLOPS || c.ReadGBPS > r.Machine.ReadGBPS || !(c.SgemmGFLOPS > 0)
	}) {
		t.Errorf("machine.ceiling_probes %+v against read %v, Sgemm %v", probes, r.Machine.ReadGBPS, r.Machine.SgemmGFLOPS)
	}
	// The FMA peak, where the build has its loop (not -tags purego):
	// above the Sgemm's rate, and a fraction of it for every point.
	if _, err := cpu.FMAKernel(); err != nil {
		if r.Machine.FMAGFLOPS != 0 || !strings.Contains(stderr, "attn bench: FMA peak not measured: ") {
			t.Errorf("no FMA loop (%v), but machine.fma_gflops = %v and stderr %q", err, r.Machine.FMAGFLOPS, stderr)
		}
	} else {
		if rate := r.Machine.FMAGFLOPS; !(rate > 0) || rate > 1e6 || r.Machine.FMAKernel == "" {
			t.Errorf("machine.fma_gflops = %v, fma_kernel %q", rate, r.Machine.FMAKernel)
		}
		for _, pt := range r.Points {
			if !(pt.FMAFrac > 0) {
				t.Errorf("N=%d %s: of FMA %v", pt.N, pt.Strategy, pt.FMAFrac)
			}
		}
		if !strings.Contains(stdout, " of FMA ") {
			t.Errorf("no \"of FMA\" column:\n%s", stdout)
		}
	}
	for _, pt := range r.Points {
		if pt.Intensity <= 0 || pt.RooflineFrac <= 0 || (pt.Bound != bench.BoundCompute && pt.Bound != bench.BoundMemory) {
			t.Errorf("N=%d %s: intensity %v, of roof %v %q", pt.N, pt.Strategy, pt.Intensity, pt.RooflineFrac, pt.Bound)
		}
	}
	for _, pt := range r.Points {
		// Measured in processes of their own (-isolate, the default): a
		// few MiB for the inputs over the runtime, well under this test
		// process's own.
		if pt.PeakRSS <= 0 || pt.MaxErr == nil || pt.Version == "" {
			t.Errorf("isolated point %+v", pt)
		}
	}
	// Every number names the CPU kernel it ran on: each point, the
	// backend, and the table's first line.
	kernel := r.Backends[0].CPUKernel
	if kernel == "" {
		t.Errorf("results.json names no kernel for the CPU backend: %+v", r.Backends)
	}
	for _, pt := range r.Points {
		if pt.CPUKernel != kernel {
			t.Errorf("point N=%d %s ran on kernel %q, the backend names %q", pt.N, pt.Strategy, pt.CPUKernel, kernel)
		}
	}
	if first, _, _ := strings.Cut(stdout, "\n"); first != "attn-cpu kernel: "+kernel {
		t.Errorf("the table's first line is %q, want it to name the kernel %q", first, kernel)
	}
	for _, name := range []string{"results.csv", "results.md", "gflops.png", "memory.png", "gflops-causal.png", "memory-causal.png", "roofline.png", "roofline-causal.png"} {
		if st, err := os.Stat(filepath.Join(out, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}

	// -report redraws everything from the JSON alone.
	again := filepath.Join(t.TempDir(), "again")
	code, stdout2, stderr := runCmd(t, "bench", "-report", filepath.Join(out, "results.json"), "-out", again)
	if code != 0 || stdout2 != stdout {
		t.Errorf("-report: exit %d (%s), table\n%s\nwant\n%s", code, stderr, stdout2, stdout)
	}
	for _, name := range []string{"results.json", "results.csv", "results.md", "gflops.png", "memory-causal.png", "roofline.png"} {
		a, _ := os.ReadFile(filepath.Join(out, name))
		b, err := os.ReadFile(filepath.Join(again, name))
		if err != nil || string(a) != string(b) {
			t.Errorf("-report rewrote %s differently (%v)", name, err)
		}
	}
	if code, _, _ := runCmd(t, "bench", "-report", filepath.Join(out, "results.csv")); code != 1 {
		t.Errorf("-report of a CSV: exit %d, want 1", code)
	}

	for _, bad := range [][]string{
		{"bench", "-n", "0"},
		{"bench", "-heads", "3", "-kvheads", "2"},
		{"bench", "-strategy", "auto"},
		{"bench", "-backend", "tpu"},
		{"bench", "-backend", "none"},
		{"bench", "-causal=maybe"},
		{"bench", "-min-runs", "0"},
	} {
		if code, _, stderr := runCmd(t, bad...); code != 2 {
			t.Errorf("attn %v: exit %d (%s), want 2", bad, code, stderr)
		}
	}
}

// In-process measurement (-isolate=false) gives the same points, and a
// malformed -point is a usage error.
func TestBenchInProcess(t *testing.T) {
	fixedCeilings(t, false)
	code, stdout, stderr := runCmd(t, "bench", "-backend", "cpu", "-n", "8", "-heads", "1", "-d", "4", "-budget", "1ms", "-isolate=false", "-out", "")
	if code != 0 || len(cpuRow.FindAllString(stdout, -1)) != 2 || strings.Count(stdout, "  ok\n") != 2 {
		t.Errorf("exit %d (%s):\n%s", code, stderr, stdout)
	}
	for _, bad := range []string{`{"backend": "cpu"`, `{"backend": "cpu", "color": 1}`, `{"backend": "tpu"}`} {
		if code, _, stderr := runCmd(t, "bench", "-point", bad); code != 2 {
			t.Errorf("-point %s: exit %d (%s), want 2", bad, code, stderr)
		}
	}
}

// A sweep in which no point runs (the staged ops take no q8 K) exits
// non-zero naming why, still writes the table and results.json that say
// why each point did not run, and draws no chart.
func TestBenchNoneRan(t *testing.T) {
	fixedCeilings(t, false)
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "bench", "-backend", "cpu", "-n", "8", "-heads", "1", "-d", "20", "-dtype", "q8",
		"-strategy", "staged", "-budget", "1ms", "-isolate=false", "-out", out)
	if code != 1 || !strings.Contains(stderr, "no point ran (1 unavailable)") || !strings.Contains(stdout, "unavailable: attn: unsupported: cpu: scores") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant exit 1 and the point unavailable", code, stderr, stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); err != nil {
		t.Error(err)
	}
	charts, _ := filepath.Glob(filepath.Join(out, "*.png"))
	if len(charts) != 0 {
		t.Errorf("drew %v with no point that ran", charts)
	}
}

// cpuRow matches a row of the table for an attn-cpu point.
var cpuRow = regexp.MustCompile(`(?m)^ *attn-cpu +(fused|staged) `)

// With GODEBUG=cpu.avx512f=off on a CPU with AVX-512, the points, each
// measured in a process of its own that reads GODEBUG as it starts, run
// on the AVX2 kernel, and the table and results.json say so.
func TestBenchKernelGODEBUG(t *testing.T) {
	fixedCeilings(t, false)
	be, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	k := bench.CPUKernel(be.Info())
	be.Close()
	if !strings.HasPrefix(k, "AVX-512 ") {
		t.Skipf("this build and CPU run %q, not an AVX-512 kernel", k)
	}
	t.Setenv("GODEBUG", "cpu.avx512f=off")
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "bench", "-backend", "cpu", "-n", "16", "-heads", "1", "-d", "8", "-strategy", "fused",
		"-budget", "1ms", "-out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	const want = "AVX2+FMA 6×16"
	if first, _, _ := strings.Cut(stdout, "\n"); first != "attn-cpu kernel: "+want {
		t.Errorf("the table's first line is %q, want the kernel %q", first, want)
	}
	js, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"cpu_kernel": "`+want+`"`) || !strings.Contains(string(js), `"GODEBUG": "cpu.avx512f=off"`) {
		t.Errorf("results.json does not name the kernel %q and GODEBUG:\n%s", want, js)
	}
}

// An unknown peer is refused before anything runs.
func TestBenchUnknownPeer(t *testing.T) {
	code, _, stderr := runCmd(t, "bench", "-backend", "cpu", "-peers", "tensorflow", "-out", "")
	if code == 0 || !strings.Contains(stderr, "tensorflow") {
		t.Errorf("exit %d, stderr %q; want an error naming the peer", code, stderr)
	}
}

// attn bench's variant flags reach every point, measured in processes of
// their own (-isolate) and checked against the reference with the same
// variants; the table, results.json and the CSV name them; GFLOP/s counts
// the window's pairs; bad values are usage errors naming them.
func TestBenchVariants(t *testing.T) {
	fixedCeilings(t, false)
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, stderr := runCmd(t, "bench", "-backend", "cpu", "-n", "40", "-heads", "3", "-d", "8", "-causal",
		"-window", "7,0", "-softcap", "20", "-alibi", "-sinks", "-budget", "1ms", "-min-runs", "2", "-out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	const name = "window 7,0 softcap 20 alibi sinks"
	if got := strings.Count(stdout, name); got != 2 {
		t.Errorf("the table names the variant %d times, want once per point:\n%s", got, stdout)
	}
	if !strings.Contains(stderr, "N=40 "+name) {
		t.Errorf("the progress lines do not name the variant: %q", stderr)
	}
	r := readResults(t, out)
	// Rows 0 … 6 see 1 … 7 keys, the other 33 eight each.
	flops := 3.0 * (28 + 33*8) * 2 * (8 + 8)
	for _, pt := range r.Points {
		if pt.Variant.String() != name || pt.Status != bench.StatusOK || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-5) {
			t.Errorf("%s: variant %q, %s %s, max error %v", pt.Strategy, pt.Variant, pt.Status, pt.Error, pt.MaxErr)
		}
		if d := pt.GFLOPS*pt.MedianS*1e9 - flops; d*d > 1e-6*flops*flops {
			t.Errorf("%s: %v GFLOP/s over %v s counts %v flops, want %v", pt.Strategy, pt.GFLOPS, pt.MedianS, pt.GFLOPS*pt.MedianS*1e9, flops)
		}
		if len(pt.Shape.Problem().ALiBi) != 3 || !pt.ALiBi {
			t.Errorf("%s: ALiBi not recorded", pt.Strategy)
		}
	}
	csv, err := os.ReadFile(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(csv), ",window,softcap,alibi,sinks,") || !strings.Contains(string(csv), `,true,"7,0",20,true,true,`) {
		t.Errorf("CSV does not record the variant:\n%s", csv)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-window", "-3,0"}, "window (-3, 0)"},
		{[]string{"-window", "5"}, `"5" is not L,R`},
		{[]string{"-softcap", "0"}, "softcap 0 caps nothing"},
		{[]string{"-softcap", "-2"}, "softcap -2 must be finite and > 0"},
		{[]string{"-alibi=maybe"}, "-alibi"},
	} {
		code, _, stderr := runCmd(t, append([]string{"bench", "-backend", "cpu", "-out", ""}, bad.args...)...)
		if code != 2 || !strings.Contains(stderr, bad.want) {
			t.Errorf("attn bench %v: exit %d, stderr %q; want 2 and %q", bad.args, code, stderr, bad.want)
		}
	}
}

// attn bench -nq measures the last Nq queries over N keys, GQA and
// causal, in each dtype, each point in a process of its own: the table
// has Nq, GB/s, tok/s and "of BW" columns, results.json every point's
// nq and tokens_per_s and the machine's read_gbps, the CSV an nq
// column; bad values are usage errors naming them.
func TestBenchDecode(t *testing.T) {
	fixedCeilings(t, true)
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, stderr := runCmd(t, "bench", "-backend", "cpu", "-n", "16,33", "-nq", "1,4", "-heads", "4", "-kvheads", "2", "-d", "8",
		"-causal", "-dtype", "f32,f16", "-strategy", "fused", "-budget", "1ms", "-min-runs", "2", "-out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := len(cpuRow.FindAllString(stdout, -1)); got != 8 {
		t.Errorf("table has %d cpu rows, want 8:\n%s", got, stdout)
	}
	for _, col := range []string{" Nq ", " GB/s ", " of BW ", " tok/s "} {
		if !strings.Contains(stdout, col) {
			t.Errorf("the table has no %q column:\n%s", col, stdout)
		}
	}
	if !strings.Contains(stderr, "N=33 Nq=4") || !strings.Contains(stderr, "read bandwidth ") {
		t.Errorf("the progress lines name no Nq or bandwidth: %q", stderr)
	}
	r := readResults(t, out)
	if bw := r.Machine.ReadGBPS; !(bw > 0) || bw > 1e5 {
		t.Errorf("machine.read_gbps = %v", bw)
	}
	for _, pt := range r.Points {
		if pt.Status != bench.StatusOK || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-3) || (pt.Nq != 1 && pt.Nq != 4) || !pt.Causal || pt.KVHeads != 2 {
			t.Errorf("N=%d Nq=%d %s: %s %s, max error %v", pt.N, pt.Nq, pt.DType, pt.Status, pt.Error, pt.MaxErr)
		}
		if want := float64(pt.Nq) / pt.MedianS; pt.TokensPerS < want*(1-1e-9) || pt.TokensPerS > want*(1+1e-9) {
			t.Errorf("N=%d Nq=%d: %v tokens/s, want %v", pt.N, pt.Nq, pt.TokensPerS, want)
		}
		if pt.ReadBWFrac <= 0 {
			t.Errorf("N=%d Nq=%d: no fraction of the read bandwidth", pt.N, pt.Nq)
		}
	}
	csv, err := os.ReadFile(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(csv), ",kv_heads,n,nq,d,") || !strings.Contains(string(csv), ",2,33,4,8,true,") {
		t.Errorf("CSV does not record nq:\n%s", csv)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-nq", "0"}, `"0" is not a positive integer`},
		{[]string{"-nq", "1,x"}, `"x" is not a positive integer`},
		{[]string{"-nq", "-2"}, `"-2" is not a positive integer`},
		{[]string{"-n", "4,8", "-nq", "6"}, "6 queries (Nq) are more than the 4 keys"},
	} {
		code, _, stderr := runCmd(t, append([]string{"bench", "-backend", "cpu", "-out", ""}, bad.args...)...)
		if code != 2 || !strings.Contains(stderr, bad.want) {
			t.Errorf("attn bench %v: exit %d, stderr %q; want 2 and %q", bad.args, code, stderr, bad.want)
		}
	}
}

// readResults reads the results.json attn bench wrote into out.
func readResults(t *testing.T, out string) *bench.Report {
	t.Helper()
	f, err := os.Open(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := bench.ReadReport(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
