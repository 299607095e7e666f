package cpu

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gogpu/gputypes"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu/internal/sgemm"
)

// DefaultTiles are the fused loop's tile sizes (query rows Tq, key rows
// Tk) when WithTile does not set them, and DefaultSubTile the rows of its
// score tile, chosen for the BLAS the build multiplies with as the
// fastest for Fused at N = 4096, H = 8, D = 64 and 128
// (cmd/attn/internal/bench's BenchmarkCPUTiles): on a Zen 5 for each of
// attn's kernels, on a Zen 4 for the others (the commits that set them
// have the measurements):
//
//	kernel                Tq×Tk     sub
//	attn's AVX-512 8×32   1024×512  256
//	attn's AVX2 6×16       960×512  120  (under GODEBUG=cpu.avx512f=off)
//	OpenBLAS               128×256  128
//	gonum's pure Go         64×128   64
//
// Attn's kernels ran slower on 256×256 tiles, and OpenBLAS on smaller and
// larger tiles than its own; gonum's rate hardly moves with the tile.
//
// A work item holds Tq rows of Q, streams Tk×D blocks of K and Tk×Dv
// blocks of V, and keeps a Tq×Dv accumulator; it runs as sub-tiles of
// DefaultSubTile rows, each with a sub×Tk score tile, which share each
// key tile: the K tile is packed for the micro-kernel (transposed) once
// for all of them, and a half K or V tile is widened once. Tall items
// pack and widen less per FLOP, and rescale the accumulator less often,
// while the score tile stays in a core's L2 (256 rows × 512 keys is
// 512 KiB); sub-tiles a multiple of the kernel's rows leave no edge
// blocks. Fused shrinks Tq by itself when a problem has too few query
// tiles to keep every thread busy, and skips the sub-tiles of a causal
// problem's diagonal that see none of a key tile. 64×128 is two of
// gonum's 64×64 Gemm blocks, below the size at which gonum would start
// goroutines of its own.
func DefaultTiles() (q, k int) { return defaultTiles[0], defaultTiles[2] }

// DefaultSubTile is the rows of the fused loop's score tile when
// WithSubTile does not set it: see DefaultTiles.
func DefaultSubTile() int { return defaultTiles[1] }

// DefaultBF16Tiles are the fused loop's tiles on the bfloat16 arithmetic
// path (Q, K and V all BFloat16 on a CPU with AVX512_BF16) when WithTile
// does not set them. Its Gemms run twice as fast as float32's, so the
// per-tile work (the accumulator's read and write by each P·V, the
// online softmax's pass per row) weighs twice as much, and larger tiles
// pay: on a Zen 5 (AVX-512; B=1 H=8 D=64) 512×1024 runs faster than
// 256×256 at N = 4096 and 16384, causal or not, and larger tiles gain
// little more (the commit that set it has the measurements). 512×1024
// holds a 2 MiB score tile and its 1 MiB of bfloat16 weights, past the
// L2. On a Zen 4 every tile from 256×256 to 512×2048 runs within the
// noise of the others.
func DefaultBF16Tiles() (q, k int) { return 512, 1024 }

// DefaultDecodeTileK is the key tile of a decoding item (at most 16 query
// rows, run by the decoding kernels) without a sliding window, when
// WithTile does not set it. A longer tile pays a tile's turn from K's rows
// to V's and its online-softmax step less often: on a Zen 5 (AVX-512)
// one decoding step of BenchmarkDecode's shape (B=1, 32 query heads over
// 8 KV heads, D=128, 32768 keys) ran fastest with tiles of 1024, over a
// float32 cache and a float16 one alike, 256 slowest and 512 and 2048
// between (the commit that set it has the measurements).
const DefaultDecodeTileK = 1024

// rowBlock is the number of query rows in one work item of the staged ops.
const rowBlock = 64

// maxAllocBytes guards Alloc against absurd sizes (64 TiB) before asking
// the runtime, which would otherwise abort the process. It is the largest
// buffer only where the available memory cannot be read (maxBufferLen).
const maxAllocBytes = 1 << 46

// maxBufferLen is Caps().MaxBufferLen for a backend opened now: the
// float32 values that fit in the memory available (AvailableMemory), at
// most maxAllocBytes/4.
func maxBufferLen() int {
	n := uint64(maxAllocBytes / 4)
	if avail, ok := availableMemory(); ok {
		n = min(n, avail/4)
	}
	return int(n)
}

