/* The book's live demos: the controls of every <div class="live-demo" data-live="KIND"> on a page.
 *
 * Loaded by live-loader.js (book/_assets) only on pages that have such a div, after stored.js (the
 * example questions and the stored results, written by tools/live_model.py). KIND is
 *   search   a question box over the lesson-1 help articles, ranked by the model in the page;
 *   pooling  two sentences, their tokens, and their cosine under three poolings;
 *   infonce  a question and its cards on the unit circle, a temperature, InfoNCE's shares, loss
 *            and pull/push arrows (data-tau: the starting temperature);
 *   compare  the search box over lesson 7's help-desk articles, untouched and fine-tuned models
 *            side by side;
 *   batch    lesson 6's batch lab (batchlab.mjs, loaded when the reader opens it);
 *   adapter  lesson 5's query-side adapter, trained in the page (adapter.mjs and the look-alike set's
 *            vectors, loaded on Train; the model, for the reader's own questions, on Rank).
 * A ranked article of search and compare opens "why this score" (why.mjs, loaded on first use).
 * The model (model.mjs, its worker and the files they fetch) loads the first time the reader uses a
 * demo (typing, a click, Enter; never a mere focus), never before; while it loads, a one-click
 * example shows its stored result, marked as stored. Where the page cannot run it, one line says
 * why and how to read it, and the stored result is shown.
 *
 * The arithmetic (cosine, poolings, ranking, InfoNCE) is maths.mjs's, loaded before this file as
 * the classic script maths.js (window.labsLiveMaths); "why this score" and the batch lab compute
 * with scores.mjs.
 *
 * Written in plain ES5 so that an old browser can parse it and be told it is too old. Reader text
 * goes into the page as text only (textContent), never as HTML. Each demo keeps what it shows in
 * div.labsLive (the browser tests compare it with the Python side).
 */
