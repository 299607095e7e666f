package kernels

import (
	"fmt"
	"slices"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/hostmem"
)

// Layout is the order of the dimensions of a rank-4 (or rank-3) Q, K, V or
// O tensor.
type Layout = backend.Layout

// The layouts.
const (
	BHND = backend.BHND // [batch, head, token, dim]
	BNHD = backend.BNHD // [batch, token, head, dim]
)

// Window is a sliding window (Options.Window): query row i at key
// position t sees key j only when t − Left ≤ j ≤ t + Right, a side of −1
// unbounded; {Left: W−1, Right: 0} with Causal is a causal window of W
// keys. Its fields:
//
//	Left, Right int
//
// backend.Window has the rest.
type Window = backend.Window

// ScoreStage is how far Options.Scores carries the scores (the
// constants below; backend.ScoreStage).
type ScoreStage = backend.ScoreStage

// Indices are the index lists of sparse attention over chosen keys
// (Options.Indices, AttendOptions.Indices): for each query row, the
// PerRow key positions it attends (−1 for none), one list a row shared
// by every head (Heads 1) or one a KV head (Heads = KVHeads). Its
// fields:
//
//	Heads, PerRow int
//	Idx           []int32 // [B, Heads, Nq, PerRow], or [Heads, total rows, PerRow] packed
//
// backend.Indices has the rules (what is refused, what a list takes).
type Indices = backend.Indices

// The score stages (backend.ScoreStage).
const (
	StageBiased = backend.StageBiased
	StageRaw    = backend.StageRaw
	StageCapped = backend.StageCapped
	StageMasked = backend.StageMasked
)

// DType is backend's storage dtype: Float32, Float16 or BFloat16.
type DType = backend.DType

// The dtypes (backend.DType).
const (
	Float32  = backend.Float32
	Float16  = backend.Float16
	BFloat16 = backend.BFloat16
	// Q8 and FP8 store a cache's keys and values in 8 bits
	// (CacheConfig.DType; see backend.Q8, backend.FP8); no tensor holds
	// them.
	Q8  = backend.Q8
	FP8 = backend.FP8
	// Q4 stores them in 4 bits (backend.Q4: llama.cpp's q4_0), as Q8
	// does: a cache's dtype only.
	Q4 = backend.Q4
)

// Tensor is a tensor of float32 values (Data) or of half values (Bits:
// the stored bits of Float16 or BFloat16), as DType says: dense
// row-major, or a strided view of another tensor's storage (Strides,
// Slice).
//
// For Q, K, V and the output, Shape is
//
//	rank 4: [B, H, N, D] (BHND) or [B, N, H, D] (BNHD)
//	rank 3: [H, N, D]    (BHND) or [N, H, D]    (BNHD), one batch
//	rank 2: [N, D], one batch and one head
//
// Bias tensors, weights and LSE ignore Layout: they are always ordered
// [B, H, Nq, Nk] (or [B, H, Nq]), right-aligned as in NumPy when their
// rank is lower.
type Tensor struct {
	Shape  []int
	Layout Layout
	// DType is how the elements are stored: Float32 (the zero value) in
	// Data, Float16 or BFloat16 in Bits; the other slice is nil.
	DType DType
	Data  []float32
	Bits  []uint16
	// Strides, when set, are the element strides of each dimension:
	// element (i₀, i₁, …) is at Σ iₖ·Strides[k] of Data (or Bits). nil
	// means dense row-major, and then the storage holds exactly the
	// shape's elements. A strided tensor (Slice makes one) follows these
	// rules, or every function taking it returns an error wrapping
	// backend.ErrShape that names its shape and strides:
	//
	//	len(Strides) == len(Shape)
	//	every stride ≥ 0, the last one 1 (a row's elements lie together)
	//	the storage holds the largest offset: len ≥ 1 + Σ (Shape[k]−1)·Strides[k]
	//	  (0 elements when a dimension is 0)
	//
	// Strides may overlap (0 repeats a row). Attention's Q, K and V
	// (dense, or packed with Options.CuSeqlensQ, CuSeqlensK), its bias,
	// the rows of KVCache.Append and Seq.Append and the q of Attend take
	// strided tensors; so do Float32s, Convert, Contiguous, Slice,
	// ConcatSeq, WriteNpy and Linear. Outputs (Result's, Attend's out and
	// lse) are dense, and a paged cache's pools (Options.BlockTable) must
	// be. A CPU backend reads Q, K and V in place, at their strides; a
	// GPU backend receives them gathered into dense buffers.
	Strides []int
}

