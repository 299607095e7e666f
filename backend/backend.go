package backend

import (
	"context"

	"github.com/gogpu/gputypes"
)

// Backend computes attention on one device. Buffers it allocates live on
// that device and stay there between the staged ops; only Write and Read
// cross the bus. Every method is safe for concurrent use.
//
// Every op validates its parameters and buffers first and returns an error
// wrapping ErrShape (or ErrTooLarge, ErrUnsupported) before touching any
// data; a bad argument never panics and never writes to any buffer. A
// released buffer or a closed backend gives ErrReleased, a buffer of
// another backend ErrForeignBuffer, and an op called with a cancelled ctx
// returns an error wrapping ctx.Err() (ops also check ctx between tiles).
// An op's output may not share a Buffer with any of its inputs (ErrShape):
// workers read the inputs while others write the output.
// Backends compute what the data says: NaN or infinite inputs are the
// caller's to reject (package kernels does), and give unspecified, possibly
// NaN, outputs.
type Backend interface {
	// Name is the registered name, "cpu" or "gpu".
	Name() string
	// Info describes the device.
	Info() Info
	// Caps reports what the backend supports.
	Caps() Caps

	// Alloc returns device-resident storage for n elements of dtype t,
	// zero-filled. n < 0 or an unknown dtype is ErrShape; a half dtype on
	// a backend without Caps().Half is ErrUnsupported; n over
	// Caps().MaxBufferLen, or more than the device can hold, is
	// ErrTooLarge.
	Alloc(t DType, n int) (Buffer, error)
	// Write copies src into dst starting at element off, each value
	// rounded to dst's dtype (DType.Encode: to nearest, ties to even;
	// exact for Float32). A finite value beyond a half dtype's range is
	// ErrNonFinite (DType.CheckFits) and writes nothing. A range outside
	// dst is ErrShape and writes nothing; an empty range at off == Len is
	// allowed. Only the range's elements change: writes from several
	// goroutines into ranges that do not overlap all land, whatever the
	// dtype, even where two ranges meet inside a stored word (a half
	// element of two, an 8-bit one of four, a q8 block's scale).
	Write(dst Buffer, off int, src []float32) error
	// Read copies len(dst) elements of src, starting at element off, into
	// dst, widened exactly from src's dtype, with the same range rules as
	// Write.
	Read(dst []float32, src Buffer, off int) error
	// WriteBits copies the stored bits of a Float16 or BFloat16 buffer:
	// src's elements are dst's dtype's bits, written as they are. A
	// Float32 dst is ErrShape. The range rules, and the concurrency
	// rule, are Write's.
	WriteBits(dst Buffer, off int, src []uint16) error
	// ReadBits copies len(dst) stored elements of a Float16 or BFloat16
	// buffer, as bits, with the range rules of Read. A Float32 src is
	// ErrShape.
	ReadBits(dst []uint16, src Buffer, off int) error

	// Scores computes the staged path's first step
	//
	//  S[b,h,i,j] = scale · Σ_d Q[b,h,i,d]·K[b,h/G,j,d]         (StageRaw)
	//  S → Softcap·tanh(S/Softcap)                           (StageCapped)
	//  S → S + bias[b,h,i,j] − ALiBi[h]·|a_b + i − j|        (StageBiased)
	//  S → −Inf on every hidden key                          (StageMasked)
	//
	// into s, laid out [B, H, Nq, Nk], carried as far as p.Stage says.
	// Below StageMasked no mask is applied; Softmax applies them.
	Scores(ctx context.Context, p ScoresParams, q, k, s Buffer) error
	// Softmax replaces each row of biased (or masked) scores s
	// ([B, H, Nq, Nk]) with its softmax over the keys the row may see
	// (Problem.KeyRange, the keep mask, not −Inf), writing 0 for keys it
	// may not see; a sink adds exp(Sinks[h]) to the denominator. A row
	// that sees no key becomes all zeros with LSE −Inf (Sinks[h] with a
	// sink). When p.LSE is set it receives log(Σ_j exp(S[b,h,i,j]) +
	// exp(Sinks[h])) over the keys the row sees, laid out [B, H, Nq].
	Softmax(ctx context.Context, p SoftmaxParams, s Buffer) error
	// Context computes O[b,h,i,:] = Σ_j P[b,h,i,j]·V[b,h/G,j,:] from the
	// weights pm ([B, H, Nq, Nk]) into o.
	Context(ctx context.Context, p ContextParams, pm, v, o Buffer) error
	// Fused computes the whole of attention without materialising the
	// scores: O = softmax(scale·Q·Kᵀ + bias, masked)·V, and the per-row
	// log-sum-exp into lse ([B, H, Nq]) when lse is not nil.
	Fused(ctx context.Context, p FusedParams, q, k, v, o, lse Buffer) error

	// Sync waits until all submitted work has finished.
	Sync() error
	// Close releases the device. Buffers allocated from it become invalid
	// and every later call returns ErrReleased.
	Close() error
}

