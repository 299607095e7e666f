package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// Config is a sweep: every combination of its lists is one shape, and
// every shape is measured on every backend and strategy, then on every
// peer, before the next shape starts.
type Config struct {
	Ns []int // sequence lengths: N keys, and N queries unless Nqs says
	// Nqs are the query rows Nq swept at each N, each at most N: the
	// queries are the last Nq positions of N (bottom-right alignment,
	// the backend's default), so Nq < N is decoding Nq new tokens over a
	// cache of N keys. 0 (and an empty list) means Nq = N.
	Nqs     []int
	Batches []int
	Heads   []int
	KVHeads []int // key/value heads; 0 means as many as the query heads
	Dims    []int // head dim D of Q and K
	// Dv is V's (and O's) head dim, 0 meaning D. VFromK, when > 0,
	// takes V as K's first VFromK columns (Dv = VFromK ≤ D, Dv then 0
	// or the same; backend.Problem.VFromK: MLA's latent cache), none
	// stored, as kernels.Options.VFromK does. Of the peers only those
	// with Peer.VFromK (ggml's) run it.
	Dv     int
	VFromK int
	// TopK, when not 0, makes every shape sparse attention over chosen
	// keys (backend.Indices): each query row attends TopK of the keys
	// it may see, drawn at random with a fixed seed and sorted, one list
	// a row shared by every head. Peers run none.
	TopK int
	// TopKs, when not empty, measures every shape at each of its top-k
	// values in turn (0 the dense problem), side by side; TopK is then
	// not read.
	TopKs []int
	// BlockDensity and BlockSize, when BlockSize is not 0, give every
	// shape a block mask (backend.BlockMask) of BlockSize × BlockSize
	// blocks, each on with probability BlockDensity (a fixed seed), every
	// query block keeping its diagonal block. Peers run none.
	BlockDensity float64
	BlockSize    int
	// Backward adds, on every backend, two points to each shape beside
	// the forward's: the backward pass alone (StrategyBackward) and the
	// fused forward with the backward (StrategyFwdBwd), their FLOPs
	// counted as 2.5 and 3.5 forwards (Work). A backend without a
	// backward pass reports them unavailable; peers run none.
	Backward bool
	Causal   []bool
	// Variant is applied to every shape: a sliding window, softcap,
	// ALiBi, sinks or none.
	Variant Variant
	// DTypes are the storage dtypes of Q, K, V and O swept, each a
	// curve of its own; empty means float32 only. A backend without
	// Caps.Half reports half points unavailable, and so do the peers.
	DTypes []backend.DType
	// Strategies are Staged and/or Fused, run on every backend.
	Strategies []kernels.Strategy
	// Prefix, when not 0, measures each attn shape (B sequences of N keys,
	// Nq queries each) as two decoding steps over a kernels.PagePool
	// whose sequences begin with one prompt of Prefix keys: shared by
	// forks, and held by each sequence alone (prefix.go). Strategies and
	// Layers do not apply to them.
	Prefix int
	// GroupPrefix and Groups, with Prefix, make the prefixes a tree: the
	// B sequences in Groups groups (B a multiple of it), each group's
	// sequences sharing GroupPrefix more keys after the prompt. Its
	// points: the tree shared (Shape.Levels 2), the prompt alone shared
	// and each group's keys held by each sequence (Levels 1: what a
	// one-level cascade reads), and nothing shared.
	GroupPrefix, Groups int
	// PrefixBHND makes a prefix point's page pool, its queries and
	// outputs BHND (each KV head's rows of a page together), where they
	// are BNHD (vLLM's and FlashAttention's pages, a key's KV heads side
	// by side).
	PrefixBHND bool
	// Tree, when not 0, measures each attn shape as speculative decoding:
	// B sequences of N keys in a kernels.KVCache, the last Tree of them a
	// draft tree (workload.RandomTree) verified in one Attend, beside the
	// same Tree rows as a causal chunk (tree.go); Nq is Tree, and the
	// points are causal. Strategies and Layers do not apply to them.
	Tree int
	// Buffers makes each prefix point's step PagePool.AttendBuffers, its
	// queries and outputs on the device and the cascade's merge there
	// too, where it is Attend (queries and outputs on the host).
	Buffers bool
	// Layers, when not empty, measures each attn point as a model's
	// step of L layers for each L listed (each its own point, carrying
	// Point.Layers): L calls over L separate copies of Q, K, V and O,
	// recorded as one step with one wait on a backend.Recorder (the
	// GPU), or run one after the other and synced once elsewhere. Peers
	// are measured once a shape, whatever Layers says.
	Layers []int
	// Budget is the time spent measuring one point after its warm-up run;
	// at least MinRuns runs are timed whatever the budget.
	Budget  time.Duration
	MinRuns int
	Seed    uint64
	// CheckRows is how many query rows of each point's output are
	// compared with the float64 reference (0: none).
	CheckRows int
	// Threads is the thread count handed to peers; 0 means GOMAXPROCS.
	Threads int
	// ReadGBPS is the machine's read bandwidth in GB/s measured for this
	// run (ReadBandwidth), 0 when not measured: Run records each point's
	// fraction of it (Point.ReadBWFrac) and NewReport the figure itself
	// (Machine.ReadGBPS).
	ReadGBPS float64
	// SgemmGFLOPS is the CPU backend's Sgemm rate on every thread in
	// GFLOP/s measured for this run (MeasureSgemm), 0 when not measured:
	// with ReadGBPS the roofline Run reads each point on the host's CPU
	// against (Point.RooflineFrac, Point.Bound), recorded by NewReport
	// (Machine.SgemmGFLOPS).
	SgemmGFLOPS float64
	// FMAGFLOPS is the host's FMA peak on every thread in GFLOP/s
	// measured for this run (MeasureFMA), 0 when not measured: Run
	// records the fraction of it of each point on the host's CPU
	// (Point.FMAFrac) and NewReport the figure itself, with FMAKernel
	// naming the loop that measured it (Machine.FMAGFLOPS,
	// Machine.FMAKernel).
	FMAGFLOPS float64
	FMAKernel string
	// AMXGFLOPS is the peak of AMX's tiles in bfloat16 on every thread
	// in GFLOP/s measured for this run (MeasureAMX), 0 when not measured
	// (no tiles): Run records the fraction of it of each bfloat16 point
	// of the CPU backend on the tiles (Point.AMXFrac), NewReport the
	// figure and AMXKernel (Machine.AMXGFLOPS, Machine.AMXKernel).
	AMXGFLOPS float64
	AMXKernel string
	// Roof, when not nil, probes the host's ceilings before and after
	// the sweep (Roof.Probe): Run and NewReport read each ceiling as the
	// best of the probes and of the figure above. A point above the
	// roofline, the FMA peak or the read bandwidth is measured again
	// after the sweep, and flagged (Point.Flag) if it stays there.
	Roof *Roof
	// Progress, when not nil, is called as each point starts and ends.
	Progress func(Progress)
	// Spawn, when not nil, measures each attn point instead of Run doing
	// it in this process: Subprocess runs each in a process of its own, so
	// that its peak RSS is its own (a GPU driver keeps freed memory
	// resident, and one point's garbage is the next one's baseline).
	Spawn func(context.Context, PointSpec) Point

	// gradBudget, when > 0, replaces gradCheckBudget (tests).
	gradBudget int
}

