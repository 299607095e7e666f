//go:build (!arm64 && !amd64) || purego

package cpu

// archKernels names the vector loops this CPU runs, by family, beside
// the Sgemm kernel: without vector loops there is nothing to name.
func archKernels() map[string]string { return nil }

// loopsDetail is what Info's Detail adds of the vector loops: nothing
// here.
func loopsDetail() string { return "" }
