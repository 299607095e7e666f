package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/attn-go/attn/kernels"
)

// peersDir is the peer runners' directory, bench/peers of the clone,
// seen from this package's directory.
const peersDir = "../../../../bench/peers"

// Each outcome of a peer's process becomes a point with the status that
// says what happened; none is dropped and none stops the sweep.
func TestPeerOutcomes(t *testing.T) {
	// The peers' inputs go to a temporary directory of this test's own,
	// so that another bench running beside it (a second CI job, a
	// developer's sweep) leaves nothing this test would count.
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	peer := func(name string) bench.Peer {
		return bench.Peer{Name: name, Argv: []string{"bash", "fakepeer.sh"}, Dir: dir, Version: "fake 1"}
	}
	tests := []struct {
		name   string
		status bench.Status
		error  string
	}{
		{"fake-copy", bench.StatusWrong, "max relative error"},
		{"fake-shape", bench.StatusFailed, "shape"},
		{"fake-noout", bench.StatusFailed, "no output"},
		{"fake-refuse", bench.StatusUnavailable, "not supported"},
		{"fake-kill", bench.StatusOutOfMemory, "SIGKILL"},
		{"fake-fail", bench.StatusFailed, "something broke"},
		{"fake-garbage", bench.StatusFailed, "not json"},
	}
	var peers []bench.Peer
	for _, tt := range tests {
		peers = append(peers, peer(tt.name))
	}
	absent := peer("fake-absent")
	absent.Unavailable = "no fake adapter"
	peers = append(peers, absent)
	cfg := tiny()
	cfg.Ns, cfg.Causal, cfg.Heads, cfg.KVHeads = []int{8}, []bool{false}, []int{2}, []int{1}
	points, err := bench.Run(context.Background(), cfg, nil, peers)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != len(peers) {
		t.Fatalf("%d points for %d peers", len(points), len(peers))
	}
	for i, tt := range tests {
		pt := points[i]
		if pt.Impl != tt.name || pt.Status != tt.status || !strings.Contains(pt.Error, tt.error) {
			t.Errorf("%s: %s %s %q; want %s with %q", tt.name, pt.Impl, pt.Status, pt.Error, tt.status, tt.error)
		}
	}
	cp := points[0]
	if cp.Runs != 3 || cp.MedianS != 0.2 || cp.MinS != 0.1 || cp.MaxS != 0.3 || cp.WarmupS != 0.5 || cp.Notes != "copies q" ||
		cp.MaxErr == nil || cp.CheckedRows != 5 || cp.PeakRSS <= 0 || cp.Version != "fake 1" {
		t.Errorf("fake-copy point %+v", cp)
	}
	if last := points[len(points)-1]; last.Status != bench.StatusUnavailable || last.Error != "no fake adapter" || last.Runs != 0 {
		t.Errorf("unavailable peer: %+v", last)
	}
	if tmp, _ := filepath.Glob(filepath.Join(os.TempDir(), "attn-bench-*")); len(tmp) > 0 {
		t.Errorf("inputs left behind: %v", tmp)
	}
}

// A peer is never measured with a variant it does not run: its points
// are unavailable, naming the variant, and its runner is not started
// (fake-copy would have run and been marked wrong).
func TestPeerRefusesVariants(t *testing.T) {
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	cfg := tiny()
	cfg.Ns, cfg.Causal, cfg.Heads, cfg.KVHeads = []int{8}, []bool{true}, []int{2}, []int{1}
	for _, v := range []bench.Variant{{Window: &[2]int{3, 0}}, {Softcap: 20}, {ALiBi: true}, {Sinks: true}} {
		cfg.Variant = v
		peer := bench.Peer{Name: "fake-copy", Argv: []string{"bash", "fakepeer.sh"}, Dir: dir, Version: "fake 1"}
		points, err := bench.Run(context.Background(), cfg, nil, []bench.Peer{peer})
		if err != nil {
			t.Fatal(err)
		}
		pt := points[0]
		if pt.Status != bench.StatusUnavailable || !strings.Contains(pt.Error, v.String()) || pt.Runs != 0 || pt.PeakRSS != 0 ||
			pt.Variant.String() != v.String() {
			t.Errorf("%s: %s %q, %d runs, RSS %d, variant %q; want unavailable naming it, not run", v, pt.Status, pt.Error, pt.Runs, pt.PeakRSS, pt.Variant)
		}
	}
}

