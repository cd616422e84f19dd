// The course's own page behaviour (issues 26 and 32: pages that read on a phone and for every
// reader). Loaded by _config.yml (html_js_files). Things CSS cannot do alone; without this script
// the page still works: equations scroll inside their box, tables scroll sideways, sliders move.
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

  // ---- The contents and outline drawers at every width (issue 32) --------------------------
  // The theme binds its drawers to the first .primary-toggle and .secondary-toggle in the page,
  // which are the buttons of the header course.css hides; the visible ones, in the article's own
  // header, did nothing below 992 px. Before the theme's scripts run (the document has just been
  // parsed), the hidden buttons stop being drawer buttons, so the theme binds the visible ones.
  const freeDrawers = () => {
    for (const b of document.querySelectorAll('.bd-header .primary-toggle, .bd-header .secondary-toggle')) {
      b.classList.remove('primary-toggle', 'secondary-toggle');
    }
  };
  if (document.readyState === 'loading') {
    document.addEventListener('readystatechange', () => { if (document.readyState === 'interactive') freeDrawers(); });
  }

  // ---- Names a screen reader can say ------------------------------------------------------
  // An element's accessible name must contain the words it shows (WCAG 2.5.3): the theme's search
  // button shows "Search ... Ctrl+K" but is named "Search", a folded cell shows "Show code cell
  // source" but is named "Toggle hidden content". Such a label goes; the visible words name it.
  const visibleWords = el => (el.innerText || '').replace(/\s+/g, ' ').trim().toLowerCase();
  const fixNames = () => {
    for (const el of document.querySelectorAll('[aria-label]')) {
      // A folded cell's summary shows its words; its cell may be off screen and not laid out
      // (content-visibility, course.css), where innerText is empty, so its words are read whole.
      if (el.tagName === 'SUMMARY' && el.textContent.trim()) { el.removeAttribute('aria-label'); continue; }
      const shown = visibleWords(el);
      const label = el.getAttribute('aria-label').trim().toLowerCase();
      if (shown && !label.includes(shown) && !shown.includes(label)) el.removeAttribute('aria-label');
      else if (shown && !label.includes(shown)) el.setAttribute('aria-label', el.innerText.replace(/\s+/g, ' ').trim());
    }
  };

  // A code block that scrolls sideways: a visible cue (course.css), and a keyboard can scroll it.
  const markScrolling = () => {
    for (const pre of document.querySelectorAll('.bd-article pre')) {
      if (pre.closest('.mermaid')) continue;
      const scrolls = pre.scrollWidth > pre.clientWidth + 1;
      pre.classList.toggle('course-scrolls', scrolls);
      if (scrolls) {
        if (!(pre.tabIndex >= 0)) {
          pre.dataset.courseTab = pre.getAttribute('tabindex') || '';
          pre.setAttribute('tabindex', '0');
        }
        pre.classList.toggle('course-scrolled-end', pre.scrollLeft + pre.clientWidth >= pre.scrollWidth - 1);
        if (!('courseWatch' in pre.dataset)) {
          pre.dataset.courseWatch = '';
          pre.addEventListener('scroll', () => pre.classList.toggle(
            'course-scrolled-end', pre.scrollLeft + pre.clientWidth >= pre.scrollWidth - 1), {passive: true});
        }
      } else {
        if ('courseTab' in pre.dataset) {  // back as it was
          if (pre.dataset.courseTab) pre.setAttribute('tabindex', pre.dataset.courseTab);
          else pre.removeAttribute('tabindex');
          delete pre.dataset.courseTab;
        }
      }
    }
  };

  // ---- Sliders a keyboard, a finger and a screen reader can use ---------------------------
  // A live slider (labs.classroom.sliders.live_slider) in the book: its handle is named after its
  // label and says the value the readout shows ("temperature τ, 0.050"), not the stop's index;
  // each move is announced with what the picture shows there (the figure's alt text) and the
  // first line printed; where a stop is narrower than FINGER_PX, step buttons move it.
  const FINGER_PX = 11;
  const text = el => (el ? el.textContent.replace(/\s+/g, ' ').trim() : '');
  const shownIn = stack => {
    const alts = [...stack.querySelectorAll('img')].filter(i => i.offsetParent !== null)
      .map(i => i.getAttribute('alt') || '').filter(Boolean);
    const printed = [...stack.querySelectorAll('.jp-OutputArea-output pre, .jp-RenderedText pre')]
      .filter(p => p.offsetParent !== null).map(p => (p.textContent.split('\n').find(l => l.trim()) || '').trim());
    return [...alts, ...printed.slice(0, 1)].join(' ');
  };

  const wireSlider = box => {
    if ('courseWired' in box.dataset) return;
    const handle = box.querySelector('.noUi-handle');
    const readout = box.querySelector('.widget-readout');
    const stack = box.querySelector('.labs-live-stack');
    if (!handle || !readout || !stack) return;
    box.dataset.courseWired = '';
    const slider = handle.closest('.widget-slider');
    const name = text(slider && slider.querySelector('.widget-label')) || 'value';
    handle.setAttribute('aria-label', name);
    readout.setAttribute('contenteditable', 'false');  // one control, the handle, names the value
    readout.setAttribute('aria-hidden', 'true');
    const live = document.createElement('div');
    live.className = 'course-sr-only';
    live.setAttribute('aria-live', 'polite');
    live.setAttribute('aria-atomic', 'true');
    box.appendChild(live);
    for (const group of box.querySelectorAll('.widget-toggle-buttons')) {
      const inner = group.querySelector('div');
      if (inner) { inner.setAttribute('role', 'group'); inner.setAttribute('aria-label', text(group.querySelector('.widget-label'))); }
    }
    for (const select of box.querySelectorAll('select')) {
      const label = select.closest('.widget-dropdown') && select.closest('.widget-dropdown').querySelector('.widget-label');
      if (label && !select.getAttribute('aria-label')) select.setAttribute('aria-label', text(label));
    }
    const press = key => handle.dispatchEvent(new KeyboardEvent('keydown', {key, bubbles: true, cancelable: true}));
    const step = (label, key, where) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'course-step';
      b.textContent = key === 'ArrowLeft' ? '\u2212' : '+';
      b.setAttribute('aria-label', `${label} ${name}`);
      b.addEventListener('click', () => press(key));
      where(b);
      return b;
    };
    const track = slider.querySelector('.slider-container');
    step('Previous', 'ArrowLeft', b => track.before(b));
    step('Next', 'ArrowRight', b => readout.after(b));
    let announced = null;
    let timer = null;
    let moved = false;
    for (const kind of ['keydown', 'pointerdown', 'click', 'change']) box.addEventListener(kind, () => { moved = true; }, true);
    const sync = () => {
      const value = text(readout);
      if (handle.getAttribute('aria-valuetext') !== value) handle.setAttribute('aria-valuetext', value);
      for (const b of box.querySelectorAll('.widget-toggle-button')) {
        b.setAttribute('aria-pressed', b.classList.contains('mod-active') ? 'true' : 'false');
      }
      clearTimeout(timer);
      timer = setTimeout(() => {  // once the stack has swapped in the new position; only after the reader moved it
        const now = `${name} ${value}. ${shownIn(stack)}`;
        if (moved && now !== announced) live.textContent = now;
        announced = now;
      }, 150);
    };
    const stops = () => {
      const max = parseFloat(handle.getAttribute('aria-valuemax'));
      const min = parseFloat(handle.getAttribute('aria-valuemin'));
      const width = track.getBoundingClientRect().width;
      const n = Math.round(max - min);
      box.classList.toggle('course-fine', n > 0 && width > 0 && width / n < FINGER_PX);
    };
    new MutationObserver(sync).observe(handle, {attributes: true, attributeFilter: ['aria-valuenow', 'aria-valuetext']});
    new MutationObserver(sync).observe(readout, {childList: true, characterData: true, subtree: true});
    new MutationObserver(sync).observe(stack, {childList: true, attributes: true, subtree: true, attributeFilter: ['class', 'style']});
    for (const b of box.querySelectorAll('.widget-toggle-button')) {
      new MutationObserver(sync).observe(b, {attributes: true, attributeFilter: ['class']});
    }
    box.courseStops = stops;
    sync();
    stops();
    stops();  // the step buttons take room from the track: measure once more with them shown
  };

  const wireSliders = () => document.querySelectorAll('.labs-live-slider').forEach(wireSlider);
  const watchWidgets = () => {
    wireSliders();
    fixNames();
    const article = document.querySelector('.bd-article') || document.body;
    let queued = false;
    new MutationObserver(() => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => { queued = false; wireSliders(); });
    }).observe(article, {childList: true, subtree: true});
  };

  let pending = false;
  const onResize = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      fitMath();
      markScrolling();
      document.querySelectorAll('.labs-live-slider').forEach(b => b.courseStops && b.courseStops());
    });
  };

  // ---- Diagrams in a page opened as a file ------------------------------------------------
  // The mermaid module cannot load from file://, which would leave the diagram's source text on
  // the page: one line says how to see it instead.
  const fileDiagrams = () => {
    if (location.protocol !== 'file:') return;
    for (const pre of document.querySelectorAll('.bd-article pre.mermaid')) {
      if (pre.querySelector('svg') || pre.classList.contains('course-file-mermaid')) continue;
      const note = document.createElement('p');
      note.className = 'course-file-note';
      note.textContent = 'A diagram is drawn here in pages served over http: in the course\'s folder run ' +
        'make serve, then open this page from http://127.0.0.1:8000.';
      pre.classList.add('course-file-mermaid');
      pre.parentNode.insertBefore(note, pre);
    }
  };

  const start = () => {
    fileDiagrams();
    labelTables();
    const typeset = window.MathJax && MathJax.startup && MathJax.startup.promise;
    if (typeset) typeset.then(() => { fitMath(); markScrolling(); });
    markScrolling();
    watchWidgets();
    window.addEventListener('resize', onResize);
  };

  // MathJax loads asynchronously: wait for the page, then for its typesetting.
  if (document.readyState === 'complete') start();
  else window.addEventListener('load', start);
})();
