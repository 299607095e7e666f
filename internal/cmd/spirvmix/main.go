// Command spirvmix prints the instruction mix of attn's GPU kernels as
// the Vulkan driver receives them: it runs a workload on the gpu backend
// in a child process under the gfxreconstruct capture layer, extracts
// the SPIR-V of every shader module wgpu-native created
// (gfxrecon-extract), disassembles it (spirv-dis), names each module by
// the attn kernel it was compiled for, and counts each loop's body
// (internal/spirvmix).
//
//	go run ./internal/cmd/spirvmix [-json | -summary] [-inner] [-keep DIR] [-binding gogpu] [workload ...]
//	go run ./internal/cmd/spirvmix -list
//	go run ./internal/cmd/spirvmix -asm FILE.spvasm ...
//
// With -binding gogpu the children are the pure-Go build (-tags gogpu,
// no cgo), whose own naga, gogpu/naga, compiles the WGSL: its SPIR-V is
// what that build hands the driver, named by the build's own log lines.
// Each binding's children are this program where it is built on that
// binding, else a build of it for that one.
//
// With no workload it runs them all. It needs a WebGPU adapter (Mesa's
// lavapipe will do: the SPIR-V is what wgpu-native hands any Vulkan
// driver) and Debian's gfxreconstruct and spirv-tools packages. The
// counts are static, one pass over each loop body: they say what code a
// GPU is given, never how fast it runs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/attn-go/attn/internal/spirvmix"
)

