// Lesson 5's query-side adapter, trained in the page: labs.lessons.adapter step for step, in float64.
//
// The model stays frozen, and so do the articles' vectors. A question's unit vector q (d = 384)
// passes through one square matrix W, which starts as the identity, and is scaled back to length 1:
// q' = unit(W q); an article p scores q' . p. W learns by InfoNCE at temperature tau: each
// question of a batch must pick its own steps article among the batch's steps (in-batch
// negatives) and, in the look-alike arm, also among the batch's look-alikes (one extra column per
// pair). The gradient is written out by hand below; W takes plain SGD steps, W <- W - lr dW.
//
// Shapes (B questions in a batch, M >= B columns, d = 384; a "row" is a Float64Array(d)):
//   W    Float64Array(d * d), row-major: W[j * d + k]
//   Q    B rows: the batch's unit questions        A = Q W^T  (B x d), row i is W q_i
//   P    M rows: unit articles, column i answers   U = unit rows of A
//        question i, columns B..M-1 are negatives  S = U P^T  (B x M), the cosines
//        for every row                             L = mean_i -log softmax(S_i / tau)_i
// Backward, beside the forward (as the Python docstring writes it):
//   dS = (softmax(S / tau) - I) / (B tau)          dU = dS P
//   dA = (dU - U (U . dU)) / |A|  (row by row: the unit scaling's backward)
//   dW = dA^T Q
//
// The batches: `Mulberry32` and `batchPlan` repeat labs' generator and plan bit for bit (each
// epoch draws one wording per topic, shuffles the topics Fisher-Yates from the last position down,
// and cuts full batches), so the page and Python train on the same rows in the same order. The
// browser tests hold the gradient, W after 50 steps and the held-out accuracy to torch and labs.

export const TAU = 0.05; // labs.lessons.adapter.TAU
export const LR = 0.5; // labs.lessons.adapter.LR
export const STEPS = 100; // labs.lessons.adapter.STEPS
export const BATCH = 16; // labs.lessons.adapter.BATCH
/** What the page lets a reader set (a run of STEPS_MAX steps takes a few seconds on a laptop). */
export const LIMITS = { tauMin: 0.01, tauMax: 2, stepsMin: 1, stepsMax: 500, seedMax: 4294967295 };

/** mulberry32: a 32-bit generator; next() is a float in [0, 1), below(n) is floor(next() * n). */
export class Mulberry32 {
  constructor(seed) {
    this.state = seed >>> 0;
  }

