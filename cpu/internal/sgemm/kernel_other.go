//go:build !(amd64 || arm64) || purego

package sgemm

// kernels is empty off amd64 and arm64 and under -tags purego: Sgemm is
// gonum's.
var kernels []*kernel
