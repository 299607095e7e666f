//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// What the external tests need of the package's insides.

// LoopBudget is the CPU plan's loop cap.
const LoopBudget = plan.LoopBudget

// PlanLoops bounds the loop iterations one invocation runs for p under
// b's plan and workgroup memory (plan.Loops), so that the tests running
// the hardware plan on lavapipe keep within its silent cap.
func PlanLoops(b *Backend, p backend.Problem) int {
	return plan.Loops(b.aplan, p.Resolved(), int(b.lim.MaxComputeWorkgroupStorageSize))
}

// FusedLoops bounds the loop iterations one invocation of Fused's
// kernels runs for p under b's plan: the longest split of its steps
// (plan.FusedSteps, as Fused plans them for float32 operands) through the
// kernel Fused picks (kernelFor), and merge.wgsl folding the most
// splits of one step.
// The tests that run the hardware plan on lavapipe keep within its
// silent cap with it.
func FusedLoops(b *Backend, p backend.Problem) int {
	p = p.Resolved()
	c, err := b.kernelFor(p)
	if err != nil {
		return 0
	}
	sp, err := b.stepPlanFor(p, c, nil, nil)
	if err != nil {
		return 0
	}
	most := 0
	for _, st := range plan.FusedSteps(p, sp) {
		keys := min(st.Sk, st.J1-st.J0)
		most = max(most, plan.KernelLoops(c, p.D, p.Dv, keys))
		if !st.Direct() {
			m, _ := b.aplan.Merge()
			most = max(most, plan.MergeLoops(st.Splits(), p.Dv, m))
		}
	}
	return most
}

// FusedSplits is the most splits of the keys one step of Fused runs side
// by side for p under b's plan.
func FusedSplits(b *Backend, p backend.Problem) int {
	p = p.Resolved()
	c, err := b.kernelFor(p)
	if err != nil {
		return 0
	}
	sp, err := b.stepPlanFor(p, c, nil, nil)
	if err != nil {
		return 0
	}
	most := 0
	for _, st := range plan.FusedSteps(p, sp) {
		most = max(most, st.Splits())
	}
	return most
}

// FusedKernel names the kernel Fused runs p with under b's plan, and
// its shape (plan.FusedKernel's String): "fused", "fusedloop", "fusedtile",
// "fused lanes" (its heads × queries a workgroup) or "fuseddecode"
// (heads × queries a workgroup, keys a tile); "none" where none fits.
func FusedKernel(b *Backend, p backend.Problem) string {
	c, err := b.kernelFor(p.Resolved())
	if err != nil {
		return "none"
	}
	return c.String()
}

// ShrinkBinding makes b bind at most bytes a storage binding from now on
// (less than the device allows), so that small problems are cut into the
// windows large ones need.
func ShrinkBinding(b *Backend, bytes uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lim.MaxStorageBufferBindingSize = min(b.lim.MaxStorageBufferBindingSize, bytes)
}

// PendingDispatches is the dispatches steps have recorded on b and not
// yet submitted.
func PendingDispatches(b *Backend) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending.ds)
}

// Budget is the work, in floating-point operations, one submission of b
// carries at most.
func Budget(b *Backend) float64 { return b.budget }

// SetBudget sets the work one submission of b carries at most, so that
// a small op is split over several submissions.
func SetBudget(b *Backend, flops float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.budget = flops
}

// TimedSpans is the submissions device timing has bracketed since its
// last read.
func TimedSpans(b *Backend) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timing == nil {
		return 0
	}
	return b.timing.n
}

// MergeSpecs is the specialisation of each merge.wgsl pipeline b has
// compiled.
func MergeSpecs(b *Backend) []shaders.MergeConsts {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ms []shaders.MergeConsts
	for k := range b.specs {
		if m, ok := k.spec.(shaders.MergeConsts); ok {
			ms = append(ms, m)
		}
	}
	return ms
}

// FusedSpec is the specialisation of the kernel Fused runs for p under
// b's plan (float32 operands), nil when none fits: the tests of
// ATTN_GPU_TUNE check that the tuned sizes are the ones that run.
func FusedSpec(b *Backend, p backend.Problem) shaders.Spec {
	p = p.Resolved()
	c, err := b.kernelFor(p)
	if err != nil {
		return nil
	}
	return c.Spec(shaders.F32, shaders.F32, shaders.F32, shaders.F32)
}

// SetStepFlush sets the dispatches a step of b records before it
// submits them without a wait (the step.flush knob of ATTN_GPU_TUNE).
func SetStepFlush(b *Backend, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.aplan.Tune.StepFlush = n
}

// MaxPerSubmit is the most dispatches one submission carries.
const MaxPerSubmit = plan.MaxPerSubmit

// PoolBytes is the bytes of scratch b keeps for reuse.
func PoolBytes(b *Backend) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pool.bytes
}

// BindGroups is how many bind groups b has made since it opened, and
// how many it keeps for reuse (groups.go).
func BindGroups(b *Backend) (made, kept int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.groups.made, len(b.groups.m)
}

// BindGroupRefs is the keys b's lists of kept groups by buffer hold, and
// the most they may.
func BindGroupRefs(b *Backend) (refs, bound int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.groups.refs, refsBound(len(b.groups.m))
}

// StepBookkeeping is what st holds between two Submits or Waits: the
// ops it counted, the errors it kept and the kinds of op it counts.
func StepBookkeeping(st *Step) (ops, errs, kinds int) { return st.bookkeeping() }

// MaxStepErrs is how many errors a Step keeps between two Submits or
// Waits.
const MaxStepErrs = maxStepErrs

// MeasureSubgroups runs the subgroup probe (subgroups.wgsl) again, as
// WebGPU does once.
func MeasureSubgroups(b *Backend) (lo, hi uint32, err error) {
	return b.measureSubgroups(context.Background())
}
