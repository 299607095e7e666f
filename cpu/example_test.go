package cpu_test

import (
	"context"
	"fmt"
	"log"

	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// A CPU backend made with options, rather than by kernels.Open("cpu")
// with the defaults: here two worker goroutines. It is a kernels.Backend
// like any other.
func ExampleNew() {
	be, err := cpu.New(cpu.WithThreads(2))
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	// One query over two keys, D = 2: the query matches the second key.
	q := &kernels.Tensor{Shape: []int{1, 2}, Data: []float32{0, 4}}
	k := &kernels.Tensor{Shape: []int{2, 2}, Data: []float32{4, 0, 0, 4}}
	v := &kernels.Tensor{Shape: []int{2, 2}, Data: []float32{1, 0, 0, 1}}
	res, err := kernels.Attention(context.Background(), be, q, k, v, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(be.Name(), be.Info().Threads)
	fmt.Printf("%.4f\n", res.Out.Data)
	// Output:
	// cpu 2
	// [0.0000 1.0000]
}
