// "Why this score": the panel a search or compare demo opens for one ranked article. Loaded by
// demos.js the first time a reader asks, with the model already in the page. It runs the model on
// the question and the article (each alone, as the ranking did), splits their cosine into one share
// per token with scores.mjs, and shows both texts with each token shaded by its share (its number in
// data-share), the largest shares, and the question's tokens that put this article above or below
// the one it is compared with. Reader text goes into the page as text only.

import { tokenShares, gapShares } from "./scores.mjs";

const grids = new Map(); // "model key \0 text" -> Promise<grid>
let opened = 0;

function grid(model, key, text) {
  const id = `${key}\u0000${text}`;
  if (!grids.has(id)) grids.set(id, model.grid([text]));
  return grids.get(id);
}

function make(tag, props, kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const kid of kids || []) if (kid !== null && kid !== undefined) e.append(kid);
  return e;
}

const fmt = (x, digits = 3) => (Math.abs(x) < 0.5 * 10 ** -digits ? 0 : x).toFixed(digits);
const signed = (x, digits = 3) => (x >= 0 ? "+" : "\u2212") + fmt(Math.abs(x), digits);
const quoted = (t, n = 80) => {
  const s = t.replace(/\s+/g, " ").trim();
  return `\u201c${s.length > n ? `${s.slice(0, n - 1)}\u2026` : s}\u201d`;
};
const ordinal = (k) => `${k}${["th", "st", "nd", "rd"][(k % 100 > 10 && k % 100 < 14) || k % 10 > 3 ? 0 : k % 10]}`;

/** A text's tokens, each shaded by its share (blue adds to the cosine, red takes from it). */
function shaded(tokens, shares, label) {
  const top = Math.max(1e-12, ...shares.map(Math.abs));
  const row = make("p", { class: "why-tokens", "aria-label": label });
  tokens.forEach((token, t) => {
    const s = shares[t];
    const span = make("span", { class: `why-token ${s >= 0 ? "why-up" : "why-down"}`, "data-share": String(s),
      title: `${token}: ${signed(s, 4)}` }, [token]);
    span.style.setProperty("--why-a", (Math.abs(s) / top).toFixed(3));
    row.append(span, " ");
  });
  return row;
}

/** The k largest shares of a text, as list items "token +0.081". */
function largest(tokens, shares, k, sign = 1) {
  return tokens.map((token, t) => ({ token, s: shares[t] }))
    .sort((x, y) => sign * (y.s - x.s))
    .slice(0, k)
    .filter((x) => sign * x.s > 0);
}

function list(items, cls) {
  return make("ul", { class: `why-list ${cls || ""}` }, items.map((x) => make("li", {}, [
    make("span", { class: "why-word", text: x.token }), " ", make("span", { class: "why-num", text: signed(x.s) })])));
}

/** The article a ranked article is compared with: the first when it is not the first, else the second. */
function rival(ranking, id) {
  const at = ranking.findIndex((r) => r.id === id);
  const other = at === 0 ? ranking[1] : ranking[0];
  return other ? { row: other, rank: ranking.indexOf(other) + 1, mine: at + 1 } : null;
}

/**
 * Open the panel: ``panel`` (an element of the demo), ``o = {ctx, keys, heads, question, article:
 * {id, text}, rankings: {key: [{id, cosine, text}]}, opener, state}``. Resolves once it is drawn;
 * what it shows is kept in ``o.state.why``.
 */
