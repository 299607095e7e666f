package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
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
	// Dv is V's (and O's) head dim, 0 meaning D; VFromK takes V as K's
	// first Dv columns (backend.Problem.VFromK: MLA's latent cache),
	// none stored. Peers run neither.
	Dv     int
	VFromK bool
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

// Shape is the attention problem of a point of the sweep or of a Go
// benchmark: N keys and Nq queries (N when Nq is 0), the queries the
// last Nq positions (bottom-right causal alignment), Dv = D unless Dv
// says, V K's first Dv columns under VFromK, the layout BHND, the scale
// 1/√D, and the score variants of Variant. KVHeads < H is GQA.
type Shape struct {
	B       int `json:"b"`
	H       int `json:"h"`
	KVHeads int `json:"kv_heads"`
	N       int `json:"n"`
	// Nq is the number of query rows, 0 meaning N. Every point of a
	// sweep records it (a report written before it was recorded reads
	// as Nq = N).
	Nq     int  `json:"nq,omitempty"`
	D      int  `json:"d"`
	Causal bool `json:"causal"`
	// Dv is V's head dim, 0 meaning D (every report written before it);
	// VFromK says V is K's first Dv columns (MLA), none stored.
	Dv     int  `json:"dv,omitempty"`
	VFromK bool `json:"v_from_k,omitempty"`
	// TopK, when not 0, is the keys each query row attends, chosen at
	// random among those it may see (Config.TopK).
	TopK int `json:"topk,omitempty"`
	// BlockSize, when not 0, gives the point a random block mask of
	// blocks of BlockSize, BlockDensity of them on (Config.BlockSize).
	BlockSize    int     `json:"block_size,omitempty"`
	BlockDensity float64 `json:"block_density,omitempty"`
	Variant
	// DType is the storage dtype of Q, K, V and O: "" for float32 (as in
	// every report written before dtypes), "f16" or "bf16"; for a prefix
	// point, of K and V alone (Q and O are float32).
	DType string `json:"dtype,omitempty"`
	// Prefix, when not 0, makes the point a decoding step over a
	// kernels.PagePool whose sequences' first Prefix keys are one prompt
	// (prefix.go), Shared saying whether the pool holds it once, forked
	// into every sequence, or once a sequence.
	Prefix int  `json:"prefix,omitempty"`
	Shared bool `json:"shared,omitempty"`
	// GroupPrefix, Groups and Levels describe a tree of prefixes
	// (Config.GroupPrefix): Groups groups of sequences each sharing
	// GroupPrefix keys after the prompt, held shared by the pool down to
	// Levels levels (2: the tree; 1: the prompt alone, each sequence
	// holding its group's keys; 0 with Shared false: nothing shared).
	GroupPrefix int `json:"group_prefix,omitempty"`
	Groups      int `json:"groups,omitempty"`
	Levels      int `json:"levels,omitempty"`
	// Buffers says the step was AttendBuffers (Config.Buffers), and
	// PoolLayout is "bhnd" for a pool of BHND pages (Config.PrefixBHND;
	// "" for BNHD).
	Buffers    bool   `json:"buffers,omitempty"`
	PoolLayout string `json:"pool_layout,omitempty"`
}

// Queries is the number of query rows of s: Nq, or N when Nq is 0.
func (s Shape) Queries() int {
	if s.Nq == 0 {
		return s.N
	}
	return s.Nq
}

// Decode reports whether s has fewer queries than keys: Nq new tokens
// attending over a cache of N keys.
func (s Shape) Decode() bool { return s.Queries() < s.N }

// dtype is s's storage dtype; an unknown name is float32's error.
func (s Shape) dtype() (backend.DType, error) {
	if s.DType == "" {
		return backend.Float32, nil
	}
	return backend.ParseDType(s.DType)
}

// dtypeName is what Shape.DType records for dt: "" for float32.
func dtypeName(dt backend.DType) string {
	if dt == backend.Float32 {
		return ""
	}
	return dt.String()
}

// dtypes is cfg.DTypes, float32 alone when empty.
func (cfg *Config) dtypes() []backend.DType {
	if len(cfg.DTypes) == 0 {
		return []backend.DType{backend.Float32}
	}
	return cfg.DTypes
}

