// Peer runner for `attn bench -peers`: onnxruntime-node running a one-node
// com.microsoft MultiHeadAttention model, on the CPU EP (ort-cpu-mha) or the
// WebGPU EP (ort-webgpu-mha). One process measures one point; the protocol
// is in README.md:
//
//   node ort.mjs --impl ort-cpu-mha --dir DIR --b B --h H --kvh KVH --n N
//       --d D --causal 0|1 --scale S --budget-s SEC --min-runs R --threads T
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

const impls = {
  'ort-cpu-mha': { ep: 'cpu', epName: 'CPU EP' },
  'ort-webgpu-mha': { ep: 'webgpu', epName: 'WebGPU EP' },
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
  return `onnxruntime-node ${ortVersion()}, ${impls[impl].epName}, com.microsoft.MultiHeadAttention`;
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

// ---- .npy v1.0/2.0/3.0 float32 reader and v1.0 writer ----

function readNpyF32(file, wantShape) {
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
  if (descr[1] !== '<f4') throw new Error(`${file}: dtype ${descr[1]}, want <f4`);
  if (fortran[1] !== 'False') throw new Error(`${file}: fortran_order True, want C order`);
  const shape = shapeM[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  if (shape.length !== wantShape.length || shape.some((v, i) => v !== wantShape[i])) {
    throw new Error(`${file}: shape [${shape}], want [${wantShape}]`);
  }
  const n = shape.reduce((x, y) => x * y, 1);
  const start = off + hlen;
  if (buf.length !== start + 4 * n) {
    throw new Error(`${file}: ${buf.length - start} data bytes, want ${4 * n}`);
  }
  // Copy: the Buffer's byte offset need not be 4-aligned.
  const out = new Float32Array(n);
  new Uint8Array(out.buffer).set(buf.subarray(start, start + 4 * n));
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
  const r = spawnSync(
    python,
    [path.join(here, 'mha_model.py'), '--out', out, '--h', String(h), '--d', String(d),
      '--scale', String(scale), '--causal', causal ? '1' : '0'],
    { encoding: 'utf8' },
  );
  if (r.error) throw new Error(`${python} mha_model.py: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${python} mha_model.py failed (exit ${r.status}): ${r.stderr.trim()}`);
}

// [B,heads,N,D] -> [B,N,H*D], repeating each of the `heads` heads H/heads
// times (query head h reads KV head h / (H/heads)).
function toBNHD(x, B, heads, H, N, D) {
  const group = H / heads;
  const out = new Float32Array(B * N * H * D);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      const g = Math.floor(h / group);
      for (let n = 0; n < N; n++) {
        const src = ((b * heads + g) * N + n) * D;
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
    writeModel(model, 2, 8, 0.3, true);
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
  const D = intArg(a, 'd', 1);
  const causal = intArg(a, 'causal', 0);
  if (causal > 1) throw new Error(`--causal ${causal}: want 0 or 1`);
  const scale = numArg(a, 'scale');
  const budget = numArg(a, 'budget-s');
  const minRuns = intArg(a, 'min-runs', 0);
  const threads = intArg(a, 'threads', 1);
  const version = versionString(impl);
  const fail = (reason) => emit({ impl, version, error: oneLine(reason) });
  if (H % KVH !== 0) {
    fail(`H=${H} is not a multiple of KVH=${KVH}`);
    return;
  }

  const ort = (await import('onnxruntime-node')).default;
  const ep = impls[impl].ep;
  const q = readNpyF32(path.join(dir, 'q.npy'), [B, H, N, D]);
  const k = readNpyF32(path.join(dir, 'k.npy'), [B, KVH, N, D]);
  const v = readNpyF32(path.join(dir, 'v.npy'), [B, KVH, N, D]);
  const model = path.join(dir, `model-${impl}.onnx`);
  writeModel(model, H, D, scale, causal === 1);

  const notes = [
    `one-node model, num_heads=${H}, scale attribute=${scale}` + (causal ? ', unidirectional=1 for causal' : ''),
    'Q/K/V transposed [B,H,N,D] -> [B,N,H*D] and O back, outside timing',
  ];
  if (KVH < H) notes.push(`KV heads repeated ${H / KVH}x to H=${H} outside timing (MultiHeadAttention has no GQA)`);
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
  const dims = [B, N, H * D];
  const feeds = {
    query: new ort.Tensor('float32', toBNHD(q, B, H, H, N, D), dims),
    key: new ort.Tensor('float32', toBNHD(k, B, KVH, H, N, D), dims),
    value: new ort.Tensor('float32', toBNHD(v, B, KVH, H, N, D), dims),
  };

  let out;
  const w0 = performance.now();
  try {
    out = await session.run(feeds);
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
    out = await session.run(feeds);
    const dt = (performance.now() - t0) / 1000;
    times.push(dt);
    total += dt;
  }

  const o = out.output;
  if (o.dims.length !== 3 || o.dims[0] !== B || o.dims[1] !== N || o.dims[2] !== H * D) {
    throw new Error(`output dims [${o.dims}], want [${dims}]`);
  }
  writeNpyF32(path.join(dir, `o-${impl}.npy`), toBHND(o.data, B, H, N, D), [B, H, N, D]);
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
