// The model in the page: imported by demos.js the first time a reader uses a live demo, never
// before. It fetches the files listed in manifest.json (written by tools/live_model.py when the
// book was built), checks each one's size and SHA-256, keeps them in this browser's Cache Storage
// for the next visit, and runs the model with onnxruntime-web (WebAssembly, one thread) and
// transformers.js's tokenizer. Every file comes from the book itself.
//
// What it computes, as the Python side does (tools/live_model.py, OnnxEncoder): a text is cut at
// the model's token limit the way sentence-transformers cuts it ([CLS], the first limit - 2
// tokens, [SEP]); a batch is padded to its longest text with [PAD] and an attention mask of 0;
// the model returns one vector per token (last_hidden_state); a text's vector is the mean of its
// real tokens' vectors, normalized, in float64.

import { env, BertTokenizer } from "./runtime/transformers.web.min.js";
import * as ort from "./runtime/ort.wasm.bundle.min.mjs";

const BASE = new URL("./", import.meta.url); // the book's live/ folder
const CACHE_NAME = "labs-live";

// Nothing leaves the book: no hub, no CDN. localModelPath is a path, not an http URL
// (transformers.js 4.3.2 silently skips the tokenizer for a URL).
env.allowLocalModels = true;
env.allowRemoteModels = false;
env.localModelPath = new URL("models/", BASE).pathname;
env.useBrowserCache = false; // this module keeps its own cache, of checked files
env.useWasmCache = false;
const wasm = env.backends.onnx.wasm;
wasm.wasmPaths = {
  mjs: new URL("runtime/ort-wasm-simd-threaded.mjs", BASE).href,
  wasm: new URL("runtime/ort-wasm-simd-threaded.wasm", BASE).href,
};
wasm.numThreads = 1; // threads need COOP/COEP headers, which static hosts cannot send
wasm.proxy = false;
if (ort.env.wasm !== wasm) throw new Error("transformers.js and this page loaded two copies of onnxruntime-web");

/** A file of the model that is missing, cut short or not the one the book was built with. */
export class FileProblem extends Error {
  constructor(path, problem) {
    super(`The file live/${path} ${problem}`);
    this.path = `live/${path}`;
  }
}

const MB = (bytes) => (bytes / 1e6).toFixed(1);

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
  }
  return manifestPromise;
}

async function openCache() {
  try {
    return self.caches ? await caches.open(CACHE_NAME) : null;
  } catch (err) {
    return null; // no Cache Storage here (private window, insecure origin): fetch every time
  }
}

