// Command aco holds attn's GPU kernels to a real GPU compiler without a
// GPU (issue 101): AMD's ACO, in Mesa 25.0.7's RADV on a null RDNA3
// device (NAVI31). For each build's kernels, at each plan, it captures
// the SPIR-V the build hands the Vulkan driver (internal/cmd/spirvmix
// -keep, on lavapipe), compiles every module through ACO
// (.ci/aco/acostats.c, in the Debian trixie root .ci/aco.sh makes, with
// VK_KHR_pipeline_executable_properties) and prints what the compiler
// did: VGPRs, SGPRs, spills, scratch, LDS, waves a SIMD, the
// instruction mix and ACO's latency and throughput estimates, as a
// table, as Markdown (-md) or as JSON (-json), and holds each kernel to
// its budget (-budgets).
//
//	bash .ci/aco.sh -- [-targets hardware,h200,rdna3] [-bindings wgpu-native,gogpu] [-budgets .ci/aco-budgets.txt] [-md | -json FILE] [workload ...]
//	go run ./internal/cmd/aco -root /var/tmp/attn-aco ...
//
// Each plan is "hardware", lavapipe's own under ATTN_GPU_PLAN=hardware
// (its subgroups of 8, 32 KiB of workgroup memory), or a target of
// ATTN_GPU_TARGET's (h100, h200, rdna3, apple: gpu/internal/plan's
// Targets), the hardware plan for that device's subgroups, workgroup
// memory and invocations, compiled on lavapipe and never dispatched.
// With no workload it runs those that compile every kernel
// (defaultWorkloads).
//
// The numbers are a compiler's verdict for one GPU, RDNA3, at the
// subgroup size RADV picks (as it would for wgpu on an RX 7900): never
// a speed. docs/gpu.md has today's table and how to read it for other
// vendors.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// defaultWorkloads are spirvmix's workloads that compile every kernel
// the backend runs at the hardware plan: prefill at D = 64 (fusedloop)
// and 128 (fusedtile), decoding over each cache dtype (lanedecode, or
// fuseddecode without subgroups, and merge), the backward pass (backkv,
// backq, backdelta), the staged path (scores, softmax, context), index
// lists and a draft tree.
var defaultWorkloads = []string{
	"prefill-d64", "prefill-d128",
	"decode-f32", "decode-f16", "decode-q8", "decode-q4",
	"backward-d128", "staged", "sparse", "tree",
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type config struct {
	root        string
	targets     []string
	bindings    []string
	workloads   []string
	budgets     string
	writeBudget string
	jsonOut     string
	md          bool
	keep        string
	wave        int
	timeout     time.Duration
	from        string
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("aco", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var targets, bindings string
	fs.StringVar(&c.root, "root", "", "the Debian trixie root .ci/aco.sh made (`DIR`), where acostats runs under chroot")
	fs.StringVar(&targets, "targets", "hardware", "the plans, comma-separated: hardware (lavapipe's, ATTN_GPU_PLAN=hardware) or an ATTN_GPU_TARGET (h100, h200, rdna3, apple)")
	fs.StringVar(&bindings, "bindings", "wgpu-native,gogpu", "the builds whose SPIR-V to compile, comma-separated: wgpu-native (the default, cgo) and gogpu (-tags gogpu, attn's own SPIR-V)")
	fs.StringVar(&c.budgets, "budgets", "", "hold each kernel to its budget, with the allowances of `FILE` (.ci/aco-budgets.txt): exit 1 where one fails")
	fs.StringVar(&c.writeBudget, "write-budgets", "", "write the allowances that today's kernels need (each over its budget or spilling) to `FILE`")
	fs.StringVar(&c.jsonOut, "json", "", "write every kernel's statistics as JSON to `FILE` (- for stdout, then no table)")
	fs.BoolVar(&c.md, "md", false, "print Markdown tables (docs/gpu.md's) instead of the text table")
	fs.StringVar(&c.keep, "keep", "", "keep the captures under `DIR` (TARGET/BINDING/WORKLOAD, spirvmix's -keep)")
	fs.IntVar(&c.wave, "wave", 0, "compile every kernel at this subgroup size (32 or 64; Vulkan's requiredSubgroupSize); 0: RADV's choice, as wgpu gets")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Minute, "the longest the captures of one plan and build may take")
	fs.StringVar(&c.from, "from", "", "read the kernels' statistics from `FILE`, an earlier -json's, instead of measuring them (no root needed)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: aco -root DIR [-targets T,...] [-bindings B,...] [-budgets FILE] [-write-budgets FILE] [-md | -json FILE] [-keep DIR] [-wave N] [workload ...]\n       aco -from FILE.json [-budgets FILE] [-write-budgets FILE] [-md | -json FILE]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	c.targets, c.bindings = splitList(targets), splitList(bindings)
	c.workloads = fs.Args()
	if len(c.workloads) == 0 {
		c.workloads = defaultWorkloads
	}
	if c.root == "" && c.from == "" {
		fmt.Fprintln(stderr, "aco: -root is needed (bash .ci/aco.sh prints it), or -from")
		return 2
	}
	for _, b := range c.bindings {
		if b != "wgpu-native" && b != "gogpu" {
			fmt.Fprintf(stderr, "aco: -bindings: %q: want wgpu-native or gogpu\n", b)
			return 2
		}
	}
	if c.wave != 0 && c.wave != 32 && c.wave != 64 {
		fmt.Fprintln(stderr, "aco: -wave: want 0, 32 or 64")
		return 2
	}
	var budgets *Budgets
	if c.budgets != "" {
		f, err := os.Open(c.budgets)
		if err != nil {
			fmt.Fprintln(stderr, "aco:", err)
			return 1
		}
		budgets, err = ParseBudgets(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "aco: %s: %v\n", c.budgets, err)
			return 1
		}
	}
	var rep *Report
	var err error
	if c.from != "" {
		rep, err = readReport(c.from)
	} else {
		rep, err = measure(c, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "aco:", err)
		return 1
	}
	if budgets != nil {
		budgets.Check(rep.Rows)
	}
	if c.jsonOut != "" {
		var w io.Writer = stdout
		if c.jsonOut != "-" {
			f, err := os.Create(c.jsonOut)
			if err != nil {
				fmt.Fprintln(stderr, "aco:", err)
				return 1
			}
			defer f.Close()
			w = f
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(stderr, "aco:", err)
			return 1
		}
	}
	if c.jsonOut != "-" {
		if c.md {
			rep.WriteMarkdown(stdout)
		} else {
			rep.WriteTable(stdout, budgets != nil)
		}
	}
	if c.writeBudget != "" {
		if err := os.WriteFile(c.writeBudget, []byte(SeedBudgets(rep.Rows)), 0o644); err != nil {
			fmt.Fprintln(stderr, "aco:", err)
			return 1
		}
	}
	if budgets != nil {
		failed := 0
		for _, r := range rep.Rows {
			if r.Verdict.Fail {
				failed++
			}
		}
		if failed > 0 {
			fmt.Fprintf(stderr, "aco: %d of %d kernels fail their budgets (%s)\n", failed, len(rep.Rows), c.budgets)
			return 1
		}
		fmt.Fprintf(stderr, "aco: %d kernels within their budgets or %s's allowances\n", len(rep.Rows), c.budgets)
	}
	return 0
}

// readReport reads a Report that -json wrote.
func readReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	for _, r := range rep.Rows {
		r.Verdict = nil
	}
	return &rep, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Report is every kernel's statistics: the device that compiled them
// and one Row a distinct module of each plan and build.
type Report struct {
	Device  string `json:"device"`
	Date    string `json:"date"`
	Command string `json:"command"`
	Rows    []*Row `json:"kernels"`
}

// mixResult is what of spirvmix's -json output aco reads.
type mixResult struct {
	Workload string `json:"workload"`
	Device   string `json:"device"`
	Note     string `json:"note"`
	Kernels  []struct {
		Label  string `json:"label"`
		Module string `json:"module"`
		Mix    struct {
			Entries []entryPoint `json:"entry_points"`
		} `json:"mix"`
	} `json:"kernels"`
}

type entryPoint struct {
	Name string `json:"name"`
}

// measure captures the kernels of each plan and build, compiles them in
// the root and returns their rows.
func measure(c config, stderr io.Writer) (*Report, error) {
	work, err := os.MkdirTemp("", "aco-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	keep := c.keep
	if keep == "" {
		keep = filepath.Join(work, "keep")
	}
	mix := filepath.Join(work, "spirvmix")
	if out, err := exec.Command("go", "build", "-o", mix, "github.com/attn-go/attn/internal/cmd/spirvmix").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building spirvmix: %v: %s", err, out)
	}
	rep := &Report{Date: time.Now().UTC().Format("2006-01-02"), Command: "go run ./internal/cmd/aco " + strings.Join(os.Args[1:], " ")}
	byKey := map[string]*Row{}
	for _, target := range c.targets {
		env := []string{"ATTN_GPU_PLAN=hardware", "ATTN_GPU_TARGET="}
		if target != "hardware" {
			env[1] += target
		}
		for _, binding := range c.bindings {
			dir := filepath.Join(keep, target, binding)
			fmt.Fprintf(stderr, "aco: capturing %s's kernels at the %s plan (spirvmix -binding %s)\n", binding, target, binding)
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
			args := append([]string{"-json", "-keep", dir, "-binding", binding}, c.workloads...)
			cmd := exec.CommandContext(ctx, mix, args...)
			cmd.Env = append(os.Environ(), env...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, stderr
			err := cmd.Run()
			cancel()
			if err != nil {
				return nil, fmt.Errorf("spirvmix at the %s plan, %s: %v", target, binding, err)
			}
			var results []mixResult
			if err := json.Unmarshal(out.Bytes(), &results); err != nil {
				return nil, fmt.Errorf("spirvmix's JSON: %v", err)
			}
			for _, res := range results {
				for _, k := range res.Kernels {
					if k.Label == "" {
						// spirvmix could not name the modules.
						return nil, fmt.Errorf("%s, %s, %s: module %s has no kernel's name: %s", target, binding, res.Workload, k.Module, res.Note)
					}
					path := filepath.Join(dir, res.Workload, "spv", k.Module)
					spv, err := os.ReadFile(path)
					if err != nil {
						return nil, err
					}
					entry := entryOf(k.Label, k.Mix.Entries)
					sum := sha256.Sum256(spv)
					key := target + "\x00" + binding + "\x00" + k.Label + "\x00" + string(sum[:])
					if r := byKey[key]; r != nil {
						r.Workloads = append(r.Workloads, res.Workload)
						continue
					}
					r := &Row{
						Target: target, Binding: binding,
						Kernel: strings.TrimSuffix(k.Label, " main"), Entry: entry,
						Workloads: []string{res.Workload}, spv: spv,
					}
					byKey[key] = r
					rep.Rows = append(rep.Rows, r)
				}
			}
		}
	}
	dev, err := compileAll(c, rep.Rows, stderr)
	if err != nil {
		return nil, err
	}
	rep.Device = dev
	return rep, nil
}

// entryOf is the entry point a pipeline labelled label compiles from a
// module with entries: the label's last word (attn's labels end with the
// entry point: "softmax WG=256 PER=32 normalize"), where the module has
// it, else its first entry point. A module of the gogpu build holds
// every entry point of its WGSL, wgpu-native's only the pipeline's.
func entryOf(label string, entries []entryPoint) string {
	if i := strings.LastIndexByte(label, ' '); i >= 0 {
		last := label[i+1:]
		for _, e := range entries {
			if e.Name == last {
				return last
			}
		}
	}
	if len(entries) > 0 {
		return entries[0].Name
	}
	return "main"
}

// compileAll compiles every row's module with acostats in the root and
// fills its statistics; it returns the device's name.
func compileAll(c config, rows []*Row, stderr io.Writer) (string, error) {
	in, err := os.MkdirTemp(filepath.Join(c.root, "tmp"), "aco-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(in)
	args := []string{c.root, "/root/acostats.sh"}
	for i, r := range rows {
		name := fmt.Sprintf("%03d.spv", i)
		if err := os.WriteFile(filepath.Join(in, name), r.spv, 0o644); err != nil {
			return "", err
		}
		args = append(args, r.Entry, "/tmp/"+filepath.Base(in)+"/"+name)
	}
	cmd := exec.Command("chroot", args...)
	if c.wave != 0 {
		cmd.Env = append(os.Environ(), fmt.Sprintf("ACOSTATS_WAVE=%d", c.wave))
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run()
	dev, stats, perr := ParseStats(&out)
	if runErr != nil || perr != nil {
		return "", fmt.Errorf("acostats in %s: %v (%v): %s", c.root, runErr, perr, strings.TrimSpace(errOut.String()))
	}
	if len(stats) != len(rows) {
		return "", fmt.Errorf("acostats compiled %d of %d modules: %s", len(stats), len(rows), strings.TrimSpace(errOut.String()))
	}
	for i, r := range rows {
		r.fill(stats[i])
	}
	return dev, nil
}
