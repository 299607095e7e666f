#!/usr/bin/env python3
"""Checks the WORD-encoded instructions of attn's arm64 assembly against
GNU as (binutils-aarch64-linux-gnu), or writes them.

Go's arm64 assembler lacks some NEON instructions (FMUL, FADD, FCVTL,
FCVTN, BFCVTN, FMAXV …), so the kernels write those as

	WORD $0x6e22dc20 // fmul v0.4s, v1.4s, v2.4s

with the instruction, in GNU syntax, in the comment. This script
assembles every such comment with aarch64-linux-gnu-as and compares its
encoding with the WORD: `neonwords.py FILE…` fails on any difference,
`neonwords.py -w FILE…` rewrites the WORDs from the comments (write the
line with any word, e.g. $0, then run -w).
"""
import os
import re
import subprocess
import sys
import tempfile

import asmcheck

LINE = re.compile(r"^(\s*WORD\s+\$)(0x[0-9a-fA-F]+|\d+)(\s*//\s*)(.+?)\s*$")


def encode(insns):
    with tempfile.TemporaryDirectory() as tmp:
        src, obj = os.path.join(tmp, "w.s"), os.path.join(tmp, "w.o")
        with open(src, "w") as f:
            f.write("".join(i + "\n" for i in insns))
        subprocess.run(["aarch64-linux-gnu-as", "-march=armv8.6-a+bf16+fp16", "-o", obj, src], check=True)
        out = subprocess.run(["aarch64-linux-gnu-objdump", "-d", obj], check=True, capture_output=True, text=True).stdout
    words = [int(m.group(1), 16) for m in re.finditer(r"^\s*[0-9a-f]+:\s+([0-9a-f]{8})\s", out, re.M)]
    if len(words) != len(insns):
        sys.exit(f"neonwords: {len(insns)} instructions gave {len(words)} words")
    return words


def main(args):
    return asmcheck.main(
        args, LINE, encode,
        stored=lambda m: int(m.group(2), 0),
        rewrite=lambda m, w: f"{m.group(1)}0x{w:08x}{m.group(3)}{m.group(4)}",
        show=lambda w: f"0x{w:08x}",
        label="WORD ", unit="WORDs")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
