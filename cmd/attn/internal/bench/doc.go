// Package bench measures attention: attn on its backends and strategies,
// and other implementations (peers: ONNX Runtime, llama.cpp's ggml, PyTorch, NumPy) on the
// same inputs, over a sweep of sequence lengths and shapes. It is the
// harness behind `attn bench`.
//
// Run measures every point of a Config: for each shape, attn on each
// backend with each strategy, then each Peer, one after the other. A point
// gets a warm-up run, then timed runs until a budget (and a minimum
// count), and reports the median, the range and the quartiles of the run
// times, GFLOP/s (Flops), the bytes the strategy must move (Bytes), the
// peak RSS of the process that ran it, the device bytes attn allocated on
// a GPU and, on a backend.DeviceTimer (a GPU with timestamp queries), the
// device's own time beside the wall time (Point.GPUS, gpu_s), and the largest error of sampled output rows against the float64
// reference of backendtest. A point of the CPU backend names the
// matrix-multiply kernel it ran on (CPUKernel: AVX-512, AVX2, gonum's pure
// Go or OpenBLAS), which sets its speed more than anything else about the
// machine. Only the device work is timed; inputs are uploaded once per
// point. A point that cannot run is reported with a Status saying why,
// never dropped.
//
// A Config's Variant (a sliding window, softcap, ALiBi with the standard
// slopes of ALiBiSlopes, zero sinks) applies to every shape and is
// recorded on every point; Flops counts only the pairs a query may see by
// position. Peers run none of the variants: their points with one are
// unavailable, never measured without it.
//
// A Config's DTypes sweep the storage dtype of Q, K, V and O (float32,
// float16, bfloat16), each a curve of its own recorded on its points
// (Shape.DType): the inputs are rounded to the dtype and the reference
// computed on the rounded values, a half output is allowed its own
// rounding before a point is marked wrong, and BytesOf counts the stored
// bytes. A backend without Caps.Half, and every peer but ort-cpu-gqa,
// ggml-cpu and ggml-vulkan (which take float16, handed it as "<f2" .npy
// files; ggml keeps K and V in it), reports half points unavailable.
//
// A Config's Nqs sweep the query rows: Nq < N queries are the last Nq
// positions of N keys (bottom-right alignment, the backend's default, so
// a causal query i sees keys j ≤ N − Nq + i): decoding Nq new tokens over
// a cache of N keys. Every point records its nq (Shape.Nq; a report
// written before it was recorded has none and reads as Nq = N, which is
// also what the default sweep measures), its reference rows are sampled
// from its B·H·Nq query rows, and BytesOf counts Q and O of Nq rows and K
// and V of N keys and KVHeads heads in their storage dtype: a decoding
// step's traffic is mostly its K and V. Every point that ran records
// tokens_per_s, B·Nq over its median time. Peers without a cache of past
// keys (Peer.Decode false: all but ort-cpu-gqa, ONNX Runtime's
// GroupQueryAttention with a past KV cache, and llama.cpp's
// ggml_flash_attn_ext, ggml-cpu and ggml-vulkan) report such points
// unavailable.
//
// Config.Layers measures each attn point as a model's step of L layers
// as well: L calls over separate buffers, recorded with one wait on a
// backend.Recorder (the GPU's Step), each L a point carrying Layers.
//
// A decoding step is bound by memory, so its GB/s is read against the
// machine's: ReadBandwidth measures the read bandwidth (every thread
// summing a share of a buffer several times the last-level cache, the
// fastest of a few passes) and attn bench does so before and after each
// sweep (Config.Roof), which records it in the report (Machine.ReadGBPS,
// machine.read_gbps) and each point's fraction of it (ReadBWFrac,
// read_bw_frac; the table's "of BW") for the points whose buffers are in
// the host's memory: not a discrete GPU's.
//
// A point's GFLOP/s is read against a roofline. MeasureSgemm measures
// the compute ceiling, the CPU backend's own float32 Sgemm on every
// thread at once (cpu.SgemmRate), and attn bench probes it beside the
// bandwidth (Config.Roof), recording it in
// the report (Machine.SgemmGFLOPS, machine.sgemm_gflops). Every point
// that ran records its arithmetic intensity, Flops over Bytes (Intensity,
// intensity), and one on the host's CPU (the CPU backend, a CPU-type
// adapter such as lavapipe, a CPU peer) its fraction of
//
//	min(SgemmGFLOPS, Intensity × ReadGBPS)
//
// and the ceiling that sets it (RooflineFrac and Bound, roofline_frac and
// bound; the table's "of roof": 86% C, 42% M) when both ceilings were
// measured. A GPU's points get no roofline: an integrated GPU reads the
// host's memory (its ReadBWFrac is its fraction of that ceiling) but
// computes with its own units, and so does a GPU peer (Peer.GPU). The
// compute ceiling is float32's for every dtype, so an f16 or bf16 point
// may pass 1.
//
// Above the Sgemm's rate is the cores' own: MeasureFMA times independent
// chains of the widest vector FMA the CPU has on every thread
// (cpu.FMARate), recorded as Machine.FMAGFLOPS (machine.fma_gflops, with
// the loop in fma_kernel), and every point on the host's CPU records its
// fraction of it (FMAFrac, fma_frac; the table's "of FMA"): how much of
// the arithmetic the machine has the point uses, where "of roof" says
// how near it comes to the backend's own Sgemm. A -tags purego build has
// no FMA loop and records none.
//
// A sweep with attn's GPU backend reads its points against the GPU's
// own ceilings too: what WGSL reaches on the device through the binding
// (gpu.Backend.Ceilings, probed with the host's), a streaming read and
// fma chains in f32 and f16 (Machine.GPUReadGBPS, GPUFMAGFLOPS,
// GPUF16GFLOPS), each point's bytes and flops over its device time
// against them (GPUReadFrac, GPUFMAFrac; the table's "of GPU BW" and
// "of GPU FMA"). On lavapipe they are the host's CPU's.
//
// Another process only ever slows a probe of a ceiling down, never speeds
// it up, so one probe on a busy machine lowers the roof and puts points
// above it. A Roof (Config.Roof) probes the ceilings before the
// sweep and after it, on while a probe raises one, and Run reads every
// point against the best of each once the sweep is done
// (Machine.CeilingProbes records every probe). A point still above the
// roofline, the FMA peak or a GPU ceiling is measured again, and one that stays above
// carries a Flag saying by how much and what may explain it, which the
// table, CSV, JSON and Markdown print and the roofline chart rings.
//
// A backward point (Config.Backward) is checked as a forward one is:
// its gradients against backendtest.ReferenceGrad's on one KV group of
// one batch (all of it, or its last rows' dQ where that costs too much),
// and its bytes are those the backward reads and writes.
//
// A Report wraps the points with the machine (its CPU features
// included), the versions and the environment, and writes them as JSON
// (ReadReport reads it back, reports of earlier builds of the same
// schema included), CSV, Markdown tables and gonum/plot charts (GFLOP/s,
// with the interquartile range of the runs as error bars, and peak
// memory, against a log-scaled N; the roofline, GFLOP/s against
// intensity under both ceilings, log-log, where a point has a fraction
// of them), each naming the CPU kernel.
//
// Peers run in processes of their own, one per point, from the runners in
// bench/peers of a clone of attn; bench/peers/README.md has the protocol.
//
// The Go benchmarks of every backend (Scores, Softmax, Context, Staged,
// Fused, Attention) live here too, so that cpu and gpu run the same ones
// and report the same GFLOP/s for benchstat.
package bench
