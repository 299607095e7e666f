package kernels_test

import (
	"context"
	"fmt"

	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// Block-sparse attention: two documents of four tokens packed into one
// sequence, each token attending its own document's tokens up to
// itself (causal, as the README's snippet has it). DocumentBlocks keeps
// the two diagonal blocks of 4×4; the off-diagonal ones are never
// computed. A zero query weighs the keys it sees alike, so each row
// outputs the mean of its document's values so far.
func ExampleDocumentBlocks() {
	be, err := cpu.New()
	if err != nil {
		panic(err)
	}
	defer be.Close()
	q, _ := kernels.NewTensor(kernels.BHND, 1, 1, 8, 2) // [B, H, N, D]
	k, _ := kernels.NewTensor(kernels.BHND, 1, 1, 8, 2)
	v := &kernels.Tensor{Shape: []int{1, 1, 8, 1}, Data: []float32{1, 2, 3, 4, 10, 20, 30, 40}}
	blocks, err := kernels.DocumentBlocks([]int{0, 4, 8}, nil, 4)
	if err != nil {
		panic(err)
	}
	fmt.Println("blocks:", blocks.Shape, blocks.Keep)
	res, err := kernels.Attention(context.Background(), be, q, k, v, &kernels.Options{Blocks: blocks, Causal: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("O:", res.Out.Data)
	// Output:
	// blocks: [1 1 2 2] [true false false true]
	// O: [1 1.5 2 2.5 10 15 20 25]
}
