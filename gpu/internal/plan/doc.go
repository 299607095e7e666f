// Package plan is the gpu backend's planner: how an op is cut into
// dispatches within the device's limits and which kernel, tiles and
// splits run it. Package gpu runs what it plans; this package imports no
// cgo package (TestNoCgo checks), so that it is read and unit-tested
// apart from the device, in every build (CGO_ENABLED=0 and -tags nogpu
// included).
//
//	adapterplan.go  the adapter's plan (AdapterPlan: Choose, FromEnv) and
//	                the tile and workgroup constants the ops and WGSL share
//	kernel.go       the plan's one choice of fused kernel (FusedFor), each
//	                kernel in a kernel_*.go file of its own
//	fusedplan.go    Fused's steps and splits of the keys (FusedSteps)
//	plan.go         an op's units, the windows their operands bind and
//	                their halving until a dispatch fits (Splitter)
//	features.go     the optional WebGPU features used (ATTN_GPU_FEATURES)
//	tune.go         the hardware plan's sizes (ATTN_GPU_TUNE)
//	variants.go     the variant data and flags the kernels read
//	quantlayout.go  the 8-bit dtypes' bytes in a buffer
//	loops.go        the kernels' loop counts, for tests
//
// Package gpu's doc says how an op runs, and docs/gpu.md ("Which kernel
// runs where") why each kernel runs where it does.
package plan
