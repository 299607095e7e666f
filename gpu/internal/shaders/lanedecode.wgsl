// lanedecode: flash attention over one split of keys for the few query
// rows of a decoding step, as fuseddecode.wgsl computes it (the same
// rows, splits, masks, bindings and outputs), with no workgroup memory
// and no barrier in its loop over the keys (FlashDecoding's split-K; the
// team of lanes a key as llama.cpp's CUDA vector kernel and ggml-vulkan's
// flash attention share a K row among a subgroup's invocations).
//
// A workgroup owns R = HG·NQ rows — query rows [row0, row0+NQ) of the HG
// query heads h0 … h0+HG−1 that share KV head h0/G — and split z of the
// keys. Its WG invocations are T = WG/L teams of L lanes, a team L
// adjacent invocations of one subgroup (L divides the subgroup size,
// which the host checks: LaneDecodeConsts). Lane l of a team owns the
// units u = l, l + L, … of a K row (KU vec4s each, KPL of them) and of a
// V row (VU vec4s, VPL of them): it holds the rows' scaled queries at
// its K units and their sums of p·v at its V units, all in registers.
//
// Each trip takes KB keys a team, key jt + y·T + τ for team τ, y < KB,
// so that adjacent teams read adjacent rows: every lane issues its K
// and V loads of all KB keys, then adds up its share of each score, and
// the team's lanes sum the shares by subgroupShuffleXor (log2 L steps),
// after which every lane of the team holds the KB·R scores. Each row's
// running maximum m, sum l and factor exp(m_old − m_new) are then the
// same in every lane of the team (online softmax, a rescale a trip).
// Every lane runs every trip (the trips are the workgroup's), so the
// shuffles run in uniform control flow; a key past the split weighs 0.
//
// After the last trip the teams meet in workgroup memory: each row's
// maximum over the teams (wm), each team's sums rescaled to it, then
// added into team 0's TP teams a pass (red, lred), and team 0 writes
// O = acc/l and LSE = m + log l (zeros and −Inf for a row that sees no
// key), which merge.wgsl folds across the splits as fuseddecode.wgsl's.
//
// Bindings: P (Params), q, k, v, bias, keep, vars (read), o, lse
// (read_write), as fuseddecode.wgsl's.
// Grid: as fuseddecode.wgsl's (x tiles of NQ query rows, y groups of HG
// heads, z splits of the keys).
// Workgroup memory: T·R f32 (wm), TP·R·DV4 vec4s and TP·R f32 (red,
// lred): LaneDecodeConsts.WorkgroupBytes.
// Limits: L a power of two from 2 dividing WG and every subgroup size
// (LaneDecodeConsts.check; the host checks the sizes). A lane holds
// about R·(KPL·KU + VPL·VU) + KB·(KPL·KU + VPL·VU) vec4s
// (LaneDecodeConsts.Registers), which the host bounds. An invocation
// runs ⌈keys/(KB·T)⌉ trips of the key loop, plus R·T + ⌈(T−1)/TP⌉·(1 +
// TP) at the end (laneDecodeLoops), with no loop cap of its own.

// NEG_MAX starts each row's running maximum: finite, so that exp(m − m')
// is never NaN and a hidden key's exp(−Inf − m) is 0.
const NEG_MAX: f32 = -3.4028234e38;

// q_unit is unit u of a query row at element at (a K unit's columns),
// scaled by sc; zeros past the row's units.
fn q_unit(at: u32, u: u32, sc: f32) -> array<vec4<f32>, KU> {
    var qu = array<vec4<f32>, KU>();
    if (u < NKU) {
{{- range $c := seq .KU}}
        qu[{{$c}}] = load_q(at, u * KU + {{$c}}u) * sc;
{{- end}}
    }
    return qu;
}

