package bench_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/kernels"
)

// A decoding sweep (Nq < N) runs the last Nq queries over N keys, with
// GQA and causal masking, in each dtype: every point records its Nq, is
// checked on rows sampled from its Nq queries against the reference,
// counts Q and O of Nq rows and K and V of N keys in its storage dtype,
// and gives its tokens/s, its fraction of the read bandwidth and its
// arithmetic intensity, fraction of the roofline and the ceiling that
// bounds it: memory for the decoding steps, compute for Nq = N at a
// ridge of 100 GFLOP/s / 10 GB/s = 10 flop/B.
func TestRunDecode(t *testing.T) {
	be := openCPU(t)
	cfg := tiny()
	cfg.Ns, cfg.Nqs, cfg.Heads, cfg.KVHeads = []int{5, 64}, []int{1, 3, 0}, []int{4}, []int{2, 1}
	cfg.Batches, cfg.Strategies = []int{2}, []kernels.Strategy{kernels.Fused}
	cfg.DTypes = []backend.DType{backend.Float32, backend.Float16}
	cfg.ReadGBPS, cfg.SgemmGFLOPS = 10, 100
	points, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * 2 * 3 * 2 * 2; len(points) != want {
		t.Fatalf("%d points, want %d", len(points), want)
	}
	seen, bounds := map[int]bool{}, map[string]int{}
	for _, pt := range points {
		nq := pt.Nq
		seen[nq] = true
		if nq != 1 && nq != 3 && nq != pt.N {
			t.Errorf("N=%d: recorded Nq %d", pt.N, nq)
		}
		if pt.Status != bench.StatusOK || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-3) {
			t.Errorf("N=%d Nq=%d KVH=%d causal=%v %s: %s %s, error %v", pt.N, nq, pt.KVHeads, pt.Causal, pt.DType, pt.Status, pt.Error, pt.MaxErr)
			continue
		}
		if want := min(5, 2*4*nq); pt.CheckedRows != want {
			t.Errorf("N=%d Nq=%d: %d rows checked, want %d of the B·H·Nq = %d", pt.N, nq, pt.CheckedRows, want, 2*4*nq)
		}
		size := int64(4)
		if pt.DType == "f16" {
			size = 2
		}
		if want := size * int64(2*(4*nq*8*2+pt.KVHeads*pt.N*8*2)); pt.Bytes != want {
			t.Errorf("N=%d Nq=%d KVH=%d %s: %d bytes, want %d (Q, O of Nq rows, K, V of N keys)", pt.N, nq, pt.KVHeads, pt.DType, pt.Bytes, want)
		}
		if want := 2 * float64(nq) / pt.MedianS; math.Abs(pt.TokensPerS-want) > 1e-9*want {
			t.Errorf("N=%d Nq=%d: %v tokens/s, want B·Nq/median = %v", pt.N, nq, pt.TokensPerS, want)
		}
		if want := pt.GBPS / 10; math.Abs(pt.ReadBWFrac-want) > 1e-12 {
			t.Errorf("N=%d Nq=%d: fraction of the bandwidth %v, want %v", pt.N, nq, pt.ReadBWFrac, want)
		}
		intensity := bench.Flops(pt.Shape.Problem()) / float64(pt.Bytes)
		roof, bound := 10*intensity, bench.BoundMemory
		if roof >= 100 {
			roof, bound = 100, bench.BoundCompute
		}
		if math.Abs(pt.Intensity-intensity) > 1e-12*intensity || math.Abs(pt.RooflineFrac-pt.GFLOPS/roof) > 1e-12*pt.RooflineFrac || pt.Bound != bound {
			t.Errorf("N=%d Nq=%d %s: intensity %v, of roof %v %s; want %v, %v %s", pt.N, nq, pt.DType, pt.Intensity, pt.RooflineFrac, pt.Bound,
				intensity, pt.GFLOPS/roof, bound)
		}
		bounds[pt.Bound]++
	}
	if !seen[1] || !seen[3] || !seen[5] || !seen[64] {
		t.Errorf("query rows seen %v", seen)
	}
	if bounds[bench.BoundMemory] == 0 || bounds[bench.BoundCompute] == 0 {
		t.Errorf("points by bound %v: want both", bounds)
	}
	// A decoding point measured from its spec, as -isolate does, keeps
	// its Nq.
	spec := bench.PointSpec{Backend: be.Name(), Strategy: "fused", Shape: points[0].Shape, Seed: cfg.Seed,
		Budget: cfg.Budget, MinRuns: 3, CheckRows: 5}
	if pt := bench.MeasurePoint(context.Background(), be, jsonRoundTrip(t, spec)); pt.Status != bench.StatusOK || pt.Nq != 1 || pt.N != 5 {
		t.Errorf("MeasurePoint of %+v: %+v", spec.Shape, pt)
	}

	var buf bytes.Buffer
	if err := bench.WriteTable(&buf, points); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(strings.SplitN(buf.String(), "\n", 3)[1], "status")
	for _, col := range []string{" N ", " Nq ", " GB/s ", " of BW ", " of roof ", " tok/s "} {
		if !strings.Contains(head, col) {
			t.Errorf("table header %q lacks %q", head, col)
		}
	}
	keys := bench.GlossaryKeys(points)
	for _, conv := range []string{"tokens_per_s", "read_gbps", "read_bw_frac", "nq", "sgemm_gflops", "intensity", "roofline_frac"} {
		if !slices.Contains(keys, conv) {
			t.Errorf("the glossary of the table's columns lacks %q: %q", conv, keys)
		}
	}
}

