// copy8: copies 8-bit or 4-bit elements between two buffers of one
// quantized dtype, bits as they are, one u32 word of o an invocation.
//
//   o's elements [d0, d0 + n) = src's elements [s0, s0 + n)     (window-relative)
//
// Backend.Copy between two Q8, two Q4 or two FP8 buffers runs it
// (Elem's doc in package shaders gives the layouts). Under Q8 = Q4 = 0
// (fp8) word w of o holds elements 4w … 4w+3, and each byte of it
// inside the range is taken from src's byte of its element; the others
// keep what the word holds. Under Q8 = 1 or Q4 = 1 the range is whole
// blocks of 32 (and both windows start on a superblock), and a word
// holds one block's codes (q8: 4 of them, a block 8 words; q4: 8, a
// block 4 words) or two blocks' scales: a code word of o inside the
// range is the same word of src's block of the range, whole, and a
// scale word's two halves (blocks 2c and 2c+1 of its superblock) each
// src's scale of the same block of the range when that block is in it.
// Every word has one invocation, so a word two ranges share keeps both
// (the ranges of one copy are dispatched in order).
//
// Bindings: P (Params), src (read), o (read_write), both array<u32>.
// Grid: x = tiles of WG words from word P.o_word of o.
// Limits: no loop.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= P.nw) {
        return;
    }
    let w = P.o_word + gid.x;
    var out = o[w];
{{- if or .Q8 .Q4}}
{{- /* a superblock's words ($sw) and a block's code words ($bw) */}}
{{- $sw := 68}}{{$bw := 8}}
{{- if .Q4}}{{$sw = 36}}{{$bw = 4}}{{end}}
    let s = w / {{$sw}}u;
    let r = w % {{$sw}}u;
    if (r < {{mul 8 $bw}}u) {
        let e = s * 256u + (r / {{$bw}}u) * 32u; // the first element of the word's block
        if (e >= P.d0 && e - P.d0 < P.n) {
            let se = e - P.d0 + P.s0;
            out = src[(se / 256u) * {{$sw}}u + ((se % 256u) / 32u) * {{$bw}}u + r % {{$bw}}u];
        }
    } else {
        for (var hh = 0u; hh < 2u; hh++) {
            let e = (s * 8u + (r - {{mul 8 $bw}}u) * 2u + hh) * 32u;
            if (e >= P.d0 && e - P.d0 < P.n) {
                let sb = (e - P.d0 + P.s0) / 32u;
                let x = (src[(sb / 8u) * {{$sw}}u + {{mul 8 $bw}}u + (sb % 8u) / 2u] >> (16u * (sb % 2u))) & 0xffffu;
                out = (out & ~(0xffffu << (16u * hh))) | (x << (16u * hh));
            }
        }
    }
{{- else}}
    for (var c = 0u; c < 4u; c++) {
        let e = w * 4u + c;
        if (e >= P.d0 && e - P.d0 < P.n) {
            let se = e - P.d0 + P.s0;
            let x = (src[se / 4u] >> (8u * (se % 4u))) & 0xffu;
            out = (out & ~(0xffu << (8u * c))) | (x << (8u * c));
        }
    }
{{- end}}
    o[w] = out;
}
