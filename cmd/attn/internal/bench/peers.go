package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
	"github.com/sbinet/npyio"
)

// Peer is another implementation of attention measured beside attn: a
// runner program in bench/peers that times one point per process on the
// inputs attn writes, and writes its output back for checking. The
// protocol is in bench/peers/README.md.
type Peer struct {
	Name string   // the runner's --impl, and the point's Impl
	Argv []string // the runner command, run in Dir
	Dir  string
	// Unfused peers materialise the B·H·N² score matrix (Bytes counts its
	// traffic); ScoreCopies is how many such matrices one holds at its
	// peak, for the memory check before it runs; CausalScoreCopies, when
	// larger, is that for a causal problem (ORT's MultiHeadAttention
	// leaves its flash kernel then and peaks at a little over two score
	// matrices).
	Unfused           bool
	ScoreCopies       float64
	CausalScoreCopies float64
	// Decode peers take fewer queries than keys (Nq < N: the last Nq
	// positions over a cache of N keys); the others' such points are
	// unavailable.
	Decode bool
	// Half lists the half (and 8-bit) dtypes the peer takes, its inputs
	// handed to it in that dtype (an 8-bit one's K and V as the float32
	// values it stores); its points of any other dtype are unavailable.
	Half []backend.DType
	// GPU peers run on an adapter their runtime picks (ORT's WebGPU EP
	// takes what Dawn offers), not on the host's cores: their points get
	// a fraction of the host's read bandwidth, as an integrated GPU's
	// do, but no roofline, whose compute ceiling is the CPU backend's
	// Sgemm.
	GPU bool
	// VFromK peers take V as a view of K's first Dv columns
	// (--v-from-k DV: MLA's latent cache, as llama.cpp builds it for
	// DeepSeek models); the others' such points are unavailable.
	VFromK bool

	Version     string // from the probe
	Unavailable string // why the probe says it cannot run here; "" when it can
}

// peerTable lists the peers bench/peers has runners for.
var peerTable = []Peer{
	{Name: "ort-cpu-mha", Argv: []string{"node", "ort.mjs"}, ScoreCopies: 0, CausalScoreCopies: 2.25},
	{Name: "ort-webgpu-mha", Argv: []string{"node", "ort.mjs"}, ScoreCopies: 1, GPU: true},
	// ORT's CPU GroupQueryAttention forms the B·H·Nq·N probabilities
	// (its peak RSS is about one such matrix at Nq = N): unfused.
	{Name: "ort-cpu-gqa", Argv: []string{"node", "ort.mjs"}, Unfused: true, ScoreCopies: 1, Decode: true, Half: []backend.DType{backend.Float16}},
	// llama.cpp's ggml_flash_attn_ext, fused, with a cache of past keys
	// (Nq < N) and GQA of its own; a causal point hands it an f16 mask of
	// Nq·N, at most half a score matrix.
	// Both take q8 too: K and V in q8_0, quantized by ggml itself.
	// Both take V as a view of K (MLA), as llama.cpp's DeepSeek graphs do.
	{Name: "ggml-cpu", Argv: []string{"/usr/bin/python3", "ggml_peer.py"}, CausalScoreCopies: 0.5, Decode: true, Half: []backend.DType{backend.Float16, backend.Q8, backend.Q4}, VFromK: true},
	{Name: "ggml-vulkan", Argv: []string{"/usr/bin/python3", "ggml_peer.py"}, CausalScoreCopies: 0.5, Decode: true, Half: []backend.DType{backend.Float16, backend.Q8, backend.Q4}, GPU: true, VFromK: true},
	{Name: "torch-sdpa", Argv: []string{"/usr/bin/python3", "torch_peer.py"}, Unfused: true, ScoreCopies: 3},
	{Name: "torch-naive", Argv: []string{"/usr/bin/python3", "torch_peer.py"}, Unfused: true, ScoreCopies: 3},
	{Name: "numpy-naive", Argv: []string{"/usr/bin/python3", "torch_peer.py"}, Unfused: true, ScoreCopies: 3},
}

// PeerNames lists the peers Peers knows, in the order they run.
func PeerNames() []string {
	names := make([]string, len(peerTable))
	for i, p := range peerTable {
		names[i] = p.Name
	}
	return names
}