// NewTensor returns a zero tensor of the given layout and shape. It returns
// an error wrapping backend.ErrShape for a negative dimension and
// backend.ErrTooLarge, before allocating, when the element count
// overflows or the values need more memory than the host has available
// (the CPU backend's Alloc's rule, which NewPagePool and NewKVCache meet
// there): an allocation the Go runtime cannot meet aborts the process.
func NewTensor(layout Layout, shape ...int) (*Tensor, error) {
	return NewTensorOf(Float32, layout, shape...)
}

// NewTensorOf returns a zero tensor of dtype dt, layout and shape, with
// NewTensor's errors, and ErrShape for a dtype no tensor holds: an
// unknown one, or a cache's Q8, FP8 or Q4.
func NewTensorOf(dt DType, layout Layout, shape ...int) (*Tensor, error) {
	if err := tensorDType("tensor", dt); err != nil {
		return nil, err
	}
	n, err := numElems(shape)
	if err != nil {
		return nil, err
	}
	if why := hostRoom(n, dt.Size()); why != "" {
		return nil, backend.Errorf(backend.ErrTooLarge, "tensor of shape %v: %d %v values %s", shape, n, dt, why)
	}
	t := &Tensor{Shape: append([]int(nil), shape...), Layout: layout, DType: dt}
	if dt.Half() {
		t.Bits = make([]uint16, n)
	} else {
		t.Data = make([]float32, n)
	}
	return t, nil
}

// maxHostBytes guards a host allocation against absurd sizes before the
// Go runtime sees it (the CPU backend's Alloc guard, 64 TiB): where the
// available memory cannot be read, it is the largest.
const maxHostBytes = 1 << 46

// checkedHostBytes is the size from which hostRoom asks the system how
// much memory is left; smaller allocations skip the look-up.
const checkedHostBytes = 256 << 20

// hostRoom says why n values of size bytes do not fit in host memory, ""
// where they do: past maxHostBytes, or, from checkedHostBytes on, past
// the memory available now (hostmem.Available). It is the CPU backend's Alloc's
// rule, which kernels meets without importing that backend.
func hostRoom(n, size int) string {
	if n > maxHostBytes/size {
		return fmt.Sprintf("need more than %d bytes", uint64(maxHostBytes))
	}
	bytes := uint64(n) * uint64(size)
	if bytes >= checkedHostBytes {
		if avail, ok := hostmem.Available(); ok && bytes > avail {
			return fmt.Sprintf("need %.1f GiB but %.1f GiB of memory is available", float64(bytes)/(1<<30), float64(avail)/(1<<30))
		}
	}
	return ""
}

// Float32s returns the tensor's values as float32, dense row-major: Data
// itself for a dense Float32 tensor, a new slice of the values (widened
// exactly from a half dtype) otherwise.
func (t *Tensor) Float32s() []float32 {
	if t.Strides != nil {
		t = t.contiguous()
	}
	if !t.DType.Half() {
		return t.Data
	}
	out := make([]float32, len(t.Bits))
	for i, b := range t.Bits {
		out[i] = t.DType.Decode(b)
	}
	return out
}

