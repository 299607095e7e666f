package bench

import (
	"flag"
	"math"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

func TestGoBenchCounts(t *testing.T) {
	// Causal, Nq = Nk = 4: 1+2+3+4 = 10 attended pairs per head.
	p := backend.Problem{B: 2, H: 2, KVHeads: 1, Nq: 4, Nk: 4, D: 8, Dv: 2, Causal: true}
	const bh = 4
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"scores flops", scoresFlops(p), bh * 16 * 2 * 8}, // every score, masked or not
		{"context flops", contextFlops(p), bh * 10 * 2 * 2},
		{"fused flops", func() float64 { n, _ := opFused.work(p); return n }(), Flops(p)},
		{"staged flops", func() float64 { n, _ := opStaged.work(p); return n }(), bh * 10 * 2 * (8 + 2)},
		{"softmax elements", func() float64 { n, _ := opSoftmax.work(p); return n }(), bh * 16},
		{"scores bytes", float64(opScores.bytes(p)), 4 * (bh*4*8 + 2*4*8 + bh*16)},
		{"softmax bytes", float64(opSoftmax.bytes(p)), 4 * 2 * bh * 16},
		{"context bytes", float64(opContext.bytes(p)), 4 * (bh*16 + 2*4*2 + bh*4*2)},
		{"staged bytes", float64(opStaged.bytes(p)), 4 * (bh*4*8 + 2*4*8 + bh*16 + 2*bh*16 + bh*16 + 2*4*2 + bh*4*2)},
		{"fused bytes", float64(opFused.bytes(p)), 4 * (bh*4*8 + 2*4*8 + 2*4*2 + bh*4*2)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

func TestGoBenchUnsupported(t *testing.T) {
	full := backend.Caps{Staged: true, Fused: true, Causal: true, GQA: true}
	gqa := backend.Problem{H: 4, KVHeads: 2, Causal: true}
	if why := unsupported(full, true, gqa); why != "" {
		t.Errorf("full caps: %q", why)
	}
	for _, c := range []struct {
		caps   backend.Caps
		staged bool
	}{
		{backend.Caps{Fused: true, Causal: true, GQA: true}, true},
		{backend.Caps{Staged: true, Causal: true, GQA: true}, false},
		{backend.Caps{Staged: true, Fused: true, GQA: true}, true},
		{backend.Caps{Staged: true, Fused: true, Causal: true}, false},
	} {
		if unsupported(c.caps, c.staged, gqa) == "" {
			t.Errorf("caps %+v, staged %v: no reason to skip", c.caps, c.staged)
		}
	}
}

// benchOnce makes testing.Benchmark run each benchmark for one timed
// iteration (-benchtime 1x) for the rest of the test.
func benchOnce(t *testing.T) {
	f := flag.Lookup("test.benchtime")
	if f == nil {
		t.Fatal("no -test.benchtime flag")
	}
	old := f.Value.String()
	if err := f.Value.Set("1x"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Value.Set(old) })
}

// checkResult checks that r timed at least one run and reports work per
// op in unit as a finite positive rate that agrees with r's own time, and
// bytes per op.
func checkResult(t *testing.T, name string, r testing.BenchmarkResult, work float64, unit string, bytes int64) {
	t.Helper()
	if r.N < 1 || r.T <= 0 {
		t.Errorf("%s: %d runs in %v", name, r.N, r.T)
		return
	}
	got, ok := r.Extra[unit]
	if want := work * float64(r.N) / r.T.Seconds() / 1e9; !ok || !(got > 0) || math.IsInf(got, 0) || math.Abs(got-want) > 1e-9*want {
		t.Errorf("%s: %s = %v (reported %v), want %v", name, unit, got, ok, want)
	}
	if r.Bytes != bytes {
		t.Errorf("%s: %d bytes per op, want %d", name, r.Bytes, bytes)
	}
}

// TestGoBench runs every Go benchmark once on the CPU at a tiny size, so
// that they cannot rot between the runs that measure.
func TestGoBench(t *testing.T) {
	be, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	benchOnce(t)
	shapes := []Shape{{B: 1, N: 17, H: 2, KVHeads: 2, D: 8}, {B: 1, N: 33, H: 4, KVHeads: 2, D: 16}}
	for _, s := range shapes {
		for _, causal := range []bool{false, true} {
			s.Causal = causal
			p := s.Problem()
			for _, o := range []op{opScores, opSoftmax, opContext, opStaged, opFused} {
				r := testing.Benchmark(func(b *testing.B) { opBench(b, be, o, p) })
				work, unit := o.work(p)
				checkResult(t, o.String()+"/"+benchName(s), r, work, unit, o.bytes(p))
			}
			for _, st := range []kernels.Strategy{kernels.Auto, kernels.Staged, kernels.Fused} {
				r := testing.Benchmark(func(b *testing.B) { attention(b, be, st, p) })
				checkResult(t, "attention/"+st.String()+"/"+benchName(s), r, Flops(p), "GFLOP/s", opFused.bytes(p))
			}
		}
	}
	// The exported sweeps: a sub-benchmark's failure marks its parent
	// failed, and the parent's time is the sum of the subs'.
	for name, f := range map[string]func(*testing.B, backend.Backend, []Shape){
		"Scores": Scores, "Softmax": Softmax, "Context": Context,
		"Staged": Staged, "Fused": Fused, "Attention": Attention,
	} {
		failed := false
		r := testing.Benchmark(func(b *testing.B) {
			f(b, be, shapes[:1])
			failed = b.Failed()
		})
		if failed || r.T <= 0 {
			t.Errorf("%s: failed %v, %v per op", name, failed, r.T)
		}
	}
}
