// fusedloop: flash attention over one chunk of keys, for head dims too wide
// for fused.wgsl to unroll.
//
//   s_ij   = cap(scale·q_i·k_j) + bias[i,j] − m_h·|a_b + i − j|
//   O[i]   = Σ_j exp(s_ij − LSE[i]) · v_j            over the keys i sees in [j0, j1)
//   LSE[i] = log(Σ_j exp(s_ij) + exp(sink_h))
//
// with the cap, ALiBi and sink under their flags, as in fused.wgsl.
// A workgroup owns WG query rows [row0, row0+WG) of one head bh (one
// invocation per row) and streams the chunk's keys through workgroup
// memory in tiles of TK keys and values. Each invocation keeps the running
// maximum m, the running sum l and the unnormalised output acc of its row
// (the online softmax) and at the end writes O = acc/l and LSE = m + log l.
// A row that sees no key in the chunk writes zeros and LSE = −Inf (the
// sink logit under F_SINK), so the host can merge chunks exactly
// (merge.wgsl).
//
// Splits and sequences as in fused.wgsl: the grid's z is the split of the
// keys, packed query rows end at their sequence's count, and every K and V
// row is found by kv_row (packed keys, paged caches).
//
// Masks: the key range by position under F_RANGE (causal, window, key
// length: key_range; tiles before the workgroup's first row's range and
// past its last row's are not loaded at all), an additive bias (−Inf
// hides a key) and a keep-mask (0 hides a key), both broadcast through
// zero strides. GQA: head h reads KV head h / G.
//
// q, k, v and bias are read through their loaders (q_at …), which widen
// half operands, as in fused.wgsl; o and lse are f32.
//
// Bindings: P (Params), q, k, v, bias, keep, vars (read), o, lse
// (read_write). bias, keep, vars and lse are only touched when a flag says
// they are there.
// Grid: x = query tiles of WG rows in [i0, i1), y = heads bh0, bh0+1, …,
// z = splits of the keys.
// Workgroup memory: TK·(D4 + DV4) vec4s.
// Limits: an invocation runs about sk/TK·(TK·(1 + D4 + 2·DV4) +
// TK·(D4+DV4)/WG) loop iterations; on a CPU-type adapter the host sizes
// the chunk to keep that far below lavapipe's cap of about 65 535, on a
// hardware adapter (where this is the prefill kernel up to head dims of
// 64, with its loops over the head dims written out, and past them where
// fusedtile.wgsl's tiles do not fit: its workgroups load each K and V
// tile once, coalesced, for WG query rows) only bindings bound it.

// skip_tile is 1 when the block mask leaves the workgroup's key tile off
// for all its rows (written by invocation 0, read uniformly).
var<workgroup> skip_tile: u32;
var<workgroup> ks: array<vec4<f32>, KS>;
var<workgroup> vs: array<vec4<f32>, VS>;

// load_q, load_k and load_v read four elements of one row (zeros past its
// end) from q, k and v. They are three because this naga takes no pointer
// to a storage buffer as a function argument.
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
    let d = d4 * 4u;
    if (d + 4u <= D) {
        return vec4<f32>(k_at(at + d), k_at(at + d + 1u), k_at(at + d + 2u), k_at(at + d + 3u));
    }
    var r = vec4<f32>(k_at(at + d), 0.0, 0.0, 0.0);
    if (d + 1u < D) { r.y = k_at(at + d + 1u); }
    if (d + 2u < D) { r.z = k_at(at + d + 2u); }
    return r;
}

