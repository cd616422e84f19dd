// The model in the page: imported by demos.js the first time a reader uses a live demo, never
// before. The work itself (fetching and checking the files listed in manifest.json, which
// tools/live_model.py wrote when the book was built; the tokenizer; onnxruntime-web running the
// model) happens in a module Web Worker, worker.mjs, so that the page never freezes while the
// model loads or runs. This module is the page's side of it: it keeps the API the demos use,
// counts the bytes for the progress line, and stops the downloads when the reader leaves the page.
// Every file comes from the book itself.
//
// What it computes, as the Python side does (tools/live_model.py, OnnxEncoder): token vectors
// from the worker (see worker.mjs); a text's vector is the mean of its real tokens' vectors,
// normalized, in float64 (maths.mjs).

import { meanUnit } from "./maths.mjs";

const BASE = new URL("./", import.meta.url); // the book's live/ folder
const VERSION = new URL(import.meta.url).search; // the build's version, passed on to the worker

/** A file of the model that is missing, cut short or not the one the book was built with. */
export class FileProblem extends Error {
  constructor(path, problem) {
    super(`The file live/${path} ${problem}`);
    this.path = `live/${path}`;
  }
}

let manifestPromise = null;

/** manifest.json: every file the page may fetch, with its size and SHA-256. */
export function manifest() {
  if (!manifestPromise) {
    manifestPromise = fetch(new URL("manifest.json", BASE), { cache: "no-cache" }).then(
      (r) => {
        if (!r.ok) throw new FileProblem("manifest.json", `is missing from this book (HTTP ${r.status}): rebuild it with make book`);
        return r.json();
      },
      (err) => {
        throw new FileProblem("manifest.json", `could not be fetched (${err.message})`);
      },
    );
    manifestPromise.catch(() => { manifestPromise = null; });
  }
  return manifestPromise;
}

// ---- the worker ---------------------------------------------------------------------------

let worker = null;
let nextId = 0;
const waiting = new Map(); // request id -> {ok, no}
const listeners = new Map(); // file path -> progress callback of the prepare() that asked for it first

function rebuildError(error) {
  if (error.aborted) return Object.assign(new Error(error.message), { aborted: true });
  if (error.path) {
    const err = new Error(error.message);
    err.path = error.path;
    return err;
  }
  return new Error(error.message);
}

const unclaimed = new Map(); // file path -> [bytes, fromCache]: progress that came before a prepare() asked for the file

function onMessage(event) {
  const msg = event.data;
  if (msg.progress) {
    const tell = listeners.get(msg.progress.path);
    if (tell) {
      tell(msg.progress);
    } else {
      const had = unclaimed.get(msg.progress.path) || [0, false];
      unclaimed.set(msg.progress.path, [had[0] + msg.progress.bytes, msg.progress.fromCache]);
    }
    return;
  }
  const w = waiting.get(msg.id);
  if (!w) return;
  waiting.delete(msg.id);
  // what waits on the answer runs in a task of its own, not in the one that received it
  if (msg.error) setTimeout(() => w.no(rebuildError(msg.error)), 0);
  else setTimeout(() => w.ok(msg.result), 0);
}

/**
 * The worker: the one demos.js started on the reader's first act (``early = {worker, messages}``:
 * it fetches the model's files while this module arrives; ``messages``, what it said before this
 * module listened) or a new one.
 */
function start(early) {
  if (worker) return worker;
  if (early) {
    worker = early.worker;
    worker.onmessage = onMessage;
    early.messages.splice(0).forEach(onMessage);
  } else {
    worker = new Worker(new URL("worker.mjs" + VERSION, BASE), { type: "module" });
    worker.onmessage = onMessage;
  }
  worker.onerror = (event) => {
    // the worker's script itself failed (not a file of the model): every request in flight fails
    event.preventDefault();
    const err = new Error(`the model's thread stopped (live/worker.mjs: ${event.message || "it did not start"})`);
    for (const w of waiting.values()) w.no(err);
    waiting.clear();
    worker = null;
  };
  return worker;
}

function call(op, args) {
  const w = start();
  nextId += 1;
  const id = nextId;
  return new Promise((ok, no) => {
    waiting.set(id, { ok, no });
    w.postMessage({ id, op, ...args });
  });
}

