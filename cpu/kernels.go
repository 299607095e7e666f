package cpu

// x86Width names the widest of an amd64 loop family that runs:
// "AVX-512" (its sixteen-lane loops), "AVX2" (eight lanes) or "Go".
// archKernels and the tests' expectations from /proc/cpuinfo both name
// them so.
func x86Width(wide, narrow bool) string {
	switch {
	case wide:
		return "AVX-512"
	case narrow:
		return "AVX2"
	}
	return "Go"
}
