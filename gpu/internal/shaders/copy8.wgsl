// copy8: copies 8-bit or 4-bit elements between two buffers of one
// quantized dtype, bits as they are, the ranges read from a table: a row
// of workgroups a range, one u32 word of o an invocation a step.
//
//   o's elements [d0, d0 + n) = src's elements [s0, s0 + n)     (window-relative, each range)
//
// Backend.Copy between two Q8, two Q4 or two FP8 buffers runs it
// (Elem's doc in package shaders gives the layouts). Range r of the
// dispatch is table entry P.first + r, the five words vars[5(P.first +
// r)] … +4: o_word, nw, d0, s0, n; its invocations take words o_word …
// o_word + nw − 1 of o, the words its elements' codes and scales lie in
// (and between them, the words of other blocks of a superblock, which it
// leaves as they are). Under Q8 = Q4 = 0 (fp8) word w of o holds
// elements 4w … 4w+3, and each byte of it inside the range is taken from
// src's byte of its element. Under Q8 = 1 or Q4 = 1 the range is whole
// blocks of 32 (and both windows start on a superblock), and a word
// holds one block's codes (q8: 4 of them, a block 8 words; q4: 8, a
// block 4 words) or two blocks' scales: a code word of o inside the
// range is the same word of src's block of the range, whole, and a
// scale word's two halves (blocks 2c and 2c+1 of its superblock) each
// src's scale of the same block of the range when that block is in it.
// An invocation writes only a word it changes, so ranges of one dispatch
// may share a superblock; two that share a word (a scale word's two
// blocks, an fp8 word's elements) must not share a dispatch (the host
// puts them in two, which WebGPU orders).
//
// The host runs it two ways (gpu/copy.go): the small ranges of a call
// (a cache's rows) many a dispatch, a workgroup a range (grid.x = 1),
// each invocation looping over the range's words WG apart; a large range
// in dispatches of its own (grid.y = 1), a workgroup a WG words.
//
// Bindings: P (Params), src (read), vars (read), o (read_write): src, o
// and vars as u32 words.
// Grid: x = workgroups a range, y = the P.n ranges from table entry
// P.first.
// Limits: an invocation loops ⌈nw / (WG · grid.x)⌉ times; the host keeps
// that to 16 (gpu's copyLoop).

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    if (wid.y >= P.n) {
        return;
    }
    let at = 5u * (P.first + wid.y);
    let o_word = vars[at];
    let nw = vars[at + 1u];
    let d0 = vars[at + 2u];
    let s0 = vars[at + 3u];
    let n = vars[at + 4u];
    for (var u = wid.x * WG + lid.x; u < nw; u += nwg.x * WG) {
        let w = o_word + u;
        var out = o[w];
        var changed = false;
{{- if or .Q8 .Q4}}
{{- /* a superblock's words ($sw) and a block's code words ($bw) */}}
{{- $sw := 68}}{{$bw := 8}}
{{- if .Q4}}{{$sw = 36}}{{$bw = 4}}{{end}}
        let s = w / {{$sw}}u;
        let r = w % {{$sw}}u;
        if (r < {{mul 8 $bw}}u) {
            let e = s * 256u + (r / {{$bw}}u) * 32u; // the first element of the word's block
            if (e >= d0 && e - d0 < n) {
                let se = e - d0 + s0;
                out = src[(se / 256u) * {{$sw}}u + ((se % 256u) / 32u) * {{$bw}}u + r % {{$bw}}u];
                changed = true;
            }
        } else {
            for (var hh = 0u; hh < 2u; hh++) {
                let e = (s * 8u + (r - {{mul 8 $bw}}u) * 2u + hh) * 32u;
                if (e >= d0 && e - d0 < n) {
                    let sb = (e - d0 + s0) / 32u;
                    let x = (src[(sb / 8u) * {{$sw}}u + {{mul 8 $bw}}u + (sb % 8u) / 2u] >> (16u * (sb % 2u))) & 0xffffu;
                    out = (out & ~(0xffffu << (16u * hh))) | (x << (16u * hh));
                    changed = true;
                }
            }
        }
{{- else}}
        for (var c = 0u; c < 4u; c++) {
            let e = w * 4u + c;
            if (e >= d0 && e - d0 < n) {
                let se = e - d0 + s0;
                let x = (src[se / 4u] >> (8u * (se % 4u))) & 0xffu;
                out = (out & ~(0xffu << (8u * c))) | (x << (8u * c));
                changed = true;
            }
        }
{{- end}}
        if (changed) {
            o[w] = out;
        }
    }
}