// A reader who leaves the page stops the downloads (a page kept in the back-forward cache starts
// them again on the next use: everything that did not finish is forgotten).
let loading = 0;
addEventListener("pagehide", () => {
  if (worker && loading > 0) worker.postMessage({ op: "abort" });
});

/** A loaded model: its label, its length limit, and the two things the demos ask of it. */
export class Model {
  constructor(key, spec) {
    this.key = key;
    this.label = spec.label;
    this.maxTokens = spec.maxTokens;
  }

  /** Token vectors of a batch padded to its longest text: {tokens, ids, mask (B x T), grid (Float32Array B*T*D), B, T, D, cut, counts, ms, rowsMs}. */
  grid(texts) {
    return call("grid", { key: this.key, texts });
  }

  /** One text's unit vector (Float64Array D): the mean of its token vectors, normalized; with its tokens and whether it was cut. */
  async embed(text) {
    const g = await this.grid([text]);
    return { vector: meanUnit(g.grid, g.T, g.D), tokens: g.tokens[0], count: g.counts[0], cut: g.cut[0], ms: g.ms };
  }
}

const models = new Map(); // key -> Promise<Model>
const sets = new Map(); // "set/model" -> Promise<Float32Array>
const asked = new Set(); // paths some prepare() has asked the worker for (shared files count once)

function remember(map, name, pending) {
  map.set(name, pending);
  pending.catch(() => map.delete(name)); // a failed or stopped load is tried again on the next use
  return pending;
}

function loadModel(key, spec, wasm) {
  if (!models.has(key)) {
    remember(models, key, call("model", { key, spec, wasm }).then((info) => {
      const model = new Model(key, spec);
      model.sessionSeconds = info.sessionSeconds;
      return model;
    }));
  }
  return models.get(key);
}

function loadVectors(setName, key, entry, count, dim) {
  const name = `${setName}/${key}`;
  if (!sets.has(name)) {
    remember(sets, name, call("file", { entry }).then((bytes) => {
      if (bytes.length !== count * dim * 4) throw new FileProblem(entry.path, `does not hold ${count} vectors of ${dim} numbers`);
      return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4); // little-endian, as written by the build
    }));
  }
  return sets.get(name);
}

/**
 * Load what a demo needs: ``needs = {models: ["minilm", ...], sets: ["search", ...], texts, early}``
 * (each set under each of the models; ``texts()``, optional, the texts the demo will ask for first,
 * whose token rows are fetched while the model downloads; ``early``, optional, the worker demos.js
 * started, see start). ``onProgress({done, total, fromCache})``
 * follows the bytes. Resolves to {models: {key: Model}, sets: {name: {ids, texts, vectors: {key:
 * Float32Array}}}, report}.
 */
