// fusedtile: flash attention over one split of keys for a tile of BR query
// rows of one head, register-tiled, for prefill on hardware adapters.
//
//   s_ij   = cap(scale·q_i·k_j) + bias[i,j] − m_h·|a_b + i − j|
//   O[i]   = Σ_j exp(s_ij − LSE[i]) · v_j            over the keys i sees in [j0, j1)
//   LSE[i] = log(Σ_j exp(s_ij) + exp(sink_h))
//
// with the cap, ALiBi and sink under their flags, as in fused.wgsl.
// A workgroup owns query rows [row0, row0+BR) of head bh and one split z
// of the keys (P.sk keys from j0 + z·sk). It holds the rows' scaled
// queries in workgroup memory (rows padded to QP, an odd number of vec4s,
// so that invocations reading different rows hit different banks) and
// streams the split's keys in tiles of BC, each tile in four phases
// between barriers:
//
//   1. stage: the tile's K rows into kvs (rows padded to KP, odd),
//      invocation t loading vec4s t, t + WG, …, adjacent invocations
//      reading adjacent addresses;
//   2. scores: invocation u = rg·NKG + kg computes the RM×RN scores of
//      rows rg·RM + x (x < RM) and keys kg + y·NKG (y < RN) of the tile
//      into registers, each q vec4 it reads from workgroup memory serving
//      RN keys and each k vec4 RM rows: −Inf where the row may not see
//      the key (masked_score, lib/score.wgsl); then each row's maximum over its RN keys;
//   3. softmax, shared by every invocation: a row's NKG invocations meet
//      their maxima (in pm, or by subgroup shuffles under SG), so that
//      each holds the row's new maximum m; each rescales its own sums by
//      exp(m_old − m) and writes its weights p = exp(s − m) to ss, a key
//      at a time, four rows a vec4; then the tile's V rows are staged
//      into kvs (K is read no more: under SG a barrier first, as no
//      barrier has passed since the scores read K);
//   4. P·V: the same invocation owns column vec4s kg + e·NKG (e < CN) of
//      its RM rows, its sums in registers: it adds p·v over the tile's
//      keys, each vec4 of weights read serving up to four rows' CN
//      columns and each V vec4 RM rows.
//
// Each invocation keeps its share of its rows' sums l (its weights'),
// and the row's NKG shares are added once, after the last tile.
//
// Under AH each invocation holds its vec4s of the next tile's K, and of
// this tile's V, in registers: it issues the next tile's K loads and
// this tile's V loads right after staging this tile's K, so that they
// are in flight through the scores (and V's through the softmax), and
// stores them after the barriers, as FlashAttention-2 loads the next
// tile while it computes on this one; without AH a tile's loads are
// issued after the barrier before their use and waited for at once.
//
// The softmax is per block of keys, not per key (one maximum and one
// rescale a row a tile), every invocation taking its own block's share
// (as FlashAttention-2 does), and an invocation keeps only RM·CN output
// vec4s in registers however wide the head: q lives in workgroup memory,
// so D = 128 and 256 keep D = 64's tiles. As in ONNX Runtime's WebGPU
// flash attention and llama.cpp's Vulkan scalar path.
//
// After the last tile each row writes O = acc/l and LSE = m + log l; a
// row that sees no key in the split writes zeros and LSE = −Inf (the sink
// logit under F_SINK, which joins split 0 only), so the host can merge
// splits exactly (merge.wgsl), as it does the other fused kernels'.
//
// Sequences as in fused.wgsl: packed query rows end at their sequence's
// count (a workgroup past them returns as a whole, before any barrier),
// and every K and V row is found by kv_row (packed keys, paged caches).
// Masks: the key range by position under F_RANGE (tiles before the first
// row's range and past the last row's are not staged at all), an additive
// bias (−Inf hides a key) and a keep-mask (0 hides a key), both broadcast
// through zero strides. GQA: head h reads KV head h / G.
//
// q, k, v and bias are read through their loaders (q_at, k_at4 …), which
// widen half operands; k and v are bound as vec4s when D and DV are
// multiples of 4 (one load for four elements). o and lse are f32.
//
// Bindings: P (Params), q, k, v, bias, keep, vars (read), o, lse
// (read_write). bias, keep, vars and lse are only touched when a flag says
// they are there.
// Grid: x = query tiles of BR rows in [i0, i1), y = heads bh0, bh0+1, …,
// z = splits of the keys.
// Workgroup memory: QS + KVS + SS vec4s, BR vec2<u32>, and BR·NKG f32
// without SG (FusedTileConsts.WorkgroupBytes).
// Limits: BR ≤ WG, (BR/RM)·NKG = WG, NKG·RN = BC, NKG a power of two
// within the subgroup size under SG (FusedTileConsts.check, and the
// host's plan). An invocation runs about
// ⌈BR·D4/WG⌉ + tiles·(⌈BC·D4/WG⌉ + D4 + NKG + ⌈BC·DV4/WG⌉ + BC) + 2·NKG
// loop iterations; there is no loop cap on hardware adapters, the only
// ones whose plan runs this kernel.

