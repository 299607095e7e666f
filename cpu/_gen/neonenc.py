"""The NEON instructions Go's arm64 assembler lacks, for the generators
(decode_arm64.py, decode_quant_arm64.py): enc gives one as a WORD with
the instruction in GNU syntax beside it, which neonwords.py checks
against aarch64-linux-gnu-as."""


def enc(op, d, n, m=0, imm=0):
    """The WORD line of op on V{d}, V{n} and V{m}: imm is a shift (the
    sshll forms) or a lane (fmul by element)."""
    base, text = {
        "fadd": (0x4E20D400 | m << 16, f"fadd v{d}.4s, v{n}.4s, v{m}.4s"),
        "faddp": (0x6E20D400 | m << 16, f"faddp v{d}.4s, v{n}.4s, v{m}.4s"),
        "fmul": (0x6E20DC00 | m << 16, f"fmul v{d}.4s, v{n}.4s, v{m}.4s"),
        "fmulelem": (0x4F809000 | m << 16 | (imm & 1) << 21 | (imm >> 1) << 11,
                     f"fmul v{d}.4s, v{n}.4s, v{m}.s[{imm}]"),
        "fcvtl": (0x0E217800, f"fcvtl v{d}.4s, v{n}.4h"),
        "fcvtl2": (0x4E217800, f"fcvtl2 v{d}.4s, v{n}.8h"),
        "scvtf": (0x4E21D800, f"scvtf v{d}.4s, v{n}.4s"),
        # Sign-extending widenings, shifted left by imm after.
        "sshll8": (0x0F08A400 | imm << 16, f"sshll v{d}.8h, v{n}.8b, #{imm}"),
        "sshll8_2": (0x4F08A400 | imm << 16, f"sshll2 v{d}.8h, v{n}.16b, #{imm}"),
        "sshll16": (0x0F10A400 | imm << 16, f"sshll v{d}.4s, v{n}.4h, #{imm}"),
        "sshll16_2": (0x4F10A400 | imm << 16, f"sshll2 v{d}.4s, v{n}.8h, #{imm}"),
        # Bit 14 of each halfword cleared: BIC's 16-bit immediate 0x40
        # shifted by 8 (abc = 0b010 in bits 18:16, cmode 0b1011).
        "bic14": (0x6F02B400, f"bic v{d}.8h, #0x40, lsl #8"),
    }[op]
    if op == "bic14":
        n = 0
    return f"\tWORD    $0x{base | n << 5 | d:08x} // {text}"
