package bench

// Measuring one point: its spec, the timed runs, the backend's ops
// prepared once, the inputs and the rows checked.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// PointSpec is one attn point, all another process needs to measure it
// as Run would (MeasurePoint): the same inputs come from the same seed.
type PointSpec struct {
	Backend  string `json:"backend"`
	Strategy string `json:"strategy"`
	Layers   int    `json:"layers,omitempty"`
	Shape
	Seed      uint64        `json:"seed"`
	Budget    time.Duration `json:"budget_ns"`
	MinRuns   int           `json:"min_runs"`
	CheckRows int           `json:"check_rows"`
}

func newSpec(be string, s string, layers int, p backend.Problem, dt backend.DType, cfg *Config) PointSpec {
	sh := shapeOf(p)
	if sh.BlockSize > 0 {
		sh.BlockDensity = cfg.BlockDensity // as step records it
	}
	sh.DType = dtypeName(dt)
	return PointSpec{Backend: be, Strategy: s, Layers: layers, Shape: sh,
		Seed: cfg.Seed, Budget: cfg.Budget, MinRuns: cfg.MinRuns, CheckRows: cfg.CheckRows}
}

// MeasurePoint measures spec on be in this process, as Run does without
// Spawn. be must be the backend spec names.
func MeasurePoint(ctx context.Context, be backend.Backend, spec PointSpec) Point {
	p := spec.Problem()
	pt := attnPoint(be, spec.Strategy, p)
	pt.DType = spec.DType
	bwd := backwardStrategy(spec.Strategy)
	s, err := kernels.ParseStrategy(spec.Strategy)
	if bwd {
		s, err = kernels.Fused, nil
	}
	if err == nil && s != kernels.Staged && s != kernels.Fused {
		err = fmt.Errorf("bench: strategy %s: name staged or fused", s)
	}
	if err == nil && spec.Layers < 0 {
		err = fmt.Errorf("bench: %d layers", spec.Layers)
	}
	if err == nil && be.Name() != spec.Backend {
		err = fmt.Errorf("bench: the point is for backend %s, not %s", spec.Backend, be.Name())
	}
	if err == nil {
		err = p.Validate()
	}
	if err == nil {
		err = fits(Bytes(p, false) * int64(max(spec.Layers, 1)))
	}
	if err != nil {
		pt.fail(err)
		return pt
	}
	dt, err := spec.dtype()
	if err != nil {
		pt.fail(err)
		return pt
	}
	cfg := Config{Budget: spec.Budget, MinRuns: max(spec.MinRuns, 1), CheckRows: spec.CheckRows, Seed: spec.Seed}
	if spec.Prefix > 0 {
		return measurePrefix(ctx, be, p, spec.prefixSpec(), dt, spec.Seed, &cfg)
	}
	if spec.Tree > 0 {
		return measureTree(ctx, be, p, spec.TreeChunk, dt, spec.Seed, &cfg)
	}
	// The inputs serve this one point: each host copy is dropped once it
	// is uploaded, so the process holds them once, not twice.
	in := newInputs(p, spec.Seed, spec.CheckRows)
	in.setDType(dt)
	in.consume = true
	if bwd {
		return measureBackward(ctx, be, spec.Strategy == StrategyFwdBwd, in, &cfg)
	}
	return measureAttn(ctx, be, s, spec.Layers, in, &cfg)
}

// timeRuns runs op once to warm up, then until budget has passed and at
// least minRuns runs are timed. after, when not nil, is called after
// each run, outside its time, with whether the run was timed.
func timeRuns(ctx context.Context, op func(context.Context) error, budget time.Duration, minRuns int, after func(timed bool)) (warmup time.Duration, times []time.Duration, err error) {
	if after == nil {
		after = func(bool) {}
	}
	t0 := time.Now()
	if err := op(ctx); err != nil {
		return 0, nil, err
	}
	warmup = time.Since(t0)
	after(false)
	start := time.Now()
	for len(times) < minRuns || time.Since(start) < budget {
		t0 := time.Now()
		if err := op(ctx); err != nil {
			return 0, nil, err
		}
		times = append(times, time.Since(t0))
		after(true)
	}
	return warmup, times, nil
}

// peakMemory is implemented by backends that count the device memory they
// allocate (gpu.Backend).
type peakMemory interface {
	Memory() (live, peak int64)
	ResetPeak()
}

// inHostMemory reports whether a backend keeps its buffers in the host's
// memory: the CPU backend, and a CPU-type adapter (lavapipe) or an
// integrated GPU, whose memory is the host's. A point on any other (a
// discrete GPU) reads memory that Machine.ReadGBPS did not measure, and
// gets no fraction of it.
func inHostMemory(info backend.Info) bool { return placeOf(info) != offHost }

