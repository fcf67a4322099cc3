// The dashboard's shell: sign-in state, the hash routes, refreshing the page on view every
// few seconds, and the confirmation dialog of operator actions.

import { ApiError, organisation, signOut, token } from './api.js';
import { h } from './dom.js';
import * as signin from './signin.js';
import * as queues from './queues.js';
import * as queue from './queue.js';
import * as pull from './pull.js';
import * as health from './health.js';

/** How often the page on view reads the API again, while the tab is visible. */
const REFRESH_MS = 2000;

const main = document.getElementById('main');
const notice = document.getElementById('notice');
const updated = document.getElementById('updated');
let current = null;
let routeSerial = 0;
let refreshing = false;

/** `#/queue/github.com/acme/rocket/main?x=1` → the view and its parameters. */
function route(hash) {
  const [path, query] = (hash.replace(/^#\/?/, '') || 'queues').split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const params = Object.fromEntries(new URLSearchParams(query || ''));
  switch (parts[0]) {
    case 'signin': return { view: signin, params };
    case 'queues': return { view: queues, params };
    case 'queue':
      if (parts.length === 5) {
        const [, host, owner, name, branch] = parts;
        return { view: queue, params: { ...params, repo: { host, owner, name }, branch } };
      }
      break;
    case 'pr':
      if (parts.length === 6) {
        const [, host, owner, name, branch, number] = parts;
        return { view: pull, params: { ...params, repo: { host, owner, name }, branch, number: Number(number) } };
      }
      break;
    case 'health': return { view: health, params };
    default: break;
  }
  return { view: null, params };
}

/** Says something to the reader (and to screen readers); `error` styles it as one. */
function say(text, { error = false } = {}) {
  notice.textContent = text;
  notice.classList.toggle('error', error);
}

const app = {
  go(hash) {
    if (window.location.hash === hash) show();
    else window.location.hash = hash;
  },
  say,
  /** What every view does with a failed call: a refused token signs out. */
  failed(e) {
    if (e instanceof ApiError && e.status === 401) {
      signOut(e.message);
      app.go('#/signin');
      return;
    }
    say(`Could not load: ${e.message}`, { error: true });
  },
  confirm,
};

async function show() {
  const serial = ++routeSerial;
  if (current && current.unmount) current.unmount();
  current = null;
  const signedIn = Boolean(token());
  let { view, params } = route(window.location.hash);
  if (!signedIn && view !== signin) {
    window.location.replace('#/signin');
    return;
  }
  if (signedIn && view === signin) {
    window.location.replace('#/queues');
    return;
  }
  document.getElementById('nav').hidden = !signedIn;
  document.getElementById('sign-out').hidden = !signedIn;
  document.getElementById('who').textContent = signedIn ? `Organisation ${organisation()}` : '';
  for (const link of document.querySelectorAll('#nav a')) {
    const here = window.location.hash.startsWith(link.getAttribute('href'));
    if (here) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  say('');
  updated.textContent = '';
  if (!view) {
    main.replaceChildren(h('h1', { tabindex: '-1' }, 'Not found'),
      h('p', {}, 'No such page. ', h('a', { href: '#/queues' }, 'Back to the queues.')));
    document.title = 'Not found · Merge queue';
    return;
  }
  document.title = `${view.title} · Merge queue`;
  main.replaceChildren();
  const mounted = view.mount(main, params, app) || {};
  current = mounted;
  const heading = main.querySelector('h1');
  if (heading && view !== signin) heading.focus();
  if (mounted.refresh) {
    await refresh(serial);
  }
}

async function refresh(serial = routeSerial) {
  if (!current || !current.refresh || refreshing) return;
  refreshing = true;
  try {
    await current.refresh();
    if (serial === routeSerial) {
      updated.textContent = `Updated at ${new Date().toLocaleTimeString()}; refreshes every ${REFRESH_MS / 1000} s`;
      if (notice.classList.contains('error')) say('');
    }
  } catch (e) {
    if (serial === routeSerial) app.failed(e);
  } finally {
    refreshing = false;
  }
}

/** Asks for a confirmation in a modal dialog; resolves to true when confirmed. Focus starts on
 * Cancel and goes back to what had it when the dialog closes. */
function confirm({ title, text, action }) {
  const dialog = document.getElementById('confirm');
  const ok = document.getElementById('confirm-ok');
  const cancel = document.getElementById('confirm-cancel');
  const opener = document.activeElement;
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  ok.textContent = action;
  return new Promise((resolve) => {
    const finish = (answer) => {
      ok.removeEventListener('click', onOk);
      cancel.removeEventListener('click', onCancel);
      dialog.removeEventListener('close', onClose);
      if (dialog.open) dialog.close();
      if (opener && opener.focus) opener.focus();
      resolve(answer);
    };
    const onOk = () => finish(true);
    const onCancel = () => finish(false);
    const onClose = () => finish(false);
    ok.addEventListener('click', onOk);
    cancel.addEventListener('click', onCancel);
    dialog.addEventListener('close', onClose);
    dialog.showModal();
    cancel.focus();
  });
}

document.getElementById('sign-out').addEventListener('click', () => {
  signOut();
  app.go('#/signin');
});
window.addEventListener('hashchange', show);
setInterval(() => {
  if (!document.hidden) refresh();
}, REFRESH_MS);
document.addEventListener('visibilitychange', () => {
  if (!document.hidden) refresh();
});
show();
