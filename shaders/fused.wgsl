// fused: flash attention over one chunk of keys, unrolled for lavapipe.
//
//   O[i] = Σ_j softmax_j(scale·q_i·k_j + bias[i,j]) · v_j     for j in [j0, j1)
//   LSE[i] = log Σ_j exp(scale·q_i·k_j + bias[i,j])
//
// A workgroup owns WG·R query rows of one head bh: invocation t owns rows
// row0 + r·WG + t for r < R, each with its scaled query, running maximum
// m, running sum l and unnormalised output in registers (the online
// softmax), and streams the chunk's keys one at a time straight from k and
// v. At the end it writes O = acc/l and LSE = m + log l; a row that sees no
// key in the chunk writes zeros and LSE = −Inf, so the host can merge
// chunks exactly (merge.wgsl).
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
// Masks: causal (bottom-right: query i sees keys j ≤ i + Nk − Nq; keys
// past the workgroup's last visible key are not visited), an additive
// bias (−Inf hides a key) and a keep-mask (0 hides a key), both broadcast
// through zero strides. A hidden key gets score −Inf and weight exactly 0;
// the loop itself is uniform (every invocation visits the same keys), so
// no invocation waits on another's branch. GQA: head h reads KV head h / G.
//
// Bindings: P (Params), q, k, v, bias, keep (read), o, lse (read_write).
// bias, keep and lse are only touched when their flag is set.
// Grid: x = query tiles of WG·R rows in [i0, i1), y = heads bh0, bh0+1, ….
// Limits: one loop iteration per key of the chunk, (j1−j0) in all; the host
// keeps that far below lavapipe's cap of about 65 535.
{{- $k4 := eq (mod .D 4) 0}}
{{- $v4 := eq (mod .DV 4) 0}}

// NEG_MAX starts the running maximum: finite, so exp(m − m') is never NaN.
const NEG_MAX: f32 = -3.4028234e38;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let bh = P.bh0 + wid.y;
    let b = bh / P.H;
    let h = bh % P.H;
    let kh = h / P.G;
    let row0 = P.i0 + wid.x * (WG * R);
    // Keys past the last row's limit are seen by no row of this tile.
    let jend = min(P.j1, key_limit(min(row0 + WG * R, P.i1) - 1u));
    let scale = bitcast<f32>(P.scale);
    let has_bias = (P.flags & 2u) != 0u;
    let has_keep = (P.flags & 4u) != 0u;
    let ninf = bitcast<f32>(NEG_INF);
    let ka = b * P.k_b + kh * P.k_h - P.k_base;
    let va = b * P.v_b + kh * P.v_h - P.v_base;
{{- range $r := seq .R}}

    // Row {{$r}}. A row past i1 reads row i1 − 1 (any valid row), scaled by 0,
    // and sees no key.
    let i{{$r}} = row0 + {{$r}}u * WG + t;
    let live{{$r}} = i{{$r}} < P.i1;
    let lim{{$r}} = select(P.j0, max(P.j0, min(P.j1, key_limit(i{{$r}}))), live{{$r}});
    let qa{{$r}} = b * P.q_b + h * P.q_h + min(i{{$r}}, P.i1 - 1u) * P.q_r - P.q_base;
    let qs{{$r}} = select(0.0, scale, live{{$r}});
{{- range $d := seq $.D4}}
    let q{{$r}}_{{$d}} = {{load4 "q" (printf "qa%d" $r) (mul $d 4) (sub $.D (mul $d 4))}} * qs{{$r}};
{{- end}}
    var m{{$r}} = NEG_MAX;
    var l{{$r}} = 0.0;
{{- range $e := seq $.DV4}}
    var a{{$r}}_{{$e}} = vec4<f32>(0.0);
{{- end}}
{{- end}}

    for (var j = P.j0; j < jend; j++) {
{{- if $k4}}
        let kj = (ka + j * P.k_r) >> 2u;
{{- else}}
        let kj = ka + j * P.k_r;
{{- end}}
{{- range $d := seq .D4}}
{{- if $k4}}
        let k{{$d}} = k[kj + {{$d}}u];
{{- else}}
        let k{{$d}} = {{load4 "k" "kj" (mul $d 4) (sub $.D (mul $d 4))}};
{{- end}}
{{- end}}
{{- range $r := seq .R}}
        var y{{$r}} = 0.0;
{{- end}}
        if (has_bias || has_keep) {
{{- range $r := seq .R}}
            if (j < lim{{$r}}) {
                if (has_bias) {
                    y{{$r}} = bias[b * P.bias_b + h * P.bias_h + i{{$r}} * P.bias_r + j * P.bias_c - P.bias_base];
                }
                if (has_keep && keep[b * P.keep_b + h * P.keep_h + i{{$r}} * P.keep_r + j * P.keep_c - P.keep_base] == 0.0) {
                    y{{$r}} = ninf;
                }
            }
{{- end}}
        }
{{- range $r := seq .R}}
        let t{{$r}} = {{range $d := seq $.D4}}{{if $d}} + {{end}}q{{$r}}_{{$d}} * k{{$d}}{{end}};
        let s{{$r}} = select(t{{$r}}.x + t{{$r}}.y + t{{$r}}.z + t{{$r}}.w + y{{$r}}, ninf, j >= lim{{$r}});
        let mt{{$r}} = max(m{{$r}}, s{{$r}});
        let c{{$r}} = exp(m{{$r}} - mt{{$r}});
        let p{{$r}} = exp(s{{$r}} - mt{{$r}});
        l{{$r}} = l{{$r}} * c{{$r}} + p{{$r}};
        m{{$r}} = mt{{$r}};
{{- end}}
{{- if $v4}}
        let vj = (va + j * P.v_r) >> 2u;
{{- else}}
        let vj = va + j * P.v_r;
{{- end}}
{{- range $e := seq .DV4}}
        {
{{- if $v4}}
            let x = v[vj + {{$e}}u];
{{- else}}
            let x = {{load4 "v" "vj" (mul $e 4) (sub $.DV (mul $e 4))}};
{{- end}}
{{- range $r := seq $.R}}
            a{{$r}}_{{$e}} = a{{$r}}_{{$e}} * c{{$r}} + p{{$r}} * x;
{{- end}}
        }
{{- end}}
    }
{{- range $r := seq .R}}

    if (live{{$r}}) {
        var inv = 0.0;
        if (l{{$r}} > 0.0) {
            inv = 1.0 / l{{$r}};
        }
        let oa = b * P.o_b + h * P.o_h + i{{$r}} * P.o_r - P.o_base;
{{- range $e := seq $.DV4}}
{{- range $c := seq (min 4 (sub $.DV (mul $e 4)))}}
        o[oa + {{add (mul $e 4) $c}}u] = a{{$r}}_{{$e}}[{{$c}}] * inv;
{{- end}}
{{- end}}
        if ((P.flags & 8u) != 0u) {
            var x = ninf;
            if (l{{$r}} > 0.0) {
                x = m{{$r}} + log(l{{$r}});
            }
            lse[b * P.lse_b + h * P.lse_h + i{{$r}} * P.lse_r - P.lse_base] = x;
        }
    }
{{- end}}
}
