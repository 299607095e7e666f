//go:build amd64 && !purego

package cpu

// archKernels names the vector loops this CPU runs, by family, for tests
// (TestKernelsExpected, ATTN_EXPECT_KERNELS): the widest each family
// takes, "Go" where it falls back to its Go loop. Info's Detail names
// the Sgemm kernel and the AMX paths; the loops follow from those.
func archKernels() map[string]string {
	return map[string]string{
		"exp":     x86Width(hasAVX512, hasAVX2),
		"half":    x86Width(hasAVX512, hasF16C),
		"decode":  x86Width(hasAVX512, hasDecode()),
		"decode8": x86Width(quantWidth() == 1, quantWidth() == 0),
	}
}

// loopsDetail is what Info's Detail adds of the vector loops: nothing on
// amd64, where the Sgemm kernel's name says which width they run at.
func loopsDetail() string { return "" }
