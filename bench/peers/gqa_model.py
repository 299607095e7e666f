#!/usr/bin/python3
"""Write a one-node ONNX model: com.microsoft GroupQueryAttention with past KV.

    output[b, i, h*D:(h+1)*D] = softmax_j(scale * q_h[i] . k_g[j]) v_g[j],
        g = h / (H/KVH), j over the T = seqlens_k[b] + 1 keys of the cache
        (j <= T - S + i when causal: the S new tokens are its last ones)

query is [batch, S, H*D]; key and value the S new tokens' [batch, S,
KVH*D]; past_key and past_value the cache [batch, KVH, P, D] (BNSH), P
the cache's length; seqlens_k int32 [batch] and total_sequence_length
an int32 scalar; outputs output [batch, S, H*D] and present_key,
present_value [batch, KVH, P', D]. Float32 or float16 throughout
(--dtype). causal=0 sets the causal attribute to 0. No rotary embedding
(do_rotary=0). ort.mjs spawns this outside timing; Debian's python3-onnx
is enough (ORT checks the com.microsoft schema when it creates the
session).

    /usr/bin/python3 gqa_model.py --out M.onnx --h H --kvh KVH --d D --scale S --causal 0|1 --dtype f32|f16
"""

import argparse

import onnx
from onnx import TensorProto, helper


def build(h, kvh, d, scale, causal, dtype):
    t = {"f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16}[dtype]
    node = helper.make_node(
        "GroupQueryAttention",
        ["query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length"],
        ["output", "present_key", "present_value"],
        domain="com.microsoft",
        name="gqa",
        num_heads=h,
        kv_num_heads=kvh,
        scale=float(scale),
        do_rotary=0,
        causal=int(causal),
    )
    vi = helper.make_tensor_value_info
    inputs = [
        vi("query", t, ["batch", "seq", h * d]),
        vi("key", t, ["batch", "seq", kvh * d]),
        vi("value", t, ["batch", "seq", kvh * d]),
        vi("past_key", t, ["batch", kvh, "past", d]),
        vi("past_value", t, ["batch", kvh, "past", d]),
        vi("seqlens_k", TensorProto.INT32, ["batch"]),
        vi("total_sequence_length", TensorProto.INT32, []),
    ]
    outputs = [
        vi("output", t, ["batch", "seq", h * d]),
        vi("present_key", t, ["batch", kvh, "present", d]),
        vi("present_value", t, ["batch", kvh, "present", d]),
    ]
    graph = helper.make_graph([node], "gqa", inputs, outputs)
    model = helper.make_model(
        graph,
        opset_imports=[
            helper.make_opsetid("", 17),
            helper.make_opsetid("com.microsoft", 1),
        ],
        producer_name="attn bench/peers/gqa_model.py",
    )
    # ORT 1.30 reads IR version 8 models (onnx 1.12 writes 8 already).
    model.ir_version = min(model.ir_version, 8)
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--h", type=int, required=True)
    p.add_argument("--kvh", type=int, required=True)
    p.add_argument("--d", type=int, required=True)
    p.add_argument("--scale", type=float, required=True)
    p.add_argument("--causal", type=int, choices=(0, 1), required=True)
    p.add_argument("--dtype", choices=("f32", "f16"), default="f32")
    a = p.parse_args()
    onnx.save(build(a.h, a.kvh, a.d, a.scale, a.causal, a.dtype), a.out)


if __name__ == "__main__":
    main()
