package cpu

// ints8 is what the integer q8 P·V kernel keeps for a decoding item in
// tiles8 (decode_int_amd64.go): a chunk's digits and factors.
type ints8 struct {
	wd []int32     // the digits: 4 rows × 32 pairs × 8 blocks
	gs [32]float32 // their factors, 8r + b
}
