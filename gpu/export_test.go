//go:build cgo && !nogpu

package gpu

import "github.com/attn-go/attn/backend"

// What the external tests need of the package's insides.

// LoopBudget is the CPU plan's loop cap.
const LoopBudget = loopBudget

// PlanLoops bounds the loop iterations one invocation runs for p under
// b's plan and workgroup memory (planLoops), so that the tests running
// the hardware plan on lavapipe keep within its silent cap.
func PlanLoops(b *Backend, p backend.Problem) int {
	return planLoops(b.aplan, p.Resolved(), int(b.lim.MaxComputeWorkgroupStorageSize))
}
