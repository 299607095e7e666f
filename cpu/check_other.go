//go:build (!amd64 && !arm64) || purego

package cpu

// checkArchLoops has nothing to check: the loops are Go's.
func checkArchLoops() []string { return nil }