// measureAttn times attn's strategy s on be: inputs uploaded once, then
// the ops and Sync timed, then the sampled rows of the output read back
// and checked.
func measureAttn(ctx context.Context, be backend.Backend, s kernels.Strategy, layers int, in *inputs, cfg *Config) Point {
	p := in.p
	pt := attnPoint(be, s.String(), p)
	pt.DType = dtypeName(in.dt)
	pt.Layers = layers
	staged := s == kernels.Staged
	var need int64
	if inHostMemory(be.Info()) {
		// The backend's buffers are host memory too.
		need += Bytes(p, false) * int64(max(layers, 1))
		if staged {
			need += 4 * int64(p.ScoresLen())
		}
	}
	if err := fits(need); err != nil {
		pt.fail(err)
		return pt
	}

	// The reference rows first: with consume set, the host inputs they
	// are computed from go as they are uploaded.
	in.reference()
	peaks := startPeaks(be)
	op, out, release, err := prepare(be, p, staged, layers, in)
	if err != nil {
		pt.fail(err)
		return pt
	}
	defer release()
	dt := startDeviceTime(be)
	if dt != nil {
		defer dt.stop()
	}
	warmup, times, err := timeRuns(ctx, op, cfg.Budget, cfg.MinRuns, dt.read)
	if err != nil {
		pt.fail(err)
		return pt
	}
	pt.setTimes(warmup, times, p, in.dt, staged)
	if layers > 1 {
		pt.Bytes *= int64(layers)
		pt.GFLOPS *= float64(layers)
		pt.GBPS *= float64(layers)
	}
	dt.set(&pt)
	if err := in.check(&pt, func(off int, row []float32) error { return be.Read(row, out, off) }); err != nil {
		pt.fail(fmt.Errorf("reading the output back: %w", err))
		return pt
	}
	peaks(&pt)
	return pt
}

// prepare uploads the inputs and returns the op to time (the device work
// and Sync, not the transfers) and the output buffer it writes. With
// layers > 0 the op is a model's step: layers calls, each over copies of
// Q, K and V of its own into an O of its own, recorded and waited for
// once on a backend.Recorder; out is the last layer's O.
func prepare(be backend.Backend, p backend.Problem, staged bool, layers int, in *inputs) (op func(context.Context) error, out backend.Buffer, release func(), err error) {
	var bufs []backend.Buffer
	release = func() {
		for _, b := range bufs {
			b.Release()
		}
	}
	nl := max(layers, 1)
	// upload allocates nl buffers of n elements of dt, each holding
	// *data when data is not nil.
	upload := func(dt backend.DType, n int, data *[]float32) []backend.Buffer {
		out := make([]backend.Buffer, nl)
		for l := range out {
			if err != nil {
				return nil
			}
			if out[l], err = be.Alloc(dt, n); err != nil {
				return nil
			}
			bufs = append(bufs, out[l])
			if data != nil {
				// Write rounds to the buffer's dtype: the values are
				// already rounded (setDType), so this stores them exactly.
				err = be.Write(out[l], 0, *data)
			}
		}
		if data != nil && in.consume {
			*data = nil
			runtime.GC()
			debug.FreeOSMemory()
		}
		return out
	}
	q := upload(qoType(in.dt), p.QLen(), &in.q)
	kd, vd := &in.k, &in.v
	if rp := p.Resolved(); in.dt.Pitch(rp.D) != rp.D || in.dt.Pitch(rp.Dv) != rp.Dv {
		// q8 rows that are not whole blocks: each at its pitch (the
		// inputs kept as they are for the check).
		pk, pv := in.dt.PitchRows(in.k, rp.D), in.dt.PitchRows(in.v, rp.Dv)
		kd, vd = &pk, &pv
	}
	k := upload(in.dt, len(*kd), kd)
	v := k // V from K: K's buffers
	if !p.VFromK {
		v = upload(in.dt, len(*vd), vd)
	}
	o := upload(qoType(in.dt), p.OLen(), nil)
	var sc backend.Buffer
	if staged && err == nil {
		// One scores buffer serves every layer (their ops run in order),
		// float32 whatever Q's dtype.
		if sc, err = be.Alloc(backend.Float32, p.ScoresLen()); err == nil {
			bufs = append(bufs, sc)
		}
	}
	if err == nil {
		err = be.Sync()
	}
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	// call runs layer l's ops on ops: the backend itself, or a recording
	// of it.
	call := func(ctx context.Context, ops layerOps, l int) error {
		if !staged {
			return ops.Fused(ctx, backend.FusedParams{Problem: p}, q[l], k[l], v[l], o[l], nil)
		}
		if err := ops.Scores(ctx, backend.ScoresParams{Problem: p}, q[l], k[l], sc); err != nil {
			return err
		}
		if err := ops.Softmax(ctx, backend.SoftmaxParams{Problem: p}, sc); err != nil {
			return err
		}
		return ops.Context(ctx, backend.ContextParams{Problem: p}, sc, v[l], o[l])
	}
	rec, recording := be.(backend.Recorder)
	op = func(ctx context.Context) error {
		var ops layerOps = be
		wait := be.Sync
		if recording && layers > 0 {
			r := rec.Begin()
			ops, wait = r, r.Wait
		}
		for l := range nl {
			if err := call(ctx, ops, l); err != nil {
				_ = wait() // what was recorded still goes, and is waited for
				return err
			}
		}
		return wait()
	}
	return op, o[nl-1], release, nil
}

