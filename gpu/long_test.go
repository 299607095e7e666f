//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/kernels"
)

// The tests in this file are long problems (TestParityLongN, TestLargeKV:
// minutes on lavapipe, so only under ATTN_LONG=1) and the refusal of one
// too large for the device (TestStagedTooLarge: instant, so always).

// TestParityLongN compares the GPU's fused path with the CPU's at
// N = 16384 (B = 1, H = 2, D = 64), causal: O and the LSE, under the
// criterion of parity_test.go. Its rows see every count of keys from 1
// to 16384, the last the whole of a non-causal row of that N (which
// took lavapipe twice as long again, and proved nothing more).
func TestParityLongN(t *testing.T) {
	skipUnlessLong(t)
	g := openGPU(t)
	c := openCPU(t)
	for n, p := range []backend.Problem{
		causal(prob(1, 2, 2, 16384, 16384, 64, 64)),
	} {
		t.Run(caseName(p, nil, nil), func(t *testing.T) {
			cs := backendtest.RandomCase(newRand(uint64(100+n)), p, nil, nil)
			parity(t, g, c, cs, kernels.Fused, true)
		})
	}
}

// TestLargeKV runs problems whose K and V are each larger than the
// device's largest storage binding (128 MiB on lavapipe), so that every
// op binds them in windows: a decoding query over 655360 keys, and 8
// queries over 327680 keys in the BNHD layout, whose heads interleave in
// memory. Both strategies; the staged path's scores are only Nq×Nk.
// Eight queries are as many as the windows need: they cut the keys, not
// the queries (64 made that case most of the test's time on lavapipe).
func TestLargeKV(t *testing.T) {
	skipUnlessLong(t)
	g := openGPU(t)
	c := openCPU(t)
	bind := g.Info().Limits.MaxStorageBufferBindingSize
	for n, p := range []backend.Problem{
		prob(1, 1, 1, 1, 655360, 64, 64),
		bnhd(prob(1, 2, 2, 8, 327680, 64, 64)),
	} {
		t.Run(caseName(p, nil, nil), func(t *testing.T) {
			kBytes := uint64(p.KLen()) * 4
			if kBytes <= bind {
				t.Logf("K and V are %d MiB, within this device's %d MiB binding: no windows needed here", kBytes>>20, bind>>20)
			} else {
				t.Logf("K and V are %d MiB each, over the device's %d MiB storage binding", kBytes>>20, bind>>20)
			}
			cs := backendtest.RandomCase(newRand(uint64(200+n)), p, nil, nil)
			for _, s := range []kernels.Strategy{kernels.Fused, kernels.Staged} {
				t.Run(s.String(), func(t *testing.T) { parity(t, g, c, cs, s, true) })
			}
		})
	}
}

// TestStagedTooLarge asks kernels.Attention for staged problems whose
// B·H·Nq·Nk scores are more floats than the device's largest buffer
// (Caps().MaxBufferLen), with inputs small enough to upload: the call must
// fail with an error wrapping backend.ErrTooLarge that names the number of
// scores, and return no result.
func TestStagedTooLarge(t *testing.T) {
	g := openGPU(t)
	maxLen := g.Caps().MaxBufferLen
	if maxLen == 0 {
		t.Skip("the device reports no largest buffer")
	}
	for _, bh := range [][2]int{{1, 1}, {2, 4}} {
		b, h := bh[0], bh[1]
		// The smallest N with B·H·N² > maxLen.
		n := int(math.Sqrt(float64(maxLen) / float64(b*h)))
		for b*h*n*n <= maxLen {
			n++
		}
		for b*h*(n-1)*(n-1) > maxLen {
			n--
		}
		scores := b * h * n * n
		t.Run(fmt.Sprintf("B%d_H%d_N%d", b, h, n), func(t *testing.T) {
			const d = 2
			if in := 3 * 4 * int64(b) * int64(h) * int64(n) * d; in > 1<<30 {
				// A device without a buffer limit of its own (NVIDIA's
				// reports 2⁶⁴ − 1 bytes) needs more host memory than a
				// test may take to get past it.
				t.Skipf("%d scores are past the device's largest buffer only with %d MiB of inputs", scores, in>>20)
			}
			tensor := func() *kernels.Tensor {
				x := &kernels.Tensor{Shape: []int{b, h, n, d}, Data: make([]float32, b*h*n*d)}
				for i := range x.Data {
					x.Data[i] = float32(i%7) / 7
				}
				return x
			}
			res, err := kernels.Attention(context.Background(), g, tensor(), tensor(), tensor(),
				&kernels.Options{Strategy: kernels.Staged, LSE: true})
			t.Logf("%d scores, the device's largest buffer holds %d: %v", scores, maxLen, err)
			switch {
			case err == nil:
				t.Fatalf("staged attention with %d scores (over the %d the device's largest buffer holds) succeeded", scores, maxLen)
			case !errors.Is(err, backend.ErrTooLarge):
				t.Errorf("error does not wrap ErrTooLarge: %v", err)
			case !strings.Contains(err.Error(), fmt.Sprint(scores)):
				t.Errorf("error does not name the %d scores: %v", scores, err)
			}
			if res != nil {
				t.Errorf("a result came back with the error: %+v", res)
			}
		})
	}
}

// TestAttentionReleasesBuffers checks that kernels.Attention frees every
// device buffer it allocated, when it succeeds and when it fails part
// way (the scores too large after Q, K, V and O were uploaded).
func TestAttentionReleasesBuffers(t *testing.T) {
	g := openGPU(t)
	x := &kernels.Tensor{Shape: []int{3, 4}, Data: make([]float32, 12)}
	if _, err := kernels.Attention(context.Background(), g, x, x, x, nil); err != nil {
		t.Fatal(err)
	}
	g.Trim() // what the pool keeps is not a leak
	if live, _ := g.Memory(); live != 0 {
		t.Errorf("after a successful call: %d bytes of device memory still allocated", live)
	}

	n := int(math.Sqrt(float64(g.Caps().MaxBufferLen))) + 1 // n² scores do not fit
	big := &kernels.Tensor{Shape: []int{n, 1}, Data: make([]float32, n)}
	live0, _ := g.Memory()
	if _, err := kernels.Attention(context.Background(), g, big, big, big, &kernels.Options{Strategy: kernels.Staged}); !errors.Is(err, backend.ErrTooLarge) {
		t.Fatalf("%d×%d staged scores: got %v, want ErrTooLarge", n, n, err)
	}
	g.Trim()
	if live, _ := g.Memory(); live != live0 {
		t.Errorf("after a failed call: %d bytes of device memory still allocated, %d before", live, live0)
	}
}

// TestAutoPicksFused checks kernels' Auto strategy on the GPU: fused even
// for a tiny problem (three staged ops cost three rounds of submissions),
// staged when the weights are asked for.
func TestAutoPicksFused(t *testing.T) {
	g := openGPU(t)
	q := &kernels.Tensor{Shape: []int{3, 4}, Data: make([]float32, 12)}
	for _, c := range []struct {
		weights bool
		want    kernels.Strategy
	}{{false, kernels.Fused}, {true, kernels.Staged}} {
		res, err := kernels.Attention(context.Background(), g, q, q, q, &kernels.Options{Weights: c.weights})
		if err != nil {
			t.Fatal(err)
		}
		if res.Strategy != c.want {
			t.Errorf("Auto with Weights=%t ran %v, want %v", c.weights, res.Strategy, c.want)
		}
	}
}
