// The model's own thread: a module Web Worker started by model.mjs the first time a reader uses a
// live demo. Everything slow happens here, never on the page's thread: fetching the files listed
// in manifest.json (each one's size and SHA-256 checked, kept in this browser's Cache Storage for
// the next visit), parsing the tokenizer, compiling the WebAssembly runtime, making the ONNX
// session, tokenizing and running the model. The page's thread only draws.
//
// Messages in: {id, op, ...} with op
//   "model"    {key, spec, wasm}  load one model (the runtime first, once): replies {key, maxTokens}
//   "file"     {entry}            one checked file's bytes (the search sets' vectors), transferred
//   "grid"     {key, texts}       token vectors of a batch (see grid below), the numbers transferred
//   "prefetch" {wasm, files}      start fetching the runtime's binary and these files of the
//                                 models (before the page has the manifest: stored.js names
//                                 them); no reply
//   "rows"     {key, texts}       fetch the token table's rows of texts the page will soon ask for
//                                 (what the reader typed while the model loads); no reply
//   "abort"    {}                 stop every download in flight (the reader left the page)
// Messages out: {progress: {path, bytes, fromCache}} for every chunk that arrives, and
// {id, result} or {id, error: {message, path, aborted}} once per request.
//
// What it computes, as the Python side does (tools/live_model.py, OnnxEncoder): a text is cut at
// the model's token limit the way sentence-transformers cuts it ([CLS], the first limit - 2
// tokens, [SEP]); a batch is padded to its longest text with [PAD] and an attention mask of 0;
// the model returns one vector per token (last_hidden_state).
//
// The model file holds everything but its token table (30,522 rows of 384 8-bit numbers, half the
// model): a text needs only its own tokens' rows, so the worker fetches the table's files that hold
// them (spec.files.table: their index, TABLE_ROWS rows a file; tools/live_model.py, split_table),
// keeps them, and feeds the model those rows in place of the token ids. The numbers are the whole
// model's. A model without spec.files.table takes the token ids itself.

const BASE = new URL("./", import.meta.url); // the book's live/ folder
const CACHE_NAME = "labs-live";
const FACTORY = new URL("runtime/ort-wasm-simd-threaded.mjs", BASE).href;

// The runtime's scripts load beside the model's files, not before them: the first request starts
// the downloads at once, and what needs the runtime waits for this.
const runtimeScripts = Promise.all([
  import("./runtime/transformers.web.min.js"), import("./runtime/ort.wasm.bundle.min.mjs"),
  import(FACTORY), // the wasm's own loader, which onnxruntime imports only when the first session starts
]).then(([transformers, ort]) => {
  const { env } = transformers;
  // Nothing leaves the book: no hub, no CDN; this module fetches and checks every file itself.
  env.allowLocalModels = false;
  env.allowRemoteModels = false;
  env.useBrowserCache = false;
  env.useWasmCache = false;
  const wasm = env.backends.onnx.wasm;
  wasm.wasmPaths = { mjs: FACTORY, wasm: new URL("runtime/ort-wasm-simd-threaded.wasm", BASE).href };
  wasm.numThreads = 1; // threads need COOP/COEP headers, which static hosts cannot send
  wasm.proxy = false; // this is the worker already
  if (ort.env.wasm !== wasm) throw new Error("transformers.js and the model's thread loaded two copies of onnxruntime-web");
  return { BertTokenizer: transformers.BertTokenizer, ort, wasm };
});

class FileProblem extends Error {
  constructor(path, problem) {
    super(`The file live/${path} ${problem}`);
    this.path = `live/${path}`;
  }
}

class Aborted extends Error {
  constructor() {
    super("the download was stopped: the reader left the page");
    this.aborted = true;
  }
}

const MB = (bytes) => (bytes / 1e6).toFixed(1);
let controller = new AbortController(); // replaced after an abort, so that a later use starts afresh

// Cache Storage, opened once as this thread starts (its first opening takes a while)
const opened = (async () => {
  try {
    return self.caches ? await caches.open(CACHE_NAME) : null;
  } catch (err) {
    return null; // no Cache Storage here (private window, insecure origin): fetch every time
  }
})();

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