// Peers knows its peers by name and says how to install a missing runner.
func TestPeersLookup(t *testing.T) {
	ctx := context.Background()
	if _, err := bench.Peers(ctx, peersDir, []string{"tensorflow"}); err == nil || !strings.Contains(err.Error(), "tensorflow") {
		t.Errorf("unknown peer: %v", err)
	}
	if _, err := bench.Peers(ctx, t.TempDir(), []string{"numpy-naive"}); err == nil || !strings.Contains(err.Error(), "install.sh") {
		t.Errorf("missing runner: %v", err)
	}
	// ATTN_PEER_PYTHON runs the Python runners on another interpreter
	// (here one that fails its probe), leaving the table as it was.
	t.Setenv("ATTN_PEER_PYTHON", "/bin/false")
	ps, err := bench.Peers(ctx, peersDir, []string{"ggml-cpu"})
	if err != nil || ps[0].Argv[0] != "/bin/false" || ps[0].Unavailable == "" {
		t.Errorf("ATTN_PEER_PYTHON=/bin/false: %+v, %v", ps, err)
	}
	t.Setenv("ATTN_PEER_PYTHON", "")
	if ps, err := bench.Peers(ctx, peersDir, []string{"ggml-cpu"}); err != nil || ps[0].Argv[0] != "/usr/bin/python3" {
		t.Errorf("without ATTN_PEER_PYTHON: %+v, %v", ps, err)
	}
}

// The real peers, installed by bench/peers/install.sh (CI does), run beside
// attn on the same inputs and give right answers; ORT's WebGPU provider
// may be unavailable on the adapter here, but must say so.
func TestPeersLive(t *testing.T) {
	if os.Getenv("ATTN_PEERS") == "" {
		t.Skip("set ATTN_PEERS=1 after bench/peers/install.sh to run the real peers")
	}
	ctx := context.Background()
	peers, err := bench.Peers(ctx, peersDir, []string{"all"})
	if err != nil {
		t.Fatal(err)
	}
	be := openCPU(t)
	cfg := bench.Config{
		Ns: []int{1, 33, 128}, Batches: []int{1}, Heads: []int{4}, KVHeads: []int{4, 2}, Dims: []int{16},
		Causal: []bool{false, true}, Strategies: []kernels.Strategy{kernels.Fused},
		Budget: 10 * time.Millisecond, MinRuns: 2, Seed: 3, CheckRows: 16,
	}
	points, err := bench.Run(ctx, cfg, []backend.Backend{be}, peers)
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range points {
		e := -1.0
		if pt.MaxErr != nil {
			e = *pt.MaxErr
		}
		t.Logf("%s N=%d KVH=%d causal=%v: %s %.3g GFLOP/s, error %.2g %s", pt.Impl, pt.N, pt.KVHeads, pt.Causal, pt.Status, pt.GFLOPS, e, pt.Error)
		switch {
		case pt.Impl == "ort-webgpu-mha" && pt.Status == bench.StatusUnavailable:
		case pt.Status != bench.StatusOK:
			t.Errorf("%s N=%d KVH=%d causal=%v: %s: %s", pt.Impl, pt.N, pt.KVHeads, pt.Causal, pt.Status, pt.Error)
		case pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-4) || pt.PeakRSS <= 0 || pt.Version == "":
			t.Errorf("%s N=%d: error %v, RSS %d, version %q", pt.Impl, pt.N, pt.MaxErr, pt.PeakRSS, pt.Version)
		}
	}

	// MLA's shape, small: V a view of K's first Dv columns. ggml's
	// runners take it (--v-from-k); the others' points are unavailable.
	cfg.Ns, cfg.Nqs, cfg.Heads, cfg.KVHeads, cfg.Dims, cfg.VFromK = []int{33}, []int{1, 0}, []int{8}, []int{1}, []int{64}, 32
	if points, err = bench.Run(ctx, cfg, []backend.Backend{be}, peers); err != nil {
		t.Fatal(err)
	}
	ggml := 0
	for _, pt := range points {
		e := -1.0
		if pt.MaxErr != nil {
			e = *pt.MaxErr
		}
		t.Logf("V from K: %s N=%d Nq=%d %s causal=%v: %s %.3g GFLOP/s, error %.2g %s", pt.Impl, pt.N, pt.Queries(), pt.DType, pt.Causal, pt.Status, pt.GFLOPS, e, pt.Error)
		switch {
		case !strings.HasPrefix(pt.Impl, "ggml-") && pt.Impl != "attn-cpu":
			if pt.Status != bench.StatusUnavailable {
				t.Errorf("%s ran V from K: %s", pt.Impl, pt.Status)
			}
		case pt.Impl == "ggml-vulkan" && pt.Status == bench.StatusUnavailable:
		case pt.Status != bench.StatusOK || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-4):
			t.Errorf("V from K: %s N=%d Nq=%d %s causal=%v: %s %s, error %v", pt.Impl, pt.N, pt.Queries(), pt.DType, pt.Causal, pt.Status, pt.Error, pt.MaxErr)
		case pt.Impl == "ggml-cpu":
			ggml++
		}
	}
	if ggml == 0 {
		t.Errorf("ggml-cpu ran no point of V from K")
	}
}

