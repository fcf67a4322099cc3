// The API, from the pages: same-origin `POST /v1/<operation>` with the token in the
// `x-api-token` header. The token lives in this tab's session storage only: never in a URL,
// a cookie or local storage, and it is gone when the tab closes or the user signs out.

const TOKEN_KEY = 'mq.apiToken';
const ORG_KEY = 'mq.organisation';
const MESSAGE_KEY = 'mq.signInMessage';

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function organisation() {
  return sessionStorage.getItem(ORG_KEY) || '';
}

/** Keeps the token (and the organisation it belongs to) for this tab. */
export function signIn(apiToken, org) {
  sessionStorage.setItem(TOKEN_KEY, apiToken);
  sessionStorage.setItem(ORG_KEY, org);
}

/** Forgets the token; `message` is shown on the sign-in page. */
export function signOut(message = '') {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(ORG_KEY);
  if (message) sessionStorage.setItem(MESSAGE_KEY, message);
  else sessionStorage.removeItem(MESSAGE_KEY);
}

/** The message left for the sign-in page, once. */
export function takeSignInMessage() {
  const message = sessionStorage.getItem(MESSAGE_KEY) || '';
  sessionStorage.removeItem(MESSAGE_KEY);
  return message;
}

/** An answer of the API other than 200: its status and its `{error: {code, message}}`. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Calls `operation` with `body`; resolves to the JSON answer or rejects with an ApiError.
 * `mutating` adds an `Idempotency-Key`, so a retried click acts once. */
export async function call(operation, body, { apiToken = token(), mutating = false } = {}) {
  const headers = { 'content-type': 'application/json', 'x-api-token': apiToken || '' };
  if (mutating) headers['idempotency-key'] = crypto.randomUUID();
  let response;
  try {
    response = await fetch(`/v1/${operation}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
      referrerPolicy: 'no-referrer',
    });
  } catch (e) {
    throw new ApiError(0, 'NETWORK', `the service cannot be reached (${e.message})`);
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new ApiError(response.status, error.code || `HTTP_${response.status}`,
      error.message || response.statusText || 'request failed');
  }
  return data;
}
