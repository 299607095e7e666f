//go:build (cgo || gogpu) && !nogpu

package gpu

import "github.com/attn-go/attn/backend"

// This file says which problems Fused can run, so that kernels' Auto
// strategy runs the others staged (backend.FusedSupports).

var _ backend.FusedSupporter = (*Backend)(nil)

// FusedSupports returns nil when Fused can run p, and otherwise the
// ErrUnsupported Fused returns, naming D, Dv and the device's workgroup
// memory: it asks the plan's one choice of kernel (kernelFor, the
// plan's FusedFor) as Fused does. No kernel fits only where not even
// fusedloop.wgsl's tile of one key fits the device's workgroup memory
// (and the CPU plan's loop budget): the choice then depends on the head
// dims alone, and a decoding kernel fits only where fusedloop.wgsl does
// (package plan's TestPlanDecode and TestPlanLanes). It does not
// validate p (a p too malformed to name its sequences is asked about by
// its sizes: plan.ShapeOf). The staged ops have no such limit: their
// kernels keep no key tile in workgroup memory.
func (b *Backend) FusedSupports(p backend.Problem) error {
	_, err := b.kernelFor(p.Resolved())
	return err
}
