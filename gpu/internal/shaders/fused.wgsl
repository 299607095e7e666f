// fused: flash attention over one chunk of keys, unrolled for lavapipe.
//
//   s_ij   = cap(scale·q_i·k_j) + bias[i,j] − m_h·|a_b + i − j|
//   O[i]   = Σ_j exp(s_ij − LSE[i]) · v_j            over the keys i sees in [j0, j1)
//   LSE[i] = log(Σ_j exp(s_ij) + exp(sink_h))
//
// cap is softcap·tanh(·/softcap) under F_SOFTCAP, the ALiBi term is there
// under F_ALIBI and the sink under F_SINK (the host flags the sink on the
// one dispatch that writes each row first, so it joins every row's
// denominator once however its keys are chunked).
// A workgroup owns WG·R query rows of one head bh and one split z of the
// keys (P.sk keys from j0 + z·sk; split z writes O and LSE z·o_z and
// z·lse_z elements on, so that the host merges the splits): invocation t owns rows
// row0 + r·WG + t for r < R, each with its scaled query, running maximum
// m, running sum l and unnormalised output in registers (the online
// softmax), and streams the keys of the chunk that some row of the
// workgroup may see one at a time straight from k and v. At the end it
// writes O = acc/l and LSE = m + log l; a row that sees no key in the
// chunk writes zeros and LSE = −Inf (the sink logit under F_SINK), so the
// host can merge chunks exactly (merge.wgsl).
//
// Why this shape (measured on lavapipe, Mesa 22.3, 8 lanes of AVX2): every
// load from storage or workgroup memory inside a loop runs once per
// invocation (a loop over the SIMD lanes, ~30 instructions a lane per
// vec4), whatever its address, so the cost is in the loads, not the
// arithmetic. Each vec4 of K or V loaded here feeds R rows; k and v are
// bound as array<vec4<f32>> when D, DV are multiples of 4 (one load per
// four elements, against four); there is no workgroup memory and no
// barrier. Lavapipe's compiler unrolls no loop, and an array indexed by a
// loop counter lives in memory, so the template (package shaders) writes
// every loop over rows and head dims out, keeping q and acc in registers:
// the code grows as R·(D4 + DV4), and so does the driver's compile time
// (seconds at R·(D4+DV4) = 128), which is why the host picks R from the
// head dims and uses fusedloop.wgsl for wide heads.
//
// Key lanes (NQ > 0, a decoding step's few queries over many keys): the
// workgroup's R rows are NQ queries (row0 …) of each of R/NQ query heads
// (h, h+1, …) that share one KV head, every invocation holds all R rows'
// queries, maxima, sums and outputs, and invocation t streams keys
// jstart + t, jstart + t + WG, … of the split, so that each K and V row
// is loaded once, by one lane, for every row that reads it. After the
// keys the lanes meet in workgroup memory, a row at a time: their common
// maximum, their rescaled sums, then CB column vec4s at a time the sums
// of their outputs, each lane adding up WG lanes' columns t, t + WG, …;
// the sink joins lane 0's sums. The host widens a half Q into float32
// first (lavapipe widened it again for every key).
//
// Sequences: packed query rows (F_PACKQ: batch b's rows start at the row
// seq_q0 and number seq_rows, lib/seqs.wgsl; a workgroup past them does
// nothing), packed keys (F_PACKK) and paged K and V (F_PAGED: each key's
// row found through the block table), both through kv_row
// (lib/pages.wgsl).
//
// Masks: the key range by position under F_RANGE (causal, window, key
// length: key_range; keys before the workgroup's first row's range and
// past its last row's are not visited, so a window of W keys costs
// O(W + WG·R) keys per workgroup), an additive bias (−Inf hides a key) and
// a keep-mask (0 hides a key), both broadcast through zero strides. A hidden key gets score −Inf and weight exactly 0;
// the loop itself is uniform (every invocation visits the same keys), so
// no invocation waits on another's branch. GQA: head h reads KV head h / G.
//
// q, k, v and bias are read through their loaders (q_at, k_at4 …), which
// widen half operands (FusedConsts' Q, K, V, Bias; a half k or v bound as
// vec4s is read four halves, one vec2<u32>, a load) and quantized ones
// (a quantized k or v a unit of KU or VU vec4s at a time, k_u and v_u: a
// q8 block of 32 values in two loads of codes and one of its scale, a q4
// block in one and one, or 16 fp8 values in one); o and lse are f32
// (the host packs a half O afterwards, pack.wgsl).
//
// Bindings: P (Params), q, k, v, bias, keep, vars (read), o, lse
// (read_write). bias, keep, vars and lse are only touched when a flag says
// they are there.
// Grid: x = query tiles of WG·R rows in [i0, i1) (with key lanes, of NQ
// rows), y = heads bh0, bh0+1, … (with key lanes, groups of R/NQ heads
// from bh0, a multiple of R/NQ), z = splits of the keys.
// Workgroup memory: none in row mode; with key lanes 2·WG f32 and
// RED = WG·CB vec4s (FusedConsts.WorkgroupBytes).
// Limits: one loop iteration per key of the split, sk in all (with key
// lanes ⌈sk/WG⌉, and the lanes' sums: FusedConsts.Iterations); the host
// keeps that far below lavapipe's cap of about 65 535.
{{- $k4 := eq (mod .D 4) 0}}
{{- $v4 := eq (mod .VA 4) 0}}