(function () {
  "use strict";

  var live = window.labsLive = window.labsLive || {};
  var stored = window.labsLiveStored;
  var maths = window.labsLiveMaths;
  // SVG's namespace name, as the browser's own HTML parser assigns it to an <svg> tag (the script
  // names no address at all: the page works offline, from its own origin).
  var SVG = (function () {
    var holder = document.createElement("div");
    holder.innerHTML = "<svg></svg>";
    return holder.firstChild.namespaceURI;
  })();
  var counter = 0;
  // The smallest wasm module that uses SIMD (the runtime's plain build needs it).
  var SIMD = typeof Uint8Array === "undefined" ? null : new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1,
    123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);
  // import() written so that a browser without it can still parse this file.
  var importModule = null;

  // ---- helpers ---------------------------------------------------------------------------

  function make(tag, props, kids) {
    var e = document.createElement(tag);
    setProps(e, props);
    (kids || []).forEach(function (kid) {
      if (kid !== null && kid !== undefined) e.appendChild(typeof kid === "string" ? document.createTextNode(kid) : kid);
    });
    return e;
  }

  function svg(tag, props) {
    var e = document.createElementNS(SVG, tag);
    setProps(e, props);
    return e;
  }

  function setProps(e, props) {
    for (var k in props || {}) {
      if (!props.hasOwnProperty(k)) continue;
      if (k === "text") e.textContent = props[k];
      else if (k === "class") e.setAttribute("class", props[k]);
      else e.setAttribute(k, props[k]);
    }
  }

  function uid(what) {
    counter += 1;
    return "live-" + what + "-" + counter;
  }

  function clear(e) {
    while (e.firstChild) e.removeChild(e.firstChild);
  }

  function fixed(x, digits) {
    return (Math.abs(x) < 0.5 * Math.pow(10, -digits) ? 0 : x).toFixed(digits);
  }

  function mb(bytes) {
    return (bytes / 1e6).toFixed(1);
  }

  function quoted(text, n) {
    var t = text.replace(/\s+/g, " ").trim();
    return "\u201c" + (t.length > n ? t.slice(0, n - 1) + "\u2026" : t) + "\u201d";
  }

  function grouped(n) {
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }

  /** One line saying why this browser cannot run the model, or null when it can. */
  function cannotRun() {
    if (location.protocol === "file:") {
      return "This page is open as a file, and browsers run the model only in pages served over http: in the " +
        "course's folder run make serve, then open this page from http://127.0.0.1:8000.";
    }
    if (typeof WebAssembly !== "object" || typeof WebAssembly.validate !== "function") {
      return "This browser runs no WebAssembly, which the model needs: open the page in a current Chrome, Edge, " +
        "Firefox or Safari with WebAssembly allowed.";
    }
    if (!SIMD || typeof Promise === "undefined" || !window.fetch || typeof BigInt64Array === "undefined" ||
        typeof TextDecoder === "undefined" || typeof Worker === "undefined" || typeof DecompressionStream === "undefined" ||
        !("noModule" in document.createElement("script"))) {
      return "This browser is too old to run the model (it needs JavaScript modules, workers, fetch and 64-bit " +
        "integer arrays): open the page in a current Chrome, Edge, Firefox or Safari.";
    }
    if (!WebAssembly.validate(SIMD)) {
      return "This browser's WebAssembly has no SIMD, which the model's runtime needs: open the page in a " +
        "browser from 2021 or later.";
    }
    return null;
  }

  function describe(err) {
    if (err && err.path) return err.message + ".";
    return "The model could not start in this page (" + String((err && err.message) || err).slice(0, 200) + ").";
  }

  /** The model's worker, started on the reader's first act, before model.mjs has arrived: it starts
   * fetching the runtime and the models' files at once (stored.js names them, as manifest.json
   * does); model.mjs takes it over, with what it said meanwhile. */
  var early = null;
  function thread(keys) {
    if (!early) {
      var worker;
      try {
        worker = new Worker(live.root + "live/worker.mjs?v=" + stored.version, { type: "module" });
      } catch (err) {
        return null; // model.mjs starts it, and says why it cannot
      }
      early = { worker: worker, messages: [] };
      worker.onmessage = function (e) { early.messages.push(e); };
    }
    var files = [];
    keys.forEach(function (key) {
      var f = stored.models[key].files;
      Object.keys(f).forEach(function (name) { files.push(f[name]); });
    });
    early.worker.postMessage({ op: "prefetch", wasm: stored.runtime, files: files });
    return early;
  }

  /** The model, its files and the search sets a demo needs, loaded once per page per demo. */
  function loader(demo, needs) {
    var ready = null;
    var mod = null;
    var timer = null;
    /** What the reader has typed, handed to the model's thread while it loads (after a pause in the typing). */
    ensure.warm = function () {
      if (!mod || !needs.texts) return;
      clearTimeout(timer);
      timer = setTimeout(function () { mod.warm(needs.models, needs.texts()); }, 150);
    };
    return ensure;
    function ensure() {
      if (ready) return ready;
      var reason = cannotRun();
      if (reason) {
        ready = Promise.reject({ reason: reason });
      } else {
        if (!importModule) importModule = new Function("url", "return import(url)");
        demo.progress({ done: 0, total: 0 });
        needs.early = thread(needs.models);
        importModule(live.root + "live/maths.mjs").then(null, function () {}); // model.mjs's own import, fetched beside it
        ready = importModule(live.root + "live/model.mjs?v=" + stored.version).then(function (m) {
          mod = m;
          return mod.prepare(needs, function (p) { demo.progress(p); });
        }, function (err) {
          throw { reason: "The model's script did not load (live/model.mjs: " + String(err.message || err).slice(0, 160) +
            "). Rebuild the book with make book, and serve it with make serve." };
        }).then(function (ctx) {
          demo.loaded(ctx.report);
          return ctx;
        });
      }
      ready = ready.then(null, function (err) {
        if (err && err.aborted) {
          // the reader left the page mid-download (and came back from the back-forward cache): the
          // next use starts the load again
          ready = null;
          demo.stopped();
          throw { reason: "stopped", handled: true, aborted: true };
        }
        var why = err && err.reason ? err.reason : describe(err);
        demo.fallback(why);
        throw { reason: why, handled: true };
      });
      return ready;
    };
  }

  /** The load report, one short line after the results. */
  function loadedLine(report) {
    var where = report.cachedBytes > 0 && report.fetchedBytes === 0 ? " from this browser's cache" :
      report.cachedBytes > 0 ? " (" + mb(report.fetchedBytes) + " MB from the book)" : "";
    return "Model: " + report.labels.join(" and ") + ", " + report.dtype + "; " + mb(report.totalBytes) + " MB" +
      where + (report.sharedBytes ? " (+" + mb(report.sharedBytes) + " MB shared with another demo)" : "") +
      " in " + report.seconds.toFixed(1) + " s" + (report.byRow ? " (of its word table, only the rows your text needs)" : "") +
      ". Your text stays in this page.";
  }

  /** The parts every model demo has: a progress line (under the box, while the model loads), a
   * short load report (after the results) and a note for when it cannot run. */
  function frame(div, state) {
    var status = make("p", { "class": "live-status", role: "status" });
    var loading = make("p", { "class": "live-loading", hidden: "hidden" });
    var bar = make("progress", { "class": "live-progress", max: "1", value: "0", "aria-label": "Loading the model" });
    var words = make("span", { "class": "live-loading-text" });
    loading.appendChild(bar);
    loading.appendChild(words);
    var note = make("p", { "class": "live-note", hidden: "hidden" });
    return {
      status: status, bar: loading, note: note,
      progress: function (p) {
        if (state.status === "fallback") return; // another file failed: the rest no longer matters
        loading.removeAttribute("hidden");
        bar.setAttribute("max", String(p.total || 1));
        bar.setAttribute("value", String(p.done));
        words.textContent = p.total ? "Loading the model: " + mb(p.done) + " of " + mb(p.total) + " MB" +
          (p.fromCache ? " (from this browser's cache)" : "") : "Loading the model\u2026";
        state.status = "loading";
      },
      loaded: function (report) {
        loading.setAttribute("hidden", "hidden");
        status.textContent = loadedLine(report);
        state.status = "ready";
        state.loaded = report;
      },
      stopped: function () {
        loading.setAttribute("hidden", "hidden");
        status.textContent = "";
        state.status = "idle";
      },
      fallback: function (why) {
        loading.setAttribute("hidden", "hidden");
        status.textContent = "";
        note.textContent = why;
        note.removeAttribute("hidden");
        state.status = "fallback";
        state.fallback = why;
      }
    };
  }

  /** Runs ``compute(texts)`` for the latest texts only, one at a time; ``show`` gets a result only
   * while the boxes still hold the texts it was computed for. */
  function latest(current, compute, show, failed, ready) {
    var busy = false;
    var wanted = null;
    function pump() {
      if (busy || wanted === null) return;
      busy = true;
      // the model first (it loads once): the texts are taken when it is ready, the reader's latest
      ready().then(function () {
        var texts = wanted;
        wanted = null;
        if (texts === null) return null;
        return compute(texts).then(function (result) { return { texts: texts, result: result }; });
      }).then(function (done) {
        if (done === null) {
          busy = false;
          return;
        }
        var texts = done.texts;
        var result = done.result;
        // drawn in a task of its own: the page's thread never does the arithmetic and the drawing at once
        setTimeout(function () {
          busy = false;
          if (current().join("\u0000") === texts.join("\u0000")) show(texts, result);
          pump();
        }, 0);
      }, function (err) {
        busy = false;
        wanted = null;
        failed(err);
      });
    }
    return {
      request: function (texts) {
        wanted = texts;
        if (ready.warm) ready.warm();
        pump();
      },
      cancel: function () {
        wanted = null;
      }
    };
  }

  /** The model starts loading on the reader's first act: typing in a box, a click on a button or an
   * example, Enter (a form's submit). Focus alone (tabbing past, a tap into the box) loads nothing. */
  function onFirstUse(form, boxes, buttons, ensure) {
    var go = function () { ensure().then(null, function () {}); };
    boxes.forEach(function (e) { e.addEventListener("input", go); });
    buttons.forEach(function (e) { e.addEventListener("click", go); });
    form.addEventListener("submit", go);
  }

  // ---- search and compare -----------------------------------------------------------------

  // A best cosine under this says that nothing matched: all-MiniLM-L6-v2 puts unrelated English
  // texts, and text in scripts it barely knows, at about 0.0-0.2 from everything (test_live.py
  // holds the example questions above it and other scripts below it).
  var NO_MATCH = 0.25;

  var SEARCH = {
    search: {
      set: "search", keys: ["minilm"], label: "Your question to the help articles",
      heads: { minilm: null }, button: "Rank",
      intro: "Ask anything; the model in this page ranks the 85 help articles by cosine with your question."
    },
    compare: {
      set: "helpdesk", keys: ["minilm", "tuned"], label: "Your question to the help-desk articles",
      heads: { minilm: "Untouched model", tuned: "Fine-tuned on the help-desk questions" }, button: "Rank",
      short: { minilm: "Untouched", tuned: "Fine-tuned" },
      intro: "Both models rank the 60 help-desk articles for the same question, in this page."
    }
  };

  function searchDemo(div, kind) {
    var spec = SEARCH[kind];
    var examples = stored.examples[kind];
    var state = { kind: kind, status: "idle", query: null, rankings: null, scores: null, vectors: null, message: null };
    div.labsLive = state;
    var inputId = uid("q");
    var input = make("input", { id: inputId, type: "text", "class": "live-input", autocomplete: "off",
      spellcheck: "false", enterkeyhint: "search" });
    var button = make("button", { type: "submit", "class": "live-button", text: spec.button });
    var form = make("form", { "class": "live-form", role: "search" }, [
      make("label", { "for": inputId, "class": "live-label", text: spec.label }),
      make("div", { "class": "live-row" }, [input, button])]);
    var tryId = uid("try");
    var chips = examples.map(function (ex) {
      return make("button", { type: "button", "class": "live-chip", text: ex.question });
    });
    var tries = make("div", { "class": "live-examples", role: "group", "aria-labelledby": tryId },
      [make("span", { id: tryId, "class": "live-try", text: "Try:" })].concat(chips));
    var f = frame(div, state);
    var message = make("p", { "class": "live-message", "aria-live": "polite" });
    var columns = make("div", { "class": "live-columns" + (spec.keys.length > 1 ? " live-two" : "") });
    var lists = {};
    spec.keys.forEach(function (key) {
      var list = make("ol", { "class": "live-ranking" });
      var head = spec.heads[key] ? make("h3", { "class": "live-head", text: spec.heads[key] }) : null;
      var sub = make("p", { "class": "live-sub", text: stored.models[key].label });
      lists[key] = list;
      columns.appendChild(make("div", { "class": "live-column" }, [head, head ? sub : null, list]));
    });
    // Two models on a phone (below 600 px, live.css): one compact table instead of two lists, a
    // row a rank, each model's article and cosine, the article's text a tap away.
    var compact = spec.keys.length > 1 ? make("table", { "class": "live-compact" }) : null;
    if (compact) columns.appendChild(compact);
    columns.setAttribute("hidden", "hidden");
    clear(div);
    div.appendChild(make("p", { "class": "live-intro", text: spec.intro }));
    // The answer right under the box (on a phone with its keyboard open too): the progress line,
    // the ranking and its one-line caption, "why this score" when opened; then the examples, the
    // load report and any note.
    var whyPanel = make("section", { "class": "why-panel", hidden: "hidden" }); // why.mjs draws it
    [form, f.bar, f.note, columns, message, whyPanel, tries, f.status].forEach(function (e) { div.appendChild(e); });

    function rightFor(text) {
      for (var i = 0; i < examples.length; i++) if (examples[i].question === text) return examples[i].right;
      return [];
    }

    function show(text, rows, caption, cut) {
      var right = rightFor(text);
      spec.keys.forEach(function (key) {
        var list = lists[key];
        clear(list);
        rows[key].forEach(function (row) {
          var cos = Math.max(0, Math.min(1, row.cosine));
          var bar = make("span", { "class": "live-bar", "aria-hidden": "true" });
          bar.style.width = (100 * cos).toFixed(1) + "%";
          var good = right.indexOf(row.id) >= 0 ? make("span", { "class": "live-right", text: "\u2713 answers it" }) : null;
          list.appendChild(make("li", { "data-id": row.id }, [
            make("span", { "class": "live-score" }, [make("span", { "class": "live-cos", text: fixed(row.cosine, 3) }),
              make("span", { "class": "live-track", "aria-hidden": "true" }, [bar])]),
            make("span", { "class": "live-doc" }, [make("span", { "class": "live-text", text: row.text }), " ",
              make("span", { "class": "live-id", text: row.id }), good ? " " : null, good])]));
        });
      });
      if (compact) {
        clear(compact);
        compact.appendChild(make("thead", {}, [make("tr", {}, [make("th", { scope: "col", text: "#" })].concat(
          spec.keys.map(function (key) { return make("th", { scope: "col", text: spec.short[key] }); })))]));
        var body = make("tbody");
        rows[spec.keys[0]].forEach(function (unused, i) {
          body.appendChild(make("tr", {}, [make("th", { scope: "row", text: String(i + 1) })].concat(spec.keys.map(function (key) {
            var row = rows[key][i];
            var good = right.indexOf(row.id) >= 0;
            return make("td", { "data-id": row.id }, [make("details", {}, [
              make("summary", {}, [make("span", { "class": "live-cos", text: fixed(row.cosine, 3) }), " ",
                make("span", { "class": "live-id", text: row.id }), good ? make("span", { "class": "live-right",
                  text: " \u2713 answers" }) : null]),
              make("span", { "class": "live-text", text: row.text })])]);
          }))));
        });
        compact.appendChild(body);
      }
      columns.removeAttribute("hidden");
      columns.removeAttribute("data-stored");
      columns.setAttribute("data-query", text);
      message.textContent = caption + (cut || "");
      state.query = text;
    }

    /** The stored result of the example question ``text`` (of the first example for any other text);
     * ``pending``: the model is loading, and ranks it live when ready. */
    function showStored(text, pending) {
      var entry = null;
      var list = stored[kind];
      for (var i = 0; i < list.length; i++) if (list[i].question === text) entry = list[i];
      if (!entry) entry = list[0];
      var rows = {};
      spec.keys.forEach(function (key) { rows[key] = kind === "search" ? entry.ranking : entry.rankings[key]; });
      show(entry.question, rows, "Stored result for " + quoted(entry.question, 80) + ", computed with the same model " +
        "when the book was built" + (pending ? "; ranked live in this page as soon as the model has loaded." : "."));
      columns.setAttribute("data-stored", "true");
      state.rankings = rows;
      state.stored = true;
    }

    function showEmpty() {
      whyPanel.setAttribute("hidden", "hidden");
      columns.setAttribute("hidden", "hidden");
      columns.removeAttribute("data-query");
      message.textContent = "The box is empty: type a question, and the articles are ranked by how close they are to it.";
      state.query = "";
      state.rankings = null;
      state.message = "empty";
    }

    // the question in the box when the model starts loading: its token rows come while the model downloads
    var ensure = loader(f, { models: spec.keys, sets: [spec.set], texts: function () { return [input.value]; } });

    function compute(texts) {
      var text = texts[0];
      return ensure().then(function (ctx) {
        var set = ctx.sets[spec.set];
        var out = { rows: {}, scores: {}, vectors: {}, ms: 0, cut: false, count: 0 };
        return spec.keys.reduce(function (chain, key) {
          return chain.then(function () {
            return ctx.models[key].embed(text).then(function (e) {
              var scores = maths.scores(set.vectors[key], e.vector, e.vector.length);
              out.rows[key] = maths.rank(scores, 5).map(function (i) {
                return { id: set.ids[i], cosine: scores[i], text: set.texts[i] };
              });
              out.scores[key] = scores;
              out.vectors[key] = Array.prototype.slice.call(e.vector);
              out.ms += e.ms;
              out.cut = out.cut || e.cut;
              out.count = e.count;
              out.limits = out.limits || {};
              out.limits[key] = ctx.models[key].maxTokens;
            });
          });
        }, Promise.resolve()).then(function () { return out; });
      });
    }

    var runner = latest(function () { return [input.value]; }, compute, function (texts, r) {
      var best = r.rows[spec.keys[spec.keys.length - 1]][0];
      var top = Math.max.apply(null, spec.keys.map(function (key) { return r.rows[key][0].cosine; }));
      var cut = "";
      if (r.cut) {
        var limits = spec.keys.map(function (key) { return r.limits[key]; });
        cut = " Your text is " + grouped(r.count) + " tokens long; " + (spec.keys.length === 1 ?
          "the model reads only its first " + limits[0] + " (its limit)" : limits[0] === limits[1] ?
            "both models read only its first " + limits[0] : "the untouched model reads only its first " + limits[0] +
            " and the fine-tuned one its first " + limits[1]) + ", so this ranking is for the beginning alone.";
      }
      var caption = top < NO_MATCH ? "Nothing here matches " + quoted(texts[0], 60) + ": the best cosine is only " +
        fixed(top, 2) + ", about what unrelated texts get. This model reads English; other languages and " +
        "off-topic questions come out as noise." : "Ranked for " + quoted(texts[0], 80) + " in " +
        Math.max(1, Math.round(r.ms)) + " ms: the best match is " + best.id + " at cosine " + fixed(best.cosine, 3) + ".";
      show(texts[0], r.rows, caption, cut);
      state.noMatch = top < NO_MATCH;
      whyButtons(whyPanel, lists, spec, ensure, texts[0], r.rows, state, function () { return input.value === texts[0]; });
      state.rankings = r.rows;
      state.scores = r.scores;
      state.vectors = r.vectors;
      state.cut = r.cut;
      state.count = r.count;
      state.message = r.cut ? "cut" : null;
      state.stored = false;
    }, function (err) {
      // a file that failed after the load (a file of the token table) is named, as a load's failure is
      if (err && !err.handled && !err.aborted) f.fallback(describe(err));
      showStored(input.value);
    }, ensure);

    function ask(text) {
      if (state.status === "fallback") {
        // the model cannot run here (the note says why): an example shows its stored result, and
        // typed text keeps the stored result in view
        if (rightFor(text).length) showStored(text);
        return;
      }
      if (!text.trim()) {
        runner.cancel();
        showEmpty();
        return;
      }
      runner.request([text]);
    }

    input.addEventListener("input", function () { ask(input.value); });
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      ask(input.value);
    });
    chips.forEach(function (chip, i) {
      chip.addEventListener("click", function () {
        input.value = examples[i].question;
        // at once: the stored result, marked as stored, until the model in the page ranks it
        if (state.status !== "ready" && state.status !== "fallback") showStored(input.value, true);
        ask(input.value);
      });
    });
    var reason = cannotRun();
    if (reason) {
      f.fallback(reason);
      showStored(examples[0].question);
    } else {
      onFirstUse(form, [input], [button].concat(chips), ensure);
    }
  }

  // ---- why this score (why.mjs) and the batch lab (batchlab.mjs), loaded on first use ------

  function moduleOf(name) {
    if (!importModule) importModule = new Function("url", "return import(url)");
    return importModule(live.root + "live/" + name + "?v=" + stored.version);
  }

  /** A "Why this score" button on each ranked article of a live ranking; it opens why.mjs's panel. */
  function whyButtons(panel, lists, spec, ensure, question, rows, state, current) {
    panel.setAttribute("hidden", "hidden");
    clear(panel);
    state.why = null;
    // the buttons in a task of their own (on a slow phone, the ranking and its buttons drawn in one
    // task came near 200 ms), while the ranking is still the one shown and its question still in the box
    setTimeout(function () {
      if (state.rankings === rows && current()) addWhyButtons(panel, lists, spec, ensure, question, rows, state);
    }, 0);
  }

  function addWhyButtons(panel, lists, spec, ensure, question, rows, state) {
    spec.keys.forEach(function (key) {
      Array.prototype.forEach.call(lists[key].children, function (li, k) {
        var row = rows[key][k];
        var button = make("button", { type: "button", "class": "live-why", text: "Why this score",
          "aria-label": "Why this score: " + row.id + ", " + fixed(row.cosine, 3) + (spec.heads[key] ? " (" + spec.heads[key] + ")" : "") });
        button.addEventListener("click", function () {
          Promise.all([ensure(), moduleOf("why.mjs")]).then(function (got) {
            return got[1].open(panel, { ctx: got[0], keys: spec.keys, heads: spec.heads, question: question,
              article: { id: row.id, text: row.text }, rankings: rows, opener: button, state: state });
          }).then(null, function (err) {
            panel.removeAttribute("hidden");
            panel.textContent = "The shares could not be computed here (" +
              String((err && (err.reason || err.message)) || err).slice(0, 160) + ").";
          });
        });
        li.querySelector(".live-doc").appendChild(button);
      });
    });
  }

  function batchDemo(div) {
    var state = { kind: "batch", status: "idle" };
    div.labsLive = state;
    var f = frame(div, state);
    var start = make("button", { type: "button", "class": "live-button", text: "Open the batch lab" });
    var holder = make("div", { "class": "lab-holder" });
    clear(div);
    div.appendChild(make("p", { "class": "live-intro", text: "Put questions from lesson 1's help articles into a batch " +
      "and watch the loss at work: the similarity table, each row's InfoNCE, what each negative pushes, and what " +
      "each false-negative rule and mining setting leaves out. The model runs in this page." }));
    [start, f.bar, f.status, f.note, holder].forEach(function (e) { div.appendChild(e); });
    var reason = cannotRun();
    if (reason) {
      start.setAttribute("hidden", "hidden");
      f.fallback(reason);
      return;
    }
    var ensure = loader(f, { models: ["minilm"], sets: ["search"] });
    start.addEventListener("click", function () {
      start.disabled = true;
      moduleOf("batchlab.mjs").then(function (mod) {
        start.setAttribute("hidden", "hidden");
        mod.start(holder, { ensure: ensure, state: state });
      }, function (err) {
        f.fallback("The batch lab's script did not load (live/batchlab.mjs: " + String(err.message || err).slice(0, 160) +
          "). Rebuild the book with make book, and serve it with make serve.");
      });
    });
  }

  // ---- pooling ----------------------------------------------------------------------------

  var POOLINGS = [
    ["mean_masked", "Mean of the real tokens (the attention mask leaves the padding out)"],
    ["mean_unmasked", "Mean of every position, padding included (no mask)"],
    ["cls", "The first token, [CLS]"]
  ];

  var CHIPS = 40; // tokens drawn per sentence; a longer one ends in a chip that counts the rest

  function heat(x) {
    var a = Math.min(1, Math.abs(x) / 0.6);
    return x >= 0 ? "rgba(23, 92, 200, " + a.toFixed(2) + ")" : "rgba(190, 40, 30, " + a.toFixed(2) + ")";
  }

  function poolingDemo(div) {
    var example = stored.pooling;
    var limit = stored.models.minilm.maxTokens;
    var state = { kind: "pooling", status: "idle", texts: null, message: null };
    div.labsLive = state;
    var ids = [uid("a"), uid("b")];
    var inputs = [0, 1].map(function (i) {
      var box = make("input", { id: ids[i], type: "text", "class": "live-input", autocomplete: "off", spellcheck: "false" });
      box.value = example.texts[i];
      return box;
    });
    var button = make("button", { type: "submit", "class": "live-button", text: "Pool" });
    var form = make("form", { "class": "live-form live-pair" }, [
      make("label", { "for": ids[0], "class": "live-label", text: "Sentence A" }), inputs[0],
      make("label", { "for": ids[1], "class": "live-label", text: "Sentence B" }),
      make("div", { "class": "live-row" }, [inputs[1], button])]);
    var f = frame(div, state);
    var tokens = make("div", { "class": "live-tokens" });
    var message = make("p", { "class": "live-message", "aria-live": "polite" });
    var table = make("table", { "class": "live-table" });
    clear(div);
    div.appendChild(make("p", { "class": "live-intro", text: "Two sentences go through the model together, the " +
      "shorter padded to the longer. Each token comes out as a vector; three poolings make one vector per sentence." }));
    // The cosines right under the boxes, then what they mean (a cut text said first), then the tokens.
    [form, f.bar, f.note, table, message, tokens, f.status].forEach(function (e) { div.appendChild(e); });

    function drawTokens(rows, mask, grid, T, D) {
      clear(tokens);
      rows.forEach(function (row, b) {
        var label = "Sentence " + "AB"[b] + ": " + mask[b].reduce(function (s, m) { return s + m; }, 0) + " tokens" +
          (mask[b].indexOf(0) >= 0 ? ", then " + mask[b].filter(function (m) { return !m; }).length + " [PAD]" : "");
        // A long text: its first CHIPS tokens drawn, the rest (padding included) counted in one chip.
        var shown = row.length > CHIPS + 1 ? CHIPS : row.length;
        var chips = row.slice(0, shown).map(function (tok, t) {
          var strip = null;
          if (grid) {
            strip = make("span", { "class": "live-strip", "aria-hidden": "true" });
            for (var d = 0; d < 12; d++) {
              var cell = make("span", {});
              cell.style.background = heat(grid[(b * T + t) * D + d]);
              strip.appendChild(cell);
            }
          }
          return make("li", { "class": mask[b][t] ? "live-token" : "live-token live-pad" },
            [make("span", { text: tok }), strip]);
        });
        if (shown < row.length) {
          var rest = mask[b].slice(shown);
          var pads = rest.filter(function (m) { return !m; }).length;
          chips.push(make("li", { "class": "live-token live-more" }, [make("span", { text: "+ " + (rest.length - pads) +
            " more tokens" + (pads ? ", " + pads + " [PAD]" : "") })]));
        }
        tokens.appendChild(make("p", { "class": "live-token-label", text: label }));
        tokens.appendChild(make("ul", { "class": "live-token-row", "aria-label": label }, chips));
      });
      if (grid) {
        tokens.appendChild(make("p", { "class": "live-sub", text: "Under each token: the first 12 of its " + D +
          " numbers (blue above zero, red below)." }));
      }
    }

    function drawTable(cosines, caption) {
      clear(table);
      table.appendChild(make("caption", { text: caption }));
      table.appendChild(make("thead", {}, [make("tr", {}, [make("th", { scope: "col", text: "Pooling" }),
        make("th", { scope: "col", text: "cosine(A, B)" })])]));
      var body = make("tbody");
      POOLINGS.forEach(function (p) {
        body.appendChild(make("tr", {}, [make("th", { scope: "row", text: p[1] }),
          make("td", { text: fixed(cosines[p[0]], 3) })]));
      });
      table.appendChild(body);
      table.removeAttribute("hidden");
    }

    function showStored() {
      drawTokens(example.tokens, example.mask, null);
      drawTable(example.cosines, "Stored result for " + quoted(example.texts[0], 40) + " and " +
        quoted(example.texts[1], 40) + ", computed with the same model when the book was built");
      state.texts = example.texts.slice();
      state.stored = true;
      state.cosines = example.cosines;
    }
    var ensure = loader(f, { models: ["minilm"], sets: [], texts: function () { return [inputs[0].value, inputs[1].value]; } });

    function compute(texts) {
      return ensure().then(function (ctx) { return ctx.models.minilm.grid(texts); });
    }

    var runner = latest(function () { return [inputs[0].value, inputs[1].value]; }, compute, function (texts, g) {
      var pooled = maths.pool(g);
      var cosines = {};
      POOLINGS.forEach(function (p) { cosines[p[0]] = maths.cosine(pooled[p[0]][0], pooled[p[0]][1]); });
      drawTokens(g.tokens, g.mask, g.grid, g.T, g.D);
      drawTable(cosines, "Cosine between the two sentences, computed in this page");
      var pads = g.mask.map(function (row) { return row.filter(function (m) { return !m; }).length; });
      var which = pads[0] ? 0 : pads[1] ? 1 : -1;
      var cut = g.cut.map(function (c, b) {
        return c ? " Sentence " + "AB"[b] + " is " + grouped(g.counts[b]) + " tokens long; the model reads only its first " +
          limit + "." : "";
      }).join("");
      message.textContent = (cut ? cut.slice(1) + " " : "") + (which < 0 ? "Both sentences have " + g.T +
        " tokens: no padding, so the two means agree." : "Sentence " + "AB"[which] + " is padded with " + pads[which] +
        " [PAD] to " + g.T + " positions; without the mask its mean counts them as if they were words.");
      state.texts = texts;
      state.tokens = g.tokens;
      state.ids = g.ids;
      state.mask = g.mask;
      state.T = g.T;
      state.D = g.D;
      state.grid = Array.prototype.slice.call(g.grid);
      state.pooled = pooled;
      state.cosines = cosines;
      state.cut = g.cut;
      state.message = g.cut[0] || g.cut[1] ? "cut" : null;
      state.stored = false;
    }, function () {
      showStored();
    }, ensure);

    function ask() {
      var texts = [inputs[0].value, inputs[1].value];
      if (state.status === "fallback") return;
      var empty = texts.map(function (t) { return !t.trim(); });
      if (empty[0] || empty[1]) {
        runner.cancel();
        clear(tokens);
        table.setAttribute("hidden", "hidden");
        message.textContent = (empty[0] && empty[1] ? "Both boxes are empty" : "Sentence " + (empty[0] ? "A" : "B") +
          " is empty") + ": type a sentence in each box to compare them.";
        state.texts = texts;
        state.cosines = null;
        state.message = "empty";
        return;
      }
      runner.request(texts);
    }

    inputs.forEach(function (box) { box.addEventListener("input", ask); });
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      ask();
    });
    showStored();
    var reason = cannotRun();
    if (reason) f.fallback(reason);
    else onFirstUse(form, inputs, [button], ensure);
  }

  // ---- InfoNCE on the unit circle ------------------------------------------------------------

  var TAU_MIN = 0.01, TAU_MAX = 2;
  // Where the question and the cards start, in degrees: the answer card near the question, one
  // wrong card close behind it, two far away.
  var START = { question: 30, cards: [70, 125, 215, 300] };
  var ARROW = 1; // an arrow is ARROW x tau x minus the gradient: the gradient in units of the loss's natural size, 1 / tau
  var R = 100; // the unit circle's radius in the figure's own units (SVG text has no tiny font sizes)
  var DOT = 0.075 * R; // a vector's dot
  var EDGE = 1.47 * R; // the figure shows -1.5 R to 1.5 R: an arrow's tip stays this far in

  var infonce = maths.infonce;
  live.infonce = infonce;

  function unit(deg) {
    var r = deg * Math.PI / 180;
    return [Math.cos(r), Math.sin(r)];
  }

  function infonceDemo(div) {
    var tau0 = parseFloat(div.getAttribute("data-tau"));
    if (!(tau0 >= TAU_MIN && tau0 <= TAU_MAX)) tau0 = 0.5;
    var angles = { question: START.question, cards: START.cards.slice() };
    var tau = tau0;
    var state = { kind: "infonce", status: "ready" };
    div.labsLive = state;
    var names = ["Answer card", "Wrong card 1", "Wrong card 2", "Wrong card 3"];
    var short = ["A", "1", "2", "3"];

    var figure = svg("svg", { viewBox: [-1.5 * R, -1.5 * R, 3 * R, 3 * R].join(" "), "class": "live-circle",
      role: "group", "aria-label": "The question and its four cards on the unit circle, with the step the loss " +
      "asks of each" });
    figure.appendChild(svg("circle", { cx: 0, cy: 0, r: R, "class": "live-unit" }));
    figure.appendChild(svg("line", { x1: -1.2 * R, y1: 0, x2: 1.2 * R, y2: 0, "class": "live-axis" }));
    figure.appendChild(svg("line", { x1: 0, y1: -1.2 * R, x2: 0, y2: 1.2 * R, "class": "live-axis" }));
    var arrows = svg("g", { "class": "live-arrows", "aria-hidden": "true" });
    figure.appendChild(arrows);
    var handles = [];

    function handle(cls, label, text) {
      var g = svg("g", { "class": "live-handle " + cls, tabindex: "0", role: "slider", "aria-label": label,
        "aria-valuemin": "0", "aria-valuemax": "359" });
      g.appendChild(svg("circle", { r: 0.16 * R, "class": "live-hit" }));
      g.appendChild(svg("circle", { r: 0.11 * R, "class": "live-ring" }));
      g.appendChild(svg("circle", { r: DOT, "class": "live-dot" }));
      var t = svg("text", { "class": "live-label-svg", "text-anchor": "middle", "dominant-baseline": "central" });
      t.textContent = text;
      g.appendChild(t);
      figure.appendChild(g);
      handles.push(g);
      return g;
    }
    var qHandle = handle("live-question", "Question", "Q");
    var cardHandles = names.map(function (name, j) { return handle(j === 0 ? "live-answer" : "live-wrong", name, short[j]); });

    var tauId = uid("tau");
    var slider = make("input", { id: tauId, type: "range", "class": "live-range", min: String(Math.log10(TAU_MIN)),
      max: String(Math.log10(TAU_MAX)), step: "0.001" });
    var number = make("input", { type: "number", "class": "live-number", min: String(TAU_MIN), max: String(TAU_MAX),
      step: "any", "aria-label": "Temperature \u03c4, typed" });
    var controls = make("div", { "class": "live-controls" }, [
      make("label", { "for": tauId, "class": "live-label", text: "Temperature \u03c4" }), slider, number]);
    var warn = make("p", { "class": "live-message", "aria-live": "polite" });
    var table = make("table", { "class": "live-table" });
    var summary = make("p", { "class": "live-summary", "aria-live": "polite" });
    clear(div);
    div.appendChild(make("p", { "class": "live-intro", text: "Drag the question (Q) or a card around the circle, or " +
      "focus one and use the arrow keys (Shift: 10\u00b0 a step). Arrows show the step the loss asks of each vector, " +
      "minus its gradient, drawn \u03c4 times its length so that temperatures compare." }));
    var clampNote = make("p", { "class": "live-sub live-clamp-note", hidden: "hidden",
      text: "Dashed arrows are longer than the figure: they are drawn shortened, to its edge." });
    [make("div", { "class": "live-figure" }, [figure]), clampNote, controls, warn, summary, table].forEach(function (e) {
      div.appendChild(e);
    });

    /** An arrow from ``from`` by ``step`` (unit-circle coordinates, y up), drawn in the figure's units (y down). */
    function arrow(from, step, cls) {
      var dx = R * step[0], dy = -R * step[1];
      var len = Math.sqrt(dx * dx + dy * dy);
      var g = svg("g", { "class": "live-arrow " + cls });
      g.setAttribute("data-step", step[0] + " " + step[1]);
      if (len < 2) return g;
      // from the rim of the vector's dot, so that all of the arrow's length shows
      var x1 = R * from[0] + DOT * dx / len, y1 = -R * from[1] + DOT * dy / len;
      // An arrow longer than the figure is shortened to end at its edge, drawn dashed (live.css),
      // and the note under the figure says so; data-step keeps the true step.
      var f = 1;
      [[x1, dx], [y1, dy]].forEach(function (p) {
        if (p[0] + p[1] > EDGE) f = Math.min(f, (EDGE - p[0]) / p[1]);
        if (p[0] + p[1] < -EDGE) f = Math.min(f, (-EDGE - p[0]) / p[1]);
      });
      if (f < 1) {
        f = Math.max(0, f);
        dx *= f;
        dy *= f;
        len *= f;
        g.setAttribute("class", "live-arrow live-clamped " + cls);
        if (len < 2) return g;
      }
      var x2 = x1 + dx, y2 = y1 + dy, ux = dx / len, uy = dy / len, h = Math.min(9, 0.6 * len);
      var bx = x2 - ux * h, by = y2 - uy * h;
      g.appendChild(svg("line", { x1: x1.toFixed(2), y1: y1.toFixed(2), x2: bx.toFixed(2), y2: by.toFixed(2) }));
      g.appendChild(svg("polygon", { points: [x2, y2, bx - uy * h * 0.55, by + ux * h * 0.55, bx + uy * h * 0.55,
        by - ux * h * 0.55].map(function (v) { return v.toFixed(2); }).join(" ") }));
      return g;
    }

    var announce = null;
    function draw() {
      var q = unit(angles.question);
      var cards = angles.cards.map(unit);
      var r = infonce(q, cards, tau);
      var steps = { question: [-ARROW * tau * r.gradQuestion[0], -ARROW * tau * r.gradQuestion[1]],
        cards: r.gradCards.map(function (g) { return [-ARROW * tau * g[0], -ARROW * tau * g[1]]; }) };
      clear(arrows);
      arrows.appendChild(arrow(q, steps.question, "live-question"));
      cards.forEach(function (c, j) { arrows.appendChild(arrow(c, steps.cards[j], j === 0 ? "live-answer" : "live-wrong")); });
      var clamped = arrows.querySelectorAll(".live-clamped").length;
      if (clamped) clampNote.removeAttribute("hidden");
      else clampNote.setAttribute("hidden", "hidden");
      state.clamped = clamped;
      var place = function (g, p, deg, text) {
        g.setAttribute("transform", "translate(" + (R * p[0]).toFixed(2) + " " + (-R * p[1]).toFixed(2) + ")");
        g.setAttribute("aria-valuenow", String(Math.round(deg)));
        g.setAttribute("aria-valuetext", text);
      };
      place(qHandle, q, angles.question, "at " + Math.round(angles.question) + " degrees");
      cardHandles.forEach(function (g, j) {
        place(g, cards[j], angles.cards[j], "at " + Math.round(angles.cards[j]) + " degrees, cosine " +
          fixed(r.scores[j], 2) + " with the question, " + (100 * r.shares[j]).toFixed(1) + "% of the softmax");
      });
      clear(table);
      table.appendChild(make("caption", { text: "The row of the similarity table, at \u03c4 = " + tau.toFixed(3) }));
      table.appendChild(make("thead", {}, [make("tr", {}, ["Vector", "cosine with Q (share)", "gradient length"].map(
        function (h) { return make("th", { scope: "col", text: h }); }))]));
      var body = make("tbody");
      var length = function (v) { return Math.sqrt(v[0] * v[0] + v[1] * v[1]); };
      body.appendChild(make("tr", {}, [make("th", { scope: "row", text: "Question (Q)" }), make("td", { text: "\u2014" }),
        make("td", { text: fixed(length(r.gradQuestion), 3) })]));
      cards.forEach(function (c, j) {
        body.appendChild(make("tr", {}, [make("th", { scope: "row", text: names[j] + " (" + short[j] + ")" }),
          make("td", { text: fixed(r.scores[j], 3) + " (" + (100 * r.shares[j]).toFixed(1) + "%)" }),
          make("td", { text: fixed(length(r.gradCards[j]), 3) })]));
      });
      table.appendChild(body);
      table.appendChild(make("tfoot", {}, [make("tr", {}, [make("th", { scope: "row", text: "Loss of the row" }),
        make("td", { colspan: "2", text: fixed(r.loss, 4) })])]));
      slider.value = String(Math.log10(tau));
      slider.setAttribute("aria-valuetext", "\u03c4 = " + tau.toFixed(3));
      if (document.activeElement !== number) number.value = tau.toFixed(3);
      var text = "At \u03c4 = " + tau.toFixed(3) + " the answer card holds " + (100 * r.shares[0]).toFixed(1) +
        "% of the softmax and the row's loss is " + fixed(r.loss, 3) + ".";
      clearTimeout(announce);
      announce = setTimeout(function () { summary.textContent = text; }, 250);
      state.tau = tau;
      state.angles = { question: angles.question, cards: angles.cards.slice() };
      state.question = q;
      state.cards = cards;
      state.scores = r.scores;
      state.shares = r.shares;
      state.loss = r.loss;
      state.gradQuestion = r.gradQuestion;
      state.gradCards = r.gradCards;
      state.steps = steps;
      state.summary = text;
    }

    function setAngle(which, deg) {
      deg = ((deg % 360) + 360) % 360;
      if (which < 0) angles.question = deg;
      else angles.cards[which] = deg;
      draw();
    }

    function angleOf(event) {
      var pt = figure.createSVGPoint();
      pt.x = event.clientX;
      pt.y = event.clientY;
      var p = pt.matrixTransform(figure.getScreenCTM().inverse());
      return Math.atan2(-p.y, p.x) * 180 / Math.PI;
    }

    [qHandle].concat(cardHandles).forEach(function (g, i) {
      var which = i - 1;
      g.addEventListener("pointerdown", function (e) {
        e.preventDefault();
        g.setPointerCapture(e.pointerId);
        g.focus();
        g.classList.add("live-dragging");
      });
      g.addEventListener("pointermove", function (e) {
        if (g.hasPointerCapture && g.hasPointerCapture(e.pointerId)) setAngle(which, angleOf(e));
      });
      var stop = function () { g.classList.remove("live-dragging"); };
      g.addEventListener("pointerup", stop);
      g.addEventListener("pointercancel", stop);
      g.addEventListener("keydown", function (e) {
        var now = which < 0 ? angles.question : angles.cards[which];
        var step = e.shiftKey ? 10 : 1;
        var keys = { ArrowRight: step, ArrowUp: step, ArrowLeft: -step, ArrowDown: -step, PageUp: 15, PageDown: -15 };
        if (keys.hasOwnProperty(e.key)) {
          e.preventDefault();
          setAngle(which, Math.round(now) + keys[e.key]);
        } else if (e.key === "Home") {
          e.preventDefault();
          setAngle(which, which < 0 ? START.question : START.cards[which]);
        }
      });
    });
    slider.addEventListener("input", function () {
      tau = Math.pow(10, parseFloat(slider.value));
      warn.textContent = "";
      draw();
    });
    number.addEventListener("change", function () {
      var v = parseFloat(number.value);
      if (!(v >= TAU_MIN && v <= TAU_MAX)) {
        warn.textContent = "\u03c4 must be a number from " + TAU_MIN + " to " + TAU_MAX + "; it stays at " + tau.toFixed(3) + ".";
        number.value = tau.toFixed(3);
        return;
      }
      warn.textContent = "";
      tau = v;
      draw();
    });
    draw();
    summary.textContent = state.summary;
  }

  // ---- lesson 5's adapter, trained in the page (adapter.mjs) -------------------------------

  var ARMS = { inbatch: "In-batch negatives only", lookalike: "In-batch + each pair's look-alike" };

  /** A loss curve: an SVG polyline of the losses so far over ``steps`` steps (y from 0 to the first loss). */
  function lossCurve(holder, losses, steps) {
    clear(holder);
    if (!losses.length) return;
    var W = 300, H = 120, top = Math.max.apply(null, losses) || 1;
    var figure = svg("svg", { viewBox: "-34 -8 " + (W + 44) + " " + (H + 30), "class": "live-loss", role: "img",
      "aria-label": "The loss at each step: " + fixed(losses[0], 3) + " at step 1, " + fixed(losses[losses.length - 1], 3) +
        " at step " + losses.length + " of " + steps });
    figure.appendChild(svg("line", { x1: 0, y1: H, x2: W, y2: H, "class": "live-axis" }));
    figure.appendChild(svg("line", { x1: 0, y1: 0, x2: 0, y2: H, "class": "live-axis" }));
    var points = losses.map(function (l, s) {
      return (W * (steps > 1 ? s / (steps - 1) : 0)).toFixed(1) + "," + (H - H * l / top).toFixed(1);
    });
    figure.appendChild(svg("polyline", { points: points.join(" "), "class": "live-loss-line" }));
    [[fixed(top, 2), 4], ["0", H]].forEach(function (t) {
      var label = svg("text", { x: -4, y: t[1], "text-anchor": "end", "class": "live-loss-text" });
      label.textContent = t[0];
      figure.appendChild(label);
    });
    var steps0 = svg("text", { x: W, y: H + 18, "text-anchor": "end", "class": "live-loss-text" });
    steps0.textContent = "step " + steps;
    figure.appendChild(steps0);
    holder.appendChild(figure);
  }

  function adapterDemo(div) {
    var state = { kind: "adapter", status: "idle", runs: [], pairs: [], busy: false };
    div.labsLive = state;
    var f = frame(div, state);
    var mod = null; // adapter.mjs and the look-alike set, once loaded
    var set = null;
    var lastW = null; // the last run's adapter (kept out of state: 147,456 numbers)
    var vectorOf = {}; // the reader's question -> its vector (Float64Array 384)

    function numberBox(label, value, min, max, step) {
      var id = uid("adapter");
      var box = make("input", { id: id, type: "number", "class": "live-number", value: value, min: min, max: max, step: step });
      return { box: box, kids: [make("label", { "for": id, "class": "live-label", text: label }), box] };
    }
    var armName = uid("arm");
    var armRadios = Object.keys(ARMS).map(function (key) {
      var id = uid("arm");
      var r = make("input", { type: "radio", id: id, name: armName, value: key });
      if (key === "lookalike") r.checked = true;
      return { radio: r, row: make("div", { "class": "live-check" }, [r, make("label", { "for": id, text: ARMS[key] })]) };
    });
    var sourceName = uid("source");
    var sources = [["lesson", "The lesson's training questions (26 topics)"], ["yours", "Your own pairs (below)"]].map(function (s, k) {
      var id = uid("source");
      var r = make("input", { type: "radio", id: id, name: sourceName, value: s[0] });
      if (k === 0) r.checked = true;
      return { radio: r, row: make("div", { "class": "live-check" }, [r, make("label", { "for": id, text: s[1] })]) };
    });
    var tau = numberBox("Temperature \u03c4", "0.05", "0.01", "2", "any");
    var steps = numberBox("Steps", "100", "1", "500", "1");
    var seed = numberBox("Seed", "0", "0", "4294967295", "1");
    var train = make("button", { type: "submit", "class": "live-button", text: "Train" });
    var form = make("form", { "class": "live-adapter-form", novalidate: "novalidate" }, [
      make("fieldset", { "class": "live-fieldset" }, [make("legend", { text: "Negatives" })].concat(armRadios.map(function (a) { return a.row; }))),
      make("fieldset", { "class": "live-fieldset" }, [make("legend", { text: "Training pairs" })].concat(sources.map(function (a) { return a.row; }))),
      make("div", { "class": "live-controls" }, tau.kids.concat(steps.kids, seed.kids, [train]))]);
    var message = make("p", { "class": "live-message live-problem", "aria-live": "polite" });
    var curve = make("div", { "class": "live-figure live-loss-figure" });
    var progress = make("p", { "class": "live-sub", "aria-hidden": "true" });
    var result = make("p", { "class": "live-summary", "aria-live": "polite" });
    // a table wider than a phone scrolls sideways in its own box, which the keyboard can reach
    var table = make("div", { "class": "why-scroll", tabindex: "0", role: "region", "aria-label": "Your runs" });

    // the reader's own pairs
    var qId = uid("own");
    var own = make("input", { id: qId, type: "text", "class": "live-input", autocomplete: "off", maxlength: "300",
      placeholder: "how do I close my account?" });
    var find = make("button", { type: "submit", "class": "live-button", text: "Rank" });
    var ownForm = make("form", { "class": "live-own-form" }, [
      make("label", { "for": qId, "class": "live-label", text: "Your question, ranked among the 84 articles of the set" }),
      make("div", { "class": "live-row" }, [own, find])]);
    var ownList = make("ol", { "class": "live-ranking live-own-ranking", "aria-label": "The articles for your question, best first" });
    var pairsList = make("ul", { "class": "live-pairs", "aria-label": "Your pairs" });
    var ownMessage = make("p", { "class": "live-message", "aria-live": "polite" });
    var moved = make("div", { "class": "live-moved", "aria-live": "polite" });

    clear(div);
    div.appendChild(make("p", { "class": "live-intro", text: "This trains one linear layer in your browser: a 384 \u00d7 384 " +
      "matrix, from the identity, on the questions' vectors of the frozen all-MiniLM-L6-v2 (the articles' vectors stay " +
      "as they are). Fine-tuning trains the whole model. Each step is the lesson's: InfoNCE on 16 questions, the " +
      "gradient by hand in float64, plain SGD (learning rate 0.5). The exam: the 80 questions of the 16 topics it " +
      "never trains on, lesson 1's password question among them." }));
    [form, message, f.bar, curve, progress, result, table,
      make("h4", { "class": "live-head", text: "Your own pairs" }),
      make("p", { "class": "live-sub", text: "Ask a question, then mark its right article and, if you like, a wrong " +
        "one that outranks it (its look-alike). With two pairs or more, choose \u201cYour own pairs\u201d and train: " +
        "your questions are ranked with the adapter off and on. Nothing leaves this page." }),
      ownForm, ownMessage, ownList, pairsList, moved, f.status, f.note].forEach(function (e) { div.appendChild(e); });

    var reason = cannotRun();
    var ensure = loader(f, { models: ["minilm"] });

    function loadLab() {
      if (mod && set) return Promise.resolve();
      return Promise.all([moduleOf("adapter.mjs"), moduleOf("model.mjs")]).then(function (got) {
        return got[1].lookalikeSet().then(function (s) {
          mod = got[0];
          var m = s.meta, d = m.dim;
          var block = function (name) { return mod.rows(s.table, d, m.blocks[name][0], m.blocks[name][1]); };
          set = { meta: m, Q: block("Q"), P: block("P"), L: block("L"), Qh: block("Qh"), Ph: block("Ph"), Lh: block("Lh"),
            D: block("D") };
          set.articles = { ids: m.train.articles.ids.concat(m.pool.ids), texts: m.train.articles.texts.concat(m.pool.texts),
            vectors: m.train.articles.rows.map(function (r) { return mod.rows(s.table, d, r, 1)[0]; }).concat(set.D) };
        });
      });
    }

    function chosen(list) {
      for (var k = 0; k < list.length; k++) if (list[k].radio.checked) return list[k].radio.value;
      return null;
    }

    /** The held-out exam (adapter.mjs's pairAccuracy and rankOf), a few questions a task. */
    function exam(W) {
      return mod.mapInSlices(set.Qh, function (q, i) { return mod.stepsWin(W, q, set.Ph[i], set.Lh[i]); }).then(function (pair) {
        var p = set.meta.heldOut.password;
        return { accuracy: pair.filter(Boolean).length / pair.length, pair: pair,
          passwordRank: mod.rankOf(W, set.Qh[p], set.D, set.meta.heldOut.answer[p]) };
      });
    }

    function showRuns() {
      clear(table);
      if (!state.runs.length) return;
      var t = make("table", { "class": "live-table live-runs" });
      t.appendChild(make("caption", { text: "Your runs: held-out look-alike accuracy (steps above look-alike, 80 " +
        "questions) and the password steps' rank among 32 articles" }));
      t.appendChild(make("thead", {}, [make("tr", {}, ["Negatives", "Run", "Accuracy", "Password rank"].map(function (h) {
        return make("th", { scope: "col", text: h });
      }))]));
      var body = make("tbody");
      body.appendChild(make("tr", {}, [make("td", { text: "none (untouched)" }), make("td", { text: "\u2013" }),
        make("td", { text: fixed(state.untouched.accuracy, 3) }), make("td", { text: String(state.untouched.passwordRank) })]));
      state.runs.forEach(function (r) {
        body.appendChild(make("tr", {}, [r.arm === "lookalike" ? "+ look-alikes" : "in-batch",
          (r.source === "lesson" ? "lesson's pairs" : "your pairs") + ", \u03c4 " + r.tau + ", " + r.steps + " steps, seed " + r.seed,
          fixed(r.accuracy, 3), String(r.passwordRank)].map(function (x) {
          return make("td", { text: x });
        })));
      });
      t.appendChild(body);
      table.appendChild(t);
    }

    function rankingOf(W, vector) {
      var s = mod.scores(W, vector, set.articles.vectors);
      var order = Array.prototype.slice.call(s).map(function (x, i) { return i; });
      order.sort(function (a, b) { return s[b] - s[a] || a - b; });
      return order.map(function (i) { return { id: set.articles.ids[i], cosine: s[i] }; });
    }

    function showMoved(W) {
      clear(moved);
      if (!state.pairs.length) return;
      var I = mod.identity(set.meta.dim);
      state.moved = state.pairs.map(function (p) {
        var off = rankingOf(I, vectorOf[p.question]), on = rankingOf(W, vectorOf[p.question]);
        var rank = function (list, id) { for (var k = 0; k < list.length; k++) if (list[k].id === id) return k + 1; return -1; };
        return { question: p.question, answer: p.answer, off: rank(off, p.answer), on: rank(on, p.answer),
          topOff: off[0].id, topOn: on[0].id };
      });
      var t = make("table", { "class": "live-table" });
      t.appendChild(make("caption", { text: "Your questions: the right article's rank among 84, adapter off and on" }));
      t.appendChild(make("thead", {}, [make("tr", {}, ["Question", "Right article", "Off", "On", "First, on"].map(function (h) {
        return make("th", { scope: "col", text: h });
      }))]));
      var body = make("tbody");
      state.moved.forEach(function (m) {
        body.appendChild(make("tr", {}, [quoted(m.question, 40), m.answer, String(m.off), String(m.on), m.topOn].map(function (x) {
          return make("td", { text: x });
        })));
      });
      t.appendChild(body);
      moved.appendChild(make("div", { "class": "why-scroll", tabindex: "0", role: "region",
        "aria-label": "Your questions, adapter off and on" }, [t]));
    }

    function problem(text) {
      message.textContent = text;
      state.problem = text;
    }

    form.addEventListener("submit", function (e) {
      e.preventDefault();
      if (state.busy) return;
      var settings = { arm: chosen(armRadios), source: chosen(sources), tau: Number(tau.box.value),
        steps: Number(steps.box.value), seed: Number(seed.box.value) };
      if (tau.box.value.trim() === "") settings.tau = NaN;
      if (steps.box.value.trim() === "") settings.steps = NaN;
      if (seed.box.value.trim() === "") settings.seed = NaN;
      problem("");
      state.busy = true;
      train.disabled = true;
      settings.started = performance.now();
      loadLab().then(function () {
        var bad = mod.settingsProblem(settings);
        var pairs = state.pairs.map(function (p) { return { question: p.question, answer: p.answer, lookAlike: p.lookAlike }; });
        if (!bad && settings.source === "yours") bad = mod.pairsProblem(pairs);
        if (bad) {
          problem(bad);
          return null;
        }
        return (state.untouched ? Promise.resolve(state.untouched) : exam(mod.identity(set.meta.dim))).then(function (u) {
          state.untouched = u;
          return trainWith(settings);
        });
      }).then(function () {
        state.busy = false;
        train.disabled = false;
      }, function (err) {
        state.busy = false;
        train.disabled = false;
        problem("The training could not run here (" + String((err && (err.reason || err.message)) || err).slice(0, 160) + ").");
      });
    });

    function trainWith(settings) {
      var started = settings.started;
      var data, plan;
      if (settings.source === "lesson") {
        data = set;
        plan = mod.batchPlan(set.meta.train.topics.length, set.meta.train.wordings, set.meta.defaults.batch,
          settings.steps, settings.seed);
      } else {
        var vec = function (id) { return set.articles.vectors[set.articles.ids.indexOf(id)]; };
        data = { Q: state.pairs.map(function (p) { return vectorOf[p.question]; }), P: state.pairs.map(function (p) { return vec(p.answer); }),
          L: state.pairs.map(function (p) { return p.lookAlike ? vec(p.lookAlike) : null; }) };
        plan = mod.batchPlan(data.Q.length, 1, Math.min(set.meta.defaults.batch, data.Q.length), settings.steps, settings.seed);
      }
      var losses = [];
      result.textContent = "Training\u2026";
      return mod.trainInSlices(data, plan, { arm: settings.arm, steps: settings.steps, tau: settings.tau,
        lr: set.meta.defaults.lr, onStep: function (s, loss) {
          losses.push(loss);
          if (s === 1 || s === settings.steps || s % 5 === 0) {
            lossCurve(curve, losses, settings.steps);
            progress.textContent = "Step " + s + " of " + settings.steps + ", loss " + fixed(loss, 3);
          }
        } }).then(function (run) {
        return exam(run.W).then(function (e) { return [run, e]; });
      }).then(function (got) {
        var run = got[0], e = got[1];
        var r = { source: settings.source, arm: settings.arm, tau: settings.tau, steps: settings.steps, seed: settings.seed,
          losses: run.losses, accuracy: e.accuracy, pair: e.pair, passwordRank: e.passwordRank,
          stepMs: run.stepMs, ms: performance.now() - started };
        state.runs.push(r);
        state.last = r;
        lastW = run.W;
        lossCurve(curve, run.losses, settings.steps);
        result.textContent = ARMS[r.arm] + ", " + r.steps + " steps at \u03c4 " + r.tau + " (seed " + r.seed + "): the " +
          "steps article beats its look-alike on " + fixed(r.accuracy, 3) + " of the held-out questions (untouched " +
          fixed(state.untouched.accuracy, 3) + "); the password steps rank " + r.passwordRank + " of 32 (untouched " +
          state.untouched.passwordRank + ").";
        showRuns();
        showMoved(run.W);
      });
    }

    function showOwn(text, ranking) {
      clear(ownList);
      state.own = { question: text, ranking: ranking.slice(0, 5), count: (state.own ? state.own.count : 0) + 1 };
      ranking.slice(0, 5).forEach(function (row, k) {
        var right = make("button", { type: "button", "class": "live-why", text: "Right article",
          "aria-label": "Right article for your question: " + row.id });
        var wrong = make("button", { type: "button", "class": "live-why", text: "Wrong: its look-alike",
          "aria-label": "Wrong for your question, its look-alike: " + row.id });
        right.addEventListener("click", function () { mark(text, row.id, "answer"); });
        wrong.addEventListener("click", function () { mark(text, row.id, "lookAlike"); });
        var i = set.articles.ids.indexOf(row.id);
        ownList.appendChild(make("li", {}, [make("span", { "class": "live-cos", text: fixed(row.cosine, 3) }), " ",
          make("span", { "class": "live-doc" }, [quoted(set.articles.texts[i], 90), " ", make("span", { "class": "live-id", text: row.id }),
            " ", right, " ", wrong])]));
      });
    }

    function mark(question, id, what) {
      var p = null;
      for (var k = 0; k < state.pairs.length; k++) if (state.pairs[k].question === question) p = state.pairs[k];
      if (!p) {
        if (what === "lookAlike") {
          ownMessage.textContent = "First choose this question's right article, then a wrong one.";
          return;
        }
        p = { question: question, answer: id, lookAlike: null };
        state.pairs.push(p);
      } else {
        p[what] = id;
      }
      ownMessage.textContent = "";
      showPairs();
    }

    function showPairs() {
      clear(pairsList);
      state.pairs.forEach(function (p, k) {
        var remove = make("button", { type: "button", "class": "live-why", text: "Remove",
          "aria-label": "Remove the pair " + p.question });
        remove.addEventListener("click", function () {
          state.pairs.splice(k, 1);
          showPairs();
        });
        pairsList.appendChild(make("li", {}, [quoted(p.question, 50) + " \u2192 " + p.answer +
          (p.lookAlike ? " (look-alike " + p.lookAlike + ")" : ""), " ", remove]));
      });
    }

    ownForm.addEventListener("submit", function (e) {
      e.preventDefault();
      var text = own.value.trim();
      if (!text) {
        ownMessage.textContent = "Type a question first.";
        return;
      }
      ownMessage.textContent = "";
      Promise.all([ensure(), loadLab()]).then(function (got) {
        return got[0].models.minilm.embed(text);
      }).then(function (e) {
        vectorOf[text] = e.vector;
        showOwn(text, rankingOf(lastW || mod.identity(set.meta.dim), e.vector));
        if (lastW) ownMessage.textContent = "Ranked with the adapter of your last run on.";
      }, function (err) {
        if (!(err && err.handled)) ownMessage.textContent = "Your question could not be ranked here (" +
          String((err && (err.reason || err.message)) || err).slice(0, 160) + ").";
      });
    });

    if (reason) {
      [train, find].forEach(function (b) { b.disabled = true; });
      f.fallback(reason);
    }
  }

  // ---- start --------------------------------------------------------------------------------

  var KINDS = { search: function (div) { searchDemo(div, "search"); }, compare: function (div) { searchDemo(div, "compare"); },
    pooling: poolingDemo, infonce: infonceDemo, batch: batchDemo, adapter: adapterDemo };

  live.start = function (demos) {
    Array.prototype.forEach.call(demos, function (div) {
      var kind = div.getAttribute("data-live");
      if (div.labsLive) return; // built already
      div.classList.add("live-built");
      if (!KINDS.hasOwnProperty(kind)) {
        div.textContent = "Unknown live demo kind " + JSON.stringify(kind) + " (search, pooling, infonce, compare, batch, adapter).";
        return;
      }
      KINDS[kind](div);
    });
  };
})();