  next() {
    this.state = (this.state + 0x6D2B79F5) >>> 0;
    const a = this.state;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  below(n) {
    return Math.floor(this.next() * n);
  }
}

/** The rows each step trains on: ``steps`` arrays of ``batch`` rows; row ``wordings * t + w`` is wording
 * w of topic t (labs.lessons.adapter.batch_plan). */
export function batchPlan(topics, wordings, batch, steps, seed) {
  if (!(batch >= 2 && batch <= topics)) throw new RangeError(`batch must be 2 to ${topics} (the topics), got ${batch}`);
  const rng = new Mulberry32(seed);
  const plan = [];
  while (plan.length < steps) {
    const chosen = [];
    for (let t = 0; t < topics; t++) chosen.push(wordings * t + rng.below(wordings));
    for (let i = topics - 1; i > 0; i--) {
      const j = rng.below(i + 1);
      [chosen[i], chosen[j]] = [chosen[j], chosen[i]];
    }
    for (let k = 0; k + batch <= topics; k += batch) plan.push(chosen.slice(k, k + batch));
  }
  return plan.slice(0, steps);
}

/** The d x d identity, Float64Array(d * d). */
export function identity(d) {
  const W = new Float64Array(d * d);
  for (let j = 0; j < d; j++) W[j * d + j] = 1;
  return W;
}

/** Rows (Float64Array(d) each) of a flat float32 or float64 table of n rows: ``rows(table, d, start, n)``. */
export function rows(table, d, start = 0, n = table.length / d - start) {
  const out = [];
  for (let r = start; r < start + n; r++) out.push(Float64Array.from(table.subarray(r * d, (r + 1) * d)));
  return out;
}

function dot(a, b) {
  let s = 0;
  for (let k = 0; k < a.length; k++) s += a[k] * b[k];
  return s;
}

/** W q (Float64Array(d)) and its length. */
function apply(W, q) {
  const d = q.length;
  const a = new Float64Array(d);
  for (let j = 0; j < d; j++) {
    let s = 0;
    const o = j * d;
    for (let k = 0; k < d; k++) s += W[o + k] * q[k];
    a[j] = s;
  }
  return a;
}

/** The adapted question unit(W q), Float64Array(d). */
export function adapt(W, q) {
  const a = apply(W, q);
  const n = Math.sqrt(dot(a, a));
  if (!(n > 0)) throw new RangeError("W sends this question to 0");
  for (let j = 0; j < a.length; j++) a[j] /= n;
  return a;
}

/** Row i of one batch: its term of the loss, -log softmax(S_i / tau)_i / B, with its part of dW added into
 * ``dW`` (Float64Array(d * d)). The rows of a batch are independent until W moves: the page can pause between them. */
export function rowLossAndGrad(W, Q, P, tau, i, dW) {
  const B = Q.length;
  const M = P.length;
  const q = Q[i];
  const d = q.length;
  // forward: a = W q_i, u = a / |a|, z = S_i / tau = (u . p_m) / tau
  const u = apply(W, q);
  const norm = Math.sqrt(dot(u, u));
  if (!(norm > 0)) throw new RangeError(`W sends question ${i} of the batch to 0`);
  for (let j = 0; j < d; j++) u[j] /= norm;
  const z = P.map((p) => dot(u, p) / tau);
  const top = Math.max(...z);
  let sum = 0;
  for (let m = 0; m < M; m++) sum += Math.exp(z[m] - top);
  const logSum = top + Math.log(sum);
  // backward: dS_i = (softmax(z) - onehot(i)) / (B tau), dU_i = dS_i P
  const dU = new Float64Array(d);
  for (let m = 0; m < M; m++) {
    const g = (Math.exp(z[m] - logSum) - (m === i ? 1 : 0)) / (B * tau);
    const p = P[m];
    for (let j = 0; j < d; j++) dU[j] += g * p[j];
  }
  // dA_i = (dU_i - u (u . dU_i)) / |a|, then dW += dA_i q_i^T (row i's part of dA^T Q)
  const along = dot(u, dU);
  for (let j = 0; j < d; j++) {
    const dA = (dU[j] - u[j] * along) / norm;
    const o = j * d;
    for (let k = 0; k < d; k++) dW[o + k] += dA * q[k];
  }
  return -(z[i] - logSum) / B;
}

/** One batch: the loss and dW (Float64Array(d * d)) by hand. Q: B rows, P: M >= B rows (column i answers row i). */
export function lossAndGrad(W, Q, P, tau) {
  const d = Q[0].length;
  const dW = new Float64Array(d * d);
  let loss = 0;
  for (let i = 0; i < Q.length; i++) loss += rowLossAndGrad(W, Q, P, tau, i, dW);
  return { loss, dW };
}

/** The columns of one step: the rows' steps articles, then (look-alike arm) the look-alikes they have. */
export function columns(set, batchRows, arm) {
  const cols = batchRows.map((r) => set.P[r]);
  if (arm === "lookalike") for (const r of batchRows) if (set.L[r]) cols.push(set.L[r]);
  return cols;
}

/** One SGD step on ``batchRows`` of ``set`` ({Q, P, L}: rows; L[r] may be null): W changes in place; returns the loss. */
export function step(W, set, batchRows, arm, tau, lr) {
  const { loss, dW } = lossAndGrad(W, batchRows.map((r) => set.Q[r]), columns(set, batchRows, arm), tau);
  for (let x = 0; x < W.length; x++) W[x] -= lr * dW[x];
  return loss;
}

/** A whole run at once (labs' train_adapter): W from the identity, ``steps`` steps of ``plan``; {W, losses}. */
export function train(set, plan, { arm = "inbatch", steps = STEPS, tau = TAU, lr = LR } = {}) {
  const W = identity(set.Q[0].length);
  const losses = [];
  for (let s = 0; s < steps; s++) losses.push(step(W, set, plan[s], arm, tau, lr));
  return { W, losses };
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 0));

/** The same run in slices of about ``sliceMs``, a batch row at a time (the page's thread stays free
 * between them; W moves once a step, after its last row): ``onStep(s, loss)`` after each step;
 * resolves to {W, losses, ms, stepMs} (ms: the time spent training, stepMs: per step, both without
 * the pauses). The same numbers as `train`. */
