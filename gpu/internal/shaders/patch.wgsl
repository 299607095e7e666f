// patch: stores some bytes of words of o and keeps the others, each word
// read from a table: the device's half of a write that covers a word in
// part (a half buffer's odd end, an fp8 range's end, a q8 or q4 block's
// scale beside another block's).
//
//   o[w] = (o[w] & ~mask) | (val & mask)      (each entry w, mask, val)
//
// Backend.Write and WriteBits run it after the queue has written the
// whole words of the range (gpu/patch.go says why the merge is the
// device's): a word's other bytes are read where the work before it in
// the queue left them, so writes by several goroutines into one word
// (the rows of two sequences that share it) all land, in the order they
// were submitted. Entry e of the dispatch is table entry P.first + e,
// the three words vars[3(P.first + e)] … +2: w (a word of o's window),
// mask, val. No two entries of one dispatch name one word (the host
// merges them): each is one invocation.
//
// Bindings: P (Params), vars (read), o (read_write), both array<u32>.
// Grid: x = tiles of WG entries.
// Limits: no loop.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= P.n) {
        return;
    }
    let at = 3u * (P.first + gid.x);
    let w = vars[at];
    let m = vars[at + 1u];
    o[w] = (o[w] & ~m) | (vars[at + 2u] & m);
}
