package main

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/attn-go/attn/kernels"
)

// workload is one call on the gpu backend whose kernels the tool
// captures. Env is what the child's environment must add (the plan that
// picks the kernels); run makes the call on an opened backend.
type workload struct {
	Name, Desc string
	Env        []string
	run        func(ctx context.Context, be kernels.Backend) error
}

var workloads = []workload{
	{
		Name: "fused-gqa",
		Desc: "causal GQA fused forward, 8 over 2 heads, N = 300, D = 64, f32 (the adapter's plan)",
		run:  fused(1, 300, 8, 2, 64, true),
	},
	{
		Name: "fused-gqa-hw",
		Desc: "fused-gqa under ATTN_GPU_PLAN=hardware",
		Env:  []string{"ATTN_GPU_PLAN=hardware"},
		run:  fused(1, 300, 8, 2, 64, true),
	},
	prefill(64),
	prefill(128),
	decode("f32", kernels.Float32),
	decode("f16", kernels.Float16),
	decode("q8", kernels.Q8),
	decode("q4", kernels.Q4),
	{
		Name: "backward-d128",
		Desc: "the backward pass (its forward, then the gradients' kernels), 8 heads, N = 256, D = 128, not causal, f32, under ATTN_GPU_PLAN=hardware",
		Env:  []string{"ATTN_GPU_PLAN=hardware"},
		run: func(ctx context.Context, be kernels.Backend) error {
			const n, h, d = 256, 8, 128
			t := func(seed uint64) *kernels.Tensor {
				return &kernels.Tensor{Shape: []int{1, n, h, d}, Layout: kernels.BNHD, Data: fill(n*h*d, seed)}
			}
			_, err := kernels.AttentionGrad(ctx, be, t(1), t(2), t(3), t(4), nil)
			return err
		},
	},
	{
		Name: "staged",
		Desc: "the staged path (scores, softmax, context: the weights asked for), 8 heads, N = 256, D = 64, causal, f32 (the adapter's plan)",
		run: func(ctx context.Context, be kernels.Backend) error {
			const n, h, d = 256, 8, 64
			t := func(seed uint64) *kernels.Tensor {
				return &kernels.Tensor{Shape: []int{1, n, h, d}, Layout: kernels.BNHD, Data: fill(n*h*d, seed)}
			}
			_, err := kernels.Attention(ctx, be, t(1), t(2), t(3), &kernels.Options{Causal: true, Strategy: kernels.Staged, Weights: true})
			return err
		},
	},
	decodeWith("sparse", "512 chosen keys a KV head of 4096 (index lists)", func(o *kernels.AttendOptions, hkv, keys int) {
		const per = 512
		idx := make([]int32, hkv*per)
		for i := range idx {
			idx[i] = int32((i % per) * (keys / per))
		}
		o.Indices = &kernels.Indices{Heads: hkv, PerRow: per, Idx: idx}
	}),
	decodeWith("tree", "a binary tree of 8 draft tokens, the last of 4096 keys, each seeing its ancestors", nil),
}

func findWorkload(name string) (workload, bool) {
	for _, w := range workloads {
		if w.Name == name {
			return w, true
		}
	}
	return workload{}, false
}

// fill returns n values in [-1, 1): any finite values compile the same
// kernels; a fixed seed keeps runs alike.
func fill(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n)
	for i := range x {
		x[i] = 2*r.Float32() - 1
	}
	return x
}

// fused is one Attention call in f32, BNHD: b batches of n queries and
// keys, h query heads over hkv KV heads, head dim d.
func fused(b, n, h, hkv, d int, causal bool) func(context.Context, kernels.Backend) error {
	return func(ctx context.Context, be kernels.Backend) error {
		q := &kernels.Tensor{Shape: []int{b, n, h, d}, Layout: kernels.BNHD, Data: fill(b*n*h*d, 1)}
		k := &kernels.Tensor{Shape: []int{b, n, hkv, d}, Layout: kernels.BNHD, Data: fill(b*n*hkv*d, 2)}
		v := &kernels.Tensor{Shape: []int{b, n, hkv, d}, Layout: kernels.BNHD, Data: fill(b*n*hkv*d, 3)}
		_, err := kernels.Attention(ctx, be, q, k, v, &kernels.Options{Causal: causal})
		return err
	}
}

