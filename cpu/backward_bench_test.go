package cpu_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/internal/workload"
)

// BenchmarkBackward is the backward pass's CPU shape (docs/benchmarks.md,
// "The backward pass"), H = 8, N = 4096, f32, D = 64 and 128, non-causal
// and causal: the fused forward (with its LSE) and the backward, side by
// side.
//
//	go test -run XXX -bench Backward -count 3 ./cpu
func BenchmarkBackward(b *testing.B) {
	be, err := cpu.New()
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	ctx := context.Background()
	for _, d := range []int{64, 128} {
		for _, causal := range []bool{false, true} {
			p := backend.Problem{B: 1, H: 8, KVHeads: 8, Nq: 4096, Nk: 4096, D: d, Causal: causal}.Resolved()
			var bufs [9]backend.Buffer
			for i, n := range []int{p.QLen(), p.KLen(), p.VLen(), p.OLen(), p.LSELen(), p.OLen(), p.QLen(), p.KLen(), p.VLen()} {
				if bufs[i], err = be.Alloc(backend.Float32, n); err != nil {
					b.Fatal(err)
				}
				defer bufs[i].Release()
			}
			q, k, v, o, lse, do, dq, dk, dv := bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], bufs[7], bufs[8]
			if err := be.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, lse); err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("D%d/causal=%t/forward", d, causal), func(b *testing.B) {
				for range b.N {
					if err := be.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, lse); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("D%d/causal=%t/backward", d, causal), func(b *testing.B) {
				for range b.N {
					if err := be.Backward(ctx, backend.BackwardParams{Problem: p}, q, k, v, o, lse, do, dq, dk, dv, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkBackwardBlocks is the sparse backward's block-mask shape:
// H = 8, N = 16384, D = 64, f32, a block mask keeping 10 % of its
// 128 × 128 blocks (workload.RandomBlocks), beside the dense backward.
//
//	go test -run XXX -bench BackwardBlocks -benchtime 1x -count 3 ./cpu
func BenchmarkBackwardBlocks(b *testing.B) {
	dense := backend.Problem{B: 1, H: 8, KVHeads: 8, Nq: 16384, Nk: 16384, D: 64}.Resolved()
	sparse := dense
	sparse.Blocks = workload.RandomBlocks(dense, 128, 0.1)
	sparseBackward(b, dense, "blocks10", sparse)
}

// BenchmarkBackwardIndices is the sparse backward's index-list shape: a
// decoding chunk of 64 queries (32 heads over 8 KV heads, D = 128, f32,
// causal) over 32768 keys, each row naming 2048 of them (workload.TopK),
// beside the dense backward of the same chunk.
//
//	go test -run XXX -bench BackwardIndices -benchtime 3x -count 3 ./cpu
func BenchmarkBackwardIndices(b *testing.B) {
	dense := backend.Problem{B: 1, H: 32, KVHeads: 8, Nq: 64, Nk: 32768, D: 128, Causal: true}.Resolved()
	sparse := dense
	sparse.Indices = workload.TopK(dense, 2048)
	sparseBackward(b, dense, "topk2048", sparse)
}

// sparseBackward times the backward of dense and of sparse (dense with
// a block mask or an index list) on the same buffers, as sub-benchmarks
// "dense" and name, each after its own forward has made the LSE; beside
// the wall time, the process's CPU time (cpu-ns/op, all threads), which
// other work on a shared machine moves less.
func sparseBackward(b *testing.B, dense backend.Problem, name string, sparse backend.Problem) {
	be, err := cpu.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() }) // after the buffers' releases (cleanups run last first)
	ctx := context.Background()
	q, k, v, o, lse, do, dq, dk, dv := backwardBuffers(b, be, dense)
	for _, c := range []struct {
		name string
		p    backend.Problem
	}{{"dense", dense}, {name, sparse}} {
		b.Run(c.name, func(b *testing.B) {
			if err := be.Fused(ctx, backend.FusedParams{Problem: c.p}, q, k, v, o, lse); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu0 := processCPU()
			for range b.N {
				if err := be.Backward(ctx, backend.BackwardParams{Problem: c.p}, q, k, v, o, lse, do, dq, dk, dv, nil); err != nil {
					b.Fatal(err)
				}
			}
			if t := processCPU() - cpu0; cpu0 > 0 {
				b.ReportMetric(float64(t.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// backwardBuffers are the float32 buffers of a Backward call on p (Q, K,
// V, O, LSE, dO, dQ, dK, dV), each written with values of a few
// magnitudes (a buffer never written reads the kernel's one zero page),
// released when b ends.
func backwardBuffers(b *testing.B, be backend.Backend, p backend.Problem) (q, k, v, o, lse, do, dq, dk, dv backend.Buffer) {
	var bufs [9]backend.Buffer
	for i, n := range []int{p.QLen(), p.KLen(), p.VLen(), p.OLen(), p.LSELen(), p.OLen(), p.QLen(), p.KLen(), p.VLen()} {
		buf, err := be.Alloc(backend.Float32, n)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(buf.Release)
		x := make([]float32, n)
		for j := range x {
			x[j] = float32(j%97)/97 - 0.5
		}
		if err := be.Write(buf, 0, x); err != nil {
			b.Fatal(err)
		}
		bufs[i] = buf
	}
	return bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], bufs[7], bufs[8]
}
