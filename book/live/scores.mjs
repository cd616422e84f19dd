// The arithmetic of "why this score" and of the batch lab: pure functions, no page, every number
// in float64 (the browser tests compare each one with labs on the same inputs).
//
// Token shares (labs.lessons.shares). With mean pooling a text's vector is the mean of its real
// tokens' vectors, e_a = (1/n) sum_t h_t, so cos(a, b) = sum_t h_t . e_b_hat / (n ||e_a||): one
// share per token of a, and likewise per token of b. A text here is one grid of the model,
// {grid: Float32Array(T * D), T, D, mask?: [T] of 0/1 (all real when absent)}.
//
// The batch (labs.lessons.infonce). S is B rows (questions) by M >= B columns: column i is row
// i's answer, columns B..M-1 extra negatives for every row. A mask is B rows of M booleans, true
// where the entry is left out of its row's softmax (never the positive). Row i's loss at
// temperature tau is -log softmax(S[i] / tau)[i] over the entries kept; a row with no negative
// left has loss 0 and no gradient (it teaches nothing), as labs' info_nce_masked computes it.
//
// Mining (sentence-transformers' mine_hard_negatives, one negative a question): rank the corpus
// by score, keep the rangeMax best besides the answer (one more when the answer is not among
// them, as the library does), skip those above the relative margin's threshold
// (positive - r |positive|), then skip the first rangeMin that remain: the next one is mined.

/** A text as {grid, T, D, mask}: the model's grid of one text ({mask: [[...]]}, B = 1) or one already. */
function one(text) {
  const mask = text.mask && Array.isArray(text.mask[0]) ? text.mask[0] : text.mask;
  return { grid: text.grid, T: text.T, D: text.D, mask };
}

/** The mean of a text's real token vectors (Float64Array D) and how many there are. */
function meanOf(text) {
  const { grid, T, D } = text;
  const mean = new Float64Array(D);
  let n = 0;
  for (let t = 0; t < T; t++) {
    if (text.mask && !text.mask[t]) continue;
    n += 1;
    for (let d = 0; d < D; d++) mean[d] += grid[t * D + d];
  }
  for (let d = 0; d < D; d++) mean[d] /= n;
  return { mean, n };
}

function norm(v) {
  let s = 0;
  for (let d = 0; d < v.length; d++) s += v[d] * v[d];
  return Math.sqrt(s);
}

/** Each real token's share of toward(unit vector): h_t . u / (n ||e||); 0 at padding. */
function sharesToward(text, own, u) {
  const { grid, T, D } = text;
  const length = norm(own.mean);
  const out = new Float64Array(T);
  for (let t = 0; t < T; t++) {
    if (text.mask && !text.mask[t]) continue;
    let s = 0;
    for (let d = 0; d < D; d++) s += grid[t * D + d] * u[d];
    out[t] = s / (own.n * length);
  }
  return out;
}

function unitOf(own) {
  const length = norm(own.mean);
  return own.mean.map((x) => x / length);
}

/** The cosine of two texts under mean pooling and each token's share of it: {cosine, a, b}
 * (Float64Array T_a and T_b, each summing to the cosine). */
export function tokenShares(a, b) {
  a = one(a);
  b = one(b);
  const ma = meanOf(a);
  const mb = meanOf(b);
  const ua = unitOf(ma);
  const ub = unitOf(mb);
  let cosine = 0;
  for (let d = 0; d < ua.length; d++) cosine += ua[d] * ub[d];
  return { cosine, a: sharesToward(a, ma, ub), b: sharesToward(b, mb, ua) };
}

/** Each token pair's share (T_a rows of T_b): h_t . g_s / (n m ||e_a|| ||e_b||); the table sums to the cosine. */
export function pairShares(a, b) {
  a = one(a);
  b = one(b);
  const ma = meanOf(a);
  const mb = meanOf(b);
  const scale = ma.n * mb.n * norm(ma.mean) * norm(mb.mean);
  const D = a.D;
  const rows = [];
  for (let t = 0; t < a.T; t++) {
    const row = new Float64Array(b.T);
    if (!a.mask || a.mask[t]) {
      for (let s = 0; s < b.T; s++) {
        if (b.mask && !b.mask[s]) continue;
        let x = 0;
        for (let d = 0; d < D; d++) x += a.grid[t * D + d] * b.grid[s * D + d];
        row[s] = x / scale;
      }
    }
    rows.push(row);
  }
  return rows;
}

/** The question's token shares of the gap cos(q, d1) - cos(q, d2): {gap, shares} (they sum to the gap). */
export function gapShares(q, d1, d2) {
  const one = tokenShares(q, d1);
  const two = tokenShares(q, d2);
  return { gap: one.cosine - two.cosine, shares: one.a.map((x, t) => x - two.a[t]) };
}

// ---- the batch --------------------------------------------------------------------------

/** S[i][j] = Q[i] . P[j] in float64: B rows of M numbers (Q and P: arrays of vectors). */
export function similarityTable(Q, P) {
  return Q.map((q) => P.map((p) => {
    let s = 0;
    for (let d = 0; d < q.length; d++) s += q[d] * p[d];
    return s;
  }));
}

function noMask(S) {
  return S.map((row) => row.map(() => false));
}

/** Row i's softmax shares at tau over the entries its mask keeps (0 for a dropped entry). */
export function rowShares(S, tau, mask) {
  const m = mask || noMask(S);
  return S.map((row, i) => {
    const z = row.map((s, j) => (m[i][j] ? -Infinity : s / tau));
    const top = Math.max(...z);
    const e = z.map((x) => (x === -Infinity ? 0 : Math.exp(x - top)));
    const sum = e.reduce((acc, x) => acc + x, 0);
    return e.map((x) => x / sum);
  });
}