// Subprocess runs each attn point through a command that prints the
// point, takes the peak RSS from the process, and reports a command that
// fails or prints nonsense as a failed point.
func TestSubprocess(t *testing.T) {
	be := openCPU(t)
	cfg := tiny()
	cfg.Ns, cfg.Causal, cfg.Strategies = []int{8}, []bool{false}, []kernels.Strategy{kernels.Fused}
	var specs []bench.PointSpec
	printPoint := `sleep 0.1; echo '{"impl":"attn-cpu","strategy":"fused","n":8,"runs":3,"median_s":0.5,"status":"ok","peak_rss_bytes":1}'`
	cfg.Spawn = func(ctx context.Context, spec bench.PointSpec) bench.Point {
		specs = append(specs, spec)
		return bench.Subprocess("bash", "-c", printPoint+`; test "$0" != ""`)(ctx, spec)
	}
	points, err := bench.Run(context.Background(), cfg, []backend.Backend{be}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 1 || len(specs) != 1 {
		t.Fatalf("%d points, %d spawns", len(points), len(specs))
	}
	if pt := points[0]; pt.Runs != 3 || pt.MedianS != 0.5 || pt.PeakRSS <= 1 {
		t.Errorf("point %+v: want the child's, with its peak RSS", pt)
	}
	want := bench.PointSpec{Backend: "cpu", Strategy: "fused", Shape: bench.Shape{B: 1, H: 2, KVHeads: 1, N: 8, Nq: 8, D: 8}, Seed: 1, Budget: time.Millisecond, MinRuns: 3, CheckRows: 5}
	if specs[0] != want {
		t.Errorf("spec %+v, want %+v", specs[0], want)
	}

	for script, status := range map[string]bench.Status{
		"exit 4":           bench.StatusFailed,
		"echo not-a-point": bench.StatusFailed,
		"kill -KILL $$":    bench.StatusOutOfMemory,
	} {
		pt := bench.Subprocess("bash", "-c", script)(context.Background(), want)
		if pt.Status != status || pt.Impl != "attn-cpu" || pt.N != 8 {
			t.Errorf("%q: %+v, want %s", script, pt, status)
		}
	}

	// MeasurePoint, what the child runs, measures the spec in-process.
	pt := bench.MeasurePoint(context.Background(), be, want)
	if pt.Status != bench.StatusOK || pt.Runs < 3 || pt.MaxErr == nil || backendtest.Exceeds(*pt.MaxErr, 1e-5) {
		t.Errorf("MeasurePoint: %+v", pt)
	}
	wrong := want
	wrong.Backend = "gpu"
	if pt := bench.MeasurePoint(context.Background(), be, wrong); pt.Status != bench.StatusFailed {
		t.Errorf("MeasurePoint of a gpu spec on the cpu: %+v", pt)
	}
}
