/* The live demos' loader, on every page (_config.yml html_js_files). A page without a
 * <div class="live-demo" data-live="..."> is left alone. On a page with one, it adds the demos'
 * style and scripts from the book's live/ folder (built by tools/live_model.py, copied in by
 * html_extra_path): stored.js (the example questions and stored results), maths.js (the demos'
 * arithmetic) and demos.js (the controls). No model byte is fetched until the reader uses a demo. */
(function () {
  "use strict";
  var me = document.currentScript;

  function missing(demos, file) {
    Array.prototype.forEach.call(demos, function (div) {
      var p = document.createElement("p");
      p.className = "live-note";
      p.textContent = "This live demo's files are missing from this build of the book (" + file + "): build it " +
        "with make book.";
      div.textContent = "";
      div.appendChild(p);
    });
  }

  function load(src, file, demos, then) {
    var s = document.createElement("script");
    s.src = src;
    s.onload = then;
    s.onerror = function () { missing(demos, file); };
    document.head.appendChild(s);
  }

  function start() {
    var demos = document.querySelectorAll("div.live-demo[data-live]");
    if (!demos.length || !me) return;
    var root = me.src.replace(/_static\/live-loader\.js(\?.*)?$/, "");
    window.labsLive = window.labsLive || {};
    window.labsLive.root = root;
    load(root + "live/stored.js", "live/stored.js", demos, function () {
      var version = window.labsLiveStored && window.labsLiveStored.version;
      var css = document.createElement("link");
      css.rel = "stylesheet";
      css.href = root + "live/live.css?v=" + version;
      document.head.appendChild(css);
      load(root + "live/maths.js?v=" + version, "live/maths.js", demos, function () {
        load(root + "live/demos.js?v=" + version, "live/demos.js", demos, function () {
          window.labsLive.start(demos);
        });
      });
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
