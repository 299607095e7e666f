#!/usr/bin/python3
"""Peer runner for `attn bench -peers`: PyTorch and NumPy attention.

Impls: torch-naive, torch-sdpa, numpy-naive. One process measures one
point; the protocol is in README.md:

    /usr/bin/python3 torch_peer.py --impl torch-sdpa --dir DIR --b B --h H
        --kvh KVH --n N --d D --causal 0|1 --scale S --budget-s SEC
        --min-runs R --threads T
    /usr/bin/python3 torch_peer.py --probe --impl torch-sdpa

The last line of stdout is one JSON object; O goes to DIR/o-<impl>.npy.
Run it with Debian's /usr/bin/python3 (python3-torch 1.13, python3-numpy).
"""

import math
import os

from peer_common import answer, emit, save_output, serve, timed

IMPLS = ("torch-naive", "torch-sdpa", "numpy-naive")


def _blas_paths():
    paths = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split()[-1]
                if p.startswith("/") and "blas" in os.path.basename(p).lower() and p not in paths:
                    paths.append(p)
    except OSError:
        pass
    return paths


def _openblas():
    """The loaded OpenBLAS as a ctypes library, or None."""
    import ctypes

    for p in _blas_paths():
        try:
            lib = ctypes.CDLL(p)
            lib.openblas_get_config
        except (OSError, AttributeError):
            continue
        lib.openblas_get_config.restype = ctypes.c_char_p
        return lib
    return None


def loaded_blas():
    """What the libblas.so.3 loaded in this process really is.

    Debian's numpy and torch link libblas.so.3, an alternative that is the
    slow reference BLAS unless libopenblas0-pthread (or another BLAS) is
    installed; numpy's own config cannot tell. Call after importing numpy
    or torch. Returns e.g. "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH
    NO_AFFINITY Cooperlake MAX_THREADS=64" (the kernel family follows
    OPENBLAS_CORETYPE) or "reference BLAS (...)".
    """
    lib = _openblas()
    if lib is not None:
        return lib.openblas_get_config().decode().strip()
    real = [os.path.realpath(p) for p in _blas_paths()]
    if not real:
        return "no BLAS library loaded"
    if any("/blas/libblas" in r for r in real):
        return f"reference BLAS {', '.join(real)} (apt-get install libopenblas0-pthread)"
    return ", ".join(real)


def set_blas_threads(n, notes):
    """Pin OpenBLAS to n threads (the parent's env vars should agree)."""
    lib = _openblas()
    if lib is None:
        notes.append(f"BLAS: {loaded_blas()}")
        return
    try:
        lib.openblas_set_num_threads(n)
        notes.append(f"openblas_set_num_threads({n}), now {lib.openblas_get_num_threads()}")
    except AttributeError:
        pass


def sdpa_fn(torch):
    """The fused-API entry point of this torch and its name, or (None, reason)."""
    f = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if f is not None:
        return f, "torch.nn.functional.scaled_dot_product_attention"
    f = getattr(torch.nn.functional, "_scaled_dot_product_attention", None)
    if f is not None:
        return f, "torch.nn.functional._scaled_dot_product_attention (private, 1.13; math kernel on CPU)"
    return None, f"torch {torch.__version__} has no scaled_dot_product_attention"


def version_of(impl):
    """(version string, None) or (partial version string, reason unavailable)."""
    if impl == "numpy-naive":
        try:
            import numpy as np
        except Exception as e:
            return "numpy (not importable)", f"import numpy: {e}"
        return f"numpy {np.__version__} naive, matmul by {loaded_blas()}", None
    try:
        import torch
    except Exception as e:
        return "torch (not importable)", f"import torch: {e}"
    if impl == "torch-naive":
        return f"torch {torch.__version__} naive matmul-softmax-matmul, CPU float32, {loaded_blas()}", None
    f, name = sdpa_fn(torch)
    if f is None:
        return f"torch {torch.__version__}", name
    return f"torch {torch.__version__} {name}, CPU float32, {loaded_blas()}", None


def probe(impl):
    version, reason = version_of(impl)
    emit(
        {
            "impl": impl,
            "version": version,
            "available": reason is None,
            "reason": reason or "importable",
        }
    )


def run_numpy(a, q, k, v, notes):
    import numpy as np

    n, scale = a.n, np.float32(a.scale)
    mask = None
    if a.causal:
        # Additive mask, -inf where key j > query i.
        mask = np.where(np.triu(np.ones((n, n), dtype=bool), k=1), np.float32(-np.inf), np.float32(0))
        notes.append("causal: full N*N scores plus a -inf mask above the diagonal")

    def attention():
        s = np.matmul(q, np.swapaxes(k, -1, -2))
        s *= scale
        if mask is not None:
            s += mask
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        return np.matmul(s, v)

    notes.append("stable softmax (row max subtracted), in-place on the score buffer")
    return timed(attention, a.budget_s, a.min_runs)


