// Peer runner for `attn bench -peers`: onnxruntime-node running a one-node
// com.microsoft MultiHeadAttention model, on the CPU EP (ort-cpu-mha) or the
// WebGPU EP (ort-webgpu-mha), or a one-node com.microsoft
// GroupQueryAttention model with a past KV cache on the CPU EP
// (ort-cpu-gqa: Nq new tokens over a cache of N keys). One process
// measures one point; the protocol is in README.md:
//
//   node ort.mjs --impl ort-cpu-mha --dir DIR --b B --h H --kvh KVH --n N
//       [--nq NQ] [--dtype f32|f16] --d D --causal 0|1 --scale S
//       --budget-s SEC --min-runs R --threads T
//   node ort.mjs --probe --impl ort-webgpu-mha
//
// The last line of stdout is one JSON object; O goes to DIR/o-<impl>.npy.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const python = process.env.ATTN_PEER_PYTHON || '/usr/bin/python3';

// WebGPU can hang in Dawn or in a software Vulkan driver; the EP is first
// tried in a child process that is killed after this many seconds.
const webgpuCheckTimeoutS = Number(process.env.ATTN_PEER_WEBGPU_TIMEOUT_S || 60);

// op: the model's one node (mha_model.py or gqa_model.py); decode: takes
// Nq < N; dtypes: the storage dtypes it takes.
const impls = {
  'ort-cpu-mha': { ep: 'cpu', epName: 'CPU EP', op: 'MultiHeadAttention', decode: false, dtypes: ['f32'] },
  'ort-webgpu-mha': { ep: 'webgpu', epName: 'WebGPU EP', op: 'MultiHeadAttention', decode: false, dtypes: ['f32'] },
  'ort-cpu-gqa': { ep: 'cpu', epName: 'CPU EP', op: 'GroupQueryAttention', decode: true, dtypes: ['f32', 'f16'] },
};

function ortVersion() {
  try {
    const pj = path.join(here, 'node_modules', 'onnxruntime-node', 'package.json');
    return JSON.parse(fs.readFileSync(pj, 'utf8')).version;
  } catch {
    return 'missing';
  }
}

function versionString(impl) {
  return `onnxruntime-node ${ortVersion()}, ${impls[impl].epName}, com.microsoft.${impls[impl].op}`;
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function parseArgs(argv) {
  const a = {};
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (!k.startsWith('--')) throw new Error(`unexpected argument ${JSON.stringify(k)}`);
    const name = k.slice(2);
    if (name === 'probe') {
      a.probe = true;
      continue;
    }
    if (i + 1 >= argv.length) throw new Error(`${k} needs a value`);
    a[name] = argv[++i];
  }
  return a;
}

function intArg(a, name, min) {
  const s = a[name];
  if (s === undefined) throw new Error(`missing --${name}`);
  const v = Number(s);
  if (!Number.isInteger(v) || v < min) throw new Error(`--${name} ${s}: want an integer >= ${min}`);
  return v;
}

function numArg(a, name) {
  const s = a[name];
  if (s === undefined) throw new Error(`missing --${name}`);
  const v = Number(s);
  if (!Number.isFinite(v)) throw new Error(`--${name} ${s}: want a number`);
  return v;
}

// ---- .npy v1.0/2.0/3.0 float32/float16 reader and v1.0 float32 writer ----

