// load_q, load_k and load_v read elements 4·d4 … 4·d4+3 of the row at at
// (an element index) of q, k and v, zeros past its end, through their
// loaders: k and v a vec4 a load where the kernel binds them as vec4s (D,
// VA multiples of 4). For fuseddecode.wgsl and fusedtile.wgsl: a Template
// kernel's text, this file is executed with it. They are three because
// this naga takes no pointer to a storage buffer as a function argument.
fn load_q(at: u32, d4: u32) -> vec4<f32> {
    let d = d4 * 4u;
    if (d + 4u <= D) {
        return vec4<f32>(q_at(at + d), q_at(at + d + 1u), q_at(at + d + 2u), q_at(at + d + 3u));
    }
    var r = vec4<f32>(q_at(at + d), 0.0, 0.0, 0.0);
    if (d + 1u < D) { r.y = q_at(at + d + 1u); }
    if (d + 2u < D) { r.z = q_at(at + d + 2u); }
    return r;
}

fn load_k(at: u32, d4: u32) -> vec4<f32> {
{{- if eq (mod .D 4) 0}}
    return k_at4((at >> 2u) + d4);
{{- else}}
    let d = d4 * 4u;
    var r = vec4<f32>(k_at(at + d), 0.0, 0.0, 0.0);
    if (d + 1u < D) { r.y = k_at(at + d + 1u); }
    if (d + 2u < D) { r.z = k_at(at + d + 2u); }
    if (d + 3u < D) { r.w = k_at(at + d + 3u); }
    return r;
{{- end}}
}

fn load_v(at: u32, e: u32) -> vec4<f32> {
{{- if eq (mod .VA 4) 0}}
    return v_at4((at >> 2u) + e);
{{- else}}
    let d = e * 4u;
    var r = vec4<f32>(v_at(at + d), 0.0, 0.0, 0.0);
    if (d + 1u < DV) { r.y = v_at(at + d + 1u); }
    if (d + 2u < DV) { r.z = v_at(at + d + 2u); }
    if (d + 3u < DV) { r.w = v_at(at + d + 3u); }
    return r;
{{- end}}
}
