"""What every Python peer runner of `attn bench -peers` shares: the
command line, the timing loop, the output file and the JSON answer.

The protocol is in README.md. torch_peer.py and ggml_peer.py import this
module from their own directory.
"""

import argparse
import json
import os
import sys
import time


def emit(obj):
    """Print one JSON answer; the parent reads the last line of stdout."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def timed(fn, budget, min_runs):
    """One warm-up call of fn, then timed calls until their total reaches
    budget seconds and their count min_runs. Returns the last result, the
    warm-up's seconds and each timed call's."""
    t0 = time.perf_counter()
    out = fn()
    warmup = time.perf_counter() - t0
    times = []
    total = 0.0
    runs = max(min_runs, 1)
    while len(times) < runs or total < budget:
        out = None  # let the previous result go before the next allocates
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        times.append(dt)
        total += dt
    return out, warmup, times


def save_output(directory, impl, out):
    """Write O as DIR/o-<impl>.npy (float32, C order), atomically."""
    import numpy as np

    out = np.ascontiguousarray(out, dtype=np.float32)
    path = os.path.join(directory, f"o-{impl}.npy")
    tmp = f"{path}.tmp{os.getpid()}.npy"
    np.save(tmp, out, allow_pickle=False)
    os.replace(tmp, path)


def answer(impl, version, warmup, times, notes):
    """Print a measured point's answer: the warm-up's and the timed calls'
    seconds and the notes."""
    emit({"impl": impl, "version": version, "warmup_s": warmup, "times_s": times, "notes": "; ".join(notes)})


def serve(description, impls, dtypes_help, probe, run_point):
    """A runner's main: probe(impl) under --probe, else run_point(args)."""
    a = parse_args(description, impls, dtypes_help)
    if a.probe:
        probe(a.impl)
        return
    run_point(a)


def parse_args(description, impls, dtypes_help):
    """The runners' common flags, checked: --probe needs only --impl."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--impl", required=True, choices=impls)
    p.add_argument("--probe", action="store_true")
    p.add_argument("--dir")
    p.add_argument("--b", type=int)
    p.add_argument("--h", type=int)
    p.add_argument("--kvh", type=int)
    p.add_argument("--n", type=int)
    p.add_argument("--nq", type=int, default=None, help="query rows, the last of N (default N)")
    p.add_argument("--dtype", default="f32", help=dtypes_help)
    p.add_argument("--d", type=int)
    p.add_argument("--causal", type=int, choices=(0, 1))
    p.add_argument("--scale", type=float)
    p.add_argument("--budget-s", type=float)
    p.add_argument("--min-runs", type=int)
    p.add_argument("--threads", type=int)
    p.add_argument("--v-from-k", type=int, default=0, help="V is K's first DV columns (MLA): no v.npy")
    a = p.parse_args()
    if a.probe:
        return a
    missing = [k for k, v in vars(a).items() if v is None and k != "nq"]
    if missing:
        p.error("missing " + ", ".join("--" + m.replace("_", "-") for m in missing))
    for k in ("b", "h", "kvh", "n", "d", "threads"):
        if getattr(a, k) < 1:
            p.error(f"--{k} must be >= 1")
    if a.nq is None:
        a.nq = a.n
    if not 1 <= a.nq <= a.n:
        p.error(f"--nq {a.nq} must be in [1, N={a.n}]")
    return a