// dtypes is cfg.DTypes, float32 alone when empty.
func (cfg *Config) dtypes() []backend.DType {
	if len(cfg.DTypes) == 0 {
		return []backend.DType{backend.Float32}
	}
	return cfg.DTypes
}

// Progress is where a sweep stands. Work is counted in FLOPs (Flops of
// each point's problem, once per point), so a point at 2N weighs four
// times one at N, as its run time does.
type Progress struct {
	Done, Total float64
	// Point is the point that just finished; nil when Current starts.
	Point   *Point
	Current string
}

// DefaultConfig is the sweep `attn bench` runs without flags: N = 256 …
// 16384 at B = 1, H = 2, D = 64, fused and staged, sized to finish in
// about a minute on the CPU backend of a 2-core machine.
func DefaultConfig() Config {
	return Config{
		Ns: []int{256, 512, 1024, 2048, 4096, 8192, 16384}, Nqs: []int{0},
		Batches: []int{1}, Heads: []int{2}, KVHeads: []int{0}, Dims: []int{64},
		Causal:     []bool{false},
		Strategies: []kernels.Strategy{kernels.Fused, kernels.Staged},
		Budget:     500 * time.Millisecond, MinRuns: 2, Seed: 1, CheckRows: 8,
	}
}

// dv is the shapes' V head dim: VFromK's where set, else Dv (0: D).
func (cfg *Config) dv() int {
	if cfg.VFromK > 0 {
		return cfg.VFromK
	}
	return cfg.Dv
}