// prefill is the kernel of the prefill that docs/gpu.md measures on an
// H100 (B = 1, 8 heads, not causal, N = 16384, f32) under the hardware
// plan, compiled at N = 256: the plan picks a prefill kernel and its
// tiles by the head dims and the device's workgroup memory alone
// (plan.PrefillKernel), so the shader is the same.
func prefill(d int) workload {
	return workload{
		Name: fmt.Sprintf("prefill-d%d", d),
		Desc: fmt.Sprintf("prefill's kernel, 8 heads, D = %d, not causal, f32, under ATTN_GPU_PLAN=hardware, at N = 256 (N = 16384 compiles the same)", d),
		Env:  []string{"ATTN_GPU_PLAN=hardware"},
		run:  fused(1, 256, 8, 8, d, false),
	}
}

// decode is one decoding step, 32 query heads over 8 KV heads, D = 128,
// over 4096 keys of a cache of dtype dt, under the hardware plan.
func decode(name string, dt kernels.DType) workload {
	return cacheStep("decode-"+name, fmt.Sprintf("one decoding step, 32 over 8 heads, D = 128, 4096 keys of a %s cache, under ATTN_GPU_PLAN=hardware", name), dt, 1, nil)
}

// decodeWith is a step over decode's f32 cache whose options set sets
// (given the KV heads and keys); with set nil, a speculative tree of 8
// draft tokens appended last, each seeing its ancestors in a binary tree.
func decodeWith(name, what string, set func(o *kernels.AttendOptions, hkv, keys int)) workload {
	desc := fmt.Sprintf("a step of 32 over 8 heads, D = 128, f32, under ATTN_GPU_PLAN=hardware: %s", what)
	if set != nil {
		return cacheStep(name, desc, kernels.Float32, 1, set)
	}
	const nq = 8
	keep := make([]bool, nq*nq)
	for i := range nq {
		for j := i; ; j = (j - 1) / 2 {
			keep[i*nq+j] = true
			if j == 0 {
				break
			}
		}
	}
	return cacheStep(name, desc, kernels.Float32, nq, func(o *kernels.AttendOptions, _, _ int) {
		o.Tree = &kernels.Tree{B: 1, N: nq, Keep: keep}
	})
}

// cacheStep is one Attend of nq queries a head over a cache of 4096
// keys of dtype dt, 32 query heads over 8 KV heads, D = 128, causal,
// its options set by set where not nil, under the hardware plan.
func cacheStep(name, desc string, dt kernels.DType, nq int, set func(o *kernels.AttendOptions, hkv, keys int)) workload {
	const h, hkv, d, keys = 32, 8, 128, 4096
	return workload{
		Name: name,
		Desc: desc,
		Env:  []string{"ATTN_GPU_PLAN=hardware"},
		run: func(ctx context.Context, be kernels.Backend) error {
			c, err := kernels.NewKVCache(be, 1, keys, kernels.CacheConfig{KVHeads: hkv, D: d, DType: dt, Layout: kernels.BNHD})
			if err != nil {
				return err
			}
			defer c.Release()
			k := &kernels.Tensor{Shape: []int{keys, hkv, d}, Data: fill(keys*hkv*d, 2)}
			v := &kernels.Tensor{Shape: []int{keys, hkv, d}, Data: fill(keys*hkv*d, 3)}
			if err := c.Append(0, k, v); err != nil {
				return err
			}
			q := &kernels.Tensor{Shape: []int{1, nq, h, d}, Layout: kernels.BNHD, Data: fill(nq*h*d, 1)}
			out, err := kernels.NewTensor(kernels.BNHD, 1, nq, h, d)
			if err != nil {
				return err
			}
			o := &kernels.AttendOptions{Causal: true}
			if set != nil {
				set(o, hkv, keys)
			}
			return c.Attend(ctx, q, out, nil, o)
		},
	}
}