// readNpy reads a C-order .npy of the given shape and dtype: '<f4' into a
// Float32Array, '<f2' into a Uint16Array of float16 bits (what ORT's
// float16 tensors take).
function readNpy(file, wantShape, descrWant) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.readUInt8(0) !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY') {
    throw new Error(`${file}: not a .npy file`);
  }
  const major = buf.readUInt8(6);
  let hlen, off;
  if (major === 1) {
    hlen = buf.readUInt16LE(8);
    off = 10;
  } else if (major === 2 || major === 3) {
    hlen = buf.readUInt32LE(8);
    off = 12;
  } else {
    throw new Error(`${file}: npy version ${major} not supported`);
  }
  const header = buf.toString('latin1', off, off + hlen);
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shapeM = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shapeM) throw new Error(`${file}: bad npy header ${JSON.stringify(header)}`);
  if (descr[1] !== descrWant) throw new Error(`${file}: dtype ${descr[1]}, want ${descrWant}`);
  if (fortran[1] !== 'False') throw new Error(`${file}: fortran_order True, want C order`);
  const shape = shapeM[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  if (shape.length !== wantShape.length || shape.some((v, i) => v !== wantShape[i])) {
    throw new Error(`${file}: shape [${shape}], want [${wantShape}]`);
  }
  const n = shape.reduce((x, y) => x * y, 1);
  const start = off + hlen;
  const Arr = descrWant === '<f2' ? Uint16Array : Float32Array;
  const size = Arr.BYTES_PER_ELEMENT;
  if (buf.length !== start + size * n) {
    throw new Error(`${file}: ${buf.length - start} data bytes, want ${size * n}`);
  }
  // Copy: the Buffer's byte offset need not be aligned.
  const out = new Arr(n);
  new Uint8Array(out.buffer).set(buf.subarray(start, start + size * n));
  if (os.endianness() !== 'LE') throw new Error('big-endian hosts are not supported');
  return out;
}

function writeNpyF32(file, data, shape) {
  const dims = shape.length === 1 ? `${shape[0]},` : shape.join(', ');
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${dims}), }`;
  // Magic (6) + version (2) + header length (2) + header, padded with
  // spaces and ended by '\n' to a multiple of 64 bytes.
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header + ' '.repeat(total - 10 - header.length - 1) + '\n';
  const pre = Buffer.alloc(10);
  pre.writeUInt8(0x93, 0);
  pre.write('NUMPY', 1, 'latin1');
  pre.writeUInt8(1, 6);
  pre.writeUInt8(0, 7);
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const tmp = `${file}.tmp${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(tmp, file);
}

// ---- model and layouts ----

function writeModel(out, h, d, scale, causal) {
  runPython('mha_model.py', ['--out', out, '--h', String(h), '--d', String(d),
    '--scale', String(scale), '--causal', causal ? '1' : '0']);
}

function writeGQAModel(out, h, kvh, d, scale, causal, dtype) {
  runPython('gqa_model.py', ['--out', out, '--h', String(h), '--kvh', String(kvh), '--d', String(d),
    '--scale', String(scale), '--causal', causal ? '1' : '0', '--dtype', dtype]);
}

function runPython(script, args) {
  const r = spawnSync(python, [path.join(here, script), ...args], { encoding: 'utf8' });
  if (r.error) throw new Error(`${python} ${script}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${python} ${script} failed (exit ${r.status}): ${r.stderr.trim()}`);
}

// float16 bits to a number, exactly.
function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

// toFloat32 widens ORT's output to float32: float16 bits exactly.
function toFloat32(data) {
  if (data instanceof Float32Array) return data;
  const out = new Float32Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = halfToFloat(data[i]);
  return out;
}

// [B,heads,N,D] -> [B,N,H*D], repeating each of the `heads` heads H/heads
// times (query head h reads KV head h / (H/heads)); with `from`, only
// rows from..N-1 of each head ([B,N-from,H*D]). The result has x's type.
function toBNHD(x, B, heads, H, N, D, from = 0) {
  const group = H / heads;
  const rows = N - from;
  const out = new x.constructor(B * rows * H * D);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      const g = Math.floor(h / group);
      for (let n = 0; n < rows; n++) {
        const src = ((b * heads + g) * N + from + n) * D;
        const dst = ((b * N + n) * H + h) * D;
        out.set(x.subarray(src, src + D), dst);
      }
    }
  }
  return out;
}

// [B,N,H*D] -> [B,H,N,D].
function toBHND(x, B, H, N, D) {
  const out = new Float32Array(B * H * N * D);
  for (let b = 0; b < B; b++) {
    for (let n = 0; n < N; n++) {
      for (let h = 0; h < H; h++) {
        const src = ((b * N + n) * H + h) * D;
        const dst = ((b * H + h) * N + n) * D;
        out.set(x.subarray(src, src + D), dst);
      }
    }
  }
  return out;
}

