//go:build cgo && !nogpu && !gowebgpu && !gogpu

package gpu_test

import (
	"context"
	"fmt"
	"math"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu"
	"github.com/oliverbestmann/webgpu/wgpu"
)

// ExampleNewWithDevice runs attn inside a GPU program of its own: the
// program owns the device and the buffers, fills its weights with a
// kernel of its own, decodes one token through 32 layers of attention —
// each layer's output is the next one's query, recorded as one step with
// no host wait — and sums the last layer's output with another kernel of
// its own, reading only that sum back. attn's CPU backend checks it.
func ExampleNewWithDevice() {
	// The program's GPU. WebGPU's default limits are all attn needs.
	// A nil descriptor: every backend; the adapter request asks for
	// Vulkan.
	inst := wgpu.CreateInstance(nil)
	defer inst.Release()
	adapter, err := inst.RequestAdapter(&wgpu.RequestAdapterOptions{PowerPreference: wgpu.PowerPreferenceHighPerformance, BackendType: wgpu.BackendTypeVulkan})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer adapter.Release()
	dev, err := adapter.RequestDevice(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Release()
	queue := dev.GetQueue()
	defer queue.Release()

	// attn on that device: Close leaves the device to the program.
	b, err := gpu.NewWithDevice(adapter, dev)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	// A decoding step: one query of 4 heads of 32 over 128 cached keys a
	// layer. The weights buffer holds the first query, then each layer's
	// K and V, each at an offset the device can bind.
	const layers, H, N, D = 32, 4, 128, 32
	p := backend.Problem{B: 1, H: H, KVHeads: H, Nq: 1, Nk: N, D: D, Dv: D}
	// 256 is the coarsest minStorageBufferOffsetAlignment WebGPU allows.
	slot := alignUp(uint64(p.KLen())*4, 256)
	usage := wgpu.BufferUsageStorage | wgpu.BufferUsageCopySrc | wgpu.BufferUsageCopyDst
	weights := mustBuffer(dev, (1+2*layers)*slot, usage)
	defer weights.Release()
	acts := [2]*wgpu.Buffer{mustBuffer(dev, slot, usage), mustBuffer(dev, slot, usage)}
	defer acts[0].Release()
	defer acts[1].Release()
	total := mustBuffer(dev, 16, usage)
	defer total.Release()

	// 1. The program's kernel fills the weights.
	if err := compute(dev, queue, fillWGSL, wgpu.BindGroupEntry{Binding: 0, Buffer: weights, Size: weights.GetSize()}); err != nil {
		fmt.Println(err)
		return
	}

	// 2. attn reads and writes the program's buffers in place.
	q0, _ := b.Import(weights, 0, backend.Float32, p.QLen())
	var k, v [layers]backend.Buffer
	for l := range layers {
		k[l], _ = b.Import(weights, uint64(1+2*l)*slot, backend.Float32, p.KLen())
		v[l], _ = b.Import(weights, uint64(2+2*l)*slot, backend.Float32, p.VLen())
	}
	x := [2]backend.Buffer{}
	for i := range x {
		x[i], _ = b.Import(acts[i], 0, backend.Float32, p.OLen())
	}

	// 3. 32 layers, one step: recorded, then submitted without a wait.
	st := b.Record()
	q := q0
	for l := range layers {
		o := x[l%2] // layer l writes one activation buffer and reads the other
		if err := st.Fused(context.Background(), backend.FusedParams{Problem: p}, q, k[l], v[l], o, nil); err != nil {
			fmt.Println(err)
			return
		}
		q = o
	}
	if err := st.Submit(); err != nil {
		fmt.Println(err)
		return
	}

	// 4. The program's kernel sums the last layer's output where attn
	// left it; the queue runs it after the step.
	out, off, _ := gpu.Export(q)
	err = compute(dev, queue, sumWGSL,
		wgpu.BindGroupEntry{Binding: 0, Buffer: out, Offset: off, Size: uint64(p.OLen()) * 4},
		wgpu.BindGroupEntry{Binding: 1, Buffer: total, Size: 16})
	if err != nil {
		fmt.Println(err)
		return
	}

	// 5. One read, after everything: the sum.
	sum := make([]float32, 1)
	t, _ := b.Import(total, 0, backend.Float32, 1)
	if err := b.Read(sum, t, 0); err != nil {
		fmt.Println(err)
		return
	}

	want := cpuLayers(p, layers, weights.GetSize()/4, int(slot/4))
	fmt.Printf("sum of layer %d's output: %.3f\n", layers, sum[0])
	fmt.Println("agrees with attn's CPU backend:", math.Abs(float64(sum[0]-want)) < 1e-4)
	// Output:
	// sum of layer 32's output: -3.998
	// agrees with attn's CPU backend: true
}

// compute runs wgsl's main over entries and submits it to queue without
// waiting: a workgroup for every 64 floats of a lone binding (fillWGSL),
// a single one otherwise (sumWGSL).
func compute(dev *wgpu.Device, queue *wgpu.Queue, wgsl string, entries ...wgpu.BindGroupEntry) error {
	mod, err := dev.TryCreateShaderModule(&wgpu.ShaderModuleDescriptor{WGSLSource: &wgpu.ShaderSourceWGSL{Code: wgsl}})
	if err != nil {
		return err
	}
	defer mod.Release()
	pipe, err := dev.TryCreateComputePipeline(&wgpu.ComputePipelineDescriptor{
		Compute: wgpu.ProgrammableStageDescriptor{Module: mod, EntryPoint: "main"},
	})
	if err != nil {
		return err
	}
	defer pipe.Release()
	group, err := dev.TryCreateBindGroup(&wgpu.BindGroupDescriptor{Layout: pipe.GetBindGroupLayout(0), Entries: entries})
	if err != nil {
		return err
	}
	defer group.Release()
	enc, err := dev.TryCreateCommandEncoder(nil)
	if err != nil {
		return err
	}
	defer enc.Release()
	pass := enc.BeginComputePass(nil)
	pass.SetPipeline(pipe)
	pass.SetBindGroup(0, group, nil)
	groups := uint32(1)
	if len(entries) == 1 {
		groups = uint32((entries[0].Size/4 + 63) / 64)
	}
	pass.DispatchWorkgroups(groups, 1, 1)
	if err := pass.TryEnd(); err != nil {
		return err
	}
	pass.Release()
	cmd, err := enc.TryFinish(nil)
	if err != nil {
		return err
	}
	defer cmd.Release()
	queue.Submit(cmd)
	return nil
}

func mustBuffer(dev *wgpu.Device, size uint64, usage wgpu.BufferUsage) *wgpu.Buffer {
	buf, err := dev.TryCreateBuffer(&wgpu.BufferDescriptor{Size: size, Usage: usage})
	if err != nil {
		panic(err)
	}
	return buf
}