// topks is the top-k values of cfg's shapes: TopKs, else TopK alone.
func (cfg *Config) topks() []int {
	if len(cfg.TopKs) > 0 {
		return cfg.TopKs
	}
	return []int{cfg.TopK}
}

// shapes lists the problems of cfg in sweep order: N varies fastest, so
// each curve of a chart is measured in one stretch.
func (cfg *Config) shapes() ([]backend.Problem, error) {
	topks := cfg.topks()
	sparse := slices.ContainsFunc(topks, func(k int) bool { return k > 0 })
	switch {
	case slices.ContainsFunc(topks, func(k int) bool { return k < 0 }):
		return nil, fmt.Errorf("bench: top-k %v: want the keys a query row attends, ≥ 1 (0: all)", topks)
	case sparse && cfg.Prefix > 0:
		return nil, errors.New("bench: top-k with a shared prefix: the prefix points attend every key of their pool")
	case cfg.BlockSize < 0 || cfg.BlockSize > 0 && (cfg.BlockDensity < 0 || cfg.BlockDensity > 1):
		return nil, fmt.Errorf("bench: blocks of %d, %v of them on: want a size ≥ 1 and a density in [0, 1]", cfg.BlockSize, cfg.BlockDensity)
	case cfg.BlockSize > 0 && (sparse || cfg.Prefix > 0):
		return nil, errors.New("bench: a block mask with top-k or a shared prefix: give one")
	case cfg.Tree < 0 || cfg.Tree > 0 && (sparse || cfg.Prefix > 0 || cfg.BlockSize > 0):
		return nil, fmt.Errorf("bench: a tree of %d tokens: want ≥ 1, and no top-k, blocks or prefix beside it", cfg.Tree)
	case cfg.GroupPrefix < 0 || cfg.Groups < 0 || (cfg.GroupPrefix > 0) != (cfg.Groups > 0) || cfg.GroupPrefix > 0 && cfg.Prefix == 0:
		return nil, fmt.Errorf("bench: a group prefix of %d keys in %d groups (prompt %d): give the prompt, and both or neither", cfg.GroupPrefix, cfg.Groups, cfg.Prefix)
	}
	if cfg.Groups > 0 {
		for _, b := range cfg.Batches {
			if b%cfg.Groups != 0 {
				return nil, fmt.Errorf("bench: a batch of %d in %d groups: want a multiple", b, cfg.Groups)
			}
		}
	}
	var ps []backend.Problem
	causals := cfg.Causal
	if cfg.Tree > 0 {
		causals = []bool{true} // a draft's rows are causal
	}
	for _, causal := range causals {
		for _, d := range cfg.Dims {
			switch {
			case cfg.Dv < 0 || cfg.VFromK < 0:
				return nil, fmt.Errorf("bench: a V head dim of %d (V from K: %d) with D = %d: want 0 (D) or more", cfg.Dv, cfg.VFromK, d)
			case cfg.VFromK > 0 && cfg.Dv != 0 && cfg.Dv != cfg.VFromK:
				return nil, fmt.Errorf("bench: V from K's first %d columns and a V head dim of %d: want Dv 0 or the same", cfg.VFromK, cfg.Dv)
			case cfg.VFromK > d:
				return nil, fmt.Errorf("bench: V from K's first %d columns with D = %d: want at most D", cfg.VFromK, d)
			}
			for _, b := range cfg.Batches {
				for _, h := range cfg.Heads {
					for _, kvh := range cfg.KVHeads {
						if kvh == 0 {
							kvh = h
						}
						if kvh < 1 || h%kvh != 0 {
							return nil, fmt.Errorf("bench: %d key/value heads do not divide %d heads", kvh, h)
						}
						for _, nq := range cfg.nqs() {
							for _, n := range cfg.Ns {
								if nq < 0 {
									return nil, fmt.Errorf("bench: %d queries (Nq): want 1 or more, or 0 for N", nq)
								}
								if nq > n {
									return nil, fmt.Errorf("bench: %d queries (Nq) are more than the %d keys (N) they are the last of", nq, n)
								}
								for _, k := range topks {
									ps = append(ps, Shape{B: b, H: h, KVHeads: kvh, N: n, Nq: nq, D: d, Dv: cfg.dv(), VFromK: cfg.VFromK > 0, TopK: k, BlockSize: cfg.BlockSize, BlockDensity: cfg.BlockDensity, Causal: causal, Variant: cfg.Variant}.Problem())
								}
							}
						}
					}
				}
			}
		}
	}
	if len(ps) == 0 {
		return nil, errors.New("bench: empty sweep: every list of the configuration needs a value")
	}
	// Every size of a sweep is at least 1 and the heads divide, so a
	// shape error is the variant's: it is the configuration's, not a
	// point's. (A shape too large to count stays a point's too-large.)
	for _, p := range ps {
		if err := p.Validate(); errors.Is(err, backend.ErrShape) {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	return ps, nil
}

// nqs is cfg.Nqs, Nq = N alone (0) when empty.
func (cfg *Config) nqs() []int {
	if cfg.Tree > 0 {
		return []int{cfg.Tree} // a tree point's queries are its draft
	}
	if len(cfg.Nqs) == 0 {
		return []int{0}
	}
	return cfg.Nqs
}

// Check reports what Run would refuse in cfg before measuring anything:
// an empty list, key/value heads that do not divide the heads, more
// queries than keys (Nq > N), a negative Nq, an invalid
// variant (a window side below −1, a negative or non-finite softcap).
func (cfg *Config) Check() error {
	_, err := cfg.shapes()
	return err
}

// Run measures every point of cfg: for each shape, attn on each backend
// with each strategy, then each peer, on the same inputs. It returns every
// point, failed ones included, and stops early only when ctx is done.
func Run(ctx context.Context, cfg Config, backends []backend.Backend, peers []Peer) ([]Point, error) {
	shapes, err := cfg.shapes()
	if err != nil {
		return nil, err
	}
	if len(backends)*len(cfg.Strategies)+len(peers) == 0 && !(cfg.Backward && len(backends) > 0) {
		return nil, errors.New("bench: nothing to measure: no backend with a strategy, and no peer")
	}
	for _, s := range cfg.Strategies {
		if s != kernels.Staged && s != kernels.Fused {
			return nil, fmt.Errorf("bench: strategy %s: name staged or fused", s)
		}
	}
	for _, l := range cfg.Layers {
		if l < 1 {
			return nil, fmt.Errorf("bench: %d layers: want 1 or more", l)
		}
	}
	if cfg.MinRuns < 1 {
		cfg.MinRuns = 1
	}
	if cfg.Threads < 1 {
		cfg.Threads = runtime.GOMAXPROCS(0)
	}
	perShape := float64(len(backends)*len(cfg.Strategies)*max(len(cfg.Layers), 1) + len(peers))
	if cfg.Backward {
		perShape += float64(len(backends)) * (Work(StrategyBackward) + Work(StrategyFwdBwd))
	}
	total := 0.0
	for _, p := range shapes {
		total += Flops(p) * perShape * float64(len(cfg.dtypes()))
	}
	// The roof before the sweep: each point is read against the best
	// of the probes so far as it ends, and every point again after the
	// probes that follow the sweep.
	ceil := cfg.ceilings()
	if cfg.Roof != nil {
		cfg.Roof.measure(ctx, ProbesBefore)
		ceil = ceil.best(cfg.Roof.Best())
	}
	done := 0.0
	var points []Point
	var where []pointAt
	// finish completes a point measure returned: the density asked for,
	// and its fractions of the ceilings.
	finish := func(pt *Point, p backend.Problem, at placement) {
		if pt.BlockSize > 0 {
			// The density asked for (the mask's own fraction counts the
			// diagonal blocks it adds): a PointSpec of the point draws
			// the same mask again.
			pt.BlockDensity = cfg.BlockDensity
		}
		pt.readAgainst(ceil, pointWork(*pt, p), at)
	}
	var dt backend.DType
	step := func(label string, p backend.Problem, at placement, measure func() Point) {
		if cfg.Progress != nil {
			cfg.Progress(Progress{Done: done, Total: total, Current: label})
		}
		pt := measure()
		finish(&pt, p, at)
		done += Flops(p) * Work(pt.Strategy)
		points = append(points, pt)
		where = append(where, pointAt{label, p, dt, at})
		if cfg.Progress != nil {
			cfg.Progress(Progress{Done: done, Total: total, Point: &points[len(points)-1]})
		}
	}
	// Each dtype is a stretch of its own, shapes within it in sweep
	// order, so that each curve is measured in one stretch.
	for _, dt = range cfg.dtypes() {
		for _, p := range shapes {
			if err := runShape(ctx, &cfg, p, dt, backends, peers, step); err != nil {
				return points, err
			}
		}
	}
	if cfg.Roof != nil {
		cfg.Roof.measure(ctx, ProbesAfter)
		ceil = ceil.best(cfg.Roof.Best())
	}
	for i := range points {
		points[i].readAgainst(ceil, pointWork(points[i], where[i].p), where[i].at)
	}
	// A point above a ceiling is measured again, in the shape's own
	// inputs drawn anew, by runShape with a step that measures that
	// point alone: a slow probe is ruled out by the best of them, a
	// point timed too fast (a clock that jumped) by the second timing.
	// One that stays above is flagged.
	for i := range points {
		if !points[i].aboveRoof() || points[i].Status != StatusOK && points[i].Status != StatusWrong {
			continue
		}
		w := where[i]
		again := func(label string, p backend.Problem, at placement, measure func() Point) {
			if label != w.label {
				return
			}
			if cfg.Progress != nil {
				cfg.Progress(Progress{Done: total, Total: total, Current: label + " (again: above a ceiling)"})
			}
			pt := measure()
			if pt.Runs == 0 {
				return // it did not run again: the first timing stands
			}
			finish(&pt, p, at)
			points[i] = pt
			if cfg.Progress != nil {
				cfg.Progress(Progress{Done: total, Total: total, Point: &points[i]})
			}
		}
		if err := runShape(ctx, &cfg, w.p, w.dt, backends, peers, again); err != nil {
			return points, err
		}
		points[i].Flag = points[i].ceilingFlag()
	}
	return points, nil
}

// ceilings are the ceilings cfg gives, before any probe of its Roof.
func (cfg *Config) ceilings() Ceilings {
	return Ceilings{ReadGBPS: cfg.ReadGBPS, SgemmGFLOPS: cfg.SgemmGFLOPS, FMAGFLOPS: cfg.FMAGFLOPS, FMAKernel: cfg.FMAKernel, AMXGFLOPS: cfg.AMXGFLOPS, AMXKernel: cfg.AMXKernel}
}

// pointAt is where Run measured a point: its step's label, its problem
// and dtype, and its placement; enough to measure it again.
type pointAt struct {
	label string
	p     backend.Problem
	dt    backend.DType
	at    placement
}

// pointWork is the flops of pt on p: a step of L layers does L calls'
// flops over L calls' bytes; a backward point does Work forwards'.
func pointWork(pt Point, p backend.Problem) float64 {
	return Flops(p) * float64(max(pt.Layers, 1)) * Work(pt.Strategy)
}

// cacheKind is one kind of point over a kernels cache (a prefix's
// sharing, a draft tree or its causal chunk): its progress label's
// suffix, what it records in a Shape, and its measure in this process.
type cacheKind struct {
	label   string
	set     func(*Shape)
	measure func(backend.Backend) Point
}

// cacheKinds are a prefix sweep's or a tree sweep's kinds of point for p.
func cacheKinds(ctx context.Context, cfg *Config, p backend.Problem, dt backend.DType) []cacheKind {
	var kinds []cacheKind
	if cfg.Prefix > 0 {
		for _, ps := range cfg.prefixSpecs() {
			kinds = append(kinds, cacheKind{ps.label(), ps.set, func(be backend.Backend) Point {
				return measurePrefix(ctx, be, p, ps, dt, cfg.Seed, cfg)
			}})
		}
	}
	if cfg.Tree > 0 {
		for _, chunk := range []bool{true, false} {
			kinds = append(kinds, cacheKind{" " + treeLabel(p.Nq, chunk), func(s *Shape) { s.Tree, s.TreeChunk = p.Nq, chunk }, func(be backend.Backend) Point {
				return measureTree(ctx, be, p, chunk, dt, cfg.Seed, cfg)
			}})
		}
	}
	return kinds
}

// runCachePoints measures each kind of cache point of p on every
// backend: failed with shapeErr, spawned as a fused PointSpec with the
// kind set in its Shape, or measured in this process.
func runCachePoints(ctx context.Context, cfg *Config, p backend.Problem, dt backend.DType, backends []backend.Backend, shapeErr error, kinds []cacheKind,
	step func(label string, p backend.Problem, at placement, measure func() Point)) error {
	label := shapeLabel(p, dt)
	for _, be := range backends {
		for _, k := range kinds {
			step(fmt.Sprintf("attn-%s %s%s", be.Name(), label, k.label), p, placeOf(be.Info()), func() Point {
				var pt Point
				switch {
				case shapeErr != nil:
					pt = attnPoint(be, "fused", p)
					k.set(&pt.Shape)
					pt.fail(shapeErr)
				case cfg.Spawn != nil:
					spec := newSpec(be.Name(), kernels.Fused.String(), 0, p, dt, cfg)
					k.set(&spec.Shape)
					pt = cfg.Spawn(ctx, spec)
				default:
					pt = k.measure(be)
				}
				pt.DType = dtypeName(dt)
				return pt
			})
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	return nil
}

// runShape measures one shape in one dtype on every backend and peer
// (Run's inner loop); it returns ctx's error when ctx is done.
func runShape(ctx context.Context, cfg *Config, p backend.Problem, dt backend.DType, backends []backend.Backend, peers []Peer,
	step func(label string, p backend.Problem, at placement, measure func() Point)) error {
	// The host inputs come first: a shape whose Q, K and V alone do not
	// fit fails every point, before anything is allocated.
	var in *inputs
	shapeErr := p.Validate()
	if shapeErr == nil {
		shapeErr = fits(Bytes(p, false))
	}
	if shapeErr == nil && cfg.Prefix == 0 && cfg.Tree == 0 && (cfg.Spawn == nil || len(peers) > 0) {
		in = newInputs(p, cfg.Seed, cfg.CheckRows)
		in.setDType(dt)
	}
	defer in.removeFiles()
	label := shapeLabel(p, dt)
	layers := cfg.Layers
	if len(layers) == 0 {
		layers = []int{0} // single calls
	}
	if cfg.Prefix > 0 || cfg.Tree > 0 {
		// The cache points are the shape's only points.
		return runCachePoints(ctx, cfg, p, dt, backends, shapeErr, cacheKinds(ctx, cfg, p, dt), step)
	}
	for _, be := range backends {
		for _, s := range cfg.Strategies {
			for _, nl := range layers {
				what := label
				if nl > 0 {
					what += fmt.Sprintf(" L=%d", nl)
				}
				step(fmt.Sprintf("attn-%s %s %s", be.Name(), s, what), p, placeOf(be.Info()), func() Point {
					var pt Point
					switch {
					case shapeErr != nil:
						pt = attnPoint(be, s.String(), p)
						pt.fail(shapeErr)
					case cfg.Spawn != nil:
						pt = cfg.Spawn(ctx, newSpec(be.Name(), s.String(), nl, p, dt, cfg))
					default:
						pt = measureAttn(ctx, be, s, nl, in, cfg)
					}
					pt.DType = dtypeName(dt)
					pt.Layers = nl
					return pt
				})
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	for _, be := range backends {
		if !cfg.Backward {
			break
		}
		for _, s := range []string{StrategyBackward, StrategyFwdBwd} {
			step(fmt.Sprintf("attn-%s %s %s", be.Name(), s, label), p, placeOf(be.Info()), func() Point {
				var pt Point
				switch {
				case shapeErr != nil:
					pt = attnPoint(be, s, p)
					pt.fail(shapeErr)
				case cfg.Spawn != nil:
					pt = cfg.Spawn(ctx, newSpec(be.Name(), s, 0, p, dt, cfg))
				default:
					pt = measureBackward(ctx, be, s == StrategyFwdBwd, in, cfg)
				}
				pt.DType = dtypeName(dt)
				return pt
			})
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	for _, peer := range peers {
		step(fmt.Sprintf("%s %s", peer.Name, label), p, placeOfPeer(peer), func() Point {
			var pt Point
			if shapeErr != nil {
				pt = newPoint(peer.Name, peer.strategy(), peer.Version, p)
				pt.fail(shapeErr)
			} else {
				pt = peer.measure(ctx, in, cfg)
			}
			pt.DType = dtypeName(dt)
			return pt
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

func shapeLabel(p backend.Problem, dt backend.DType) string {
	s := fmt.Sprintf("N=%d", p.Nk)
	if p.Nq != p.Nk {
		s += fmt.Sprintf(" Nq=%d", p.Nq)
	}
	if p.Causal {
		s += " causal"
	}
	if v := variantOf(p).String(); v != "" {
		s += " " + v
	}
	if dt != backend.Float32 {
		s += " " + dt.String()
	}
	return s
}