// NEG_MAX starts each row's running maximum: finite, so that exp(m − m')
// is never NaN and a hidden key's exp(−Inf − m) is 0.
const NEG_MAX: f32 = -3.4028234e38;

// skip_tile is 1 when the block mask leaves the workgroup's key tile off
// for all its rows (written by invocation 0, read uniformly).
var<workgroup> skip_tile: u32;
var<workgroup> qs: array<vec4<f32>, QS>;
var<workgroup> kvs: array<vec4<f32>, KVS>;
var<workgroup> ss: array<vec4<f32>, SS>;
var<workgroup> spans: array<vec2<u32>, BR>;
{{- if not .SG}}
// pm holds each row's NKG invocations' maxima over a tile, then their
// shares of the row's sum.
var<workgroup> pm: array<f32, BR * NKG>;
{{- end}}
{{- if .AH}}

// k_tile_at and v_tile_at are vec4 x of the K or V tile of keys from js
// (x < BC·D4 or BC·DV4; zeros past jend or past the tile), read from
// KV head offset ka or va: the staging loads that AH issues ahead.
fn k_tile_at(x: u32, js: u32, jend: u32, ka: u32, b: u32, paged: bool) -> vec4<f32> {
    let j = js + x / D4;
    if (x >= BC * D4 || j >= jend) {
        return vec4<f32>(0.0);
    }
    var kr = j * P.k_r;
    if (paged) {
        kr = kv_row(b, j, P.k_b, P.k_r);
    }
    return load_k(ka + kr, x % D4);
}

fn v_tile_at(x: u32, js: u32, jend: u32, va: u32, b: u32, paged: bool) -> vec4<f32> {
    let j = js + x / DV4;
    if (x >= BC * DV4 || j >= jend) {
        return vec4<f32>(0.0);
    }
    var vr = j * P.v_r;
    if (paged) {
        vr = kv_row(b, j, P.v_b, P.v_r);
    }
    return load_v(va + vr, x % DV4);
}
{{- end}}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32
{{- if .SG}}, @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_size) sgs: u32, @builtin(subgroup_id) sgid: u32, @builtin(num_subgroups) nsg: u32{{end}}) {
    let bh = P.bh0 + wid.y;
    let b = bh / P.H;
    let h = bh % P.H;
    let kh = h / P.G;
    let row0 = P.i0 + wid.x * BR;
    // A packed sequence's rows end at its own count; a workgroup past
    // them returns as a whole, before any barrier.
    let i1 = min(P.i1, seq_rows(b));
    if (row0 >= i1) {
        return;
    }
    let q0 = seq_q0(b);
    let j0 = P.j0 + wid.z * P.sk;
    let j1 = min(P.j1, j0 + P.sk);
    // Keys outside [first row's lo, last row's hi) are seen by no row of
    // this tile.
    let jstart = max(j0, key_range(b, row0).x);
    let jend = min(j1, key_range(b, min(row0 + BR, i1) - 1u).y);
    let has_blocks = (P.flags & F_BLOCKS) != 0u;
    // The sink joins the first split only.
    let has_sink = (P.flags & F_SINK) != 0u && wid.z == 0u;
    let ninf = bitcast<f32>(NEG_INF);
    // Dense and packed keys lie at one stride from the batch's first; a
    // paged cache's are looked up a key at a time.
    let paged = (P.flags & F_PAGED) != 0u;
    var ka = kh * P.k_h - P.k_base;
    var va = kh * P.v_h - P.v_base;
    if (!paged) {
        ka += kv_row(b, 0u, P.k_b, P.k_r);
        va += kv_row(b, 0u, P.v_b, P.v_r);
    }
    let apos = alibi_pos(b);
    // KV head kh's scales of K and V (1 without F_SCALES).
    let kvsc = kv_scales(kh);

    // The rows' scaled queries (zeros past the sequence), the keys of the
    // split each row sees ([0, 0) past the sequence), their running
    // maxima and sums.
{{- $nq := ceildiv (mul .BR .D4) .WG}}
{{- $fq := unroll $nq .UN}}
    {{sloop "x" "t" "BR * D4" $nq $fq}}
{{- range $i := seq $fq}}
        {{- sstep "x" "t" "BR * D4" $i $nq $fq 4}}
        let r = x / D4;
        let i = row0 + r;
        var qv = vec4<f32>(0.0);
        if (i < i1) {
            qv = load_q(b * P.q_b + h * P.q_h + (q0 + i) * P.q_r - P.q_base, x % D4) * (P.scale * kvsc.x);
        }
        qs[r * QP + x % D4] = qv;
        {{- sdone $fq 4}}
{{- end}}
    }
    if (t < BR) {
        let i = row0 + t;
        var span = vec2<u32>(0u, 0u);
        if (i < i1) {
            let kr = key_range(b, i);
            span = vec2<u32>(kr.x, min(j1, kr.y));
        }
        spans[t] = span;
    }

    // This invocation's rows rg + x·NRG, keys kg + y·NKG of each tile and
    // output columns kg + e·NKG; under SG a row's NKG invocations are
    // adjacent lanes of one subgroup (NKG divides every subgroup size, as
    // the host checks), numbered by subgroup, not by t.
{{- if .SG}}
    let u = sgid * sgs + sid;
{{- else}}
    let u = t;
{{- end}}
    let kg = u % NKG;
    let rg = u / NKG;
    // Its rows' weights lie in the vec4s from pq of each key's, from
    // lane po of the first.
    let pq = rg * RM / 4u;
{{- if lt .RM 4}}
    let po = rg * RM % 4u;
{{- end}}
    // Its rows' running maxima (the sink's logit under has_sink), its
    // share of their sums (the sink's 1 in key group 0's) and its sums
    // of p·v.
{{- range $x := seq .RM}}
    var m{{$x}} = select(NEG_MAX, sink_logit(h), has_sink);
    var l{{$x}} = select(0.0, 1.0, has_sink && kg == 0u);
{{- range $e := seq $.CN}}
    var a{{$x}}_{{$e}} = vec4<f32>(0.0);
{{- end}}
{{- end}}