// Progress goes to the page at most every PROGRESS_MS (and at each file's end): each message is
// a task on the page's thread, which a slow phone should spend on the reader, not on counting.
const PROGRESS_MS = 200;
const unsent = new Map(); // path -> [bytes, fromCache]
let progressTimer = null;

function flushProgress() {
  progressTimer = null;
  for (const [path, [bytes, fromCache]] of unsent) postMessage({ progress: { path, bytes, fromCache } });
  unsent.clear();
}

function progress(path, bytes, fromCache, last) {
  const had = unsent.get(path);
  unsent.set(path, [(had ? had[0] : 0) + bytes, fromCache]);
  if (last) flushProgress();
  else if (!progressTimer) progressTimer = setTimeout(flushProgress, PROGRESS_MS);
}

const files = new Map(); // path -> Promise<Uint8Array>: a file two models share is fetched once

function fetchFile(entry) {
  if (!files.has(entry.path)) {
    const pending = fetchInflated(entry, controller.signal);
    files.set(entry.path, pending);
    pending.catch(() => files.delete(entry.path)); // a failed or stopped download is tried again on the next use
  }
  return files.get(entry.path);
}

/** Whether bytes start as gzip does (1f 8b). */
function gzipped(bytes) {
  return bytes.length > 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/** A checked file as the model reads it: a gzipped one (entry.raw: its size inflated) inflated here, as it arrives. */
async function fetchInflated(entry, signal) {
  const { bytes, inflated } = await fetchChecked(entry, signal);
  if (!entry.raw || !gzipped(bytes)) return bytes;
  let raw;
  try {
    raw = await (inflated || inflate(bytes).done);
  } catch (err) {
    throw new FileProblem(entry.path, `could not be inflated (${err.message}). Rebuild the book with make book`);
  }
  if (raw.length !== entry.raw.bytes) throw new FileProblem(entry.path, "inflates to the wrong size. Rebuild the book with make book");
  return raw;
}

/** A gzip inflater fed chunk by chunk (``write``, then ``close``); ``done``: the inflated bytes. */
function inflater() {
  const stream = new DecompressionStream("gzip");
  const writer = stream.writable.getWriter();
  const done = new Response(stream.readable).arrayBuffer().then((b) => new Uint8Array(b));
  done.catch(() => {}); // said by the one who awaits it
  const quietly = (p) => p.catch(() => {}); // a write's failure is done's failure
  return { write: (chunk) => quietly(writer.write(chunk)), close: () => quietly(writer.close()),
    abort: () => quietly(writer.abort()), done };
}

function inflate(bytes) {
  const z = inflater();
  z.write(bytes);
  z.close();
  return z;
}

async function fetchChecked(entry, signal) {
  const url = new URL(entry.path, BASE).href;
  const key = `${url}?sha256=${entry.sha256}`;
  const cache = await opened;
  if (cache) {
    const hit = await cache.match(key);
    if (hit) {
      // stored under its SHA-256 once checked: its size is checked again, not its hash
      const bytes = new Uint8Array(await hit.arrayBuffer());
      if (bytes.length === entry.bytes) {
        progress(entry.path, bytes.length, true, true);
        return { bytes, inflated: null };
      }
      await cache.delete(key); // a damaged cache entry: fetch it again
    }
  }
  let response;
  try {
    response = await fetch(url, { cache: "no-cache", signal });
  } catch (err) {
    if (signal.aborted) throw new Aborted();
    throw new FileProblem(entry.path, `could not be fetched (${err.message})`);
  }
  if (response.status === 404) throw new FileProblem(entry.path, "is missing from this book (HTTP 404). Rebuild the book with make book");
  if (!response.ok) throw new FileProblem(entry.path, `could not be fetched (HTTP ${response.status})`);
  // Read into one buffer of the size the manifest gives (no second copy of a 10 MB file).
  let bytes = new Uint8Array(entry.bytes);
  let length = 0;
  let z = null; // a gzipped file is inflated while it arrives
  const reader = response.body.getReader();
  for (;;) {
    let part;
    try {
      part = await reader.read();
    } catch (err) {
      if (z) z.abort();
      if (signal.aborted) throw new Aborted();
      throw new FileProblem(entry.path, `stopped arriving after ${MB(length)} MB (${err.message})`);
    }
    if (part.done) {
      progress(entry.path, 0, false, true);
      break;
    }
    if (length === 0 && entry.raw && gzipped(part.value)) z = inflater();
    if (z) z.write(part.value);
    if (length + part.value.length > bytes.length) {
      const bigger = new Uint8Array(Math.max(2 * bytes.length, length + part.value.length));
      bigger.set(bytes.subarray(0, length));
      bytes = bigger;
    }
    bytes.set(part.value, length);
    length += part.value.length;
    progress(entry.path, part.value.length, false);
  }
  bytes = length === bytes.length ? bytes : bytes.slice(0, length);
  if (z) z.close();
  if (entry.raw && bytes.length === entry.raw.bytes && !gzipped(bytes)) return { bytes, inflated: null }; // the host inflated it on the way
  await check(entry, bytes);
  if (cache) keep(cache, url, key, bytes); // not waited for: the page needs the bytes, not the copy
  return { bytes, inflated: z && z.done };
}

/** A checked file into Cache Storage under its SHA-256, and an earlier build's copy of it out. */
async function keep(cache, url, key, bytes) {
  try {
    await cache.put(key, new Response(bytes));
    for (const old of await cache.keys(url, { ignoreSearch: true })) {
      if (old.url !== key) await cache.delete(old);
    }
  } catch (err) {
    // the cache is full or refused: the file is used anyway
  }
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

let runtime = null; // Promise: the WebAssembly binary in place
const tokenizers = new Map(); // tokenizer path -> Promise<BertTokenizer>: both models read the same one
const models = new Map(); // key -> Promise<{tokenizer, session, maxTokens, padId, table}>

/** The token table's index (spec.files.table), checked: {input, rows, dim, rowsPerFile, files: [sha256]} and where its files are. */
async function loadTable(spec) {
  const entry = spec.files.table;
  const index = json(entry, await fetchFile(entry));
  const ok = index && typeof index.input === "string" && Number.isInteger(index.rows) && Number.isInteger(index.dim) &&
    Number.isInteger(index.rowsPerFile) && Array.isArray(index.files) && index.files.length === Math.ceil(index.rows / index.rowsPerFile);
  if (!ok) throw new FileProblem(entry.path, "is not a token table's index. Rebuild the book with make book");
  return { ...index, folder: entry.path.slice(0, entry.path.lastIndexOf("/") + 1) };
}

/** The checked file of the table that holds row ``f * rowsPerFile`` onwards. */
function tableFile(table, f) {
  const rows = Math.min(table.rowsPerFile, table.rows - f * table.rowsPerFile);
  return { path: `${table.folder}${String(f).padStart(4, "0")}.bin`, bytes: rows * table.dim, sha256: table.files[f] };
}

/** The table's rows of a batch's token ids (BigInt64Array B*T), fetching the files that hold them: Uint8Array B*T*D. */
async function tableRows(table, ids) {
  const wanted = [...new Set(Array.from(ids, (id) => Math.floor(Number(id) / table.rowsPerFile)))];
  const got = new Map(await Promise.all(wanted.map(async (f) => [f, await fetchFile(tableFile(table, f))])));
  const D = table.dim;
  const rows = new Uint8Array(ids.length * D);
  ids.forEach((id, at) => {
    const n = Number(id);
    const start = (n % table.rowsPerFile) * D;
    rows.set(got.get(Math.floor(n / table.rowsPerFile)).subarray(start, start + D), at * D);
  });
  return rows;
}

function loadTokenizer(spec) {
  const path = spec.files.tokenizer.path;
  if (!tokenizers.has(path)) {
    const pending = Promise.all([fetchFile(spec.files.tokenizer), fetchFile(spec.files.tokenizerConfig), runtimeScripts]).then(
      ([tok, config, { BertTokenizer }]) => new BertTokenizer(json(spec.files.tokenizer, tok), json(spec.files.tokenizerConfig, config)));
    tokenizers.set(path, pending);
    pending.catch(() => tokenizers.delete(path));
  }
  return tokenizers.get(path);
}

/**
 * A body sent as what to add to another model's (entry.plus; spec.files.base, the untouched body):
 * the two inflated bodies summed byte by byte, modulo 256, and checked against entry.raw's SHA-256.
 */
async function rebuilt(entry, baseEntry) {
  const [base, delta] = await Promise.all([fetchFile(baseEntry), fetchFile(entry)]);
  if (base.length !== delta.length) throw new FileProblem(entry.path, "does not fit the untouched model's body. Rebuild the book with make book");
  const body = new Uint8Array(delta.length);
  for (let i = 0; i < body.length; i++) body[i] = base[i] + delta[i]; // a Uint8Array keeps the sum modulo 256
  const hash = await digest(body);
  if (hash !== null && hash !== entry.raw.sha256) {
    throw new FileProblem(entry.path, "added to the untouched model does not make the fine-tuned one (its SHA-256 differs). Rebuild the book with make book");
  }
  return body;
}

const readers = new Map(); // key -> Promise<{tokenizer, table, spec}>: what tokenizing needs, ready before the session

/** The token rows of texts the page will soon ask for, fetched while the body still downloads (a hint: a failure here is met again, and said, by grid). */
function hint(key, texts) {
  const reader = readers.get(key);
  if (!reader) return;
  reader.then(({ tokenizer, table, spec }) => {
    const ids = texts.flatMap((t) => tokenize({ tokenizer, maxTokens: spec.maxTokens }, t).ids);
    return table && ids.length ? tableRows(table, ids) : null;
  }).catch(() => {});
}

// An ONNX model of one Identity node: its session, made as soon as the runtime's binary is in,
// compiles the WebAssembly and starts onnxruntime while the model's body still downloads.
const IDENTITY = new Uint8Array([8, 8, 58, 58, 10, 16, 10, 1, 120, 18, 1, 121, 34, 8, 73, 100, 101, 110, 116, 105, 116,
  121, 18, 4, 119, 97, 114, 109, 90, 15, 10, 1, 120, 18, 10, 10, 8, 8, 1, 18, 4, 10, 2, 8, 1, 98, 15, 10, 1, 121, 18, 10,
  10, 8, 8, 1, 18, 4, 10, 2, 8, 1, 66, 4, 10, 0, 16, 18]);

/** The runtime's binary fetched and the runtime started (once). */
function startRuntime(wasmEntry) {
  if (!runtime) {
    runtime = Promise.all([fetchFile(wasmEntry), runtimeScripts]).then(([bytes, { wasm, ort }]) => {
      wasm.wasmBinary = bytes;
      // a runtime that fails to start here fails again, and is said, with the model's own session
      return serially(() => ort.InferenceSession.create(IDENTITY).then((s) => s.release(), () => {}));
    });
    runtime.catch(() => { runtime = null; }); // said by the model that waits for it
  }
  return runtime;
}

function loadModel(key, spec, wasmEntry) {
  startRuntime(wasmEntry);
  if (!models.has(key)) {
    const pending = (async () => {
      const body = spec.files.base ? rebuilt(spec.files.model, spec.files.base) : fetchFile(spec.files.model);
      const tokenizing = Promise.all([loadTokenizer(spec), spec.files.table ? loadTable(spec) : null]);
      readers.set(key, tokenizing.then(([tokenizer, table]) => ({ tokenizer, table, spec })));
      readers.get(key).catch(() => readers.delete(key));
      const [[tokenizer, table], modelBytes, , { ort }] = await Promise.all([tokenizing, body, runtime, runtimeScripts]);
      let session;
      const started = performance.now();
      try {
        session = await serially(() => ort.InferenceSession.create(modelBytes, {
          executionProviders: ["wasm"], graphOptimizationLevel: "all", logSeverityLevel: 3,
        }));
      } catch (err) {
        throw new FileProblem(spec.files.model.path, `could not be read as a model (${String(err.message || err).slice(0, 160)}). Rebuild the book with make book`);
      }
      files.delete(spec.files.model.path); // the session holds the weights now: the bytes can go
      return { tokenizer, session, table, maxTokens: spec.maxTokens, padId: tokenizer.pad_token_id,
        sessionSeconds: (performance.now() - started) / 1000 };
    })();
    models.set(key, pending);
    pending.catch(() => models.delete(key));
  }
  return models.get(key);
}

/** The model's tokens of one text, cut at its limit as sentence-transformers cuts: [CLS], the text's first maxTokens - 2 tokens, [SEP]. */
function tokenize(model, text) {
  const pieces = model.tokenizer.tokenize(text);
  const room = model.maxTokens - 2;
  const tokens = ["[CLS]", ...pieces.slice(0, room), "[SEP]"];
  return { tokens, ids: model.tokenizer.convert_tokens_to_ids(tokens), count: pieces.length + 2, cut: pieces.length > room };
}

/** Token vectors of a batch padded to its longest text: {tokens, ids, mask (B x T), grid (Float32Array B*T*D), B, T, D, cut, counts, ms (the model's run), rowsMs (the table's rows, fetched if new)}. */
async function grid(key, texts) {
  const [model, { ort }] = await Promise.all([models.get(key), runtimeScripts]);
  const parts = texts.map((t) => tokenize(model, t));
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
      const id = real ? p.ids[t] : model.padId;
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
    attention_mask: new ort.Tensor("int64", mask, [B, T]),
    token_type_ids: new ort.Tensor("int64", new BigInt64Array(B * T), [B, T]),
  };
  const fetching = performance.now();
  if (model.table) {
    feeds[model.table.input] = new ort.Tensor("uint8", await tableRows(model.table, ids), [B, T, model.table.dim]);
  } else {
    feeds.input_ids = new ort.Tensor("int64", ids, [B, T]);
  }
  const started = performance.now();
  const out = await serially(() => model.session.run(feeds));
  const hidden = out.last_hidden_state;
  const data = new Float32Array(hidden.data); // a copy of our own, to hand to the page
  return {
    tokens, ids: idRows, mask: maskRows, grid: data, B, T, D: hidden.dims[2],
    cut: parts.map((p) => p.cut), counts: parts.map((p) => p.count), ms: performance.now() - started,
    rowsMs: started - fetching,
  };
}

async function handle(msg) {
  if (msg.op === "model") {
    const model = await loadModel(msg.key, msg.spec, msg.wasm);
    return [{ key: msg.key, maxTokens: model.maxTokens, sessionSeconds: model.sessionSeconds }, []];
  }
  if (msg.op === "file") {
    const bytes = (await fetchFile(msg.entry)).slice(); // the page gets a copy; the worker keeps its own for a second demo
    files.delete(msg.entry.path);
    return [bytes, [bytes.buffer]];
  }
  if (msg.op === "grid") {
    const g = await grid(msg.key, msg.texts);
    return [g, [g.grid.buffer]];
  }
  throw new Error(`unknown request ${msg.op}`);
}

self.onmessage = (event) => {
  const msg = event.data;
  if (msg.op === "prefetch") {
    startRuntime(msg.wasm);
    for (const entry of msg.files) fetchFile(entry).catch(() => {}); // a failure is said by the load that needs it
    return;
  }
  if (msg.op === "rows") {
    hint(msg.key, msg.texts);
    return;
  }
  if (msg.op === "abort") {
    controller.abort();
    controller = new AbortController();
    return;
  }
  handle(msg).then(
    ([result, transfer]) => postMessage({ id: msg.id, result }, transfer),
    (err) => postMessage({ id: msg.id, error: { message: String((err && err.message) || err), path: err && err.path,
      aborted: Boolean(err && err.aborted) } }),
  );
};
