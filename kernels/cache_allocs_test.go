package kernels_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// A steady-state decoding step — append one token, attend one query —
// allocates nothing on the CPU backend, over a contiguous cache and over
// a page pool (GC off while counting, so that it cannot empty the
// backend's pools).
func TestCacheDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates as it tracks")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	be := openCPU(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(61, 62))
	cfg := kernels.CacheConfig{KVHeads: 2, D: 64, DType: kernels.Float16, Layout: kernels.BNHD}
	cache, err := kernels.NewKVCache(be, 1, 1000, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Release()
	pool, err := kernels.NewPagePool(be, 16, 70, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Release()
	seqs := []*kernels.Seq{newSeq(t, pool)}
	k, v := rows(rng, kernels.Float16, 1, 2, 64), rows(rng, kernels.Float16, 1, 2, 64)
	q := rows(rng, kernels.Float16, 1, 8, 64)
	q.Shape = []int{1, 1, 8, 64}
	out, _ := kernels.NewTensorOf(kernels.Float16, kernels.BNHD, 1, 1, 8, 64)
	opts := &kernels.AttendOptions{Causal: true}
	for name, step := range map[string]func(){
		"contiguous": func() {
			if err := cache.Append(0, k, v); err != nil {
				t.Fatal(err)
			}
			if err := cache.Attend(ctx, q, out, nil, opts); err != nil {
				t.Fatal(err)
			}
		},
		"paged": func() {
			if err := seqs[0].Append(k, v); err != nil {
				t.Fatal(err)
			}
			if err := pool.Attend(ctx, seqs, q, out, nil, opts); err != nil {
				t.Fatal(err)
			}
		},
	} {
		step() // the first step sizes the buffers
		if n := testing.AllocsPerRun(50, step); n != 0 {
			t.Errorf("%s: a decoding step allocated %v times", name, n)
		}
	}
}

// Appending float32 rows — the one-pass range check, the narrowing —
// allocates nothing in the steady state, into every storage dtype and
// layout, contiguous and paged (it once allocated twice a call, for the
// names of the range check's message).
func TestCacheAppendAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates as it tracks")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	be := openCPU(t)
	for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
		for _, dt := range backend.DTypes {
			for _, paged := range []bool{false, true} {
				for _, n := range []int{1, 37} {
					name := fmt.Sprintf("%v/%v/paged=%v/n=%d", layout, dt, paged, n)
					t.Run(name, func(t *testing.T) {
						rng := rand.New(rand.NewPCG(141, uint64(n)))
						cfg := kernels.CacheConfig{KVHeads: 2, D: 64, Dv: 32, DType: dt, Layout: layout}
						k, v := rows(rng, kernels.Float32, n, 2, 64), rows(rng, kernels.Float32, n, 2, 32)
						var step func()
						if paged {
							pool, err := kernels.NewPagePool(be, 16, 8, cfg)
							if err != nil {
								t.Fatal(err)
							}
							defer pool.Release()
							seq := newSeq(t, pool)
							step = func() {
								if err := seq.Append(k, v); err != nil {
									t.Fatal(err)
								}
								if err := seq.Truncate(0); err != nil {
									t.Fatal(err)
								}
							}
						} else {
							cache, err := kernels.NewKVCache(be, 1, 64, cfg)
							if err != nil {
								t.Fatal(err)
							}
							defer cache.Release()
							step = func() {
								if err := cache.Append(0, k, v); err != nil {
									t.Fatal(err)
								}
								if err := cache.Truncate(0, 0); err != nil {
									t.Fatal(err)
								}
							}
						}
						step() // the first append sizes the staging
						if allocs := testing.AllocsPerRun(50, step); allocs != 0 {
							t.Errorf("appending %d float32 rows allocated %v times", n, allocs)
						}
					})
				}
			}
		}
	}
}
