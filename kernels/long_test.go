package kernels_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"

	_ "github.com/attn-go/attn/cpu"
)

// TestAttentionLongRSS runs kernels.Attention on the CPU backend at
// N = 131072 (B=1, H=8, D=64, BNHD, fused, non-causal: Q, K, V and O are
// 256 MiB each) and reports the process's peak RSS. Several minutes on 2
// cores, so it runs only with ATTN_LONG=1; ATTN_LONG_N overrides N. The
// CPU backend reads Q, K and V in place and writes O into the result, so
// the process holds the problem about once (1 GiB).
func TestAttentionLongRSS(t *testing.T) {
	if testing.Short() || os.Getenv("ATTN_LONG") == "" {
		t.Skip("set ATTN_LONG=1 for the N=131072 peak-memory run")
	}
	n := 131072
	if s := os.Getenv("ATTN_LONG_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	const h, d = 8, 64
	be, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	rng := rand.New(rand.NewPCG(131072, 1))
	mk := func() *kernels.Tensor {
		x, err := kernels.NewTensor(kernels.BNHD, 1, n, h, d)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x.Data {
			x.Data[i] = float32(rng.NormFloat64())
		}
		return x
	}
	q, k, v := mk(), mk(), mk()
	res, err := kernels.Attention(context.Background(), be, q, k, v, &kernels.Options{Strategy: kernels.Fused})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Out.Data) != n*h*d {
		t.Fatalf("output has %d elements, want %d", len(res.Out.Data), n*h*d)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		t.Logf("N=%d: peak RSS %d MiB (data: Q, K, V, O %d MiB each)", n, ru.Maxrss>>10, n*h*d*4>>20)
	}
}
