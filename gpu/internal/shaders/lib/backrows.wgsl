// The index-list backward kernels' row loaders (backidxkv.wgsl,
// backidxq.wgsl; a template, as they are): row_q, row_k, row_v and
// row_g read elements 4·d4 … 4·d4 + 3 of the row of q, k, v or dout
// that starts at element at, widened, zeros past the row's end. Where
// the row's head dim is a multiple of 4 the binding is vec4s
// (Kernel.Vec4) and a row starts on one, so that is one load; else an
// element a load.
{{- if eq (mod .D 4) 0}}
fn row_q(at: u32, d4: u32) -> vec4<f32> {
    return q_at4((at >> 2u) + d4);
}

fn row_k(at: u32, d4: u32) -> vec4<f32> {
    return k_at4((at >> 2u) + d4);
}
{{- else}}
fn row_q(at: u32, d4: u32) -> vec4<f32> {
    let d = d4 * 4u;
    var r = vec4<f32>(q_at(at + d), 0.0, 0.0, 0.0);
    if (d + 1u < D) { r.y = q_at(at + d + 1u); }
    if (d + 2u < D) { r.z = q_at(at + d + 2u); }
    if (d + 3u < D) { r.w = q_at(at + d + 3u); }
    return r;
}

fn row_k(at: u32, d4: u32) -> vec4<f32> {
    let d = d4 * 4u;
    var r = vec4<f32>(k_at(at + d), 0.0, 0.0, 0.0);
    if (d + 1u < D) { r.y = k_at(at + d + 1u); }
    if (d + 2u < D) { r.z = k_at(at + d + 2u); }
    if (d + 3u < D) { r.w = k_at(at + d + 3u); }
    return r;
}
{{- end}}
{{- if eq (mod .DV 4) 0}}

fn row_v(at: u32, e: u32) -> vec4<f32> {
    return v_at4((at >> 2u) + e);
}

fn row_g(at: u32, e: u32) -> vec4<f32> {
    return dout_at4((at >> 2u) + e);
}
{{- else}}

fn row_v(at: u32, e: u32) -> vec4<f32> {
    let d = e * 4u;
    var r = vec4<f32>(v_at(at + d), 0.0, 0.0, 0.0);
    if (d + 1u < DV) { r.y = v_at(at + d + 1u); }
    if (d + 2u < DV) { r.z = v_at(at + d + 2u); }
    if (d + 3u < DV) { r.w = v_at(at + d + 3u); }
    return r;
}

fn row_g(at: u32, e: u32) -> vec4<f32> {
    let d = e * 4u;
    var r = vec4<f32>(dout_at(at + d), 0.0, 0.0, 0.0);
    if (d + 1u < DV) { r.y = dout_at(at + d + 1u); }
    if (d + 2u < DV) { r.z = dout_at(at + d + 2u); }
    if (d + 3u < DV) { r.w = dout_at(at + d + 3u); }
    return r;
}
{{- end}}