// NEG_MAX starts the running maximum: finite, so exp(m − m') is never NaN.
const NEG_MAX: f32 = -3.4028234e38;

{{- if .NQ}}

// The lanes' partial results meet here after the keys (key-lane mode):
// one row at a time, each lane's maximum, its sum of weights and its
// output vec4s.
var<workgroup> mred: array<f32, WG>;
var<workgroup> lred: array<f32, WG>;
var<workgroup> ored: array<vec4<f32>, RED>;
{{- end}}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32
{{- if .SG}}, @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_id) sgid: u32, @builtin(num_subgroups) nsg: u32{{end}}) {
{{- if .NQ}}
    // Key lanes: the workgroup's rows are queries row0 … row0+NQ−1 of the
    // heads h … h+R/NQ−1 (one KV head's), and lane t takes keys
    // jstart + t, jstart + t + WG, … of the split.
    let bh = P.bh0 + wid.y * (R / NQ);
    let row0 = P.i0 + wid.x * NQ;
    let tile = NQ;
    // The lanes' partial results they meet over at the end: one a
    // subgroup with SG, else one a lane.
{{- if .SG}}
    let nw = nsg;
{{- else}}
    let nw = WG;
{{- end}}
{{- else}}
    let bh = P.bh0 + wid.y;
    let row0 = P.i0 + wid.x * (WG * R);
    let tile = WG * R;
{{- end}}
    let b = bh / P.H;
    let h = bh % P.H;
    let kh = h / P.G;
    // A packed sequence's rows end at its own count.
    let iend = min(P.i1, seq_rows(b));
    if (row0 >= iend) {
        return;
    }
    let q0 = seq_q0(b);
    let jlo = P.j0 + wid.z * P.sk;
    let jhi = min(P.j1, jlo + P.sk);
    // Keys outside [first row's lo, last row's hi) are seen by no row of
    // this tile.
    let jstart = max(jlo, key_range(b, row0).x);
    let jend = min(jhi, key_range(b, min(row0 + tile, iend) - 1u).y);
    // KV head kh's scales of K and V (1 without F_SCALES).
    let kvsc = kv_scales(kh);
    let scale = P.scale * kvsc.x;
    let has_bias = (P.flags & F_BIAS) != 0u;
    let has_keep = (P.flags & F_KEEP) != 0u;
    let has_blocks = (P.flags & F_BLOCKS) != 0u;
    // The sink joins the first split only.
    let has_sink = (P.flags & F_SINK) != 0u && wid.z == 0u;
    // NEG_INF named outside bitcast too: gogpu/naga v0.18.0 misses a
    // module constant that a function names only inside bitcast<f32>(…),
    // and then fails to resolve it, as lib/ comes after the kernel.
    let ninf_bits = NEG_INF;
    let ninf = bitcast<f32>(ninf_bits);
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
{{- if .NQ}}
    // The sink joins one lane's sums.
    let sink_here = has_sink && t == 0u;
{{- else}}
    let slope = alibi_slope(h);
    var m_init = NEG_MAX;
    var l_init = 0.0;
    if (has_sink) {
        m_init = sink_logit(h);
        l_init = 1.0;
    }
{{- end}}
{{- range $r := seq .R}}

    // Row {{$r}}. A row past iend reads row iend − 1 (any valid row), scaled by 0,
    // and sees no key.
{{- if $.NQ}}
    let h{{$r}} = h + {{$r}}u / NQ;
    let i{{$r}} = row0 + {{$r}}u % NQ;
    let slope{{$r}} = alibi_slope(h{{$r}});
{{- else}}
    let h{{$r}} = h;
    let i{{$r}} = row0 + {{$r}}u * WG + t;
    let slope{{$r}} = slope;
{{- end}}
    let live{{$r}} = i{{$r}} < iend;
    let kr{{$r}} = key_range(b, min(i{{$r}}, iend - 1u));
    let lo{{$r}} = kr{{$r}}.x;
    let lim{{$r}} = select(jlo, max(jlo, min(jhi, kr{{$r}}.y)), live{{$r}});
    let pos{{$r}} = apos + i32(i{{$r}});
    let qa{{$r}} = b * P.q_b + h{{$r}} * P.q_h + (q0 + min(i{{$r}}, iend - 1u)) * P.q_r - P.q_base;
    let qs{{$r}} = select(0.0, scale, live{{$r}});
{{- range $d := seq $.D4}}
    let q{{$r}}_{{$d}} = {{load4 "q" (printf "qa%d" $r) (mul $d 4) (sub $.D (mul $d 4))}} * qs{{$r}};
{{- end}}
{{- if $.NQ}}
    var m{{$r}} = NEG_MAX;
    var l{{$r}} = 0.0;
    if (sink_here) {
        m{{$r}} = sink_logit(h{{$r}});
        l{{$r}} = 1.0;
    }
{{- else}}
    var m{{$r}} = m_init;
    var l{{$r}} = l_init;
{{- end}}
{{- range $e := seq $.DV4}}
    var a{{$r}}_{{$e}} = vec4<f32>(0.0);
{{- end}}
{{- end}}

{{- if .NQ}}
    for (var j = jstart + t; j < jend; j += WG) {
        if (has_blocks) {
            // A key in blocks every row has off is not read.
            if (!({{range $r := seq .R}}{{if $r}} || {{end}}block_on(b, h{{$r}}, min(i{{$r}}, iend - 1u), j){{end}})) {
                continue;
            }
        }
{{- else}}
    // Under a block mask, each row's block of the keys from the current
    // key block's start (bon) and where that block ends (blk_end).
    var blk_end = 0u;
{{- range $r := seq .R}}
    var bon{{$r}} = true;
{{- end}}
    for (var j = jstart; j < jend; j++) {
        if (has_blocks && j >= blk_end) {
            blk_end = (j / P.blk_size + 1u) * P.blk_size;
{{- range $r := seq .R}}
            bon{{$r}} = live{{$r}} && block_on(b, h{{$r}}, i{{$r}}, j);
{{- end}}
            if (!({{range $r := seq .R}}{{if $r}} || {{end}}bon{{$r}}{{end}})) {
                // Every row has this block off: none of its keys is read.
                j = blk_end - 1u;
                continue;
            }
        }
{{- end}}
        var kr = j * P.k_r;
        var vr = j * P.v_r;
        if (paged) {
            kr = kv_row(b, j, P.k_b, P.k_r);
            vr = kv_row(b, j, P.v_b, P.v_r);
        }
{{- if $k4}}
        let kj = (ka + kr) >> 2u;
{{- else}}
        let kj = ka + kr;
{{- end}}
{{- if gt .KU 1}}
        // A quantized K a unit (KU vec4s) a load of its codes (k_u); a
        // q8 or q4 K's scales a superblock's at a time (k_sc, for KSB
        // blocks).
{{- range $u := seq (div .D4 .KU)}}
{{- if eq $.KU 8}}
{{- if eq (mod $u $.KSB) 0}}
        let ksc{{$u}} = k_sc(kj + {{mul $u $.KU}}u);
{{- end}}
        let ku{{$u}} = k_u(kj + {{mul $u $.KU}}u, ksc{{sub $u (mod $u $.KSB)}});
{{- else}}
        let ku{{$u}} = k_u(kj + {{mul $u $.KU}}u);
{{- end}}
{{- range $c := seq $.KU}}
        let k{{add (mul $u $.KU) $c}} = ku{{$u}}[{{$c}}];
{{- end}}
{{- end}}
{{- else}}
{{- range $d := seq .D4}}
{{- if $k4}}
        let k{{$d}} = k_at4(kj + {{$d}}u);
{{- else}}
        let k{{$d}} = {{load4 "k" "kj" (mul $d 4) (sub $.D (mul $d 4))}};
{{- end}}
{{- end}}
{{- end}}
{{- range $r := seq .R}}
        var y{{$r}} = slope{{$r}} * alibi_dist(pos{{$r}}, j);
{{- end}}
        if (has_bias || has_keep || has_blocks) {
{{- range $r := seq .R}}
            if (j < lim{{$r}}) {
{{- if $.NQ}}
                if (has_blocks && !block_on(b, h{{$r}}, i{{$r}}, j)) {
{{- else}}
                if (!bon{{$r}}) {
{{- end}}
                    y{{$r}} = ninf;
                }
                if (has_bias) {
                    y{{$r}} += bias_at(b * P.bias_b + h{{$r}} * P.bias_h + i{{$r}} * P.bias_r + j * P.bias_c - P.bias_base);
                }
                if (has_keep && keep[b * P.keep_b + h{{$r}} * P.keep_h + i{{$r}} * P.keep_r + j * P.keep_c - P.keep_base] == 0.0) {
                    y{{$r}} = ninf;
                }
            }
{{- end}}
        }
{{- range $r := seq .R}}
        let t{{$r}} = {{range $d := seq $.D4}}{{if $d}} + {{end}}q{{$r}}_{{$d}} * k{{$d}}{{end}};
        let s{{$r}} = select(soft_cap(t{{$r}}.x + t{{$r}}.y + t{{$r}}.z + t{{$r}}.w) + y{{$r}}, ninf, j < lo{{$r}} || j >= lim{{$r}});
        let mt{{$r}} = max(m{{$r}}, s{{$r}});
        let c{{$r}} = exp(m{{$r}} - mt{{$r}});
        let p{{$r}} = exp(s{{$r}} - mt{{$r}});
        l{{$r}} = l{{$r}} * c{{$r}} + p{{$r}};
        m{{$r}} = mt{{$r}};
{{- end}}
{{- if $v4}}
        let vj = (va + vr) >> 2u;
{{- else}}
        let vj = va + vr;
{{- end}}
{{- if gt .VU 1}}
{{- range $u := seq (div .DV4 .VU)}}
{{- if and (eq $.VU 8) (eq (mod $u $.VSB) 0)}}
        let vsc{{$u}} = v_sc(vj + {{mul $u $.VU}}u);
{{- end}}
        {
{{- if eq $.VU 8}}
            let vu = v_u(vj + {{mul $u $.VU}}u, vsc{{sub $u (mod $u $.VSB)}});
{{- else}}
            let vu = v_u(vj + {{mul $u $.VU}}u);
{{- end}}
{{- range $c := seq $.VU}}
{{- $e := add (mul $u $.VU) $c}}
            {
                let x = vu[{{$c}}];
{{- range $r := seq $.R}}
                a{{$r}}_{{$e}} = a{{$r}}_{{$e}} * c{{$r}} + p{{$r}} * x;
{{- end}}
            }
{{- end}}
        }
{{- end}}
{{- else}}
{{- range $e := seq .DV4}}
        {
{{- if $v4}}
            let x = v_at4(vj + {{$e}}u);
{{- else}}
            let x = {{load4 "v" "vj" (mul $e 4) (sub $.DV (mul $e 4))}};
{{- end}}
{{- range $r := seq $.R}}
            a{{$r}}_{{$e}} = a{{$r}}_{{$e}} * c{{$r}} + p{{$r}} * x;
{{- end}}
        }
{{- end}}
{{- end}}
    }
{{- if .NQ}}
{{- range $r := seq .R}}

    // Row {{$r}}'s lanes meet: their common maximum, then their sums
    // rescaled to it, a block of CB column vec4s at a time, each lane
    // adding up columns t, t + WG, … of the block: over the nw sums in
    // workgroup memory, every lane's, or with subgroups (SG) each
    // subgroup's, which the subgroup adds up first.
{{- if $.SG}}
    let sm{{$r}} = subgroupMax(m{{$r}});
    if (sid == 0u) {
        mred[sgid] = sm{{$r}};
    }
{{- else}}
    mred[t] = m{{$r}};
{{- end}}
    workgroupBarrier();
    var mx{{$r}} = NEG_MAX;
    for (var w = 0u; w < nw; w++) {
        mx{{$r}} = max(mx{{$r}}, mred[w]);
    }
    let f{{$r}} = exp(m{{$r}} - mx{{$r}});
{{- if $.SG}}
    let sl{{$r}} = subgroupAdd(l{{$r}} * f{{$r}});
    if (sid == 0u) {
        lred[sgid] = sl{{$r}};
    }
{{- else}}
    lred[t] = l{{$r}} * f{{$r}};
{{- end}}
    var l{{$r}}sum = 0.0;
{{- range $c := seq $.NCB}}
{{- $c0 := mul $c $.CB}}
{{- $cn := min $.CB (sub $.DV4 $c0)}}
{{- range $e := seq $cn}}
{{- if $.SG}}
    {
        let s = subgroupAdd(a{{$r}}_{{add $c0 $e}} * f{{$r}});
        if (sid == 0u) {
            ored[sgid * CB + {{$e}}u] = s;
        }
    }
{{- else}}
    ored[t * CB + {{$e}}u] = a{{$r}}_{{add $c0 $e}} * f{{$r}};
{{- end}}
{{- end}}
    workgroupBarrier();
    if (live{{$r}}) {
{{- if eq $c 0}}
        for (var w = 0u; w < nw; w++) {
            l{{$r}}sum += lred[w];
        }
{{- end}}
        var inv = 0.0;
        if (l{{$r}}sum > 0.0) {
            inv = kvsc.y / l{{$r}}sum;
        }
        let oa = b * P.o_b + h{{$r}} * P.o_h + (q0 + i{{$r}}) * P.o_r + wid.z * P.o_z - P.o_base + {{mul $c0 4}}u;
        for (var e = t; e < {{$cn}}u; e += WG) {
            var y = vec4<f32>(0.0);
            for (var w = 0u; w < nw; w++) {
                y += ored[w * CB + e];
            }
            y *= inv;
            o[oa + e * 4u] = y.x;
            if ({{mul $c0 4}}u + e * 4u + 1u < DV) { o[oa + e * 4u + 1u] = y.y; }
            if ({{mul $c0 4}}u + e * 4u + 2u < DV) { o[oa + e * 4u + 2u] = y.z; }
            if ({{mul $c0 4}}u + e * 4u + 3u < DV) { o[oa + e * 4u + 3u] = y.w; }
        }
    }
    workgroupBarrier();
{{- end}}
    if (live{{$r}} && t == 0u && (P.flags & F_LSE) != 0u) {
        var x = ninf;
        if (l{{$r}}sum > 0.0) {
            x = mx{{$r}} + log(l{{$r}}sum);
        }
        lse[b * P.lse_b + h{{$r}} * P.lse_h + (q0 + i{{$r}}) * P.lse_r + wid.z * P.lse_z - P.lse_base] = x;
    }
{{- end}}
{{- else}}
{{- range $r := seq .R}}

    if (live{{$r}}) {
        var inv = 0.0;
        if (l{{$r}} > 0.0) {
            inv = kvsc.y / l{{$r}};
        }
        let oa = b * P.o_b + h{{$r}} * P.o_h + (q0 + i{{$r}}) * P.o_r + wid.z * P.o_z - P.o_base;
{{- range $e := seq $.DV4}}
{{- range $c := seq (min 4 (sub $.DV (mul $e 4)))}}
        o[oa + {{add (mul $e 4) $c}}u] = a{{$r}}_{{$e}}[{{$c}}] * inv;
{{- end}}
{{- end}}
        if ((P.flags & F_LSE) != 0u) {
            var x = ninf;
            if (l{{$r}} > 0.0) {
                x = m{{$r}} + log(l{{$r}});
            }
            lse[b * P.lse_b + h{{$r}} * P.lse_h + (q0 + i{{$r}}) * P.lse_r + wid.z * P.lse_z - P.lse_base] = x;
        }
    }
{{- end}}
{{- end}}
}
