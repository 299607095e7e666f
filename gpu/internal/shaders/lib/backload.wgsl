// The backward pass's row loaders (backkv.wgsl, backq.wgsl): load_q,
// load_k, load_v and load_g read four elements of one row of q, k, v
// and dout from element at, widened, zeros past the row's end. They are
// four because this naga takes no pointer to a storage buffer as a
// function argument.
fn load_q(at: u32, d4: u32) -> vec4<f32> {
    let d = d4 * 4u;
    var r = vec4<f32>(q_at(at + d), 0.0, 0.0, 0.0);
    if (d + 1u < D) { r.y = q_at(at + d + 1u); }
    if (d + 2u < D) { r.z = q_at(at + d + 2u); }
    if (d + 3u < D) { r.w = q_at(at + d + 3u); }
    return r;
}

fn load_k(at: u32, d4: u32) -> vec4<f32> {
    let d = d4 * 4u;
    var r = vec4<f32>(k_at(at + d), 0.0, 0.0, 0.0);
    if (d + 1u < D) { r.y = k_at(at + d + 1u); }
    if (d + 2u < D) { r.z = k_at(at + d + 2u); }
    if (d + 3u < D) { r.w = k_at(at + d + 3u); }
    return r;
}

fn load_v(at: u32, e: u32) -> vec4<f32> {
    let d = e * 4u;
    var r = vec4<f32>(v_at(at + d), 0.0, 0.0, 0.0);
    if (d + 1u < DV) { r.y = v_at(at + d + 1u); }
    if (d + 2u < DV) { r.z = v_at(at + d + 2u); }
    if (d + 3u < DV) { r.w = v_at(at + d + 3u); }
    return r;
}

fn load_g(at: u32, e: u32) -> vec4<f32> {
    let d = e * 4u;
    var r = vec4<f32>(dout_at(at + d), 0.0, 0.0, 0.0);
    if (d + 1u < DV) { r.y = dout_at(at + d + 1u); }
    if (d + 2u < DV) { r.z = dout_at(at + d + 2u); }
    if (d + 3u < DV) { r.w = dout_at(at + d + 3u); }
    return r;
}
