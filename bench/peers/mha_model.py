#!/usr/bin/python3
"""Write a one-node ONNX model: com.microsoft MultiHeadAttention.

    output[b, n, h*D:(h+1)*D] = softmax_j(scale * q_h[n] . k_h[j]) v_h[j]

query, key, value and output are float32 [batch, seq, H*D] with symbolic
batch and seq dims. causal=1 sets unidirectional=1 (query i sees keys
j <= i). ort.mjs spawns this outside timing; Debian's python3-onnx is
enough (the com.microsoft schema is not checked here, ORT checks it when
the session is created).

    /usr/bin/python3 mha_model.py --out M.onnx --h H --d D --scale S --causal 0|1
"""

import argparse

import onnx
from onnx import TensorProto, helper


def build(h, d, scale, causal):
    hidden = h * d
    attrs = {"num_heads": h, "scale": float(scale)}
    if causal:
        attrs["unidirectional"] = 1
    node = helper.make_node(
        "MultiHeadAttention",
        ["query", "key", "value"],
        ["output"],
        domain="com.microsoft",
        name="mha",
        **attrs,
    )

    def io(name):
        return helper.make_tensor_value_info(
            name, TensorProto.FLOAT, ["batch", "seq", hidden]
        )

    graph = helper.make_graph(
        [node], "mha", [io("query"), io("key"), io("value")], [io("output")]
    )
    model = helper.make_model(
        graph,
        opset_imports=[
            helper.make_opsetid("", 17),
            helper.make_opsetid("com.microsoft", 1),
        ],
        producer_name="attn bench/peers/mha_model.py",
    )
    # ORT 1.30 reads IR version 8 models (onnx 1.12 writes 8 already).
    model.ir_version = min(model.ir_version, 8)
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--h", type=int, required=True)
    p.add_argument("--d", type=int, required=True)
    p.add_argument("--scale", type=float, required=True)
    p.add_argument("--causal", type=int, choices=(0, 1), required=True)
    a = p.parse_args()
    onnx.save(build(a.h, a.d, a.scale, a.causal), a.out)


if __name__ == "__main__":
    main()
