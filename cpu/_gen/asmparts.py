# asmparts.py: assembly text the decoding generators (decode.py,
# decode_quant.py, decode_int.py) share.

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


def l2_twins(src):
    """src (generated assembly) with an L2 twin after each TEXT block
    whose kernel is twinned: its name + "L2", every PREFETCHT0 a
    PREFETCHT1. Go's labels are local to a function, so the twin keeps
    them."""
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
            name = m.group(1)
            twin = block.replace(f"·{name}(SB)", f"·{name}L2(SB)")
            twin = re.sub(r'(?m)^// func ' + name + r'\(', f"// func {name}L2(", twin)
            twin = twin.replace("PREFETCHT0", "PREFETCHT1")
            if not twin.endswith("\n\n"):
                twin = twin.rstrip("\n") + "\n\n"
            out.append(twin)
    return "".join(out)