// A sweep asking for more queries than keys, or a negative count, is
// refused before anything runs, naming the values.
func TestRunRefusesBadNq(t *testing.T) {
	for _, tt := range []struct {
		ns, nqs []int
		want    string
	}{
		{[]int{33}, []int{34}, "34 queries (Nq) are more than the 33 keys"},
		{[]int{1, 16, 33}, []int{1, 2}, "2 queries (Nq) are more than the 1 keys"},
		{[]int{16}, []int{-1}, "-1 queries"},
	} {
		cfg := tiny()
		cfg.Ns, cfg.Nqs = tt.ns, tt.nqs
		if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Nqs %v: %v, want an error with %q", tt.nqs, err, tt.want)
		}
	}
	cfg := tiny()
	cfg.Nqs = []int{1, 0}
	if err := cfg.Check(); err != nil {
		t.Errorf("Nqs 1, 0: %v", err)
	}
}

// The report's JSON gives every point its nq and tokens_per_s and the
// machine its read_gbps, and its CSV has them in columns of those names;
// a point that did not run leaves its rates empty.
func TestReportDecodeFields(t *testing.T) {
	ms := 0.002
	points := []bench.Point{
		{Impl: "attn-cpu", Strategy: "fused", Shape: bench.Shape{B: 2, H: 4, KVHeads: 1, N: 64, Nq: 1, D: 8, DType: "f16"},
			Runs: 3, MedianS: ms, GBPS: 5, TokensPerS: 2 / ms, ReadBWFrac: 0.25, Status: bench.StatusOK},
		{Impl: "attn-cpu", Strategy: "fused", Shape: bench.Shape{B: 1, H: 4, KVHeads: 4, N: 64, D: 8},
			Runs: 3, MedianS: ms, GBPS: 2, Status: bench.StatusOK}, // a report of before nq and tokens_per_s
		{Impl: "ort-cpu-mha", Strategy: "flash", Shape: bench.Shape{B: 1, H: 4, KVHeads: 4, N: 64, Nq: 1, D: 8},
			Status: bench.StatusUnavailable, Error: "no cache"},
	}
	cfg := tiny()
	cfg.ReadGBPS = 20
	r := bench.NewReport(cfg, nil, nil, points)
	js, machine, raw := bench.JSONMaps(t, r)
	if machine["read_gbps"] != 20.0 {
		t.Errorf("machine.read_gbps = %v, want 20", machine["read_gbps"])
	}
	if p := raw[0]; p["nq"] != 1.0 || p["n"] != 64.0 || p["tokens_per_s"] != 1000.0 || p["read_bw_frac"] != 0.25 || p["dtype"] != "f16" {
		t.Errorf("decoding point's JSON: %v", p)
	}
	if _, ok := raw[1]["nq"]; ok {
		t.Errorf("a point of Nq 0 (N) wrote nq: %v", raw[1])
	}
	back, err := bench.ReadReport(bytes.NewReader(js))
	if err != nil || back.Machine.ReadGBPS != 20 || back.Points[0].Nq != 1 || back.Points[0].TokensPerS != 1000 {
		t.Errorf("read back: %v, %+v", err, back)
	}

	rows := bench.CSVRows(t, r)
	col := func(row []string, name string) string {
		i := slices.Index(rows[0], name)
		if i < 0 {
			t.Fatalf("CSV header %v lacks %s", rows[0], name)
		}
		return row[i]
	}
	for i, want := range [][5]string{
		{"1", "1000", "20", "0.25", "f16"},
		{"64", "32000", "20", "0.1", "f32"}, // nq and tokens/s from N and the median
		{"1", "", "20", "", "f32"},
	} {
		got := [5]string{col(rows[i+1], "nq"), col(rows[i+1], "tokens_per_s"), col(rows[i+1], "read_gbps"), col(rows[i+1], "read_bw_frac"), col(rows[i+1], "dtype")}
		if got != want {
			t.Errorf("CSV row %d: nq, tokens_per_s, read_gbps, read_bw_frac, dtype = %v, want %v", i, got, want)
		}
	}

	var md bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"read bandwidth 20.0 GB/s", "| tok/s, GB/s |", "1000, 5.00 (25%)", "Nq=1", "from N=64 Nq=1: no cache"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// The read bandwidth is a positive, finite rate (no timing is asserted),
// and a buffer, thread or pass count that cannot be measured is an error
// naming it.
func TestReadBandwidth(t *testing.T) {
	for _, threads := range []int{1, 2, 3} {
		bw, err := bench.ReadBandwidth(16<<20+24, threads, 2)
		if err != nil || bw <= 0 || math.IsInf(bw, 0) || math.IsNaN(bw) {
			t.Errorf("%d threads: %v GB/s, %v", threads, bw, err)
		}
	}
	for _, tt := range []struct {
		size            int64
		threads, passes int
		want            string
	}{
		{4, 1, 1, "4 bytes"},
		{1 << 20, 0, 1, "0 threads"},
		{1 << 20, 1, 0, "0 passes"},
	} {
		if _, err := bench.ReadBandwidth(tt.size, tt.threads, tt.passes); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadBandwidth(%d, %d, %d): %v, want an error naming %q", tt.size, tt.threads, tt.passes, err, tt.want)
		}
	}
	for _, tt := range []struct{ l3, want int64 }{
		{0, 512 << 20},
		{32 << 20, 512 << 20},
		{96 << 20, 768 << 20},
		{1 << 30, 4 << 30},
	} {
		if got := bench.ReadBWBytes(tt.l3); got != tt.want {
			t.Errorf("ReadBWBytes(%d) = %d, want %d", tt.l3, got, tt.want)
		}
	}
}

