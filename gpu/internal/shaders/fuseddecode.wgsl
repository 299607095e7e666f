// fuseddecode: flash attention over one split of keys for the few query
// rows of a decoding step, all of a KV head's query heads in one
// workgroup, so that its K and V are read once for them all; the
// hardware plan's where the device has no subgroups (lanedecode.wgsl
// where it has them).
//
//   s_ij   = cap(scale·q_i·k_j) + bias[i,j] − m_h·|a_b + i − j|
//   O[i]   = Σ_j exp(s_ij − LSE[i]) · v_j            over the keys i sees in [j0, j1)
//   LSE[i] = log(Σ_j exp(s_ij) + exp(sink_h))
//
// with the cap, ALiBi and sink under their flags, as in fused.wgsl.
// A workgroup owns R = HG·NQ rows — query rows [row0, row0+NQ) of the HG
// query heads h0 … h0+HG−1, which share KV head h0/G (GQA; HG divides G)
// — and one split z of the keys (P.sk keys from j0 + z·sk). Row
// r = g·NQ + n is query row row0 + n of head h0 + g. Its WG invocations
// stream the split's keys in tiles of TK, each tile in five phases
// (flash-decoding, FlashAttention's split-KV), with a barrier after
// each of the first four; with subgroups (SG) phases 3 and 4 are one,
// three barriers a tile, and phase 1 of a tile needs none before it:
//
//   1. stage: the tile's K rows into ks, invocation t loading vec4s t,
//      t + WG, … of the tile (KSTEPS of them, all issued before the first
//      is stored), so that adjacent invocations read adjacent addresses;
//      a half K a unit of KU vec4s (8 or 16 halves) a load, units t,
//      t + WG, …;
//   2. scores: invocation t computes s for the pairs (row x/TK, key
//      x mod TK), x = t, t + WG, …, from the rows' scaled queries in qs,
//      into ss: −Inf where the row may not see the key (key range, keep,
//      a −Inf bias, past its sequence);
//   3. maxima: LPR invocations a row each take the maximum of every
//      LPR-th score of the row, then halve them as a tree in workgroup
//      memory (log2 LPR steps), and invocation r < R folds the tile's
//      maximum into the running maximum ms[r], keeping the factor
//      cs[r] = exp(m_old − m_new) that the row's sums are rescaled by;
//      with subgroups (SG), one subgroup a row at a time takes the
//      maximum of every sgs-th score, then subgroupMax, and its first
//      invocation folds it, with no tree and one barrier;
//   4. weights: p = exp(s − m) in place of the scores;
//   5. P·V: invocation t owns one column vec4 e = t mod DV4 of RPI rows
//      (rows rg, rg + RG, …) over keys kg, kg + KG, … of the tile, its
//      sums in registers: it rescales them by cs, then adds p·v with v
//      read straight from V — adjacent invocations read adjacent columns
//      of a key's row — and sums p beside them (the row's l). The WG/DV4
//      invocations of a column are KG key groups first, so that each V
//      element is loaded by one invocation, then RG row groups where a
//      column has more invocations than a tile has keys
//      (FusedDecodeConsts.Groups).
//
// Under AH an invocation loads its V of the tile (its keys' units) at
// the tile's start, before the K tile is staged, into registers that
// phase 5 reads: the V loads are then in flight through phases 1–4 with
// K's, where phase 5 would issue them two or three barriers on. It needs
// phase 5's loop over the invocation's keys written out whole (PV).
// Under KN an invocation loads its share of the next tile's K
// (stage_k) right after this tile's staging barrier, into registers
// that the next tile's phase 1 stores, rather than at that phase.
//
// After the last tile the KG key groups' sums are added through the K
// tile's memory, and each row writes O = acc/l and
// LSE = m + log l; a row that sees no key in the split writes zeros and
// LSE = −Inf (the sink logit under F_SINK, which joins split 0 only), so
// the host can merge splits exactly (merge.wgsl), as it does fused.wgsl's
// and fusedloop.wgsl's.
//
// Sequences as in fused.wgsl: packed query rows end at their sequence's
// count, and every K and V row is found by kv_row (packed keys, paged
// caches). Masks: the key range by position under F_RANGE (keys before
// the first row's range and past the last row's are not staged at all),
// an additive bias (−Inf hides a key) and a keep-mask (0 hides a key),
// both broadcast through zero strides.
//
// q, k, v and bias are read through their loaders (q_at, k_at4 …), which
// widen half operands; k and v are bound as vec4s when D and DV are
// multiples of 4 (one load for four elements). o and lse are f32.
//
// Bindings: P (Params), q, k, v, bias, keep, vars (read), o, lse
// (read_write). bias, keep, vars and lse are only touched when a flag says
// they are there.
// Grid: x = tiles of NQ query rows in [i0, i1), y = groups of HG heads
// from bh0 (bh0 a multiple of HG), z = splits of the keys.
// Workgroup memory: KS + QS vec4s, SS + 2R + LRED + R·LPR f32 and R vec2<u32>
// (FusedDecodeConsts.WorkgroupBytes; the host keeps it within 24 KiB
// where it can, so that several workgroups share a compute unit).
// Limits: R ≤ WG and DV4 ≤ WG (FusedDecodeConsts.check). An invocation
// runs about ⌈QS/WG⌉ + tiles·(1 + SSTEPS·(D4 + 2) + ⌈TK/LPR⌉ + log2 LPR
// + ⌈TK/KG⌉) + KG
// loop iterations (FusedDecodeConsts.Iterations): the CPU plan cuts the
// keys into splits of at most as many tiles as keep that within
// lavapipe's loop cap; the hardware plan has none.

