package kernels_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// Training with document masking over packed documents: three documents
// of 32, 64 and 32 tokens packed into one sequence of 128, each token
// attending only its own document's earlier tokens. A one-layer model
// (its queries the parameters, the target another layer's output) is
// trained twice by gradient descent, once with the document block mask
// (DocumentBlocks: blocks of 32, the off ones never computed, in the
// forward or the backward) and once with the dense keep-mask it stands
// for; the two loss curves are the same.
func ExampleDocumentBlocks_training() {
	be, err := cpu.New()
	if err != nil {
		panic(err)
	}
	defer be.Close()
	ctx := context.Background()
	cu := []int{0, 32, 96, 128}
	const n, h, d = 128, 2, 8
	blocks, err := kernels.DocumentBlocks(cu, nil, 32)
	if err != nil {
		panic(err)
	}
	keep := &kernels.Mask{Shape: []int{n, n}, Keep: make([]bool, n*n)}
	doc := func(i int) int { // the document of token i
		x := 0
		for i >= cu[x+1] {
			x++
		}
		return x
	}
	for i := range n {
		for j := range n {
			keep.Keep[i*n+j] = doc(i) == doc(j)
		}
	}
	train := func(opts *kernels.Options) []float64 {
		rng := rand.New(rand.NewPCG(1, 2))
		rnd := func() *kernels.Tensor {
			t, _ := kernels.NewTensor(kernels.BNHD, 1, n, h, d)
			for i := range t.Data {
				t.Data[i] = float32(rng.NormFloat64())
			}
			return t
		}
		k, v, q0, q := rnd(), rnd(), rnd(), rnd()
		target, err := kernels.Attention(ctx, be, q0, k, v, opts)
		if err != nil {
			panic(err)
		}
		var losses []float64
		for range 5 {
			res, err := kernels.Attention(ctx, be, q, k, v, opts)
			if err != nil {
				panic(err)
			}
			dOut, _ := kernels.NewTensor(kernels.BNHD, res.Out.Shape...) // ∂L/∂O = O − T
			loss := 0.0
			for i, o := range res.Out.Data {
				dOut.Data[i] = o - target.Out.Data[i]
				loss += 0.5 * float64(dOut.Data[i]) * float64(dOut.Data[i])
			}
			losses = append(losses, loss)
			g, err := kernels.AttentionGrad(ctx, be, q, k, v, dOut, &kernels.GradOptions{Options: opts})
			if err != nil {
				panic(err)
			}
			for i, x := range g.DQ.Data {
				q.Data[i] -= 0.5 * x
			}
		}
		return losses
	}
	withBlocks := train(&kernels.Options{Causal: true, Blocks: blocks})
	dense := train(&kernels.Options{Causal: true, Mask: keep})
	fmt.Printf("block mask: %.4f\n", withBlocks)
	fmt.Printf("dense mask: %.4f\n", dense)
	// Output:
	// block mask: [123.9813 90.4635 73.2311 62.6626 55.1364]
	// dense mask: [123.9813 90.4635 73.2311 62.6626 55.1364]
}
