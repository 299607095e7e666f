//go:build arm64 && !purego

package cpu

// archKernels names the vector loops this CPU runs, by family, for
// tests (ATTN_EXPECT_KERNELS) and the backend's Info: "Go" where a
// family falls back to its Go loop.
func archKernels() map[string]string {
	pick := func(ok bool, name string) string {
		if ok {
			return name
		}
		return "Go"
	}
	bf16 := "integer NEON"
	if hasBF16 {
		bf16 = "BFCVTN"
	}
	return map[string]string{
		"exp":        pick(hasNEON, "NEON"),
		"half":       pick(hasNEON, "NEON"),
		"bf16narrow": pick(hasNEON, bf16),
		"decode":     pick(hasDecode(), "NEON"),
		"decode8":    pick(quantWidth() >= 0, "NEON"),
	}
}

// loopsDetail is what Info's Detail says of the vector loops.
func loopsDetail() string {
	k := archKernels()
	if k["exp"] == "Go" {
		return ""
	}
	return ", NEON loops for the softmax's exp, the decoding kernels (f32, f16, bf16, q8 and fp8) and the f16/bf16 conversions (bfloat16 narrowing by " + k["bf16narrow"] + ")"
}