// Buffer is device-resident storage of one DType allocated by one
// Backend. Passing a Buffer to a Backend other than the one that
// allocated it is an error (ErrForeignBuffer).
type Buffer interface {
	// Len is the number of elements, unchanged by Release.
	Len() int
	// DType is how the elements are stored.
	DType() DType
	// Release frees the storage. Using the Buffer afterwards is an error;
	// releasing twice is a no-op.
	Release()
}

// Kind says what sort of device a backend drives.
type Kind int

// The kinds of device.
const (
	KindCPU Kind = iota
	KindGPU
)

func (k Kind) String() string {
	switch k {
	case KindCPU:
		return "cpu"
	case KindGPU:
		return "gpu"
	}
	return "unknown"
}

// Info describes the device behind a backend, in WebGPU's shared types where
// they fit. A CPU backend fills Adapter (DeviceType CPU, the processor's
// name) and leaves Limits and Features zero; Threads is its parallelism.
type Info struct {
	Kind     Kind
	Adapter  gputypes.AdapterInfo
	Limits   gputypes.Limits
	Features gputypes.Features
	// Threads is the number of worker goroutines a CPU backend runs ops on;
	// 0 on a GPU.
	Threads int
	// Detail is free text: library versions, build tags, driver notes.
	Detail string
}

// Caps reports what a backend supports. The conformance suite in
// backendtest checks every capability a backend claims, and fails a
// backend that claims less than the full contract where the contract
// requires it.
type Caps struct {
	Staged   bool // Scores, Softmax and Context
	Fused    bool // Fused
	Bias     bool // additive float bias with broadcasting
	KeepMask bool // boolean keep-mask with broadcasting
	Causal   bool // bottom-right aligned causal masking
	// Variants: causal offset, sliding window, softcap, ALiBi, sinks,
	// per-batch key lengths and the score stages (backend.Variants).
	Variants bool
	GQA      bool // KVHeads < H
	BNHD     bool // the [B, N, H, D] layout
	LSE      bool // per-row log-sum-exp output
	// Half: Float16 and BFloat16 buffers (Alloc, WriteBits, ReadBits)
	// for Q, K, V, O and the bias of every op, and for Context's V and
	// O; the scores, weights, keep-mask and LSE stay Float32.
	Half bool
	// Quant8: Q8 and FP8 buffers (Alloc, Write, Read, and Copy where
	// the backend copies), read by Fused as K and V with Problem.Scales.
	Quant8 bool
	// Quant4: Q4 buffers, as Quant8's (quant4.go), read by Fused as K
	// and V.
	Quant4 bool
	// Seqs: Fused takes packed variable-length sequences
	// (Problem.Packed) and paged K and V (Problem.Paged).
	Seqs bool
	// Strides: the ops read Q, K and V at the strides Problem.Views
	// gives them (see Views); a backend without it refuses such a
	// problem (Problem.DenseOnly), and kernels gathers strided tensors
	// into dense buffers for it.
	Strides bool
	// VFromK: the ops take V as K's first Dv columns (Problem.VFromK),
	// reading K's buffer twice; kernels gives V as a view of K to a
	// backend without it.
	VFromK bool
	// Indices: Fused takes index lists (Problem.Indices), through
	// attn's package internal/lower (lower.Indexed); a backend without it refuses
	// them (ErrUnsupported).
	Indices bool
	// Blocks: Fused takes block masks (Problem.Blocks) and skips their
	// blocks that are off; a backend without it refuses them
	// (ErrUnsupported).
	Blocks bool
	// BackwardBlocks: Backward (backend.Backwarder) takes block masks
	// too, and skips their blocks that are off as Fused does; a backend
	// without it refuses them there (ErrUnsupported).
	BackwardBlocks bool
	// BackwardIndices: Backward takes index lists (Problem.Indices),
	// summing dK and dV into the named rows only; a backend without it
	// refuses them there (ErrUnsupported).
	BackwardIndices bool
	// FlushesSubnormals: the backend's arithmetic may read, compute or
	// store float32 subnormals (magnitudes below 2⁻¹²⁶, every bfloat16
	// subnormal among them) as zero, as WGSL allows and GPUs do; a
	// backend without it keeps them exact.
	FlushesSubnormals bool
	// MaxBufferLen is the largest Alloc in elements (of any dtype); 0
	// means no limit beyond host memory.
	MaxBufferLen int
}

