// The backward pass's vars (gpu's Backward): after the variant data
// (lib/vars.wgsl) lie each query row's LSE and δ, a pair of words that
// backdelta.wgsl writes, at P.ld (shaders.InVars), and a copy of the
// keep-mask at P.keep, which the host makes under F_KEEP. So the kernels
// bind one buffer for what the call makes, and stay within WebGPU's
// default of 8 storage buffers.

// ld_word is where row r of head h of batch b has its LSE, δ the word
// after it.
fn ld_word(b: u32, h: u32, r: u32) -> u32 {
    return P.ld_at + b * P.ld_b + h * P.ld_h + r * P.ld_r;
}

// row_ld is row r of head h of batch b's LSE and δ.
fn row_ld(b: u32, h: u32, r: u32) -> vec2<f32> {
    let at = ld_word(b, h, r);
    return vec2<f32>(bitcast<f32>(vars[at]), bitcast<f32>(vars[at + 1u]));
}
