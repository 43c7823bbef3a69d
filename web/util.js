// Small helpers for the pages: elements without innerHTML (text is text),
// times in the browser's zone, numbers with units.
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null) continue;
    if (k === 'class') e.className = v; else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}

export function when(ms) { return ms ? new Date(ms).toLocaleString() : '—'; }

export function table(caption, heads, rows) {
  const head = el('tr', {}, heads.map(h => el('th', { scope: 'col', class: h.narrow ? 'hide-narrow' : null }, h.label || h)));
  // a region that may scroll sideways on a narrow screen: reachable from
  // the keyboard, and named
  return el('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': caption },
    el('table', {}, el('caption', { class: 'visually-hidden' }, caption), el('thead', {}, head), el('tbody', {}, rows)));
}

// A form control with its label (the label holds it: named for axe-core).
export function field(id, label, input) {
  input.id = id;
  input.name = id;
  return el('label', { for: id }, label, input);
}

export function facts(pairs) {
  return el('dl', { class: 'facts' }, pairs.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

// Runs fn now and every 2 s until the returned stop is called; a failure
// goes to onErr and the polling goes on.
export function poll(fn, onErr) {
  let timer = null, stopped = false;
  const tick = async () => {
    try { await fn(); } catch (e) { onErr(e); }
    if (!stopped) timer = setTimeout(tick, 2000);
  };
  tick();
  return () => { stopped = true; clearTimeout(timer); };
}

// Runs render(data) with the host's latest `kind`: a list (slots, execs,
// models) or, with a subject ({exec: ID}, {task: NAME} or {model: NAME}),
// that one item (exec, task, model), pushed by the host's event stream
// (GET /loom/v1/events) when the browser has EventSource, else, or once
// the stream is refused (the host's bound on streams per user, or an item
// the user may not see) or closed for good, fetched by fetchFn every 2 s,
// which the page then says. <html data-updates> says which ("events" or
// "poll"). Returns the stop.
export function live(kind, fetchFn, render, onErr, subject) {
  let source = null, stopPoll = null, stopped = false;
  const note = document.getElementById('updates');
  const mode = m => {
    document.documentElement.dataset.updates = m;
    note.textContent = m === 'poll' ? 'Live updates are off (refused by the host): this page asks every 2 s.' : '';
    note.hidden = m !== 'poll';
  };
  const fallback = () => {
    if (source) { source.close(); source = null; }
    if (!stopPoll && !stopped) { mode('poll'); stopPoll = poll(async () => render(await fetchFn()), onErr); }
  };
  if (typeof window.EventSource === 'function') {
    const query = subject ? '?' + new URLSearchParams(subject).toString() : '';
    source = new window.EventSource('/loom/v1/events' + query);
    mode('events');
    // one render at a time, in order (a page's render may fetch more)
    let chain = Promise.resolve();
    source.addEventListener(kind, ev => {
      chain = chain.then(() => render(JSON.parse(ev.data))).catch(onErr);
    });
    // a lost connection reconnects by itself; a refused one is CLOSED
    source.onerror = () => { if (source && source.readyState === window.EventSource.CLOSED) fallback(); };
  } else {
    fallback();
  }
  return () => { stopped = true; if (source) source.close(); if (stopPoll) stopPoll(); };
}
