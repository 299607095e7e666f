package main

import (
	"bytes"
	"testing"
)

// The encodings GNU as (2.x) gives for vdpbf16ps with these registers
// (AT&T order: src2, src1, dst), registers chosen to set and clear each
// of the prefix's inverted bits.
func TestVDPBF16PSEncoding(t *testing.T) {
	for _, tc := range []struct {
		src2, src1, dst int
		want            []byte
	}{
		{16, 18, 0, []byte{0x62, 0xb2, 0x6e, 0x40, 0x52, 0xc0}},
		{17, 18, 1, []byte{0x62, 0xb2, 0x6e, 0x40, 0x52, 0xc9}},
		{3, 29, 27, []byte{0x62, 0x62, 0x16, 0x40, 0x52, 0xdb}},
		{25, 7, 9, []byte{0x62, 0x12, 0x46, 0x48, 0x52, 0xc9}},
	} {
		if got := vdpbf16psEncoding(tc.src2, tc.src1, tc.dst); !bytes.Equal(got, tc.want) {
			t.Errorf("VDPBF16PS Z%d, Z%d, Z%d: % x, want % x", tc.src2, tc.src1, tc.dst, got, tc.want)
		}
	}
}
