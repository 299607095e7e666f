//go:build (cgo || gogpu) && !nogpu

package kernels_test

import (
	"bytes"
	"testing"
)

// TestSpeculativeStepGPU runs ExampleSeq_Keep's step on the GPU: the tree
// verified in one Attend and the accepted path kept print what they print
// on the CPU, to the Example's four decimals.
func TestSpeculativeStepGPU(t *testing.T) {
	var cpu, gpu bytes.Buffer
	if err := speculativeStep(openCPU(t), &cpu); err != nil {
		t.Fatal(err)
	}
	if err := speculativeStep(openGPU(t), &gpu); err != nil {
		t.Fatal(err)
	}
	if gpu.String() != cpu.String() {
		t.Errorf("the GPU printed\n%s\nthe CPU\n%s", gpu.String(), cpu.String())
	}
}