// FusedSupporter is implemented by a backend whose Fused cannot run every
// problem its staged ops can: a GPU whose workgroup memory holds no tile
// of keys at wide head dims. FusedSupports returns nil when Fused can run
// p, and otherwise the error wrapping ErrUnsupported that Fused would
// return, naming the sizes; it reports only the limits of the fused path
// that the staged path lacks, and does not validate p (Problem.Validate
// does). A backend without the method runs Fused on every valid problem.
type FusedSupporter interface {
	FusedSupports(p Problem) error
}

// FusedSupports reports whether be's Fused can run p: an error wrapping
// ErrUnsupported when be does not claim Caps.Fused (or Caps.Seqs, for a
// packed or paged p), or when be is a FusedSupporter that refuses p; nil
// otherwise. kernels' Auto strategy
// runs staged where it is not nil.
func FusedSupports(be Backend, p Problem) error {
	if !be.Caps().Fused {
		return Errorf(ErrUnsupported, "the %s backend has no fused path", be.Name())
	}
	if (p.Packed != nil || p.Paged != nil) && !be.Caps().Seqs {
		return Errorf(ErrUnsupported, "the %s backend's fused path takes no packed sequences or paged caches (Caps.Seqs is false; B=%d Nq=%d Nk=%d)", be.Name(), p.B, p.Nq, p.Nk)
	}
	if !be.Caps().Strides {
		if err := p.DenseOnly(be.Name()); err != nil {
			return err
		}
	}
	if fs, ok := be.(FusedSupporter); ok {
		return fs.FusedSupports(p.Resolved())
	}
	return nil
}

// Copier is implemented by a backend that copies elements between its
// own buffers on the device, without a round trip through the host: a
// KV cache's append of keys and values that a GPU program computed
// (kernels' AppendBuffers).
type Copier interface {
	// Copy copies, for each range r in order, the r.N elements of src
	// from element r.Src into dst from element r.Dst, each rounded to
	// dst's dtype as an op stores its output (DType.Saturate: to
	// nearest, ties to even, a finite value beyond a half dtype's range
	// as ± its largest finite value); between buffers of one dtype the
	// values are copied as they are. NaN and infinities are copied as
	// NaN (its payload may change) and infinities: the data are the
	// device's, and unchecked. A range outside either buffer, or dst and
	// src one buffer, is ErrShape, and nothing is written; a later
	// range that overlaps an earlier one in dst overwrites it. It
	// follows the op rules of Backend (ctx, ownership, released
	// buffers).
	Copy(ctx context.Context, dst, src Buffer, ranges ...CopyRange) error
}

// CopyRange is one range of a Copy: N elements from element Src of the
// source to element Dst of the destination.
type CopyRange struct{ Dst, Src, N int }

// CheckCopy checks ranges against a Copy's destination and source of
// dstLen and srcLen elements: each N ≥ 0 and each range inside both
// buffers (an empty range may start at the end). It returns an error
// wrapping ErrShape naming the first bad range.
func CheckCopy(dstLen, srcLen int, ranges []CopyRange) error {
	for i, r := range ranges {
		if r.N < 0 || r.Dst < 0 || r.Src < 0 || r.Dst > dstLen || r.Src > srcLen || r.N > dstLen-r.Dst || r.N > srcLen-r.Src {
			return Errorf(ErrShape, "copy range %d of %d: %d elements from %d of a source of %d to %d of a destination of %d",
				i, len(ranges), r.N, r.Src, srcLen, r.Dst, dstLen)
		}
	}
	return nil
}

// Recorder is implemented by a backend whose ops can run without a host
// wait each (the GPU's Step): a model's layers recorded as one
// submission and waited for once. The backend's own methods always wait
// for their work, whatever their ctx carries; only a Recording's methods
// record.
type Recorder interface {
	// Begin starts a recording on the backend.
	Begin() Recording
}

// Recording is one recording of a Recorder's ops: its Fused, Scores,
// Softmax, Context and Copy validate their arguments and return their
// errors at once, as the backend's own methods do, and record their
// work, in call order, instead of waiting for it. Submit puts what was
// recorded on the device's queue without waiting; Wait submits it and
// waits for it once. Each returns the errors of the ops recorded since
// the last Submit or Wait again, and Wait any the device reports; the
// recording is then reusable. A buffer released while recorded work
// reads or writes it stays until that work has run (the GPU destroys it
// once the work is submitted, and WebGPU keeps it until the work has
// run), so that whoever records through scratch may release it as soon
// as its ops are recorded.
type Recording interface {
	Fused(ctx context.Context, p FusedParams, q, k, v, o, lse Buffer) error
	Scores(ctx context.Context, p ScoresParams, q, k, s Buffer) error
	Softmax(ctx context.Context, p SoftmaxParams, s Buffer) error
	Context(ctx context.Context, p ContextParams, pm, v, o Buffer) error
	Copier
	Submit() error
	Wait() error
}
