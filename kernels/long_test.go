package kernels_test

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/kernels"

	_ "github.com/attn-go/attn/cpu"
)

// TestAttentionLongRSS runs kernels.Attention on the CPU backend at
// N = 131072 (B=1, H=8, D=64, BNHD, fused: Q, K, V and O are 256 MiB
// each) and holds the process's peak RSS to the problem about once: the
// CPU backend reads Q, K and V in place and writes O into the result,
// so at most 1.5 GiB (1 GiB of tensors, the rest the test binary's and
// the backend's scratch). A causal window of 256 keys keeps the
// arithmetic to seconds (the full N² pass takes minutes on a small
// machine) while every row and tensor is still read and written; the
// output is checked against the reference at sampled rows. It runs
// only with ATTN_LONG=1 (CI's step of long checks); ATTN_LONG_N
// overrides N.
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
	const h, d, window = 8, 64, 255
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
	opts := &kernels.Options{Strategy: kernels.Fused, Causal: true, Window: &kernels.Window{Left: window, Right: 0}}
	res, err := kernels.Attention(context.Background(), be, q, k, v, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Out.Data) != n*h*d {
		t.Fatalf("output has %d elements, want %d", len(res.Out.Data), n*h*d)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	peak, data := ru.Maxrss<<10, int64(n*h*d*4)
	t.Logf("N=%d: peak RSS %d MiB (data: Q, K, V, O %d MiB each)", n, peak>>20, data>>20)
	if limit := 4*data + 512<<20; peak > limit {
		t.Errorf("peak RSS %d MiB, want at most %d MiB: Q, K, V and O once, and 512 MiB besides", peak>>20, limit>>20)
	}
	// Sampled rows against the float64 reference: the last position of
	// each head sees keys n−256 … n−1.
	for _, i := range []int{0, 1, window, n/2 + 7, n - 1} {
		for hh := range h {
			want := refRow(q, k, v, i, hh, max(0, i-window), i)
			for c := range d {
				got := float64(res.Out.Data[(i*h+hh)*d+c])
				if backendtest.Exceeds(math.Abs(got-want[c]), 1e-4*(1+math.Abs(want[c]))) {
					t.Fatalf("row %d head %d column %d: %g, want %g", i, hh, c, got, want[c])
				}
			}
		}
	}
}

// refRow is the float64 attention of query row i of head hh over keys
// lo … hi of the BNHD tensors q, k and v ([1, N, H, D]), scale 1/√D.
func refRow(q, k, v *kernels.Tensor, i, hh, lo, hi int) []float64 {
	h, d := q.Shape[2], q.Shape[3]
	at := func(x *kernels.Tensor, pos, c int) float64 { return float64(x.Data[(pos*h+hh)*d+c]) }
	scale := 1 / math.Sqrt(float64(d))
	s := make([]float64, hi-lo+1)
	m := math.Inf(-1)
	for j := range s {
		for c := range d {
			s[j] += at(q, i, c) * at(k, lo+j, c)
		}
		s[j] *= scale
		m = math.Max(m, s[j])
	}
	out := make([]float64, d)
	var l float64
	for j, x := range s {
		p := math.Exp(x - m)
		l += p
		for c := range d {
			out[c] += p * at(v, lo+j, c)
		}
	}
	for c := range out {
		out[c] /= l
	}
	return out
}
