#!/usr/bin/python3
"""Peer runner for `attn bench -peers`: llama.cpp's attention kernel,
ggml_flash_attn_ext, from ggml's prebuilt shared libraries.

Impls: ggml-cpu (ggml's CPU backend, the library its registry would pick
for this CPU) and ggml-vulkan (ggml's Vulkan backend). One process
measures one point; the protocol is in README.md:

    /usr/bin/python3 ggml_peer.py --impl ggml-cpu --dir DIR --b B --h H
        --kvh KVH --n N --nq NQ --dtype f32|f16 --d D --causal 0|1
        --scale S --budget-s SEC --min-runs R --threads T
    /usr/bin/python3 ggml_peer.py --probe --impl ggml-vulkan

The libraries come from npm's @node-llama-cpp/linux-x64-vulkan (installed
by install.sh into node_modules; ATTN_GGML_LIBDIR names another directory
holding libggml-base.so, the backend libraries and the registry). No
headers ship with them: the C API below is taken from ggml's public
headers (ggml.h, ggml-backend.h, ggml-cpu.h), each function is bound by
name and a missing one makes the impl unavailable, and no field of a ggml
struct is read, so the runner does not depend on the layout of
ggml_tensor, which moves between versions. Only libggml-base.so of that
one directory is ever loaded: two copies of it in one process (the
CPU-only and the Vulkan packages share its soname) would each hold their
own registry.
"""

import ctypes
import glob
import os
import sys

from peer_common import answer, emit, save_output, serve, timed

IMPLS = ("ggml-cpu", "ggml-vulkan")
HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "@node-llama-cpp/linux-x64-vulkan"
LIBDIR = os.environ.get("ATTN_GGML_LIBDIR") or os.path.join(HERE, "node_modules", PACKAGE, "bins", "linux-x64-vulkan")

