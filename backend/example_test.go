package backend_test

import (
	"fmt"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
)

// A backend of one's own registers from its package's init, under a name
// kernels.Open then takes; its priority ranks it for "auto" (the GPU's is
// above the CPU's). Here a CPU backend of four workers is registered as
// "cpu4" and opened by name.
func ExampleRegister() {
	backend.Register("cpu4", 0, func() (backend.Backend, error) {
		return cpu.New(cpu.WithThreads(4))
	})
	be, err := backend.Open("cpu4")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer be.Close()
	fmt.Println(be.Name(), be.Info().Threads)
	_, err = backend.Open("tpu")
	fmt.Println(err != nil)
	// Output:
	// cpu 4
	// true
}
