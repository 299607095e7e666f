//go:build amd64 && !purego

package cpu

// archKernels names the vector loops this CPU runs, by family, for tests
// (TestKernelsExpected, ATTN_EXPECT_KERNELS): the widest each family
// takes, "Go" where it falls back to its Go loop. Info's Detail names
// the Sgemm kernel and the AMX paths; the loops follow from those.
func archKernels() map[string]string {
	width := func(wide, narrow bool) string {
		switch {
		case wide:
			return "AVX-512"
		case narrow:
			return "AVX2"
		}
		return "Go"
	}
	decode8 := map[int]string{1: "AVX-512", 0: "AVX2", -1: "Go"}[quantWidth()]
	return map[string]string{
		"exp":     width(hasAVX512, hasAVX2),
		"half":    width(hasAVX512, hasF16C),
		"decode":  width(hasAVX512, hasDecode()),
		"decode8": decode8,
	}
}

// loopsDetail is what Info's Detail adds of the vector loops: nothing on
// amd64, where the Sgemm kernel's name says which width they run at.
func loopsDetail() string { return "" }
