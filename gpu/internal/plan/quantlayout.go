package plan

import (
	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file lays out the quantized dtypes (backend.Q8, backend.FP8,
// backend.Q4) in a buffer's bytes, as the kernels read them (shaders.Q8,
// shaders.FP8, shaders.Q4), and cuts their windows. It has no cgo so its
// tests run everywhere.
//
// FP8: one byte an element, element i at byte i (four to a u32, little
// endian). Q8: superblocks of Q8Super = 256 elements (8 q8_0 blocks of
// 32), q8SuperBytes = 272 bytes each: the 256 int8 values in order, then
// the 8 float16 scales of its blocks in order (block c's at byte
// 256 + 2c). So a q8 buffer of n values takes ⌈n/256⌉·272 bytes, q8_0's
// 34 bytes a block, every superblock starts on 16 bytes (the kernels
// load a vec4<u32> of codes or of scales at once) and a range of whole
// blocks is whole words of codes, its scales half-words.
//
// Q4: superblocks of 256 elements too, q4SuperBytes = 144 bytes each:
// the 16 bytes of codes of each of its 8 q4_0 blocks in turn (block c's
// at byte 16c), as backend.QuantizeQ4 writes a block's — byte i holds
// element i's 4-bit code in its low nibble and element i+16's in its
// high one, ggml's order — then the 8 float16 scales as q8's (block c's
// at byte 128 + 2c). So a q4 buffer of n values takes ⌈n/256⌉·144
// bytes, q4_0's 18 bytes a block, a block's codes are one aligned
// 16-byte load, and a range of whole blocks is whole words of codes,
// its scales half-words, as q8's.
//
// A q8 or q4 block blk's codes start at byte CodesByte(t, blk) and its
// scale is at ScaleByte(t, blk):
//
//	CodesByte = blk/8·super + (blk mod 8)·cb    (cb: 32 q8, 16 q4)
//	ScaleByte = blk/8·super + 8·cb + 2·(blk mod 8)

const (
	Q8Super      = shaders.Q8Super // elements a q8 or q4 superblock
	q8SuperBytes = shaders.Q8SuperWords * 4
	q4SuperBytes = shaders.Q4SuperWords * 4
)

// superBytes is the bytes a superblock of the blocked dtype t (Q8, Q4)
// takes.
func superBytes(t backend.DType) int {
	if t == backend.Q4 {
		return q4SuperBytes
	}
	return q8SuperBytes
}

// blockCodeBytes is the bytes of codes a block of the blocked dtype t
// (Q8, Q4) takes.
func blockCodeBytes(t backend.DType) int {
	if t == backend.Q4 {
		return backend.Q8Block / 2
	}
	return backend.Q8Block
}

// QuantBytes is the bytes n elements of the quantized dtype t take,
// before Alloc's padding to 16.
func QuantBytes(t backend.DType, n int) uint64 {
	if t.Block() > 1 {
		return uint64((n+Q8Super-1)/Q8Super) * uint64(superBytes(t))
	}
	return uint64(n)
}

// Q8CodeByte is the byte of element e's int8 value in a q8 buffer.
func Q8CodeByte(e int) int { return e/Q8Super*q8SuperBytes + e%Q8Super }

// CodesByte is the first byte of block blk's codes in a buffer of the
// blocked dtype t (Q8, Q4).
func CodesByte(t backend.DType, blk int) int {
	const per = Q8Super / backend.Q8Block
	return blk/per*superBytes(t) + blk%per*blockCodeBytes(t)
}

// ScaleByte is the byte of block blk's float16 scale in a buffer of the
// blocked dtype t (Q8, Q4).
func ScaleByte(t backend.DType, blk int) int {
	const per = Q8Super / backend.Q8Block
	return blk/per*superBytes(t) + per*blockCodeBytes(t) + blk%per*2
}

// QuantWin is a binding's window of a quantized buffer: it starts at
// element Start, byte StartByte (on the offset alignment and 16 bytes,
// for Q8 and Q4 on a superblock), and holds Bytes bytes.
type QuantWin struct {
	Start, StartByte, Bytes int
}

// QuantWindow is the window of a quantized buffer of dtype t and size
// bufBytes that holds elements [lo, hi), its start aligned to alignBytes
// (a power of two) and 16, its end rounded up to 16 bytes.
func QuantWindow(t backend.DType, lo, hi, alignBytes, bufBytes int) QuantWin {
	a := max(alignBytes, 16)
	hi = max(hi, lo+1)
	var w QuantWin
	end := 0
	if t.Block() > 1 {
		// A superblock is 17·16 bytes (q8) or 9·16 (q4): one starts on a
		// multiple of a bytes when its index is a multiple of a/16.
		per := a / 16
		sb := lo / Q8Super / per * per
		w.Start, w.StartByte = sb*Q8Super, sb*superBytes(t)
		end = (hi + Q8Super - 1) / Q8Super * superBytes(t)
	} else {
		w.Start = lo / a * a
		w.StartByte = w.Start
		end = (hi + 15) &^ 15
	}
	w.Bytes = max(min(end, bufBytes)-w.StartByte, min(16, bufBytes-w.StartByte))
	return w
}

// QuantSlack is the most bytes QuantWindow adds to a span's own bytes:
// its start's alignment and its end's rounding.
func QuantSlack(t backend.DType, alignBytes int) int {
	a := max(alignBytes, 16)
	if t.Block() > 1 {
		return (a/16)*superBytes(t) + superBytes(t)
	}
	return a + 16
}

// QuantElems is how many elements of the quantized dtype t bytes bytes
// hold.
func QuantElems(t backend.DType, bytes int) int {
	if t.Block() > 1 {
		return bytes / superBytes(t) * Q8Super
	}
	return bytes
}

// PackQuant stores the codes of elements [off, off+n) (and for q8 and
// q4 the scales of their blocks, off and n whole blocks) into img, the
// buffer's bytes from byte base, and returns the byte ranges of img they
// cover, in order: those a write must store and no other. codes are
// the elements' bytes as backend.EncodeFP8s and QuantizeQ8 write them
// (n of them) or as QuantizeQ4 does (n/2, 16 a block).
func PackQuant(t backend.DType, img []byte, base, off int, codes []byte, scales []uint16) [][2]int {
	if t == backend.FP8 {
		copy(img[off-base:], codes)
		return [][2]int{{off - base, off - base + len(codes)}}
	}
	var spans [][2]int
	add := func(lo, hi int) {
		if n := len(spans); n > 0 && spans[n-1][1] == lo {
			spans[n-1][1] = hi
			return
		}
		spans = append(spans, [2]int{lo, hi})
	}
	cb := blockCodeBytes(t)
	first := off / backend.Q8Block
	end := first + len(codes)/cb
	for b0 := first; b0 < end; {
		// The run of blocks of one superblock: their codes, then their
		// scales, each contiguous.
		const per = Q8Super / backend.Q8Block
		b1 := min(end, (b0/per+1)*per)
		at := CodesByte(t, b0) - base
		copy(img[at:at+(b1-b0)*cb], codes[(b0-first)*cb:(b1-first)*cb])
		add(at, at+(b1-b0)*cb)
		sat := ScaleByte(t, b0) - base
		for b := b0; b < b1; b++ {
			s := scales[b-first]
			p := ScaleByte(t, b) - base
			img[p], img[p+1] = byte(s), byte(s>>8)
		}
		add(sat, sat+2*(b1-b0))
		b0 = b1
	}
	return spans
}

// UnpackQuant widens elements [off, off+len(dst)) of a quantized buffer
// of dtype t from img, its bytes from byte base (q8, q4: off and
// len(dst) whole blocks), exactly.
func UnpackQuant(t backend.DType, dst []float32, img []byte, base, off int) {
	if t == backend.FP8 {
		for i := range dst {
			dst[i] = backend.DecodeFP8(img[off+i-base])
		}
		return
	}
	var codes [backend.Q8Block]int8
	var scale [1]uint16
	cb := blockCodeBytes(t)
	for i := 0; i < len(dst); i += backend.Q8Block {
		blk := (off + i) / backend.Q8Block
		at := CodesByte(t, blk) - base
		p := ScaleByte(t, blk) - base
		scale[0] = uint16(img[p]) | uint16(img[p+1])<<8
		out := dst[i : i+backend.Q8Block]
		if t == backend.Q4 {
			backend.DequantizeQ4(out, img[at:at+cb], scale[:])
			continue
		}
		for c := range codes {
			codes[c] = int8(img[at+c])
		}
		backend.DequantizeQ8(out, codes[:], scale[:])
	}
}

// QuantSpan is the bytes [lo, hi) of a quantized buffer of dtype t that
// hold elements [off, off+n) (q8, q4: whole blocks, their codes and
// scales).
func QuantSpan(t backend.DType, off, n int) (lo, hi int) {
	if t == backend.FP8 {
		return off, off + n
	}
	first, last := off/backend.Q8Block, (off+n-1)/backend.Q8Block
	lo = CodesByte(t, first)
	return lo, max(CodesByte(t, last)+blockCodeBytes(t), ScaleByte(t, last)+2)
}
