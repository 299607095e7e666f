package main

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// naga writes no names into the SPIR-V it hands the driver (no OpName,
// no OpSource: wgpu-native asks for none without its debug flag), and
// every attn kernel's entry point is "main". The pipeline's label, attn's
// key for the kernel and its specialisation ("fuseddecode WG=256 …"),
// is in wgpu-core's trace log instead: each pipeline's id when it is
// created, and its label when it is destroyed. The child runs with
// ATTN_GPU_LOG=trace so that the log has both, and GOMAXPROCS=1 so that
// attn compiles one pipeline at a time: wgpu-hal creates each
// pipeline's shader module just before the pipeline itself, so the
// modules, in the order of their handles, pair with the pipelines in the
// order they were created.

// Under -binding gogpu the child is the pure-Go build, whose gogpu/wgpu
// logs no labels: attn's binding layer writes "[wg] shader module" and
// the label to standard error at ATTN_GPU_LOG=trace once the driver has
// each module, and those lines, in order, are the modules' names.

var (
	gogpuModuleRE = regexp.MustCompile(`^\[wg\] shader module ("(?:[^"\\]|\\.)*")`)
	createdRE     = regexp.MustCompile(`Device::create_compute_pipeline -> (Id\([0-9]+,[0-9]+\))`)
	droppedRE     = regexp.MustCompile(`ComputePipeline::drop (Id\([0-9]+,[0-9]+\))`)
	destroyedRE   = regexp.MustCompile(`Destroy raw ComputePipeline with '([^']*)' label`)
)

// pipelineLabels reads a wgpu trace log and returns the labels of the
// compute pipelines in the order they were created ("" for one whose
// label the log does not give), or the gogpu build's module lines'
// labels where it has them (modules true).
func pipelineLabels(r io.Reader) (labels []string, modules bool, err error) {
	labels, mods, err := readLabels(r)
	if mods != nil {
		return mods, true, err
	}
	return labels, false, err
}

func readLabels(r io.Reader) ([]string, []string, error) {
	var (
		created []string
		labels  = map[string]string{}
		dropped string
		modules []string // gogpu's: the labels themselves
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if m := gogpuModuleRE.FindStringSubmatch(line); m != nil {
			label, err := strconv.Unquote(m[1])
			if err != nil {
				return nil, nil, err
			}
			modules = append(modules, label)
			continue
		}
		if !strings.Contains(line, "ComputePipeline") && !strings.Contains(line, "create_compute_pipeline") {
			continue
		}
		if m := createdRE.FindStringSubmatch(line); m != nil {
			created = append(created, m[1])
		} else if m := droppedRE.FindStringSubmatch(line); m != nil {
			dropped = m[1]
		} else if m := destroyedRE.FindStringSubmatch(line); m != nil && dropped != "" {
			labels[dropped] = m[1]
			dropped = ""
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	out := make([]string, len(created))
	for i, id := range created {
		out[i] = labels[id]
	}
	return out, modules, nil
}
