// The live demos' arithmetic, as pure functions: what the page computes from the model's numbers
// (and the explorable's own), each the lesson's formula written once. tests/book/test_live.py
// imports this module in Chromium and checks every function against labs on the same inputs.
//
//   meanUnit(grid, T, D)          a text's vector: the mean of its T token vectors, normalized (float64)
//   pool(g)                       the three poolings of a padded batch (lesson 1)
//   cosine(a, b)                  cosine of two vectors
//   scores(docs, query, D)        cosine of a unit query with every unit document row
//   rank(scores, k)               the k best rows, best first (ties: document order)
//   infonce(q, cards, tau)        one row of InfoNCE on the unit circle, with its gradients (lessons 3, 4)
//
// Written in ES5 apart from `export`: tools/live_model.py also copies it as live/maths.js, a
// classic script (window.labsLiveMaths), for demos.js, which must parse in an old browser to tell
// it so, and run the explorable from a page opened as a file.

/** The mean of the first T rows of a (T, D) Float32Array, normalized to length 1, as a Float64Array(D). */
export function meanUnit(grid, T, D) {
  var v = new Float64Array(D);
  var t, d;
  for (t = 0; t < T; t++) for (d = 0; d < D; d++) v[d] += grid[t * D + d];
  var norm = 0;
  for (d = 0; d < D; d++) {
    v[d] /= T;
    norm += v[d] * v[d];
  }
  norm = Math.sqrt(norm);
  for (d = 0; d < D; d++) v[d] /= norm;
  return v;
}

/** Cosine of two vectors of the same length (any array type). */
export function cosine(a, b) {
  var ab = 0, aa = 0, bb = 0;
  for (var i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / Math.sqrt(aa) / Math.sqrt(bb);
}

/** The three poolings of a grid {grid (B*T*D), mask (B rows of T 0/1), B, T, D}, in float64:
 * {mean_masked, mean_unmasked, cls}, each B arrays of D numbers (labs.lessons.pooling's mean_pool
 * with the mask, with a mask of ones, and cls_pool). */
export function pool(g) {
  var out = { mean_masked: [], mean_unmasked: [], cls: [] };
  for (var b = 0; b < g.B; b++) {
    var masked = new Array(g.D), all = new Array(g.D), first = new Array(g.D), real = 0, d;
    for (d = 0; d < g.D; d++) { masked[d] = 0; all[d] = 0; first[d] = g.grid[(b * g.T) * g.D + d]; }
    for (var t = 0; t < g.T; t++) {
      var m = g.mask[b][t];
      real += m;
      for (d = 0; d < g.D; d++) {
        var x = g.grid[(b * g.T + t) * g.D + d];
        all[d] += x;
        if (m) masked[d] += x;
      }
    }
    for (d = 0; d < g.D; d++) { masked[d] /= real; all[d] /= g.T; }
    out.mean_masked.push(masked);
    out.mean_unmasked.push(all);
    out.cls.push(first);
  }
  return out;
}

/** The dot product of a query (D numbers) with each row of docs (n*D numbers, unit rows): n cosines. */
export function scores(docs, query, D) {
  var n = docs.length / D, out = new Array(n);
  for (var i = 0; i < n; i++) {
    var s = 0;
    for (var d = 0; d < D; d++) s += docs[i * D + d] * query[d];
    out[i] = s;
  }
  return out;
}

/** The indices of the k largest scores, best first; equal scores keep document order. */
export function rank(s, k) {
  var order = s.map(function (x, i) { return i; });
  order.sort(function (a, b) { return s[b] - s[a] || a - b; });
  return order.slice(0, k);
}

/** The row's InfoNCE for question q and cards (card 0 the answer), as the lesson writes it:
 * s_j = q . c_j, share_j = softmax(s / tau)_j, loss = -log share_0,
 * dL/ds_j = (share_j - [j = 0]) / tau, dL/dq = sum_j dL/ds_j c_j, dL/dc_j = dL/ds_j q. */
export function infonce(q, cards, tau) {
  var s = cards.map(function (c) { return q[0] * c[0] + q[1] * c[1]; });
  var z = s.map(function (x) { return x / tau; });
  var top = Math.max.apply(null, z);
  var sum = z.reduce(function (acc, x) { return acc + Math.exp(x - top); }, 0);
  var logShares = z.map(function (x) { return x - top - Math.log(sum); });
  var shares = logShares.map(Math.exp);
  var ds = shares.map(function (p, j) { return (p - (j === 0 ? 1 : 0)) / tau; });
  var gq = [0, 0];
  cards.forEach(function (c, j) {
    gq[0] += ds[j] * c[0];
    gq[1] += ds[j] * c[1];
  });
  return {
    scores: s, shares: shares, loss: -logShares[0], gradQuestion: gq,
    gradCards: ds.map(function (g) { return [g * q[0], g * q[1]]; })
  };
}