export async function open(panel, o) {
  const mine = ++opened;
  const headId = `why-head-${mine}`;
  const status = make("p", { class: "why-status", role: "status", text: "Splitting the cosine into its tokens\u2026" });
  const close = make("button", { type: "button", class: "live-button why-close", text: "Close" });
  const head = make("h3", { id: headId, class: "why-head", tabindex: "-1",
    text: `Why ${o.article.id} scores as it does for ${quoted(o.question, 60)}` });
  panel.replaceChildren(head, status);
  panel.removeAttribute("hidden");
  panel.setAttribute("aria-labelledby", headId);
  head.focus();
  const shut = () => {
    panel.setAttribute("hidden", "hidden");
    panel.replaceChildren();
    if (o.state) o.state.why = null;
    if (o.opener && o.opener.isConnected) o.opener.focus();
  };
  close.addEventListener("click", shut);
  panel.onkeydown = (e) => { if (e.key === "Escape") { e.preventDefault(); shut(); } };

  const result = { question: o.question, id: o.article.id, models: {} };
  const parts = [];
  for (const key of o.keys) {
    const model = o.ctx.models[key];
    const ranking = o.rankings[key];
    const other = rival(ranking, o.article.id);
    const [q, d, r] = await Promise.all([grid(model, key, o.question), grid(model, key, o.article.text),
      other ? grid(model, key, other.row.text) : null]);
    if (mine !== opened) return; // another article was asked for meanwhile
    const split = tokenShares(q, d);
    const ranked = ranking.find((row) => row.id === o.article.id);
    const gap = r ? gapShares(q, d, r) : null;
    result.models[key] = {
      cosine: split.cosine, ranked: ranked ? ranked.cosine : null,
      tokensQ: q.tokens[0], sharesQ: Array.from(split.a), tokensD: d.tokens[0], sharesD: Array.from(split.b),
      other: gap ? { id: other.row.id, rank: other.rank, gap: gap.gap, shares: Array.from(gap.shares) } : null,
    };
    parts.push({ key, model, split, q, d, other, gap, ranked });
  }

  const body = [];
  for (const p of parts) {
    const box = make("div", { class: "why-model" });
    if (o.keys.length > 1) box.append(make("h4", { class: "why-sub", text: o.heads[p.key] || p.model.label }));
    box.append(make("p", { class: "why-sum", text: `Cosine ${fmt(p.split.cosine)}` +
      (p.ranked ? ` (the ranking, with the article's stored vector: ${fmt(p.ranked.cosine)})` : "") +
      `. Each of the question's ${p.q.tokens[0].length} tokens and each of the article's ${p.d.tokens[0].length} ` +
      "holds a share of it; each text's shares add up to the cosine." }));
    box.append(make("p", { class: "why-label", text: "Your question" }),
      shaded(p.q.tokens[0], p.split.a, "Your question's tokens, shaded by their share of the cosine"),
      make("p", { class: "why-label", text: `The article (${o.article.id})` }),
      shaded(p.d.tokens[0], p.split.b, "The article's tokens, shaded by their share of the cosine"));
    const topQ = largest(p.q.tokens[0], p.split.a, 4);
    const topD = largest(p.d.tokens[0], p.split.b, 4);
    box.append(make("div", { class: "why-lists" }, [
      make("div", {}, [make("p", { class: "why-label", text: "Largest shares in your question" }), list(topQ)]),
      make("div", {}, [make("p", { class: "why-label", text: "Largest shares in the article" }), list(topD)])]));
    if (p.gap) {
      const ahead = p.gap.gap >= 0;
      const lead = largest(p.q.tokens[0], p.gap.shares, 4, ahead ? 1 : -1);
      box.append(make("p", { class: "why-gap", text: `Against ${p.other.row.id} (ranked ${ordinal(p.other.rank)}): this ` +
        `article scores ${signed(p.gap.gap)} ${ahead ? "more" : "less"}. The question's tokens that ` +
        `${ahead ? "put it ahead" : "hold it behind"} most (their shares of the gap, which add up to it):` }),
        list(lead, "why-gap-list"));
    }
    body.push(box);
  }
  if (parts.length === 2) {
    // The two models share a tokenizer: the question's tokens line up.
    const [a, b] = parts;
    const table = make("table", { class: "live-table why-moved" }, [
      make("caption", { text: "How fine-tuning moved the question's shares" }),
      make("thead", {}, [make("tr", {}, ["Token", o.heads[a.key] || a.key, o.heads[b.key] || b.key].map(
        (h) => make("th", { scope: "col", text: h })))]),
      make("tbody", {}, a.q.tokens[0].map((token, t) => make("tr", {}, [make("th", { scope: "row", text: token }),
        make("td", { text: signed(a.split.a[t]) }), make("td", { text: signed(b.split.a[t]) })])))]);
    body.push(make("div", { class: "why-scroll", tabindex: "0", role: "region", "aria-label":
      "How fine-tuning moved the question's shares" }, [table]));
  }
  panel.append(...body, close); // the heading keeps the focus it was given
  const first = parts[0];
  status.textContent = `${o.article.id}: cosine ${fmt(first.split.cosine)}` +
    (first.gap ? `; ${signed(first.gap.gap)} against ${first.other.row.id}.` : ".") +
    " The tokens below are shaded by their share: blue adds to the cosine, red takes from it.";
  if (o.state) o.state.why = result;
  return result;
}
