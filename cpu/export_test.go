package cpu

// SetDecodeIdx turns the indirect decoding kernels (hasDecodeIdx) on or
// off, for a benchmark that compares them with the gather, and returns
// the function that restores the setting.
func SetDecodeIdx(on bool) (restore func()) {
	was := decodeIdx
	decodeIdx = on
	return func() { decodeIdx = was }
}
