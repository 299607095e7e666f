//go:build amd64 && !purego

package cpu

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// BenchmarkQ8Int times the q8 P·V kernels on one 512-key tile of D =
// 128 that fits the caches (the compute alone): the CPU's widening
// kernel, each integer one it runs (int-VPMADDWD, int-VPDPWSSD), and
// their digits alone; and the scores on the CPU's widening kernel and on
// each integer one it runs (dot/int-VPMADDWD, dot/int-VPDPBUSD, Q's
// digits made once; -heads: rows of 8 KV heads side by side, a BNHD
// page's); ns/key is a key's for four query rows.
//
//	go test -run '^$' -bench Q8Int ./cpu
func BenchmarkQ8Int(b *testing.B) {
	if !q8IntNow().ok {
		b.Skip("no integer q8 kernels on this CPU")
	}
	const n, d = 512, 128
	rng := rand.New(rand.NewPCG(1, 2))
	rows := q8TestRows(rng, n+8, d, d, false)
	s := make([]float32, 4*n)
	for i := range s {
		s[i] = rng.Float32()
	}
	acc := make([]float32, 4*d)
	var t tiles8
	type variant struct {
		name string
		run  func()
	}
	cases := []variant{{"axpy/widen", func() { quantAxpyW(quantWidth(), s, n, rows, n, d, acc, d) }}}
	for _, k := range q8IntKernels() {
		cases = append(cases, variant{"axpy/int-" + strings.Trim(strings.TrimPrefix(k.name, "q8 P·V "), "()"), func() {
			defer setQ8Int(k)()
			runAxpyInt(&t, s, n, rows, n, d, acc, d)
		}})
	}
	if q8IntDotNow().ok {
		q := make([]float32, 4*d)
		for i := range q {
			q[i] = rng.Float32() - 0.5
		}
		// One head's rows of a BNHD page's 8 heads side by side, 1 KiB
		// apart (a VNNI group's scales gathered once, not picked out of
		// its own 128 bytes).
		heads := q8TestRows(rng, n, d, 8*d, false)
		cases = append(cases, variant{"dot/widen", func() { quantDotW(quantWidth(), q, d, rows, n, d, s, n, 1) }})
		for _, k := range q8IntDotKernels() {
			name := "dot/int-" + strings.Trim(strings.TrimPrefix(k.name, "q8 scores "), "()")
			cases = append(cases,
				variant{name, func() {
					defer setQ8IntDot(k)()
					runDotInt(&t, 0, q, d, rows, n, d, s, n, 1)
				}},
				variant{name + "-heads", func() {
					defer setQ8IntDot(k)()
					runDotInt(&t, 0, q, d, heads, n, d, s, n, 1)
				}})
		}
	}
	for _, c := range append(cases, []variant{
		{"axpy/digits", func() {
			t.i8.wd, t.i8.gs = grow(t.i8.wd, intGroupDigits), grow(t.i8.gs, 32)
			for j := 0; j < n; j += intChunk {
				q8Weights4AVX2(&s[j], n, unsafe.Pointer(&rows.sc[j*d/32]), 2*d/32, intChunk, &q8Lanes4[4][0], &t.i8.wd[0], &t.i8.gs[0], 64*d/16)
			}
		}},
	}...) {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.run()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
			b.ReportMetric(0, "ns/op")
		})
	}
}