var<workgroup> wm: array<f32, WM>;
var<workgroup> red: array<vec4<f32>, RED>;
var<workgroup> lred: array<f32, LRED>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_size) sgs: u32,
    @builtin(subgroup_id) sgid: u32) {
    let w = split_of(wid);
    // A workgroup past its sequence's rows returns as a whole, before
    // any barrier.
    if (w.row0 >= w.i1) {
        return;
    }
    let ninf = bitcast<f32>(NEG_INF);
    // Team τ is L adjacent lanes of one subgroup.
    let lane = sid % L;
    let team = sgid * (sgs / L) + sid / L;

    // Each row's head, query, keys it sees and scaled query units, and
    // its running maximum, sum and sums of p·v (the sink's 1 in team 0's
    // sum; its logit starts every team's maximum).
{{- range $x := seq .R}}
    let hx{{$x}} = w.h0 + {{$x}}u / NQ;
    let ix{{$x}} = w.row0 + {{$x}}u % NQ;
    var spx{{$x}} = vec2<u32>(0u, 0u);
    var m{{$x}} = NEG_MAX;
{{- range $i := seq $.KPL}}
    var q{{$x}}_{{$i}} = array<vec4<f32>, KU>();
{{- end}}
    if (ix{{$x}} < w.i1) {
        let kr = key_range(w.b, ix{{$x}});
        spx{{$x}} = vec2<u32>(kr.x, min(w.j1, kr.y));
        let qa = w.b * P.q_b + hx{{$x}} * P.q_h + (w.q0 + ix{{$x}}) * P.q_r - P.q_base;
{{- range $i := seq $.KPL}}
        q{{$x}}_{{$i}} = q_unit(qa, lane + {{$i}}u * L, P.scale * w.kvsc.x);
{{- end}}
    }
    if (w.sink) {
        m{{$x}} = sink_logit(hx{{$x}});
    }
    var l{{$x}} = select(0.0, 1.0, w.sink && team == 0u);
{{- range $i := seq $.VPL}}
{{- range $c := seq $.VU}}
    var acc{{$x}}_{{$i}}_{{$c}} = vec4<f32>(0.0);
{{- end}}
{{- end}}
{{- end}}

    for (var jt = w.jstart; jt < w.jend; jt += KB * T) {
        // The trip's K and V loads, all issued before any is used.
{{- range $y := seq .KB}}
        let jy{{$y}} = jt + {{$y}}u * T + team;
        let iny{{$y}} = jy{{$y}} < w.jend;
        var kry{{$y}} = jy{{$y}} * P.k_r;
        var vry{{$y}} = jy{{$y}} * P.v_r;
        if (w.paged && iny{{$y}}) {
            kry{{$y}} = kv_row(w.b, jy{{$y}}, P.k_b, P.k_r);
            vry{{$y}} = kv_row(w.b, jy{{$y}}, P.v_b, P.v_r);
        }
{{- range $i := seq $.KPL}}
        var k{{$y}}_{{$i}} = array<vec4<f32>, KU>();
        if (iny{{$y}} && lane + {{$i}}u * L < NKU) {
            k{{$y}}_{{$i}} = k_unit(w.ka + kry{{$y}}, lane + {{$i}}u * L);
        }
{{- end}}
{{- range $i := seq $.VPL}}
        var v{{$y}}_{{$i}} = array<vec4<f32>, VU>();
        if (iny{{$y}} && lane + {{$i}}u * L < NVU) {
            v{{$y}}_{{$i}} = v_unit(w.va + vry{{$y}}, lane + {{$i}}u * L);
        }
{{- end}}
{{- end}}
        // This lane's shares of the KB·R scores, then the team's sums.
{{- range $y := seq .KB}}
{{- range $x := seq $.R}}
        var d{{$y}}_{{$x}} = 0.0;
{{- range $i := seq $.KPL}}
{{- range $c := seq $.KU}}
        d{{$y}}_{{$x}} += dot(q{{$x}}_{{$i}}[{{$c}}], k{{$y}}_{{$i}}[{{$c}}]);
{{- end}}
{{- end}}
{{- end}}
{{- end}}
{{- range $w := halves .L}}
{{- range $y := seq $.KB}}
{{- range $x := seq $.R}}
        d{{$y}}_{{$x}} += subgroupShuffleXor(d{{$y}}_{{$x}}, {{$w}}u);
{{- end}}
{{- end}}
{{- end}}
        // The scores, −Inf where the row may not see the key; each row's
        // new maximum, its weights and the factor its sums are rescaled
        // by.
{{- range $x := seq .R}}
{{- range $y := seq $.KB}}
        let s{{$y}}_{{$x}} = masked_score(w.b, hx{{$x}}, ix{{$x}}, jy{{$y}}, iny{{$y}}, spx{{$x}}, d{{$y}}_{{$x}}, w.apos);
{{- end}}
        var mx{{$x}} = m{{$x}};
{{- range $y := seq $.KB}}
        mx{{$x}} = max(mx{{$x}}, s{{$y}}_{{$x}});
{{- end}}
        let c{{$x}} = exp(m{{$x}} - mx{{$x}});
        m{{$x}} = mx{{$x}};
{{- range $y := seq $.KB}}
        let p{{$y}}_{{$x}} = exp(s{{$y}}_{{$x}} - mx{{$x}});
{{- end}}
        l{{$x}} = l{{$x}} * c{{$x}}{{range $y := seq $.KB}} + p{{$y}}_{{$x}}{{end}};
{{- range $i := seq $.VPL}}
{{- range $c := seq $.VU}}
        acc{{$x}}_{{$i}}_{{$c}} = acc{{$x}}_{{$i}}_{{$c}} * c{{$x}}{{range $y := seq $.KB}} + p{{$y}}_{{$x}} * v{{$y}}_{{$i}}[{{$c}}]{{end}};
{{- end}}
{{- end}}
{{- end}}
    }

    // The teams' maxima; each team's sums rescaled to the row's.
    if (lane == 0u) {
{{- range $x := seq .R}}
        wm[team * R + {{$x}}u] = m{{$x}};
{{- end}}
    }
    workgroupBarrier();
{{- range $x := seq .R}}
    {
        var mt = wm[{{$x}}u];
        for (var s = 1u; s < T; s++) {
            mt = max(mt, wm[s * R + {{$x}}u]);
        }
        let f = exp(m{{$x}} - mt);
        m{{$x}} = mt;
        l{{$x}} *= f;
{{- range $i := seq $.VPL}}
{{- range $c := seq $.VU}}
        acc{{$x}}_{{$i}}_{{$c}} *= f;
{{- end}}
{{- end}}
    }
{{- end}}

    // The teams' sums, added into team 0's TP teams a pass: team g0 + s's
    // sum of column vec4 c of its unit u of row x at (s·R + x)·DV4 + u·VU
    // + c, its sum of p at s·R + x. The passes' bounds are constants:
    // every invocation meets each barrier.
    for (var g0 = 1u; g0 < T; g0 += TP) {
        workgroupBarrier();
        if (team >= g0 && team < g0 + TP) {
            let s = team - g0;
{{- range $x := seq .R}}
{{- range $i := seq $.VPL}}
            if (lane + {{$i}}u * L < NVU) {
{{- range $c := seq $.VU}}
                red[(s * R + {{$x}}u) * DV4 + (lane + {{$i}}u * L) * VU + {{$c}}u] = acc{{$x}}_{{$i}}_{{$c}};
{{- end}}
            }
{{- end}}
            if (lane == 0u) {
                lred[s * R + {{$x}}u] = l{{$x}};
            }
{{- end}}
        }
        workgroupBarrier();
        if (team == 0u) {
            for (var s = 0u; s < min(TP, T - g0); s++) {
{{- range $x := seq .R}}
{{- range $i := seq $.VPL}}
                if (lane + {{$i}}u * L < NVU) {
{{- range $c := seq $.VU}}
                    acc{{$x}}_{{$i}}_{{$c}} += red[(s * R + {{$x}}u) * DV4 + (lane + {{$i}}u * L) * VU + {{$c}}u];
{{- end}}
                }
{{- end}}
                l{{$x}} += lred[s * R + {{$x}}u];
{{- end}}
            }
        }
    }
    if (team != 0u) {
        return;
    }
{{- range $x := seq .R}}
    if (ix{{$x}} < w.i1) {
        var inv = 0.0;
        if (l{{$x}} > 0.0) {
            inv = w.kvsc.y / l{{$x}};
        }
        let oa0 = w.b * P.o_b + hx{{$x}} * P.o_h + (w.q0 + ix{{$x}}) * P.o_r + wid.z * P.o_z - P.o_base;
{{- range $i := seq $.VPL}}
        if (lane + {{$i}}u * L < NVU) {
{{- range $c := seq $.VU}}
            store_o4(oa0, ((lane + {{$i}}u * L) * VU + {{$c}}u) * 4u, acc{{$x}}_{{$i}}_{{$c}} * inv);
{{- end}}
        }
{{- end}}
        if (lane == 0u && (P.flags & F_LSE) != 0u) {
            var lse_i = ninf;
            if (l{{$x}} > 0.0) {
                lse_i = m{{$x}} + log(l{{$x}});
            }
            lse[w.b * P.lse_b + hx{{$x}} * P.lse_h + (w.q0 + ix{{$x}}) * P.lse_r + wid.z * P.lse_z - P.lse_base] = lse_i;
        }
    }
{{- end}}
}
