// Package magnitude tests whether float32 values are all below a bound in
// magnitude, by their bits: the fast path of the checks every value of an
// input passes (no NaN or infinity, nothing a half dtype cannot hold),
// which then look for the offending value only where this says there is
// one.
//
// For float32 bits, magnitudes order as their low 31 bits do, +Inf's bits
// (0x7f800000) lie above every finite magnitude's and NaN's above +Inf's;
// so |x| < bound is a comparison of integers, with NaN counted as large.
package magnitude

import "unsafe"

// Below reports whether the magnitude bits of every value of src,
// math.Float32bits(x) &^ (1 << 31), are below lim; lim is at most +Inf's
// bits, 0x7f800000, so an infinity or a NaN is never below it. An empty
// src is below any bound.
//
// It tests two values in one 64-bit word without a branch (SWAR): a
// magnitude a < 2³¹ is at least lim exactly when a + (2³¹ − lim) sets bit
// 31, and that sum stays below 2³² so it never carries into the other
// value's half; the sums of a run are or-ed together and bit 31 of each
// half read once at the end.
func Below(src []float32, lim uint32) bool {
	if len(src) == 0 {
		return true
	}
	// The same memory as uint32s (same size and layout): two adjacent
	// uint32s combined into a uint64 compile to one 64-bit load, where
	// math.Float32bits would go through a float register.
	u := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(src))), len(src))
	const mask = 0x7fffffff_7fffffff
	c := uint64(1<<31 - lim)
	c |= c << 32
	var a0, a1 uint64
	i := 0
	for ; i+4 <= len(u); i += 4 {
		s := u[i : i+4 : i+4]
		a0 |= (uint64(s[0])|uint64(s[1])<<32)&mask + c
		a1 |= (uint64(s[2])|uint64(s[3])<<32)&mask + c
	}
	for ; i < len(u); i++ {
		a0 |= uint64(u[i])&mask + c
	}
	return (a0|a1)&0x80000000_80000000 == 0
}
