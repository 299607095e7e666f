package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

func TestFlops(t *testing.T) {
	for _, c := range []struct {
		p    backend.Problem
		want float64
	}{
		{backend.Problem{B: 1, H: 8, KVHeads: 8, Nq: 1024, Nk: 1024, D: 64, Dv: 64}, 4 * 8 * 1024 * 1024 * 64},
		{backend.Problem{B: 2, H: 1, KVHeads: 1, Nq: 3, Nk: 5, D: 4, Dv: 2}, 2 * 3 * 5 * (2*4 + 2*2)},
		// Causal, Nq = Nk = 4: 1+2+3+4 = 10 attended pairs.
		{backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 4, Nk: 4, D: 8, Dv: 8, Causal: true}, 10 * 32},
		// Causal decode: one query sees all 6 keys.
		{backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 6, D: 8, Dv: 8, Causal: true}, 6 * 32},
		// Causal window of 3 keys (left 2), N = 8: 1+2+3·6 = 21 pairs.
		{backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 8, Nk: 8, D: 8, Dv: 8, Causal: true,
			Variants: backend.Variants{Window: &backend.Window{Left: 2, Right: 0}}}, 21 * 32},
		// Window (1, 1) without causal, N = 5: 2+3+3+3+2 = 13 pairs, in
		// each of B = 2 batches and H = 3 heads.
		{backend.Problem{B: 2, H: 3, KVHeads: 1, Nq: 5, Nk: 5, D: 8, Dv: 8,
			Variants: backend.Variants{Window: &backend.Window{Left: 1, Right: 1}}}, 2 * 3 * 13 * 32},
		// Key lengths 2 and 5 of Nk = 5, Nq = 3, not causal: 3·2 + 3·5.
		{backend.Problem{B: 2, H: 1, KVHeads: 1, Nq: 3, Nk: 5, D: 8, Dv: 8,
			Variants: backend.Variants{KVLens: []int{2, 5}}}, (6 + 15) * 32},
		// Softcap, ALiBi and sinks add no pairs.
		{backend.Problem{B: 1, H: 2, KVHeads: 2, Nq: 4, Nk: 4, D: 8, Dv: 8,
			Variants: backend.Variants{Softcap: 30, ALiBi: []float32{0.5, 0.25}, Sinks: []float32{0, 0}}}, 2 * 16 * 32},
	} {
		if got := bench.Flops(c.p); got != c.want {
			t.Errorf("Flops(%+v) = %v, want %v", c.p, got, c.want)
		}
	}
}

// Flops agrees with counting, key by key, the pairs the position rules of
// backend.Problem admit (read from its doc, not from KeyRange): for
// every small Nq against Nk, causal or not, with windows of each kind
// (bounded, one side unbounded, both unbounded, empty on one side) and
// with per-batch key lengths.
func TestFlopsCounts(t *testing.T) {
	windows := []*backend.Window{nil, {Left: 0, Right: 0}, {Left: 2, Right: 0}, {Left: 1, Right: 3},
		{Left: -1, Right: 1}, {Left: 3, Right: -1}, {Left: -1, Right: -1}}
	for nq := 0; nq < 12; nq++ {
		for nk := 0; nk < 12; nk++ {
			for _, causal := range []bool{false, true} {
				for _, w := range windows {
					for _, lens := range [][]int{nil, {nk, nk / 2}, {0, max(nk-1, 0)}} {
						p := backend.Problem{B: 2, H: 3, KVHeads: 1, Nq: nq, Nk: nk, D: 5, Dv: 2, Causal: causal,
							Variants: backend.Variants{Window: w, KVLens: lens}}
						n := 0
						for b := range 2 {
							kvlen := nk
							if lens != nil {
								kvlen = lens[b]
							}
							for i := range nq {
								t := kvlen - nq + i // the query's key position
								for j := range kvlen {
									seen := !causal || j <= t
									if w != nil {
										seen = seen && (w.Left < 0 || j >= t-w.Left) && (w.Right < 0 || j <= t+w.Right)
									}
									if seen {
										n++
									}
								}
							}
						}
						if got, want := bench.Flops(p), float64(n*3*2*(5+2)); got != want {
							t.Errorf("Nq=%d Nk=%d causal=%v window=%v lens=%v: Flops %v, counting %v", nq, nk, causal, w, lens, got, want)
						}
					}
				}
			}
		}
	}
}

