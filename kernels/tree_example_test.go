package kernels_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// speculativeStep is a speculative decoding step on be, printed to w: a
// draft model proposes a tree of tokens (here a root with two children,
// the first of which has a child), the target model appends their keys
// and values and verifies the whole tree in one Attend (each draft token
// sees the prompt and its own ancestors), and the accepted path (root,
// first child, its child: draft rows 0, 1 and 3) is kept as the
// sequence's next tokens.
func speculativeStep(be backend.Backend, w io.Writer) error {
	ctx := context.Background()
	cfg := kernels.CacheConfig{KVHeads: 1, D: 2, Layout: kernels.BNHD}
	pool, err := kernels.NewPagePool(be, 4, 16, cfg)
	if err != nil {
		return err
	}
	defer pool.Release()
	seq, err := pool.NewSeq()
	if err != nil {
		return err
	}
	defer seq.Release()
	tokens := func(xs ...float32) *kernels.Tensor { // [n, KVHeads, D]
		return &kernels.Tensor{Shape: []int{len(xs) / 2, 1, 2}, Data: xs}
	}
	// The prompt, then the draft's four tokens.
	if err := seq.Append(tokens(1, 0, 0, 1, 1, 1), tokens(1, 0, 0, 1, 1, 1)); err != nil {
		return err
	}
	if err := seq.Append(tokens(1, 1, 2, 0, 0, 2, 2, 2), tokens(1, 1, 2, 0, 0, 2, 2, 2)); err != nil {
		return err
	}
	// Row i of the tree says which draft rows draft token i sees.
	tree := &kernels.Tree{B: 1, N: 4, Keep: []bool{
		true, false, false, false, // 0: the root
		true, true, false, false, // 1: the root's first child
		true, false, true, false, // 2: its second child
		true, true, false, true, // 3: the first child's child
	}}
	q := &kernels.Tensor{Shape: []int{1, 4, 1, 2}, Layout: kernels.BNHD, Data: []float32{0, 1, 1, 0, 1, 0, 0, 1}} // [B, Nq, H, D]
	out, _ := kernels.NewTensor(kernels.BNHD, 1, 4, 1, 2)
	if err := pool.Attend(ctx, []*kernels.Seq{seq}, q, out, nil, &kernels.AttendOptions{Tree: tree, Scale: 1}); err != nil {
		return err
	}
	for i := range 4 {
		fmt.Fprintf(w, "draft token %d: %.4f\n", i, out.Data[2*i:2*i+2])
	}
	// The target model accepts the path 0 → 1 → 3.
	if err := seq.Keep(4, []int{0, 1, 3}); err != nil {
		return err
	}
	fmt.Fprintln(w, "length after keeping the path:", seq.Len())
	return nil
}

// The step of speculativeStep on the CPU backend (TestSpeculativeStepGPU
// runs it on the GPU too).
func ExampleSeq_Keep() {
	be, err := kernels.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	if err := speculativeStep(be, os.Stdout); err != nil {
		log.Fatal(err)
	}
	// Output:
	// draft token 0: [0.7031 0.8908]
	// draft token 1: [1.3862 0.3891]
	// draft token 2: [0.8030 0.8308]
	// draft token 3: [1.3232 1.3072]
	// length after keeping the path: 6
}