fn load_v(at: u32, d4: u32) -> vec4<f32> {
    let d = d4 * 4u;
    if (d + 4u <= DV) {
        return vec4<f32>(v_at(at + d), v_at(at + d + 1u), v_at(at + d + 2u), v_at(at + d + 3u));
    }
    var r = vec4<f32>(v_at(at + d), 0.0, 0.0, 0.0);
    if (d + 1u < DV) { r.y = v_at(at + d + 1u); }
    if (d + 2u < DV) { r.z = v_at(at + d + 2u); }
    return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let bh = P.bh0 + wid.y;
    let b = bh / P.H;
    let h = bh % P.H;
    let kh = h / P.G;
    let row0 = P.i0 + wid.x * WG;
    // A packed sequence's rows end at its own count; a workgroup past
    // them returns as a whole, before any barrier.
    let i1 = min(P.i1, seq_rows(b));
    if (row0 >= i1) {
        return;
    }
    let q0 = seq_q0(b);
    let i = row0 + t;
    let live = i < i1;
    let j0 = P.j0 + wid.z * P.sk;
    let j1 = min(P.j1, j0 + P.sk);
    // Keys outside [first row's lo, last row's hi) are seen by no row of
    // this tile.
    let jstart = max(j0, key_range(b, row0).x);
    let jend = min(j1, key_range(b, min(row0 + WG, i1) - 1u).y);
    var lo = 0u;
    var lim = 0u;
    if (live) {
        let kr = key_range(b, i);
        lo = kr.x;
        lim = min(j1, kr.y);
    }
    // KV head kh's scales of K and V (1 without F_SCALES).
    let kvsc = kv_scales(kh);
    let scale = P.scale * kvsc.x;

    var qr: array<vec4<f32>, D4>;
    if (live) {
        let qa = b * P.q_b + h * P.q_h + (q0 + i) * P.q_r - P.q_base;
{{- $fd := unroll .D4 .UN}}
{{- $fe := unroll .DV4 .UN}}
        {{loop "d4" "D4" .D4 $fd}}
{{- range $i := seq $fd}}
            {{- step "d4" $i $.D4 $fd 8}}
            qr[d4] = load_q(qa, d4) * scale;
            {{- done $fd 8}}
{{- end}}
        }
    }
    // Dense and packed keys lie at one stride from the batch's first; a
    // paged cache's are looked up a key at a time.
    let paged = (P.flags & F_PAGED) != 0u;
    var ka = kh * P.k_h - P.k_base;
    var va = kh * P.v_h - P.v_base;
    if (!paged) {
        ka += kv_row(b, 0u, P.k_b, P.k_r);
        va += kv_row(b, 0u, P.v_b, P.v_r);
    }
    let bias_row = b * P.bias_b + h * P.bias_h + i * P.bias_r - P.bias_base;
    let keep_row = b * P.keep_b + h * P.keep_h + i * P.keep_r - P.keep_base;
    let has_bias = (P.flags & F_BIAS) != 0u;
    let has_keep = (P.flags & F_KEEP) != 0u;
    let has_blocks = (P.flags & F_BLOCKS) != 0u;
    let slope = alibi_slope(h);
    let pos = alibi_pos(b) + i32(i);

    var acc: array<vec4<f32>, DV4>;
    var m = 0.0;
    var l = 0.0;
    var seen = false;
    if ((P.flags & F_SINK) != 0u && wid.z == 0u) {
        m = sink_logit(h);
        l = 1.0;
        seen = true;
    }
    for (var jt = jstart; jt < jend; jt += TK) {
        if (has_blocks) {
            // A tile whose blocks are all off is never computed: no K or V
            // read, no score, no exponential.
            if (t == 0u) {
                skip_tile = select(1u, 0u, blocks_any(b, h, row0, min(row0 + WG, i1), jt, min(jt + TK, jend)));
            }
            if (workgroupUniformLoad(&skip_tile) != 0u) {
                continue;
            }
        }
        workgroupBarrier();
{{- $nk := ceildiv .KS .WG}}
{{- $fk := unroll $nk .UN}}
        {{sloop "x" "t" "KS" $nk $fk}}
{{- range $i := seq $fk}}
            {{- sstep "x" "t" "KS" $i $nk $fk 8}}
            let j = jt + x / D4;
            var kv = vec4<f32>(0.0);
            if (j < jend) {
                var kr = j * P.k_r;
                if (paged) {
                    kr = kv_row(b, j, P.k_b, P.k_r);
                }
                kv = load_k(ka + kr, x % D4);
            }
            ks[x] = kv;
            {{- sdone $fk 8}}
{{- end}}
        }
{{- $nv := ceildiv .VS .WG}}
{{- $fv := unroll $nv .UN}}
        {{sloop "x" "t" "VS" $nv $fv}}
{{- range $i := seq $fv}}
            {{- sstep "x" "t" "VS" $i $nv $fv 8}}
            let j = jt + x / DV4;
            var vv = vec4<f32>(0.0);
            if (j < jend) {
                var vr = j * P.v_r;
                if (paged) {
                    vr = kv_row(b, j, P.v_b, P.v_r);
                }
                vv = load_v(va + vr, x % DV4);
            }
            vs[x] = vv;
            {{- sdone $fv 8}}
{{- end}}
        }
        workgroupBarrier();
        let jlast = min(jt + TK, lim);
        for (var j = max(jt, lo); j < jlast; j++) {
            let jj = j - jt;
            if (has_keep) {
                if (keep[keep_row + j * P.keep_c] == 0.0) {
                    continue;
                }
            }
            if (has_blocks && !block_on(b, h, i, j)) {
                continue;
            }
            var s = 0.0;
            {{loop "d4" "D4" .D4 $fd}}
{{- range $i := seq $fd}}
                {{- step "d4" $i $.D4 $fd 12}}
                s += dot(qr[d4], ks[jj * D4 + d4]);
                {{- done $fd 12}}
{{- end}}
            }
            s = soft_cap(s);
            if (has_bias) {
                let bv = bias_at(bias_row + j * P.bias_c);
                if (bitcast<u32>(bv) == NEG_INF) {
                    continue;
                }
                s += bv;
            }
            s += slope * alibi_dist(pos, j);
            if (!seen) {
                seen = true;
                m = s;
            }
            if (s > m) {
                let c = exp(m - s);
                l *= c;
                {{loop "e" "DV4" .DV4 $fe}}
{{- range $i := seq $fe}}
                    {{- step "e" $i $.DV4 $fe 16}}
                    acc[e] *= c;
                    {{- done $fe 16}}
{{- end}}
                }
                m = s;
            }
            let p = exp(s - m);
            l += p;
            {{loop "e" "DV4" .DV4 $fe}}
{{- range $i := seq $fe}}
                {{- step "e" $i $.DV4 $fe 12}}
                acc[e] += p * vs[jj * DV4 + e];
                {{- done $fe 12}}
{{- end}}
            }
        }
    }
    if (!live) {
        return;
    }
    var inv = 0.0;
    if (seen && l > 0.0) {
        inv = kvsc.y / l;
    }
    let oa = b * P.o_b + h * P.o_h + (q0 + i) * P.o_r + wid.z * P.o_z - P.o_base;
    {{loop "e" "DV4" .DV4 $fe}}
{{- range $i := seq $fe}}
        {{- step "e" $i $.DV4 $fe 4}}
        let r = acc[e] * inv;
        let d = e * 4u;
        o[oa + d] = r.x;
        if (d + 1u < DV) { o[oa + d + 1u] = r.y; }
        if (d + 2u < DV) { o[oa + d + 2u] = r.z; }
        if (d + 3u < DV) { o[oa + d + 3u] = r.w; }
        {{- done $fe 4}}
{{- end}}
    }
    if ((P.flags & F_LSE) != 0u) {
        var lse_i = bitcast<f32>(NEG_INF);
        if (seen && l > 0.0) {
            lse_i = m + log(l);
        }
        lse[b * P.lse_b + h * P.lse_h + (q0 + i) * P.lse_r + wid.z * P.lse_z - P.lse_base] = lse_i;
    }
}
