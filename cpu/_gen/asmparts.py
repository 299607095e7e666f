# asmparts.py: assembly text the decoding generators (decode.py,
# decode_quant.py, decode_int.py, decode_idx.py, backward_idx.py) share.

# PAIR_HSUM reduces an eight-lane dot kernel's key pair: the eight
# accumulators (row r, key t in Y(2r+t)) by horizontal adds and a lane
# swap, so that lanes 2r and 2r+1 of Y1 hold row r's two sums.
PAIR_HSUM = """	VHADDPS      Y1, Y0, Y0
	VHADDPS      Y3, Y2, Y2
	VHADDPS      Y5, Y4, Y4
	VHADDPS      Y7, Y6, Y6
	VHADDPS      Y2, Y0, Y0
	VHADDPS      Y6, Y4, Y4
	VPERM2F128   $0x20, Y4, Y0, Y1
	VPERM2F128   $0x31, Y4, Y0, Y2
	VADDPS       Y2, Y1, Y1
"""

def pair_prefetch(label, reg):
    """An eight-lane dot kernel's prefetch of its key pair's rows: each
    row's DX bytes from reg on, a line at a time, reg moved on a row
    stride (R9) after each; label has {t}, the key, for the loops."""
    return "\n".join(f"""\tXORQ         AX, AX
{label.format(t=t)}:
\tPREFETCHT0   ({reg})(AX*1)
\tADDQ         $64, AX
\tCMPQ         AX, DX
\tJB           {label.format(t=t)}
\tADDQ         R9, {reg}""" for t in range(2))


# PAIR_STORE stores the pair's scores PAIR_HSUM left in Y1 (scaled): row
# r's two at R10 + r·R11 (bytes), and moves R10 on by the pair.
PAIR_STORE = """	VMOVQ        X1, (R10)
	VPEXTRQ      $1, X1, (R10)(R11*1)
	VEXTRACTF128 $1, Y1, X2
	VMOVQ        X2, (R10)(R11*2)
	LEAQ         (R11)(R11*2), AX
	VPEXTRQ      $1, X2, (R10)(AX*1)
	ADDQ         $8, R10
"""


def row_args(rows):
    """The four row pointers (SI, R8, R12, R13) of argument rows, the
    frame's first, with its stride in elements (ld+rows) the second."""
    return f"""	MOVQ         {rows}+0(FP), SI
	MOVQ         ld{rows}+8(FP), R8
	SHLQ         $2, R8
	LEAQ         (SI)(R8*2), R12           // {rows} row 2
	LEAQ         (R12)(R8*1), R13          // {rows} row 3
	ADDQ         SI, R8                    // {rows} row 1
"""


def load16(dt, mem, z):
    """Sixteen stored elements of K or V at mem as float32 in Z{z}: dt
    "F16" float16, "BF16" bfloat16, else float32."""
    if dt == "F16":
        return [f"\tVCVTPH2PS    {mem}, Z{z}"]
    if dt == "BF16":
        return [f"\tVPMOVZXWD    {mem}, Z{z}", f"\tVPSLLD       $16, Z{z}, Z{z}"]
    return [f"\tVMOVUPS      {mem}, Z{z}"]


# IDX_QUAD_ROWS points an indirect dot kernel's key quad: DI, BX, R14
# and R15 at k plus the quad's four byte offsets (R9).
IDX_QUAD_ROWS = """	MOVQ         k+16(FP), DI
	MOVQ         DI, BX
	MOVQ         DI, R14
	MOVQ         DI, R15
	ADDQ         (R9), DI                  // keys j … j+3
	ADDQ         8(R9), BX
	ADDQ         16(R9), R14
	ADDQ         24(R9), R15"""


# QUAD_HSUM reduces a sixteen-lane dot kernel's key quad: the sixteen
# accumulators (row r, key t in Z(4r+t)) transposed and summed, so that
# 128-bit lane r of Z6 holds row r's four sums (Z16–Z23 and Z0–Z5 on the
# way, Z24 and Z25 temporaries).
QUAD_HSUM = "\n".join(
    ["\t// Pairs of accumulators: per 128-bit lane (v, v', v, v') partial sums."]
    + [line for m in range(8) for line in (
        f"\tVUNPCKLPS    Z{2*m+1}, Z{2*m}, Z24",
        f"\tVUNPCKHPS    Z{2*m+1}, Z{2*m}, Z25",
        f"\tVADDPS       Z25, Z24, Z{16+m}")]
    + ["\t// Quads: per 128-bit lane (v₀, v₁, v₂, v₃) of one row."]
    + [line for n in range(4) for line in (
        f"\tVUNPCKLPD    Z{17+2*n}, Z{16+2*n}, Z24",
        f"\tVUNPCKHPD    Z{17+2*n}, Z{16+2*n}, Z25",
        f"\tVADDPS       Z25, Z24, Z{n}")]) + """
	// Sum the four 128-bit lanes: lane r ends as row r's four sums.
	VSHUFF32X4   $0x88, Z1, Z0, Z24
	VSHUFF32X4   $0xdd, Z1, Z0, Z25
	VADDPS       Z25, Z24, Z4
	VSHUFF32X4   $0x88, Z3, Z2, Z24
	VSHUFF32X4   $0xdd, Z3, Z2, Z25
	VADDPS       Z25, Z24, Z5
	VSHUFF32X4   $0x88, Z5, Z4, Z24
	VSHUFF32X4   $0xdd, Z5, Z4, Z25
	VADDPS       Z25, Z24, Z6"""

