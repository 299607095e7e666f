// merge: folds the partial results of P.parts key ranges into the running
// one, exactly.
//
//   M   = max(lse, plse_0, …, plse_{parts−1})
//   L   = M + log(exp(lse − M) + Σ_z exp(plse_z − M))
//   O   = exp(lse − L)·O + Σ_z exp(plse_z − L)·PO_z
//   lse = L
//
// (O, lse) hold the result over the keys seen so far and (PO_z, plse_z),
// z < parts, those of further key ranges (the splits of one dispatch of
// a fused kernel, its grid's z, side by side po_z and plse_z elements
// apart), all normalised, as the fused kernels write them. Under P.init
// (O, lse) hold nothing yet: the parts are all of the row's first keys,
// and the row is written from them alone. A side with LSE = −Inf saw no
// key and weighs nothing; when every side is −Inf the row is zeros with
// LSE −Inf (left as it is when not init).
//
// L invocations share a row (WG/L rows a workgroup). Each finds the row's
// M and L from the parts' LSEs (all L read the same few words) and then
// sums its own columns, d = lane + L·c, four at a time in a vec4 over
// the parts: adjacent invocations read adjacent elements of each part,
// and O is read and written once; lane 0 writes the row's new LSE after
// a barrier, once every lane has read the old one. The host picks L: 1
// on a CPU-type adapter, which pays for every load an invocation makes,
// a subgroup's worth on a hardware one, where a decoding step's few rows
// fold many parts. Under UN > 1 each loop over the parts takes UN of
// them a trip, their loads issued together: a driver that cannot unroll
// a loop bounded by naga's counter waits for each trip's loads in turn,
// and a decoding step's merge folds up to 256 parts with few rows.
//
// Under PG > 1 a workgroup holds one row, and its parts are shared out:
// WG = PG·L invocations, PG part groups of L column lanes. The row's M
// and L come from a tree over every invocation's parts' LSEs, then group
// g sums parts g, g + PG, … of each lane's columns, UN parts a trip,
// and group 0 adds the groups' sums through workgroup memory and writes
// the row. A decoding step folds hundreds of parts into a few rows: one
// invocation a row's column folding them in turn waits for each part's
// load, where here each invocation folds parts/PG of them, their loads
// in flight together.
//
// Packed query rows (F_PACKQ): batch b's rows start at seq_q0(b) in o,
// lse, po and plse and end at seq_rows(b) (lib/seqs.wgsl).
//
// Bindings: P (Params), po, plse, vars (read), o, lse (read_write); vars
// is only read under F_PACKQ.
// Grid: x = tiles of WG/L query rows in [i0, i1) (rows under PG > 1),
// y = heads bh0, bh0+1, ….
// Limits: 2·parts + ⌈Dv/4L⌉·(parts + 1) loop iterations per invocation
// (⌈Dv/L⌉ when the row is zeros; under PG > 1, 2·⌈parts/WG⌉ +
// ⌈Dv/4L⌉·(⌈parts/PG⌉ + PG) + 2·log2 WG); the host bounds parts.
// Workgroup memory: none; under PG > 1, WG f32 and WG vec4s (20·WG
// bytes).

// po4 and o4 read columns d, d + L, d + 2L, d + 3L of the row at at in
// po and o, zeros past Dv.
fn po4(at: u32, d: u32) -> vec4<f32> {
    var r = vec4<f32>(0.0);
    if (d < P.Dv) { r.x = po[at + d]; }
    if (d + L < P.Dv) { r.y = po[at + d + L]; }
    if (d + 2u * L < P.Dv) { r.z = po[at + d + 2u * L]; }
    if (d + 3u * L < P.Dv) { r.w = po[at + d + 3u * L]; }
    return r;
}

