// Package bench measures attention on a backend over a sweep of sequence
// lengths and strategies: a warm-up run, then timed runs until a time
// budget (and at least a minimum count), reported as median, min and max
// with GFLOP/s.
//
// Only the device work is timed (the ops and Sync); inputs are uploaded
// once per point. FLOPs count 2·D + 2·Dv per attended query-key pair, so a
// causal sweep reports the rate of the work that has to be done, not of
// the masked half.
package bench