// Variant is the score variants a point ran with (backend.Variants), as a
// report records them: each is absent from the JSON when not used, so a
// report of plain attention reads as one written before variants existed.
type Variant struct {
	// Window is the sliding window [left, right] around each query's
	// position, −1 for an unbounded side (backend.Window); nil for none.
	Window *[2]int `json:"window,omitempty"`
	// Softcap caps the scaled scores at ±Softcap with tanh; 0 for none.
	Softcap float64 `json:"softcap,omitempty"`
	// ALiBi adds −m_h·|t − j| with the standard slopes m_h of
	// ALiBiSlopes(H).
	ALiBi bool `json:"alibi,omitempty"`
	// Sinks adds one sink logit per head, 0 for every head (Sinks):
	// exp(0) = 1 joins each row's softmax denominator.
	Sinks bool `json:"sinks,omitempty"`
}

// Any reports whether v sets any variant.
func (v Variant) Any() bool { return v.Window != nil || v.Softcap != 0 || v.ALiBi || v.Sinks }

// String names the variants v sets, "" for none: "window 127,0 softcap 30
// alibi sinks".
func (v Variant) String() string {
	var parts []string
	if w := v.Window; w != nil {
		parts = append(parts, fmt.Sprintf("window %d,%d", w[0], w[1]))
	}
	if v.Softcap != 0 {
		parts = append(parts, fmt.Sprintf("softcap %g", v.Softcap))
	}
	if v.ALiBi {
		parts = append(parts, "alibi")
	}
	if v.Sinks {
		parts = append(parts, "sinks")
	}
	return strings.Join(parts, " ")
}

// variants is v for a problem of h query heads.
func (v Variant) variants(h int) backend.Variants {
	var bv backend.Variants
	if w := v.Window; w != nil {
		bv.Window = &backend.Window{Left: w[0], Right: w[1]}
	}
	bv.Softcap = float32(v.Softcap)
	if v.ALiBi {
		bv.ALiBi = ALiBiSlopes(h)
	}
	if v.Sinks {
		bv.Sinks = Sinks(h)
	}
	return bv
}

// variantOf is the Variant of p's variants.
func variantOf(p backend.Problem) Variant {
	var v Variant
	if w := p.Window; w != nil {
		v.Window = &[2]int{w.Left, w.Right}
	}
	v.Softcap = float64(p.Softcap)
	v.ALiBi, v.Sinks = p.ALiBi != nil, p.Sinks != nil
	return v
}

// ALiBiSlopes are the standard ALiBi slopes of h heads (Press et al.,
// as BLOOM's build_alibi_tensor and FlashAttention's tests compute
// them): for h a power of two,
//
//	m_k = 2^(−8(k+1)/h),  k = 0 … h−1
//
// and otherwise, with p the largest power of two below h, the p slopes of
// p heads followed by the first h − p slopes of 2p heads at odd
// positions: 2^(−4(2k+1)/p), k = 0 … h−p−1.
func ALiBiSlopes(h int) []float32 {
	if h < 1 {
		return nil
	}
	p := 1
	for 2*p <= h {
		p *= 2
	}
	m := make([]float32, 0, h)
	for k := range p {
		m = append(m, float32(math.Exp2(-8*float64(k+1)/float64(p))))
	}
	for k := range h - p {
		m = append(m, float32(math.Exp2(-4*float64(2*k+1)/float64(p))))
	}
	return m
}

// Sinks are the sink logits a sweep with sinks uses: 0 for each of h
// heads, a sink worth one key of score 0 in each row's denominator. Only
// whether the sinks exist changes the work; their values do not.
func Sinks(h int) []float32 { return make([]float32, h) }

// Problem is the attention problem s describes.
func (s Shape) Problem() backend.Problem {
	dv := s.Dv
	if dv == 0 {
		dv = s.D
	}
	p := backend.Problem{B: s.B, H: s.H, KVHeads: s.KVHeads, Nq: s.Queries(), Nk: s.N, D: s.D, Dv: dv,
		Scale: float32(1 / math.Sqrt(float64(s.D))), Causal: s.Causal, Variants: s.variants(s.H), VFromK: s.VFromK}
	if s.TopK > 0 {
		p.Indices = TopK(p, s.TopK)
	}
	if s.BlockSize > 0 {
		p.Blocks = RandomBlocks(p, s.BlockSize, s.BlockDensity)
	}
	return p
}