fn o4(at: u32, d: u32) -> vec4<f32> {
    var r = vec4<f32>(0.0);
    if (d < P.Dv) { r.x = o[at + d]; }
    if (d + L < P.Dv) { r.y = o[at + d + L]; }
    if (d + 2u * L < P.Dv) { r.z = o[at + d + 2u * L]; }
    if (d + 3u * L < P.Dv) { r.w = o[at + d + 3u * L]; }
    return r;
}

// RowAt is where query row r of batch b, head h lies in lse, plse, o and
// po.
struct RowAt {
    la: u32,
    pl: u32,
    oa: u32,
    pa: u32,
}

fn row_at(b: u32, h: u32, r: u32) -> RowAt {
    return RowAt(b * P.lse_b + h * P.lse_h + r * P.lse_r - P.lse_base,
        b * P.plse_b + h * P.plse_h + r * P.plse_r - P.plse_base,
        b * P.o_b + h * P.o_h + r * P.o_r - P.o_base,
        b * P.po_b + h * P.po_h + r * P.po_r - P.po_base);
}

// old_lse is the row's LSE before this merge at la: −Inf under init,
// where (O, lse) hold nothing yet. (NEG_INF named outside bitcast too:
// gogpu/naga resolves a constant named only inside one, and declared
// after the function, as no constant; TestCompilerGaps.)
fn old_lse(la: u32) -> f32 {
    let none = NEG_INF;
    if (P.init != 0u) {
        return bitcast<f32>(none);
    }
    return lse[la];
}

{{- if gt .PG 1}}

var<workgroup> red: array<f32, WG>;
var<workgroup> ared: array<vec4<f32>, WG>;

// maxl is the larger of two LSEs, −Inf (no key seen) below every other.
fn maxl(a: f32, b: f32) -> f32 {
    if (bitcast<u32>(a) == NEG_INF) {
        return b;
    }
    if (bitcast<u32>(b) == NEG_INF) {
        return a;
    }
    return max(a, b);
}