# QUAD_STORE stores the quad's scores QUAD_HSUM left in Z6, times alpha
# (Z31): row r's four at R10 + r·lds (lds in elements), and moves R10
# on by the quad.
QUAD_STORE = """	VMULPS       Z31, Z6, Z6
	MOVQ         lds+56(FP), R11
	SHLQ         $2, R11
	VMOVUPS      X6, (R10)
	VEXTRACTF32X4 $1, Z6, (R10)(R11*1)
	VEXTRACTF32X4 $2, Z6, (R10)(R11*2)
	LEAQ         (R11)(R11*2), AX
	VEXTRACTF32X4 $3, Z6, (R10)(AX*1)
	ADDQ         $16, R10"""


# L2_TWINS: the decoding kernels come twice, the second named with the
# suffix L2: the first prefetches into the L1 (PREFETCHT0), the twin
# into the L2 (PREFETCHT1), and the Go side picks (decode_amd64.go,
# prefetchL2): the sixteen-lane ones by the CPU's maker, the eight-lane
# ones the L1's unless $ATTN_CPU_PREFETCH asks (not yet measured). On an
# AMD Zen 4 (2 cores, family 25 model 17), one thread streaming 8 KV
# heads' K or V of 32768 keys from memory, prefetches into the L1 held
# each kernel to 7-10 GB/s, fewer misses in flight than the L2's: two
# interleaved rounds, ns a key, T0 against T1 (go test -bench
# 'DecodeQuant/Kernel' ./cpu, ATTN_BENCH_PART=dot or axpy): the float32
# scores 43 and 40 against 28 and 29, the float32 P·V 53 and 48 against
# 37 and 35, the float16 P·V 29 and 25 against 17 and 17, the VNNI q8
# P·V 20 and 16 against 12 and 11. The Intel Xeon's kernels were tuned
# with T0 (decode.py's AXPY_CHUNK and the dot kernels' prefetch notes)
# and keep it.


def twinned(name):
    """Whether l2_twins gives kernel name a twin: the decoding kernels of
    either width (AVX512, VNNI; AVX2, whose twins run only where
    $ATTN_CPU_PREFETCH asks), not the index lists' or the digits'."""
    return (name.startswith("dotRows4") or name.startswith("axpyRows4")) and "Idx" not in name and \
        (name.endswith("AVX512") or name.endswith("VNNI") or name.endswith("AVX2"))


def twin_of(block):
    """The L2 twin of block (one kernel: its "// func" comment, then its
    TEXT block): its name + "L2", every PREFETCHT0 a PREFETCHT1. Go's
    labels are local to a function, so the twin keeps them."""
    import re
    name = re.search(r'(?m)^TEXT ·(\w+)\(SB\)', block).group(1)
    twin = block.replace(f"·{name}(SB)", f"·{name}L2(SB)")
    twin = re.sub(r'(?m)^// func ' + name + r'\(', f"// func {name}L2(", twin)
    return twin.replace("PREFETCHT0", "PREFETCHT1")


def l2_twins(src):
    """src (generated assembly) with an L2 twin after each TEXT block
    whose kernel is twinned (twin_of)."""
    import re
    parts = re.split(r'(?m)^(?=// func |TEXT )', src)
    out = []
    i = 0
    while i < len(parts):
        part = parts[i]
        # A kernel is its "// func" comment block, then its TEXT block.
        if part.startswith("// func ") and i + 1 < len(parts) and parts[i + 1].startswith("TEXT "):
            block = part + parts[i + 1]
            i += 2
        else:
            block = part
            i += 1
        out.append(block)
        m = re.search(r'(?m)^TEXT ·(\w+)\(SB\)', block)
        if m and twinned(m.group(1)):
            twin = twin_of(block)
            if not twin.endswith("\n\n"):
                twin = twin.rstrip("\n") + "\n\n"
            out.append(twin)
    return "".join(out)