// RandomBlocks is the block mask of a block-sparse point (Config.
// BlockSize): blocks of size over p's rows and keys, shared by every
// batch and head, each on with probability density from a generator
// seeded by the sizes, and every query block's diagonal block on (the
// block of its last row's key position, bottom-right as causal masking
// aligns), so that no row is left without keys.
func RandomBlocks(p backend.Problem, size int, density float64) *backend.BlockMask {
	p = p.Resolved()
	qb, kb := (p.Nq+size-1)/size, (p.Nk+size-1)/size
	m := &backend.BlockMask{Size: size, Shape: [4]int{1, 1, qb, kb}, Keep: make([]bool, qb*kb)}
	rng := rand.New(rand.NewPCG(uint64(p.Nk)<<20|uint64(p.Nq), uint64(size)))
	for i := range m.Keep {
		m.Keep[i] = rng.Float64() < density
	}
	for bi := range qb {
		last := min((bi+1)*size, p.Nq) - 1
		if j := p.Nk - p.Nq + last; j >= 0 && j < p.Nk {
			m.Keep[bi*kb+j/size] = true
		}
	}
	return m
}

// TopK is the index list of a sparse point (Config.TopK): for each query
// row of p, k of the keys it may see by position (Problem.KeyRange;
// all of them when fewer), drawn at random from a generator seeded by
// the sizes and sorted, −1 after them; one list a row (Heads 1).
func TopK(p backend.Problem, k int) *backend.Indices {
	p = p.Resolved()
	ix := &backend.Indices{Heads: 1, K: k, Idx: make([]int32, p.TotalQ()*k)}
	p.Indices = ix
	rng := rand.New(rand.NewPCG(uint64(p.Nk), uint64(k)))
	var seen []bool
	for b := range p.B {
		for i := range p.QRows(b) {
			lo, hi := p.KeyRange(b, i)
			row := ix.Idx[p.IndexOffset(b, 0, i):][:k]
			n := hi - lo
			if n <= k {
				for t := range row {
					row[t] = -1
					if t < n {
						row[t] = int32(lo + t)
					}
				}
				continue
			}
			// k distinct keys of n: draw until k are new (k < n, and
			// fewer than half are drawn twice while k ≤ n/2), or take
			// the keys not drawn among n − k.
			seen = slices.Grow(seen[:0], n)[:n]
			clear(seen)
			pick, want := true, k
			if k > n/2 {
				pick, want = false, n-k
			}
			for got := 0; got < want; {
				if j := rng.IntN(n); !seen[j] {
					seen[j] = true
					got++
				}
			}
			t := 0
			for j := range n {
				if seen[j] == pick {
					row[t] = int32(lo + j)
					t++
				}
			}
		}
	}
	return ix
}

// shapeOf is the Shape of a problem of the sweep (Nq ≤ Nk), with Nq
// recorded whatever it is, and Dv where it is not D.
func shapeOf(p backend.Problem) Shape {
	s := Shape{B: p.B, H: p.H, KVHeads: p.KVHeads, N: p.Nk, Nq: p.Nq, D: p.D, Causal: p.Causal, Variant: variantOf(p), VFromK: p.VFromK}
	if p.Indices != nil {
		s.TopK = p.Indices.K
	}
	if bm := p.Blocks; bm != nil {
		s.BlockSize = bm.Size
		on := 0
		for _, k := range bm.Keep {
			if k {
				on++
			}
		}
		s.BlockDensity = float64(on) / float64(max(len(bm.Keep), 1))
	}
	if p.Dv != p.D {
		s.Dv = p.Dv
	}
	return s
}

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