export async function trainInSlices(set, plan, { arm = "inbatch", steps = STEPS, tau = TAU, lr = LR, sliceMs = 25,
  onStep = null } = {}) {
  const W = identity(set.Q[0].length);
  const dW = new Float64Array(W.length);
  const losses = [];
  let busy = 0;
  let i = 0; // the next row of the current step's batch
  let Q = null;
  let P = null;
  let loss = 0;
  while (losses.length < steps) {
    const t0 = performance.now();
    do {
      if (i === 0) {
        const batchRows = plan[losses.length];
        Q = batchRows.map((r) => set.Q[r]);
        P = columns(set, batchRows, arm);
        dW.fill(0);
        loss = 0;
      }
      loss += rowLossAndGrad(W, Q, P, tau, i, dW);
      i += 1;
      if (i === Q.length) {
        for (let x = 0; x < W.length; x++) W[x] -= lr * dW[x];
        losses.push(loss);
        i = 0;
        if (onStep) onStep(losses.length, loss);
      }
    } while (losses.length < steps && performance.now() - t0 < sliceMs);
    busy += performance.now() - t0;
    if (losses.length < steps) await pause();
  }
  return { W, losses, ms: busy, stepMs: busy / steps };
}

/** ``fn(item, k)`` for every item, in slices of about ``sliceMs`` with a pause between them; resolves to the results. */
export async function mapInSlices(items, fn, sliceMs = 25) {
  const out = [];
  while (out.length < items.length) {
    const t0 = performance.now();
    do out.push(fn(items[out.length], out.length));
    while (out.length < items.length && performance.now() - t0 < sliceMs);
    if (out.length < items.length) await pause();
  }
  return out;
}

/** Does the steps article p score strictly above the look-alike l for the adapted question q? */
export function stepsWin(W, q, p, l) {
  const u = adapt(W, q);
  return dot(u, p) > dot(u, l);
}

/** The held-out exam: per question, does the steps article score above the look-alike (strictly,
 * as the experiment's Exam.measure)? Qh, Ph, Lh: n rows each. {pair: [bool], accuracy}. */
export function pairAccuracy(W, Qh, Ph, Lh) {
  const pair = Qh.map((q, i) => stepsWin(W, q, Ph[i], Lh[i]));
  return { pair, accuracy: pair.filter(Boolean).length / pair.length };
}

/** The adapted question's cosines with every article of ``D`` (rows), Float64Array. */
export function scores(W, q, D) {
  const u = adapt(W, q);
  return Float64Array.from(D, (p) => dot(u, p));
}

/** The rank (1 = first) of article ``answer`` among ``D`` for question q: 1 + the articles scored strictly above it. */
export function rankOf(W, q, D, answer) {
  const s = scores(W, q, D);
  let above = 0;
  for (let m = 0; m < s.length; m++) if (s[m] > s[answer]) above += 1;
  return 1 + above;
}

/** One line saying what is wrong with a run's settings, or null: steps and tau in LIMITS, a whole seed. */
export function settingsProblem({ steps, tau, seed }) {
  if (!(Number.isInteger(steps) && steps >= LIMITS.stepsMin && steps <= LIMITS.stepsMax)) {
    return `Steps must be a whole number from ${LIMITS.stepsMin} to ${LIMITS.stepsMax}; nothing was trained.`;
  }
  if (!(Number.isFinite(tau) && tau >= LIMITS.tauMin && tau <= LIMITS.tauMax)) {
    return `\u03c4 must be a number from ${LIMITS.tauMin} to ${LIMITS.tauMax}; nothing was trained.`;
  }
  if (!(Number.isInteger(seed) && seed >= 0 && seed <= LIMITS.seedMax)) {
    return `The seed must be a whole number from 0 to ${LIMITS.seedMax}; nothing was trained.`;
  }
  return null;
}

/** One line saying why the reader's own pairs cannot train, or null. ``pairs``: [{question, answer, lookAlike}]
 * (article ids; lookAlike may be null). */
export function pairsProblem(pairs) {
  if (pairs.length === 0) {
    return "No pairs yet: add a question, then choose its right article; nothing was trained.";
  }
  if (pairs.length === 1) {
    return "One pair cannot train: InfoNCE needs a second pair, whose answer is this question's negative; " +
      "nothing was trained.";
  }
  const same = pairs.find((p) => p.lookAlike !== null && p.lookAlike === p.answer);
  if (same) {
    return `The look-alike of \u201c${same.question}\u201d is its right article itself; mark another article; ` +
      "nothing was trained.";
  }
  const answers = new Map();
  for (const p of pairs) {
    if (answers.has(p.answer)) {
      return `\u201c${answers.get(p.answer)}\u201d and \u201c${p.question}\u201d have the same right article, so ` +
        "each would be the other's negative; keep one; nothing was trained.";
    }
    answers.set(p.answer, p.question);
  }
  return null;
}
