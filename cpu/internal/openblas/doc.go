// Package openblas is the cgo side of the CPU backend's -tags openblas
// build: OpenBLAS (Debian's libopenblas-dev) behind gonum's blas.Float32
// through gonum.org/v1/netlib. It is a package of its own because Go
// does not build a package that has both cgo and Go assembly, and the
// backend has assembly (its vector exp). Without the tag it is empty.
package openblas
