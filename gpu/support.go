//go:build cgo && !nogpu

package gpu

import "github.com/attn-go/attn/backend"

// This file says which problems Fused can run, so that kernels' Auto
// strategy runs the others staged (backend.FusedSupports).

var _ backend.FusedSupporter = (*Backend)(nil)

// FusedSupports returns nil when Fused can run p's head dims: narrow
// enough for fused.wgsl to unroll (fusedRows), or a tile of at least one
// key of fusedloop.wgsl fits the device's workgroup memory and loop
// budget (fusedTile). Otherwise it returns the ErrUnsupported Fused
// returns, naming D, Dv and the device's workgroup memory. The staged
// ops have no such limit: their kernels keep no key tile in workgroup
// memory.
func (b *Backend) FusedSupports(p backend.Problem) error {
	p = p.Resolved()
	if fusedRows(p.D, p.Dv) > 0 {
		return nil
	}
	if tk, _ := b.fusedTile(p.D, p.Dv); tk > 0 {
		return nil
	}
	return backend.Errorf(backend.ErrUnsupported, "gpu: fused: head dims D=%d Dv=%d do not fit the device's %d bytes of workgroup memory; use the staged strategy",
		p.D, p.Dv, b.lim.MaxComputeWorkgroupStorageSize)
}
