// The sign-in page: an API token, checked against the API before it is kept.

import { call, signIn, takeSignInMessage } from './api.js';
import { h } from './dom.js';

export const title = 'Sign in';

export function mount(main, _params, app) {
  const said = takeSignInMessage();
  const error = h('p', { id: 'signin-error', class: 'error', role: 'alert' }, said);
  error.hidden = !said;
  const input = h('input', {
    id: 'token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false',
    required: true, 'aria-describedby': 'token-help signin-error',
  });
  const submit = h('button', { type: 'submit', id: 'signin-submit', class: 'primary' }, 'Sign in');
  const form = h('form', { id: 'signin', class: 'signin', novalidate: true },
    h('label', { for: 'token' }, 'API token'),
    input,
    error,
    h('p', { id: 'token-help', class: 'help' },
      'The token stays in this browser tab (session storage) until you sign out or close the tab.'),
    submit);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const apiToken = input.value.trim();
    if (!apiToken) {
      error.textContent = 'Enter an API token.';
      error.hidden = false;
      input.focus();
      return;
    }
    submit.disabled = true;
    try {
      const list = await call('listQueues', {}, { apiToken });
      signIn(apiToken, list.organisation);
      input.value = '';
      app.go('#/queues');
    } catch (e) {
      error.textContent = e.status === 401
        ? `Sign-in refused: ${e.message}`
        : `Sign-in failed: ${e.message}`;
      error.hidden = false;
      input.select();
      input.focus();
    } finally {
      submit.disabled = false;
    }
  });
  main.replaceChildren(h('h1', { tabindex: '-1' }, 'Sign in'), form);
  input.focus();
  return {};
}