export async function prepare(needs, onProgress) {
  const started = performance.now();
  let total = 0;
  let done = 0;
  let fetched = 0;
  let cached = 0;
  const progress = (p) => {
    done += p.bytes;
    if (p.fromCache) cached += p.bytes;
    else fetched += p.bytes;
    if (onProgress) onProgress({ done, total, fromCache: cached > 0 && fetched === 0 });
  };
  start(needs.early); // the worker's scripts load (or have loaded) while the manifest arrives
  const mine = [];
  loading += 1;
  try {
    const m = await manifest();
    const entries = new Map();
    const want = (entry) => entries.set(entry.path, entry);
    want(m.runtime.wasm);
    for (const key of needs.models) Object.values(m.models[key].files).forEach(want);
    for (const set of needs.sets || []) for (const key of needs.models) want(m.sets[set].vectors[key]);
    // A file another demo on this page has loaded (or is loading) is not loaded again.
    for (const e of entries.values()) {
      if (asked.has(e.path)) continue;
      mine.push(e);
      asked.add(e.path);
      listeners.set(e.path, progress);
    }
    const ours = new Set(mine.map((e) => e.path));
    const shared = [...entries.values()].filter((e) => !ours.has(e.path)).reduce((sum, e) => sum + e.bytes, 0);
    total = mine.reduce((sum, e) => sum + e.bytes, 0);
    for (const e of mine) {
      const early = unclaimed.get(e.path); // what arrived before this prepare() asked
      if (early) progress({ path: e.path, bytes: early[0], fromCache: early[1] });
      unclaimed.delete(e.path);
    }
    const pending = needs.models.map((key) => loadModel(key, m.models[key], m.runtime.wasm));
    if (needs.texts) warm(needs.models, needs.texts()); // what the reader typed before this module arrived
    const vectorsOf = (needs.sets || []).map((set) => needs.models.map(
      (key) => loadVectors(set, key, m.sets[set].vectors[key], m.sets[set].ids.length, m.sets[set].dim)));
    const loaded = await Promise.all(pending);
    const result = { models: {}, sets: {} };
    needs.models.forEach((key, i) => { result.models[key] = loaded[i]; });
    for (const [j, set] of (needs.sets || []).entries()) {
      const s = m.sets[set];
      const vectors = {};
      const got = await Promise.all(vectorsOf[j]);
      needs.models.forEach((key, i) => { vectors[key] = got[i]; });
      result.sets[set] = { ids: s.ids, texts: s.texts, vectors };
    }
    result.report = {
      seconds: (performance.now() - started) / 1000, totalBytes: total, fetchedBytes: fetched, cachedBytes: cached,
      sharedBytes: shared, sessionSeconds: loaded.reduce((sum, model) => sum + (model.sessionSeconds || 0), 0),
      labels: needs.models.map((k) => m.models[k].label), dtype: m.models[needs.models[0]].dtype,
      byRow: needs.models.some((k) => Boolean(m.models[k].files.table)), // the token table: only the rows a text needs, on use
      modelBytes: needs.models.map((k) => m.models[k].files.model.bytes),
      runtime: m.runtime.versions,
    };
    return result;
  } catch (err) {
    for (const e of mine) asked.delete(e.path); // not loaded: the next use counts them again
    throw err;
  } finally {
    loading -= 1;
    for (const e of mine) listeners.delete(e.path);
  }
}

/** Hand the worker, while models load, the texts a demo will ask for first: their token rows come with the download (a hint; nothing waits on it). */
export function warm(keys, texts) {
  const wanted = texts.filter((t) => t.trim());
  if (!worker || loading === 0 || !wanted.length) return;
  for (const key of keys) if (models.has(key)) worker.postMessage({ op: "rows", key, texts: wanted });
}

let lookalike = null;

async function sha256Hex(bytes) {
  if (!(self.crypto && crypto.subtle)) return null; // not a secure origin: the size is checked only
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Lesson 5's look-alike set for the adapter demo, without the model or its thread: manifest.json's
 * ``sets.lookalike`` (texts, blocks, settings) and its vectors (one Float32Array of ``rows x dim``,
 * the numbers the Python experiment trains on), fetched from the book (about 1 MB: one fetch, no
 * long task) and checked against the manifest's size and SHA-256. Resolves to {meta, table}.
 */
export function lookalikeSet() {
  if (!lookalike) {
    lookalike = manifest().then(async (m) => {
      const set = m.sets.lookalike;
      if (!set) throw new FileProblem("manifest.json", "has no look-alike set: rebuild the book with make book");
      const entry = set.vectors.minilm;
      let response;
      try {
        response = await fetch(new URL(entry.path, BASE));
      } catch (err) {
        throw new FileProblem(entry.path, `could not be fetched (${err.message})`);
      }
      if (!response.ok) throw new FileProblem(entry.path, `is missing from this book (HTTP ${response.status}): rebuild it with make book`);
      const bytes = new Uint8Array(await response.arrayBuffer());
      if (bytes.length !== entry.bytes || bytes.length !== set.rows * set.dim * 4) {
        throw new FileProblem(entry.path, `does not hold ${set.rows} vectors of ${set.dim} numbers: rebuild the book with make book`);
      }
      const hash = await sha256Hex(bytes);
      if (hash !== null && hash !== entry.sha256) {
        throw new FileProblem(entry.path, "is not the file this book was built with (its SHA-256 differs): rebuild the book with make book");
      }
      return { meta: set, table: new Float32Array(bytes.buffer, 0, bytes.length / 4) }; // little-endian, as the build wrote it
    });
    lookalike.catch(() => { lookalike = null; });
  }
  return lookalike;
}