func main() {
	if name := os.Getenv(envChild); name != "" {
		os.Exit(child(name, os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command on args, its output on stdout and errors on
// stderr; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("spirvmix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	inner := fs.Bool("inner", false, "print only the innermost loops")
	summary := fs.Bool("summary", false, "print one Markdown table of each kernel's hot loop (the most FMAs) and the loops around it, each kernel once")
	keep := fs.String("keep", "", "keep each workload's capture, log, SPIR-V and disassembly under `DIR`/WORKLOAD")
	list := fs.Bool("list", false, "list the workloads")
	asm := fs.Bool("asm", false, "count the spirv-dis files named as arguments instead of running workloads")
	timeout := fs.Duration("timeout", 10*time.Minute, "the longest a workload's child may run")
	binding := fs.String("binding", ownBinding, "the build whose SPIR-V to count: `wgpu-native` (the cgo build) or gogpu (the pure-Go build, -tags gogpu without cgo); children of the build this program is not are built with go build; the default is this program's")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: spirvmix [-json | -summary] [-inner] [-keep DIR] [-timeout D] [-binding gogpu] [workload ...]\n       spirvmix -list\n       spirvmix [-json | -summary] [-inner] -asm FILE.spvasm ...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *list {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		for _, w := range workloads {
			fmt.Fprintf(tw, "%s\t%s\n", w.Name, w.Desc)
		}
		tw.Flush()
		return 0
	}
	var results []*result
	if *asm {
		if fs.NArg() == 0 {
			fmt.Fprintln(stderr, "spirvmix: -asm needs spirv-dis files")
			return 2
		}
		res := &result{Workload: "files"}
		for _, path := range fs.Args() {
			b, err := os.ReadFile(path)
			if err != nil {
				fmt.Fprintln(stderr, "spirvmix:", err)
				return 1
			}
			k, err := analyze(string(b), filepath.Base(path), "")
			if err != nil {
				fmt.Fprintf(stderr, "spirvmix: %s: %v\n", path, err)
				return 1
			}
			res.Kernels = append(res.Kernels, k)
		}
		results = append(results, res)
	} else {
		chosen, err := choose(fs.Args())
		if err != nil {
			fmt.Fprintln(stderr, "spirvmix:", err)
			return 2
		}
		if *binding != "wgpu-native" && *binding != "gogpu" {
			fmt.Fprintf(stderr, "spirvmix: -binding %q: want wgpu-native or gogpu\n", *binding)
			return 2
		}
		if err := checkTools(); err != nil {
			fmt.Fprintln(stderr, "spirvmix:", err)
			return 1
		}
		exe, err := childExe(*binding)
		if err != nil {
			fmt.Fprintln(stderr, "spirvmix:", err)
			return 1
		}
		for _, w := range chosen {
			ctx, cancel := context.WithTimeout(context.Background(), *timeout)
			res, err := captureMix(ctx, exe, w, *keep)
			cancel()
			if err != nil {
				fmt.Fprintf(stderr, "spirvmix: %s: %v\n", w.Name, err)
				return 1
			}
			results = append(results, res)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			fmt.Fprintln(stderr, "spirvmix:", err)
			return 1
		}
		return 0
	}
	if *summary {
		writeSummary(stdout, results)
		return 0
	}
	for _, res := range results {
		if err := res.write(stdout, *inner); err != nil {
			fmt.Fprintln(stderr, "spirvmix:", err)
			return 1
		}
	}
	fmt.Fprint(stdout, spirvmix.Legend)
	return 0
}

// choose returns the workloads named (all of them for none).
func choose(names []string) ([]workload, error) {
	if len(names) == 0 {
		return workloads, nil
	}
	var out []workload
	for _, n := range names {
		w, ok := findWorkload(n)
		if !ok {
			var have []string
			for _, w := range workloads {
				have = append(have, w.Name)
			}
			return nil, fmt.Errorf("no workload %q (have %s)", n, strings.Join(have, ", "))
		}
		out = append(out, w)
	}
	return out, nil
}

// result is one workload's kernels.
type result struct {
	Workload string   `json:"workload"`
	Desc     string   `json:"desc,omitempty"`
	Env      []string `json:"env,omitempty"`
	Device   string   `json:"device,omitempty"`
	// Note says why the modules carry no kernel names, when they do not.
	Note    string   `json:"note,omitempty"`
	Kernels []kernel `json:"kernels"`
}

// kernel is one shader module: the attn kernel it was compiled for (the
// pipeline's label; "" where unknown), the module's file, the lines of
// its disassembly and its mix.
type kernel struct {
	Label  string           `json:"label"`
	Module string           `json:"module"`
	Lines  int              `json:"lines"`
	Mix    *spirvmix.Report `json:"mix"`
}

func analyze(text, module, label string) (kernel, error) {
	r, err := spirvmix.Analyze(text)
	if err != nil {
		return kernel{}, err
	}
	return kernel{Label: label, Module: module, Lines: strings.Count(text, "\n"), Mix: r}, nil
}

// writeSummary writes the hot loops of every kernel, each kernel once
// (the first workload that compiled it), as one Markdown table.
func writeSummary(w io.Writer, results []*result) {
	fmt.Fprintln(w, spirvmix.SummaryHeader)
	seen := map[string]bool{}
	for _, res := range results {
		for _, k := range res.Kernels {
			key := k.Label
			if key == "" {
				key = res.Workload + "/" + k.Module
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			name := strings.TrimSuffix(k.Label, " main")
			if name == "" {
				name = k.Module
			}
			for i, l := range k.Mix.Hot() {
				if i == 0 {
					fmt.Fprintln(w, k.Mix.SummaryRow(res.Workload, "`"+name+"`", l, true))
				} else {
					fmt.Fprintln(w, k.Mix.SummaryRow("", "", l, false))
				}
			}
		}
	}
}

func (res *result) write(w io.Writer, inner bool) error {
	head := "== " + res.Workload
	if res.Desc != "" {
		head += ": " + res.Desc
	}
	fmt.Fprintln(w, head)
	if res.Device != "" {
		fmt.Fprintln(w, "   device:", res.Device)
	}
	if res.Note != "" {
		fmt.Fprintln(w, "   note:", res.Note)
	}
	for _, k := range res.Kernels {
		name := k.Label
		if name == "" {
			name = "(unnamed kernel)"
		}
		var ep string
		for _, e := range k.Mix.Entries {
			ep += fmt.Sprintf(", entry %s, workgroup %d×%d×%d", e.Name, e.LocalSize[0], e.LocalSize[1], e.LocalSize[2])
		}
		fmt.Fprintf(w, "-- %s\n   %s, %d lines%s\n   %s\n", name, k.Module, k.Lines, ep, k.Mix.Summary())
		if err := k.Mix.WriteTable(w, "   ", inner); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	return nil
}