def run_torch(a, q, k, v, notes):
    import torch

    torch.set_num_threads(a.threads)
    notes.append(f"torch.set_num_threads({a.threads})")
    tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
    n = a.n

    if a.impl == "torch-naive":
        mask = None
        if a.causal:
            mask = torch.ones(n, n, dtype=torch.bool).triu(1)
            notes.append("causal: full N*N scores, masked_fill_ -inf above the diagonal")
        notes.append("scale and mask applied in place on the score buffer")

        def attention():
            with torch.inference_mode():
                s = torch.matmul(tq, tk.transpose(-2, -1))
                s.mul_(a.scale)
                if mask is not None:
                    s.masked_fill_(mask, float("-inf"))
                return torch.matmul(torch.softmax(s, dim=-1), tv)

        return timed(attention, a.budget_s, a.min_runs)

    f, name = sdpa_fn(torch)
    if f is None:
        return None, name, None
    public = not name.startswith("torch.nn.functional._")
    has_scale = False
    if public:
        try:
            import inspect

            has_scale = "scale" in inspect.signature(f).parameters
        except (TypeError, ValueError):
            pass
    causal = bool(a.causal)
    if causal:
        notes.append("is_causal=True")
    if has_scale:
        notes.append(f"scale={a.scale} passed to SDPA")

        def attention():
            with torch.inference_mode():
                return f(tq, tk, tv, is_causal=causal, scale=a.scale)

        return timed(attention, a.budget_s, a.min_runs)

    # No scale argument (1.13's private SDPA, 2.0's public one): it uses
    # 1/sqrt(D), so fold the requested scale into q, outside timing.
    pre = a.scale * math.sqrt(a.d)
    sq = (tq * pre).contiguous()
    notes.append(f"q pre-scaled by scale*sqrt(D)={pre:.6g} outside timing (SDPA applies 1/sqrt(D))")
    if public:

        def attention():
            with torch.inference_mode():
                return f(sq, tk, tv, is_causal=causal)

    else:

        def attention():
            with torch.inference_mode():
                out, _ = f(sq, tk, tv, attn_mask=None, dropout_p=0.0, need_attn_weights=False, is_causal=causal)
            return out

    return timed(attention, a.budget_s, a.min_runs)


def run_point(a):
    version, reason = version_of(a.impl)
    if reason is not None:
        emit({"impl": a.impl, "version": version, "error": reason})
        return
    import numpy as np

    def fail(msg):
        emit({"impl": a.impl, "version": version, "error": msg})

    if a.h % a.kvh != 0:
        fail(f"H={a.h} is not a multiple of KVH={a.kvh}")
        return
    # These graphs have no cache of past keys: the last Nq of N queries
    # would cost all N, so such a point is not measured.
    if a.nq != a.n:
        fail(f"{a.impl} computes Nq = N queries only, not Nq={a.nq} of N={a.n}")
        return
    if a.dtype != "f32":
        fail(f"{a.impl} takes f32 inputs only, not {a.dtype}")
        return

    def load(name, heads):
        x = np.load(os.path.join(a.dir, name))
        want = (a.b, heads, a.n, a.d)
        if x.dtype != np.dtype("<f4") or x.shape != want:
            raise ValueError(f"{name}: {x.dtype} {x.shape}, want float32 {want}")
        return np.ascontiguousarray(x)

    q = load("q.npy", a.h)
    k = load("k.npy", a.kvh)
    v = load("v.npy", a.kvh)
    notes = []
    if a.kvh < a.h:
        group = a.h // a.kvh
        # Query head h reads KV head h // group: repeat each KV head group
        # times, consecutively.
        k = np.ascontiguousarray(np.repeat(k, group, axis=1))
        v = np.ascontiguousarray(np.repeat(v, group, axis=1))
        notes.append(f"KV heads repeated {group}x to H={a.h} outside timing")

    set_blas_threads(a.threads, notes)
    if a.impl == "numpy-naive":
        out, warmup, times = run_numpy(a, q, k, v, notes)
    else:
        out, warmup, times = run_torch(a, q, k, v, notes)
        if out is None:
            fail(warmup)
            return
        out = out.numpy()
    if os.environ.get("OPENBLAS_CORETYPE"):
        notes.append(f"OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}")

    if out.shape != (a.b, a.h, a.n, a.d):
        raise ValueError(f"output shape {out.shape}, want {(a.b, a.h, a.n, a.d)}")
    save_output(a.dir, a.impl, out)
    answer(a.impl, version, warmup, times, notes)


if __name__ == "__main__":
    serve("attn bench peer runner (torch/numpy)", IMPLS, "storage dtype of the inputs: f32 only here", probe, run_point)
