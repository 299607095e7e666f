package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// AppendBuffers into an 8-bit cache quantizes on the device into the
// bytes Append stores on the CPU: on every backend under test, for both
// 8-bit dtypes, both layouts, contiguous and paged, head dims 32 to 256
// (96: a BNHD row straddles q8 superblocks; 40, 72, 80 and 112: q8 rows
// padded to whole blocks) and float32 or half rows
// with zero blocks, outliers and values beyond fp8's ±448·scale, the
// stored values equal a CPU cache's after Append of the same rows, the
// saturated counts agree, and attention over the cache matches the
// float64 reference. Some steps are recorded (backend.Recorder) and
// waited for once.
func TestCacheBuffersQuant(t *testing.T) {
	ctx := context.Background()
	ref := openCPU(t)
	for _, bk := range onnxBackends {
		be := bk.open(t)
		for _, dt := range backend.Quants {
			for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
				for _, hd := range [][2]int{{32, 64}, {96, 128}, {256, 32}, {80, 40}, {72, 112}} {
					srcs := []kernels.DType{kernels.Float32}
					if hd[0] == 32 || hd[0] == 80 {
						srcs = append(srcs, kernels.Float16, kernels.BFloat16)
					}
					for _, src := range srcs {
						for _, pageSize := range []int{0, 3} {
							name := fmt.Sprintf("%s/%v/%v/D=%d,Dv=%d/from=%v/pages=%d", bk.name, dt, layout, hd[0], hd[1], src, pageSize)
							t.Run(name, func(t *testing.T) {
								cacheBuffersQuant(ctx, t, be, ref, dt, layout, hd[0], hd[1], src, pageSize)
							})
						}
					}
				}
			}
		}
	}
}

// quantRows are n rows [n, heads, dim] of src for a cache of dt: a zero
// row, an outlier a block of 32, values beyond ±448 and tiny ones. A q4
// block's outlier is 20 times the others, not 2000: q4's 16 steps would
// round every other value of a block to 0, leaving scores of thousands,
// whose float32 rounding alone moves the outputs past the tolerance.
func quantRows(rng *rand.Rand, dt, src kernels.DType, n, heads, dim int) *kernels.Tensor {
	x := randTensor(rng, kernels.BNHD, n, heads, dim)
	outlier := float32(2000)
	if dt == backend.Q4 {
		outlier = 20
	}
	for i := range x.Data {
		switch {
		case i < heads*dim && n > 1:
			x.Data[i] = 0
		case i%32 == 5:
			x.Data[i] *= outlier
		case i%17 == 3:
			x.Data[i] *= 1e-5
		}
	}
	if src == kernels.Float32 {
		return x
	}
	y, err := x.Convert(src)
	if err != nil {
		panic(err)
	}
	return y
}

// q8ScoreDigits is the largest |x| of Q's int16 digits where be runs
// q8's scores on the CPU's integer kernel (cpu/doc.go: 16383 on AVX2,
// 32512 on AVX512-VNNI), else 0.
func q8ScoreDigits(be backend.Backend, dt kernels.DType) int {
	det := be.Info().Detail
	switch {
	case dt != backend.Q8 || !strings.Contains(det, "q8 scores on the integer kernel"):
		return 0
	case strings.Contains(det, "q8 scores (VPMADDWD)"):
		return 16383
	}
	return 32512
}

// scoresSlack carries cpu/doc.go's bound on the integer scores kernel's
// Q digits to the outputs, as a fraction of max|v|: a score of query
// row q (rows of d) and stored key k is within δ = α·Σ_b max_b|q|·
// Σ_{c∈b}|k_c|/(2x) of its own (x the digits' largest), so each weight
// within a factor e^{±2Δ} of its own (Δ the largest δ), and each output
// within (e^{2Δ} − 1)·max|v|. Δ here takes each block's largest |q| over
// every row, an upper bound.
func scoresSlack(q []float32, d int, m *mirror, x int) float64 {
	nb := (d + 31) / 32
	qb := make([]float64, nb)
	for i, v := range q {
		qb[i%d/32] = math.Max(qb[i%d/32], math.Abs(float64(v)))
	}
	var big float64
	for _, ks := range m.k {
		for j := 0; j < len(ks); j += d {
			var sum float64
			for c, v := range ks[j : j+d] {
				sum += qb[c/32] * math.Abs(float64(v))
			}
			big = math.Max(big, sum)
		}
	}
	delta := big / math.Sqrt(float64(d)) / (2 * float64(x))
	return math.Expm1(2 * delta)
}

