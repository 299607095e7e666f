//go:build !(amd64 || arm64) || purego

package cpu

// A purego build computes in Go, whose compiler emits no vector FMA
// (and other architectures have no kernel here): there is no FMA peak to
// measure that would bound what this build runs.
var fmaPeak *fmaKernel

const noFMAReason = "no FMA kernel in this build (-tags purego, or neither amd64 nor arm64): its arithmetic is Go's scalar code"