// weight is exp(lb − mx)·inv, 0 for a side that saw no key.
fn weight(lb: f32, mx: f32, inv: f32) -> f32 {
    return select(exp(lb - mx) * inv, 0.0, bitcast<u32>(lb) == NEG_INF);
}
{{- end}}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
{{- if gt .PG 1}}
    let bh = P.bh0 + wid.y;
    let b = bh / P.H;
    let h = bh % P.H;
    let i = P.i0 + wid.x;
    // A row past its sequence's: the whole workgroup returns, before any
    // barrier.
    if (i >= min(P.i1, seq_rows(b))) {
        return;
    }
    let lane = t % L;
    let g = t / L;
    let at = row_at(b, h, seq_q0(b) + i);
    let la_at = at.la;
    let pl_at = at.pl;
    let oa = at.oa;
    let pa = at.pa;
    let ninf = bitcast<f32>(NEG_INF);
    let init = P.init != 0u;
    let la = old_lse(la_at);
    // M: the largest of the row's LSE and its parts', each invocation's
    // over parts t, t + WG, …, then a tree.
    var mx = la;
    for (var z = t; z < P.parts; z += WG) {
        mx = maxl(mx, plse[pl_at + z * P.plse_z]);
    }
    red[t] = mx;
    for (var w = WG / 2u; w > 0u; w >>= 1u) {
        workgroupBarrier();
        if (t < w) {
            red[t] = maxl(red[t], red[t + w]);
        }
    }
    workgroupBarrier();
    mx = red[0];
    // Every invocation has read M before the sums' tree overwrites it.
    workgroupBarrier();
    // Σ exp(LSE − M) over the same sides (0 where M is −Inf: no side saw
    // a key).
    var sum = 0.0;
    if (t == 0u) {
        sum = weight(la, mx, 1.0);
    }
    for (var z = t; z < P.parts; z += WG) {
        sum += weight(plse[pl_at + z * P.plse_z], mx, 1.0);
    }
    red[t] = sum;
    for (var w = WG / 2u; w > 0u; w >>= 1u) {
        workgroupBarrier();
        if (t < w) {
            red[t] += red[t + w];
        }
    }
    workgroupBarrier();
    sum = red[0];
    let inv = select(0.0, 1.0 / sum, sum > 0.0);
    // O's own weight (0 when it saw nothing or holds nothing yet). A row
    // that no side saw is left as it is, or written as zeros with LSE
    // −Inf under init.
    let wa = weight(la, mx, inv);
    let put = init || bitcast<u32>(mx) != NEG_INF;
    // Lane's columns d, d + L, d + 2L, d + 3L of each block of 4L, group
    // g's parts {{.UN}} a trip, their loads issued before their sums; the
    // groups' sums added by group 0. The blocks' bounds are uniform:
    // every invocation meets each barrier.
    for (var d0 = 0u; d0 < P.Dv; d0 += 4u * L) {
        let d = d0 + lane;
        var acc = vec4<f32>(0.0);
        for (var z0 = g; z0 < P.parts; z0 += {{.PG}}u * {{.UN}}u) {
{{- range $i := seq .UN}}
            let z{{$i}} = min(z0 + {{$i}}u * {{$.PG}}u, P.parts - 1u);
            let lb{{$i}} = plse[pl_at + z{{$i}} * P.plse_z];
            let pv{{$i}} = po4(pa + z{{$i}} * P.po_z, d);
{{- end}}
{{- range $i := seq .UN}}
            if (z0 + {{$i}}u * {{$.PG}}u < P.parts) {
                acc += weight(lb{{$i}}, mx, inv) * pv{{$i}};
            }
{{- end}}
        }
        ared[t] = acc;
        workgroupBarrier();
        if (g == 0u && put) {
            var y = vec4<f32>(0.0);
            if (wa != 0.0) {
                y = wa * o4(oa, d);
            }
            for (var s = 0u; s < {{.PG}}u; s++) {
                y += ared[s * L + lane];
            }
            if (d < P.Dv) { o[oa + d] = y.x; }
            if (d + L < P.Dv) { o[oa + d + L] = y.y; }
            if (d + 2u * L < P.Dv) { o[oa + d + 2u * L] = y.z; }
            if (d + 3u * L < P.Dv) { o[oa + d + 3u * L] = y.w; }
        }
        workgroupBarrier();
    }
    if (t == 0u && put) {
        var lnew = ninf;
        if (sum > 0.0) {
            lnew = mx + log(sum);
        }
        lse[la_at] = lnew;
    }
{{- else}}
    let bh = P.bh0 + wid.y;
    let b = bh / P.H;
    let h = bh % P.H;
    let i = P.i0 + wid.x * (WG / L) + t / L;
    let lane = t % L;
    // The row's new LSE, which lane 0 writes after the barrier below once
    // every lane has read the old one; unset (keep) when the row holds
    // nothing new.
    var lnew = 0.0;
    var keep = true;
    if (i < min(P.i1, seq_rows(b))) {
        let at = row_at(b, h, seq_q0(b) + i);
        let pl_at = at.pl;
        let oa = at.oa;
        let pa = at.pa;
        let ninf = bitcast<f32>(NEG_INF);
        let init = P.init != 0u;
        let la = old_lse(at.la);
        var mx = la;
{{- if le .UN 1}}
        for (var z = 0u; z < P.parts; z++) {
            let lb = plse[pl_at + z * P.plse_z];
            if (bitcast<u32>(lb) != NEG_INF) {
                if (bitcast<u32>(mx) == NEG_INF) {
                    mx = lb;
                } else {
                    mx = max(mx, lb);
                }
            }
        }
{{- else}}
        // Each loop over the parts takes {{.UN}} a trip, their loads all
        // issued before the first is used (a part past P.parts reads the
        // last one again and is skipped), in the loop's order.
        for (var z0 = 0u; z0 < P.parts; z0 += {{.UN}}u) {
            {{- lets "lb" "plse[pl_at + min(z0 + %du, P.parts - 1u) * P.plse_z]" .UN 12}}
{{- range $i := seq .UN}}
            if (z0 + {{$i}}u < P.parts && bitcast<u32>(lb{{$i}}) != NEG_INF) {
                if (bitcast<u32>(mx) == NEG_INF) {
                    mx = lb{{$i}};
                } else {
                    mx = max(mx, lb{{$i}});
                }
            }
{{- end}}
        }
{{- end}}
        if (bitcast<u32>(mx) == NEG_INF) {
            // No side saw a key.
            if (init) {
                for (var d = lane; d < P.Dv; d += L) {
                    o[oa + d] = 0.0;
                }
                lnew = ninf;
                keep = false;
            }
        } else {
            var sum = 0.0;
            if (bitcast<u32>(la) != NEG_INF) {
                sum = exp(la - mx);
            }
{{- if le .UN 1}}
            for (var z = 0u; z < P.parts; z++) {
                let lb = plse[pl_at + z * P.plse_z];
                if (bitcast<u32>(lb) != NEG_INF) {
                    sum += exp(lb - mx);
                }
            }
{{- else}}
            for (var z0 = 0u; z0 < P.parts; z0 += {{.UN}}u) {
                {{- lets "lb" "plse[pl_at + min(z0 + %du, P.parts - 1u) * P.plse_z]" .UN 16}}
{{- range $i := seq .UN}}
                if (z0 + {{$i}}u < P.parts && bitcast<u32>(lb{{$i}}) != NEG_INF) {
                    sum += exp(lb{{$i}} - mx);
                }
{{- end}}
            }
{{- end}}
            let inv = 1.0 / sum;
            // O's own weight (0 when it saw nothing or holds nothing yet),
            // then each part's.
            var wa = 0.0;
            if (bitcast<u32>(la) != NEG_INF) {
                wa = exp(la - mx) * inv;
            }
            for (var d = lane; d < P.Dv; d += 4u * L) {
                var acc = vec4<f32>(0.0);
                if (wa != 0.0) {
                    acc = wa * o4(oa, d);
                }
{{- if le .UN 1}}
                for (var z = 0u; z < P.parts; z++) {
                    let lb = plse[pl_at + z * P.plse_z];
                    if (bitcast<u32>(lb) == NEG_INF) {
                        continue;
                    }
                    acc += exp(lb - mx) * inv * po4(pa + z * P.po_z, d);
                }
{{- else}}
                for (var z0 = 0u; z0 < P.parts; z0 += {{.UN}}u) {
{{- range $i := seq .UN}}
                    let z{{$i}} = min(z0 + {{$i}}u, P.parts - 1u);
                    let lb{{$i}} = plse[pl_at + z{{$i}} * P.plse_z];
                    let pv{{$i}} = po4(pa + z{{$i}} * P.po_z, d);
{{- end}}
{{- range $i := seq .UN}}
                    if (z0 + {{$i}}u < P.parts && bitcast<u32>(lb{{$i}}) != NEG_INF) {
                        acc += exp(lb{{$i}} - mx) * inv * pv{{$i}};
                    }
{{- end}}
                }
{{- end}}
                o[oa + d] = acc.x;
                if (d + L < P.Dv) { o[oa + d + L] = acc.y; }
                if (d + 2u * L < P.Dv) { o[oa + d + 2u * L] = acc.z; }
                if (d + 3u * L < P.Dv) { o[oa + d + 3u * L] = acc.w; }
            }
            lnew = mx + log(sum);
            keep = false;
        }
    }
    // The lanes of a row need not run together (lavapipe runs 8 at a
    // time, one batch after another; nothing in WGSL makes a subgroup's
    // lanes read before one of them writes): every lane has read the
    // row's old LSE before lane 0 replaces it.
    workgroupBarrier();
    if (!keep && lane == 0u) {
        lse[row_at(b, h, seq_q0(b) + i).la] = lnew;
    }
{{- end}}
}
