//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
)

// QuantImage reads a quantized buffer's bytes as they lie on the device
// (its whole allocation, padding included).
func QuantImage(b *Backend, buf backend.Buffer) ([]byte, error) {
	x, err := b.lockRange("read", "src", buf, 0, 0)
	if err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	words := make([]uint32, x.bytes/4)
	if err := b.readWords(words, x, 0); err != nil {
		return nil, err
	}
	img := make([]byte, 4*len(words))
	for i, w := range words {
		img[4*i], img[4*i+1], img[4*i+2], img[4*i+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
	}
	return img, nil
}

// QuantStored reads a quantized buffer's bytes as they are: each
// element's code (an fp8 byte, a q8 int8's bits; for q4 each block's 16
// bytes of two codes as backend.QuantizeQ4 writes them) and, for q8 and
// q4, each block's float16 scale, so that tests compare bytes, not
// widened values.
func QuantStored(b *Backend, buf backend.Buffer) (codes []byte, scales []uint16, err error) {
	img, err := QuantImage(b, buf)
	if err != nil {
		return nil, nil, err
	}
	t, n := buf.DType(), buf.Len()
	if t == backend.FP8 {
		return img[:n], nil, nil
	}
	cb := backend.Q8Block // the bytes of a block's codes
	if t == backend.Q4 {
		cb /= 2
	}
	scales = make([]uint16, n/backend.Q8Block)
	for blk := range scales {
		at := plan.CodesByte(t, blk)
		codes = append(codes, img[at:at+cb]...)
		p := plan.ScaleByte(t, blk)
		scales[blk] = uint16(img[p]) | uint16(img[p+1])<<8
	}
	return codes, scales, nil
}
