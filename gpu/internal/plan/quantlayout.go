package plan

import (
	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/shaders"
)

// This file lays out the 8-bit dtypes (backend.Q8, backend.FP8) in a
// buffer's bytes, as the kernels read them (shaders.Q8, shaders.FP8), and
// cuts their windows. It has no cgo so its tests run everywhere.
//
// FP8: one byte an element, element i at byte i (four to a u32, little
// endian). Q8: superblocks of Q8Super = 256 elements (8 q8_0 blocks of
// 32), q8SuperBytes = 272 bytes each: the 256 int8 values in order, then
// the 8 float16 scales of its blocks in order (block c's at byte
// 256 + 2c). So a q8 buffer of n values takes ⌈n/256⌉·272 bytes, q8_0's
// 34 bytes a block, every superblock starts on 16 bytes (the kernels
// load a vec4<u32> of codes or of scales at once) and a range of whole
// blocks is whole words of codes, its scales half-words.

const (
	Q8Super      = shaders.Q8Super // elements a q8 superblock
	q8SuperBytes = shaders.Q8SuperWords * 4
)

// QuantBytes is the bytes n elements of the 8-bit dtype t take, before
// Alloc's padding to 16.
func QuantBytes(t backend.DType, n int) uint64 {
	if t == backend.Q8 {
		return uint64((n+Q8Super-1)/Q8Super) * q8SuperBytes
	}
	return uint64(n)
}

// Q8CodeByte is the byte of element e's int8 value in a q8 buffer.
func Q8CodeByte(e int) int { return e/Q8Super*q8SuperBytes + e%Q8Super }

// Q8ScaleByte is the byte of block blk's float16 scale in a q8 buffer.
func Q8ScaleByte(blk int) int {
	const per = Q8Super / backend.Q8Block
	return blk/per*q8SuperBytes + Q8Super + blk%per*2
}

// QuantWin is a binding's window of an 8-bit buffer: it starts at
// element Start, byte StartByte (on the offset alignment and 16 bytes,
// for Q8 on a superblock), and holds Bytes bytes.
type QuantWin struct {
	Start, StartByte, Bytes int
}

// QuantWindow is the window of an 8-bit buffer of dtype t and size
// bufBytes that holds elements [lo, hi), its start aligned to alignBytes
// (a power of two) and 16, its end rounded up to 16 bytes.
func QuantWindow(t backend.DType, lo, hi, alignBytes, bufBytes int) QuantWin {
	a := max(alignBytes, 16)
	hi = max(hi, lo+1)
	var w QuantWin
	end := 0
	if t == backend.Q8 {
		// A superblock is 17·16 bytes: one starts on a multiple of a
		// bytes when its index is a multiple of a/16.
		per := a / 16
		sb := lo / Q8Super / per * per
		w.Start, w.StartByte = sb*Q8Super, sb*q8SuperBytes
		end = (hi + Q8Super - 1) / Q8Super * q8SuperBytes
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
	if t == backend.Q8 {
		return (a/16)*q8SuperBytes + q8SuperBytes
	}
	return a + 16
}

// QuantElems is how many elements of the 8-bit dtype t bytes bytes hold.
func QuantElems(t backend.DType, bytes int) int {
	if t == backend.Q8 {
		return bytes / q8SuperBytes * Q8Super
	}
	return bytes
}

// PackQuant stores the codes of elements [off, off+len(codes)) (and for
// q8 the scales of their blocks, off and the length whole blocks) into
// img, the buffer's bytes from byte base, and returns the byte ranges of
// img they cover, in order: those a write must store and no other.
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
	end := off + len(codes)
	for e := off; e < end; {
		// The run of elements of one superblock.
		run := min(end, (e/Q8Super+1)*Q8Super) - e
		at := Q8CodeByte(e) - base
		copy(img[at:at+run], codes[e-off:e-off+run])
		add(at, at+run)
		b0, b1 := e/backend.Q8Block, (e+run)/backend.Q8Block
		sat := Q8ScaleByte(b0) - base
		for b := b0; b < b1; b++ {
			s := scales[b-off/backend.Q8Block]
			p := Q8ScaleByte(b) - base
			img[p], img[p+1] = byte(s), byte(s>>8)
		}
		add(sat, sat+2*(b1-b0))
		e += run
	}
	return spans
}

// UnpackQuant widens elements [off, off+len(dst)) of an 8-bit buffer of
// dtype t from img, its bytes from byte base (q8: off and len(dst) whole
// blocks), exactly.
func UnpackQuant(t backend.DType, dst []float32, img []byte, base, off int) {
	if t == backend.FP8 {
		for i := range dst {
			dst[i] = backend.DecodeFP8(img[off+i-base])
		}
		return
	}
	var codes [backend.Q8Block]int8
	var scale [1]uint16
	for i := 0; i < len(dst); i += backend.Q8Block {
		e := off + i
		at := Q8CodeByte(e) - base
		for c := range codes {
			codes[c] = int8(img[at+c])
		}
		p := Q8ScaleByte(e/backend.Q8Block) - base
		scale[0] = uint16(img[p]) | uint16(img[p+1])<<8
		backend.DequantizeQ8(dst[i:i+backend.Q8Block], codes[:], scale[:])
	}
}

// QuantSpan is the bytes [lo, hi) of an 8-bit buffer of dtype t that
// hold elements [off, off+n) (q8: whole blocks, their codes and scales).
func QuantSpan(t backend.DType, off, n int) (lo, hi int) {
	if t == backend.FP8 {
		return off, off + n
	}
	lo = Q8CodeByte(off)
	last := off + n - 1
	return lo, max(Q8CodeByte(last)+1, Q8ScaleByte(last/backend.Q8Block)+2)
}