// Peers returns the named peers ("all" for every one) with their runners
// in dir, each probed for its version and whether it can run here. A peer
// that cannot run is returned with Unavailable set, so that its points are
// reported; a runner that is missing altogether is an error naming the
// install script.
func Peers(ctx context.Context, dir string, names []string) ([]Peer, error) {
	if slices.Contains(names, "all") {
		names = PeerNames()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	var peers []Peer
	for _, name := range names {
		i := slices.IndexFunc(peerTable, func(p Peer) bool { return p.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("bench: unknown peer %q (have %s, all)", name, strings.Join(PeerNames(), ", "))
		}
		p := peerTable[i]
		p.Dir = abs
		if py := os.Getenv("ATTN_PEER_PYTHON"); py != "" && p.Argv[0] == "/usr/bin/python3" {
			// Another Python with NumPy (a GPU machine's own, say), as
			// ort.mjs takes it too.
			p.Argv = append([]string{py}, p.Argv[1:]...)
		}
		if err := p.probe(ctx); err != nil {
			return nil, err
		}
		peers = append(peers, p)
	}
	return peers, nil
}

// probe asks the runner for the peer's version and whether it can run.
func (p *Peer) probe(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(p.Dir, p.Argv[len(p.Argv)-1])); err != nil {
		return fmt.Errorf("bench: peer %s: %v (run bench/peers/install.sh from a clone of attn, and pass -peers-dir)", p.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Argv[0], append(p.Argv[1:], "--probe", "--impl", p.Name)...)
	cmd.Dir = p.Dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		p.Unavailable = fmt.Sprintf("probe failed: %v: %s (run bench/peers/install.sh)", err, lastLine(stderr.String()))
		return nil
	}
	var r struct {
		Version   string `json:"version"`
		Available bool   `json:"available"`
		Reason    string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(lastLine(string(out))), &r); err != nil {
		return fmt.Errorf("bench: peer %s: probe printed %q: %v", p.Name, lastLine(string(out)), err)
	}
	p.Version = r.Version
	if !r.Available {
		p.Unavailable = r.Reason
		if p.Unavailable == "" {
			p.Unavailable = "the runner says it is unavailable"
		}
	}
	return nil
}

func (p *Peer) strategy() string {
	if p.Unfused {
		return "unfused"
	}
	return "flash"
}

// runnerResult is the JSON line a runner prints last.
type runnerResult struct {
	Impl    string    `json:"impl"`
	Version string    `json:"version"`
	WarmupS float64   `json:"warmup_s"`
	TimesS  []float64 `json:"times_s"`
	Notes   string    `json:"notes"`
	Error   string    `json:"error"`
}

// measure runs the peer on in's shape in a process of its own and checks
// the output it writes back.
func (p *Peer) measure(ctx context.Context, in *inputs, cfg *Config) Point {
	pr := in.p
	pt := newPoint(p.Name, p.strategy(), p.Version, pr)
	if p.Unavailable != "" {
		pt.Status, pt.Error = StatusUnavailable, p.Unavailable
		return pt
	}
	if in.dt != backend.Float32 && !slices.Contains(p.Half, in.dt) {
		takes := "f32 inputs only"
		if len(p.Half) > 0 {
			var names []string
			for _, dt := range p.Half {
				names = append(names, dt.String())
			}
			takes = fmt.Sprintf("f32 and %s inputs only", strings.Join(names, ", "))
		}
		pt.Status, pt.Error = StatusUnavailable, fmt.Sprintf("the %s runner takes %s, not %v", p.Name, takes, in.dt)
		return pt
	}
	if pr.Nq < pr.Nk && !p.Decode {
		// Handing such a peer all N queries and keeping the last Nq
		// rows would time N times the work under a decoding point's
		// name.
		pt.Status, pt.Error = StatusUnavailable, fmt.Sprintf("the %s runner computes Nq = N queries only, not the last %d of N = %d: it has no cache of past keys", p.Name, pr.Nq, pr.Nk)
		return pt
	}
	if pr.VFromK && !p.VFromK {
		// The runner takes V as a tensor of its own: handing it K's
		// columns as one would time the attention of a cache twice
		// MLA's size under its name.
		pt.Status, pt.Error = StatusUnavailable, fmt.Sprintf("the %s runner takes V apart, not as K's first %d columns (V from K runs on attn)", p.Name, pr.Dv)
		return pt
	}
	if pr.Blocks != nil {
		pt.Status, pt.Error = StatusUnavailable, fmt.Sprintf("the %s runner takes no block masks (block-sparse attention runs on attn)", p.Name)
		return pt
	}
	if pr.Indices != nil {
		// No runner takes an index list; the dense problem would time
		// N/K times the work under the sparse point's name.
		pt.Status, pt.Error = StatusUnavailable, fmt.Sprintf("the %s runner takes no index lists (sparse attention over %d chosen keys runs on attn)", p.Name, pr.Indices.PerRow)
		return pt
	}
	if v := variantOf(pr); v.Any() {
		// The runners call each library's attention as it is: none
		// takes a window, softcap, ALiBi slopes or sinks. Handing them
		// as a materialised bias would time another algorithm under the
		// variant's name, and leaving them out another problem.
		pt.Status, pt.Error = StatusUnavailable, fmt.Sprintf("the %s runner has no %s: peers run plain and causal attention only", p.Name, v)
		return pt
	}
	in4 := int64(in.dt.Size()) * (int64(pr.QLen()) + int64(pr.KLen()) + int64(pr.VLen()) + int64(pr.OLen()))
	copies := p.ScoreCopies
	if pr.Causal {
		copies = max(copies, p.CausalScoreCopies)
	}
	if err := fits(3*in4 + int64(copies*float64(4*int64(pr.ScoresLen())))); err != nil {
		pt.fail(err)
		return pt
	}
	dir, err := in.files()
	if err != nil {
		pt.fail(err)
		return pt
	}
	args := append(slices.Clone(p.Argv[1:]),
		"--impl", p.Name, "--dir", dir,
		"--b", strconv.Itoa(pr.B), "--h", strconv.Itoa(pr.H), "--kvh", strconv.Itoa(pr.KVHeads),
		"--n", strconv.Itoa(pr.Nk), "--nq", strconv.Itoa(pr.Nq), "--dtype", in.dt.String(), "--d", strconv.Itoa(pr.D), "--causal", map[bool]string{false: "0", true: "1"}[pr.Causal],
		"--scale", strconv.FormatFloat(float64(pr.Scale), 'g', -1, 32),
		"--budget-s", strconv.FormatFloat(cfg.Budget.Seconds(), 'g', -1, 64),
		"--min-runs", strconv.Itoa(cfg.MinRuns), "--threads", strconv.Itoa(cfg.Threads))
	if pr.VFromK {
		args = append(args, "--v-from-k", strconv.Itoa(pr.Dv))
	}
	cmd := exec.CommandContext(ctx, p.Argv[0], args...)
	cmd.Dir = p.Dir
	t := strconv.Itoa(cfg.Threads)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS="+t, "OPENBLAS_NUM_THREADS="+t, "MKL_NUM_THREADS="+t)
	outPath := filepath.Join(dir, "o-"+p.Name+".npy")
	defer os.Remove(outPath)
	last, ok := runChild(ctx, cmd, &pt)
	if !ok {
		return pt
	}
	var r runnerResult
	if err := json.Unmarshal([]byte(last), &r); err != nil {
		pt.Status, pt.Error = StatusFailed, fmt.Sprintf("runner printed %q: %v", last, err)
		return pt
	}
	if r.Version != "" {
		pt.Version = r.Version
	}
	pt.Notes = r.Notes
	if r.Error != "" {
		pt.Status, pt.Error = StatusUnavailable, oneLine(r.Error)
		return pt
	}
	if len(r.TimesS) == 0 {
		pt.Status, pt.Error = StatusFailed, "runner reported no timed run"
		return pt
	}
	times := make([]time.Duration, len(r.TimesS))
	for i, s := range r.TimesS {
		times[i] = time.Duration(s * float64(time.Second))
	}
	pt.setTimes(time.Duration(r.WarmupS*float64(time.Second)), times, pr, in.dt, p.Unfused)
	o, err := readOutput(outPath, []int{pr.B, pr.H, pr.Nq, pr.Dv})
	if err != nil {
		pt.Status, pt.Error = StatusFailed, err.Error()
		return pt
	}
	in.check(&pt, func(off int, row []float32) error {
		copy(row, o[off:])
		return nil
	})
	return pt
}

// runChild runs cmd to its end, records its peak RSS on pt and returns
// the last line it printed. When it failed — killed (likely out of
// memory), a non-zero exit, ctx done — it marks pt and returns false.
//
// The peak RSS is the child's VmHWM, read from /proc every 10 ms while it
// runs, and 0 (unknown) for a child that ended before the first read. The
// kernel's rusage would not do: Go starts a child with vfork, so the
// child's ru_maxrss starts from this process's own peak.
func runChild(ctx context.Context, cmd *exec.Cmd, pt *Point) (last string, ok bool) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Start()
	if runErr == nil {
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		done := make(chan struct{})
		polled := make(chan int64)
		go func() {
			peak := int64(0)
			t := time.NewTicker(10 * time.Millisecond)
			defer t.Stop()
			for {
				peak = max(peak, procField(status, "VmHWM:"))
				select {
				case <-done:
					polled <- peak
					return
				case <-t.C:
				}
			}
		}()
		runErr = cmd.Wait()
		close(done)
		pt.PeakRSS = <-polled
	}
	if runErr == nil {
		return lastLine(stdout.String()), true
	}
	if ctx.Err() != nil {
		pt.fail(ctx.Err())
		return "", false
	}
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			pt.Status, pt.Error = StatusOutOfMemory, fmt.Sprintf("killed (SIGKILL) at %s resident: out of memory?", sizeString(pt.PeakRSS))
			return "", false
		}
	}
	pt.Status, pt.Error = StatusFailed, fmt.Sprintf("%v: %s", runErr, lastLine(stderr.String()))
	if strings.Contains(strings.ToLower(stderr.String()), "memory") {
		pt.Status = StatusOutOfMemory
	}
	return "", false
}