// Point is one measured configuration: an implementation (attn on a
// backend with a strategy, or a peer) on one problem. A point that could
// not run carries a Status other than StatusOK and an Error; such points
// are reported, not dropped.
type Point struct {
	Impl     string `json:"impl"`     // "attn-cpu", "attn-gpu", or a peer such as "ort-cpu-mha"
	Strategy string `json:"strategy"` // attn's "fused" or "staged"; a peer's "flash" or "unfused"
	Version  string `json:"version"`  // the backend's device and libraries, or the peer's
	// CPUKernel is the matrix-multiply kernel attn's CPU backend ran the
	// point on (CPUKernel of the backend that measured it); "" for other
	// implementations and in reports written before it was recorded, for
	// which KernelName reads it from Version.
	CPUKernel string `json:"cpu_kernel,omitempty"`
	Shape
	// Layers is L for a point measured as a step of L layers
	// (Config.Layers); 0 for a single call. Its times are the step's,
	// and its Bytes, GFLOPS and GBPS count all L calls.
	Layers int `json:"layers,omitempty"`
	// PoolPages is the pages a prefix point's pool holds (Shape.Prefix):
	// the prompt's once and each sequence's own when shared, every
	// sequence's all when not.
	PoolPages int `json:"pool_pages,omitempty"`

	Runs    int     `json:"runs"`
	WarmupS float64 `json:"warmup_s"`
	MedianS float64 `json:"median_s"`
	MinS    float64 `json:"min_s"`
	MaxS    float64 `json:"max_s"`
	// Q1S and Q3S are the first and third quartiles of the run times
	// (quantile), between which half the runs fall: the spread the charts
	// draw, which one slow run among many (a GC, a preemption) cannot
	// stretch as it does MaxS. Both are 0 in reports written before they
	// were recorded.
	Q1S float64 `json:"q1_s,omitempty"`
	Q3S float64 `json:"q3_s,omitempty"`
	// GPUS is the median over the timed runs of the device's own time
	// for the run's ops (backend.DeviceTimer: from a timestamp before each
	// submission's passes to one after them, summed over the op's
	// submissions), beside MedianS, the wall time. 0, and absent from the
	// JSON, where it was not measured: on the CPU, for peers, and on an
	// adapter without timestamps (BackendInfo.DeviceTime says why), or
	// when a run's timestamps gave no number (Notes says why).
	GPUS float64 `json:"gpu_s,omitempty"`
	// GPUKernels is, where the device times an op's kernels apart
	// (backend.KernelTimer: timestamps inside the compute pass around
	// each kernel), each kernel's median time in seconds over the timed
	// runs, by the kernel's name ("fuseddecode", "merge", "scores" …);
	// their sum is at most GPUS. Absent where not measured: wherever
	// GPUS is, and on a device without timestamps inside passes.
	GPUKernels map[string]float64 `json:"gpu_kernels,omitempty"`
	// GFLOPS is Flops/MedianS/1e9; Bytes is the compulsory traffic
	// (BytesOf, in the point's storage dtype) and GBPS Bytes/MedianS/1e9.
	GFLOPS float64 `json:"gflops"`
	Bytes  int64   `json:"bytes"`
	GBPS   float64 `json:"gbps"`
	// TokensPerS is B·Nq/MedianS: the query rows (tokens) of every batch
	// computed per second. 0 in reports written before it was recorded.
	TokensPerS float64 `json:"tokens_per_s,omitempty"`
	// ReadBWFrac is GBPS over the read bandwidth measured in the same
	// run (Machine.ReadGBPS): how close the point comes to streaming its
	// bytes at the machine's rate. 0 when not measured, and on a
	// discrete GPU, whose memory is not the host's (inHostMemory).
	ReadBWFrac float64 `json:"read_bw_frac,omitempty"`
	// Intensity is the point's arithmetic intensity, Flops over Bytes
	// (flop per compulsory byte), for every point that ran; 0 in
	// reports written before it was recorded.
	Intensity float64 `json:"intensity,omitempty"`
	// RooflineFrac is GFLOPS over the roofline at Intensity,
	// min(Machine.SgemmGFLOPS, Intensity × Machine.ReadGBPS), and Bound
	// the ceiling that sets it there (BoundCompute, BoundMemory). Only
	// for points on the host's CPU (the CPU backend, a CPU-type adapter,
	// a CPU peer) when both ceilings were measured; 0 and "" otherwise.
	// The ceiling is float32 Sgemm's whatever the dtype, so a half point
	// may pass 1.
	RooflineFrac float64 `json:"roofline_frac,omitempty"`
	Bound        string  `json:"bound,omitempty"`
	// FMAFrac is GFLOPS over the host's FMA peak (Machine.FMAGFLOPS):
	// the share of the cores' float32 arithmetic the point uses, the
	// ceiling no float32 kernel passes, for points on the host's CPU when
	// it was measured; 0 otherwise. Like RooflineFrac it is float32's
	// for every dtype.
	FMAFrac float64 `json:"fma_frac,omitempty"`
	// Flag, when not "", says the point stood above the roofline, the FMA
	// peak or the read bandwidth (RooflineFrac, FMAFrac or ReadBWFrac
	// past 1) even once measured again
	// after the sweep, by how much, and what may explain it, probe noise
	// last: "above roof 1.03× C, FMA 1.10×: probe noise?".
	Flag string `json:"flag,omitempty"`
	// PeakRSS is the peak resident memory of the process that ran the
	// point, in bytes, inputs included: the peer's own process, attn's own
	// process for a point measured in one of its own (Config.Spawn), or
	// else this process, its peak reset before the point. 0 means unknown:
	// a process that ended within about 10 ms, before it was read.
	PeakRSS int64 `json:"peak_rss_bytes"`
	// DeviceBytes is the peak of the device memory attn allocated during
	// the point, on backends that count it (the GPU); 0 elsewhere.
	DeviceBytes int64 `json:"device_peak_bytes,omitempty"`
	// MaxErr is the largest max-norm relative error of a checked row of
	// the output against the float64 reference: max|o − ref| / max|ref|.
	// Nil when no row was checked.
	MaxErr *float64 `json:"max_rel_err,omitempty"`
	// QuantErr, for K and V stored in 8 bits (q8, fp8), is MaxErr
	// against the reference on the inputs before they were quantized:
	// what the format costs (MaxErr's reference reads the stored
	// values). Nil for the other dtypes.
	QuantErr    *float64 `json:"quant_rel_err,omitempty"`
	CheckedRows int      `json:"checked_rows"`

	Status Status `json:"status"`
	Error  string `json:"error,omitempty"`
	Notes  string `json:"notes,omitempty"`
}

