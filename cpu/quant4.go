package cpu

import (
	"encoding/binary"
	"unsafe"

	"github.com/attn-go/attn/backend"
)

// A Q4 store (backend.Q4) holds its codes two a byte in q4 (ggml's order
// within each block of backend.Q8Block values: byte i of a block holds
// element i low and element i+16 high) and one float16 scale a block in
// sc, as q8's. Where the q8 integer kernels run (AVX512-VNNI, AVX2; not
// AMX's tiles), their q4 forms read a decoding tile's codes where they lie
// (dotQ4, axpyQ4: the nibbles unpacked in registers), with the bits the
// q8 kernels give over the widened values. Elsewhere, and for the keys
// they leave (a tile's last keys past a multiple of 16, pages of fewer
// than decodeRun keys), the decoding kernels read q4 as q8: kvRaw widens
// a tile's codes into int8 values (code − 8) in scratch, beside the
// blocks' own scales, and the q8 kernels of every class (integer, AMX,
// widening, Go) take it from there, the widened tile written and read in
// the L1. The stored rows are read once from memory, at 18 bytes for 32
// values. Elsewhere (the Gemms' tiles, Read, copies) a q4 row is widened
// to float32 (widenAt).

// q4Rows is kvRaw for a Q4 store: keys j0 … j0+n−1 of KV head kvh of
// batch b (cols wide, whole blocks), widened into the q8 scratch q
// (q8's values, and their scales where the rows do not lie end to end)
// at a stride of cols, and their rawRows, of dtype Q8. As it widens each
// row it prefetches the row n keys on, where that row lies in the same
// run: decodeTile takes a q4 tile q4Chunk keys at a time, so the next
// chunk's codes arrive while the kernels work on these.
func q4Rows(s store, r backend.Rows, b, kvh, j0, n, cols int, q store) rawRows {
	out := rawRows{store: store{t: backend.Q8}, stride: cols}
	nb := cols / backend.Q8Block
	codes, scales := q.q8[:n*cols], q.sc[:n*nb]
	pf := 0 // bytes from a row's codes to those n rows on
	if r.Run(j0) >= 2*n && (r.Pages == nil || r.Pages.PageSize > 1) {
		pf = n * r.Row / 2
	}
	if r.Run(j0) >= n && r.Row == cols {
		// The rows lie end to end: one run, whose scales the kernels
		// read in place.
		off := r.Offset(b, kvh, j0)
		widenQ4(codes, s.q4[off/2:(off+n*cols)/2], pf)
		scales = s.sc[off/backend.Q8Block : (off+n*cols)/backend.Q8Block]
	} else {
		eachRow(r, b, kvh, j0, n, func(j, off int) {
			widenQ4(codes[j*cols:(j+1)*cols], s.q4[off/2:(off+cols)/2], pf)
			copy(scales[j*nb:(j+1)*nb], s.sc[off/backend.Q8Block:])
		})
	}
	out.q8, out.sc = codes, scales
	return out
}

// q4InPlace is keys j0 … j0+n−1 of KV head kvh of batch b of a q4 store
// s (cols wide, whole blocks) as stored, where they lie at one stride:
// their codes and scales in place, for the kernels that read the codes
// two a byte (dotQ4), with the next page's offset where a paged cache's
// is known, as kvRaw gives; ok is false where they do not lie so.
func q4InPlace(s store, r backend.Rows, b, kvh, j0, n, cols int) (out rawRows, ok bool) {
	if n <= 0 || r.Run(j0) < n {
		return rawRows{}, false
	}
	off := r.Offset(b, kvh, j0)
	end := off + (n-1)*r.Row + cols
	out = rawRows{store: store{t: backend.Q4, q4: s.q4[off/2 : end/2], sc: s.sc[off/backend.Q8Block : end/backend.Q8Block]}, stride: r.Row}
	if pg := r.Pages; pg != nil && (j0+n)/pg.PageSize < pg.PerSeq && pg.Table[b*pg.PerSeq+(j0+n)/pg.PageSize] >= 0 {
		out.next, out.hasNext = r.Offset(b, kvh, j0+n)-off, true
	}
	return out, true
}

// decodeMaxGroups is the most groups of four rows whose q4 P·V a
// decoding tile takes in place (decodeAxpy); an item of more rows widens
// V for the q8 kernels.
const decodeMaxGroups = 64

// noDotQ4 keeps a q4 K and V off the kernels that read their codes in
// place (dotQ4, axpyQ4), widened for the q8 kernels: tests and
// benchmarks compare the two.
var noDotQ4 bool

// q4Chunk is the most keys of a q4 K or V that decodeTile widens at
// once: their widened rows stay in the L1 (128 keys of D = 128 are 16
// KiB), and each chunk's prefetches fetch the next one's codes while the
// kernels run.
const q4Chunk = 128

// widenQ4 writes q4 codes (two a byte, len(dst)/2 bytes, whole blocks)
// as q8's values, code − 8 (backend.Q4ToQ8): on the vector kernels where
// the CPU has them (prefetching the codes pf bytes on, none when pf is
// 0), else eight bytes at a time in Go.
func widenQ4(dst []int8, codes []uint8, pf int) {
	done := widenQ4Vec(dst, codes, pf)
	widenQ4Go(dst[2*done:], codes[done:])
}

// widenQ4Go is widenQ4 in Go, eight codes' bytes a word: a byte's low
// nibbles go to the block's first half, its high ones to its second,
// and each nibble x becomes x − 8 as a byte, x^8 with the upper bits
// set where x < 8 (no carry crosses a byte).
func widenQ4Go(dst []int8, codes []uint8) {
	const half = backend.Q8Block / 2
	const lo4 = 0x0f0f0f0f0f0f0f0f
	out := unsafeBytes(dst)
	for blk := 0; blk*half < len(codes); blk++ {
		c := codes[blk*half : (blk+1)*half]
		o := out[blk*backend.Q8Block : (blk+1)*backend.Q8Block]
		for i := 0; i < half; i += 8 {
			w := binary.LittleEndian.Uint64(c[i:])
			binary.LittleEndian.PutUint64(o[i:], nibbleToInt8(w&lo4))
			binary.LittleEndian.PutUint64(o[half+i:], nibbleToInt8(w>>4&lo4))
		}
	}
}

// nibbleToInt8 maps each byte x ≤ 15 of w to the int8 x − 8.
func nibbleToInt8(w uint64) uint64 {
	const b8 = 0x0808080808080808
	neg := (^w & b8) >> 3 // 1 in each byte whose x < 8
	return w ^ b8 | neg*0xf0
}

// unsafeBytes is x's memory as bytes.
func unsafeBytes(x []int8) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}
