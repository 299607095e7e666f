//go:build amd64 && !purego

package cpu

// checkArchLoops checks the softmax's bfloat16 loop where the CPU has
// AVX512_BF16 (its VCVTNEPS2BF16 rounds the weights of the bfloat16
// arithmetic path; softmaxRowsAVX512 shares its exponential and
// rounding) and, on a wrong answer, turns the loop off: the Go loop and
// narrow round the same weights instead.
func checkArchLoops() []string {
	if !hasBF16 {
		return nil
	}
	if err := checkExpBF16("AVX512_BF16 softmax loop", expShiftBF16AVX512); err != nil {
		hasBF16 = false
		return []string{"bfloat16 softmax loop off (failed its known-answer check: " + err.Error() + ")"}
	}
	return nil
}
