package kernels_test

import (
	"context"
	"fmt"

	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// Sparse attention over chosen keys: each query row attends only the
// keys its list names (an indexer's top-k, here by hand), −1 padding the
// list. A zero query weighs the keys it sees alike, so each output is
// the mean of the values its row names.
func ExampleIndices() {
	be, err := cpu.New()
	if err != nil {
		panic(err)
	}
	defer be.Close()
	q, _ := kernels.NewTensor(kernels.BHND, 1, 1, 2, 2) // [B, H, Nq, D]: two zero queries
	k, _ := kernels.NewTensor(kernels.BHND, 1, 1, 4, 2)
	v := &kernels.Tensor{Shape: []int{1, 1, 4, 2}, Data: []float32{1, 0, 0, 1, 2, 2, 4, 0}}
	ix := &kernels.Indices{Heads: 1, PerRow: 3, Idx: []int32{
		0, 3, -1, // row 0: keys 0 and 3
		2, -1, -1, // row 1: key 2
	}}
	res, err := kernels.Attention(context.Background(), be, q, k, v, &kernels.Options{Indices: ix, LSE: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("O:", res.Out.Data)
	fmt.Printf("LSE: %.4f %.4f\n", res.LSE.Data[0], res.LSE.Data[1])

	ix.Idx[1] = 0 // key 0 twice in row 0
	_, err = kernels.Attention(context.Background(), be, q, k, v, &kernels.Options{Indices: ix})
	fmt.Println(err)
	// Output:
	// O: [2.5 0 2 2]
	// LSE: 0.6931 0.0000
	// attn: bad shape: index list: batch 0, head 0, row 0 names key 0 twice (entries 0 and 1)
}