// layerOps are the ops a layer of prepare's step calls: a backend's own,
// which wait, or a backend.Recording's, which record.
type layerOps interface {
	Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error
	Scores(ctx context.Context, p backend.ScoresParams, q, k, s backend.Buffer) error
	Softmax(ctx context.Context, p backend.SoftmaxParams, s backend.Buffer) error
	Context(ctx context.Context, p backend.ContextParams, pm, v, o backend.Buffer) error
}

// backendVersion describes the device and libraries behind be.
func backendVersion(be backend.Backend) string {
	info := be.Info()
	if info.Kind == backend.KindGPU {
		s := info.Adapter.Name
		if info.Adapter.Driver != "" {
			s += ", " + info.Adapter.Driver
		}
		if info.Adapter.DriverInfo != "" {
			s += " " + info.Adapter.DriverInfo
		}
		return s
	}
	s := fmt.Sprintf("%d threads", info.Threads)
	if info.Detail != "" {
		s += ", " + info.Detail
	}
	return s
}

// inputs are one shape's random Q, K and V (in [−1, 1), BHND), shared by
// every backend and peer, with the float64 reference of a sample of rows.
type inputs struct {
	p       backend.Problem
	dt      backend.DType // how Q, K, V and O are stored (setDType)
	q, k, v []float32
	vmax    float64     // max|V|, for the slack of bfloat16 arithmetic (check)
	rows    []int       // flat query rows (b·H + h)·Nq + i to check
	ref     [][]float64 // their reference outputs, computed on first use
	// ref0 is the rows' reference on K and V before an 8-bit dt
	// rounded them (setDType), nil for the other dtypes.
	ref0    [][]float64
	dir     string // the .npy copies handed to peers, written on first use
	consume bool   // drop q, k and v as they are uploaded (one point only)
}

func newInputs(p backend.Problem, seed uint64, checkRows int) *inputs {
	rng := rand.New(rand.NewPCG(seed, uint64(p.B)<<48^uint64(p.H)<<40^uint64(p.KVHeads)<<32^uint64(p.Nq)<<8^uint64(p.D)))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.Float64()*2 - 1)
		}
		return x
	}
	in := &inputs{p: p, q: fill(p.QLen()), k: fill(p.KLen())}
	if in.v = in.k; !p.VFromK {
		in.v = fill(p.VLen())
	}
	for _, x := range in.v {
		in.vmax = max(in.vmax, math.Abs(float64(x)))
	}
	in.rows = sampleRows(p.B*p.H*p.Nq, checkRows)
	return in
}

// setDType stores the inputs as dt: Q, K and V are rounded to dt here, so
// that the reference is computed on the values the backend gets. An
// 8-bit dt stores K and V alone (Q and O stay float32: qoType), the
// reference of the sampled rows on the unrounded values kept first
// (ref0, the format's cost); a q8 row whose head dim is not whole
// blocks is rounded by the blocks of its pitch (DType.RoundRows), as a
// buffer stores it.
func (in *inputs) setDType(dt backend.DType) {
	if in == nil {
		return
	}
	in.dt = dt
	if dt.Quantized() {
		in.ref0 = in.reference()
		in.ref = nil
		for _, x := range []struct {
			v   []float32
			dim int
		}{{in.k, in.p.D}, {in.v, in.p.Resolved().Dv}}[:2-btoi(in.p.VFromK)] {
			dt.RoundRows(x.v, x.v, x.dim) // the inputs are in [−1, 1): no error
		}
		return
	}
	if !dt.Half() {
		return
	}
	for _, x := range [][]float32{in.q, in.k, in.v} {
		for i, v := range x {
			x[i] = dt.Round(v)
		}
	}
}

// qoType is the dtype Q and O are stored in when K and V are stored as
// dt: dt itself, or float32 for an 8-bit dt.
func qoType(dt backend.DType) backend.DType {
	if dt.Quantized() {
		return backend.Float32
	}
	return dt
}

// sampleRows picks n of total rows, evenly spread, the first and the last
// included: the last query of a causal problem sees every key.
func sampleRows(total, n int) []int {
	if n <= 0 || total == 0 {
		return nil
	}
	if n >= total {
		n = total
	}
	rows := make([]int, 0, n)
	for i := range n {
		r := 0
		if n > 1 {
			r = int(int64(i) * int64(total-1) / int64(n-1))
		}
		if len(rows) == 0 || rows[len(rows)-1] != r {
			rows = append(rows, r)
		}
	}
	return rows
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
