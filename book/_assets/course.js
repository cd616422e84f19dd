// The course's own page behaviour (issue 26: pages that read on a phone). Loaded by _config.yml
// (html_js_files). Two small things CSS cannot do alone; without this script the page still
// works: equations scroll inside their box and tables scroll sideways.
(() => {
  // ---- Display math at the size of the page's math, shrunk only when it would not fit -----
  // MathJax 3 does not break lines. An equation wider than its column is drawn smaller, down to
  // MATH_FLOOR of its size; beyond that it scrolls inside its own box (the browser check reports
  // it: split the equation).
  const MATH_FLOOR = 0.7;

  const fitMath = () => {
    for (const c of document.querySelectorAll('mjx-container[display="true"]')) {
      if (!('courseSize' in c.dataset)) c.dataset.courseSize = c.style.fontSize || '';  // MathJax's own
      c.style.fontSize = c.dataset.courseSize;
      const math = c.querySelector('mjx-math');
      const column = c.parentElement ? c.parentElement.clientWidth : 0;
      const width = math ? math.getBoundingClientRect().width : 0;
      if (!column || !width || width <= column) continue;
      const base = parseFloat(getComputedStyle(c).fontSize);
      const size = Math.max(MATH_FLOOR, (column - 2) / width) * base;
      c.style.fontSize = `${size}px`;
    }
  };

  // ---- Tables of four or more columns: one card per row on a phone ------------------------
  // Each cell learns its column's heading (data-label); course.css shows it before the cell's
  // text when the table is stacked (max-width: 700px), so no column is cut or scrolled away.
  const STACK_FROM_COLUMNS = 4;

  const labelTables = () => {
    for (const table of document.querySelectorAll('.bd-article table')) {
      const heads = [...table.querySelectorAll('thead th')].map(th => th.textContent.trim());
      if (heads.length < STACK_FROM_COLUMNS) continue;
      for (const row of table.querySelectorAll('tbody tr')) {
        [...row.children].forEach((cell, i) => { if (heads[i]) cell.dataset.label = heads[i]; });
      }
      table.classList.add('course-stacked');
    }
  };

  let pending = false;
  const onResize = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; fitMath(); });
  };

  const start = () => {
    labelTables();
    const typeset = window.MathJax && MathJax.startup && MathJax.startup.promise;
    if (typeset) typeset.then(fitMath);
    window.addEventListener('resize', onResize);
  };

  // MathJax loads asynchronously: wait for the page, then for its typesetting.
  if (document.readyState === 'complete') start();
  else window.addEventListener('load', start);
})();