// A peer without a cache of past keys is never run on a decoding point:
// it is unavailable, naming Nq and N, while a Decode peer is run on it
// (fake-copy answers with Q, of the right shape [B,H,Nq,D], wrongly).
func TestPeerDecode(t *testing.T) {
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	cfg := tiny()
	cfg.Ns, cfg.Nqs, cfg.Causal, cfg.Heads, cfg.KVHeads = []int{8}, []int{2}, []bool{true}, []int{2}, []int{1}
	plain := bench.Peer{Name: "fake-copy", Argv: []string{"bash", "fakepeer.sh"}, Dir: dir, Version: "fake 1"}
	decode := plain
	decode.Decode = true
	gpu := decode
	gpu.GPU = true
	cfg.ReadGBPS, cfg.SgemmGFLOPS = 10, 100
	points, err := bench.Run(context.Background(), cfg, nil, []bench.Peer{plain, decode, gpu})
	if err != nil {
		t.Fatal(err)
	}
	if pt := points[0]; pt.Status != bench.StatusUnavailable || !strings.Contains(pt.Error, "not the last 2 of N = 8") || pt.Runs != 0 ||
		pt.Intensity != 0 || pt.RooflineFrac != 0 || pt.Bound != "" {
		t.Errorf("peer without a cache: %s %q, %d runs, intensity %v, of roof %v %q", pt.Status, pt.Error, pt.Runs, pt.Intensity, pt.RooflineFrac, pt.Bound)
	}
	if pt := points[1]; pt.Status != bench.StatusWrong || pt.Nq != 2 || pt.Runs != 3 || pt.TokensPerS <= 0 {
		t.Errorf("decoding peer: %+v", pt)
	}
	// A CPU peer is read against both ceilings (memory bounds it: its
	// intensity, under 1 flop/B, is left of the ridge at 10), a GPU peer
	// against the host's memory only.
	if pt := points[1]; pt.Intensity <= 0 || pt.ReadBWFrac <= 0 || pt.RooflineFrac <= 0 || pt.Bound != bench.BoundMemory {
		t.Errorf("CPU peer: intensity %v, of BW %v, of roof %v %q", pt.Intensity, pt.ReadBWFrac, pt.RooflineFrac, pt.Bound)
	}
	if pt := points[2]; pt.Runs != 3 || pt.Intensity != points[1].Intensity || pt.ReadBWFrac <= 0 || pt.RooflineFrac != 0 || pt.Bound != "" {
		t.Errorf("GPU peer: %d runs, intensity %v, of BW %v, of roof %v %q", pt.Runs, pt.Intensity, pt.ReadBWFrac, pt.RooflineFrac, pt.Bound)
	}
	// A peer taking float16 is handed float16 and refuses bfloat16,
	// naming what it takes, without running.
	cfg.DTypes = []backend.DType{backend.BFloat16}
	decode.Half = []backend.DType{backend.Float16}
	points, err = bench.Run(context.Background(), cfg, nil, []bench.Peer{decode})
	if err != nil {
		t.Fatal(err)
	}
	if pt := points[0]; pt.Status != bench.StatusUnavailable || !strings.Contains(pt.Error, "takes f32 and f16 inputs only, not bf16") || pt.Runs != 0 {
		t.Errorf("bf16 point of an f16 peer: %s %q", pt.Status, pt.Error)
	}
}