# enum ggml_type, enum ggml_prec, enum ggml_backend_dev_type (ggml.h,
# ggml-backend.h).
GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_Q4_0, GGML_TYPE_Q8_0 = 0, 1, 2, 8
QK8_0 = 32  # values a q8_0 (and a q4_0) block holds: one f16 scale and 32 int8 (q4_0: 32 nibbles)
# attn's quantized dtypes as ggml's types: (type, bytes a block of 32).
QUANTS = {"q8": (GGML_TYPE_Q8_0, 2 + QK8_0), "q4": (GGML_TYPE_Q4_0, 2 + QK8_0 // 2)}
GGML_PREC_F32 = 10
DEV_TYPES = {0: "CPU", 1: "GPU", 2: "IGPU", 3: "ACCEL"}

vp, sz, i64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64
cstr, cint, cf, cbool = ctypes.c_char_p, ctypes.c_int, ctypes.c_float, ctypes.c_bool


class InitParams(ctypes.Structure):
    """struct ggml_init_params, passed by value to ggml_init."""

    _fields_ = [("mem_size", sz), ("mem_buffer", vp), ("no_alloc", cbool)]


# name: (restype, argtypes), as ggml's headers declare them.
BASE_API = {
    "ggml_version": (cstr, []),
    "ggml_commit": (cstr, []),
    "ggml_init": (vp, [InitParams]),
    "ggml_free": (None, [vp]),
    "ggml_tensor_overhead": (sz, []),
    "ggml_graph_overhead": (sz, []),
    "ggml_new_tensor_4d": (vp, [vp, cint, i64, i64, i64, i64]),
    "ggml_view_4d": (vp, [vp, vp, i64, i64, i64, i64, sz, sz, sz, sz]),
    "ggml_row_size": (sz, [cint, i64]),
    "ggml_flash_attn_ext": (vp, [vp, vp, vp, vp, vp, cf, cf, cf]),
    "ggml_flash_attn_ext_set_prec": (None, [vp, cint]),
    "ggml_quantize_chunk": (sz, [cint, vp, vp, i64, i64, i64, vp]),
    "ggml_new_graph": (vp, [vp]),
    "ggml_build_forward_expand": (None, [vp, vp]),
    "ggml_nbytes": (sz, [vp]),
    "ggml_backend_alloc_ctx_tensors": (vp, [vp, vp]),
    "ggml_backend_buffer_free": (None, [vp]),
    "ggml_backend_tensor_set": (None, [vp, vp, sz, sz]),
    "ggml_backend_tensor_get": (None, [vp, vp, sz, sz]),
    "ggml_backend_graph_compute": (cint, [vp, vp]),
    "ggml_backend_supports_op": (cbool, [vp, vp]),
    "ggml_backend_free": (None, [vp]),
    "ggml_backend_reg_dev_count": (sz, [vp]),
    "ggml_backend_reg_dev_get": (vp, [vp, sz]),
    "ggml_backend_dev_description": (cstr, [vp]),
    "ggml_backend_dev_type": (cint, [vp]),
    "ggml_backend_dev_init": (vp, [vp, cstr]),
    "ggml_threadpool_params_init": (None, [vp, cint]),
}
REGISTRY_API = {"ggml_backend_load": (vp, [cstr])}
SCORE_API = {"ggml_backend_score": (cint, [])}
CPU_API = {
    "ggml_backend_cpu_set_n_threads": (None, [vp, cint]),
    "ggml_threadpool_new": (vp, [vp]),
    "ggml_threadpool_free": (None, [vp]),
    "ggml_backend_cpu_set_threadpool": (None, [vp, vp]),
}


class Unavailable(Exception):
    """The impl cannot run here; the message says why."""


def bind(path, api):
    """Open the library at path and bind api's functions on it, checking
    that it exports each."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise Unavailable(f"cannot load {path}: {e}")
    missing = [name for name in api if not hasattr(lib, name)]
    if missing:
        raise Unavailable(f"{os.path.basename(path)} does not export {', '.join(missing)}: not the ggml API this runner was written for")
    for name, (res, args) in api.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


def library(pattern, what):
    paths = sorted(glob.glob(os.path.join(LIBDIR, pattern)))
    if not paths:
        raise Unavailable(f"no {what} ({pattern}) in {LIBDIR}: run bench/peers/install.sh (npm's {PACKAGE} is linux-x64 only)")
    return paths


def best_cpu_library():
    """The CPU backend library ggml's registry would load here: the one
    whose ggml_backend_score is highest (0: this CPU lacks its ISA)."""
    best, best_score = None, 0
    for path in library("libggml-cpu-*.so", "CPU backend library"):
        handle = bind(path, SCORE_API)
        s = handle.ggml_backend_score()
        if s > best_score:
            best, best_score = path, s
    if best is None:
        raise Unavailable("no ggml CPU library scores above 0 on this CPU")
    return best


class GGML:
    """ggml's libraries with one backend device opened for impl."""

    def __init__(self, impl):
        self.impl = impl
        # The registry library (libggml.so, or as node-llama-cpp names it
        # libggml.<gpu>.<version>.so) pulls in libggml-base.so through its
        # RUNPATH; binding base by its path afterwards finds that copy.
        registry = bind(library("libggml.*.so", "ggml registry library")[0], REGISTRY_API)
        self.base = bind(os.path.join(LIBDIR, "libggml-base.so"), BASE_API)
        self.cpu = None
        self.notes = []
        if impl == "ggml-cpu":
            path = best_cpu_library()
            self.cpu = bind(path, CPU_API)
            self.backend_lib = os.path.basename(path)
        else:
            path = library("libggml-vulkan.so", "Vulkan backend library")[0]
            self.backend_lib = "libggml-vulkan.so"
            # Mesa's disk cache of compiled shaders (lavapipe compiles
            # ggml's pipelines for 7-27 s on first use) goes beside the
            # runner, not into the user's home.
            os.environ.setdefault("MESA_SHADER_CACHE_DIR", os.path.join(HERE, ".cache", "mesa-shader-cache"))
            # ggml-vulkan multiplies in f16 wherever the device has f16
            # arithmetic, even with GGML_PREC_F32 (on lavapipe its answers
            # are 1e-3 to 9e-3 off, past the bench's tolerance). Its f32
            # path was no slower there; ATTN_GGML_VK_F16=1 keeps ggml's
            # default.
            if os.environ.get("ATTN_GGML_VK_F16") != "1":
                os.environ.setdefault("GGML_VK_DISABLE_F16", "1")
        reg = registry.ggml_backend_load(path.encode())
        if not reg:
            raise Unavailable(f"ggml_backend_load({os.path.basename(path)}) refused it: its score is 0 here (no Vulkan loader or device?)")
        n = self.base.ggml_backend_reg_dev_count(reg)
        if n == 0 and impl == "ggml-vulkan" and "GGML_VK_VISIBLE_DEVICES" not in os.environ:
            # ggml-vulkan leaves out CPU-type devices (lavapipe) unless
            # GGML_VK_VISIBLE_DEVICES names them. It found no other, so
            # every Vulkan device here is CPU-type: run again naming the
            # first, before any device state exists.
            os.environ["GGML_VK_VISIBLE_DEVICES"] = "0"
            os.execv(sys.executable, [sys.executable] + sys.argv)
        if n == 0:
            raise Unavailable(f"{self.backend_lib} has no device here")
        self.dev = self.base.ggml_backend_reg_dev_get(reg, 0)
        self.device = self.base.ggml_backend_dev_description(self.dev).decode(errors="replace")
        self.dev_type = DEV_TYPES.get(self.base.ggml_backend_dev_type(self.dev), "?")
        if impl == "ggml-vulkan":
            if "GGML_VK_VISIBLE_DEVICES" in os.environ:
                self.notes.append(f"GGML_VK_VISIBLE_DEVICES={os.environ['GGML_VK_VISIBLE_DEVICES']}")

    def version(self):
        b = self.base
        return f"ggml {b.ggml_version().decode()} ({b.ggml_commit().decode()}, {PACKAGE}), {self.backend_lib}, {self.device} ({self.dev_type})"


def version_of(impl):
    """(GGML, version) or raises Unavailable."""
    g = GGML(impl)
    return g, g.version()


def probe(impl):
    try:
        _, version = version_of(impl)
    except Unavailable as e:
        emit({"impl": impl, "version": "ggml (not loadable)", "available": False, "reason": str(e)})
        return
    emit({"impl": impl, "version": version, "available": True, "reason": "loadable"})


def arithmetic(g, kv_dtype, nq):
    """What ggml computes this point in, as its sources (ggml-cpu's ops.cpp,
    ggml-vulkan.cpp) and its answers say."""
    if g.impl == "ggml-vulkan":
        if "GGML_VK_DISABLE_F16" in os.environ:
            return "computes in f32 (GGML_VK_DISABLE_F16)"
        return "multiplies in f16 where the device has it, accumulates in f32 (GGML_PREC_F32)"
    if kv_dtype == "f32":
        return "computes in f32"
    if kv_dtype in QUANTS:
        return f"quantizes Q to q8_0 for K's {kv_dtype}_0 integer dot products, widens V to f32 and accumulates in f32"
    if nq == 1:
        return "rounds Q to f16 and accumulates V·p in f16 (one-row kernel)"
    return "accumulates in f32 in its tiled kernel (Nq of a whole query tile), else rounds Q to f16 and accumulates V·p in f16 (one-row kernel)"


def quantize(b, dtype, x):
    """x (float32, last axis a multiple of QK8_0) quantized to dtype's
    ggml type (q8_0, q4_0) by ggml itself: a uint8 array of ggml's
    blocks, row by row."""
    import numpy as np

    gtype, block_bytes = QUANTS[dtype]
    x = np.ascontiguousarray(x, dtype=np.float32)
    n_per_row = x.shape[-1]
    nrows = x.size // n_per_row
    out = np.empty(nrows * (n_per_row // QK8_0) * block_bytes, dtype=np.uint8)
    n = b.ggml_quantize_chunk(gtype, x.ctypes.data, out.ctypes.data, 0, nrows, n_per_row, None)
    if n != out.nbytes:
        raise ValueError(f"ggml_quantize_chunk wrote {n} bytes for {x.shape}, want {out.nbytes}")
    return out


def run_point(a):
    import numpy as np

    try:
        g, version = version_of(a.impl)
    except Unavailable as e:
        emit({"impl": a.impl, "version": "ggml", "error": str(e)})
        return

    def fail(msg):
        emit({"impl": a.impl, "version": version, "error": msg})

    if a.h % a.kvh != 0:
        fail(f"H={a.h} is not a multiple of KVH={a.kvh}")
        return
    if a.dtype not in ("f32", "f16", "q8", "q4"):
        fail(f"{a.impl} takes f32, f16, q8 and q4 (q8_0 and q4_0 K and V) here, not {a.dtype}: ggml stores no fp8 K or V")
        return
    if a.dtype in QUANTS and a.d % QK8_0 != 0:
        fail(f"{a.dtype}_0 K and V need a head dim that is a multiple of {QK8_0}, not {a.d}")
        return
    want_dtype = np.dtype("<f2" if a.dtype == "f16" else "<f4")

    def load(name, shape):
        x = np.load(os.path.join(a.dir, name))
        if x.dtype != want_dtype or x.shape[:3] != shape:
            raise ValueError(f"{name}: {x.dtype} {x.shape}, want {want_dtype} {shape + (a.d,)}")
        return np.ascontiguousarray(x)

    # Q is f32 in ggml (the f16 values widened exactly); K and V stay in
    # the point's dtype. ggml's dimension 0 is the fastest, so BHND
    # [B, H, N, D] arrays are its [D, N, H, B] tensors as they are.
    q = load("q.npy", (a.b, a.h, a.nq)).astype(np.float32)
    k = load("k.npy", (a.b, a.kvh, a.n))
    # With --v-from-k, V is a view of K's first DV columns (no v.npy), as
    # llama.cpp's DeepSeek graph takes V from its latent cache.
    v = None if a.v_from_k else load("v.npy", (a.b, a.kvh, a.n))
    dk, dv = q.shape[3], (a.v_from_k or v.shape[3])
    if dv > dk and a.v_from_k:
        raise ValueError(f"--v-from-k {dv}: K's head dim is {dk}")
    if k.shape[3] != dk:
        raise ValueError(f"k.npy head dim {k.shape[3]}, q.npy {dk}")
    kv_type = {"f16": GGML_TYPE_F16, "q8": GGML_TYPE_Q8_0, "q4": GGML_TYPE_Q4_0}.get(a.dtype, GGML_TYPE_F32)
    b = g.base
    if a.dtype in QUANTS:
        # K and V arrive as float32 (the values attn's q8 or q4 cache
        # stores, already rounded); ggml quantizes them to q8_0 or q4_0
        # by its own ggml_quantize_chunk, as llama.cpp does with -ctk
        # q8_0 -ctv q8_0, and the blocks must be the very bytes attn
        # stores (checked by the caller's test of the quantizer).
        k = quantize(b, a.dtype, k)
        v = None if v is None else quantize(b, a.dtype, v)
        notes_q8 = [f"K and V {a.dtype}_0, quantized by ggml_quantize_chunk"]
    else:
        notes_q8 = []
    notes = list(g.notes) + notes_q8
    mask = None
    if a.causal:
        # ggml has no causal flag: llama.cpp passes a KQ mask, f16
        # [Nq, N], -inf where key j > N - Nq + i (bottom-right aligned),
        # broadcast over heads and batches.
        mask = np.where(np.triu(np.ones((a.nq, a.n), dtype=bool), k=a.n - a.nq + 1), np.float16(-np.inf), np.float16(0))
        notes.append("causal: an f16 -inf mask of Nq x N, broadcast over heads")
    else:
        notes.append("no mask")
    if a.kvh < a.h:
        notes.append(f"GQA: ggml broadcasts each of {a.kvh} KV heads to {a.h // a.kvh} query heads")

    n_tensors = 6
    ctx = b.ggml_init(InitParams(n_tensors * b.ggml_tensor_overhead() + b.ggml_graph_overhead(), None, True))
    backend = threadpool = buf = None
    try:
        tq = b.ggml_new_tensor_4d(ctx, GGML_TYPE_F32, dk, a.nq, a.h, a.b)
        tk = b.ggml_new_tensor_4d(ctx, kv_type, dk, a.n, a.kvh, a.b)
        if a.v_from_k:
            row = b.ggml_row_size(kv_type, dk)
            tv = b.ggml_view_4d(ctx, tk, dv, a.n, a.kvh, a.b, row, row * a.n, row * a.n * a.kvh, 0)
            notes.append(f"V a view of K's first {dv} columns (ggml_view_4d), as llama.cpp's MLA")
        else:
            tv = b.ggml_new_tensor_4d(ctx, kv_type, dv, a.n, a.kvh, a.b)
        tm = b.ggml_new_tensor_4d(ctx, GGML_TYPE_F16, a.n, a.nq, 1, 1) if mask is not None else None
        out = b.ggml_flash_attn_ext(ctx, tq, tk, tv, tm, a.scale, 0.0, 0.0)
        # llama.cpp asks every flash-attention node for f32 precision.
        b.ggml_flash_attn_ext_set_prec(out, GGML_PREC_F32)
        graph = b.ggml_new_graph(ctx)
        b.ggml_build_forward_expand(graph, out)

        backend = b.ggml_backend_dev_init(g.dev, None)
        if not backend:
            fail(f"ggml_backend_dev_init({g.device}) failed")
            return
        if not b.ggml_backend_supports_op(backend, out):
            fail(f"{g.backend_lib} does not support FLASH_ATTN_EXT with Dk={dk} Dv={dv}, K/V {a.dtype}{'_0' if a.dtype in QUANTS else ''}, H={a.h} over {a.kvh} KV heads")
            return
        if g.cpu is not None:
            g.cpu.ggml_backend_cpu_set_n_threads(backend, a.threads)
            # A persistent pool, as llama.cpp keeps: no threads started
            # per call. struct ggml_threadpool_params is filled by ggml
            # itself (4 KiB is well above its size), never read here.
            params = ctypes.create_string_buffer(4096)
            b.ggml_threadpool_params_init(params, a.threads)
            threadpool = g.cpu.ggml_threadpool_new(params)
            if not threadpool:
                fail(f"ggml_threadpool_new({a.threads} threads) failed")
                return
            g.cpu.ggml_backend_cpu_set_threadpool(backend, threadpool)
            notes.append(f"{a.threads} threads, a persistent ggml threadpool")

        buf = b.ggml_backend_alloc_ctx_tensors(ctx, backend)
        if not buf:
            fail(f"{g.device}: could not allocate Q, K, V, mask and O ({(q.nbytes + k.nbytes + (0 if v is None else v.nbytes)) >> 20} MiB of inputs)")
            return
        for t, x in ((tq, q), (tk, k), (tv, v), (tm, mask)):
            if t is not None and x is not None:
                if b.ggml_nbytes(t) != x.nbytes:
                    raise ValueError(f"ggml tensor of {b.ggml_nbytes(t)} bytes for {x.shape} {x.dtype}")
                b.ggml_backend_tensor_set(t, x.ctypes.data, 0, x.nbytes)

        def attention():
            status = b.ggml_backend_graph_compute(backend, graph)
            if status != 0:
                raise RuntimeError(f"ggml_backend_graph_compute: status {status}")
            return status

        _, warmup, times = timed(attention, a.budget_s, a.min_runs)
        # The result is [Dv, H, Nq, B] in ggml's order: [B, Nq, H, Dv] here.
        o = np.empty((a.b, a.nq, a.h, dv), dtype=np.float32)
        if b.ggml_nbytes(out) != o.nbytes:
            raise ValueError(f"ggml output of {b.ggml_nbytes(out)} bytes, want {o.shape}")
        b.ggml_backend_tensor_get(out, o.ctypes.data, 0, o.nbytes)
    finally:
        if buf:
            b.ggml_backend_buffer_free(buf)
        if backend:
            b.ggml_backend_free(backend)
        if threadpool:
            g.cpu.ggml_threadpool_free(threadpool)
        b.ggml_free(ctx)

    save_output(a.dir, a.impl, o.transpose(0, 2, 1, 3))
    notes.append("GGML_PREC_F32, as llama.cpp sets")
    version += f"; {a.dtype + '_0' if a.dtype in QUANTS else a.dtype} K/V, {arithmetic(g, a.dtype, a.nq)}"
    answer(a.impl, version, warmup, times, notes)


def quant_file(dtype, src, dst):
    """Writes ggml's q8_0 or q4_0 blocks of the float32 .npy src (last
    axis a multiple of QK8_0) to dst as raw bytes: attn's test that its
    q8 and q4 rules give llama.cpp's very bytes (TestQuantMatchesGGML)."""
    import numpy as np

    g, _ = version_of("ggml-cpu")
    with open(dst, "wb") as f:
        f.write(quantize(g.base, dtype, np.load(src)).tobytes())


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] in ("q8_0", "q4_0"):
        quant_file(sys.argv[1][:2], sys.argv[2], sys.argv[3])
        sys.exit(0)
    serve("attn bench peer runner (ggml_flash_attn_ext)", IMPLS, "storage dtype of the inputs and of ggml's K and V: f32, f16, q8 or q4 (q8_0 or q4_0 K and V from f32 inputs)", probe, run_point)