// Status says whether a point ran and whether its answers were right.
type Status string

const (
	StatusOK          Status = "ok"
	StatusWrong       Status = "wrong"         // ran, but a checked row is off by more than WrongErr
	StatusTooLarge    Status = "too-large"     // ErrTooLarge, or more memory than the machine has
	StatusOutOfMemory Status = "out-of-memory" // killed or refused while allocating
	StatusUnavailable Status = "unavailable"   // the backend or peer cannot run this point here
	StatusFailed      Status = "failed"        // any other error
	StatusCancelled   Status = "cancelled"
)

// WrongErr is the relative error past which a point's answers are marked
// wrong. Float32 attention, however long the rows, stays orders of
// magnitude below it (attn measures about 1e-6 at N = 16384).
const WrongErr = 1e-3

// Flops counts the multiply-adds of attention as 2 flops each:
// 2·D per attended (query, key) pair for Q·Kᵀ and 2·Dv for P·V. Only
// pairs a query may see by position are counted (Problem.KeyRange:
// causal, sliding window, key lengths), so a causal problem with Nq = Nk
// counts about half of 4·B·H·N²·D — the convention FlashAttention uses —
// and a window of W keys about 4·B·H·N·W·D. Softcap, ALiBi and sinks
// add no pairs and are not counted.
func Flops(p backend.Problem) float64 {
	return pairs(p) * float64(p.H) * 2 * float64(p.D+p.Dv)
}