// Convert returns a copy of t stored as dt: each value rounded to nearest,
// ties to even (backend.DType.Encode). A finite value beyond dt's range is
// an error wrapping backend.ErrNonFinite that names it and its index
// (backend.DType.CheckFits); NaN and infinities are kept. dt is Float32,
// Float16 or BFloat16: Q8, FP8 and Q4 are a cache's dtypes, which no
// tensor holds (a cache quantizes the rows Append gives it), and they,
// like an unknown dtype, are an error wrapping backend.ErrShape.
func (t *Tensor) Convert(dt DType) (*Tensor, error) {
	if err := t.check("tensor"); err != nil {
		return nil, err
	}
	if err := tensorDType("convert", dt); err != nil {
		return nil, err
	}
	if t.Strides != nil {
		t = t.contiguous()
	}
	out := &Tensor{Shape: append([]int(nil), t.Shape...), Layout: t.Layout, DType: dt}
	if dt == t.DType {
		out.Data, out.Bits = slices.Clone(t.Data), slices.Clone(t.Bits)
		return out, nil
	}
	vals := t.Float32s()
	if !dt.Half() {
		if !t.DType.Half() {
			vals = slices.Clone(vals)
		}
		out.Data = vals
		return out, nil
	}
	if err := dt.CheckFits("tensor", 0, vals); err != nil {
		return nil, err
	}
	out.Bits = make([]uint16, len(vals))
	for i, x := range vals {
		out.Bits[i] = dt.Encode(x)
	}
	return out, nil
}

// tensorDType is nil where a tensor may hold dt (Float32, Float16 or
// BFloat16), and otherwise an error wrapping backend.ErrShape that says
// why, after what: dt is a cache's dtype, or unknown.
func tensorDType(what string, dt DType) error {
	switch {
	case dt.Valid():
		return nil
	case dt.Quantized():
		return backend.Errorf(backend.ErrShape, "%s: %v is a cache's dtype (CacheConfig.DType), which no tensor holds: want f32, f16 or bf16", what, dt)
	}
	return backend.Errorf(backend.ErrShape, "%s: unknown dtype %v", what, dt)
}

// Len is the number of elements Shape describes.
func (t *Tensor) Len() int {
	n, _ := backend.CheckedProduct(t.Shape...)
	return n
}

// check verifies that the data holds exactly what the shape says, or,
// for a strided tensor, that its strides follow the rules (Strides).
func (t *Tensor) check(name string) error {
	if t == nil {
		return backend.Errorf(backend.ErrShape, "%s is nil", name)
	}
	n, err := numElems(t.Shape)
	if err != nil {
		return backend.Wrapf(err, "%s", name)
	}
	if err := tensorDType(name, t.DType); err != nil {
		return err
	}
	stored, other := len(t.Data), len(t.Bits)
	if t.DType.Half() {
		stored, other = other, stored
	}
	if t.Strides != nil {
		if err := t.checkStrides(name, stored); err != nil {
			return err
		}
	} else if stored != n {
		where := ""
		if t.DType.Half() {
			where = fmt.Sprintf(" (%v, in Bits)", t.DType)
		}
		return backend.Errorf(backend.ErrShape, "%s of shape %v needs %d elements, has %d%s", name, t.Shape, n, stored, where)
	}
	if other != 0 {
		return backend.Errorf(backend.ErrShape, "%s is %v but also holds %d elements in the other slice (Data for float32, Bits for halves)", name, t.DType, other)
	}
	return nil
}

func numElems(shape []int) (int, error) {
	for _, d := range shape {
		if d < 0 {
			return 0, backend.Errorf(backend.ErrShape, "negative dimension in shape %v", shape)
		}
	}
	n, ok := backend.CheckedProduct(shape...)
	if !ok {
		return 0, backend.Errorf(backend.ErrTooLarge, "shape %v has more elements than fit in an int", shape)
	}
	return n, nil
}

// Mask is a boolean keep-mask: true lets a query see a key, false hides
// it. Shape broadcasts to [B, H, Nq, Nk] like a bias: right-aligned, each
// dimension 1 or the full size (a key-padding mask is [B, 1, 1, Nk]).
//
// Shape is a []int of rank at most 4, as the bias's Tensor.Shape is and as
// NumPy and ONNX broadcast masks ([Nq, Nk] for one shared by every batch
// and head). A BlockMask's Shape is a [4]int instead: it is
// backend.BlockMask, handed to the backend as it is (backend's Mask and
// BlockMask are [4]int, resolved once), and its helpers always give all
// four dimensions. A Mask is converted for the backend anyway (its
// booleans become a float32 buffer), so it keeps the caller's rank.
type Mask struct {
	Shape []int
	Keep  []bool
}
