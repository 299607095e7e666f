// Command attn computes scaled dot-product attention on .npy files, walks
// through the illustrated-transformer example step by step, draws
// attention weights as heatmaps, lists the devices it can run on,
// benchmarks attention next to other implementations, tunes the GPU
// kernels on this host's adapter, and computes attention's gradients.
//
//	attn run -q Q.npy -k K.npy -v V.npy -o O.npy [options]
//	attn explain [-x X.npy -wq WQ.npy -wk WK.npy -wv WV.npy] [-scale S]
//	attn heatmap [-q Q.npy -k K.npy [-head b,h] | -x X.npy -wq WQ.npy -wk WK.npy] [-o attn-heatmap.png]
//	attn devices
//	attn bench [-n 256,...,16384] [-backend cpu,gpu] [-peers all] [-out DIR] [options]
//	attn grad -q Q.npy -k K.npy -v V.npy -do DO.npy -dq DQ.npy -dk DK.npy -dv DV.npy [options]
//	attn tune [-budget 3m] [-set decode,prefill] [-heads H,...] [-kvheads HKV,...] [-d D,...] [-dv DV,...] [-n N,...] [-nq Q,...] [-dtype f32,...]
//
// # Reading .npy files
//
// Q, K, V and the bias are float16, float32 or float64 ("<f2", "<f4",
// "<f8"); float16 is kept as float16 (-dtype says otherwise), float64 is
// narrowed to float32, the type attn computes in, and a finite value too
// large for float32 is reported rather than silently becoming ±Inf. Both
// byte orders are read ("<f4" and ">f4"). Fortran-order arrays are read
// and transposed to C order. A mask is bool, any integer type, float16,
// float32 or float64, nonzero meaning "keep". The ALiBi slopes and sink
// logits of run's -alibi and -sinks are float32 or float64 vectors [H],
// its key lengths (-kv-lens) an int32 or int64 vector [B], and so are
// its lists of packed sequences and paged caches: -cu-seqlens-q and
// -cu-seqlens-k vectors [B+1], -block-table a matrix [B, blocks],
// -cache-lens a vector [B]. Format versions 1.0, 2.0 and 3.0 are read.
//
// Before any data is read the header is checked against the file: its
// length, the dtype, no negative dimension, an element count that fits in
// an int, and exactly the number of data bytes the shape needs (a file
// with trailing bytes is rejected too, since it means the header and data
// disagree). So a corrupt header is reported without allocating what it
// claims. Outputs are little-endian C-order .npy files of the query's
// dtype (float32, or float16 for a float16 query; a bfloat16 output as
// the float32 values it holds), written atomically: to a temporary file in the same directory, synced, then
// renamed over the target. Inputs are opened read-only.
//
// # Memory
//
// Before reading any data, attn run estimates from the headers what the
// run holds at its peak: Q, K, V and the bias as float32 and the mask;
// where the backend's buffers live in host memory (the CPU backend, a
// software or integrated GPU) its copies of them, O, the LSE and, on the
// staged path, the B·H·Nq·Nk scores; and the outputs read back (O, the
// LSE, the weights, the scores). More than the memory available now
// (cpu.AvailableMemory: MemAvailable, lowered to the cgroup v2 headroom)
// is refused with an error wrapping backend.ErrTooLarge that gives both
// figures, rather than read until the kernel's OOM killer ends the
// process. attn devices gives the CPU backend's largest buffer as the
// memory available when it opened.
//
// # Exit status
//
// 0 on success, 1 when the command fails (bad input files, an output
// that cannot be created, inputs too large for the memory available, a
// failed computation), 2 for usage errors: an unknown command, flag or
// backend name, a missing required flag, an invalid flag value (a window
// side below −1, a softcap that is not finite and > 0, an unknown score
// stage), -weights, -scores or -heatmap with -strategy fused,
// -scores-stage without -scores, an image whose extension names no
// format, an output that would overwrite an input. Slopes, sinks or key
// lengths of the wrong type, count or value are bad input files (1): the
// message names the flag, the file, the value and the size it is checked
// against ("-kv-lens L.npy: key lengths: batch 1 has 9, want 0 … Nk=8"). attn run stopped by
// SIGINT or SIGTERM exits 130 or 143 (128 + the signal's number) with
// the message "interrupted". Every error is one line on stderr,
// "attn <command>: <message>", naming the user's files, never a
// temporary one.
//
// # explain
//
// explain reproduces the illustrated-transformer worked example with the
// tutorial's scale of 1. Any of its inputs can be replaced by a .npy file
// (-x, -wq, -wk, -wv) of at most 16×16, a limit checked from the header
// (explain prints every matrix, N×N·Dv weighted values among them); the
// scale stays 1 unless -scale is given. Its last
// section rounds the weights to tenths as the tutorial's figures do
// (keeping each row's sum, so 0.063, 0.468, 0.468 becomes 0.0, 0.5, 0.5)
// and shows the outputs those give next to the exact ones.
//
// # heatmap
//
// heatmap draws the weights softmax(scale·Q·Kᵀ) of one head with package
// heatmap: queries down the side with the first at the top, keys along
// the bottom, a colour bar from 0 to the largest weight (-max sets the
// top). Without inputs it draws the tutorial's example explain walks
// through, labelled "input 1" to "input 3" as explain names them; -x,
// -wq and -wk replace its matrices, and -q/-k give queries and keys
// directly (rank 3 and 4 with -head b,h). The scale is 1 for the
// tutorial and -x inputs, as in explain, and 1/√D for -q/-k, as in run.
// At most 512 queries and keys are drawn, a limit checked before anything
// is computed (for -q/-k from the headers, before any data is read); up
// to 12 the weights are printed too.
// run -heatmap P.png draws one head (-heatmap-head b,h) of the weights
// it computes, asking for them even without -weights.
//
// # bench
//
// bench sweeps N (and every combination of -batch, -heads, -kvheads, -d,
// -causal, -strategy and -backend) with package bench, and with -peers
// runs ONNX Runtime, llama.cpp's ggml, PyTorch and NumPy on the same inputs through the
// runners in bench/peers. -window, -softcap, -alibi (the standard slopes
// of H heads, bench.ALiBiSlopes) and -sinks (a zero sink logit per head)
// apply a variant to every point; GFLOP/s counts only the pairs a query
// may see, and every output names each point's variant. The peers run
// no variant: with one their points are reported unavailable rather than
// measured without it. It prints a table (progress goes to stderr: a
// bar on a terminal, a line per point otherwise) and writes
// results.json, results.csv, results.md and PNG charts to -out;
// -report redraws them from an earlier results.json. A GPU point
// records the device's own time, gpu_s, beside the wall time: the median
// of its timestamps around each op's passes (docs/gpu.md, Device time);
// none where the adapter has no timestamps, and the report's backend
// entry says why.
//
// # tune
//
// tune calls gpu.Tune: it sweeps the hardware plan's knobs
// (ATTN_GPU_TUNE's) on the adapter the gpu backend opens, at -set's
// default shapes or every combination of -heads, -kvheads, -d, -dv, -n,
// -nq and -dtype, checks every candidate against the CPU backend before
// timing it, stops within -budget and writes the winners to the tuning
// file ($ATTN_GPU_TUNE_FILE, else the user's cache directory, named for
// the adapter, driver, binding and kernels), which every later gpu
// backend on them reads, in attn's commands or in a program that
// requires attn, and attn devices lists (docs/gpu.md, attn tune). A bad
// shape is a usage error; q8 and q4 take any head dim, as a cache does.
//
// # Variants
//
// run's -causal-offset, -window, -softcap, -alibi, -sinks and -kv-lens
// set kernels.Options' fields of those names with the meaning
// backend.Variants gives them (-causal-offset implies -causal, where the
// library wants Causal set beside CausalOffset); -scores writes the pre-softmax scores at the stage -scores-stage
// names (backend.ScoreStage). Each is checked by backend's validation,
// the command adding the flag and file names to its errors: a flag's own
// value as it is parsed, the vectors' counts and values against H, B and
// Nk after their headers are checked and before Q, K and V are read.
//
// # Caches and sequences
//
// run's -past-k and -past-v are ONNX Attention's past_key and past_value
// in K's and V's layout and rank: the keys attention reads are
// kernels.ConcatSeq(past, K), which -present-k and -present-v write (in
// K's and V's dtype), and -causal puts query i at key position P + i.
// -cu-seqlens-q, -cu-seqlens-k and -block-table with -cache-lens set
// kernels.Options' CuSeqlensQ, CuSeqlensK, BlockTable and KVLens: packed
// [total, heads, dim] rows, page pools [pages, page_size, KVH, D]. The
// lists are read before Q, K and V (the shapes are checked against them,
// kernels.Shapes naming each by its flag and file), such calls run fused
// only, and a pool is checked for NaN only in the rows the table names
// below each cache length: the rest is never read.
//
// # Outputs
//
// -o, -weights, -scores, -lse, -heatmap, -present-k and -present-v each go to a temporary file first
// (mode 0644), created in the target's directory (so that the rename is
// atomic) before any input data is read: a missing directory, a target
// that is a directory or a device, or a directory attn cannot write in
// fails before any work. No target is replaced until every one of them
// is written and synced, and a failure or a signal removes the temporary
// files. The image of
// attn heatmap -o is written the same way. The weights and the scores
// have the query's dtype (as O has; float16 for a float16 query, as
// ONNX's qk_matmul_output), the log-sum-exp is float32, and all three
// have the query's rank: [Nq, Nk] and [Nq] for rank-2
// inputs, [H, Nq, Nk] and [H, Nq] for rank 3, [B, H, Nq, Nk] and
// [B, H, Nq] for rank 4; for packed sequences the LSE is [H, total].
package main