func cacheBuffersQuant(ctx context.Context, t *testing.T, be, ref backend.Backend, dt kernels.DType, layout kernels.Layout, d, dv int, src kernels.DType, pageSize int) {
	rng := rand.New(rand.NewPCG(46, uint64(d+dv+pageSize)))
	cfg := kernels.CacheConfig{KVHeads: 2, D: d, Dv: dv, DType: dt, Layout: layout}
	if dt == backend.FP8 {
		cfg.KScale, cfg.VScale = []float32{0.5, 3}, []float32{1.25, 0.75}
	}
	const batch, h, capacity = 2, 4, 9
	m := &mirror{cfg: cfg}
	type side struct {
		cache *kernels.KVCache
		pool  *kernels.PagePool
		seqs  []*kernels.Seq
	}
	open := func(be backend.Backend) *side {
		s := &side{}
		var err error
		if pageSize == 0 {
			s.cache, err = kernels.NewKVCache(be, batch, capacity, cfg)
		} else {
			s.pool, err = kernels.NewPagePool(be, pageSize, batch*capacity/pageSize+2, cfg)
			for range batch {
				s.seqs = append(s.seqs, newSeq(t, s.pool))
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if s.cache != nil {
				s.cache.Release()
			} else {
				s.pool.Release()
			}
		})
		return s
	}
	dev, host := open(be), open(ref)
	saturated := func(s *side) int64 {
		if s.cache != nil {
			n, err := s.cache.Saturated()
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		n, err := s.pool.Saturated()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	stores := func(s *side) (backend.Buffer, backend.Buffer) {
		if s.cache != nil {
			return kernels.Stores(s.cache)
		}
		return kernels.Stores(s.pool)
	}
	recorder, _ := be.(backend.Recorder)
	// The CPU's integer q8 P·V kernel (AVX2) adds its digits' rounding,
	// cpu/doc.go's bound: each weight times V's block scale to an int16
	// digit of the chunk's largest, at most max|v|/64000 of each key's
	// code a key (a weight is at most 1, a code 127 times its scale, and
	// the output is divided by the weights' sum, at least 1).
	intQ8 := dt == backend.Q8 && strings.Contains(be.Info().Detail, "q8 P·V on the integer kernel")
	var vmax float64
	keys := 0
	for step, n := range []int{5, 1, 1} {
		keys += n
		var rec backend.Recording
		if recorder != nil && step > 0 {
			rec = recorder.Begin()
		}
		for seq := range batch {
			k, v := quantRows(rng, dt, src, n, cfg.KVHeads, d), quantRows(rng, dt, src, n, cfg.KVHeads, dv)
			for _, x := range v.Float32s() {
				vmax = math.Max(vmax, math.Abs(float64(x)))
			}
			kb, vb := onDevice(t, be, k), onDevice(t, be, v)
			var err, herr error
			if pageSize == 0 {
				err = dev.cache.AppendBuffers(ctx, rec, seq, n, kb, vb)
				herr = host.cache.Append(seq, k, v)
			} else {
				err = dev.seqs[seq].AppendBuffers(ctx, rec, n, kb, vb)
				herr = host.seqs[seq].Append(k, v)
			}
			if err != nil || herr != nil {
				t.Fatalf("step %d: AppendBuffers: %v; Append: %v", step, err, herr)
			}
			m.append(seq, k, v)
		}
		if rec != nil {
			if err := rec.Wait(); err != nil {
				t.Fatal(err)
			}
		}
		// The stored values, exactly: the same bytes as the CPU's Append.
		dk, dvb := stores(dev)
		hk, hv := stores(host)
		for _, p := range [][2]backend.Buffer{{dk, hk}, {dvb, hv}} {
			got, want := make([]float32, p[0].Len()), make([]float32, p[1].Len())
			if err := be.Read(got, p[0], 0); err != nil {
				t.Fatal(err)
			}
			if err := ref.Read(want, p[1], 0); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("step %d: stored element %d is %g, the CPU's Append stores %g", step, i, got[i], want[i])
				}
			}
		}
		if a, b := saturated(dev), saturated(host); a != b || dt == backend.FP8 && a == 0 {
			t.Errorf("step %d: %d values saturated, the CPU's Append %d (want some for fp8)", step, a, b)
		}
		q := randTensor(rng, layout, batch, h, 1, d)
		if layout == kernels.BNHD {
			q = randTensor(rng, layout, batch, 1, h, d)
		}
		oshape := append([]int(nil), q.Shape...)
		oshape[3] = dv
		out, _ := kernels.NewTensor(layout, oshape...)
		opts := &kernels.AttendOptions{Causal: true}
		var err error
		if pageSize == 0 {
			err = dev.cache.Attend(ctx, q, out, nil, opts)
		} else {
			err = dev.pool.Attend(ctx, dev.seqs, q, out, nil, opts)
		}
		if err != nil {
			t.Fatal(err)
		}
		want, _ := m.want(t, []int{0, 1}, q, opts)
		slack := 0.0
		if intQ8 {
			slack = vmax * float64(keys) / 64000
		}
		if x := q8ScoreDigits(be, dt); x > 0 {
			slack += scoresSlack(q.Float32s(), d, m, x) * vmax
		}
		compareOut(t, fmt.Sprintf("step %d", step), out, want, dv, slack)
	}
	// q8 rows that are not whole blocks: attention runs through padded
	// copies of Q and O, which a recording releases at once (the GPU
	// destroys them once its work is submitted: backend.ReleaseDeferrer):
	// recorded, the same answers.
	if recorder != nil && dt == backend.Q8 && (d%backend.Q8Block != 0 || dv%backend.Q8Block != 0) {
		q := randTensor(rng, layout, batch, h, 1, d)
		if layout == kernels.BNHD {
			q = randTensor(rng, layout, batch, 1, h, d)
		}
		qb := onDevice(t, be, q)
		var outs [2][]float32
		for i, record := range []bool{false, true} {
			ob, err := be.Alloc(kernels.Float32, batch*h*dv)
			if err != nil {
				t.Fatal(err)
			}
			defer ob.Release()
			var rec backend.Recording
			if record {
				rec = recorder.Begin()
			}
			if pageSize == 0 {
				err = dev.cache.AttendBuffers(ctx, rec, qb, ob, nil, h, 1, nil)
			} else {
				err = dev.pool.AttendBuffers(ctx, rec, dev.seqs, qb, ob, nil, h, 1, nil)
			}
			if err == nil && rec != nil {
				err = rec.Wait()
			}
			if err != nil {
				t.Fatalf("AttendBuffers (recorded %t) over q8 rows of D=%d, Dv=%d: %v", record, d, dv, err)
			}
			outs[i] = make([]float32, batch*h*dv)
			if err := be.Read(outs[i], ob, 0); err != nil {
				t.Fatal(err)
			}
		}
		for i := range outs[0] {
			if outs[0][i] != outs[1][i] {
				t.Fatalf("AttendBuffers over q8 rows of D=%d, Dv=%d: out[%d] = %v recorded, %v not", d, dv, i, outs[1][i], outs[0][i])
			}
		}
	}
}

