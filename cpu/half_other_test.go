//go:build !(amd64 || arm64) || purego

package cpu

// halfImpls are the Go loops and the dispatch, which is Go here too.
func halfImpls() []halfImpl { return []halfImpl{goImpl, dispatch} }
