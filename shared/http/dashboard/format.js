// How times and durations read on the pages.

/** `42 s`, `5 min`, `1 h 20 min`. */
export function duration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return '—';
  if (seconds < 1) return '< 1 s';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  const minutes = Math.round(s / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return rest ? `${hours} h ${rest} min` : `${hours} h`;
}

/** A time of day in the reader's time zone, with the date when it is not today. */
export function clock(iso) {
  if (!iso) return '—';
  const t = new Date(iso);
  const now = new Date();
  const sameDay = t.toDateString() === now.toDateString();
  const time = t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  return sameDay ? time : `${t.toLocaleDateString()} ${time}`;
}

/** A `<time>` element: the time of day, with the full timestamp as its machine value. */
export function timeElement(h, iso) {
  return h('time', { datetime: iso, title: iso }, clock(iso));
}

/** A share as a percentage: `digits` decimals when given, else one below 10 % and none from
 * 10 % (`0 %` for none at all); `—` when there is no share (null, absent or not a number). */
export function percent(share, digits = null) {
  if (share === null || share === undefined || Number.isNaN(share)) return '—';
  if (digits === null && share === 0) return '0 %';
  return `${(share * 100).toFixed(digits ?? (share < 0.1 ? 1 : 0))} %`;
}

/** `github.com/acme/rocket`. */
export function repoName(repo) {
  return `${repo.host}/${repo.owner}/${repo.name}`;
}

/** A reason word (`tests_failed`) as words. */
export function words(reason) {
  return reason ? reason.replaceAll('_', ' ') : '';
}

/** The hash of a queue's page. */
export function queueHref(repo, branch) {
  return `#/queue/${[repo.host, repo.owner, repo.name, branch].map(encodeURIComponent).join('/')}`;
}

/** The hash of a pull request's page. */
export function pullHref(repo, branch, number) {
  return `#/pr/${[repo.host, repo.owner, repo.name, branch].map(encodeURIComponent).join('/')}/${number}`;
}

/** A figure with `digits` decimals; `—` when there is none (null, absent or not a number). */
export function figure(value, digits = 1) {
  if (value === null || value === undefined || Number.isNaN(value)) return '—';
  return value.toFixed(digits);
}