// AppendBuffers of what an 8-bit cache cannot hold: every backend
// stores it as NaN and counts it (NonFinite), and attention over a
// poisoned q8 block is NaN, never a number; the host's Append of the
// same rows refuses them (ErrNonFinite), writing nothing.
func TestCacheBuffersQuantNonFinite(t *testing.T) {
	ctx := context.Background()
	for _, bk := range onnxBackends {
		be := bk.open(t)
		for _, dt := range backend.Quants {
			cfg := kernels.CacheConfig{KVHeads: 1, D: 32, DType: dt, Layout: kernels.BNHD}
			cache, err := kernels.NewKVCache(be, 1, 4, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer cache.Release()
			rng := rand.New(rand.NewPCG(46, 9))
			k, v := randTensor(rng, kernels.BNHD, 1, 1, 32), randTensor(rng, kernels.BNHD, 1, 1, 32)
			v.Data[3] = float32(math.Inf(1))
			if err := cache.Append(0, k, v); !errors.Is(err, backend.ErrNonFinite) || cache.Len(0) != 0 {
				t.Errorf("%s/%v: Append of an infinity: %v, length %d; want ErrNonFinite, 0", bk.name, dt, err, cache.Len(0))
			}
			err = cache.AppendBuffers(ctx, nil, 0, 1, onDevice(t, be, k), onDevice(t, be, v))
			nonFinite, errCount := cache.NonFinite()
			if err != nil || errCount != nil || cache.Len(0) != 1 || nonFinite != 1 {
				t.Errorf("%s/%v: AppendBuffers of an infinity: %v, length %d, NonFinite %d, %v; want nil, 1, 1, nil", bk.name, dt, err, cache.Len(0), nonFinite, errCount)
			}
			if dt != backend.Q8 {
				continue // fp8's NaN pattern: the GPU's kernels read it as ±480 (kernels' doc)
			}
			q := randTensor(rng, kernels.BNHD, 1, 1, 1, 32)
			out, _ := kernels.NewTensor(kernels.BNHD, 1, 1, 1, 32)
			if err := cache.Attend(ctx, q, out, nil, nil); err != nil {
				t.Fatal(err)
			}
			for i, o := range out.Data {
				if !math.IsNaN(float64(o)) {
					t.Fatalf("%s/q8: output %d over a NaN block is %g", bk.name, i, o)
				}
			}
		}
	}
}

// A steady-state AppendBuffers into an 8-bit cache on the CPU, in either
// layout, allocates nothing: the quantizing copy widens through pooled
// scratch.
func TestCacheBuffersQuantAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates as it tracks")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	be := openCPU(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(46, 10))
	for _, dt := range backend.Quants {
		for _, layout := range []kernels.Layout{kernels.BNHD, kernels.BHND} {
			cfg := kernels.CacheConfig{KVHeads: 2, D: 64, DType: dt, Layout: layout}
			if dt == backend.FP8 {
				cfg.KScale = []float32{0.5, 2}
			}
			cache, err := kernels.NewKVCache(be, 1, 1000, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer cache.Release()
			kb := onDevice(t, be, randTensor(rng, kernels.BNHD, 1, 2, 64))
			vb := onDevice(t, be, randTensor(rng, kernels.BNHD, 1, 2, 64))
			step := func() {
				if err := cache.AppendBuffers(ctx, nil, 0, 1, kb, vb); err != nil {
					t.Fatal(err)
				}
			}
			step() // the first call sizes the scratch
			if a := testing.AllocsPerRun(50, step); a != 0 {
				t.Errorf("%v/%v: AppendBuffers allocates %.1f times a step, want 0", dt, layout, a)
			}
		}
	}
}
