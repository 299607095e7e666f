package backend

// Wrapper is implemented by a backend whose buffers are host memory (the
// CPU backend): it makes a Buffer of a caller's slice, which the ops then
// read, or write, where it lies, with no copy. Package kernels wraps Q, K
// and V read-only and the result's O writable when the backend is a
// Wrapper, and allocates and writes buffers (Alloc, Write) otherwise.
//
// A wrapped Buffer's Len is len(data) and its DType Float32 (Wrap) or t
// (WrapBits); its memory is data's, which stays the caller's: Release
// forgets it and frees nothing. A read-only Buffer is never written:
// Write or WriteBits into it, or passing it as an op's output (the
// scores of Scores and Softmax, O, the LSE) is an error wrapping
// ErrShape, which writes nothing. A writable Buffer that shares memory
// with another operand of the same op is an error wrapping ErrShape,
// like a shared Buffer. The caller must not change data while an op
// reads it, nor read an output while an op writes it.
type Wrapper interface {
	// Wrap returns a Float32 Buffer over data.
	Wrap(data []float32, readOnly bool) (Buffer, error)
	// WrapBits returns a Buffer of half dtype t over bits, the stored
	// bits of its values. A Float32 or unknown t is ErrShape; a half t
	// on a backend without Caps.Half is ErrUnsupported.
	WrapBits(t DType, bits []uint16, readOnly bool) (Buffer, error)
}
