// Lesson 6's batch lab: the reader puts questions from lesson 1's help articles (with their answers)
// into a batch, optionally with one mined negative each, and sees the batch's similarity table,
// each row's InfoNCE at a temperature they set, each negative's share of its row's push, the
// false-negative rules side by side (what each drops, and the rows' loss before and after), and a
// mining panel (a rank window and a relative margin: what each setting mines for a question, and
// how many candidates each rule leaves out). Loaded by demos.js when the reader opens the lab; the
// model comes from the ``ensure`` it is given, every number from scores.mjs. What it shows is kept
// in ``state.batch`` and ``state.mining`` (the browser tests compare them with labs).

import {
  QWEN3_MARGIN, duplicateMask, gistAbsoluteMask, gistRelativeMask, gradientShares, infoNce, infoNceRows, mine,
  qwen3Mask, rowShares, rowsWithoutNegatives, similarityTable, windowProblem,
} from "./scores.mjs";

/** (question, the id of the article that answers it): lesson 1's questions (labs' help_questions, wordings
 * 0 and 1, and its search examples); two pairs share an answer, as real logs do. */
export const QUESTIONS = [
  ["how do I factory reset my router", "router/reset"],
  ["wipe the wifi box back to how it came out of the box", "router/reset"],
  ["how to update the firmware on the router", "router/update"],
  ["what is the warranty on the router", "router/warranty"],
  ["how do I factory reset my printer", "printer/reset"],
  ["can I return the printer", "printer/return"],
  ["how should I clean my kettle", "kettle/cleaning"],
  ["can I rinse the water boiler in the sink", "kettle/cleaning"],
  ["my headphones won't charge", "headphones/battery"],
  ["what is the warranty on the headphones", "headphones/warranty"],
  ["how do I reset my password?", "account/reset-steps"],
  ["Do riders under 16 have to take their helmet off?", "rules/helmet-must"],
];
export const START = [0, 1, 10, 4]; // a repeated answer, the password look-alike, another reset
export const MAX_BATCH = 6;
const TAU_MIN = 0.01;
const TAU_MAX = 2;
export const RULES = [
  ["none", "Every negative kept"],
  ["duplicates", "Duplicate texts"],
  ["gistAbsolute", "GISTEmbed, absolute margin"],
  ["gistRelative", "GISTEmbed, relative margin"],
  ["qwen3", `Qwen3-Embedding (above the positive + ${QWEN3_MARGIN})`],
];
/** Mining settings shown beside the reader's own. */
const PRESETS = [
  ["The top one", { rangeMin: 0, rangeMax: 10, margin: null }],
  ["Skip the closest (range_min 1)", { rangeMin: 1, rangeMax: 10, margin: null }],
  ["Relative margin 0.05", { rangeMin: 0, rangeMax: 10, margin: 0.05 }],
];

let counter = 0;
function uid(what) {
  counter += 1;
  return `lab-${what}-${counter}`;
}

function make(tag, props, kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "text") e.textContent = v;
    else if (v !== null && v !== undefined) e.setAttribute(k, v);
  }
  for (const kid of kids || []) if (kid !== null && kid !== undefined) e.append(kid);
  return e;
}

const fmt = (x, digits = 3) => (Math.abs(x) < 0.5 * 10 ** -digits ? 0 : x).toFixed(digits);
const pct = (x) => `${(100 * x).toFixed(0)}%`;
const short = (t, n = 48) => (t.length > n ? `${t.slice(0, n - 1)}\u2026` : t);

function labelled(text, input) {
  const id = input.id || uid("in");
  input.id = id;
  const label = make("label", { for: id, text });
  return input.type === "checkbox" || input.type === "radio" ? [input, label] : [label, input];
}

