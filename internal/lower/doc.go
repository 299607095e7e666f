// Package lower runs, on a backend's own Fused, the problems its kernels
// do not take as they are: it rewrites them into ones they do, with
// scratch buffers and copies around them. A backend whose Fused claims
// Caps.Indices or Caps.Quant8 (q8 at any head dim) calls Fused here
// where backend.FusedParams.NeedsLowering says so; its kernels then get
// only the lowered problems. The types, their layouts and their
// validation stay in package backend.
//
// Padding. A problem whose q8 K or V has head dims that are not whole
// blocks (backend.DType.Pitch: the rows are stored at their pitch) runs
// as the padded problem whose D and Dv are the pitches
// (backend.Problem.Pitched): Q copied into a scratch buffer with zero
// columns past D (Copy, one range a row: PitchRanges), O computed into
// one with Dv's pitch and its first Dv columns copied out. The scale is
// the caller's (the default stays 1/√D, not 1/√pitch), and the zero
// columns add nothing to a score. The copies cost two passes over Q and
// O, small beside K and V when decoding.
//
// Index lists. A problem with backend.Indices becomes one of one-key
// pages, a sequence a query row (Indexed says how), whose block table
// names the row's visible keys: K and V are read in place.
//
// Either way the lowering runs through Ops: the backend's own ops, or a
// recording's, which records the copies too, the scratch released once
// they are recorded (backend.Recording keeps a released buffer until the
// work that uses it has run).
package lower