async function digest(bytes) {
  if (!(self.crypto && crypto.subtle)) return null; // not a secure origin: the size is checked only
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function check(entry, bytes) {
  if (bytes.length < entry.bytes) {
    throw new FileProblem(entry.path, `is truncated: ${MB(bytes.length)} of its ${MB(entry.bytes)} MB arrived. Rebuild the book with make book`);
  }
  if (bytes.length > entry.bytes) {
    throw new FileProblem(entry.path, `is not the file this book was built with (${MB(bytes.length)} MB, expected ${MB(entry.bytes)} MB). Rebuild the book with make book`);
  }
  const hash = await digest(bytes);
  if (hash !== null && hash !== entry.sha256) {
    throw new FileProblem(entry.path, "is not the file this book was built with (its SHA-256 differs). Rebuild the book with make book");
  }
}

const files = new Map(); // path -> Promise<Uint8Array>, so two demos on one page share a download

/** One checked file, from the cache or the network; ``progress(path, bytes, fromCache)`` is told of every chunk. */
function fetchFile(entry, progress) {
  if (!files.has(entry.path)) files.set(entry.path, fetchChecked(entry, progress));
  return files.get(entry.path);
}

async function fetchChecked(entry, progress) {
  const url = new URL(entry.path, BASE).href;
  const key = `${url}?sha256=${entry.sha256}`;
  const cache = await openCache();
  if (cache) {
    const hit = await cache.match(key);
    if (hit) {
      // stored under its SHA-256 once checked: its size is checked again, not its hash
      const bytes = new Uint8Array(await hit.arrayBuffer());
      if (bytes.length === entry.bytes) {
        progress(entry.path, bytes.length, true);
        return bytes;
      }
      await cache.delete(key); // a damaged cache entry: fetch it again
    }
  }
  let response;
  try {
    response = await fetch(url, { cache: "no-cache" });
  } catch (err) {
    throw new FileProblem(entry.path, `could not be fetched (${err.message})`);
  }
  if (response.status === 404) throw new FileProblem(entry.path, "is missing from this book (HTTP 404). Rebuild the book with make book");
  if (!response.ok) throw new FileProblem(entry.path, `could not be fetched (HTTP ${response.status})`);
  const chunks = [];
  let length = 0;
  const reader = response.body.getReader();
  for (;;) {
    let part;
    try {
      part = await reader.read();
    } catch (err) {
      throw new FileProblem(entry.path, `stopped arriving after ${MB(length)} MB (${err.message})`);
    }
    if (part.done) break;
    chunks.push(part.value);
    length += part.value.length;
    progress(entry.path, part.value.length, false);
  }
  const bytes = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  await check(entry, bytes);
  if (cache) {
    try {
      await cache.put(key, new Response(bytes));
      for (const old of await cache.keys()) {
        // an earlier build's copy of this file
        if (old.url.startsWith(`${url}?`) && old.url !== key) await cache.delete(old);
      }
    } catch (err) {
      // the cache is full or refused: the file is used anyway
    }
  }
  return bytes;
}

function json(entry, bytes) {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (err) {
    throw new FileProblem(entry.path, "is not valid JSON. Rebuild the book with make book");
  }
}

// onnxruntime-web runs one session at a time: every run waits for the one before.
let queue = Promise.resolve();
function serially(job) {
  const next = queue.then(job);
  queue = next.catch(() => {});
  return next;
}

let runtimeReady = null;
const timings = { sessions: 0 }; // seconds spent making ONNX sessions (the runtime's start included)

/** A loaded model: its tokenizer, its length limit and its ONNX session. */
export class Model {
  constructor(key, spec, tokenizer, session) {
    this.key = key;
    this.label = spec.label;
    this.maxTokens = spec.maxTokens;
    this.tokenizer = tokenizer;
    this.session = session;
    this.padId = tokenizer.pad_token_id;
  }

  /** The model's tokens of one text, cut at its limit as sentence-transformers cuts: [CLS], the text's first maxTokens - 2 tokens, [SEP]. */
  tokenize(text) {
    const pieces = this.tokenizer.tokenize(text);
    const room = this.maxTokens - 2;
    const tokens = ["[CLS]", ...pieces.slice(0, room), "[SEP]"];
    return { tokens, ids: this.tokenizer.convert_tokens_to_ids(tokens), count: pieces.length + 2, cut: pieces.length > room };
  }

  /** Token vectors of a batch padded to its longest text: {tokens, ids, mask (B x T), grid (Float32Array B*T*D), B, T, D, cut, counts}. */
  async grid(texts) {
    const parts = texts.map((t) => this.tokenize(t));
    const B = parts.length;
    const T = Math.max(...parts.map((p) => p.ids.length));
    const ids = new BigInt64Array(B * T);
    const mask = new BigInt64Array(B * T);
    const tokens = [];
    const idRows = [];
    const maskRows = [];
    parts.forEach((p, b) => {
      const row = [];
      const maskRow = [];
      const tokenRow = [];
      for (let t = 0; t < T; t++) {
        const real = t < p.ids.length;
        const id = real ? p.ids[t] : this.padId;
        ids[b * T + t] = BigInt(id);
        mask[b * T + t] = real ? 1n : 0n;
        row.push(id);
        maskRow.push(real ? 1 : 0);
        tokenRow.push(real ? p.tokens[t] : "[PAD]");
      }
      idRows.push(row);
      maskRows.push(maskRow);
      tokens.push(tokenRow);
    });
    const feeds = {
      input_ids: new ort.Tensor("int64", ids, [B, T]),
      attention_mask: new ort.Tensor("int64", mask, [B, T]),
      token_type_ids: new ort.Tensor("int64", new BigInt64Array(B * T), [B, T]),
    };
    const started = performance.now();
    const out = await serially(() => this.session.run(feeds));
    const hidden = out.last_hidden_state;
    return {
      tokens, ids: idRows, mask: maskRows, grid: hidden.data, B, T, D: hidden.dims[2],
      cut: parts.map((p) => p.cut), counts: parts.map((p) => p.count), ms: performance.now() - started,
    };
  }

  /** One text's unit vector (Float64Array D): the mean of its token vectors, normalized; with its tokens and whether it was cut. */
  async embed(text) {
    const g = await this.grid([text]);
    const vector = new Float64Array(g.D);
    for (let t = 0; t < g.T; t++) for (let d = 0; d < g.D; d++) vector[d] += g.grid[t * g.D + d];
    let norm = 0;
    for (let d = 0; d < g.D; d++) {
      vector[d] /= g.T;
      norm += vector[d] * vector[d];
    }
    norm = Math.sqrt(norm);
    for (let d = 0; d < g.D; d++) vector[d] /= norm;
    return { vector, tokens: g.tokens[0], count: g.counts[0], cut: g.cut[0], ms: g.ms };
  }
}

const models = new Map(); // key -> Promise<Model>
const sets = new Map(); // "set/model" -> Promise<Float32Array>

function loadModel(key, spec, get) {
  if (!models.has(key)) {
    models.set(key, (async () => {
      const [tokenizerBytes, configBytes, modelBytes] = await Promise.all(
        [spec.files.tokenizer, spec.files.tokenizerConfig, spec.files.model].map(get));
      const tokenizer = new BertTokenizer(json(spec.files.tokenizer, tokenizerBytes),
        json(spec.files.tokenizerConfig, configBytes));
      await runtimeReady;
      let session;
      try {
        const started = performance.now();
        session = await serially(() => ort.InferenceSession.create(modelBytes, {
          executionProviders: ["wasm"], graphOptimizationLevel: "all", logSeverityLevel: 3,
        }));
        timings.sessions += (performance.now() - started) / 1000;
      } catch (err) {
        throw new FileProblem(spec.files.model.path, `could not be read as a model (${String(err.message || err).slice(0, 160)}). Rebuild the book with make book`);
      }
      return new Model(key, spec, tokenizer, session);
    })());
  }
  return models.get(key);
}

function loadVectors(setName, key, entry, get, count, dim) {
  const name = `${setName}/${key}`;
  if (!sets.has(name)) {
    sets.set(name, get(entry).then((bytes) => {
      if (bytes.length !== count * dim * 4) throw new FileProblem(entry.path, `does not hold ${count} vectors of ${dim} numbers`);
      const copy = bytes.slice(); // aligned for Float32Array
      return new Float32Array(copy.buffer); // little-endian, as written by the build
    }));
  }
  return sets.get(name);
}

/**
 * Load what a demo needs: ``needs = {models: ["minilm", ...], sets: ["search", ...]}`` (each set
 * under each of the models). ``onProgress({done, total, fromCache})`` follows the bytes. Resolves to
 * {models: {key: Model}, sets: {name: {ids, texts, vectors: {key: Float32Array}}}, report}.
 */
export async function prepare(needs, onProgress) {
  const started = performance.now();
  const m = await manifest();
  const entries = new Map();
  const want = (entry) => entries.set(entry.path, entry);
  if (!runtimeReady) want(m.runtime.wasm);
  for (const key of needs.models) Object.values(m.models[key].files).forEach(want);
  for (const set of needs.sets || []) for (const key of needs.models) want(m.sets[set].vectors[key]);
  // A file another demo on this page has loaded (or is loading) is not loaded again.
  const shared = [...entries.values()].filter((e) => files.has(e.path)).reduce((sum, e) => sum + e.bytes, 0);
  const total = [...entries.values()].filter((e) => !files.has(e.path)).reduce((sum, e) => sum + e.bytes, 0);
  let done = 0;
  let fetched = 0;
  let cached = 0;
  const progress = (path, bytes, fromCache) => {
    done += bytes;
    if (fromCache) cached += bytes;
    else fetched += bytes;
    if (onProgress) onProgress({ done, total, fromCache: cached > 0 && fetched === 0 });
  };
  const get = (entry) => fetchFile(entry, progress);
  if (!runtimeReady) {
    runtimeReady = get(m.runtime.wasm).then((bytes) => {
      wasm.wasmBinary = bytes;
    });
  }
  const loaded = await Promise.all(needs.models.map((key) => loadModel(key, m.models[key], get)));
  const result = { models: {}, sets: {} };
  needs.models.forEach((key, i) => { result.models[key] = loaded[i]; });
  for (const set of needs.sets || []) {
    const s = m.sets[set];
    const vectors = {};
    for (const key of needs.models) vectors[key] = await loadVectors(set, key, s.vectors[key], get, s.ids.length, s.dim);
    result.sets[set] = { ids: s.ids, texts: s.texts, vectors };
  }
  result.report = {
    seconds: (performance.now() - started) / 1000, totalBytes: total, fetchedBytes: fetched, cachedBytes: cached,
    sharedBytes: shared, sessionSeconds: timings.sessions,
    labels: needs.models.map((k) => m.models[k].label), modelBytes: needs.models.map((k) => m.models[k].files.model.bytes),
    runtime: m.runtime.versions,
  };
  return result;
}
