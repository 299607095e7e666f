//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"
	"fmt"
	"slices"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// subgroupsWG is the workgroup subgroups.wgsl measures: the size the
// kernels' decoding workgroups have at most (fuseddecode.wgsl's 128 on
// hardware, its tuning's 256).
const subgroupsWG = 256

// measureSubgroups runs subgroups.wgsl once and returns the least and the
// greatest subgroup size its invocations ran in: the adapter's subgroup
// sizes where the binding does not report them (wgpu-native 29's
// adapter info has fields for them, 0 on lavapipe), so that attn devices can say them. The device must have
// subgroups.
func (b *Backend) measureSubgroups(ctx context.Context) (lo, hi uint32, err error) {
	out, err := b.Alloc(backend.Float32, subgroupsWG)
	if err != nil {
		return 0, 0, err
	}
	defer out.Release()
	if err := b.runSubgroups(ctx, out); err != nil {
		return 0, 0, err
	}
	sizes := make([]float32, subgroupsWG)
	if err := b.Read(sizes, out, 0); err != nil {
		return 0, 0, err
	}
	l, h := slices.Min(sizes), slices.Max(sizes)
	if l < 1 || h > subgroupsWG || l != float32(uint32(l)) || h != float32(uint32(h)) {
		return 0, 0, fmt.Errorf("gpu: subgroups.wgsl measured sizes from %v to %v", l, h)
	}
	return uint32(l), uint32(h), nil
}

// runSubgroups dispatches subgroups.wgsl's one workgroup into out,
// untimed: work the caller recorded before it is submitted first, timed
// as TimeDevice says, and the probe itself counts in no DeviceTime or
// KernelTimes. Timing is off only while the probe's submission is
// recorded and submitted, under b.mu; the wait for it (which lets go of
// b.mu) sees the backend's timing as it is, so another goroutine's ops
// are timed and its TimeDevice is kept.
func (b *Backend) runSubgroups(ctx context.Context, out backend.Buffer) error {
	bufs, err := b.begin(ctx, "subgroups", arg{"o", out, true})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	if err := b.flush(); err != nil {
		return backend.Wrapf(err, "gpu: subgroups")
	}
	pipe, err := b.pipeline(shaders.SubgroupsConsts{WG: subgroupsWG}, "main")
	if err != nil {
		return err
	}
	o := bufs[0]
	d := newDispatch(pipe)
	d.bind("o", o.buf, o.off, 4*subgroupsWG)
	d.setParams(shaders.SubgroupsParams{N: subgroupsWG})
	d.grid = [3]int{1, 1, 1}
	if d.err != nil {
		return backend.Wrapf(d.err, "gpu: subgroups")
	}
	timing := b.timing
	b.timing = nil
	err = b.record(nil, []*dispatch{d}, d.cost)
	if err == nil {
		err = b.flush()
	}
	b.timing = timing
	if err == nil {
		err = b.waitIdle()
	}
	if err != nil {
		return backend.Wrapf(err, "gpu: subgroups")
	}
	return nil
}