// The decoding peers, live — ORT's GroupQueryAttention with a past KV
// cache and llama.cpp's ggml_flash_attn_ext on ggml's CPU and Vulkan
// backends: Nq new tokens over N keys (and Nq = N, no past), GQA, causal
// and not, float32 and float16, each checked against the float64
// reference. Without ATTN_PEERS only ORT's runs, and only where it is
// installed; with it (CI, after bench/peers/install.sh) every one must.
func TestPeersLiveDecode(t *testing.T) {
	ctx := context.Background()
	var peers []bench.Peer
	names := []string{"ort-cpu-gqa", "ggml-cpu", "ggml-vulkan"}
	if os.Getenv("ATTN_PEERS") == "" {
		// ggml-vulkan compiles its shaders in every process (seconds on
		// lavapipe): left to CI and to whoever asks.
		names = names[:1]
		t.Log("ggml-cpu and ggml-vulkan run with ATTN_PEERS=1")
	}
	for _, name := range names {
		if name == "ort-cpu-gqa" && os.Getenv("ATTN_PEERS") == "" {
			if _, err := exec.LookPath("node"); err != nil {
				t.Logf("%s: node is not installed: run bench/peers/install.sh (ATTN_PEERS=1 makes this a failure)", name)
				continue
			}
		}
		ps, err := bench.Peers(ctx, peersDir, []string{name})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ps[0].Unavailable == "":
			peers = append(peers, ps[0])
		case os.Getenv("ATTN_PEERS") != "":
			t.Errorf("%s: %s", name, ps[0].Unavailable)
		default:
			t.Logf("%s is not available: %s (run bench/peers/install.sh; ATTN_PEERS=1 makes this a failure)", name, ps[0].Unavailable)
		}
	}
	if len(peers) == 0 {
		t.Skip("no decoding peer is installed: run bench/peers/install.sh")
	}
	cfg := bench.Config{
		Ns: []int{40}, Nqs: []int{1, 3, 0}, Batches: []int{1}, Heads: []int{4}, KVHeads: []int{2}, Dims: []int{16},
		Causal: []bool{false, true}, DTypes: []backend.DType{backend.Float32, backend.Float16},
		Budget: 10 * time.Millisecond, MinRuns: 2, Seed: 3, CheckRows: 16,
	}
	points, err := bench.Run(ctx, cfg, nil, peers)
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range points {
		e := -1.0
		if pt.MaxErr != nil {
			e = *pt.MaxErr
		}
		t.Logf("%s N=%d Nq=%d KVH=%d causal=%v %s: %s, error %.2g %s", pt.Impl, pt.N, pt.Nq, pt.KVHeads, pt.Causal, pt.DType, pt.Status, e, pt.Error)
		limit := map[string]float64{"": 1e-4, "f16": 1e-3}[pt.DType]
		// ggml-cpu's one-row kernel rounds Q to f16 and sums V·p in f16
		// when V is f16, and its version says so: its answers are marked
		// wrong, past the bench's tolerance, but within what f16 sums of
		// N = 40 terms may lose (about 2⁻¹¹ a term, 2e-2 in all).
		f16Sums := pt.Impl == "ggml-cpu" && pt.DType == "f16" && strings.Contains(pt.Version, "accumulates V·p in f16")
		if f16Sums {
			limit = 2e-2
		}
		switch {
		case pt.Status != bench.StatusOK && !(f16Sums && pt.Status == bench.StatusWrong):
			t.Errorf("%s N=%d Nq=%d KVH=%d causal=%v %s: %s: %s", pt.Impl, pt.N, pt.Nq, pt.KVHeads, pt.Causal, pt.DType, pt.Status, pt.Error)
		case pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, limit) || pt.CheckedRows != min(16, 4*pt.Nq) || pt.Strategy != map[bool]string{false: "flash", true: "unfused"}[pt.Impl == "ort-cpu-gqa"]:
			t.Errorf("%s N=%d Nq=%d: error %v over %d rows, strategy %s", pt.Impl, pt.N, pt.Nq, pt.MaxErr, pt.CheckedRows, pt.Strategy)
		}
	}
}
