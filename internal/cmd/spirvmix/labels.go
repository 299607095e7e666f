package main

import (
	"bufio"
	"io"
	"regexp"
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

var (
	createdRE   = regexp.MustCompile(`Device::create_compute_pipeline -> (Id\([0-9]+,[0-9]+\))`)
	droppedRE   = regexp.MustCompile(`ComputePipeline::drop (Id\([0-9]+,[0-9]+\))`)
	destroyedRE = regexp.MustCompile(`Destroy raw ComputePipeline with '([^']*)' label`)
)

// pipelineLabels reads a wgpu trace log and returns the labels of the
// compute pipelines in the order they were created ("" for one whose
// label the log does not give).
func pipelineLabels(r io.Reader) ([]string, error) {
	var (
		created []string
		labels  = map[string]string{}
		dropped string
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for sc.Scan() {
		line := sc.Text()
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
		return nil, err
	}
	out := make([]string, len(created))
	for i, id := range created {
		out[i] = labels[id]
	}
	return out, nil
}
