//go:build arm64 && !purego

package cpu

// checkArchLoops checks FEAT_BF16's BFCVTN narrowing where HWCAP2
// reports it and, on a wrong answer, turns it off: the integer NEON loop
// narrows instead.
func checkArchLoops() []string {
	if !hasBF16 {
		return nil
	}
	if err := checkNarrowBF16("BFCVTN narrowing", narrowBF16CVT); err != nil {
		hasBF16 = false
		return []string{"BFCVTN off (failed its known-answer check: " + err.Error() + ")"}
	}
	return nil
}
