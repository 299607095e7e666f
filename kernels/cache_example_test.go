package kernels_test

import (
	"context"
	"fmt"
	"log"

	"github.com/attn-go/attn/kernels"
)

// A decoding loop over a paged KV cache: the prompt's keys and values go
// in once, then each step appends the new token's key and value and
// attends its query over everything cached. Two query heads share one
// KV head (GQA); the cache stores float16.
func ExamplePagePool_Attend() {
	be, err := kernels.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	cfg := kernels.CacheConfig{KVHeads: 1, D: 2, DType: kernels.Float16, Layout: kernels.BNHD}
	pool, err := kernels.NewPagePool(be, 4, 16, cfg) // 16 pages of 4 tokens
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Release()
	seq, err := pool.NewSeq()
	if err != nil {
		log.Fatal(err)
	}
	defer seq.Release()

	// tokens returns n tokens' keys or values, [n, KVHeads, D].
	tokens := func(xs ...float32) *kernels.Tensor {
		return &kernels.Tensor{Shape: []int{len(xs) / 2, 1, 2}, Data: xs}
	}
	// The prompt: three tokens.
	if err := seq.Append(tokens(1, 0, 0, 1, 1, 1), tokens(1, 0, 0, 1, 0.5, 0.5)); err != nil {
		log.Fatal(err)
	}
	q := &kernels.Tensor{Shape: []int{1, 1, 2, 2}, Layout: kernels.BNHD, Data: make([]float32, 4)} // [B, Nq, H, D]
	out, _ := kernels.NewTensor(kernels.BNHD, 1, 1, 2, 2)
	for step, tok := range [][2]float32{{2, 0}, {0, 2}} {
		// The new token's key and value, then its query in both heads.
		if err := seq.Append(tokens(tok[0], tok[1]), tokens(tok[0], tok[1])); err != nil {
			log.Fatal(err)
		}
		copy(q.Data, []float32{tok[0], tok[1], -tok[0], -tok[1]})
		if err := pool.Attend(context.Background(), []*kernels.Seq{seq}, q, out, nil, &kernels.AttendOptions{Causal: true}); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("step %d: %d tokens cached, head 0 %.3f, head 1 %.3f\n", step, seq.Len(), out.Data[:2], out.Data[2:])
	}
	// Output:
	// step 0: 4 tokens cached, head 0 [1.530 0.117], head 1 [0.312 0.726]
	// step 1: 5 tokens cached, head 0 [0.186 1.474], head 1 [1.226 0.190]
}