function sessionOptions(ep, threads) {
  return {
    executionProviders: [ep],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
  };
}

function isOOM(msg) {
  return /bad_alloc|failed to allocate|out of memory|allocation failed/i.test(msg);
}

// ORT prefixes errors with the source location and the failed check;
// keep the sentence after it.
function shortError(msg) {
  const m = /was false\. (.*)$/s.exec(msg);
  return oneLine(m ? m[1] : msg);
}

function oneLine(msg) {
  return String(msg).replace(/\s+/g, ' ').trim().slice(0, 600);
}

// ---- WebGPU guard: create a session and run a tiny input in a child ----

// Runs `node ort.mjs --session-check MODEL --hidden HD --threads T` in a
// child under coreutils timeout (so it dies even if we are killed first)
// and resolves to null when the EP worked or to a one-line reason.
function checkInChild(model, hidden, threads, timeoutS) {
  return new Promise((resolve) => {
    const args = [path.join(here, 'ort.mjs'), '--session-check', model, '--hidden', String(hidden),
      '--threads', String(threads)];
    const useTimeout = fs.existsSync('/usr/bin/timeout');
    const cmd = useTimeout ? '/usr/bin/timeout' : process.execPath;
    const argv = useTimeout ? ['-s', 'KILL', String(timeoutS + 5), process.execPath, ...args] : args;
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutS * 1000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut || (useTimeout && code === 137)) {
        resolve(`WebGPU session creation or first run did not finish within ${timeoutS} s`);
        return;
      }
      const lines = out.trim().split('\n');
      let res = null;
      try { res = JSON.parse(lines[lines.length - 1]); } catch { /* handled below */ }
      // Dawn says why it refused an adapter only in warnings on stderr.
      const dawn = [...err.matchAll(/Warning: ([^\n]*)/g)].map((m) => m[1].trim());
      const why = dawn.length ? ` (Dawn: ${[...new Set(dawn)].join('; ')})` : '';
      if (res && res.ok) resolve(null);
      else if (res && res.error) resolve(shortError(res.error) + why);
      else resolve(`WebGPU check exited (${signal || code}): ${oneLine(err).slice(-400)}`);
    });
  });
}

async function sessionCheck(a) {
  const ort = (await import('onnxruntime-node')).default;
  const hidden = intArg(a, 'hidden', 1);
  const threads = intArg(a, 'threads', 1);
  try {
    const s = await ort.InferenceSession.create(a['session-check'], sessionOptions('webgpu', threads));
    const n = 8;
    const x = new Float32Array(n * hidden).map((_, i) => Math.sin(i));
    const t = new ort.Tensor('float32', x, [1, n, hidden]);
    await s.run({ query: t, key: t, value: t });
    emit({ ok: true });
  } catch (e) {
    emit({ error: oneLine(e.message) });
  }
}

// ---- probe ----

async function probe(impl) {
  const version = versionString(impl);
  const res = { impl, version, available: false, reason: '' };
  let ort;
  try {
    ort = (await import('onnxruntime-node')).default;
  } catch (e) {
    res.reason = `onnxruntime-node not installed (run bench/peers/install.sh): ${oneLine(e.message)}`;
    return res;
  }
  const ep = impls[impl].ep;
  const backend = ort.listSupportedBackends().find((x) => x.name === ep);
  if (!backend || !backend.bundled) {
    res.reason = `execution provider ${ep} is not bundled in onnxruntime-node ${ortVersion()}`;
    return res;
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'attn-ort-probe-'));
  try {
    const model = path.join(tmp, 'probe.onnx');
    if (impls[impl].op === 'GroupQueryAttention') writeGQAModel(model, 2, 1, 8, 0.3, true, 'f32');
    else writeModel(model, 2, 8, 0.3, true);
    if (ep === 'webgpu') {
      const reason = await checkInChild(model, 16, 1, Math.min(webgpuCheckTimeoutS, 30));
      if (reason) {
        res.reason = reason;
        return res;
      }
    } else {
      await ort.InferenceSession.create(model, sessionOptions(ep, 1));
    }
    res.available = true;
    res.reason = ep === 'webgpu' ? 'WebGPU adapter found; a tiny MultiHeadAttention ran' : 'CPU EP loads the model';
  } catch (e) {
    res.reason = oneLine(e.message);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return res;
}