// pairs is Σ_b Σ_i (hi − lo) of Problem.KeyRange(b, i): the (query, key)
// pairs one head of every batch may see. Without causal masking, a window
// or key lengths it is B·Nq·Nk; otherwise a loop over the rows of each
// batch (of one batch when every batch has the same keys).
func pairs(p backend.Problem) float64 {
	if ix := p.Indices; ix != nil {
		// The named keys each row may see by position, averaged over
		// the lists of a row's KV heads.
		n := 0.0
		for b := range p.B {
			for i := range p.QRows(b) {
				lo, hi := p.KeyRange(b, i)
				for g := range ix.Heads {
					for _, j := range ix.Idx[p.IndexOffset(b, g, i):][:ix.K] {
						if int(j) >= lo && int(j) < hi {
							n++
						}
					}
				}
			}
		}
		return n / float64(ix.Heads)
	}
	if bm := p.Blocks; bm != nil {
		// The keys each row may see by position in the blocks that are
		// on, averaged over the heads' masks.
		n := 0.0
		heads := bm.Shape[1]
		for b := range p.B {
			for h := range heads {
				for i := range p.QRows(b) {
					lo, hi := p.KeyRange(b, i)
					for bj, on := range bm.Row(min(b, bm.Shape[0]-1), h, i) {
						if on {
							n += float64(max(0, min(hi, (bj+1)*bm.Size)-max(lo, bj*bm.Size)))
						}
					}
				}
			}
		}
		return n / float64(heads)
	}
	if !p.Causal && p.Window == nil && p.KVLens == nil {
		return float64(p.B) * float64(p.Nq) * float64(p.Nk)
	}
	batches, times := p.B, 1.0
	if p.KVLens == nil {
		batches, times = min(p.B, 1), float64(p.B)
	}
	n := 0.0
	for b := range batches {
		for i := range p.Nq {
			lo, hi := p.KeyRange(b, i)
			n += float64(hi - lo)
		}
	}
	return n * times
}

// Bytes is the compulsory memory traffic of computing p: Q, K and V read
// once and O written once, in float32 (K and V of Nk keys and KVHeads
// heads, Q and O of Nq rows and H heads: a decoding step's traffic is
// mostly its K and V); when the scores are materialised
// (attn's staged strategy, a peer's unfused graph) the B·H·Nq·Nk score
// matrix adds four passes: written by Q·Kᵀ, read and written by the
// softmax, read by P·V.
func Bytes(p backend.Problem, materialised bool) int64 {
	return BytesOf(p, backend.Float32, materialised)
}

// BytesOf is Bytes with Q, K, V and O stored as dt (K and V alone for an
// 8-bit dt, Q and O then float32: qoType); the scores are float32
// whatever dt is.
func BytesOf(p backend.Problem, dt backend.DType, materialised bool) int64 {
	qo := qoType(dt)
	pp := p.Resolved().Pitched(dt, dt) // q8 rows are whole blocks
	kv := dt.Bytes(pp.KLen())
	if !p.VFromK { // V from K is read in K's rows
		kv += dt.Bytes(pp.VLen())
	}
	if p.Indices != nil {
		// Only the keys some row names are read: K and V in proportion.
		kv = int64(float64(kv) * namedFraction(p))
	}
	n := qo.Bytes(p.QLen()) + kv + qo.Bytes(p.OLen())
	if materialised {
		n += 4 * 4 * int64(p.B) * int64(p.H) * int64(p.Nq) * int64(p.Nk)
	}
	return n
}