// Backend is the CPU backend. It is safe for concurrent use: ops keep all
// their scratch per call and per worker.
type Backend struct {
	threads int
	tileQ   int
	tileK   int
	// subQ is the rows of a score tile: a query tile of tileQ rows runs
	// as sub-tiles of subQ that share each key tile (DefaultSubTile, or
	// WithSubTile's).
	subQ int
	// bf16Q and bf16K are the tiles of the bfloat16 arithmetic path:
	// DefaultBF16Tiles, or WithTile's.
	bf16Q, bf16K int
	// decodeK is the key tile of a decoding item without a window:
	// DefaultDecodeTileK, or WithTile's.
	decodeK int
	// bf16Setting is WithBF16's setting ("" for auto), and bf16 the
	// path New chose for it (sgemm.ChooseBF16): how Fused multiplies
	// when Q, K and V are all BFloat16.
	bf16Setting string
	// decode8Setting is WithDecode8's (EnvDecode8 overrides it), and t8
	// what New made of it: the 8-bit kernels' choice every decoding
	// scratch starts from (tiles8.vector, tiles8.intQ8).
	decode8Setting string
	t8             tiles8
	bf16           sgemm.BF16Path
	// workers, fusedPool and scratchPool keep what Fused needs between
	// calls (pool.go).
	workers     workers
	fusedPool   sync.Pool
	scratchPool sync.Pool
	maxLen      int // Caps().MaxBufferLen, fixed when the backend opens
	info        backend.Info
	closed      atomic.Bool
}

var _ backend.Backend = (*Backend)(nil)

func init() {
	backend.Register("cpu", 0, func() (backend.Backend, error) { return New() })
}

// Option configures New.
type Option func(*Backend) error

// WithThreads sets the number of worker goroutines an op runs on; 0 means
// runtime.GOMAXPROCS(0), the default.
func WithThreads(n int) Option {
	return func(b *Backend) error {
		if n < 0 {
			return backend.Errorf(backend.ErrShape, "cpu: WithThreads(%d): want ≥ 0", n)
		}
		b.threads = n
		return nil
	}
}

// WithTile sets the fused loop's query and key tile sizes (rows of Q and
// of K per tile), on every path (DefaultTiles, DefaultBF16Tiles and
// DefaultDecodeTileK are the defaults). Tests use tiny tiles to exercise
// the tile edges.
func WithTile(q, k int) Option {
	return func(b *Backend) error {
		if q < 1 || k < 1 {
			return backend.Errorf(backend.ErrShape, "cpu: WithTile(%d, %d): tiles must be ≥ 1", q, k)
		}
		b.tileQ, b.tileK, b.subQ = q, k, q
		b.bf16Q, b.bf16K = q, k
		b.decodeK = k
		return nil
	}
}

// WithSubTile sets the rows of the fused loop's score tile: each query
// tile (WithTile) runs as sub-tiles of that many rows which share each
// key tile, packed once (DefaultSubTile is the default; WithTile sets it
// to the query tile, one sub-tile).
func WithSubTile(rows int) Option {
	return func(b *Backend) error {
		if rows < 1 {
			return backend.Errorf(backend.ErrShape, "cpu: WithSubTile(%d): want ≥ 1", rows)
		}
		b.subQ = rows
		return nil
	}
}

// WithBF16 sets how Fused multiplies when Q, K and V are all BFloat16,
// which decides the bits of its results:
//
//	"auto" (or "")  AMX's tiles where the CPU has AMX-BF16 and Linux
//	                grants them; else VDPBF16PS where the CPU has
//	                AVX512_BF16 and runs it faster than widening (AMD's
//	                cores, not Intel's); else widening
//	"amx"           AMX's TDPBF16PS on tiles (VDPBF16PS at the edges)
//	"dot"           VDPBF16PS
//	"widen"         bfloat16 widened to float32, float32 arithmetic
//
// The choice is made from the CPU's identity and the setting, never by
// a timing, so one binary gives the same bits on one machine every run.
// A path runs only once it has passed a known-answer check in this
// process (sgemm.ChooseBF16); Info's Detail says which ran and why a
// faster one did not. $ATTN_CPU_BF16, for the CLI and CI, overrides it.
// A setting this CPU cannot follow makes New fail with ErrUnavailable.
func WithBF16(setting string) Option {
	return func(b *Backend) error {
		switch s := strings.ToLower(strings.TrimSpace(setting)); s {
		case "", "auto", "amx", "dot", "widen":
			b.bf16Setting = s
			return nil
		}
		return backend.Errorf(backend.ErrShape, "cpu: WithBF16(%q): want auto, amx, dot or widen", setting)
	}
}