/** Each row's InfoNCE at tau with its mask's entries left out: -log softmax(S[i] / tau)[i] (B numbers). */
export function infoNceRows(S, tau, mask) {
  const m = mask || noMask(S);
  return S.map((row, i) => {
    const z = row.map((s, j) => (m[i][j] ? -Infinity : s / tau));
    const top = Math.max(...z);
    let sum = 0;
    for (const x of z) if (x !== -Infinity) sum += Math.exp(x - top);
    return -(z[i] - top - Math.log(sum));
  });
}

/** The batch's loss: the mean of the rows' losses (a row with no negative left counts 0). */
export function infoNce(S, tau, mask) {
  const rows = infoNceRows(S, tau, mask);
  return rows.reduce((acc, x) => acc + x, 0) / rows.length;
}

/** d(row i's loss)/dS[i][j] = (share_j - [j = i]) / tau (0 where masked): B rows of M. */
export function rowGradients(S, tau, mask) {
  return rowShares(S, tau, mask).map((p, i) => p.map((x, j) => (x - (j === i ? 1 : 0)) / tau));
}

/** Each negative's share of its row's gradient: its push, share_j / tau, over the whole push of the
 * row (which equals the pull on the positive); 0 for the positive, a dropped entry, or a row with no
 * negative left. */
export function gradientShares(S, tau, mask) {
  const g = rowGradients(S, tau, mask);
  return g.map((row, i) => {
    let push = 0;
    row.forEach((x, j) => { if (j !== i) push += x; });
    return row.map((x, j) => (j === i || push === 0 ? 0 : x / push));
  });
}

// ---- the false-negative rules -------------------------------------------------------------

function byRule(G, drop) {
  return G.map((row, i) => row.map((g, j) => j !== i && drop(g, row[i], i, j)));
}

/** Duplicate texts: entry (i, j) is dropped when column j holds the very text of row i's answer. */
export function duplicateMask(columnTexts, B) {
  return columnTexts.slice(0, B).map((own, i) => columnTexts.map((t, j) => j !== i && t === own));
}

/** labs' false_negative_mask: G[i][j] > G[i][i] + margin (G: S itself, or a guide model's scores). */
export function marginMask(G, margin) {
  return byRule(G, (g, pos) => g > pos + margin);
}

/** The Qwen3-Embedding rule: a negative more than 0.1 above the positive, on the model's own scores. */
export const QWEN3_MARGIN = 0.1;
export function qwen3Mask(S) {
  return marginMask(S, QWEN3_MARGIN);
}

/** GISTEmbed, absolute: the guide's score above its positive's minus m. */
export function gistAbsoluteMask(G, m) {
  return byRule(G, (g, pos) => g > pos - m);
}

/** GISTEmbed, relative (sign-safe): the guide's score above positive - |positive| m. */
export function gistRelativeMask(G, m) {
  return byRule(G, (g, pos) => g > pos - Math.abs(pos) * m);
}

/** The rows of a mask that keep no negative: their loss is 0, and they teach nothing. */
export function rowsWithoutNegatives(mask) {
  const out = [];
  mask.forEach((row, i) => { if (row.every((x, j) => j === i || x)) out.push(i); });
  return out;
}

// ---- mining -------------------------------------------------------------------------------

/** Why a window cannot mine anything, in one line, or null. */
export function windowProblem(rangeMin, rangeMax, corpusSize) {
  if (!Number.isInteger(rangeMin) || rangeMin < 0) return "range_min must be a whole number of 0 or more.";
  if (!Number.isInteger(rangeMax) || rangeMax < 1) return "range_max must be a whole number of 1 or more.";
  if (rangeMin >= rangeMax) {
    return `The window holds nothing: range_min (${rangeMin}) skips every candidate range_max (${rangeMax}) keeps; ` +
      "make range_min smaller than range_max.";
  }
  if (rangeMin >= corpusSize - 1) return `range_min (${rangeMin}) skips all ${corpusSize - 1} articles besides the answer.`;
  return null;
}

/** One question's mining: scores (N numbers), its answer's index, {rangeMin, rangeMax, margin
 * (relative; null for none)} -> {mined (an index or null), order (the candidates looked at, best
 * first), dropped: {outside, margin, skipped} (how many candidates each rule left out), threshold}. */
export function mine(scores, answer, { rangeMin = 0, rangeMax = 10, margin = null } = {}) {
  const N = scores.length;
  const ranked = scores.map((s, j) => j).sort((x, y) => scores[y] - scores[x] || x - y);
  // The library keeps rangeMax + 1 (room for the answer), drops the answer, then rangeMax at most.
  const pool = ranked.slice(0, Math.min(rangeMax + 1, N)).filter((j) => j !== answer);
  const pos = scores[answer];
  const threshold = margin === null ? null : pos - Math.abs(pos) * margin;
  const left = pool.filter((j) => threshold === null || !(scores[j] > threshold));
  const kept = left.slice(0, rangeMax);
  const mined = kept.length > rangeMin ? kept[rangeMin] : null;
  return {
    mined, order: pool, threshold,
    dropped: { outside: N - 1 - pool.length + (left.length - kept.length), margin: pool.length - left.length,
      skipped: Math.min(rangeMin, kept.length) },
    closeToAnswer: pool.filter((j) => threshold !== null && scores[j] > threshold),
  };
}