// namedFraction is the fraction of p's key rows (over every batch and
// KV head) that some row's index list names.
func namedFraction(p backend.Problem) float64 {
	ix := p.Indices
	if p.B == 0 || p.Nk == 0 {
		return 0
	}
	named := make([]bool, p.Nk)
	total := 0
	for b := range p.B {
		for g := range ix.Heads {
			clear(named)
			for i := range p.QRows(b) {
				for _, j := range ix.Idx[p.IndexOffset(b, g, i):][:ix.K] {
					if j >= 0 && !named[j] {
						named[j] = true
						total++
					}
				}
			}
		}
	}
	return float64(total) / float64(p.B*ix.Heads*p.Nk)
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
	for _, causal := range cfg.Causal {
		for _, d := range cfg.Dims {
			if cfg.Dv < 0 || cfg.VFromK && cfg.Dv > d {
				return nil, fmt.Errorf("bench: a V head dim of %d with D = %d: want 0 (D) or more%s", cfg.Dv, d, map[bool]string{true: ", and with V from K at most D"}[cfg.VFromK])
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
									ps = append(ps, Shape{B: b, H: h, KVHeads: kvh, N: n, Nq: nq, D: d, Dv: cfg.Dv, VFromK: cfg.VFromK, TopK: k, BlockSize: cfg.BlockSize, BlockDensity: cfg.BlockDensity, Causal: causal, Variant: cfg.Variant}.Problem())
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
	return Ceilings{ReadGBPS: cfg.ReadGBPS, SgemmGFLOPS: cfg.SgemmGFLOPS, FMAGFLOPS: cfg.FMAGFLOPS, FMAKernel: cfg.FMAKernel}
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
	if shapeErr == nil && cfg.Prefix == 0 && (cfg.Spawn == nil || len(peers) > 0) {
		in = newInputs(p, cfg.Seed, cfg.CheckRows)
		in.setDType(dt)
	}
	defer in.removeFiles()
	label := shapeLabel(p, dt)
	layers := cfg.Layers
	if len(layers) == 0 {
		layers = []int{0} // single calls
	}
	for _, be := range backends {
		if cfg.Prefix == 0 {
			continue
		}
		for _, ps := range cfg.prefixSpecs() {
			step(fmt.Sprintf("attn-%s %s%s", be.Name(), label, ps.label()), p, placeOf(be.Info()), func() Point {
				var pt Point
				switch {
				case shapeErr != nil:
					pt = attnPoint(be, "fused", p)
					ps.set(&pt.Shape)
					pt.fail(shapeErr)
				case cfg.Spawn != nil:
					spec := newSpec(be.Name(), kernels.Fused.String(), 0, p, dt, cfg)
					ps.set(&spec.Shape)
					pt = cfg.Spawn(ctx, spec)
				default:
					pt = measurePrefix(ctx, be, p, ps, dt, cfg.Seed, cfg)
				}
				pt.DType = dtypeName(dt)
				return pt
			})
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	if cfg.Prefix > 0 {
		return nil // the prefix points are the shape's only points
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

// newPoint is a point of impl on p with nothing measured yet.
func newPoint(impl, strategy, version string, p backend.Problem) Point {
	return Point{Impl: impl, Strategy: strategy, Version: version, Shape: shapeOf(p), Status: StatusOK}
}

// attnPoint is a point of attn on be with nothing measured yet.
func attnPoint(be backend.Backend, strategy string, p backend.Problem) Point {
	pt := newPoint("attn-"+be.Name(), strategy, backendVersion(be), p)
	pt.CPUKernel = backendKernel(be)
	return pt
}

// fail marks pt as not run, with the status err calls for.
func (pt *Point) fail(err error) {
	pt.Error = oneLine(err.Error())
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		pt.Status = StatusCancelled
	case errors.Is(err, backend.ErrTooLarge), errors.As(err, new(*errNoMemory)):
		pt.Status = StatusTooLarge
	case errors.Is(err, backend.ErrUnsupported), errors.Is(err, backend.ErrUnavailable):
		pt.Status = StatusUnavailable
	default:
		pt.Status = StatusFailed
	}
}

// setTimes fills the timing fields of pt from the timed runs.
func (pt *Point) setTimes(warmup time.Duration, times []time.Duration, p backend.Problem, dt backend.DType, materialised bool) {
	slices.Sort(times)
	n := len(times)
	med := times[n/2]
	if n%2 == 0 {
		med = (times[n/2-1] + times[n/2]) / 2
	}
	pt.Runs = n
	pt.WarmupS = warmup.Seconds()
	pt.MedianS, pt.MinS, pt.MaxS = med.Seconds(), times[0].Seconds(), times[n-1].Seconds()
	pt.Q1S, pt.Q3S = quantile(times, 0.25), quantile(times, 0.75)
	pt.Bytes = BytesOf(p, dt, materialised)
	if pt.MedianS > 0 {
		pt.GFLOPS = Flops(p) / pt.MedianS / 1e9
		pt.GBPS = float64(pt.Bytes) / pt.MedianS / 1e9
		pt.TokensPerS = float64(p.B) * float64(p.Nq) / pt.MedianS
	}
}

// hasQuartiles reports whether pt recorded the quartiles of its runs.
func (pt *Point) hasQuartiles() bool { return pt.Runs > 0 && pt.Q1S > 0 }

// quantile is the q-quantile of sorted in seconds, interpolated linearly
// between the two nearest runs (Hyndman and Fan's type 7, NumPy's and R's
// default): with n runs the quartiles ignore the slowest and fastest
// ⌈n/4⌉ − 1 entirely, so from n = 5 one outlier cannot move them.
func quantile(sorted []time.Duration, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1].Seconds()
	}
	lo, hi := sorted[i].Seconds(), sorted[i+1].Seconds()
	return lo + (pos-float64(i))*(hi-lo)
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
