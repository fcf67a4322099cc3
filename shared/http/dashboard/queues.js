// The organisation's queues: state, depth, runs in flight, and the last hour's merges and
// failures.

import { call } from './api.js';
import { badge, h, replace, table, whenChanged } from './dom.js';
import { queueHref, repoName } from './format.js';

export const title = 'Queues';

export function mount(main) {
  const body = h('div', { id: 'queues' }, h('p', { class: 'muted' }, 'Loading…'));
  main.append(h('h1', { tabindex: '-1' }, 'Queues'), body);
  const show = whenChanged((list) => {
    if (!list.queues.length) {
      replace(body, h('p', {}, 'Your organisation has no queue yet.'));
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
      rows, { id: 'queue-list' }));
  });
  return {
    async refresh() {
      show(await call('listQueues', {}));
    },
  };
}