// NEG_MAX starts each row's running maximum: finite, so that exp(m − m')
// is never NaN and a hidden key's exp(−Inf − m) is 0.
const NEG_MAX: f32 = -3.4028234e38;

// stage_k loads invocation t's share of the K tile of keys [jt, jt +
// TK) for staging: its loads x = t + n·WG, n < KSTEPS, each unit x mod
// (D4/KU) of the tile's key x / (D4/KU) (k_unit, lib/units.wgsl), all
// issued before any is used; zeros past the tile and past jend. Kernel
// row offset ka as in main.
fn stage_k(b: u32, jt: u32, jend: u32, ka: u32, t: u32, paged: bool) -> array<array<vec4<f32>, KU>, KSTEPS> {
    var kt: array<array<vec4<f32>, KU>, KSTEPS>;
{{- range $n := seq .KSTEPS}}
    {
        let x = t + {{$n}}u * WG;
        if (x < TK * (D4 / KU) && jt + x / (D4 / KU) < jend) {
            let j = jt + x / (D4 / KU);
            var kr = j * P.k_r;
            if (paged) {
                kr = kv_row(b, j, P.k_b, P.k_r);
            }
            kt[{{$n}}] = k_unit(ka + kr, x % (D4 / KU));
        }
    }
{{- end}}
    return kt;
}

