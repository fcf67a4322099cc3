// The organisation's queues: state, depth, runs in flight, and the last hour's merges and
// failures; queues that could not be read just now are named below the table.

import { call } from './api.js';
import { badge, h, replace, table, whenChanged } from './dom.js';
import { queueHref, repoName } from './format.js';

export const title = 'Queues';

export function mount(main) {
  const body = h('div', { id: 'queues' }, h('p', { class: 'muted' }, 'Loading…'));
  main.append(h('h1', { tabindex: '-1' }, 'Queues'), body);
  const show = whenChanged((list) => {
    const unreadable = unreadableNote(list.unreadableQueues);
    if (!list.queues.length) {
      replace(body, unreadable || h('p', {}, 'Your organisation has no queue yet.'));
      return;
    }
    const rows = list.queues.map((q) => {
      const key = `${repoName(q.repo)}#${q.targetBranch}`;
      return h('tr', { 'data-queue': key },
        h('th', { scope: 'row' },
          h('a', { href: queueHref(q.repo, q.targetBranch), 'data-focus': key },
            `${repoName(q.repo)} → ${q.targetBranch}`)),
        h('td', {}, badge(q.state)),
        h('td', { class: 'num' }, q.depth),
        h('td', { class: 'num' }, q.awaitingMergeability),
        h('td', { class: 'num' }, `${q.runsInFlight} / ${q.concurrency}`),
        h('td', { class: 'num' }, q.testing),
        h('td', { class: 'num' }, q.mergedLastHour),
        h('td', { class: 'num' }, q.failedLastHour),
        h('td', { class: 'num' }, q.stuck ? h('strong', { class: 'warn' }, q.stuck) : 0));
    });
    replace(body, table('Every queue of your organisation',
      ['Queue', 'State', 'Depth', 'Not ready', 'Runs in flight', 'Testing', 'Merged (1 h)',
        'Failed (1 h)', 'Stuck'],
      rows, { id: 'queue-list' }), unreadable);
  });
  return {
    async refresh() {
      show(await call('listQueues', {}));
    },
  };
}

// The queues the service could not read, as a warning (none: null).
function unreadableNote(queues) {
  if (!queues || !queues.length) return null;
  const names = queues.map((q) => `${repoName(q.repo)} → ${q.targetBranch}`).join(', ');
  return h('p', { class: 'warn', id: 'unreadable-queues', role: 'status' },
    `Could not be read just now: ${names}. The service's log says why.`);
}
