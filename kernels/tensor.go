package kernels

import (
	"fmt"

	"github.com/attn-go/attn/backend"
)

// Layout is the order of the dimensions of a rank-4 (or rank-3) Q, K, V or
// O tensor.
type Layout = backend.Layout

// The layouts.
const (
	BHND = backend.BHND // [batch, head, token, dim]
	BNHD = backend.BNHD // [batch, token, head, dim]
)

// Variants, Window and ScoreStage are backend's: see backend.Variants for
// their meaning.
type (
	Variants   = backend.Variants
	Window     = backend.Window
	ScoreStage = backend.ScoreStage
)

// The score stages (backend.ScoreStage).
const (
	StageBiased = backend.StageBiased
	StageRaw    = backend.StageRaw
	StageCapped = backend.StageCapped
	StageMasked = backend.StageMasked
)

// Tensor is a dense row-major float32 tensor.
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
	Data   []float32
}

// NewTensor returns a zero tensor of the given layout and shape. It returns
// an error wrapping backend.ErrShape for a negative dimension and
// backend.ErrTooLarge when the element count overflows.
func NewTensor(layout Layout, shape ...int) (*Tensor, error) {
	n, err := numElems(shape)
	if err != nil {
		return nil, err
	}
	return &Tensor{Shape: append([]int(nil), shape...), Layout: layout, Data: make([]float32, n)}, nil
}

// Len is the number of elements Shape describes.
func (t *Tensor) Len() int {
	n, _ := backend.CheckedProduct(t.Shape...)
	return n
}

// check verifies that the data holds exactly what the shape says.
func (t *Tensor) check(name string) error {
	if t == nil {
		return backend.Errorf(backend.ErrShape, "%s is nil", name)
	}
	n, err := numElems(t.Shape)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if len(t.Data) != n {
		return backend.Errorf(backend.ErrShape, "%s of shape %v needs %d elements, has %d", name, t.Shape, n, len(t.Data))
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
type Mask struct {
	Shape []int
	Keep  []bool
}
