#!/usr/bin/env python3
"""PyTorch's SDPA (CUDA) on the shapes of bench/gpu-hw.sh, beside attn's.

    python3 torchsdpa.py 4096,32768
    python3 torchsdpa.py backward 4096,16384

One JSON line each: the GPU's read bandwidth (x.sum() over 2 GiB), the
decoding step (B=1, 32 query heads over 8 KV heads, D=128, Nq = 1 and 4
over each N, causal, f32 and f16) and prefill (B=1 H=8, D = 64 and 128,
N = 4096 and 16384, non-causal, f32). Times are medians of 50 calls after
5 warm-ups, by CUDA events around each call. With "backward" first: the
prefill shapes' forward, and forward then backward (autograd of the sum
of O times a fixed dO, as attn bench -backward's "fused+backward"), its
FLOPs counted as 3.5 forwards'.
"""

import json
import sys

import torch
import torch.nn.functional as F


def median_s(fn, n=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def emit(**kw):
    print(json.dumps(kw), flush=True)


def backward(ns):
    dev = "cuda"
    emit(device=torch.cuda.get_device_name(), torch=torch.__version__)
    for d in (64, 128):
        for n in ns:
            q, k, v = (torch.randn(1, 8, n, d, device=dev, requires_grad=True) for _ in range(3))
            do = torch.randn(1, 8, n, d, device=dev)
            fwd = median_s(lambda: F.scaled_dot_product_attention(q, k, v), n=10)

            def step():
                o = F.scaled_dot_product_attention(q, k, v)
                o.backward(do)

            both = median_s(step, n=10)
            flop = 4 * 8 * n * n * d
            emit(what="backward", dtype="float32", d=d, n=n, forward_s=fwd, fwd_bwd_s=both,
                 forward_tflops=flop / fwd / 1e12, fwd_bwd_tflops=3.5 * flop / both / 1e12)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "backward":
        backward([int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "4096,16384").split(",")])
        return
    ns = [int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "4096,32768").split(",")]
    dev = "cuda"
    emit(device=torch.cuda.get_device_name(), torch=torch.__version__)
    x = torch.empty(2**29, device=dev).uniform_()
    emit(what="read", gbps=x.numel() * 4 / median_s(lambda: x.sum()) / 1e9)
    del x
    for dt in (torch.float32, torch.float16):
        for n in ns:
            for nq in (1, 4):
                q = torch.randn(1, 32, nq, 128, device=dev, dtype=dt)
                k, v = (torch.randn(1, 8, n, 128, device=dev, dtype=dt) for _ in range(2))
                # Causal, bottom-right aligned as attn's: with Nq = 1 a
                # query sees every key, so no mask is needed; with Nq > 1
                # the last Nq positions of N.
                mask = None
                if nq > 1:
                    mask = torch.ones(nq, n, dtype=torch.bool, device=dev).tril(n - nq)
                s = median_s(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True))
                kv = 2 * k.numel() * k.element_size()
                emit(what="decode", dtype=str(dt).removeprefix("torch."), n=n, nq=nq, median_s=s, kv_gbps=kv / s / 1e9)
    for d in (64, 128):
        for n in ns:
            if n > 16384:
                continue
            q, k, v = (torch.randn(1, 8, n, d, device=dev) for _ in range(3))
            s = median_s(lambda: F.scaled_dot_product_attention(q, k, v), n=10)
            emit(what="prefill", dtype="float32", d=d, n=n, median_s=s, tflops=4 * 8 * n * n * d / s / 1e12)


if __name__ == "__main__":
    main()