// Subprocess is a Config.Spawn that measures each attn point in a new
// process: argv with the point's PointSpec as JSON for its last argument.
// The process must print the Point MeasurePoint returns as JSON on its
// last line of output (attn bench -point does); its peak RSS is taken from
// the kernel, as for peers.
func Subprocess(argv ...string) func(context.Context, PointSpec) Point {
	return func(ctx context.Context, spec PointSpec) Point {
		point := newPoint("attn-"+spec.Backend, spec.Strategy, "", spec.Problem())
		pt := &point
		js, err := json.Marshal(spec)
		if err != nil {
			pt.fail(err)
			return *pt
		}
		cmd := exec.CommandContext(ctx, argv[0], append(slices.Clone(argv[1:]), string(js))...)
		last, ok := runChild(ctx, cmd, pt)
		if !ok {
			return *pt
		}
		var got Point
		if err := json.Unmarshal([]byte(last), &got); err != nil {
			pt.Status, pt.Error = StatusFailed, fmt.Sprintf("the point's process printed %q: %v", last, err)
			return *pt
		}
		got.PeakRSS = max(got.PeakRSS, pt.PeakRSS)
		return got
	}
}

// files writes Q, K and V as .npy (BHND) for the peers, once per shape and
// dtype, and returns their directory: float16 ("<f2") for float16 inputs,
// float32 otherwise (bfloat16 inputs, which NumPy cannot store, as the
// float32 values they hold).
func (in *inputs) files() (string, error) {
	if in.dir != "" {
		return in.dir, nil
	}
	dir, err := os.MkdirTemp("", "attn-bench-")
	if err != nil {
		return "", err
	}
	p := in.p
	for _, f := range []struct {
		name  string
		shape []int
		data  []float32
	}{
		{"q.npy", []int{p.B, p.H, p.Nq, p.D}, in.q},
		{"k.npy", []int{p.B, p.KVHeads, p.Nk, p.D}, in.k},
		{"v.npy", []int{p.B, p.KVHeads, p.Nk, p.Dv}, in.v},
	}[:3-btoi(p.VFromK)] { // V from K: no v.npy (--v-from-k)
		if err := writeNpy(filepath.Join(dir, f.name), f.shape, f.data, in.dt); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	in.dir = dir
	return dir, nil
}

func writeNpy(path string, shape []int, data []float32, dt backend.DType) error {
	t := &kernels.Tensor{Shape: shape, Data: data}
	if dt == backend.Float16 {
		// data holds float16 values already (setDType): Encode is exact.
		t = &kernels.Tensor{Shape: shape, DType: dt, Bits: make([]uint16, len(data))}
		for i, x := range data {
			t.Bits[i] = dt.Encode(x)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = t.WriteNpy(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readOutput reads a peer's output, which must be float32 C-order of the
// given shape.
func readOutput(path string, shape []int) ([]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the runner wrote no output: %v", err)
	}
	defer f.Close()
	r, err := npyio.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	d := r.Header.Descr
	if d.Type != "<f4" || d.Fortran || !slices.Equal(d.Shape, shape) {
		return nil, fmt.Errorf("%s: %s fortran=%v shape %v, want <f4 C-order %v", path, d.Type, d.Fortran, d.Shape, shape)
	}
	var o []float32
	if err := r.Read(&o); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return o, nil
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// oneLine is the first line of s.
func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
