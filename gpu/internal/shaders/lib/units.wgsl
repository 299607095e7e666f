// k_unit and v_unit are unit u of the K row and unit e of the V row at
// element at: KU (VU) vec4s from vec4 u·KU (e·VU), a vec4 a load for a
// float32 row (load_k, load_v), a half or fp8 row's unit one load of its
// codes (k_u, v_u), a q8 or q4 block's with its scale (k_sc, v_sc), or
// part of one (k_p, v_p: 2 or 4 of its 8 vec4s, under KQ, VQ). The
// decoding kernels read K and V a unit a load (FusedDecodeConsts.KW,
// LaneDecodeConsts.KW). A Template kernel's text: this file is executed
// with it.
fn k_unit(at: u32, u: u32) -> array<vec4<f32>, KU> {
{{- if eq .KU 1}}
    return array<vec4<f32>, 1>(load_k(at, u));
{{- else if eq .KU 8}}
    let ki = (at >> 2u) + u * KU;
    return k_u(ki, k_sc(ki));
{{- else if .KQ}}
    let ki = (at >> 2u) + u * KU;
    return k_p(ki, k_sc(ki));
{{- else}}
    return k_u((at >> 2u) + u * KU);
{{- end}}
}

fn v_unit(at: u32, e: u32) -> array<vec4<f32>, VU> {
{{- if eq .VU 1}}
    return array<vec4<f32>, 1>(load_v(at, e));
{{- else if eq .VU 8}}
    let vi = (at >> 2u) + e * VU;
    return v_u(vi, v_sc(vi));
{{- else if .VQ}}
    let vi = (at >> 2u) + e * VU;
    return v_p(vi, v_sc(vi));
{{- else}}
    return v_u((at >> 2u) + e * VU);
{{- end}}
}

// v_key is column unit e of key j's V row, from KV head offset va (a
// paged cache's row looked up).
fn v_key(b: u32, j: u32, va: u32, e: u32, paged: bool) -> array<vec4<f32>, VU> {
    var vr = j * P.v_r;
    if (paged) {
        vr = kv_row(b, j, P.v_b, P.v_r);
    }
    return v_unit(va + vr, e);
}
