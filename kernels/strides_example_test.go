package kernels_test

import (
	"context"
	"fmt"

	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// Q, K and V sliced from one fused QKV projection [B, N, 3·H, D]: views
// of its storage, read in place by the CPU backend and gathered for a
// GPU, never copied by the caller.
func ExampleTensor_Slice() {
	const b, n, h, d = 1, 4, 2, 8
	qkv, _ := kernels.NewTensor(kernels.BNHD, b, n, 3*h, d)
	for i := range qkv.Data {
		qkv.Data[i] = float32(i%7) / 7
	}
	q, _ := qkv.Slice(2, 0, h)
	k, _ := qkv.Slice(2, h, 2*h)
	v, _ := qkv.Slice(2, 2*h, 3*h)
	fmt.Println("K:", k.Shape, "strides", k.Strides)

	be, err := cpu.New()
	if err != nil {
		panic(err)
	}
	defer be.Close()
	res, err := kernels.Attention(context.Background(), be, q, k, v, &kernels.Options{Causal: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("O:", res.Out.Shape, "strides", res.Out.Strides)
	// Output:
	// K: [1 4 2 8] strides [192 48 8 1]
	// O: [1 4 2 8] strides []
}
