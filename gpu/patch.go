//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"encoding/binary"
	"slices"
	"unsafe"

	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file stores a host write's bytes into a buffer whose words the
// write covers only in part: a half buffer's odd ends, an fp8 range's
// ends, a q8 or q4 scale word of two blocks of which one is written. The queue
// writes whole words only (WriteBuffer), so the bytes of such a word go
// through patch.wgsl, which merges them with the word where the device's
// earlier work left it. The merge is the device's, not a read back to the
// host: a readback waits, and a wait must not hold b.mu (a lock guards
// state, never a wait), so another goroutine's write of the word's other
// bytes (the row of another sequence of one page pool) could land between
// the read and the write and be lost. On the device every write's patch
// runs in the order the writes were made, whoever made them.

// patchWG is patch.wgsl's workgroup size: a write patches two words or
// a few (a range's ends; a q8 or q4 range's scale words), one workgroup's worth.
const (
	patchWG    = 64
	patchEntry = 3 // u32 words a table entry: word, mask, val
)

// patchTable is the most entries one dispatch's table holds: inlineVars
// bytes.
const patchTable = inlineVars / (4 * patchEntry)

// patchWord is the bytes of a word a write stores: mask's bytes of val.
type patchWord struct{ mask, val uint32 }

// writeSpans stores the bytes of img that spans cover (half-open byte
// ranges of img, in no order, none overlapping) into x from x's word
// base, where img's first byte is: the words a span covers whole by the
// queue (writeWords), the words it covers in part by patch.wgsl, in one
// submission made before writeSpans returns, so that a later write into
// the same words (whose WriteBuffer the queue runs before its next
// submission) lands after it. It waits for nothing. The caller holds
// b.mu and has flushed what steps recorded (lockRange).
func (b *Backend) writeSpans(x *buffer, base int, img []byte, spans [][2]int) error {
	patches := map[int]patchWord{}
	for _, sp := range spans {
		lo, hi := sp[0], sp[1]
		if lo >= hi {
			continue
		}
		if a, z := (lo+3)/4, hi/4; a < z {
			words := unsafe.Slice((*uint32)(unsafe.Pointer(&img[4*a])), z-a)
			if err := b.writeWords(x.buf, x.word(base+a), words); err != nil {
				return err
			}
		}
		for _, w := range []int{lo / 4, (hi - 1) / 4} {
			if w*4 >= lo && w*4+4 <= hi {
				continue // whole
			}
			var m uint32
			for c := range 4 {
				if p := 4*w + c; p >= lo && p < hi {
					m |= 0xff << (8 * c)
				}
			}
			p := patches[w]
			p.mask |= m
			p.val = p.val&^m | binary.LittleEndian.Uint32(img[4*w:])&m
			patches[w] = p
		}
	}
	if len(patches) == 0 {
		return nil
	}
	ws := make([]int, 0, len(patches))
	for w := range patches {
		ws = append(ws, w)
	}
	slices.Sort(ws)
	pipe, err := b.pipeline(shaders.PatchConsts{WG: patchWG}, "main")
	if err != nil {
		return err
	}
	alignBytes := max(int(b.lim.MinStorageBufferOffsetAlignment), 4)
	maxBind := int(b.lim.MaxStorageBufferBindingSize)
	var ds []*dispatch
	for i := 0; i < len(ws); {
		// The entries whose words one window of o holds: the whole
		// buffer where one binding holds it, so that the writes of a
		// decoding loop bind alike and find their bind group again
		// (groups.go); else from the aligned byte at or below the first.
		start, end := x.off, x.off+int(x.bytes)
		if int(x.bytes) > maxBind {
			start = (x.off + 4*(base+ws[i])) / alignBytes * alignBytes
		}
		j := i + 1
		for j < len(ws) && j-i < patchTable && x.off+4*(base+ws[j])+4-start <= maxBind {
			j++
		}
		if int(x.bytes) > maxBind {
			end = x.off + 4*(base+ws[j-1]) + 4
		}
		table := make([]uint32, 0, patchEntry*(j-i))
		for _, w := range ws[i:j] {
			p := patches[w]
			table = append(table, uint32((x.off+4*(base+w)-start)/4), p.mask, p.val)
		}
		d := newDispatch(pipe)
		d.bind("o", x.buf, start, min(max(end-start, 16), x.off+int(x.bytes)-start))
		d.vars = table
		d.setParams(shaders.PatchParams{N: uint32(j - i)})
		d.grid = [3]int{(j - i + patchWG - 1) / patchWG, 1, 1}
		d.cost = float64(j - i)
		ds = append(ds, d)
		i = j
	}
	for _, d := range ds {
		if d.err != nil {
			return d.err
		}
	}
	if err := b.record(nil, ds, float64(len(ws))); err != nil {
		return err
	}
	return b.flush()
}
