// context: the staged path's last step, O = P·V over a chunk of keys.
//
//   O[b,h,i,c] (+)= Σ_{j0 ≤ j < j1} P[b,h,i,j]·V[b,h/G,j,c]
//
// A workgroup computes a TM×TN tile of O (query rows × value columns) for
// one head; each of its (TN/RN)·(TM/RM) invocations holds an RM×RN block
// in registers. Keys are walked in steps of TJ, with the TM×TJ slice of P
// and the TJ×TN slice of V staged in workgroup memory. When first is 1
// the tile is written; when 0 it is added to O, so the host can split the
// key range into chunks.
//
// v is read through v_at, which widens a half V (ContextConsts.V); p and
// o are f32 (the host packs a half O afterwards, pack.wgsl).
//
// Bindings: P (Params), p, v (read), o (read_write).
// Grid: x = column tiles of TN in [0, Dv), y = query tiles of TM in
// [i0, i1), z = heads bh0, bh0+1, ….
// Workgroup memory: (TM + TN)·TJ floats.
// Limits: ⌈(j1−j0)/TJ⌉·(TJ·(RM + RN + RM·RN) + (TM + TN)·TJ/threads)
// loop iterations per invocation; the host bounds j1 − j0.

var<workgroup> ps: array<f32, PS>;
var<workgroup> vt: array<f32, VS>;

@compute @workgroup_size(WX, WY)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let bh = P.bh0 + wid.z;
    let b = bh / P.H;
    let h = bh % P.H;
    let kh = h / P.G;
    let ti = P.i0 + wid.y * TM;
    let tc = wid.x * TN;
    let pa = b * P.p_b + h * P.p_h - P.p_base;
    let va = b * P.v_b + kh * P.v_h - P.v_base;

    var acc: array<f32, RR>;
    for (var j0 = P.j0; j0 < P.j1; j0 += TJ) {
        workgroupBarrier();
        for (var x = t; x < PS; x += NT) {
            let i = ti + x / TJ;
            let j = j0 + x % TJ;
            var val = 0.0;
            if (i < P.i1 && j < P.j1) {
                val = p[pa + i * P.p_r + j];
            }
            ps[x] = val;
        }
        for (var x = t; x < VS; x += NT) {
            let j = j0 + x / TN;
            let c = tc + x % TN;
            var val = 0.0;
            if (j < P.j1 && c < P.Dv) {
                val = v_at(va + j * P.v_r + c);
            }
            vt[x] = val;
        }
        workgroupBarrier();
        for (var jj = 0u; jj < TJ; jj++) {
            var a: array<f32, RM>;
            var bb: array<f32, RN>;
            for (var r = 0u; r < RM; r++) {
                a[r] = ps[(lid.y * RM + r) * TJ + jj];
            }
            for (var n = 0u; n < RN; n++) {
                bb[n] = vt[jj * TN + lid.x * RN + n];
            }
            for (var r = 0u; r < RM; r++) {
                for (var n = 0u; n < RN; n++) {
                    acc[r * RN + n] += a[r] * bb[n];
                }
            }
        }
    }

    let oa = b * P.o_b + h * P.o_h - P.o_base;
    for (var r = 0u; r < RM; r++) {
        let i = ti + lid.y * RM + r;
        if (i >= P.i1) {
            break;
        }
        for (var n = 0u; n < RN; n++) {
            let c = tc + lid.x * RN + n;
            if (c >= P.Dv) {
                break;
            }
            let at = oa + i * P.o_r + c;
            var val = acc[r * RN + n];
            if (P.first == 0u) {
                val += o[at];
            }
            o[at] = val;
        }
    }
}
