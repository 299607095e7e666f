#!/usr/bin/env python3
"""Checks the BYTE-encoded instructions of attn's amd64 assembly against
GNU as (binutils), or writes them.

Go's assembler and avo have no AMX (nor AVX512_BF16's VCVTNEPS2BF16,
which cpu/expf_amd64.s writes the same way), so
cpu/internal/sgemm/amx_amd64.s writes each AMX instruction as its bytes,

	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4 // tdpbf16ps %tmm6,%tmm4,%tmm0

with the instruction, in GNU (AT&T) syntax, in the comment. This script
assembles every such comment with as and compares its encoding with the
bytes: `x86bytes.py FILE…` fails on any difference, `x86bytes.py -w
FILE…` rewrites the bytes from the comments (write the line with any
byte, e.g. BYTE $0, then run -w).
"""
import os
import re
import subprocess
import sys
import tempfile

import asmcheck

LINE = re.compile(r"^(\s*)((?:BYTE\s+\$(?:0x[0-9a-fA-F]+|\d+);\s*)*BYTE\s+\$(?:0x[0-9a-fA-F]+|\d+))(\s*//\s*)(.+?)\s*$")
BYTE = re.compile(r"\$(0x[0-9a-fA-F]+|\d+)")


def encode(insns):
    """The bytes of each instruction, assembled one per section so that
    objdump cannot run them together."""
    with tempfile.TemporaryDirectory() as tmp:
        src, obj = os.path.join(tmp, "b.s"), os.path.join(tmp, "b.o")
        with open(src, "w") as f:
            for i, insn in enumerate(insns):
                f.write(f".section .text.i{i},\"ax\"\n{insn}\n")
        subprocess.run(["as", "--64", "-o", obj, src], check=True)
        out = subprocess.run(["objdump", "-d", obj], check=True, capture_output=True, text=True).stdout
    code = {}
    section = None
    for line in out.split("\n"):
        if m := re.match(r"^Disassembly of section \.text\.i(\d+):", line):
            section = int(m.group(1))
            code[section] = []
        elif section is not None and (m := re.match(r"^\s*[0-9a-f]+:\t((?:[0-9a-f]{2} )+)", line)):
            code[section] += [int(b, 16) for b in m.group(1).split()]
    if len(code) != len(insns):
        sys.exit(f"x86bytes: {len(insns)} instructions gave {len(code)} encodings")
    return [code[i] for i in range(len(insns))]


def main(args):
    return asmcheck.main(
        args, LINE, encode,
        stored=lambda m: [int(b, 0) for b in BYTE.findall(m.group(2))],
        rewrite=lambda m, code: m.group(1) + "; ".join(f"BYTE ${b:#04x}" for b in code) + m.group(3) + m.group(4),
        show=lambda code: " ".join(f"{b:02x}" for b in code),
        label="", unit="BYTE lines")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