{{- $nk := ceildiv (mul .BC .D4) .WG}}
{{- $nw := ceildiv (mul .BC .DV4) .WG}}
{{- if .AH}}
    // The next tile's K, loaded ahead (AH): kpj is the tile it holds
    // (jend: none).
    var kpj = jend;
{{- range $i := seq $nk}}
    var kp{{$i}} = vec4<f32>(0.0);
{{- end}}
{{- end}}

    for (var jt = jstart; jt < jend; jt += BC) {
        if (has_blocks) {
            // A tile whose blocks are all off is never computed: no K or V
            // read, no score, no exponential.
            if (t == 0u) {
                skip_tile = select(1u, 0u, blocks_any(b, h, row0, min(row0 + BR, i1), jt, min(jt + BC, jend)));
            }
            if (workgroupUniformLoad(&skip_tile) != 0u) {
                continue;
            }
        }
        workgroupBarrier();
{{- if .AH}}
        // Stage the tile's K from the registers its loads went to during
        // the last tile (a = 1), or load it now first (a = 0: the first
        // tile, or one after a skipped tile), then load the next tile's
        // K into them, and this tile's V: both in flight through the
        // scores (and V through the softmax), not waited for at once
        // after a barrier.
        for (var a = select(0u, 1u, kpj == jt); a < 2u; a++) {
            if (a == 1u) {
{{- range $i := seq $nk}}
                {
                    let x = t + {{$i}}u * WG;
                    if (x < BC * D4) {
                        kvs[(x / D4) * KP + x % D4] = kp{{$i}};
                    }
                }
{{- end}}
            }
{{- range $i := seq $nk}}
            kp{{$i}} = k_tile_at(t + {{$i}}u * WG, jt + a * BC, jend, ka, b, paged);
{{- end}}
        }
        kpj = jt + BC;
{{- range $i := seq $nw}}
        let vp{{$i}} = v_tile_at(t + {{$i}}u * WG, jt, jend, va, b, paged);
{{- end}}
{{- else}}
{{- $fk := unroll $nk .UN}}
        {{sloop "x" "t" "BC * D4" $nk $fk}}
{{- range $i := seq $fk}}
            {{- sstep "x" "t" "BC * D4" $i $nk $fk 8}}
            let jj = x / D4;
            let j = jt + jj;
            var kv = vec4<f32>(0.0);
            if (j < jend) {
                var kr = j * P.k_r;
                if (paged) {
                    kr = kv_row(b, j, P.k_b, P.k_r);
                }
                kv = load_k(ka + kr, x % D4);
            }
            kvs[jj * KP + x % D4] = kv;
            {{- sdone $fk 8}}
{{- end}}
        }
{{- end}}
        workgroupBarrier();
{{- range $x := seq .RM}}
{{- range $y := seq $.RN}}
        var d{{$x}}_{{$y}} = vec4<f32>(0.0);
{{- end}}
{{- end}}
{{- $fd := unroll .D4 .UN}}
        {{loop "d4" "D4" .D4 $fd}}
{{- range $i := seq $fd}}
            {{- step "d4" $i $.D4 $fd 8}}
{{- range $x := seq $.RM}}
            let q{{$x}} = qs[(rg * RM + {{$x}}u) * QP + d4];
{{- end}}
{{- range $y := seq $.RN}}
            let k{{$y}} = kvs[(kg + {{$y}}u * NKG) * KP + d4];
{{- end}}
{{- range $x := seq $.RM}}
{{- range $y := seq $.RN}}
            d{{$x}}_{{$y}} += q{{$x}} * k{{$y}};
{{- end}}
{{- end}}
            {{- done $fd 8}}
{{- end}}
        }
        // The block's scores, masked, in registers (masked_score: a row's
        // span of keys ends at jend or before, as key_range rises with the
        // row), and each row's maximum over them.
{{- range $y := seq .RN}}
        let j{{$y}} = jt + kg + {{$y}}u * NKG;
{{- end}}
{{- range $x := seq .RM}}
        let r{{$x}} = rg * RM + {{$x}}u;
        let sp{{$x}} = spans[r{{$x}}];
{{- range $y := seq $.RN}}
        let s{{$x}}_{{$y}} = masked_score(b, h, row0 + r{{$x}}, j{{$y}}, true, sp{{$x}}, d{{$x}}_{{$y}}.x + d{{$x}}_{{$y}}.y + d{{$x}}_{{$y}}.z + d{{$x}}_{{$y}}.w, apos);
{{- end}}
        var mx{{$x}} = max(m{{$x}}, {{range $y := seq $.RN}}{{if $y}}, {{end}}{{if lt $y (sub $.RN 1)}}max({{end}}s{{$x}}_{{$y}}{{end}}{{range $y := seq (sub $.RN 1)}}){{end}});
{{- end}}
{{- if .SG}}
        // The row's NKG invocations are adjacent lanes of one subgroup:
        // their maxima meet by shuffles, with no barrier.
{{- range $w := halves .NKG}}
{{- range $x := seq $.RM}}
        mx{{$x}} = max(mx{{$x}}, subgroupShuffleXor(mx{{$x}}, {{$w}}u));
{{- end}}
{{- end}}
{{- else}}
        // The row's NKG invocations' maxima meet in pm.
{{- range $x := seq .RM}}
        pm[r{{$x}} * NKG + kg] = mx{{$x}};
{{- end}}
        workgroupBarrier();
{{- $fm := unroll .NKG .UN}}
        {{loop "g" "NKG" .NKG $fm}}
{{- range $i := seq $fm}}
            {{- step "g" $i $.NKG $fm 12}}
{{- range $x := seq $.RM}}
                mx{{$x}} = max(mx{{$x}}, pm[r{{$x}} * NKG + g]);
{{- end}}
                {{- done $fm 12}}
{{- end}}
        }
{{- end}}
        // Every invocation of a row holds its new maximum: it rescales its
        // own sums (P·V's and its share of l) and writes its weights
        // p = exp(s − m) for the P·V phase.
{{- range $x := seq .RM}}
        let c{{$x}} = exp(m{{$x}} - mx{{$x}});
        m{{$x}} = mx{{$x}};
        l{{$x}} *= c{{$x}};
{{- range $e := seq $.CN}}
        a{{$x}}_{{$e}} *= c{{$x}};
{{- end}}
{{- range $y := seq $.RN}}
        {
            let p = exp(s{{$x}}_{{$y}} - mx{{$x}});
            l{{$x}} += p;
            ss[(kg + {{$y}}u * NKG) * SR + pq + {{div $x 4}}u][{{if lt $.RM 4}}po + {{end}}{{mod $x 4}}u] = p;
        }
{{- end}}
{{- end}}
{{- if .SG}}
        // No barrier has passed since the scores read K: V may not
        // overwrite it before every invocation is past them.
        workgroupBarrier();
{{- end}}
{{- if .AH}}
{{- range $i := seq $nw}}
        {
            let x = t + {{$i}}u * WG;
            if (x < BC * DV4) {
                kvs[x] = vp{{$i}};
            }
        }
{{- end}}
{{- else}}
{{- $fw := unroll $nw .UN}}
        {{sloop "x" "t" "BC * DV4" $nw $fw}}
{{- range $i := seq $fw}}
            {{- sstep "x" "t" "BC * DV4" $i $nw $fw 8}}
            let jj = x / DV4;
            let j = jt + jj;
            var vv = vec4<f32>(0.0);
            if (j < jend) {
                var vr = j * P.v_r;
                if (paged) {
                    vr = kv_row(b, j, P.v_b, P.v_r);
                }
                vv = load_v(va + vr, x % DV4);
            }
            kvs[jj * DV4 + x % DV4] = vv;
            {{- sdone $fw 8}}
{{- end}}
        }
{{- end}}
        workgroupBarrier();
{{- $fv := unroll .BC .UN}}
        {{loop "jj" "BC" .BC $fv}}
{{- range $i := seq $fv}}
            {{- step "jj" $i $.BC $fv 8}}
{{- range $g := seq $.RQ}}
            let pv{{$g}} = ss[jj * SR + pq + {{$g}}u];
{{- end}}
{{- range $x := seq $.RM}}
            let p{{$x}} = pv{{div $x 4}}[{{if lt $.RM 4}}po + {{end}}{{mod $x 4}}u];
{{- end}}
{{- range $e := seq $.CN}}
            let v{{$e}} = kvs[jj * DV4 + min(kg + {{$e}}u * NKG, DV4 - 1u)];
{{- end}}
{{- range $x := seq $.RM}}
{{- range $e := seq $.CN}}
            a{{$x}}_{{$e}} += p{{$x}} * v{{$e}};
{{- end}}
{{- end}}
            {{- done $fv 8}}
{{- end}}
        }
    }
    // Each row's sum: its NKG invocations' shares added in the order of
    // their key groups (by shuffles under SG, in the same order in every
    // lane), so that every invocation of the row holds the same l.
{{- if .SG}}
{{- range $w := halves .NKG}}
{{- range $x := seq $.RM}}
    l{{$x}} += subgroupShuffleXor(l{{$x}}, {{$w}}u);
{{- end}}
{{- end}}
{{- else}}
    workgroupBarrier();
{{- range $x := seq .RM}}
    pm[(rg * RM + {{$x}}u) * NKG + kg] = l{{$x}};
{{- end}}
    workgroupBarrier();
{{- range $x := seq .RM}}
    {
        var l = 0.0;
        for (var g = 0u; g < NKG; g++) {
            l += pm[(rg * RM + {{$x}}u) * NKG + g];
        }
        l{{$x}} = l;
    }
{{- end}}
{{- end}}
{{- range $x := seq .RM}}
    {
        let r = rg * RM + {{$x}}u;
        let i = row0 + r;
        if (i < i1) {
            let l = l{{$x}};
            var inv = 0.0;
            if (l > 0.0) {
                inv = kvsc.y / l;
            }
            let oa = b * P.o_b + h * P.o_h + (q0 + i) * P.o_r + wid.z * P.o_z - P.o_base;
{{- range $e := seq $.CN}}
            {
                let e = kg + {{$e}}u * NKG;
                if (e < DV4) {
                    let y = a{{$x}}_{{$e}} * inv;
                    let d = oa + e * 4u;
                    o[d] = y.x;
                    if (e * 4u + 1u < DV) { o[d + 1u] = y.y; }
                    if (e * 4u + 2u < DV) { o[d + 2u] = y.z; }
                    if (e * 4u + 3u < DV) { o[d + 3u] = y.w; }
                }
            }
{{- end}}
            if (kg == 0u && (P.flags & F_LSE) != 0u) {
                var lse_i = ninf;
                if (l > 0.0) {
                    lse_i = m{{$x}} + log(l);
                }
                lse[b * P.lse_b + h * P.lse_h + (q0 + i) * P.lse_r + wid.z * P.lse_z - P.lse_base] = lse_i;
            }
        }
    }
{{- end}}
}