/** Start the lab in ``holder``: ``{ensure, state}`` from demos.js. */
export function start(holder, { ensure, state }) {
  const batch = START.slice();
  const vectors = new Map(); // question -> Promise<Float64Array>
  let drawn = 0;
  let asked = 0;

  // ---- the controls ----------------------------------------------------------------------
  const pick = make("select", { "aria-label": "A question and the article that answers it" },
    QUESTIONS.map(([q, id], k) => make("option", { value: String(k), text: `${q} \u2192 ${id}` })));
  const add = make("button", { type: "button", class: "live-button", text: "Add to the batch" });
  const list = make("ol", { class: "lab-batch", "aria-label": "The batch: each question with its answer" });
  const minedBox = make("input", { type: "checkbox", checked: "checked" });
  const problem = make("p", { class: "lab-problem", "aria-live": "polite" });
  const batchSet = make("fieldset", {}, [make("legend", { text: "The batch" }),
    make("div", { class: "lab-pick" }, [pick, add]), list,
    make("div", { class: "lab-check" }, labelled("One mined negative per question (mined as the mining settings below say)",
      minedBox))]);

  const tauBox = make("input", { type: "number", class: "live-number", min: String(TAU_MIN), max: String(TAU_MAX),
    step: "any", value: "0.05" });
  const absBox = make("input", { type: "number", class: "live-number", step: "0.01", value: "0" });
  const relBox = make("input", { type: "number", class: "live-number", step: "0.01", value: "0.05" });
  const ruleName = uid("rule");
  const radios = RULES.map(([key, name]) => {
    const r = make("input", { type: "radio", name: ruleName, value: key, checked: key === "duplicates" ? "checked" : null });
    return make("div", { class: "lab-check" }, labelled(name, r));
  });
  const lossSet = make("fieldset", {}, [make("legend", { text: "The loss" }),
    make("div", { class: "lab-grid" }, [...labelled("Temperature \u03c4", tauBox),
      ...labelled("GISTEmbed margin m (absolute)", absBox), ...labelled("GISTEmbed margin r (relative)", relBox)]),
    make("div", { role: "radiogroup", "aria-label": "The rule that masks the table below" }, [
      make("p", { class: "why-label", text: "The rule that masks the table below" }), ...radios])]);

  const summary = make("p", { class: "live-summary", "aria-live": "polite" });
  const table = make("table", { class: "live-table lab-table" });
  const columnsList = make("ul", { class: "lab-columns" });
  const rulesTable = make("table", { class: "live-table lab-rules" });

  const mineQ = make("select", { "aria-label": "The question to mine for" });
  const minBox = make("input", { type: "number", class: "live-number", min: "0", step: "1", value: "0" });
  const maxBox = make("input", { type: "number", class: "live-number", min: "1", step: "1", value: "10" });
  const marginBox = make("input", { type: "number", class: "live-number", min: "0", step: "0.01", value: "",
    placeholder: "none" });
  const mineProblem = make("p", { class: "lab-problem", "aria-live": "polite" });
  const mineTable = make("table", { class: "live-table lab-mine" });
  const ranked = make("ol", { class: "lab-ranked" });
  const mineSet = make("fieldset", {}, [make("legend", { text: "Mining" }),
    make("div", { class: "lab-grid" }, [...labelled("Question", mineQ), ...labelled("range_min", minBox),
      ...labelled("range_max", maxBox), ...labelled("Relative margin (empty: none)", marginBox)]),
    mineProblem, make("div", { class: "lab-scroll", tabindex: "0", role: "region", "aria-label": "What each setting mines" },
      [mineTable]), make("p", { class: "why-label", text: "The candidates your setting looks at, best first" }), ranked]);

  const explain = make("p", { class: "live-sub", text: "Below: the cosine of each question (row) with each text in " +
    "the batch (column). The diagonal is each row's answer, with its softmax share; under a negative, its share of " +
    "the row's push (its gradient over the row's whole push); struck out, what the chosen rule drops." });
  holder.replaceChildren(batchSet, problem, lossSet, summary, explain,
    make("div", { class: "lab-scroll", tabindex: "0", role: "region", "aria-label": "The batch's similarity table" }, [table]),
    columnsList,
    make("div", { class: "lab-scroll", tabindex: "0", role: "region", "aria-label": "The false-negative rules side by side" },
      [rulesTable]),
    mineSet);

  // ---- reading the controls ----------------------------------------------------------------
  function settings() {
    const rangeMin = Number(minBox.value);
    const rangeMax = Number(maxBox.value);
    const margin = marginBox.value.trim() === "" ? null : Number(marginBox.value);
    return { rangeMin, rangeMax, margin };
  }

  function numberOr(box, fallback, ok) {
    const v = Number(box.value);
    return box.value.trim() !== "" && Number.isFinite(v) && ok(v) ? v : fallback;
  }

  function drawBatch() {
    list.replaceChildren(...batch.map((k, i) => {
      const [q, id] = QUESTIONS[k];
      const remove = make("button", { type: "button", text: "Remove", "aria-label": `Remove \u201c${q}\u201d` });
      remove.addEventListener("click", () => {
        batch.splice(i, 1);
        problem.textContent = "";
        drawBatch();
        again();
        (list.querySelector("button") || add).focus();
      });
      return make("li", {}, [`Q${i + 1}: ${q} \u2192 A${i + 1}: ${id} `, remove]);
    }));
    const keep = mineQ.value;
    mineQ.replaceChildren(...batch.map((k, i) => make("option", { value: String(i), text: `Q${i + 1}: ${QUESTIONS[k][0]}` })));
    if (keep !== "" && Number(keep) < batch.length) mineQ.value = keep;
  }

  add.addEventListener("click", () => {
    const k = Number(pick.value);
    if (batch.includes(k)) {
      problem.textContent = `\u201c${QUESTIONS[k][0]}\u201d is in the batch already: a batch holds each question once ` +
        "(its copy would be a row identical to the first, its answer a negative that is also right).";
      state.problem = "same question";
      return;
    }
    if (batch.length >= MAX_BATCH) {
      problem.textContent = `The lab holds ${MAX_BATCH} questions at most, so that the table fits: remove one first.`;
      state.problem = "full";
      return;
    }
    batch.push(k);
    problem.textContent = "";
    state.problem = null;
    drawBatch();
    again();
  });
  const again = () => {
    if (state.problem === "same question" || state.problem === "full") state.problem = null;
    refresh().then(null, () => {}); // a model that cannot run: the loader's note says why
  };
  [minedBox, tauBox, absBox, relBox, minBox, maxBox, marginBox, mineQ].forEach((e) => e.addEventListener("change", again));
  radios.forEach((r) => r.querySelector("input").addEventListener("change", again));

  // ---- the arithmetic ------------------------------------------------------------------------
  function embed(ctx, q) {
    if (!vectors.has(q)) vectors.set(q, ctx.models.minilm.embed(q).then((e) => e.vector));
    return vectors.get(q);
  }

  async function refresh() {
    const mineNow = ++asked;
    const ctx = await ensure();
    const set = ctx.sets.search;
    const D = set.vectors.minilm.length / set.ids.length;
    const article = (n) => set.vectors.minilm.subarray(n * D, (n + 1) * D);
    const questions = batch.map((k) => QUESTIONS[k]);
    const Q = [];
    for (const [q] of questions) Q.push(await embed(ctx, q));
    if (mineNow !== asked) return; // the reader changed something meanwhile
    const index = new Map(set.ids.map((id, n) => [id, n]));
    const answers = questions.map(([, id]) => index.get(id));
    const scores = Q.map((q) => Array.from({ length: set.ids.length }, (_, n) => {
      const v = article(n);
      let s = 0;
      for (let d = 0; d < D; d++) s += q[d] * v[d];
      return s;
    }));
    drawMining(set, scores, answers, questions);
    drawn += 1;
    const B = questions.length;
    if (B < 2) {
      problem.textContent = "A batch of one has no negatives: its question has only its own answer to pick, so the " +
        "loss is 0 and teaches nothing. Add a second question.";
      state.problem = "batch of one";
      table.replaceChildren();
      rulesTable.replaceChildren();
      columnsList.replaceChildren();
      summary.textContent = "";
      state.batch = null;
      state.drawn = drawn;
      return;
    }
    if (state.problem === "batch of one") {
      problem.textContent = "";
      state.problem = null;
    }
    const s = settings();
    const windowLine = windowProblem(s.rangeMin, s.rangeMax, set.ids.length);
    const columns = answers.map((n, i) => ({ n, id: set.ids[n], text: set.texts[n], kind: "answer", of: i }));
    if (minedBox.checked && !windowLine && !(s.margin !== null && !(s.margin >= 0))) {
      scores.forEach((row, i) => {
        const got = mine(row, answers[i], s);
        if (got.mined !== null) columns.push({ n: got.mined, id: set.ids[got.mined], text: set.texts[got.mined], kind: "mined", of: i });
      });
    }
    const S = similarityTable(Q, columns.map((c) => article(c.n)));
    const tau = numberOr(tauBox, state.batch ? state.batch.tau : 0.05, (v) => v >= TAU_MIN && v <= TAU_MAX);
    const m = numberOr(absBox, 0, (v) => Math.abs(v) <= 2);
    const r = numberOr(relBox, 0.05, (v) => Math.abs(v) <= 2);
    const bad = [];
    if (tauBox.value.trim() === "" || !(Number(tauBox.value) >= TAU_MIN && Number(tauBox.value) <= TAU_MAX)) {
      bad.push(`\u03c4 must be a number from ${TAU_MIN} to ${TAU_MAX}; it stays at ${tau}.`);
    }
    [[absBox, m, "m"], [relBox, r, "r"]].forEach(([box, used, name]) => {
      if (box.value.trim() === "" || !(Math.abs(Number(box.value)) <= 2)) {
        bad.push(`GISTEmbed's margin ${name} must be a number from \u22122 to 2; it counts as ${used}.`);
      }
    });
    const masks = {
      none: S.map((row) => row.map(() => false)),
      duplicates: duplicateMask(columns.map((c) => c.text), B),
      gistAbsolute: gistAbsoluteMask(S, m), // the guide here is the model itself
      gistRelative: gistRelativeMask(S, r),
      qwen3: qwen3Mask(S),
    };
    const rules = {};
    for (const [key] of RULES) {
      rules[key] = { mask: masks[key], rows: infoNceRows(S, tau, masks[key]), loss: infoNce(S, tau, masks[key]),
        empty: rowsWithoutNegatives(masks[key]) };
    }
    const selected = holder.querySelector(`input[name="${ruleName}"]:checked`).value;
    const shares = rowShares(S, tau, masks[selected]);
    const push = gradientShares(S, tau, masks[selected]);
    state.batch = { questions: questions.map(([q]) => q), answers: questions.map(([, id]) => id),
      columns: columns.map((c) => ({ id: c.id, kind: c.kind, of: c.of })), S, tau, margins: { gistAbsolute: m, gistRelative: r },
      rules, selected, shares, push, vectors: Q.map((q) => Array.from(q)) };
    state.drawn = drawn;
    drawTable(S, columns, B, rules, selected, push, shares);
    drawRules(rules, columns, B, selected, tau, m, r);
    const empty = rules[selected].empty;
    const lines = bad.concat(windowLine && minedBox.checked ? [`No negatives mined: ${windowLine}`] : []);
    if (empty.length === B) {
      lines.push("Every row has no negative left under this rule: each is left out of the loss (counted 0, as the " +
        "masked loss counts it), so the batch's loss is 0 and it teaches nothing.");
    } else if (empty.length) {
      const rowsNamed = empty.map((i) => `Q${i + 1}`).join(", ");
      lines.push(`${empty.length === 1 ? `Row ${rowsNamed} has` : `Rows ${rowsNamed} have`} no negative left under ` +
        `this rule: ${empty.length === 1 ? "it is" : "they are"} left out of the loss (counted 0 in the mean over the ` +
        `${B} rows, as the masked loss does) and teach nothing.`);
    }
    if (state.problem !== "same question" && state.problem !== "full") {
      problem.textContent = lines.join(" ");
      state.problem = lines.length ? (empty.length ? "no negatives" : "settings") : null;
    }
    summary.textContent = `${B} questions, ${columns.length} texts (${B} answers, ${columns.length - B} mined). At ` +
      `\u03c4 = ${tau}, the batch's loss is ${fmt(rules.none.loss)} with every negative and ${fmt(rules[selected].loss)} ` +
      `with the rule \u201c${RULES.find(([k]) => k === selected)[1]}\u201d.`;
  }

  function columnName(c, j, B) {
    return c.kind === "answer" ? `A${j + 1}` : `N${j - B + 1}`;
  }

  function drawTable(S, columns, B, rules, selected, push, shares) {
    const head = make("tr", {}, [make("th", { scope: "col", text: "" }),
      ...columns.map((c, j) => make("th", { scope: "col", text: columnName(c, j, B) })),
      make("th", { scope: "col", text: "loss, all kept" }), make("th", { scope: "col", text: "loss, rule" })]);
    const body = S.map((row, i) => make("tr", {}, [make("th", { scope: "row", text: `Q${i + 1}` }),
      ...row.map((s, j) => {
        const dropped = rules[selected].mask[i][j];
        const cls = j === i ? "lab-pos" : dropped ? "lab-dropped" : null;
        const note = j === i ? `softmax ${pct(shares[i][j])}` : dropped ? "dropped" : `push ${pct(push[i][j])}`;
        return make("td", { class: cls, "data-i": String(i), "data-j": String(j) }, [fmt(s), make("small", { text: note })]);
      }),
      make("td", { class: "lab-num", text: fmt(rules.none.rows[i]) }),
      make("td", { class: "lab-num", text: rules[selected].empty.includes(i) ? "out (0)" : fmt(rules[selected].rows[i]) })]));
    table.replaceChildren(make("caption", { text: "The batch's similarity table" }),
      make("thead", {}, [head]), make("tbody", {}, body));
    columnsList.replaceChildren(...columns.map((c, j) => make("li", {}, [
      `${columnName(c, j, B)}: ${c.id}${c.kind === "mined" ? ` (mined for Q${c.of + 1})` : ""}: ${short(c.text, 70)}`])));
  }

  function drawRules(rules, columns, B, selected, tau, m, r) {
    const params = { none: "", duplicates: "", gistAbsolute: ` (m = ${m}; guide: this model)`,
      gistRelative: ` (r = ${r}; guide: this model)`, qwen3: "" };
    const head = make("tr", {}, ["Rule", "What it drops", "Rows with no negative left", `Loss at \u03c4 = ${tau}`].map(
      (h) => make("th", { scope: "col", text: h })));
    const body = RULES.map(([key, name]) => {
      const drops = [];
      rules[key].mask.forEach((row, i) => row.forEach((x, j) => { if (x) drops.push(`Q${i + 1}: ${columnName(columns[j], j, B)}`); }));
      return make("tr", { "data-rule": key, class: key === selected ? "lab-selected" : null }, [
        make("th", { scope: "row", text: name + params[key] }),
        make("td", { text: drops.length ? drops.join(", ") : "nothing" }),
        make("td", { text: rules[key].empty.length ? rules[key].empty.map((i) => `Q${i + 1}`).join(", ") : "none" }),
        make("td", { class: "lab-num", text: fmt(rules[key].loss) })]);
    });
    rulesTable.replaceChildren(make("caption", { text: "The false-negative rules side by side, on this table" }),
      make("thead", {}, [head]), make("tbody", {}, body));
  }

  function drawMining(set, scores, answers, questions) {
    const s = settings();
    const i = Math.min(Number(mineQ.value || 0), questions.length - 1);
    if (i < 0) {
      mineTable.replaceChildren();
      ranked.replaceChildren();
      state.mining = null;
      return;
    }
    const lines = [];
    const windowLine = windowProblem(s.rangeMin, s.rangeMax, set.ids.length);
    if (windowLine) lines.push(windowLine);
    if (s.margin !== null && !(s.margin >= 0)) lines.push("The relative margin must be a number of 0 or more (empty: none).");
    const row = scores[i];
    const result = (o) => mine(row, answers[i], o);
    const yours = lines.length ? null : result(s);
    const presets = PRESETS.map(([name, o]) => [name, o, result(o)]);
    const all = yours ? presets.concat([["Your setting", s, yours]]) : presets;
    const head = make("tr", {}, ["Setting", "Mines", "Beyond range_max", "Above the margin", "Skipped by range_min"].map(
      (h) => make("th", { scope: "col", text: h })));
    mineTable.replaceChildren(make("caption", { text: `What each setting mines for Q${i + 1} (answer ${set.ids[answers[i]]}, ` +
      `cosine ${fmt(row[answers[i]])})` }), make("thead", {}, [head]), make("tbody", {}, all.map(([name, o, got]) =>
      make("tr", {}, [make("th", { scope: "row", text: `${name}: ${o.rangeMin} to ${o.rangeMax}` +
        (o.margin === null ? "" : `, margin ${o.margin}`) }),
      make("td", { text: got.mined === null ? "nothing" : `${set.ids[got.mined]} (${fmt(row[got.mined])})` }),
      make("td", { text: String(got.dropped.outside) }), make("td", { text: String(got.dropped.margin) }),
      make("td", { text: String(got.dropped.skipped) })]))));
    if (yours && yours.mined === null) {
      lines.push(`Your setting mines nothing for Q${i + 1}: the margin leaves ${yours.order.length - yours.dropped.margin} ` +
        `candidates and range_min skips ${s.rangeMin}.`);
    }
    mineProblem.textContent = lines.join(" ");
    ranked.replaceChildren(...(yours ? yours.order : []).slice(0, 12).map((n) => {
      const marks = [];
      if (yours.closeToAnswer.includes(n)) marks.push("above the margin: skipped");
      if (n === yours.mined) marks.push("mined");
      return make("li", { class: n === yours.mined ? "lab-mined" : null },
        [`${set.ids[n]} ${fmt(row[n])}${marks.length ? ` (${marks.join(", ")})` : ""}`]);
    }));
    state.mining = { question: i, settings: s, problem: lines.join(" ") || null, scores: row, answer: answers[i],
      results: all.map(([name, o, got]) => ({ name, settings: o, mined: got.mined === null ? null : set.ids[got.mined],
        dropped: got.dropped })) };
  }

  drawBatch();
  again();
}