// WithDecode8 chooses where 8-bit (q8, fp8) decoding runs:
//
//	"auto" (or "")  AMX's tiles where the CPU has them (q8 on the int8
//	                ones, fp8 on the bfloat16 ones), Linux grants them and
//	                each of the format's tile kernels, scores and P·V,
//	                passed its known-answer check in this process; else
//	                the widening vector kernels (AVX-512, AVX2, NEON),
//	                q8's on the integer vector kernels where they passed
//	                their checks: P·V and scores on an AVX2 CPU without
//	                AVX-512 (VPMADDWD) or with AVX512-VNNI (VPDPWSSD,
//	                VPDPBUSD; cpu/doc.go)
//	"vector"        the widening vector kernels: each 8-bit value
//	                widened to float32 before its FMA
//	"integer"       q8 on the integer vector kernels, not AMX's tiles
//	                (the runs too short for the tiles take them under
//	                auto too), fp8 as auto; ErrUnavailable on a CPU
//	                without them (AVX2 without AVX-512, or AVX512-VNNI)
//	                or where they failed their checks
//
// The tiles' and the integer kernel's answers are within the formats'
// bounds of the widening kernels', not the same bits (cpu/doc.go).
// Info's Detail names each tile or integer kernel that runs and the
// check it passed, or why a format is not on them. $ATTN_CPU_DECODE8 (EnvDecode8), for the CLI and CI,
// overrides it; a value other than these is ErrShape.
func WithDecode8(setting string) Option {
	return func(b *Backend) error {
		if _, err := parseDecode8("WithDecode8", setting); err != nil {
			return err
		}
		b.decode8Setting = setting
		return nil
	}
}

// New opens a CPU backend. $ATTN_CPU_KERNEL, or WithBF16 or
// $ATTN_CPU_BF16 (which overrides it), naming a choice this CPU does not
// have is ErrUnavailable (amx included where Linux refuses the process
// AMX's tiles, or they fail their known-answer check). On a CPU with
// AMX-BF16, New asks Linux for the tiles once a process (arch_prctl).
// The first New of a process runs each vector path's known-answer check
// (a few microseconds; see WithBF16); Info's Detail says what runs and,
// where a faster path the CPU has does not, why.
func New(opts ...Option) (*Backend, error) {
	if err := sgemm.KernelErr(); err != nil {
		return nil, backend.Errorf(backend.ErrUnavailable, "cpu: %v", err)
	}
	b := &Backend{tileQ: defaultTiles[0], tileK: defaultTiles[2], subQ: defaultTiles[1], decodeK: DefaultDecodeTileK}
	b.fusedPool.New = func() any { return new(fused) }
	b.bf16Q, b.bf16K = DefaultBF16Tiles()
	for _, o := range opts {
		if err := o(b); err != nil {
			return nil, err
		}
	}
	decode8, err := decode8Setting(b.decode8Setting)
	if err != nil {
		return nil, err
	}
	b.t8 = tiles8{vector: decode8 == "vector", intQ8: decode8 == "integer"}
	if _, _, err := prefetchEnv(); err != nil {
		return nil, err
	}
	if decode8 == "integer" && !q8IntNow().ok {
		why := q8IntNow().note
		if why == "" {
			why = "this CPU has no integer q8 kernel (AVX2 without AVX-512, or AVX512-VNNI)"
		}
		return nil, backend.Errorf(backend.ErrUnavailable, "cpu: 8-bit decoding setting integer: %s", why)
	}
	b.scratchPool.New = func() any {
		return &fusedScratch{t8: b.t8}
	}
	if b.threads == 0 {
		b.threads = runtime.GOMAXPROCS(0)
	}
	setting := b.bf16Setting
	if env := sgemm.BF16Setting(); env != "" {
		setting = env
	}
	path, notes, err := sgemm.ChooseBF16(setting)
	if err != nil {
		return nil, backend.Errorf(backend.ErrUnavailable, "cpu: %v", err)
	}
	b.bf16 = path
	notes = append(notes, loopChecks()...)
	b.maxLen = maxBufferLen()
	name, vendor := cpuModel()
	b.info = backend.Info{
		Kind: backend.KindCPU,
		Adapter: gputypes.AdapterInfo{
			Name:       name,
			Vendor:     vendor,
			DeviceType: gputypes.DeviceTypeCPU,
			Driver:     blasName,
		},
		Threads: b.threads,
		Detail: fmt.Sprintf("%s/%s, %s, %s, fused tiles %d×%d in sub-tiles of %d rows, decoding key tiles %d",
			runtime.GOOS, runtime.GOARCH, runtime.Version(), blasName, b.tileQ, b.tileK, b.subQ, b.decodeK) + loopsDetail(),
	}
	if path.Arithmetic() {
		b.info.Detail += fmt.Sprintf(", bfloat16 arithmetic %s (passed its known-answer check) with tiles %d×%d", path, b.bf16Q, b.bf16K)
	} else {
		b.info.Detail += ", bfloat16 widened to float32"
	}
	b.info.Detail += ", " + decodeDetail()
	q8, fp8 := tilesNow()
	b.info.Detail += decode8Detail(decode8, q8, fp8, q8IntNow(), q8IntDotNow())
	if decode8 != "vector" && q8IntDotNow().ok && !q8.on {
		b.info.Detail += q4Detail(q4IntNow())
	}
	for _, n := range notes {
		b.info.Detail += "; " + n
	}
	return b, nil
}

