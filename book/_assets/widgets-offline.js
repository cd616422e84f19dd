// Loaded between require.js and the widget manager (embed-amd.js); see _config.yml.
(function () {
  // 1. The widget manager's bundled modules (and the icon fonts they load) resolve against
  //    requirejs's baseUrl. Point it at this folder, so they load from the book, not next to
  //    each page and not from a CDN.
  var here = document.currentScript && document.currentScript.src;
  if (here && window.requirejs) {
    window.requirejs.config({ baseUrl: here.slice(0, here.lastIndexOf("/") + 1) });
  }

  // 2. The widget manager typesets labels with MathJax 2's MathJax.Hub.Queue; the book runs
  //    MathJax 3. Give it a Hub that forwards to MathJax 3's typesetPromise.
  function hub() {
    return {
      Queue: function (job) {
        var element = job && job[2];
        var mj = window.MathJax;
        if (mj && mj.typesetPromise) {
          mj.typesetPromise(element ? [element] : undefined).catch(function () {});
        }
      },
    };
  }
  var mj = window.MathJax;
  if (mj && mj.version) {
    mj.Hub = mj.Hub || hub(); // MathJax 3 is already running
    return;
  }
  mj = window.MathJax = mj || {}; // still the configuration object MathJax 3 will read
  mj.Hub = hub();
  mj.startup = mj.startup || {};
  var ready = mj.startup.ready;
  mj.startup.ready = function () {
    if (ready) {
      ready();
    } else {
      window.MathJax.startup.defaultReady();
    }
    window.MathJax.Hub = hub();
  };
})();
