//go:build cgo && !nogpu

package gpu

import "github.com/attn-go/attn/backend"

// This file says which problems Fused can run, so that kernels' Auto
// strategy runs the others staged (backend.FusedSupports).

var _ backend.FusedSupporter = (*Backend)(nil)

// FusedSupports returns nil when Fused can run p's head dims: narrow
// enough for fused.wgsl to unroll under the CPU plan, or a tile of at
// least one key of fusedloop.wgsl fits the device's workgroup memory (and
// the CPU plan's loop budget) — what Fused's fusedKernel asks of the
// dims. (fuseddecode.wgsl, which a decoding step may run instead, fits
// only where fusedloop.wgsl does: its workgroup memory holds a tile of K
// and a query row besides, TestPlanDecode; so this asks nothing of p's
// sequences, which it does not validate.)
// Otherwise it returns the ErrUnsupported Fused returns, naming D, Dv and
// the device's workgroup memory. The staged ops have no such limit: their
// kernels keep no key tile in workgroup memory.
func (b *Backend) FusedSupports(p backend.Problem) error {
	p = p.Resolved()
	if !b.aplan.fusedKernel(int(b.lim.MaxComputeWorkgroupStorageSize), p.D, p.Dv).fits() {
		return b.unfit(p)
	}
	return nil
}