// Name returns "cpu".
func (b *Backend) Name() string { return "cpu" }

// Info describes the processor.
func (b *Backend) Info() backend.Info { return b.info }

// Caps reports the full contract: the CPU backend supports everything,
// the half dtypes and packed and paged sequences included.
// MaxBufferLen is what the memory available when the backend opened
// (AvailableMemory) holds, at most 64 TiB: a backend opened while memory
// was short keeps that limit, and Alloc refuses more (open another for a
// fresh one). Alloc also refuses, at the time of the call, a buffer of
// 256 MiB or more that the memory available then cannot hold.
func (b *Backend) Caps() backend.Caps {
	return backend.Caps{
		Staged: true, Fused: true, Bias: true, KeepMask: true,
		Causal: true, GQA: true, BNHD: true, LSE: true, Variants: true,
		Half: true, Quant8: true, Quant4: true, Seqs: true, Strides: true, VFromK: true, Indices: true, Blocks: true, BackwardBlocks: true, BackwardIndices: true,
		MaxBufferLen: b.maxLen,
	}
}

// Sync returns at once: every op has finished when it returns.
func (b *Backend) Sync() error {
	if b.closed.Load() {
		return backend.Errorf(backend.ErrReleased, "cpu: sync: the backend is closed (Close was called)")
	}
	return nil
}

// Close marks the backend closed; later calls and its buffers return
// ErrReleased. Ops already running finish. Closing twice is a no-op.
func (b *Backend) Close() error {
	b.closed.Store(true)
	b.closeWorkers()
	return nil
}

// Tiles returns the fused loop's query and key tile sizes, and BF16Tiles
// those of its bfloat16 arithmetic path.
func (b *Backend) Tiles() (q, k int) { return b.tileQ, b.tileK }

// BF16Tiles: see Tiles.
func (b *Backend) BF16Tiles() (q, k int) { return b.bf16Q, b.bf16K }

func (b *Backend) checkOpen(op string) error {
	if b.closed.Load() {
		return backend.Errorf(backend.ErrReleased, "cpu: %s: the backend is closed (Close was called)", op)
	}
	return nil
}

// cpuModel is the processor's name and vendor, read once.
var cpuModel = sync.OnceValues(readCPUModel)

// readCPUModel reads the processor's name and vendor from /proc/cpuinfo
// where there is one, falling back to GOARCH.
func readCPUModel() (name, vendor string) {
	name = runtime.GOARCH
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return name, ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() && (name == runtime.GOARCH || vendor == "") {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch {
		case key == "model name" && val != "" && name == runtime.GOARCH:
			name = val
		case key == "vendor_id" && vendor == "":
			switch val {
			case "GenuineIntel":
				vendor = "Intel"
			case "AuthenticAMD":
				vendor = "AMD"
			default:
				vendor = val
			}
		}
	}
	return name, vendor
}

// checkCtx reports a cancelled context before an op starts.
func checkCtx(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return backend.Wrapf(err, "cpu: %s", op)
	}
	return nil
}