// The ALiBi slopes are the paper's and BLOOM's: 2^(−8k/H) for H a power
// of two; otherwise those of the largest power of two p below H, then
// every other slope of 2p heads (BLOOM's build_alibi_tensor: base
// 2^(−4/p), odd powers).
func TestALiBiSlopes(t *testing.T) {
	for _, c := range []struct {
		h    int
		want []float64 // exponents of 2
	}{
		{1, []float64{-8}},
		{2, []float64{-4, -8}},
		{3, []float64{-4, -8, -2}},
		{8, []float64{-1, -2, -3, -4, -5, -6, -7, -8}},
		{12, []float64{-1, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5}},
		{16, []float64{-0.5, -1, -1.5, -2, -2.5, -3, -3.5, -4, -4.5, -5, -5.5, -6, -6.5, -7, -7.5, -8}},
	} {
		got := bench.ALiBiSlopes(c.h)
		if len(got) != c.h {
			t.Fatalf("H=%d: %d slopes", c.h, len(got))
		}
		for k, e := range c.want {
			if want := float32(math.Exp2(e)); got[k] != want {
				t.Errorf("H=%d: slope %d is %v, want 2^%v = %v", c.h, k, got[k], e, want)
			}
		}
	}
	// H = 40 (BLOOM-7b1 has 32, BLOOM-176B 112): 32 slopes of 32 heads,
	// then the 8 odd slopes of 64 heads.
	m := bench.ALiBiSlopes(40)
	if m[31] != float32(math.Exp2(-8)) || m[32] != float32(math.Exp2(-0.125)) || m[39] != float32(math.Exp2(-0.125*15)) {
		t.Errorf("H=40: slopes 31, 32, 39 are %v, %v, %v", m[31], m[32], m[39])
	}
	if s := bench.Sinks(3); len(s) != 3 || s[0] != 0 || s[2] != 0 {
		t.Errorf("Sinks(3) = %v, want three zeros", s)
	}
}

func TestBytes(t *testing.T) {
	// B=1, H=4, KVH=2, N=8, D=16: Q and O 4·8·16, K and V 2·8·16 floats.
	p := backend.Problem{B: 1, H: 4, KVHeads: 2, Nq: 8, Nk: 8, D: 16, Dv: 16}
	io := 4 * int64(2*4*8*16+2*2*8*16)
	if got := bench.Bytes(p, false); got != io {
		t.Errorf("fused bytes %d, want %d", got, io)
	}
	if got, want := bench.Bytes(p, true), io+4*4*(4*8*8); got != want {
		t.Errorf("staged bytes %d, want %d", got, want)
	}
}

