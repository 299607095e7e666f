package kernels_test

import (
	"context"
	"errors"
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

// What a q8 cache keeps of the values appended to it: Read returns a
// sequence's keys and values in float32, as an Attend reads them: each
// within half a quantization step (a row's max|x|/127, up to 32 values a
// block) of what went in, and the step itself held as a float16, which
// is why 1 reads 0.9999.
// A fork reads the pages it shares with its parent.
func ExampleSeq_Read() {
	be, err := kernels.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	cfg := kernels.CacheConfig{KVHeads: 1, D: 4, DType: kernels.Q8, Layout: kernels.BNHD}
	pool, err := kernels.NewPagePool(be, 16, 4, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Release()
	seq, err := pool.NewSeq()
	if err != nil {
		log.Fatal(err)
	}
	defer seq.Release()
	k := &kernels.Tensor{Shape: []int{2, 1, 4}, Data: []float32{0.1, -0.25, 0.5, 1, 3, 0.01, -2, 0.333}} // [n, KVHeads, D]
	if err := seq.Append(k, k); err != nil {
		log.Fatal(err)
	}
	fork, err := seq.Fork()
	if err != nil {
		log.Fatal(err)
	}
	defer fork.Release()
	got, _, err := fork.Read()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Shape)
	fmt.Printf("%.4f\n", got.Data)
	// Output:
	// [2 1 4]
	// [0.1024 -0.2520 0.5039 0.9999 2.9998 0.0000 -2.0078 0.3307]
}

// The README's decoding loop on a pool that fills: four pages of two
// tokens, two of them held by another sequence (victim). When an Append
// finds too few free pages it returns ErrCacheFull and leaves the
// sequence as it was; the loop preempts the victim, whose pages go back
// to the pool, and appends again. Only Append and Keep return
// ErrCacheFull, so the loop tests for it after Append, and checks
// Attend's error on its own.
func ExampleSeq_Append() {
	be, err := kernels.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	ctx := context.Background()
	cfg := kernels.CacheConfig{KVHeads: 1, D: 2, DType: kernels.Q8, Layout: kernels.BNHD}
	pool, err := kernels.NewPagePool(be, 2, 4, cfg) // 4 pages of 2 tokens
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Release()
	tokens := func(xs ...float32) *kernels.Tensor { // [n, KVHeads, D]
		return &kernels.Tensor{Shape: []int{len(xs) / 2, 1, 2}, Data: xs}
	}
	victim, err := pool.NewSeq()
	if err != nil {
		log.Fatal(err)
	}
	defer victim.Release()
	if err := victim.Append(tokens(1, 1, 1, 1, 1, 1), tokens(1, 1, 1, 1, 1, 1)); err != nil { // 3 tokens, 2 pages
		log.Fatal(err)
	}
	q := &kernels.Tensor{Shape: []int{1, 1, 2, 2}, Layout: kernels.BNHD, Data: []float32{1, 0, 0, 1}} // [B, 1, H, D]
	out, _ := kernels.NewTensor(kernels.BNHD, 1, 1, 2, 2)                                             // written by Attend

	promptK, promptV := tokens(1, 0), tokens(2, 0)
	seq, err := pool.NewSeq()
	if err != nil {
		log.Fatal(err)
	}
	defer seq.Release()
	if err := seq.Append(promptK, promptV); err != nil {
		log.Fatal(err)
	}
	for step := range 5 {
		k, v := tokens(0, float32(step)), tokens(0, float32(step))
		err := seq.Append(k, v)
		if errors.Is(err, kernels.ErrCacheFull) {
			fmt.Printf("step %d: ErrCacheFull at %d tokens; the victim's %d preempted\n", step, seq.Len(), victim.Len())
			victim.Release()
			err = seq.Append(k, v)
		}
		if err != nil {
			log.Fatal(err)
		}
		err = pool.Attend(ctx, []*kernels.Seq{seq}, q, out, nil, &kernels.AttendOptions{Causal: true})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("step %d: %d tokens cached, free pages %d, out %.2f\n", step, seq.Len(), pool.Free(), out.Data)
	}
	// Output:
	// step 0: 2 tokens cached, free pages 1, out [1.34 0.00 1.00 0.00]
	// step 1: 3 tokens cached, free pages 0, out [1.01 0.25 0.50 0.50]
	// step 2: 4 tokens cached, free pages 0, out [0.81 0.60 0.25 1.26]
	// step 3: ErrCacheFull at 4 tokens; the victim's 3 preempted
	// step 3: 5 tokens cached, free pages 1, out [0.67 1.00 0.12 2.14]
	// step 4: 6 tokens cached, free pages 1, out [0.58 1.42 0.06 3.08]
}
