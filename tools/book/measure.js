// What the browser check measures on a page, in the page: tools/book/browser.py loads this file
// into each page (window.bookCheck) and calls its functions. Each returns plain data; the rules
// that need no browser (raw TeX, author notes, figure sizes) are applied in Python.
window.bookCheck = (() => {
  // check_page loads this file only into a page with an article (a redirect page has none).
  const article = document.querySelector('article.bd-article') || document.querySelector('main');

  const squash = text => (text || '').replace(/[#¶]/g, '').replace(/\s+/g, ' ').trim();
  const words = (text, n = 60) => { const s = squash(text); return s.length > n ? s.slice(0, n - 1) + '…' : s; };

  // The heading the element sits under, for the reader of a failure message.
  const near = (el, article) => {
    let node = el;
    while (node && node !== article) {
      let prev = node.previousElementSibling;
      while (prev) {
        const inside = prev.querySelectorAll('h1,h2,h3,h4');  // the last heading before the element
        const h = prev.matches('h1,h2,h3,h4') ? prev : inside[inside.length - 1];
        if (h) return words(h.textContent, 50);
        prev = prev.previousElementSibling;
      }
      node = node.parentElement;
    }
    return 'top of page';
  };

  const longest = pre => pre.textContent.split('\n').reduce((a, b) => (b.length > a.length ? b : a), '');
  const mathName = c => words((c.querySelector('mjx-assistive-mml') || c).textContent, 40);

  const shown = el => el.offsetParent !== null && el.getBoundingClientRect().width > 0;
  const inWidget = el => el.closest('.jupyter-widgets, .widget-output, .labs-live-slider');
  const isOutput = el => el.closest('.cell_output, .jupyter-widgets, .widget-output, .jp-OutputArea');

  // How an element reads: a figure's caption, a table's first row, an output's first line.
  const describe = el => {
    if (el.matches('img')) {
      const f = el.closest('figure'), n = f && f.querySelector('.caption-number');
      if (n) return `${squash(n.textContent)} "${words(f.querySelector('figcaption').textContent.replace(n.textContent, ''), 50)}"`;
      if (inWidget(el)) return 'the figure of a slider';
      return `image "${words(el.getAttribute('alt') || el.getAttribute('src'), 50)}"`;
    }
    if (el.matches('table')) {
      const cap = el.querySelector('caption');
      const row = el.querySelector('tr');
      return `table "${words(cap ? cap.textContent : (row ? row.textContent : el.textContent), 50)}"`;
    }
    if (el.matches('pre')) {
      const line = el.textContent.split('\n').find(l => l.trim()) || '';
      return `${inWidget(el) ? "a slider's printed output" : 'printed output'} "${words(line, 50)}"`;
    }
    if (el.matches('svg')) {
      const label = [...el.querySelectorAll('.nodeLabel, text')].find(l => squash(l.textContent));
      return `diagram "${words(label ? label.textContent : '', 40)}"`;
    }
    return `widget "${words(el.innerText, 50)}"`;
  };

  // The part of an element a reader sees without scrolling sideways: its own scroll box (an
  // element that scrolls inside itself shows clientWidth of scrollWidth), then every ancestor
  // that clips or scrolls, then the window.
  const visibleWidth = el => {
    const r = el.getBoundingClientRect();
    const scrolls = !el.matches('img, svg, table') && el.scrollWidth > el.clientWidth + 1;
    const full = scrolls ? el.scrollWidth : r.width;
    let left = r.left + (scrolls ? el.clientLeft : 0);
    let right = scrolls ? left + el.clientWidth : r.right;
    for (let a = el.parentElement; a && a !== document.documentElement; a = a.parentElement) {
      if (getComputedStyle(a).overflowX === 'visible') continue;
      const ar = a.getBoundingClientRect();
      left = Math.max(left, ar.left + a.clientLeft);
      right = Math.min(right, ar.left + a.clientLeft + a.clientWidth);
    }
    left = Math.max(left, 0);
    right = Math.min(right, document.documentElement.clientWidth);
    return {full, shown: Math.max(0, right - left)};
  };

  // Figures, tables, printed outputs, widget outputs and diagrams of which over `tolerance` px is hidden.
  const cut = tolerance => {
    const candidates = [
      ...article.querySelectorAll('img, table'),
      ...[...article.querySelectorAll('pre')].filter(isOutput),
      ...article.querySelectorAll('.cell_output .jupyter-widgets.widget-container, .cell_output .jupyter-widgets.widget-box'),
      ...article.querySelectorAll('.mermaid > svg'),
    ].filter(shown);
    const found = [];
    for (const el of candidates) {
      const {full, shown: seen} = visibleWidth(el);
      if (full - seen > tolerance) found.push({el, full, seen});
    }
    // Report the innermost: a widget box is cut because of what it holds.
    return found
      .filter(f => !found.some(g => g !== f && f.el.contains(g.el)))
      .map(f => ({what: describe(f.el), near: near(f.el, article), full: Math.round(f.full),
                  shown: Math.round(f.seen)}));
  };

  // What a reader meets: `tag` names an element; `sticking` lists what reaches past left..right of
  // top (the page, or a lesson cell) with nothing between to scroll or clip it.
  const tag = e => `<${e.tagName.toLowerCase()} class="${e.className}"> `
    + `${Math.round(e.getBoundingClientRect().width)} px near "${near(e, article)}"`;
  const unclipped = (e, top) => {
    for (let a = e.parentElement; a && a !== top; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') return false;
    }
    return true;
  };
  const sticking = (top, left, right) => [...top.querySelectorAll('*')].filter(e => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && (r.right > right + 1 || r.left < left - 1) && unclipped(e, top);
  }).slice(0, 3).map(tag).join('; ');

  // Layout rules computed in the page, each {rule, text}; code-scroll at 1280 px only.
  const legibility = phone => {
    const out = [];
    const wide = el => el.closest('.wide, .tag_wide');
    if (!phone) {
      for (const pre of article.querySelectorAll('pre')) {
        if (pre.closest('.mermaid') || wide(pre) || pre.offsetParent === null) continue;
        if (pre.scrollWidth > pre.clientWidth + 1) {
          const kind = isOutput(pre) ? 'output' : 'code';
          const line = longest(pre);
          out.push({rule: 'code-scroll', text: `${kind} block scrolls sideways (${pre.scrollWidth} px in ${pre.clientWidth}) `
                   + `near "${near(pre, article)}": ${line.length} characters in "${line.trim().slice(0, 60)}"`});
        }
      }
    }
    const page = document.documentElement.scrollWidth;
    if (page > window.innerWidth + 1) {
      out.push({rule: 'page-scroll', text: `the page scrolls sideways (${page} px wide in ${window.innerWidth}): `
               + sticking(document.body, -Infinity, window.innerWidth)});
    }
    // A lesson's cell is laid out apart (content-visibility: auto, course.css), so what is wider than
    // the cell does not make the page scroll: the cell cuts it, and its scrollWidth does not show it.
    for (const cell of article.querySelectorAll('div.cell')) {
      const box = cell.getBoundingClientRect();
      const over = sticking(cell, box.left, box.right);
      if (over) out.push({rule: 'cell-cut', text: `cut by its cell (${Math.round(box.width)} px wide): ${over}`});
    }
    return out;
  };

  // Each diagram's scale as drawn (fitted, not cut) and its smallest label's font size (null: none).
  const diagrams = () => {
    const out = [];
    for (const svg of article.querySelectorAll('.mermaid > svg')) {
      const box = svg.viewBox && svg.viewBox.baseVal;
      const drawn = svg.getBoundingClientRect();
      if (!box || !box.width || !box.height || !drawn.width) continue;
      const labels = [...svg.querySelectorAll('.nodeLabel, .edgeLabel, text')].filter(l => squash(l.textContent));
      out.push({what: describe(svg), near: near(svg, article), naturalWidth: box.width, drawnWidth: drawn.width,
                scale: Math.min(drawn.width / box.width, drawn.height / box.height),
                fontPx: labels.length ? Math.min(...labels.map(l => parseFloat(getComputedStyle(l).fontSize))) : null,
                column: svg.parentElement.clientWidth});
    }
    return out;
  };

  // Inline math's font sizes, and each display equation's size, width and column.
  const mathSizes = () => {
    const inline = [...article.querySelectorAll('mjx-container:not([display="true"])')]
      .filter(shown).map(c => parseFloat(getComputedStyle(c).fontSize));
    const display = [...article.querySelectorAll('mjx-container[display="true"]')].filter(shown).map(c => {
      const math = c.querySelector('mjx-math');
      return {fontPx: parseFloat(getComputedStyle(c).fontSize), width: (math || c).getBoundingClientRect().width,
              column: c.parentElement.clientWidth, bodyPx: parseFloat(getComputedStyle(c.parentElement).fontSize),
              what: mathName(c), near: near(c, article)};
    });
    return {inline, display};
  };

  // The article's text, block by block, as a reader meets it: prose, code or printed output, and
  // whether it is folded away (inside a closed <details>). Typeset math is left out (MathJax's
  // output is not TeX); TeX that MathJax did not typeset stays in the text.
  const blocks = () => {
    const BLOCK = 'p, li, dt, dd, td, th, h1, h2, h3, h4, h5, h6, figcaption, caption, summary, pre, blockquote, '
                  + '.nodeLabel, .edgeLabel, div.math, .widget-readout, .widget-label';
    const skip = 'mjx-container, script, style, .headerlink, .MathJax';
    const groups = new Map();
    const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const parent = node.parentElement;
      if (!parent || parent.closest(skip)) continue;  // (white space kept: it separates words and lines)
      const block = parent.closest(BLOCK) || parent;
      const kind = isOutput(parent) ? 'output' : (parent.closest('pre, code, .highlight') ? 'code' : 'prose');
      if (!groups.has(block)) groups.set(block, {block, parts: {prose: [], code: [], output: []}});
      groups.get(block).parts[kind].push(node.nodeValue);
    }
    const out = [];
    for (const {block, parts} of groups.values()) {
      const folded = !!block.closest('details:not([open])') || (block.offsetParent === null && !block.closest('svg'));
      const first = words(block.innerText || block.textContent, 60);
      for (const kind of ['prose', 'code', 'output']) {
        if (parts[kind].join('').trim()) out.push({kind, text: parts[kind].join(''), first, near: near(block, article), folded});
      }
    }
    return out;
  };

  // Every figure shown in a cell output (a slider's current one included): its source and drawn width.
  const shownFigures = () => [...document.querySelectorAll('.cell_output img')]
    .filter(shown)
    .map(i => ({src: i.getAttribute('src') || '', shown: i.getBoundingClientRect().width,
                name: describe(i), near: near(i, article)}));

  // Saved widget views the widget manager did not render (nothing rendered beside or around them).
  const VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]';
  const unrenderedViews = () => [...document.querySelectorAll(VIEW)]
    .filter(s => !(s.previousElementSibling && s.previousElementSibling.classList.contains('jupyter-widgets'))
                 && !(s.parentElement && s.parentElement.querySelector('.jupyter-widgets'))).length;

  // Lesson figures: images in stored cell outputs (widget views aside) that lack a "Fig. N" caption.
  const unnumberedFigures = () => [...document.querySelectorAll('.cell_output img')]
    .filter(i => !inWidget(i))
    .filter(i => { const f = i.closest('figure'); return !(f && f.querySelector('figcaption .caption-number')); })
    .map(i => (i.getAttribute('alt') || i.getAttribute('src') || '').slice(0, 80));

  // ---- sliders: the check moves each live slider and reads what it shows ----------------------

  // Mark each live slider box whose widget view names one of these model ids; the ids found.
  const markSliders = ids => {
    const found = [];
    for (const s of document.querySelectorAll(VIEW)) {
      let id;
      try { id = JSON.parse(s.textContent).model_id; } catch (e) { continue; }
      if (!ids.includes(id)) continue;
      const prev = s.previousElementSibling;
      const box = prev && (prev.matches('.labs-live-slider') ? prev : prev.querySelector('.labs-live-slider'));
      if (box) { box.setAttribute('data-check-id', id); found.push(id); }
    }
    return found;
  };

  // What a live slider shows now: its readout, its stack's text and images.
  const sliderShown = box => {
    const stack = box.querySelector('.labs-live-stack');
    const readout = box.querySelector('.widget-readout');
    const images = [...stack.querySelectorAll('img')].map(i => i.getAttribute('src') || '');
    const handle = box.querySelector('.noUi-handle');
    return {readout: readout ? readout.textContent.trim() : '', text: stack.innerText, images,
            valuetext: handle ? (handle.getAttribute('aria-valuetext') || '').trim() : ''};
  };

  // After a change (a wider or narrower window, opened answers): two frames, and the transitions
  // it started (the theme slides its sidebar away when the window narrows).
  const settle = async () => {
    const frame = () => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
    await frame();
    const finite = document.getAnimations()
      .filter(a => a.effect && a.effect.getComputedTiming().endTime !== Infinity);
    // Frame by frame, not by their `finished` promises: an animation in a cell the browser skips
    // (content-visibility: auto, scrolled out of view, even mid-way) stops, and its promise with it.
    // Such an animation is put at its end, the state a reader who scrolls there meets.
    const skipped = a => a.effect.target && !a.effect.target.checkVisibility({contentVisibilityAuto: true});
    while (finite.some(a => a.playState === 'running')) {
      finite.filter(skipped).forEach(a => a.finish());
      await frame();
    }
    await frame();
  };

  // Every <details> opened, and every dropdown admonition (sphinx-togglebutton hides its body with
  // the class toggle-hidden): an answer or a worked solution is read opened.
  const openDetails = () => {
    document.querySelectorAll('details').forEach(d => { d.dataset.wasOpen = d.open; d.open = true; });
    document.querySelectorAll('.toggle-hidden').forEach(e => { e.dataset.wasHidden = ''; e.classList.remove('toggle-hidden'); });
  };
  const restoreDetails = () => {
    document.querySelectorAll('details').forEach(d => { d.open = d.dataset.wasOpen === 'true'; });
    document.querySelectorAll('[data-was-hidden]').forEach(e => { e.classList.add('toggle-hidden'); delete e.dataset.wasHidden; });
  };

  // ---- every reader (issue 32): keyboard, screen reader, phone ---------------------------------

  const nameOf = el => {
    const by = el.getAttribute('aria-labelledby');
    if (by) return squash(by.split(/\s+/).map(id => (document.getElementById(id) || {}).textContent || '').join(' '));
    return squash(el.getAttribute('aria-label') || el.getAttribute('title') || '');
  };

  // Rules that read the page as it is; each {rule, text}. At 390 px (phone) also what a finger and
  // a narrow column need.
  const readers = phone => {
    const out = [];
    const focusable = [...document.querySelectorAll('mjx-container[tabindex]')]
      .filter(c => parseInt(c.getAttribute('tabindex'), 10) >= 0);
    if (focusable.length) {
      out.push({rule: 'equation-focus', text: `${focusable.length} equation(s) are tab stops, the first "${mathName(focusable[0])}" `
               + `near "${near(focusable[0], article)}" (MathJax's inTabOrder: false)`});
    }
    article.querySelectorAll('.labs-live-slider').forEach((box, n) => {
      const handle = box.querySelector('.noUi-handle');
      const readout = box.querySelector('.widget-readout');
      if (!handle || !shown(handle)) return;
      const where = `live slider ${n + 1} near "${near(box, article)}"`;
      const name = nameOf(handle);
      const value = squash(readout ? readout.textContent : '');
      if (!name) out.push({rule: 'slider-name', text: `${where}: its handle has no name (aria-label)`});
      if (squash(handle.getAttribute('aria-valuetext')) !== value) {
        out.push({rule: 'slider-name', text: `${where}: its handle announces "${handle.getAttribute('aria-valuetext')}", `
                 + `not the value shown, "${value}" (aria-valuetext)`});
      }
      if (!box.querySelector('[aria-live]')) {
        out.push({rule: 'slider-name', text: `${where}: nothing announces what changes when it moves (aria-live)`});
      }
      if (phone) {
        const track = handle.closest('.slider-container') || handle.closest('.noUi-target');
        const stops = Math.round(parseFloat(handle.getAttribute('aria-valuemax')) - parseFloat(handle.getAttribute('aria-valuemin')));
        const px = track ? track.getBoundingClientRect().width / Math.max(stops, 1) : 0;
        const steps = [...box.querySelectorAll('.course-step')].filter(shown).length;
        if (stops > 0 && px < 11 && steps < 2) {
          out.push({rule: 'slider-stops', text: `${where}: ${stops + 1} stops on a ${Math.round(px * stops)} px track, `
                   + `${px.toFixed(1)} px a stop (at least 11 for a finger), and no step buttons`});
        }
      }
    });
    const text = [...article.querySelectorAll('*')].filter(e => !e.closest('script, style'))
      .flatMap(e => [...e.childNodes].filter(t => t.nodeType === 3 && /Not answered yet/.test(t.nodeValue)).map(() => e));
    if (text.length) {
      out.push({rule: 'unanswered', text: `${text.length} "Not answered yet" output(s), the first near "${near(text[0], article)}" `
               + `(tag the check's cell remove-output)`});
    }
    if (phone) {
      const exercise = /\bcheck_\w+\(|^\s*\w+ = None\b|# your code/m;
      for (const pre of article.querySelectorAll('.cell_input pre')) {
        if (!shown(pre) || !exercise.test(pre.textContent) || pre.scrollWidth <= pre.clientWidth + 1) continue;
        const line = longest(pre);
        out.push({rule: 'exercise-cut', text: `exercise cell near "${near(pre, article)}" is cut at the column's edge `
                 + `(${pre.scrollWidth} px in ${pre.clientWidth}): "${line.trim().slice(0, 60)}" (${line.length} characters; `
                 + `at most 40, the instruction in the prose above)`});
      }
      const a = getComputedStyle(article);
      const column = Math.round(article.clientWidth - parseFloat(a.paddingLeft) - parseFloat(a.paddingRight));
      for (const box of article.querySelectorAll('.dropdown.admonition, details.admonition')) {
        if (!shown(box)) continue;
        // what the solution shows: its paragraphs, code and outputs (the title aside)
        const parts = [...box.children].filter(c => !c.matches('.admonition-title, summary') && shown(c));
        if (!parts.length) continue;
        const inner = Math.max(...parts.map(c => c.getBoundingClientRect().width));
        if (inner < 0.9 * column) {
          const title = box.querySelector('.admonition-title, summary');
          out.push({rule: 'solution-width', text: `"${words(title ? title.textContent : '', 40)}" near "${near(box, article)}" `
                   + `opened shows its content ${Math.round(inner)} px wide in a ${column} px column (at least 90%)`});
        }
      }
    }
    return out;
  };

  // The live sliders in page order, each with the heading above it (marked, and focusable as a
  // keyboard reader arriving from the outline finds it): for the Tab count.
  const sliderHeadings = () => [...article.querySelectorAll('.labs-live-slider')].map((box, n) => {
    const h = [...article.querySelectorAll('h2, h3')]
      .filter(h => h.compareDocumentPosition(box) & Node.DOCUMENT_POSITION_FOLLOWING).pop();
    box.dataset.checkSlider = String(n);
    if (h) {
      h.dataset.checkHeading = `${h.dataset.checkHeading || ''} ${n}`;  // a heading may hold several
      if (!h.hasAttribute('tabindex')) h.setAttribute('tabindex', '-1');
    }
    return {n, heading: h ? words(h.textContent, 50) : ''};
  });
  const focusIn = n => {
    const box = document.querySelector(`[data-check-slider="${n}"]`);
    const el = document.activeElement;
    return {onHandle: !!(box && el && box.contains(el) && el.matches('.noUi-handle, .course-step')),
            at: el ? `${el.tagName.toLowerCase()}${el.className && typeof el.className === 'string' ? '.' + el.className.split(' ')[0] : ''} `
                     + `"${words(el.innerText || el.getAttribute('aria-label') || '', 30)}"` : ''};
  };

  // The lesson list and the outline: which links a reader can see now (in the page or a drawer).
  const navShown = () => {
    const visible = a => {  // laid out, on screen, not hidden (the theme slides a hidden sidebar away)
      const r = a.getBoundingClientRect();
      return a.offsetParent !== null && r.width > 0 && r.right > 0 && r.left < window.innerWidth
        && getComputedStyle(a).visibility !== 'hidden' && !a.closest('.pst-sidebar-hidden');
    };
    const lessons = [...document.querySelectorAll('.bd-docs-nav a')].filter(visible)
      .filter(a => /^\s*\d+\.\s/.test(a.textContent));
    const outline = [...document.querySelectorAll('.bd-toc a, .page-toc a, #pst-page-navigation-heading-2 ~ * a')]
      .filter(visible);
    const open = [...document.querySelectorAll('dialog[open]')].map(d => d.id);
    const buttons = sel => [...document.querySelectorAll(sel)].filter(shown).length;
    return {lessons: lessons.length, outline: outline.length, open,
            hasOutline: document.querySelectorAll('#pst-secondary-sidebar a, #pst-secondary-sidebar-modal a').length > 0,
            primaryButtons: buttons('button.primary-toggle'), secondaryButtons: buttons('button.secondary-toggle')};
  };

  return {cut, legibility, diagrams, mathSizes, blocks, shownFigures, unrenderedViews, unnumberedFigures,
          markSliders, sliderShown, settle, openDetails, restoreDetails, readers, sliderHeadings, focusIn,
          navShown};
})();