func openCPU(t testing.TB) backend.Backend {
	t.Helper()
	be, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

func tiny() bench.Config {
	return bench.Config{
		Ns: []int{1, 16, 33}, Batches: []int{1}, Heads: []int{2}, KVHeads: []int{1}, Dims: []int{8},
		Causal:     []bool{false, true},
		Strategies: []kernels.Strategy{kernels.Fused, kernels.Staged},
		Budget:     time.Millisecond, MinRuns: 3, Seed: 1, CheckRows: 5,
	}
}

// Every point of the sweep runs, in order, is checked against the
// reference, and progress reaches its total.
func TestRun(t *testing.T) {
	be := openCPU(t)
	cfg := tiny()
	var last bench.Progress
	starts, ends := 0, 0
	cfg.Progress = func(p bench.Progress) {
		if p.Point == nil {
			starts++
		} else {
			ends++
		}
		if p.Done < last.Done || p.Done > p.Total {
			t.Errorf("progress went from %v to %v of %v", last.Done, p.Done, p.Total)
		}
		last = p
	}
	points, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 12 || starts != 12 || ends != 12 {
		t.Fatalf("%d points, %d starts, %d ends; want 12", len(points), starts, ends)
	}
	if last.Done != last.Total {
		t.Errorf("progress ended at %v of %v", last.Done, last.Total)
	}
	i := 0
	for _, causal := range []bool{false, true} {
		for _, n := range []int{1, 16, 33} {
			for _, s := range []string{"fused", "staged"} {
				pt := points[i]
				i++
				if pt.Causal != causal || pt.N != n || pt.Strategy != s || pt.Impl != "attn-cpu" || pt.KVHeads != 1 {
					t.Fatalf("point %d is %s %s N=%d causal=%v KVH=%d; want %s N=%d causal=%v", i-1, pt.Impl, pt.Strategy, pt.N, pt.Causal, pt.KVHeads, s, n, causal)
				}
				if pt.Status != bench.StatusOK || pt.Runs < 3 || pt.MinS > pt.MedianS || pt.MedianS > pt.MaxS || pt.GFLOPS <= 0 || pt.Bytes <= 0 {
					t.Errorf("bad point %+v", pt)
				}
				if pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-5) || pt.CheckedRows != min(5, 2*n) {
					t.Errorf("N=%d: checked %d rows, max error %v", n, pt.CheckedRows, pt.MaxErr)
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := bench.WriteTable(&buf, points); err != nil {
		t.Fatal(err)
	}
	if got := len(tableRow.FindAllString(buf.String(), -1)); got != 12 {
		t.Errorf("table has %d rows, want 12:\n%s", got, buf.String())
	}
}

// A sweep with every variant runs them on the CPU backend, in this
// process and from a PointSpec read back from JSON (what a point measured
// in a process of its own receives), checked against the float64 reference with the same
// variants, and counts the window's attended pairs only.
func TestRunVariants(t *testing.T) {
	be := openCPU(t)
	cfg := tiny()
	cfg.Ns, cfg.Causal = []int{33}, []bool{true}
	cfg.Variant = bench.Variant{Window: &[2]int{4, 0}, Softcap: 5, ALiBi: true, Sinks: true}
	// The variant survives a PointSpec's round trip (runAndRespec).
	points := runAndRespec(t, be, cfg)
	p := points[0].Shape.Problem()
	// Rows 0 … 4 see 1 … 5 keys, the other 28 five each.
	if want := 2.0 * (15 + 28*5) * 2 * (8 + 8); bench.Flops(p) != want {
		t.Errorf("Flops of %v = %v, want %v", points[0].Shape, bench.Flops(p), want)
	}
	for _, pt := range points {
		if pt.Status != bench.StatusOK || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-5) || pt.CheckedRows != 5 {
			t.Errorf("%s %s: %s %s, max error %v over %d rows", pt.Strategy, pt.Variant, pt.Status, pt.Error, pt.MaxErr, pt.CheckedRows)
		}
		if pt.Variant.String() != "window 4,0 softcap 5 alibi sinks" {
			t.Errorf("%s: variant %q", pt.Strategy, pt.Variant)
		}
		if want := bench.Flops(p) / pt.MedianS / 1e9; math.Abs(pt.GFLOPS-want) > 1e-9*want {
			t.Errorf("%s: %v GFLOP/s, want %v from the attended pairs", pt.Strategy, pt.GFLOPS, want)
		}
	}
}

// TestRunVFromK measures MLA's shape, small: V as K's first Dv columns
// (Config.VFromK) on both strategies and every storage dtype, each
// point checked against the reference, its FLOPs counting 2·(D + Dv) a
// pair and its bytes K's alone; a PointSpec keeps the shape through
// JSON; Dv past D, negative or beside another Dv is refused.
func TestRunVFromK(t *testing.T) {
	be := openCPU(t)
	cfg := tiny()
	cfg.Ns, cfg.Causal, cfg.Heads, cfg.KVHeads, cfg.Dims = []int{40}, []bool{true}, []int{8}, []int{1}, []int{64}
	cfg.VFromK = 32
	cfg.DTypes = []backend.DType{backend.Float32, backend.Float16, backend.Q8, backend.FP8}
	points := runAndRespec(t, be, cfg)
	p := points[0].Shape.Problem()
	if !p.VFromK || p.Dv != 32 || p.D != 64 {
		t.Fatalf("the points' problem %+v: want V from K, D = 64, Dv = 32", p)
	}
	if want := float64(8*(40*41/2)) * 2 * (64 + 32); bench.Flops(p) != want {
		t.Errorf("Flops = %v, want %v", bench.Flops(p), want)
	}
	apart := p
	apart.VFromK = false
	if d := bench.Bytes(apart, false) - bench.Bytes(p, false); d != 4*40*32 {
		t.Errorf("V from K reads %d bytes fewer than V apart, want V's %d", d, 4*40*32)
	}
	for _, pt := range points {
		if pt.Strategy == "staged" && (pt.DType == "q8" || pt.DType == "fp8") {
			continue // the staged ops take no 8-bit K and V
		}
		if pt.Status != bench.StatusOK || pt.MaxErr == nil || pt.CheckedRows == 0 || !pt.VFromK || pt.Dv != 32 {
			t.Errorf("%s %s: %s %s, max error %v over %d rows, shape %+v", pt.Strategy, pt.DType, pt.Status, pt.Error, pt.MaxErr, pt.CheckedRows, pt.Shape)
		}
	}
	for _, bad := range []struct{ dv, vFromK int }{{0, 65}, {0, -1}, {16, 32}} {
		cfg.Dv, cfg.VFromK = bad.dv, bad.vFromK
		if _, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil); err == nil {
			t.Errorf("Dv = %d, VFromK = %d with D = 64: no error", bad.dv, bad.vFromK)
		}
	}
}

// runAndRespec runs cfg's sweep on be, then measures its first point
// again from a PointSpec after a round trip through JSON (Subprocess's
// path, which must keep the whole shape), appended to the points.
func runAndRespec(t *testing.T, be backend.Backend, cfg bench.Config) []bench.Point {
	t.Helper()
	points, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := bench.PointSpec{Backend: be.Name(), Strategy: "fused", Shape: points[0].Shape, Seed: cfg.Seed,
		Budget: cfg.Budget, MinRuns: 3, CheckRows: 5}
	return append(points, bench.MeasurePoint(context.Background(), be, jsonRoundTrip(t, spec)))
}

// jsonRoundTrip is spec after JSON and back, as Subprocess hands it on.
func jsonRoundTrip(t *testing.T, spec bench.PointSpec) bench.PointSpec {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var back bench.PointSpec
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// tableRow matches a row of WriteTable for an attn-cpu point.
var tableRow = regexp.MustCompile(`(?m)^ *attn-cpu +(fused|staged) `)

// A point that cannot run is reported, with a status saying why, and the
// sweep goes on.
func TestRunReportsFailures(t *testing.T) {
	be := openCPU(t)
	cfg := tiny()
	// 2³¹ keys: the staged scores and the memory check both refuse it.
	cfg.Ns, cfg.Causal, cfg.Batches, cfg.Heads, cfg.KVHeads, cfg.Dims = []int{1 << 31, 4}, []bool{false}, []int{1}, []int{1}, []int{0}, []int{1}
	points, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 4 {
		t.Fatalf("%d points, want 4", len(points))
	}
	for _, pt := range points[:2] {
		if pt.Status != bench.StatusTooLarge || pt.Error == "" || pt.Runs != 0 {
			t.Errorf("N=2³¹ %s: status %s (%s), want too-large", pt.Strategy, pt.Status, pt.Error)
		}
	}
	for _, pt := range points[2:] {
		if pt.Status != bench.StatusOK {
			t.Errorf("N=4 %s after the failures: %s %s", pt.Strategy, pt.Status, pt.Error)
		}
	}
	var buf bytes.Buffer
	bench.WriteTable(&buf, points)
	if !strings.Contains(buf.String(), "too-large: ") {
		t.Errorf("table does not say the point was too large:\n%s", buf.String())
	}
}

func TestRunRefusesBadConfigs(t *testing.T) {
	be := openCPU(t)
	for name, mod := range map[string]func(*bench.Config){
		"kv heads":   func(c *bench.Config) { c.KVHeads = []int{3} },
		"empty":      func(c *bench.Config) { c.Ns = nil },
		"auto":       func(c *bench.Config) { c.Strategies = []kernels.Strategy{kernels.Auto} },
		"no targets": func(c *bench.Config) { c.Strategies = nil },
		"window":     func(c *bench.Config) { c.Variant.Window = &[2]int{-2, 0} },
		"softcap":    func(c *bench.Config) { c.Variant.Softcap = math.NaN() },
	} {
		cfg := tiny()
		mod(&cfg)
		if _, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// A cancelled sweep stops and says so.
func TestRunCancelled(t *testing.T) {
	be := openCPU(t)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := tiny()
	cfg.Progress = func(p bench.Progress) {
		if p.Point != nil {
			cancel()
		}
	}
	points, err := bench.Run(ctx, cfg, []backend.Backend{be}, nil)
	if err == nil || len(points) == 0 || len(points) > 2 {
		t.Fatalf("cancelled sweep: %d points, error %v", len(points), err)
	}
}

// The report's JSON reads back as written, its CSV has a row per point
// under the header, and both charts are PNGs.
func TestReport(t *testing.T) {
	be := openCPU(t)
	cfg := tiny()
	points, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil)
	if err != nil {
		t.Fatal(err)
	}
	points = append(points, bench.Point{Impl: "attn-cpu", Strategy: "staged", Shape: bench.Shape{N: 1 << 20}, Status: bench.StatusTooLarge, Error: "needs 4 TiB"})
	r := bench.NewReport(cfg, []backend.Backend{be}, nil, points)
	if r.Machine.CPUs < 1 || r.Versions["go"] == "" || len(r.Backends) != 1 || r.Env["OPENBLAS_CORETYPE"] == "" {
		t.Errorf("report header %+v", r)
	}

	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	back, err := bench.ReadReport(&js)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Points) != len(points) || back.Points[0].GFLOPS != points[0].GFLOPS || *back.Points[0].MaxErr != *points[0].MaxErr ||
		back.Points[len(points)-1].Status != bench.StatusTooLarge {
		t.Errorf("JSON round trip changed the points")
	}

	rows := bench.CSVRows(t, r)
	if len(rows) != len(points)+1 || rows[0][0] != "date" || rows[len(rows)-1][len(rows[0])-3] != "too-large" {
		t.Errorf("CSV: %d rows, header %v, last %v", len(rows), rows[0], rows[len(rows)-1])
	}

	var md bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| GFLOP/s | N=1 | N=16 | N=33 | N=1048576 |", "| attn-cpu fused |", "| attn-cpu staged |", " too-large |",
		"GFLOP/s, non-causal", "GFLOP/s, causal", "| peak |", "attn-cpu staged, too-large from N=1048576: needs 4 TiB"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}

	var names []string
	for _, cf := range r.ChartFiles("png") {
		names = append(names, cf.Name)
		var buf bytes.Buffer
		if err := r.WriteChartFile(&buf, cf); err != nil {
			t.Fatalf("%s: %v", cf.Name, err)
		}
		img, err := png.Decode(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", cf.Name, err)
		}
		if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 300 {
			t.Errorf("%s: %v image", cf.Name, b)
		}
	}
	if want := []string{"gflops.png", "gflops-causal.png", "memory.png", "memory-causal.png"}; !slices.Equal(names, want) {
		t.Errorf("chart files %v, want %v", names, want)
	}
	if err := r.WriteChart(&bytes.Buffer{}, "speed", "png"); err == nil {
		t.Error("an unknown chart drew")
	}
}

// A report whose schema is not this one is refused rather than misread.
func TestReadReportSchema(t *testing.T) {
	if _, err := bench.ReadReport(strings.NewReader(`{"schema": "attn-bench/0", "points": []}`)); err == nil {
		t.Error("read a report of another schema")
	}
}