// ---- one point ----

async function runPoint(impl, a) {
  const dir = a.dir;
  if (!dir) throw new Error('missing --dir');
  const B = intArg(a, 'b', 1);
  const H = intArg(a, 'h', 1);
  const KVH = intArg(a, 'kvh', 1);
  const N = intArg(a, 'n', 1);
  const Nq = a.nq === undefined ? N : intArg(a, 'nq', 1);
  const dtype = a.dtype === undefined ? 'f32' : a.dtype;
  const D = intArg(a, 'd', 1);
  const causal = intArg(a, 'causal', 0);
  if (causal > 1) throw new Error(`--causal ${causal}: want 0 or 1`);
  const scale = numArg(a, 'scale');
  const budget = numArg(a, 'budget-s');
  const minRuns = intArg(a, 'min-runs', 0);
  const threads = intArg(a, 'threads', 1);
  const version = versionString(impl);
  const fail = (reason) => emit({ impl, version, error: oneLine(reason) });
  if (Nq > N) throw new Error(`--nq ${Nq}: want at most --n ${N}`);
  if (H % KVH !== 0) {
    fail(`H=${H} is not a multiple of KVH=${KVH}`);
    return;
  }
  const spec = impls[impl];
  if (Nq < N && !spec.decode) {
    fail(`${spec.op} without a cache computes all N queries: Nq=${Nq} < N=${N} is not measured`);
    return;
  }
  if (!spec.dtypes.includes(dtype)) {
    fail(`${impl} takes ${spec.dtypes.join(', ')}, not ${dtype}`);
    return;
  }

  const ort = (await import('onnxruntime-node')).default;
  const ep = spec.ep;
  const descr = dtype === 'f16' ? '<f2' : '<f4';
  const q = readNpy(path.join(dir, 'q.npy'), [B, H, Nq, D], descr);
  const k = readNpy(path.join(dir, 'k.npy'), [B, KVH, N, D], descr);
  const v = readNpy(path.join(dir, 'v.npy'), [B, KVH, N, D], descr);
  const model = path.join(dir, `model-${impl}.onnx`);
  const tensorType = dtype === 'f16' ? 'float16' : 'float32';
  const T = (data, dims) => new ort.Tensor(tensorType, data, dims);

  let feeds;
  let fetches; // preallocated outputs, or undefined for ORT's own
  const notes = [];
  if (spec.op === 'GroupQueryAttention') {
    writeGQAModel(model, H, KVH, D, scale, causal === 1, dtype);
    // The cache is K and V as they are: [B,KVH,N,D] is GQA's BNSH
    // past_key. It is bound as present_key too, so that past and present
    // share one buffer of N keys (ORT's past_present_share_buffer: the
    // new keys are written into rows N-Nq..N-1, which hold them already,
    // and nothing is copied); seqlens_k = N-1 and total_sequence_length
    // = N make the Nq new tokens the last Nq positions of N.
    const cacheDims = [B, KVH, N, D];
    const pastKey = T(k, cacheDims);
    const pastValue = T(v, cacheDims);
    feeds = {
      query: T(toBNHD(q, B, H, H, Nq, D), [B, Nq, H * D]),
      key: T(toBNHD(k, B, KVH, KVH, N, D, N - Nq), [B, Nq, KVH * D]),
      value: T(toBNHD(v, B, KVH, KVH, N, D, N - Nq), [B, Nq, KVH * D]),
      past_key: pastKey,
      past_value: pastValue,
      seqlens_k: new ort.Tensor('int32', new Int32Array(B).fill(N - 1), [B]),
      total_sequence_length: new ort.Tensor('int32', Int32Array.from([N]), []),
    };
    fetches = {
      output: T(new q.constructor(B * Nq * H * D), [B, Nq, H * D]),
      present_key: pastKey,
      present_value: pastValue,
    };
    notes.push(
      `one-node model, num_heads=${H}, kv_num_heads=${KVH}, scale attribute=${scale}, causal=${causal}, do_rotary=0, ${dtype}`,
      `${Nq} new token(s) over a cache of ${N} keys: past_key/past_value = K/V [B,KVH,N,D] as given (BNSH), bound as present_key/present_value too (one shared buffer, nothing copied); key/value = the last ${Nq} keys [B,Nq,KVH*D]; seqlens_k=${N - 1}, total_sequence_length=${N}`,
      'Q and the new keys transposed to [B,Nq,heads*D] and O back, outside timing',
    );
  } else {
    writeModel(model, H, D, scale, causal === 1);
    const dims = [B, N, H * D];
    feeds = {
      query: T(toBNHD(q, B, H, H, N, D), dims),
      key: T(toBNHD(k, B, KVH, H, N, D), dims),
      value: T(toBNHD(v, B, KVH, H, N, D), dims),
    };
    notes.push(
      `one-node model, num_heads=${H}, scale attribute=${scale}` + (causal ? ', unidirectional=1 for causal' : ''),
      'Q/K/V transposed [B,H,N,D] -> [B,N,H*D] and O back, outside timing',
    );
    if (KVH < H) notes.push(`KV heads repeated ${H / KVH}x to H=${H} outside timing (MultiHeadAttention has no GQA)`);
  }
  notes.push(`intraOpNumThreads=${threads}, interOpNumThreads=1, node ${process.version}`);

  if (ep === 'webgpu') {
    const reason = await checkInChild(model, H * D, threads, webgpuCheckTimeoutS);
    if (reason) {
      fail(reason);
      return;
    }
    notes.push(`WebGPU EP first checked in a child process (${webgpuCheckTimeoutS} s limit)`);
  }

  let session;
  try {
    session = await ort.InferenceSession.create(model, sessionOptions(ep, threads));
  } catch (e) {
    if (isOOM(e.message)) throw e;
    fail(`session creation failed: ${e.message}`);
    return;
  }
  const call = () => (fetches ? session.run(feeds, fetches) : session.run(feeds));

  let out;
  const w0 = performance.now();
  try {
    out = await call();
  } catch (e) {
    if (isOOM(e.message)) throw e;
    fail(`first run failed: ${e.message}`);
    return;
  }
  const warmup = (performance.now() - w0) / 1000;

  const times = [];
  let total = 0;
  const runs = Math.max(minRuns, 1);
  while (times.length < runs || total < budget) {
    out = null;
    const t0 = performance.now();
    out = await call();
    const dt = (performance.now() - t0) / 1000;
    times.push(dt);
    total += dt;
  }

  const o = out.output;
  if (o.dims.length !== 3 || o.dims[0] !== B || o.dims[1] !== Nq || o.dims[2] !== H * D) {
    throw new Error(`output dims [${o.dims}], want [${[B, Nq, H * D]}]`);
  }
  writeNpyF32(path.join(dir, `o-${impl}.npy`), toBHND(toFloat32(o.data), B, H, Nq, D), [B, H, Nq, D]);
  emit({ impl, version, warmup_s: warmup, times_s: times, notes: notes.join('; ') });
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  if (a['session-check']) {
    await sessionCheck(a);
    return;
  }
  const impl = a.impl;
  if (!impls[impl]) throw new Error(`--impl ${impl}: want one of ${Object.keys(impls).join(', ')}`);
  if (a.probe) {
    emit(await probe(impl));
    return;
  }
  await runPoint(impl, a);
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`ort.mjs: ${e && e.stack ? e.stack : e}\n`);
    process.exit(1);
  },
);
