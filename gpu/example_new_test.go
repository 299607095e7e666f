//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/kernels"
)

// A GPU backend on the first adapter WebGPU offers, falling back to the
// CPU where there is none (kernels.Open("auto") does the same in one
// call). The device's name is Info().Adapter.Name; Name() is the
// backend's, "gpu".
func ExampleNew() {
	var be kernels.Backend
	be, err := gpu.New()
	if errors.Is(err, kernels.ErrUnavailable) {
		be, err = kernels.Open("cpu")
	}
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	fmt.Println(be.Name(), be.Info().Adapter.Name)
	q := &kernels.Tensor{Shape: []int{1, 2}, Data: []float32{0, 4}}
	k := &kernels.Tensor{Shape: []int{2, 2}, Data: []float32{4, 0, 0, 4}}
	res, err := kernels.Attention(context.Background(), be, q, k, k, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.4f\n", res.Out.Data)
}
