//go:build cgo && !nogpu

package gpu

import (
	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
)

// QuantStored reads an 8-bit buffer's bytes as they are: each element's
// code (an fp8 byte, a q8 int8's bits) and, for q8, each block's
// float16 scale, so that tests compare bytes, not widened values.
func QuantStored(b *Backend, buf backend.Buffer) (codes []byte, scales []uint16, err error) {
	x, err := b.lockRange("read", "src", buf, 0, 0)
	if err != nil {
		return nil, nil, err
	}
	defer b.mu.Unlock()
	words := make([]uint32, x.bytes/4)
	if err := b.readWords(words, x, 0); err != nil {
		return nil, nil, err
	}
	img := make([]byte, 4*len(words))
	for i, w := range words {
		img[4*i], img[4*i+1], img[4*i+2], img[4*i+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
	}
	codes = make([]byte, x.n)
	if x.dtype == backend.FP8 {
		copy(codes, img)
		return codes, nil, nil
	}
	scales = make([]uint16, x.n/backend.Q8Block)
	for e := range codes {
		codes[e] = img[plan.Q8CodeByte(e)]
	}
	for blk := range scales {
		p := plan.Q8ScaleByte(blk)
		scales[blk] = uint16(img[p]) | uint16(img[p+1])<<8
	}
	return codes, scales, nil
}
