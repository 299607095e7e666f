//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	_ "github.com/attn-go/attn/cpu" // Tune checks every candidate against the CPU backend
	"github.com/attn-go/attn/gpu"
)

// Tuning the GPU kernels for a model's decoding steps once, on the
// user's own adapter: every gpu.New after it, in this process or the
// next, runs those shapes with the sizes that won, and says so in
// Info().Detail. The sweep prints its progress to stderr and stops
// within a minute. (attn tune is the same from the command line.)
func ExampleTune() {
	file, err := gpu.Tune(context.Background(), time.Minute, os.Stderr,
		"heads=32,kvheads=8,d=128,n=8192,nq=1,dtype=f16",
		"heads=32,kvheads=8,d=128,n=8192,nq=4,dtype=f16")
	if err != nil {
		log.Fatal(err)
	}
	be, err := gpu.New()
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	fmt.Println("tuned:", file)
	fmt.Println(be.Info().Detail)
}
