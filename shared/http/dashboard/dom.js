// Building the pages' DOM without HTML strings: every text is a text node, so nothing the API
// answers (titles, reasons, names) can become markup.

/** An element with attributes (`class`, `data-*`, `aria-*`, ...; `on<event>` takes a function)
 * and children (nodes, strings, numbers; null and false are skipped; arrays are flattened). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else if (key === 'hidden' || key === 'disabled') {
      el[key] = Boolean(value);
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces the content of `el` with `children`, keeping keyboard focus on the element with
 * the same `data-focus` key when the focused element was inside. */
export function replace(el, ...children) {
  const active = document.activeElement;
  const key = active && el.contains(active) ? active.getAttribute('data-focus') : null;
  el.replaceChildren();
  append(el, children);
  if (key) {
    const again = el.querySelector(`[data-focus="${CSS.escape(key)}"]`);
    if (again) again.focus();
  }
}

/** The URL when it is safe to follow (http, https or a local file), else null. */
export function safeUrl(url) {
  try {
    const parsed = new URL(url, window.location.origin);
    return ['http:', 'https:', 'file:'].includes(parsed.protocol) ? parsed.href : null;
  } catch {
    return null;
  }
}

/** A link to an outside page (opened without a referrer), or the text alone when the URL is
 * not one to follow. */
export function outLink(url, text, attrs = {}) {
  const href = safeUrl(url);
  if (!href) return h('span', attrs, text);
  return h('a', { ...attrs, href, rel: 'noopener noreferrer', target: '_blank' }, text);
}

/** A table with a caption, column headers and rows (arrays of cells). */
export function table(caption, headers, rows, attrs = {}) {
  return h('table', attrs,
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, headers.map((name) => h('th', { scope: 'col' }, name)))),
    h('tbody', {}, rows));
}

/** A badge naming a state (`testing`, `merged`, `paused`, ...), styled by it. */
export function badge(state, text = null) {
  return h('span', { class: `badge state-${state}` }, text ?? state.replaceAll('_', ' '));
}

/** The CI results of a run as a list, each with its state and its link to the CI's page, or
 * `none` when there is none. */
export function ciLinks(ci, none = 'no CI result yet') {
  if (!ci.length) return h('span', { class: 'muted' }, none);
  return h('ul', { class: 'ci' }, ci.map((c) =>
    h('li', {}, badge(c.state), ' ', outLink(c.url, c.name))));
}

/** A function `(data) => ...` that calls `render(data)` only when `data` differs, as JSON,
 * from the data of its last call; its `reset()` makes the next call render whatever it is
 * given. */
export function whenChanged(render) {
  let last = '';
  const update = (data) => {
    const seen = JSON.stringify(data);
    if (seen === last) return;
    last = seen;
    render(data);
  };
  update.reset = () => {
    last = '';
  };
  return update;
}