var<workgroup> ks: array<vec4<f32>, KS>;
var<workgroup> qs: array<vec4<f32>, QS>;
var<workgroup> ss: array<f32, SS>;
var<workgroup> ms: array<f32, R>;
var<workgroup> cs: array<f32, R>;
var<workgroup> lred: array<f32, LRED>;
var<workgroup> mred: array<f32, MRED>;
var<workgroup> spans: array<vec2<u32>, R>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32
{{- if .SG}}, @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_size) sgs: u32, @builtin(subgroup_id) sgid: u32, @builtin(num_subgroups) nsg: u32{{end}}) {
    let w = split_of(wid);
    // A workgroup past its sequence's rows returns as a whole, before
    // any barrier.
    if (w.row0 >= w.i1) {
        return;
    }
    let ninf = bitcast<f32>(NEG_INF);

    // The rows' scaled queries (zeros for rows past the sequence), the
    // keys of the split each row sees ([0, 0) past the sequence) and
    // their running maxima.
    for (var x = t; x < QS; x += WG) {
        let r = x / D4;
        let i = w.row0 + r % NQ;
        var qv = vec4<f32>(0.0);
        if (i < w.i1) {
            let h = w.h0 + r / NQ;
            qv = load_q(w.b * P.q_b + h * P.q_h + (w.q0 + i) * P.q_r - P.q_base, x % D4) * (P.scale * w.kvsc.x);
        }
        qs[x] = qv;
    }
    if (t < R) {
        let i = w.row0 + t % NQ;
        var span = vec2<u32>(0u, 0u);
        if (i < w.i1) {
            let kr = key_range(w.b, i);
            span = vec2<u32>(kr.x, min(w.j1, kr.y));
        }
        spans[t] = span;
        var m = NEG_MAX;
        if (w.sink) {
            m = sink_logit(w.h0 + t / NQ);
        }
        ms[t] = m;
    }

    // The P·V phase's share of this invocation: column unit e (vec4s
    // e·VU … e·VU + VU − 1) of rows rg + RG·x, x < RPI, over keys
    // kg + KG·y of each tile.
    let e = t % DVU;
    let u = t / DVU;
    let rg = u % RG;
    let kg = u / RG;
    let pv = u < RG * KG;
    // The sink's 1 joins one key group's sum.
    let l_init = select(0.0, 1.0, w.sink && kg == 0u);
{{- range $x := seq .RPI}}
    let r{{$x}} = min(rg + {{$x}}u * RG, R - 1u);
{{- range $c := seq $.VU}}
    var acc{{$x}}_{{$c}} = vec4<f32>(0.0);
{{- end}}
    var l{{$x}} = l_init;
{{- end}}

{{- $nv := ceildiv .TK .KG}}
{{- if .KN}}
    // The first tile's K (KN); each trip stores the tile it holds and
    // loads the next.
    var kn = stage_k(w.b, w.jstart, w.jend, w.ka, t, w.paged);
{{- end}}
    for (var jt = w.jstart; jt < w.jend; jt += TK) {
{{- if .AH}}
        // This invocation's V of the tile for the P·V phase (AH), keys
        // kg + KG·y, issued first: in flight through the K tile's
        // staging, the scores and the softmax. A key past the tile or
        // the split loads nothing and weighs 0.
{{- range $i := seq $nv}}
        let jj{{$i}} = kg + {{$i}}u * KG;
        let in{{$i}} = pv && jj{{$i}} < TK && jt + jj{{$i}} < w.jend;
        var vv{{$i}} = array<vec4<f32>, VU>();
        if (in{{$i}}) {
            vv{{$i}} = v_key(w.b, jt + jj{{$i}}, w.va, e, w.paged);
        }
{{- end}}
{{- end}}
        // No barrier first: the previous tile's P·V phase reads the
        // weights and factors (ss, cs), never the K tile, whose last
        // readers, the scores, are barriers behind; so the tile's K
        // loads are in flight while other invocations still add up the
        // previous tile's V. The barrier after staging keeps this tile's
        // scores from the weights until then.
{{- if not .KN}}
        let kn = stage_k(w.b, jt, w.jend, w.ka, t, w.paged);
{{- end}}
{{- range $n := seq .KSTEPS}}
        {
            let x = t + {{$n}}u * WG;
            if (x < TK * (D4 / KU)) {
                let at = (x / (D4 / KU)) * KP + (x % (D4 / KU)) * KU;
{{- range $c := seq $.KU}}
                ks[at + {{$c}}u] = kn[{{$n}}][{{$c}}];
{{- end}}
            }
        }
{{- end}}
        workgroupBarrier();
{{- if .KN}}
        // The next tile's K (KN), in flight through this tile's scores,
        // softmax and P·V, stored at the next trip's start.
        if (jt + TK < w.jend) {
            kn = stage_k(w.b, jt + TK, w.jend, w.ka, t, w.paged);
        }
{{- end}}
        for (var n = 0u; n < SSTEPS; n++) {
            let x = t + n * WG;
            if (x >= R * TK) {
                break;
            }
            let r = x / TK;
            let jj = x % TK;
            let j = jt + jj;
            let span = spans[r];
            var s = ninf;
            if (j >= span.x && j < span.y) {
                var dp = 0.0;
{{- $fd := unroll .D4 .UN}}
                {{loop "d4" "D4" .D4 $fd}}
{{- range $i := seq $fd}}
                    {{- step "d4" $i $.D4 $fd 16}}
                    dp += dot(qs[r * D4 + d4], ks[jj * KP + d4]);
                    {{- done $fd 16}}
{{- end}}
                }
                s = masked_score(w.b, w.h0 + r / NQ, w.row0 + r % NQ, j, true, span, dp, w.apos);
            }
            ss[r * TKP + jj] = s;
        }
        workgroupBarrier();
{{- if .SG}}
        // Each row's new maximum by one subgroup, each of its invocations
        // over the running maximum and every sgs-th key of the tile, then
        // subgroupMax; the same invocations then turn those keys' scores
        // into weights, with no barrier between, and the subgroup's first
        // keeps the maximum and the factor the row's sums are rescaled by.
        // Every invocation's read of ms[r] feeds the subgroupMax that the
        // first's write of it waits for.
        for (var r = sgid; r < R; r += nsg) {
            let m = ms[r];
            var mx = m;
            for (var jj = sid; jj < TK; jj += sgs) {
                mx = max(mx, ss[r * TKP + jj]);
            }
            let mt = subgroupMax(mx);
            for (var jj = sid; jj < TK; jj += sgs) {
                let at = r * TKP + jj;
                ss[at] = exp(ss[at] - mt);
            }
            if (sid == 0u) {
                cs[r] = exp(m - mt);
                ms[r] = mt;
            }
        }
{{- else}}
        // Each row's maximum over the tile: LPR invocations a row (LPR ≤
        // TK), each over every LPR-th key, then a tree.
        if (t < MRED) {
            let r = t / LPR;
            var mx = ss[r * TKP + t % LPR];
            for (var jj = t % LPR + LPR; jj < TK; jj += LPR) {
                mx = max(mx, ss[r * TKP + jj]);
            }
            mred[t] = mx;
        }
        for (var w = LPR / 2u; w > 0u; w >>= 1u) {
            workgroupBarrier();
            if (t < MRED && t % LPR < w) {
                mred[t] = max(mred[t], mred[t + w]);
            }
        }
        workgroupBarrier();
        if (t < R) {
            let m = ms[t];
            let mx = max(m, mred[t * LPR]);
            cs[t] = exp(m - mx);
            ms[t] = mx;
        }
        workgroupBarrier();
        for (var n = 0u; n < SSTEPS; n++) {
            let x = t + n * WG;
            if (x >= R * TK) {
                break;
            }
            let at = (x / TK) * TKP + x % TK;
            ss[at] = exp(ss[at] - ms[x / TK]);
        }
{{- end}}
        workgroupBarrier();
        if (pv) {
{{- range $x := seq .RPI}}
            let c{{$x}} = cs[r{{$x}}];
{{- range $c := seq $.VU}}
            acc{{$x}}_{{$c}} *= c{{$x}};
{{- end}}
            l{{$x}} *= c{{$x}};
{{- end}}
{{- $np := ceildiv .TK .KG}}
{{- $fp := unroll $np .PV}}
{{- if and (le $fp 1) (not .AH)}}
            for (var jj = kg; jj < TK; jj += KG) {
                let j = jt + jj;
                if (j >= w.jend) {
                    break;
                }
                let vv = v_key(w.b, j, w.va, e, w.paged);
{{- range $x := seq .RPI}}
                let p{{$x}} = ss[r{{$x}} * TKP + jj];
{{- range $c := seq $.VU}}
                acc{{$x}}_{{$c}} += p{{$x}} * vv[{{$c}}];
{{- end}}
                l{{$x}} += p{{$x}};
{{- end}}
            }
{{- else}}
{{- if .AH}}
            // Keys kg + KG·y of the tile, their V loaded at its start.
            {
{{- else}}
            // Keys kg + KG·y of the tile, y < {{$np}}, written out {{$fp}} a
            // trip: the trip's V loads are all issued before its sums use
            // them. A key past the tile or the split loads nothing and
            // weighs 0.
            {{loop "y" (printf "%du" $np) $np $fp}}
{{- range $i := seq $fp}}
                let jj{{$i}} = kg + {{at "y" $i $np $fp}} * KG;
                let in{{$i}} = jj{{$i}} < TK && jt + jj{{$i}} < w.jend;
                var vv{{$i}} = array<vec4<f32>, VU>();
                if (in{{$i}}) {
                    vv{{$i}} = v_key(w.b, jt + jj{{$i}}, w.va, e, w.paged);
                }
{{- end}}
{{- end}}
{{- range $i := seq $fp}}
{{- range $x := seq $.RPI}}
                let p{{$x}}_{{$i}} = select(0.0, ss[r{{$x}} * TKP + min(jj{{$i}}, TK - 1u)], in{{$i}});
{{- range $c := seq $.VU}}
                acc{{$x}}_{{$c}} += p{{$x}}_{{$i}} * vv{{$i}}[{{$c}}];
{{- end}}
                l{{$x}} += p{{$x}}_{{$i}};
{{- end}}
{{- end}}
            }
{{- end}}
        }
    }
    workgroupBarrier();

    // The key groups' sums, added into group 0's through the K tile's
    // memory, groups g0 … g0 + KGP − 1 a pass: group g0 + s's sum of
    // column vec4 c of its unit e of its row x at
    // ((x·KGP + s)·RG + rg)·DV4 + e·VU + c, its sum of p at
    // (x·KGP + s)·RG + rg. The passes' bounds are constants: every
    // invocation meets each barrier.
    for (var g0 = 1u; g0 < KG; g0 += KGP) {
        if (g0 > 1u) {
            workgroupBarrier();
        }
        if (pv && kg >= g0 && kg < g0 + KGP) {
            let s = kg - g0;
{{- range $x := seq .RPI}}
{{- range $c := seq $.VU}}
            ks[(({{$x}}u * KGP + s) * RG + rg) * DV4 + e * VU + {{$c}}u] = acc{{$x}}_{{$c}};
{{- end}}
            if (e == 0u) {
                lred[({{$x}}u * KGP + s) * RG + rg] = l{{$x}};
            }
{{- end}}
        }
        workgroupBarrier();
        if (pv && kg == 0u) {
            for (var s = 0u; s < min(KGP, KG - g0); s++) {
{{- range $x := seq .RPI}}
{{- range $c := seq $.VU}}
                acc{{$x}}_{{$c}} += ks[(({{$x}}u * KGP + s) * RG + rg) * DV4 + e * VU + {{$c}}u];
{{- end}}
                l{{$x}} += lred[({{$x}}u * KGP + s) * RG + rg];
{{- end}}
            }
        }
    }
    if (!pv || kg != 0u) {
        return;
    }
{{- range $x := seq .RPI}}
    {
        let r = rg + {{$x}}u * RG;
        let i = w.row0 + r % NQ;
        if (r < R && i < w.i1) {
            let h = w.h0 + r / NQ;
            var inv = 0.0;
            if (l{{$x}} > 0.0) {
                inv = w.kvsc.y / l{{$x}};
            }
            let oa0 = w.b * P.o_b + h * P.o_h + (w.q0 + i) * P.o_r + wid.z * P.o_z - P.o_base;
{{- range $c := seq $.VU}}
            store_o4(oa0, (e * VU + {{$c}}u) * 4u, acc{{$x}}_{{$c}} * inv);
{{- end}}
            if (e == 0u && (P.flags & F_LSE) != 0u) {
                var lse_i = ninf;
                if (l{{$x}} > 0.0) {
                    lse_i = ms[r] + log(l{{$x}});
                }
                lse[w.b * P.lse_b + h * P.lse_h + (w.q0 + i) * P.lse_r + wid.z * P.lse_z - P.lse_base] = lse_i;
            }
        }
    }
{{- end}}
}
