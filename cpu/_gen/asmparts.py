# asmparts.py: assembly text the decoding generators (decode.py,
# decode_quant.py) share.

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
